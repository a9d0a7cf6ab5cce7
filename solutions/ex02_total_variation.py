"""Solution to notebook 02, exercise 2: the event that attains the total variation distance."""

import numpy as np


def best_event(p, q) -> np.ndarray:
    """The event A (a boolean mask over the tokens) with the largest gap |P(A) - Q(A)|.

    P(A) - Q(A) is the sum of p_i - q_i over the tokens in A, so each token decides for itself:
    every token with p_i > q_i adds something positive, every other token adds something <= 0.
    The largest gap therefore takes exactly the tokens with p_i > q_i (tokens with p_i = q_i
    change nothing either way; the complement gives the same gap with the opposite sign).
    Because both distributions sum to 1, the positive differences and the negative ones have
    the same total, so this gap is half the L1 distance: 0.5 * sum |p_i - q_i|.
    """
    p = np.asarray(p, dtype=np.float64)  # (V,)
    q = np.asarray(q, dtype=np.float64)  # (V,)
    return p > q  # (V,) A = {i : p_i > q_i}
