"""Reference solution for exercise 2 of notebook 09 (the residual distribution).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np


def residual_distribution(p, q):
    """norm(max(0, p - q)) along the last axis; p itself for a row where that is all zero.

    The excess max(0, p - q) is the probability the target wants and the draft did not offer.
    Dividing it by its sum makes it a distribution. Its sum is 0 only when p <= q everywhere,
    which for two distributions means p == q: then a rejection has probability 0 and any
    distribution would do, but returning p keeps the function total (no 0 / 0, no NaN).
    Every row is handled on its own: the sum is taken with keepdims along the last axis.
    """
    p = np.asarray(p, dtype=np.float64)  # (..., V)
    q = np.asarray(q, dtype=np.float64)  # (..., V)
    excess = np.maximum(p - q, 0.0)  # (..., V)
    mass = excess.sum(axis=-1, keepdims=True)  # (..., 1)
    safe_mass = np.where(mass > 0, mass, 1.0)  # (..., 1) never divide by 0
    return np.where(mass > 0, excess / safe_mass, p)  # (..., V)
