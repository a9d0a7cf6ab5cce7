"""Solution to notebook 01, exercise 1: a numerically stable softmax with temperature."""

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
