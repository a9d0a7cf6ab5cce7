"""softmax, log_softmax and their validation (notebook 01, specdec/logits.py)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import specdec

finite_logits = arrays(np.float64, st.integers(1, 30), elements=st.floats(-50, 50))


@given(finite_logits, st.floats(0.05, 20))
def test_softmax_is_a_distribution_that_keeps_the_order(logits, temperature):
    probs = specdec.softmax(logits, temperature)
    assert probs.dtype == np.float64
    assert probs.min() >= 0 and abs(probs.sum() - 1) < 1e-12
    order = np.argsort(logits, kind="stable")
    assert np.all(np.diff(probs[order]) >= 0)  # larger logit, larger (or equal) probability


@given(finite_logits, st.floats(-1e6, 1e6))
def test_softmax_ignores_a_constant_shift(logits, shift):
    np.testing.assert_allclose(specdec.softmax(logits + shift), specdec.softmax(logits), atol=1e-12)


def test_softmax_matches_the_textbook_formula_where_that_does_not_overflow():
    logits = np.array([1.0, 2.0, 3.0, -1.0])
    expected = np.exp(logits / 0.7) / np.exp(logits / 0.7).sum()
    np.testing.assert_allclose(specdec.softmax(logits, 0.7), expected, rtol=1e-14)


def test_huge_logits_do_not_overflow():
    probs = specdec.softmax(np.array([1000.0, 999.0, -1000.0]))
    np.testing.assert_allclose(probs, [1 / (1 + np.exp(-1)), np.exp(-1) / (1 + np.exp(-1)), 0], atol=1e-15)


def test_minus_infinity_means_probability_zero():
    probs = specdec.softmax(np.array([0.0, -np.inf, 0.0]))
    np.testing.assert_array_equal(probs, [0.5, 0.0, 0.5])


def test_all_but_one_minus_infinity_is_a_point_mass():
    np.testing.assert_array_equal(specdec.softmax(np.array([-np.inf, 3.0, -np.inf]), 5.0), [0, 1, 0])


def test_temperature_zero_is_greedy_with_ties_to_the_lowest_index():
    np.testing.assert_array_equal(specdec.softmax(np.array([1.0, 3.0, 3.0, 2.0]), 0), [0, 1, 0, 0])
    np.testing.assert_array_equal(specdec.softmax(np.array([[5, 1], [1, 5]]), 0.0), [[1, 0], [0, 1]])


def test_tiny_temperature_gives_no_nan_and_splits_exact_ties():
    probs = specdec.softmax(np.array([1.0, 3.0, 3.0, 2.0]), 1e-300)
    np.testing.assert_array_equal(probs, [0, 0.5, 0.5, 0])


def test_huge_temperature_is_uniform_over_finite_logits():
    probs = specdec.softmax(np.array([1.0, -np.inf, 50.0, -20.0]), 1e300)
    np.testing.assert_allclose(probs, [1 / 3, 0, 1 / 3, 1 / 3], rtol=1e-12)


def test_float32_and_integer_inputs_give_float64():
    assert specdec.softmax(np.array([1, 2, 3])).dtype == np.float64
    p32 = specdec.softmax(np.array([0.1, 0.2], dtype=np.float32))
    assert p32.dtype == np.float64
    np.testing.assert_allclose(p32, specdec.softmax(np.array([0.1, 0.2], dtype=np.float32).astype(np.float64)))


def test_batched_rows_and_axis_argument(rng):
    logits = rng.normal(size=(2, 3, 7))
    batched = specdec.softmax(logits, 0.9)
    for index in np.ndindex(2, 3):
        np.testing.assert_array_equal(batched[index], specdec.softmax(logits[index], 0.9))
    np.testing.assert_allclose(
        specdec.softmax(logits, axis=1), np.moveaxis(specdec.softmax(np.moveaxis(logits, 1, -1)), -1, 1)
    )


@pytest.mark.parametrize("axis", [2, -3])
def test_an_axis_out_of_range_is_named(axis):
    with pytest.raises(ValueError, match=f"axis {axis} is out of range for logits of shape"):
        specdec.softmax(np.zeros((2, 3)), axis=axis)


def test_log_softmax_is_log_of_softmax_and_survives_underflow():
    logits = np.array([2.0, 1.0, -3.0])
    np.testing.assert_allclose(specdec.log_softmax(logits), np.log(specdec.softmax(logits)), rtol=1e-14)
    far = specdec.log_softmax(np.array([0.0, -1000.0]))
    assert far[1] == pytest.approx(-1000.0)  # log(softmax) would say -inf here
    assert specdec.log_softmax(np.array([0.0, -np.inf]))[1] == -np.inf


@pytest.mark.parametrize("function", [specdec.softmax, specdec.log_softmax])
@pytest.mark.parametrize(
    ("logits", "message"),
    [
        ([1.0, np.nan, 2.0], "NaN"),
        ([1.0, np.inf], r"\+inf"),
        ([-np.inf, -np.inf], "entirely -inf"),
        ([[0.0, 1.0], [-np.inf, -np.inf]], r"entirely -inf in row 1"),
        ([[0.0, 1.0], [0.0, np.nan]], r"NaN in row 1"),
        (np.zeros((2, 0)), "empty vocabulary"),
        (3.0, "vocabulary axis"),
    ],
)
def test_bad_logits_name_the_problem_and_the_row(function, logits, message):
    with pytest.raises(ValueError, match=message):
        function(np.asarray(logits))


@pytest.mark.parametrize("logits", [np.array([True, False]), np.array(["a", "b"]), np.array([1 + 2j, 0])])
def test_non_real_logits_are_a_type_error(logits):
    with pytest.raises(TypeError, match="logits must be an array of real numbers"):
        specdec.softmax(logits)


@pytest.mark.parametrize("temperature", [-0.1, -1, float("nan"), float("inf"), -float("inf")])
def test_bad_temperature_values(temperature):
    with pytest.raises(ValueError, match="temperature must be finite and >= 0"):
        specdec.softmax(np.array([1.0, 2.0]), temperature)


@pytest.mark.parametrize("temperature", [True, "1.0", None, np.array([1.0, 2.0])])
def test_bad_temperature_types(temperature):
    with pytest.raises(TypeError, match="temperature must be a real number"):
        specdec.softmax(np.array([1.0, 2.0]), temperature)


def test_numpy_scalar_temperatures_are_fine():
    np.testing.assert_allclose(specdec.softmax([1.0, 2.0], np.float32(0.5)), specdec.softmax([1.0, 2.0], 0.5))
    np.testing.assert_array_equal(specdec.softmax([1.0, 2.0], np.int64(0)), [0, 1])


@pytest.mark.parametrize("temperature", [1e-300, 1e-308, 5e-324])
def test_the_max_is_subtracted_before_dividing_by_a_tiny_temperature(temperature):
    """(x - max x) / T, never x / T - max(x / T): 3 / 1e-308 overflows to inf, and inf - inf is NaN."""
    probs = specdec.softmax(np.array([1.0, 2.0, 3.0]), temperature=temperature)
    np.testing.assert_array_equal(probs, [0.0, 0.0, 1.0])
    probs = specdec.sampling_probs(np.array([[1.0, 2.0], [3.0, -3.0]]), specdec.SamplingParams(temperature))
    np.testing.assert_array_equal(probs, [[0.0, 1.0], [1.0, 0.0]])
