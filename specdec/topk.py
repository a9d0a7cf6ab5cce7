# Generated from notebooks/03_top_k.ipynb by tools/export.py: edit the notebook, not this file.
"""Top-k filtering: keep the k largest logits (and every logit tied with the k-th)."""

import numpy as np

from specdec.validation import check_count, check_logits


def kth_largest(x: np.ndarray, k: int) -> np.ndarray:
    """The k-th largest value of each row, shape (..., 1), in O(V) with np.partition (no full sort)."""
    vocab = x.shape[-1]
    return np.partition(x, vocab - k, axis=-1)[..., vocab - k : vocab - k + 1]  # (..., 1)


def top_k_filter(logits, k: int) -> np.ndarray:
    """Set every logit below the k-th largest of its row to -inf; same shape, floating dtype.

    Every token tied with the k-th largest value survives (as in Hugging Face's
    TopKLogitsWarper), so with ties more than k tokens can remain; the result does not
    depend on the order of the tokens. k >= V keeps everything.
    """
    x = check_logits(logits)  # (..., V)
    k = check_count(k, "k")
    out = x.astype(np.result_type(x.dtype, np.float32), copy=True)  # (..., V) ints become floats
    if k >= x.shape[-1]:
        return out
    out[out < kth_largest(out, k)] = -np.inf  # (..., V)
    return out
