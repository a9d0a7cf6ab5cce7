"""sample and the statistics used to test samplers (notebook 02, specdec/drawing.py)."""

import math

import numpy as np
import pytest
from helpers import FixedUniform

import specdec
from specdec import drawing
from specdec.drawing import chi_square_sf, chi_square_test, empirical_distribution, total_variation

N_DRAWS = 100_000
ALPHA = 1e-3  # seeds are fixed, so each verdict is deterministic; ALPHA only says how surprising is too surprising


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


@pytest.mark.parametrize(
    "probs",
    [
        np.random.default_rng(3).dirichlet(np.full(1000, 0.2), size=300),  # 4 blocks, the last one short
        np.random.default_rng(4).dirichlet(np.full(600, 0.02), size=(5, 40)),  # many exact zeros, a (5, 40) batch
        np.random.default_rng(5).dirichlet(np.full(300, 0.5)),  # one row over two blocks
        np.random.default_rng(6).dirichlet(np.full(12, 0.5)),  # one short row: the scalar path
        np.append(np.full(10, 0.1), [0.0, 0.0]),  # a row whose running sum ends below its total
        np.random.default_rng(7).dirichlet(np.full(50, 0.3), size=1000),  # one block
    ],
    ids=["1000-tokens", "batch-with-zeros", "one-row-300", "one-row-12", "tenths-then-zeros", "one-block"],
)
def test_two_level_draw_equals_flat_draw(probs):
    """The package's `draw` (notebook 02, Going further) replaces the core's flat `draw_flat`: the same tokens."""
    assert drawing.draw is not drawing.draw_flat  # the package uses the two-level search
    for seed in range(5):
        two_level = drawing.draw(probs, np.random.default_rng(seed))
        flat = drawing.draw_flat(probs, np.random.default_rng(seed))
        assert type(two_level) is type(flat) and np.shape(two_level) == probs.shape[:-1]
        np.testing.assert_array_equal(two_level, flat)
    for u in [0.0, 0.123, 0.5]:  # every uniform fixed, u = 0 on the first step
        np.testing.assert_array_equal(drawing.draw(probs, FixedUniform(u)), drawing.draw_flat(probs, FixedUniform(u)))
    # At u = 1 - 2**-53 the two searches' sums, added in different orders, can disagree in the last bit: then they
    # may end on neighbouring tokens near the end of the row, but each on a token with mass.
    for search in (drawing.draw, drawing.draw_flat):
        tokens = np.asarray(search(probs, FixedUniform(1 - 2**-53)))  # probs.shape[:-1]
        assert np.all(np.take_along_axis(probs, tokens[..., None], axis=-1) > 0)


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


def test_chi_square_survival_function_matches_closed_forms_and_stays_finite_for_large_dof():
    for x in np.linspace(0.01, 60, 200):
        h = x / 2
        assert chi_square_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(h)), rel=1e-12)
        assert chi_square_sf(x, 2) == pytest.approx(math.exp(-h), rel=1e-12)
        assert chi_square_sf(x, 3) == pytest.approx(math.erfc(math.sqrt(h)) + 2 * math.sqrt(h / math.pi) * math.exp(-h))
        assert chi_square_sf(x, 4) == pytest.approx(math.exp(-h) * (1 + h), rel=1e-12)
    # 5000 degrees of freedom (a large vocabulary): near the mean, about one half, with no overflow or underflow;
    # the Wilson-Hilferty approximation is good to a few 1e-4 there.
    for dof, x in [(5000, 5000.0), (5001, 4900.0), (5000, 5200.0)]:
        z = ((x / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
        assert chi_square_sf(x, dof) == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)), abs=1e-3)
    assert chi_square_sf(0.0, 3) == 1.0 and chi_square_sf(math.inf, 3) == 0.0
    assert 0.0 < chi_square_sf(1000.0, 10) < 1e-200  # a far tail (about 1e-208), still a positive number


def test_chi_square_test_edge_cases():
    assert chi_square_test([5, 1], [1.0, 0.0]).p_value == 0.0  # an impossible token was drawn
    assert chi_square_test([10, 0], [1.0, 0.0]).p_value == 1.0  # a point mass, drawn as it should be
    with pytest.raises(ValueError, match="same shape"):
        chi_square_test([1, 2, 3], [0.5, 0.5])
    with pytest.raises(ValueError, match="dof must be an integer >= 1"):
        chi_square_sf(1.0, 0)


def test_an_impossible_draw_keeps_the_degrees_of_freedom_of_the_pooled_test():
    """statistic inf and p-value 0, with the same categories (pooled) as the test without that draw."""
    probs = [0.5, 0.45, 0.03, 0.02, 0.0]  # expected 50, 45, 3, 2, 0 in 100 draws: the two small tokens pooled
    assert chi_square_test([50, 45, 3, 2, 0], probs).dof == 2
    assert chi_square_test([50, 45, 3, 1, 1], probs) == (math.inf, 2, 0.0)
    assert chi_square_test([50, 40, 1], [0.5, 0.5, 0.0]) == (math.inf, 1, 0.0)


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
