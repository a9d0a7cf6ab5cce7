"""Checker for the warm-up exercise in notebooks/00_welcome.ipynb (support code)."""

import numpy as np

from specdec.exercises import check_against


def close(got, expected) -> bool:
    """Same shape and the same numbers up to rounding; anything that is not an array of numbers is wrong."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return got.shape == np.shape(expected) and bool(np.allclose(got, expected, rtol=1e-9, atol=1e-12))


def copying(fn):
    """Call fn on copies of the case's arrays, so a function that edits its input cannot change the case."""
    return lambda *args: fn(*(np.copy(a) if isinstance(a, np.ndarray) else a for a in args))


def reference_normalise(weights):
    """Each row of non-negative weights divided by its own sum."""
    weights = np.asarray(weights, dtype=np.float64)  # (..., V)
    return weights / weights.sum(axis=-1, keepdims=True)  # (..., V)


NORMALISE_CASES = [
    (np.array([1.0, 1.0, 2.0]),),
    (np.array([0.0, 5.0]),),  # a zero weight stays zero
    (np.array([7.0]),),  # one token: probability 1
    (np.array([1, 2, 3, 4]),),  # integer weights: the probabilities are still fractions
    (np.array([[1.0, 3.0], [2.0, 2.0]]),),  # a batch: each row is normalised on its own
    (np.array([[[1.0, 1.0, 2.0]], [[0.5, 0.0, 0.5]]]),),  # (2, 1, 3): any number of leading axes
]


def check_normalise(fn) -> bool:
    """Warm-up: fn(weights) must divide each row (last axis) by its own sum."""
    return check_against("normalise", copying(fn), reference_normalise, NORMALISE_CASES, same=close)
