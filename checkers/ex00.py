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


def problem(got, expected, weights) -> str | None:
    """None when got is right; else what is wrong, in words where the printed numbers would look alike.

    got has passed `result_problem`: a float64 array of the input's shape. Two batch mistakes are
    named: one sum for the whole array, and a row sum without keepdims=True, whose shape (...,) numpy
    lines up with the last axis (each column divided by another row's sum).
    """
    if close(got, expected):
        return None
    sums = got.sum(axis=-1)  # (...,) each row's total
    if np.ndim(got) > 1 and not np.allclose(sums, 1.0):
        row = tuple(int(i) for i in np.argwhere(~np.isclose(sums, 1.0))[0])
        where = f"row {row[0] if len(row) == 1 else row} sums to {float(sums[row]):.6g}"
        if np.isclose(sums.sum(), 1.0):
            return f"each row must sum to 1, not the whole array: {where}; divide each row by its own sum"
        mistaken = without_keepdims(weights)  # (..., V), or None where it does not broadcast
        if mistaken is not None and close(got, mistaken):
            return (
                f"{where}, not 1: a sum without keepdims=True has shape {sums.shape}, which numpy lines up with the"
                " last axis, so column j is divided by row j's sum"
            )
    return f"the values differ (largest difference {np.max(np.abs(got - expected)):.2g})"


def without_keepdims(weights) -> np.ndarray | None:
    """What `weights / weights.sum(axis=-1)` gives (a square batch broadcasts it silently), or None if it fails."""
    weights = np.asarray(weights, dtype=np.float64)  # (..., V)
    try:
        return weights / weights.sum(axis=-1)  # (..., V) only when the row sums' shape lines up with the last axis
    except ValueError:
        return None


def broadcast_problem(error: str) -> str:
    """A broadcasting error from the learner's code, with the likeliest cause said first."""
    if "could not be broadcast" not in error:
        return error
    return (
        "a sum without keepdims=True has one value per row, a shape that numpy lines up with the last axis, not"
        f" with the rows (keepdims=True keeps the summed axis, as length 1); your function {error}"
    )


def check_normalise(fn) -> bool:
    """Warm-up: fn(weights) must divide each row (last axis) by its own sum, in float64."""
    for args in NORMALISE_CASES:
        got, error = call(fn, args)
        if error is not None:
            return verdict("normalise", broadcast_problem(error), len(NORMALISE_CASES))
        expected = reference_normalise(*args)
        wrong = result_problem(got, expected, "probabilities") or problem(got, expected, *args)
        if wrong is not None:
            where = f"for input {show(args)} expected {show(expected)}, got {show(got)}"
            return verdict("normalise", located(wrong, where), len(NORMALISE_CASES))
    return verdict("normalise", None, len(NORMALISE_CASES))
