"""SamplingParams, sampling_probs, sample_token and min_p_filter (notebook 05, specdec/pipeline.py)."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import specdec
import specdec.pipeline
from specdec import SamplingParams
from specdec.drawing import chi_square_test
from specdec.pipeline import composed_sampling_probs

logit_rows = arrays(np.float64, st.integers(1, 40), elements=st.floats(-8, 8) | st.integers(-3, 3).map(float))
params_strategy = st.builds(
    SamplingParams,
    temperature=st.sampled_from([0.3, 0.7, 1.0, 2.5]),
    top_k=st.none() | st.integers(1, 45),
    top_p=st.sampled_from([1.0, 0.95, 0.9, 0.5, 0.1, 1e-6]),
    min_p=st.sampled_from([0.0, 0.05, 0.3, 1.0]),
)


# Batches of float32 or float64 rows with -inf entries (every row keeps a finite logit), and greedy too.
logit_batches = (
    st.integers(1, 40)
    .flatmap(
        lambda vocab: arrays(
            st.sampled_from([np.float32, np.float64]),
            st.tuples(st.integers(1, 4), st.just(vocab)),
            elements=st.floats(-8, 8, width=32) | st.integers(-3, 3).map(float) | st.just(-np.inf),
        )
    )
    .filter(lambda x: np.isfinite(x).any(axis=-1).all())
)
params_with_greedy = st.builds(
    SamplingParams,
    temperature=st.sampled_from([0.0, 0.3, 1.0, 2.5]),
    top_k=st.none() | st.integers(1, 45),
    top_p=st.sampled_from([1.0, 0.9, 0.5, 1e-6]),
    min_p=st.sampled_from([0.0, 0.05, 1.0]),
)


def test_the_package_gets_the_fast_path_and_keeps_the_definition():
    """Notebook 05's core defines sampling_probs (kept as composed_sampling_probs); Going further replaces it."""
    assert specdec.sampling_probs is specdec.pipeline.sampling_probs
    assert specdec.sampling_probs is not composed_sampling_probs  # so the comparisons below compare two codes
    assert "kept_count" in specdec.sampling_probs.__code__.co_names  # the fast path: one threshold per row
    assert "top_k_filter" in composed_sampling_probs.__code__.co_names  # the definition: the filters composed


@given(logit_rows, params_strategy)
def test_sampling_probs_equals_the_composition_of_the_filters(logits, params):
    fast, slow = specdec.sampling_probs(logits, params), composed_sampling_probs(logits, params)
    np.testing.assert_array_equal(fast > 0, slow > 0)
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-300)


@given(logit_batches, params_with_greedy)
def test_sampling_probs_equals_the_composition_on_batches_float32_and_minus_inf(logits, params):
    fast, slow = specdec.sampling_probs(logits, params), composed_sampling_probs(logits, params)
    assert fast.dtype == slow.dtype == np.float64 and fast.shape == slow.shape == logits.shape
    np.testing.assert_array_equal(fast > 0, slow > 0)
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-300)


@given(logit_rows, params_strategy)
def test_the_result_is_always_a_distribution_containing_the_argmax(logits, params):
    probs = specdec.sampling_probs(logits, params)
    assert probs.dtype == np.float64 and not np.isnan(probs).any()
    assert abs(probs.sum() - 1) < 1e-12
    assert probs[np.argmax(logits)] > 0


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(0.7, 50, 0.9),
        SamplingParams(0.7, None, 0.9),
        SamplingParams(1.3, None, 0.999, 0.001),
        SamplingParams(1.0, 2000, 0.99),
        SamplingParams(1.0, None, 1.0, 0.5),
    ],
)
def test_large_vocabularies_including_nuclei_past_the_first_candidates(params, rng):
    """Flat rows make nuclei of thousands of tokens: the candidate search must retry, and stay exact."""
    logits = rng.normal(scale=rng.uniform(0.05, 4, size=(12, 1)), size=(12, 5000))
    fast, slow = specdec.sampling_probs(logits, params), composed_sampling_probs(logits, params)
    np.testing.assert_array_equal(fast > 0, slow > 0)
    np.testing.assert_allclose(fast, slow, rtol=1e-11)


def test_ties_with_the_kth_logit_beyond_the_candidates():
    logits = np.zeros(1000)
    logits[:10] = 5.0  # 10 clear winners, then 990 tokens tied at 0
    probs = specdec.sampling_probs(logits, SamplingParams(top_k=11))
    assert (probs > 0).sum() == 1000  # every token tied with the 11th survives
    np.testing.assert_allclose(probs, composed_sampling_probs(logits, SamplingParams(top_k=11)), rtol=1e-12)
    probs = specdec.sampling_probs(logits, SamplingParams(top_k=11, top_p=0.5))
    np.testing.assert_allclose(probs, composed_sampling_probs(logits, SamplingParams(top_k=11, top_p=0.5)), rtol=1e-12)


def test_top_p_acts_on_the_distribution_renormalised_after_top_k():
    logits = np.log(np.array([0.30, 0.25, 0.25, 0.20]))
    # top-k = 3 leaves [0.30, 0.25, 0.25], renormalised [0.375, 0.3125, 0.3125]. With top-p = 0.35
    # the top token alone has mass 0.375 >= 0.35, so it is kept alone; on the raw distribution
    # its mass 0.30 < 0.35 would have pulled in the tied pair as well.
    probs = specdec.sampling_probs(logits, SamplingParams(top_k=3, top_p=0.35))
    np.testing.assert_array_equal(probs > 0, [True, False, False, False])
    probs = specdec.sampling_probs(logits, SamplingParams(top_k=3, top_p=0.4))
    np.testing.assert_array_equal(probs > 0, [True, True, True, False])  # 0.375 < 0.4: the pair crosses together


def test_greedy_is_one_hot_with_ties_to_the_lowest_index():
    np.testing.assert_array_equal(
        specdec.sampling_probs(np.array([1.0, 4.0, 4.0]), SamplingParams(0, top_k=1, top_p=0.2)), [0, 1, 0]
    )
    assert specdec.sample_token(np.array([[1.0, 4.0, 4.0], [9.0, 0.0, 9.0]]), SamplingParams(0)).tolist() == [1, 0]


def test_batched_shapes_and_float32(rng):
    logits = rng.normal(size=(2, 3, 64)).astype(np.float32)
    params = SamplingParams(0.8, 10, 0.9)
    probs = specdec.sampling_probs(logits, params)
    assert probs.shape == (2, 3, 64) and probs.dtype == np.float64
    for index in np.ndindex(2, 3):
        np.testing.assert_array_equal(probs[index], specdec.sampling_probs(logits[index], params))
    tokens = specdec.sample_token(logits, params, rng)
    assert tokens.shape == (2, 3)
    assert np.all(np.take_along_axis(probs, tokens[..., None], axis=-1) > 0)


def test_all_but_one_minus_infinity_and_k_at_least_vocabulary():
    logits = np.array([-np.inf, 0.5, -np.inf])
    np.testing.assert_array_equal(specdec.sampling_probs(logits, SamplingParams(0.5, 10, 0.1, 0.9)), [0, 1, 0])
    logits = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(specdec.sampling_probs(logits, SamplingParams(top_k=3)), specdec.softmax(logits))


def test_min_p_keeps_equality_and_min_p_one_keeps_only_the_top():
    logits = np.log(np.array([0.5, 0.25, 0.25]))
    np.testing.assert_array_equal(np.isfinite(specdec.min_p_filter(logits, 0.5)), [1, 1, 1])  # 0.25 = 0.5 * 0.5
    np.testing.assert_array_equal(np.isfinite(specdec.min_p_filter(logits, 0.5000001)), [1, 0, 0])
    np.testing.assert_array_equal(np.isfinite(specdec.min_p_filter(np.array([2.0, 2.0, 1.0]), 1.0)), [1, 1, 0])
    np.testing.assert_array_equal(specdec.min_p_filter(logits, 0.0), logits)


# --- the sampler draws from sampling_probs, and the test can tell when it does not ---

SETTINGS = [SamplingParams(0.7, 5, 0.9), SamplingParams(1.0, None, 0.8), SamplingParams(1.5, None, 1.0, 0.1)]


@pytest.mark.parametrize("params", SETTINGS, ids=str)
def test_sample_token_follows_sampling_probs(params):
    rng = np.random.default_rng(5)
    logits = np.random.default_rng(9).normal(scale=1.5, size=30)
    probs = specdec.sampling_probs(logits, params)
    tokens = specdec.sample_token(np.broadcast_to(logits, (100_000, 30)), params, rng)
    assert chi_square_test(np.bincount(tokens, minlength=30), probs).p_value > 1e-3


def test_negative_controls_for_the_pipeline_are_rejected():
    rng = np.random.default_rng(5)
    logits = np.random.default_rng(9).normal(scale=1.5, size=30)
    params = SamplingParams(0.7, 5, 0.8)
    probs = specdec.sampling_probs(logits, params)
    z = logits / 0.7
    # 1. top-p on the raw distribution instead of the one renormalised after top-k (the seed post's order mistake)
    raw_mass_topk = specdec.softmax(z) * np.isfinite(specdec.top_k_filter(z, 5))
    wrong_nucleus = np.where(raw_mass_topk >= specdec.nucleus.nucleus_threshold(raw_mass_topk, 0.8), z, -np.inf)
    # 2. filters in the wrong order: top-p first, then top-k
    wrong_order = specdec.top_k_filter(specdec.top_p_filter(z, 0.8), 5)
    # 3. the temperature forgotten
    no_temperature = specdec.top_p_filter(specdec.top_k_filter(logits, 5), 0.8)
    for wrong_logits in (wrong_nucleus, wrong_order, no_temperature):
        wrong = specdec.softmax(wrong_logits)
        assert not np.allclose(wrong, probs)  # each control really is a different distribution
        tokens = specdec.sample(np.broadcast_to(wrong, (100_000, 30)), rng)
        assert chi_square_test(np.bincount(tokens, minlength=30), probs).p_value < 1e-6


def test_sample_token_needs_a_generator_unless_greedy():
    with pytest.raises(TypeError, match="rng must be a np.random.Generator"):
        specdec.sample_token(np.array([1.0, 2.0]), SamplingParams(1.0))
    assert specdec.sample_token(np.array([1.0, 2.0]), SamplingParams(0.0)) == 1


# --- validation ---


def test_params_are_frozen_and_canonical():
    params = SamplingParams(temperature=1, top_k=np.int64(5), top_p=np.float32(0.5), min_p=0)
    assert params == SamplingParams(1.0, 5, 0.5, 0.0)
    assert type(params.temperature) is float and type(params.top_k) is int and type(params.top_p) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.temperature = 2.0  # type: ignore[misc]
    assert SamplingParams() == SamplingParams(1.0, None, 1.0, 0.0)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"temperature": -0.5}, ValueError, "temperature must be finite and >= 0"),
        ({"temperature": float("nan")}, ValueError, "temperature must be finite and >= 0"),
        ({"temperature": float("inf")}, ValueError, "temperature must be finite and >= 0"),
        ({"temperature": True}, TypeError, "temperature must be a real number"),
        ({"top_k": 0}, ValueError, "top_k must be an integer >= 1"),
        ({"top_k": -3}, ValueError, "top_k must be an integer >= 1"),
        ({"top_k": 2.5}, TypeError, "top_k must be an integer >= 1"),
        ({"top_k": 3.0}, TypeError, "top_k must be an integer >= 1"),
        ({"top_k": True}, TypeError, "top_k must be an integer >= 1"),
        ({"top_p": 0.0}, ValueError, r"top_p must be in \(0, 1\]"),
        ({"top_p": -0.2}, ValueError, r"top_p must be in \(0, 1\]"),
        ({"top_p": 1.5}, ValueError, r"top_p must be in \(0, 1\]"),
        ({"top_p": float("nan")}, ValueError, r"top_p must be in \(0, 1\]"),
        ({"top_p": None}, TypeError, "top_p must be a real number"),
        ({"min_p": -0.1}, ValueError, r"min_p must be in \[0, 1\]"),
        ({"min_p": 1.5}, ValueError, r"min_p must be in \[0, 1\]"),
        ({"min_p": float("nan")}, ValueError, r"min_p must be in \[0, 1\]"),
        ({"min_p": "0.1"}, TypeError, "min_p must be a real number"),
    ],
)
def test_bad_parameters_are_refused_when_the_params_are_made(kwargs, error, message):
    with pytest.raises(error, match=message):
        SamplingParams(**kwargs)


def test_min_p_filter_validates_min_p():
    with pytest.raises(ValueError, match=r"min_p must be in \[0, 1\]"):
        specdec.min_p_filter(np.array([1.0, 2.0]), 1.01)


@pytest.mark.parametrize("params", [None, {"temperature": 1.0}, 0.7])
def test_params_must_be_sampling_params(params):
    with pytest.raises(TypeError, match="params must be a SamplingParams"):
        specdec.sampling_probs(np.array([1.0, 2.0]), params)


@pytest.mark.parametrize(
    ("logits", "message"),
    [
        ([[0.0, 1.0], [np.nan, 0.0]], "NaN in row 1"),
        ([[0.0, np.inf]], r"\+inf"),
        ([[-np.inf, -np.inf]], "entirely -inf"),
    ],
)
def test_bad_logits_are_refused_by_the_pipeline(logits, message, rng):
    with pytest.raises(ValueError, match=message):
        specdec.sampling_probs(np.array(logits), SamplingParams())
    with pytest.raises(ValueError, match=message):
        specdec.sample_token(np.array(logits), SamplingParams(), rng)


@pytest.mark.parametrize("temperature", [0.4, 1.0, 2.5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_temperature_alone_is_softmax_bit_for_bit(temperature, dtype):
    """The hot path (checked after the fact, no division by T = 1) gives softmax's numbers exactly."""
    rng = np.random.default_rng(5)
    logits = (rng.standard_normal((3, 4, 50)) * 4).astype(dtype)  # (3, 4, 50)
    if dtype != np.int64:
        logits[0, 1, :49] = -np.inf  # a row whose only token has probability exactly 1
    expected = specdec.softmax(logits, temperature)
    for x in (logits, logits[1, 2], logits.tolist()):  # a batch, one row, a nested list
        got = specdec.sampling_probs(x, SamplingParams(temperature))
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, expected if np.ndim(x) == 3 else expected[1, 2])


@pytest.mark.parametrize(
    ("logits", "error", "message"),
    [
        ([np.nan, 0.0], ValueError, "contains NaN"),
        ([[0.0, 1.0], [2.0, 1.0], [0.0, np.inf]], ValueError, r"\+inf in row 2"),
        (np.array([[-np.inf, -np.inf], [0.0, 1.0]], dtype=np.float32), ValueError, "entirely -inf in row 0"),
        (np.zeros((2, 0)), ValueError, "empty vocabulary"),
        (np.float64(1.0), ValueError, "must have a vocabulary axis"),
        (np.array([True, False]), TypeError, "must be an array of real numbers"),
    ],
)
def test_temperature_alone_refuses_what_check_logits_refuses(logits, error, message):
    """The hot path validates after computing; a bad row must still raise, never return NaN or warn."""
    for temperature in (1.0, 0.5):
        with pytest.raises(error, match=message):
            specdec.sampling_probs(logits, SamplingParams(temperature))


def test_survivors_that_continue_past_the_candidates_are_all_kept():
    """V > 1024 takes the candidates path: four 5.0s and 2,000 zeros tied with the 5th largest logit.

    top_k=5 keeps every token tied with the 5th (all 2,004), and top-p 0.5 keeps them all too: the
    mass strictly above a zero is 4 e^5 / (4 e^5 + 2000) = 0.23 < 0.5. The first candidate set (64
    tokens) ends inside the tie, so sampling_probs must widen it until the tie ends.
    """
    logits = np.zeros(2004)
    logits[[7, 500, 1500, 2003]] = 5.0
    for params in (SamplingParams(1.0, top_k=5, top_p=0.5), SamplingParams(1.0, top_k=5)):
        probs = specdec.sampling_probs(logits, params)
        assert (probs > 0).sum() == 2004
        np.testing.assert_allclose(probs, specdec.softmax(logits), rtol=1e-12)
    rows = np.stack([logits, np.roll(logits, 3), -logits])  # a batch: only some rows need the wider pass
    probs = specdec.sampling_probs(rows, SamplingParams(1.0, top_k=5, top_p=0.5))
    assert ((probs > 0).sum(axis=-1) == [2004, 2004, 2000]).all()
