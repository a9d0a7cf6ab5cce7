"""sample and the statistics used to test samplers (notebook 02, specdec/drawing.py)."""

import numpy as np
import pytest

import specdec
from specdec.drawing import chi_square_sf, chi_square_test, empirical_distribution, total_variation

N_DRAWS = 100_000
ALPHA = 1e-3  # seeds are fixed, so each verdict is deterministic; ALPHA only says how surprising is too surprising


class FixedUniform(np.random.Generator):
    """A Generator whose uniforms are all `u`: drives `sample` to its edge cases on purpose."""

    def __init__(self, u: float):
        super().__init__(np.random.PCG64(0))
        self.u = u

    def random(self, size=None, dtype=np.float64, out=None):
        return self.u if size is None else np.full(size, self.u)


def draws_of(probs, rng, n=N_DRAWS):
    """n independent draws from one distribution, in one batched call."""
    return specdec.sample(np.broadcast_to(probs, (n, len(probs))), rng)


def test_single_row_gives_a_scalar_and_batches_give_arrays(rng):
    token = specdec.sample(np.array([0.2, 0.8]), rng)
    assert isinstance(token, np.int64)
    tokens = specdec.sample(np.full((2, 3, 4), 0.25), rng)
    assert tokens.shape == (2, 3) and tokens.dtype == np.int64


def test_same_seed_same_draws():
    probs = np.full((50, 10), 0.1)
    first = specdec.sample(probs, np.random.default_rng(7))
    second = specdec.sample(probs, np.random.default_rng(7))
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("u", [0.0, 0.3, 0.5, 1 - 2**-53])
def test_zero_probability_tokens_are_never_drawn_even_at_the_edges(u):
    probs = np.array([0.0, 0.25, 0.0, 0.25, 0.0, 0.5, 0.0, 0.0])
    token = specdec.sample(probs, FixedUniform(u))
    assert probs[token] > 0
    expected = {0.0: 1, 0.3: 3, 0.5: 5, 1 - 2**-53: 5}[u]
    assert token == expected


def test_u_rounding_up_to_the_total_steps_back_to_the_last_token_with_mass():
    probs = np.zeros(1000)
    probs[[3, 700]] = [0.5, 0.5 - 2**-52]  # sums to just under 1, so u * total can round up
    tokens = specdec.sample(np.broadcast_to(probs, (3, 1000)), FixedUniform(1 - 2**-53))
    np.testing.assert_array_equal(tokens, [700, 700, 700])


def test_the_two_level_search_matches_a_flat_inverse_cdf():
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.full(1000, 0.2), size=300)  # (300, 1000), spans 4 blocks, last one short
    for u in [0.0, 0.123, 0.5, 0.999]:
        flat = (np.cumsum(probs, axis=-1) <= u * probs.sum(axis=-1, keepdims=True)).sum(axis=-1)
        np.testing.assert_array_equal(specdec.sample(probs, FixedUniform(u)), flat)


@pytest.mark.parametrize(
    "probs",
    [
        np.array([0.1, 0.0, 0.2, 0.7, 0.0]),
        np.full(7, 1 / 7),
        np.random.default_rng(11).dirichlet(np.full(600, 0.3)),
    ],
    ids=["with-zeros", "uniform", "dirichlet-600"],
)
def test_draws_follow_the_distribution(probs, rng):
    tokens = draws_of(probs, rng)
    result = chi_square_test(np.bincount(tokens, minlength=probs.size), probs)
    assert result.p_value > ALPHA, result
    assert np.all(probs[tokens] > 0)


def test_negative_controls_are_rejected_by_the_same_test(rng):
    probs = np.array([0.1, 0.0, 0.2, 0.7, 0.0])
    cdf = np.cumsum(probs)
    u = rng.random(N_DRAWS)
    # 1. An off-by-one inverse CDF (strict <) hands each token the interval of the next one.
    off_by_one = np.minimum((cdf[None, :] < u[:, None]).sum(axis=-1) + 1, probs.size - 1)
    # 2. A sampler of a slightly wrong distribution (total variation 0.01).
    nearby = specdec.sample(np.broadcast_to([0.11, 0.0, 0.19, 0.70, 0.0], (N_DRAWS, 5)), rng)
    # 3. A sampler that never draws the last token with mass.
    never_last = np.where(draws_of(probs, rng) == 3, 2, draws_of(probs, rng))
    for wrong in (off_by_one, nearby, never_last):
        assert chi_square_test(np.bincount(wrong, minlength=5), probs).p_value < 1e-6


def test_p_values_are_roughly_uniform_when_the_sampler_is_right():
    probs = np.array([0.5, 0.3, 0.15, 0.05])
    p_values = []
    for seed in range(200):
        tokens = draws_of(probs, np.random.default_rng(seed), n=2_000)
        p_values.append(chi_square_test(np.bincount(tokens, minlength=4), probs).p_value)
    rejected = np.mean(np.array(p_values) < 0.05)
    assert 0.01 <= rejected <= 0.10  # about 5% of honest runs fall below 0.05


@pytest.mark.parametrize(
    ("statistic", "dof", "expected"),
    [
        (3.841458820694124, 1, 0.05),
        (18.307038053275146, 10, 0.05),
        (124.34211340400407, 100, 0.05),
        (5.0, 3, 0.1717971442967335),
    ],
)
def test_chi_square_survival_function_matches_tables(statistic, dof, expected):
    assert chi_square_sf(statistic, dof) == pytest.approx(expected, rel=1e-9)


def test_chi_square_test_edge_cases():
    assert chi_square_test([5, 1], [1.0, 0.0]).p_value == 0.0  # an impossible token was drawn
    assert chi_square_test([10, 0], [1.0, 0.0]).p_value == 1.0  # a point mass, drawn as it should be
    with pytest.raises(ValueError, match="same shape"):
        chi_square_test([1, 2, 3], [0.5, 0.5])
    with pytest.raises(ValueError, match="dof must be >= 1"):
        chi_square_sf(1.0, 0)


def test_total_variation_and_empirical_distribution():
    assert total_variation([0.5, 0.5, 0.0], [0.0, 0.5, 0.5]) == pytest.approx(0.5)
    np.testing.assert_array_equal(empirical_distribution([0, 2, 2, 3], 5), [0.25, 0, 0.5, 0.25, 0])


@pytest.mark.parametrize(
    ("probs", "message"),
    [
        ([0.5, -0.1, 0.6], "negative probability"),
        ([0.5, np.nan, 0.5], "NaN"),
        ([0.5, 0.4], "must sum to 1"),
        ([[0.5, 0.5], [0.7, 0.7]], r"must sum to 1 .* in row \(1,\)"),
        (np.zeros((3, 0)), "non-empty vocabulary axis"),
        (0.5, "non-empty vocabulary axis"),
    ],
)
def test_bad_probabilities(probs, message, rng):
    with pytest.raises(ValueError, match=message):
        specdec.sample(np.asarray(probs), rng)


def test_float32_probabilities_get_a_float32_tolerance(rng):
    probs = np.full(1000, 1e-3, dtype=np.float32)  # sums to 1 only within float32 rounding
    assert 0 <= specdec.sample(probs, rng) < 1000
    with pytest.raises(ValueError, match="must sum to 1"):
        specdec.sample(np.array([0.5, 0.499], dtype=np.float32), rng)


@pytest.mark.parametrize("bad_rng", [None, 42, np.random.RandomState(0)])
def test_only_a_generator_is_accepted(bad_rng):
    with pytest.raises(TypeError, match="rng must be a np.random.Generator"):
        specdec.sample(np.array([0.5, 0.5]), bad_rng)
