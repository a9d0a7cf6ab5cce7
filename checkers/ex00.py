"""Checker for the warm-up exercise in notebooks/00_welcome.ipynb (support code)."""

import numpy as np

from checkers import call, located, result_problem, show, verdict


def close(got, expected) -> bool:
    """Same shape and the same numbers up to rounding; anything that is not an array of numbers is wrong."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return got.shape == np.shape(expected) and bool(np.allclose(got, expected, rtol=1e-9, atol=1e-12))


def reference_normalise(weights):
    """Each row of non-negative weights divided by its own sum."""
    weights = np.asarray(weights, dtype=np.float64)  # (..., V)
    return weights / weights.sum(axis=-1, keepdims=True)  # (..., V)


NORMALISE_CASES = [
    (np.array([1.0, 1.0, 2.0]),),
    (np.array([0.0, 5.0]),),  # a zero weight stays zero
    (np.array([7.0]),),  # one token: probability 1
    (np.array([1, 2, 3, 4]),),  # integer weights: the probabilities are still fractions
    (np.array([1.0, 2.0]),),  # thirds: a rounded answer is not a normalised one
    (np.array([[1.0, 3.0], [2.0, 6.0]]),),  # a batch whose rows have different sums: each row on its own
    (np.array([[[1.0, 1.0, 2.0]], [[0.5, 0.0, 0.5]]]),),  # (2, 1, 3): any number of leading axes
    (np.array([[[1.0, 3.0, 0.0], [2.0, 2.0, 4.0]], [[0.5, 0.0, 0.5], [9.0, 1.0, 0.0]]]),),  # (2, 2, 3): rows differ
]


def problem(got, expected) -> str | None:
    """None when got is right; else what is wrong, in words where the printed numbers would look alike."""
    if close(got, expected):
        return None
    dtype = getattr(got, "dtype", None)
    near = np.shape(got) == np.shape(expected) and np.allclose(np.asarray(got, np.float64), expected, rtol=1e-3)
    if dtype is not None and dtype in (np.float16, np.float32) and near:
        return f"the values are right to {dtype} precision, but float64 is asked (do the division in float64)"
    if np.shape(got) != np.shape(expected):
        return f"the result has shape {np.shape(got)}, but the input's shape {np.shape(expected)} is asked"
    gap = np.max(np.abs(np.asarray(got, dtype=np.float64) - expected)) if np.ndim(got) == np.ndim(expected) else None
    return f"the values differ (largest difference {gap:.2g})" if gap is not None else "the values differ"


def check_normalise(fn) -> bool:
    """Warm-up: fn(weights) must divide each row (last axis) by its own sum, in float64."""
    for args in NORMALISE_CASES:
        got, error = call(fn, args)
        if error is not None:
            return verdict("normalise", error, len(NORMALISE_CASES))
        expected = reference_normalise(*args)
        wrong = result_problem(got, expected, "probabilities") or problem(got, expected)
        if wrong is not None:
            where = f"for input {show(args)} expected {show(expected)}, got {show(got)}"
            return verdict("normalise", located(wrong, where), len(NORMALISE_CASES))
    return verdict("normalise", None, len(NORMALISE_CASES))
