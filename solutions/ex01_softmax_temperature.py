"""Reference solutions for the exercises in notebooks/01_logits_softmax_temperature.ipynb."""

import math

import numpy as np


def stable_softmax(logits, temperature):
    """softmax(logits / T) over the last axis without overflow; T = 0 is greedy (ties -> lowest index)."""
    x = np.asarray(logits, dtype=np.float64)  # (..., V)
    if temperature == 0:
        probs = np.zeros_like(x)  # (..., V)
        best = np.argmax(x, axis=-1)[..., None]  # (..., 1) argmax returns the first of tied maxima
        np.put_along_axis(probs, best, 1.0, axis=-1)
        return probs
    shifted = x - x.max(axis=-1, keepdims=True)  # (..., V) all <= 0, the max is exactly 0
    weights = np.exp(shifted / temperature)  # (..., V) in [0, 1], the sum >= 1; a gap / T past the float range is -inf
    return weights / weights.sum(axis=-1, keepdims=True)  # (..., V)


def stable_log_softmax(logits):
    """log softmax(x) over the last axis: (x - m) - log(sum(exp(x - m))), m the row maximum.

    Never forms the probabilities, so a probability that would underflow to 0 keeps its finite
    log; the sum is at least 1 (its largest term is exp(0)), so its log is finite and >= 0.
    """
    x = np.asarray(logits, dtype=np.float64)  # (..., V)
    shifted = x - x.max(axis=-1, keepdims=True)  # (..., V) all <= 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (..., V)


def fixed_softmax(x, temperature=1.0):
    """The seed blog's softmax, fixed: validated input, per-row, shift before dividing, T = 0 greedy.

    The seed version was `x = x / temperature; e_x = np.exp(x - np.max(x)); return e_x / e_x.sum()`:
    it divides by T = 0, accepts negative / NaN / infinite T and NaN or +inf logits silently, turns
    an all -inf row into NaN, overflows in x / T for a tiny T, and normalises a batch as a whole.
    """
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be finite and >= 0 (0 means greedy), got {temperature!r}")
    x = np.asarray(x, dtype=np.float64)  # (..., V)
    if np.isnan(x).any():
        raise ValueError("logits contain NaN")
    if (x == np.inf).any():
        raise ValueError("logits contain +inf")
    if (x == -np.inf).all(axis=-1).any():
        raise ValueError("a row of logits is entirely -inf: no token is left")
    return stable_softmax(x, temperature)


def entropy_bits(probs):
    """Entropy in bits of each row (last axis): -sum p log2 p, where p = 0 contributes 0 (the limit of p log p)."""
    p = np.asarray(probs, dtype=np.float64)  # (..., V)
    safe = np.where(p > 0, p, 1.0)  # (..., V) never take log2(0): it is -inf, and 0 * -inf is NaN
    terms = np.where(p > 0, -p * np.log2(safe), 0.0)  # (..., V) a zero probability adds exactly 0
    return terms.sum(axis=-1)  # (...,)
