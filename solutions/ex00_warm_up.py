"""Reference solution for the warm-up exercise in notebooks/00_welcome.ipynb."""

import numpy as np


def normalise(weights):
    """Turn non-negative weights into probabilities: divide each row (the last axis) by its own sum.

    keepdims=True keeps the summed axis as length 1, so the sums broadcast back over their own
    row; without it a batch would be divided by the wrong numbers (or fail to broadcast).
    """
    weights = np.asarray(weights, dtype=np.float64)  # (..., V)
    return weights / weights.sum(axis=-1, keepdims=True)  # (..., V), each row sums to 1
