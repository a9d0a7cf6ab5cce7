# Generated from notebooks/01_logits_softmax_temperature.ipynb by tools/export.py: edit the notebook, not this file.
"""Logits to probabilities: validation, a numerically stable softmax, log-softmax, temperature."""

import numpy as np

from specdec.validation import as_array, check_real


def describe_row(index: tuple, ndim: int) -> str:
    """Name a row of a batch for an error message: '' for a single row, ' in row (2, 5)' otherwise."""
    if ndim == 1:
        return ""
    return f" in row {index[0] if len(index) == 1 else index}"


def check_logits(logits, name: str = "logits") -> np.ndarray:
    """Return `logits` as an array after checking it can define a distribution.

    Logits are real numbers with the vocabulary on the last axis. -inf is allowed (it means
    "probability zero"), but NaN and +inf are not, and a row that is entirely -inf has no
    token left to draw, so each of those raises a ValueError that says which row.
    """
    arr = as_array(logits, name)  # ragged rows get a message naming the argument, not numpy's
    if arr.dtype.kind not in "fiu":  # float, signed or unsigned int; not bool, complex, text or objects
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    if arr.ndim == 0:
        raise ValueError(f"{name} must have a vocabulary axis, got a scalar")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} has an empty vocabulary axis (shape {arr.shape})")
    row_max = arr.max(axis=-1)  # (...,) NaN if a row has a NaN, +inf if it has +inf
    if not np.isfinite(row_max).all():  # one cheap pass; diagnose only when something is wrong
        for index in np.ndindex(arr.shape[:-1]):
            row = arr[index]  # (V,)
            where = describe_row(index, arr.ndim)
            if np.isnan(row).any():
                raise ValueError(f"{name} contains NaN{where}")
            if (row == np.inf).any():
                raise ValueError(f"{name} contains +inf{where}")
            if (row == -np.inf).all():
                raise ValueError(f"{name} is entirely -inf{where}: no token is left to draw")
    return arr


def check_temperature(temperature) -> float:
    """Return `temperature` as a float after checking it is a finite number >= 0 (0 means greedy).

    Like every check in the package, it uses one rule (specdec/validation.py): a wrong type
    (a string, None, a bool) raises TypeError, a number out of range (negative, NaN, inf)
    raises ValueError, and both messages name the argument and what is allowed.
    """
    return check_real(temperature, "temperature", 0, note="0 means greedy")


def vocabulary_last(logits, axis: int) -> np.ndarray:
    """Move the vocabulary `axis` of `logits` to the end, with a clear error for a bad axis."""
    arr = as_array(logits, "logits")
    if arr.ndim == 0:
        raise ValueError("logits must have a vocabulary axis, got a scalar")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis {axis} is out of range for logits of shape {arr.shape}")
    return np.moveaxis(arr, axis, -1)


def one_hot_argmax(x: np.ndarray) -> np.ndarray:
    """The greedy distribution: probability 1 on the largest logit (ties -> lowest index)."""
    probs = np.zeros(x.shape, dtype=np.float64)  # (..., V)
    best = np.argmax(x, axis=-1)[..., None]  # (..., 1) argmax returns the first maximum
    np.put_along_axis(probs, best, 1.0, axis=-1)
    return probs


def softmax(logits, temperature: float = 1.0, axis: int = -1) -> np.ndarray:
    """softmax(x / T) over `axis`: shift by the row maximum, then divide by T (no overflow); T = 0 is greedy."""
    t = check_temperature(temperature)
    x = check_logits(vocabulary_last(logits, axis))  # (..., V)
    if t == 0:
        return np.moveaxis(one_hot_argmax(x), -1, axis)
    with np.errstate(over="ignore"):  # logits a float range apart overflow to -inf: probability 0, as they should
        shifted = x.astype(np.float64) - x.max(axis=-1, keepdims=True)  # (..., V) all <= 0
        weights = np.exp(shifted / t)  # (..., V) in [0, 1], the max is exactly 1
    probs = weights / weights.sum(axis=-1, keepdims=True)  # (..., V)
    return np.moveaxis(probs, -1, axis)


def log_softmax(logits, axis: int = -1) -> np.ndarray:
    """(x - max x) - log(sum exp(x - max x)) in float64: finite where log(softmax(x)) would be -inf."""
    x = check_logits(vocabulary_last(logits, axis))  # (..., V)
    with np.errstate(over="ignore"):  # overflows only for logits a float range apart: -inf is the nearest float64
        shifted = x.astype(np.float64) - x.max(axis=-1, keepdims=True)  # (..., V)
    log_norm = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (..., 1) >= 0
    return np.moveaxis(shifted - log_norm, -1, axis)
