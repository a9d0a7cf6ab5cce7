"""Solution to notebook 02, exercise 2: total variation distance from its definition."""

import numpy as np


def tv_by_events(p, q) -> float:
    """max over events A of |P(A) - Q(A)|, for two distributions over the same tokens.

    The event that achieves the maximum is A = {i : p_i > q_i}: every token in it adds
    p_i - q_i > 0 to P(A) - Q(A), and any other token would add something <= 0. (The
    complement gives the same gap with the opposite sign, so the absolute value changes
    nothing.) Hence TV = sum over p_i > q_i of (p_i - q_i). Because both distributions sum
    to 1, the positive and the negative differences have the same total, which is why this
    equals half the L1 distance, 0.5 * sum |p_i - q_i|.
    """
    p = np.asarray(p, dtype=np.float64)  # (V,)
    q = np.asarray(q, dtype=np.float64)  # (V,)
    gap = p - q  # (V,)
    return float(gap[gap > 0].sum())  # P(A) - Q(A) for A = {i : p_i > q_i}
