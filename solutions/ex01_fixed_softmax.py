"""Solution to notebook 01, exercise 3: the blog post's softmax, fixed.

It reuses Exercise 1's answer, `stable_softmax`, repeated below so that this file stands alone.
"""

import math

import numpy as np


def fixed_softmax(x, temperature=1.0):
    """The blog's softmax, fixed: validated input, per-row, shift before dividing, T = 0 greedy.

    The blog's version was `x = x / temperature; e_x = np.exp(x - np.max(x)); return e_x / e_x.sum()`:
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


def stable_softmax(logits, temperature):
    """Exercise 1's answer: softmax(logits / T) over the last axis without overflow; T = 0 is greedy."""
    x = np.asarray(logits, dtype=np.float64)  # (..., V)
    if temperature == 0:
        probs = np.zeros_like(x)  # (..., V)
        np.put_along_axis(probs, np.argmax(x, axis=-1)[..., None], 1.0, axis=-1)  # the first of tied maxima
        return probs
    shifted = x - x.max(axis=-1, keepdims=True)  # (..., V) all <= 0: shift first, then divide
    weights = np.exp(shifted / temperature)  # (..., V)
    return weights / weights.sum(axis=-1, keepdims=True)  # (..., V)
