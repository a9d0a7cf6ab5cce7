"""Known values of the statistics that test samplers (specdec/drawing.py): chi-square p-values, the pooling rule.

The reference p-values were computed apart from the code under test, with mpmath 1.3 (in .venv-extras) at
40 digits, as the regularized upper incomplete gamma function Q(d / 2, x / 2), which is P(X >= x) for X
chi-square with d degrees of freedom:

    mpmath.mp.dps = 40; mpmath.gammainc(d / 2, x / 2, mpmath.inf, regularized=True)

chi_square_sf computes them another way (erfc or exp plus a finite sum of terms), so a match to 1e-12 checks
the sum's terms, its first term and its number of terms. The statistics and degrees of freedom are worked out
by hand in each docstring, on probabilities that are exact in binary (1/8, 3/64, ...) wherever a boundary is
tested, so that the expected counts are exact too.
"""

import math

import numpy as np
import pytest

from specdec.drawing import chi_square_sf, chi_square_test, total_variation

# (statistic x, degrees of freedom d, Q(d / 2, x / 2) by mpmath as above, rounded to 20 digits)
MPMATH_SF = [
    (20.0, 3, 0.00016974243555282643),
    (20.0, 4, 0.00049939922738733337),
    (2.0, 1, 0.15729920705028513066),
    (2.0, 2, 0.36787944117144232160),
    (6.0, 3, 0.11161022509471255998),
    (1.0, 1, 0.31731050786291410283),
    (8.0, 4, 0.091578194443670901469),
    (9.0, 5, 0.10906415794977236127),
    (10.0, 10, 0.44049328506521241144),
    (15.0, 10, 0.13206185628772060782),
    (40.0, 3, 1.0655090334255860815e-8),
    (250.0, 200, 0.0093791316688260961072),
    (1100.0, 1000, 0.014614408126295194045),
]


@pytest.mark.parametrize(("statistic", "dof", "expected"), MPMATH_SF)
def test_chi_square_sf_matches_the_incomplete_gamma_function(statistic, dof, expected):
    """P(X >= x) = Q(d / 2, x / 2), for odd and even d, small and large (values: mpmath, see the module)."""
    assert chi_square_sf(statistic, dof) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("statistic", "dof"), [(25.0, 100), (250.0, 1000), (1e-6, 5), (1e-3, 50)])
def test_chi_square_sf_is_a_probability_even_where_its_terms_sum_above_one(statistic, dof):
    """Far below the mean (x << d) P(X >= x) is 1 minus a tiny amount; a p-value is never above 1.

    mpmath (see the module) gives 1 - 1.1e-15 for x = 25, d = 100, and 1 - 5e-17 for x = 1e-6, d = 5: the
    nearest floats are at most 1. Summed in floating point, the terms for x = 25, d = 100 and x = 250,
    d = 1000 come to 1 + 2e-15 and 1 + 4e-14: the sum must be clipped to 1.
    """
    p_value = chi_square_sf(statistic, dof)
    assert 0.0 <= p_value <= 1.0
    assert p_value == pytest.approx(1.0, abs=1e-12)


def test_chi_square_test_of_counts_10_20_30_40_against_uniform():
    """100 draws of 4 equally likely tokens: expected 25 each.

    X^2 = (15^2 + 5^2 + 5^2 + 15^2) / 25 = 500 / 25 = 20 on 4 - 1 = 3 degrees of freedom, and
    p = Q(3/2, 10) = 1.6974243555282643e-4 (mpmath, see the module).
    """
    result = chi_square_test([10, 20, 30, 40], [0.25] * 4)
    assert result.statistic == pytest.approx(20.0, rel=1e-12)
    assert result.dof == 3
    assert result.p_value == pytest.approx(0.00016974243555282643, rel=1e-12)


@pytest.mark.parametrize(
    ("counts", "probs", "statistic", "dof", "p_value"),
    [
        # 60 draws of a fair coin, 40 heads: (10^2 + 10^2) / 30 = 20 / 3, d = 1, p = erfc(sqrt(10 / 3))
        ([40, 20], [0.5, 0.5], 20 / 3, 1, math.erfc(math.sqrt(10 / 3))),
        # expected 25, 25, 50 for 100 draws: (5^2 + 5^2) / 25 = 2, d = 2, p = exp(-1)
        ([30, 20, 50], [0.25, 0.25, 0.5], 2.0, 2, math.exp(-1.0)),
        # five cells of 20 (100 draws): (10^2 + 10^2) / 20 = 10, d = 4, p = exp(-5) (1 + 5)
        ([30, 10, 20, 20, 20], [0.2] * 5, 10.0, 4, 6 * math.exp(-5.0)),
    ],
    ids=["2 cells", "3 cells", "5 cells"],
)
def test_the_degrees_of_freedom_are_the_categories_minus_one(counts, probs, statistic, dof, p_value):
    """d = k - 1 for k categories, and the p-value is the survival function at d (closed forms for d = 1, 2, 4)."""
    result = chi_square_test(counts, probs)
    assert result.statistic == pytest.approx(statistic, rel=1e-12)
    assert result.dof == dof
    assert result.p_value == pytest.approx(p_value, rel=1e-12)


# --- pooling: tokens expected fewer than min_expected = 5 times form one category -----------------


def test_a_token_expected_exactly_five_times_is_a_category_of_its_own():
    """40 draws with probabilities 1/8, 1/8, 3/4: expected 5, 5, 30 exactly (binary fractions), none below 5.

    Nothing is pooled: X^2 = (7 - 5)^2 / 5 + (3 - 5)^2 / 5 + 0 = 1.6 on 3 - 1 = 2 degrees of freedom,
    p = exp(-0.8). (Pooling the two 5s would give one category of 10 observed 10: X^2 = 0 on 1.)
    """
    result = chi_square_test([7, 3, 30], [1 / 8, 1 / 8, 3 / 4])
    assert result.statistic == pytest.approx(1.6, rel=1e-12)
    assert result.dof == 2
    assert result.p_value == pytest.approx(math.exp(-0.8), rel=1e-12)


def test_tokens_expected_just_under_five_times_are_pooled():
    """40 draws with probabilities 0.12, 0.12, 0.76: expected 4.8, 4.8, 30.4, the first two under 5.

    They are pooled into one category observed 7 + 3 = 10, expected 9.6; the third is observed 30:
    X^2 = 0.4^2 / 9.6 + 0.4^2 / 30.4 = 0.021929824561403509 on 2 - 1 = 1 degree of freedom,
    p = Q(1/2, X^2 / 2) = 0.88227393564490676 (mpmath, see the module).
    """
    result = chi_square_test([7, 3, 30], [0.12, 0.12, 0.76])
    assert result.statistic == pytest.approx(0.16 / 9.6 + 0.16 / 30.4, rel=1e-9)
    assert result.dof == 1
    assert result.p_value == pytest.approx(0.88227393564490676, rel=1e-9)


def test_min_expected_moves_the_boundary():
    """The same 40 draws (expected 5, 5, 30) with min_expected = 5.5: the two 5s are pooled.

    One category observed 10, expected 10, and one observed 30, expected 30: X^2 = 0 on 1 degree of
    freedom, p = 1.
    """
    assert chi_square_test([7, 3, 30], [1 / 8, 1 / 8, 3 / 4], min_expected=5.5) == (0.0, 1, 1.0)


def test_pooling_counts_the_pooled_category_once_and_ignores_impossible_tokens():
    """64 draws with probabilities (32, 16, 6, 5, 3, 2, 0) / 64: expected 32, 16, 6, 5, 3, 2, 0.

    Categories: 32, 16, 6 and 5 on their own, 3 + 2 pooled (observed 4 + 1 = 5, expected 5), and the
    token of probability 0 (never drawn) in none: k = 5, d = 4. X^2 = 2^2 / 32 + 2^2 / 16 = 0.375 and
    p = exp(-h) (1 + h) with h = 0.1875, 0.98447207783922541 by mpmath (see the module).
    """
    probs = np.array([32, 16, 6, 5, 3, 2, 0]) / 64
    result = chi_square_test([30, 18, 6, 5, 4, 1, 0], probs)
    assert result.statistic == pytest.approx(0.375, rel=1e-12)
    assert result.dof == 4
    assert result.p_value == pytest.approx(0.98447207783922541, rel=1e-12)
    assert result.p_value == pytest.approx(math.exp(-0.1875) * 1.1875, rel=1e-12)


def test_no_pooled_category_when_no_token_is_expected_fewer_than_five_times():
    """probs 1/2, 1/2, 0 and 60, 40, 0 draws: two categories (the impossible token is none), d = 1.

    X^2 = (10^2 + 10^2) / 50 = 4, p = erfc(sqrt(2)).
    """
    result = chi_square_test([60, 40, 0], [0.5, 0.5, 0.0])
    assert result.statistic == pytest.approx(4.0, rel=1e-12)
    assert result.dof == 1
    assert result.p_value == pytest.approx(math.erfc(math.sqrt(2.0)), rel=1e-12)


def test_the_expected_counts_are_computed_in_float64():
    """A million draws, one off from 10^5 and 2 10^5: X^2 = 1 / 10^5 + 1 / (2 10^5) = 1.5e-5, to 1e-9.

    The probabilities 0.1, 0.2, 0.3, 0.4 rounded to float32 are off by ~1e-8 relative, which moves the
    expected counts by 0.001 to 0.012 and X^2 by ~1e-5 relative: the test must use float64.
    """
    result = chi_square_test([100_001, 199_999, 300_000, 400_000], [0.1, 0.2, 0.3, 0.4])
    assert result.statistic == pytest.approx(1 / 100_000 + 1 / 200_000, rel=1e-9)
    assert result.dof == 3


# --- total variation ---------------------------------------------------------------------------------


def test_total_variation_keeps_float64_precision():
    """p = (2^-30, 1 - 2^-30) and q = (0, 1), both exact in float64: TV = (2^-30 + 2^-30) / 2 = 2^-30 exactly.

    In float32 (24 bits) 1 - 2^-30 rounds to 1 and half of the difference is lost.
    """
    assert total_variation([2.0**-30, 1 - 2.0**-30], [0.0, 1.0]) == 2.0**-30


def test_total_variation_is_half_the_l1_distance():
    """(0.25, 0.25, 0.5) against (0.5, 0.5, 0): |d| = 0.25 + 0.25 + 0.5 = 1, half of it 0.5; symmetric."""
    p, q = [0.25, 0.25, 0.5], [0.5, 0.5, 0.0]
    assert total_variation(p, q) == 0.5 == total_variation(q, p)
