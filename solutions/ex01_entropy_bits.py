"""Solution to notebook 01, exercise 4: entropy in bits, from probabilities, with 0 * log 0 = 0."""

import numpy as np


def entropy_bits(probs):
    """Entropy in bits of each row (last axis): -sum p log2 p, where p = 0 contributes 0 (the limit of p log p)."""
    p = np.asarray(probs, dtype=np.float64)  # (..., V)
    safe = np.where(p > 0, p, 1.0)  # (..., V) never take log2(0): it is -inf, and 0 * -inf is NaN
    terms = np.where(p > 0, -p * np.log2(safe), 0.0)  # (..., V) a zero probability adds exactly 0
    return terms.sum(axis=-1)  # (...,)
