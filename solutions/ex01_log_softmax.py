"""Solution to notebook 01, exercise 2: log-softmax without the log of zero."""

import numpy as np


def stable_log_softmax(logits):
    """log softmax(x) over the last axis: (x - m) - log(sum(exp(x - m))), m the row maximum.

    Never forms the probabilities, so a probability that would underflow to 0 keeps its finite
    log; the sum is at least 1 (its largest term is exp(0)), so its log is finite and >= 0.
    """
    x = np.asarray(logits, dtype=np.float64)  # (..., V)
    shifted = x - x.max(axis=-1, keepdims=True)  # (..., V) all <= 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (..., V)
