# Generated from notebooks/01_logits_softmax_temperature.ipynb by tools/export.py: edit the notebook, not this file.
"""Logits to probabilities: a numerically stable softmax, log-softmax, temperature."""

import numpy as np

from specdec.validation import check_logits, check_temperature, vocabulary_last


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
