"""Precision promises with known values: check_probs' tolerance (specdec/validation.py) and float64 softmax.

check_probs promises rows that sum to 1 "within 1e-6 (1e-4 for float32 or lower precision input)": both
sides of each boundary are tested, on rows built so that their float64 sums are 1 + d to within 1e-15
(0.5 and 0.5 + d, with d much larger than float64 rounding; for float32, d larger than float32's 3e-8
rounding at 0.5). log_softmax and softmax promise float64 arithmetic: on logits 1e8 and 1e8 + 1, which
float32 cannot tell apart (its spacing there is 8), the exact answers are worked out by hand.
"""

import math

import numpy as np
import pytest

import specdec
from specdec.logits import log_softmax, softmax
from specdec.validation import check_probs


@pytest.mark.parametrize("excess", [9e-7, -9e-7, 5e-7, 0.0])
def test_float64_rows_within_one_millionth_of_one_are_accepted(excess):
    """0.5 and 0.5 + d sum to 1 + d: accepted for |d| <= 1e-6, and returned as float64."""
    row = np.array([0.5, 0.5 + excess])
    out = check_probs(row)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, row)
    assert 0 <= specdec.sample(row, np.random.default_rng(0)) <= 1


@pytest.mark.parametrize("excess", [1.1e-6, -1.1e-6, 1e-5, -1e-5, 1e-4 / 2])
def test_float64_rows_more_than_one_millionth_from_one_are_refused(excess):
    """0.5 and 0.5 + d with |d| > 1e-6 (1 + 1e-5 included): refused, and the message names 1e-6."""
    row = np.array([0.5, 0.5 + excess])
    with pytest.raises(ValueError, match=r"probs must sum to 1 \(within 1e-06\)"):
        check_probs(row)
    with pytest.raises(ValueError, match="must sum to 1"):
        specdec.sample(row, np.random.default_rng(0))


@pytest.mark.parametrize("excess", [9e-5, -9e-5, 1e-5, 1.1e-6])
def test_float32_rows_within_one_ten_thousandth_of_one_are_accepted(excess):
    """float32 rounding is coarser: 0.5 and 0.5 + d in float32 (sum 1 + d +- 3e-8) are accepted for |d| < 1e-4."""
    row = np.array([0.5, 0.5 + excess], dtype=np.float32)
    out = check_probs(row)
    assert out.dtype == np.float64  # converted, as documented
    assert 0 <= specdec.sample(row, np.random.default_rng(0)) <= 1


@pytest.mark.parametrize("excess", [1.1e-4, -1.1e-4, 1e-3])
def test_float32_rows_more_than_one_ten_thousandth_from_one_are_refused(excess):
    """0.5 and 0.5 + d in float32 with |d| > 1e-4 (+- 3e-8): refused, and the message names 1e-4."""
    row = np.array([0.5, 0.5 + excess], dtype=np.float32)
    with pytest.raises(ValueError, match=r"probs must sum to 1 \(within 0.0001\)"):
        check_probs(row)


def test_float16_counts_as_lower_precision_and_integers_as_exact():
    """float16 gets float32's 1e-4; an integer row (a point mass written as 0, 1) is held to 1e-6 and passes."""
    assert check_probs(np.array([0.25, 0.75], dtype=np.float16)).dtype == np.float64
    with pytest.raises(ValueError, match=r"within 0.0001"):
        check_probs(np.array([0.5, 0.5 + 2**-10], dtype=np.float16))  # sum 1 + 9.8e-4
    np.testing.assert_array_equal(check_probs(np.array([0, 1])), [0.0, 1.0])
    with pytest.raises(ValueError, match=r"within 1e-06"):
        check_probs(np.array([1, 1]))


def test_each_row_of_a_batch_gets_the_tolerance():
    """A (2, 2) float64 batch: row 0 sums to 1 + 5e-7 (fine), row 1 to 1 + 2e-6: refused, naming row 1."""
    rows = np.array([[0.5, 0.5 + 5e-7], [0.5, 0.5 + 2e-6]])
    with pytest.raises(ValueError, match=r"within 1e-06.* in row \(1,\)"):
        check_probs(rows)


# --- float64 softmax -----------------------------------------------------------------------------------


def test_log_softmax_tells_apart_logits_one_apart_near_1e8():
    """log_softmax(1e8, 1e8 + 1) = x - logsumexp(x), with logsumexp = 1e8 + 1 + log(1 + 1/e) = 1e8 + log(1 + e).

    So the exact values are -log(1 + e) = -1.3132616875182228 and 1 - log(1 + e) = -0.31326168751822286
    (1e8 + 1 is exact in float64). In float32 both logits are 1e8 and both values would be log(1/2).
    """
    out = log_softmax(np.array([1e8, 1e8 + 1]))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [-math.log(1 + math.e), 1 - math.log(1 + math.e)], rtol=1e-12, atol=0)
    assert out[1] - out[0] == 1.0  # the logits' difference survives exactly


def test_softmax_tells_apart_logits_one_apart_near_1e8():
    """softmax(1e8, 1e8 + 1) = (1, e) / (1 + e) = (0.2689414213699951, 0.7310585786300049), not (1/2, 1/2)."""
    out = softmax(np.array([1e8, 1e8 + 1]))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [1 / (1 + math.e), math.e / (1 + math.e)], rtol=1e-12, atol=0)
    # at temperature 2 the logits are half as far apart: (1, sqrt(e)) / (1 + sqrt(e))
    half = softmax(np.array([1e8, 1e8 + 1]), temperature=2.0)
    np.testing.assert_allclose(half, np.array([1, math.sqrt(math.e)]) / (1 + math.sqrt(math.e)), rtol=1e-12)


def test_float32_logits_give_float64_probabilities():
    """float32 logits (0, 1, 2) are exact; their softmax is computed and returned in float64: e^k / (1 + e + e^2)."""
    logits = np.array([0.0, 1.0, 2.0], dtype=np.float32)
    expected = np.exp([0.0, 1.0, 2.0]) / (1 + math.e + math.e**2)
    out = softmax(logits)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, expected, rtol=1e-15)
    assert log_softmax(logits).dtype == np.float64
    np.testing.assert_allclose(log_softmax(logits), np.log(expected), rtol=1e-14)
