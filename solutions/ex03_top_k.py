"""Reference solutions for the exercises of notebook 03 (top-k).

Try the exercises first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np

from specdec.topk import kth_largest  # exercise 1's reference, exported by the notebook

# Exercise 1


def kth_largest_value(x, k):
    """The k-th largest value of each row, shape (..., 1), without sorting the row.

    np.partition(x, j) puts the value that belongs at index j of the sorted row at index j,
    with nothing larger before it and nothing smaller after it, in O(V). The k-th largest sits
    at index V - k of the ascending order. Slicing j:j+1 keeps the last axis (length 1), so
    the answer broadcasts against the (..., V) logits.
    """
    x = np.asarray(x)
    j = x.shape[-1] - k  # the k-th largest, counted from the small end
    return np.partition(x, j, axis=-1)[..., j : j + 1]  # (..., 1)


# Exercise 2


def top_k_keep_ties(logits, k):
    """Keep every logit >= the k-th largest of its row (so all ties with it), -inf elsewhere.

    The comparison is with a value, not with positions in a sorted order, so tied tokens
    are kept or dropped together and the token order cannot matter. k >= V keeps everything.
    Works on a floating copy: the caller's array is left alone, and integer logits can hold -inf.
    The threshold comes from the package's kth_largest, as the hint says; kth_largest_value above
    (exercise 1) gives the same values.
    """
    x = np.asarray(logits)
    out = x.astype(np.result_type(x.dtype, np.float32), copy=True)  # (..., V)
    if k >= x.shape[-1]:
        return out
    out[out < kth_largest(out, k)] = -np.inf  # (..., V)
    return out


# Exercise 3


def top_k_result_ok(logits, k, filtered):
    """True iff `filtered` is what a correct top-k filter (ties kept) returns for (logits, k).

    The blog's test asks for exactly k finite values, which is false as soon as the k-th
    largest logit is tied (and when the row has fewer than k finite logits). Instead check,
    per row, the properties that pin the result down:
      1. same shape; every entry is either the original logit or -inf (no NaN, no new values);
      2. enough survivors: at least min(k, number of finite logits);
      3. kept and dropped are separated: every kept logit is strictly larger than every dropped
         finite one (larger, because a token tied with a kept one must be kept too);
      4. not too many: without the smallest kept value (all its ties), fewer than k remain.
    """
    x = np.asarray(logits, dtype=np.float64)
    f = np.asarray(filtered)
    if f.shape != x.shape or not np.issubdtype(f.dtype, np.floating):
        return False
    f = f.astype(np.float64)
    kept = f != -np.inf  # (..., V)
    if np.isnan(f).any() or not np.array_equal(f[kept], x[kept]):
        return False
    vocab = x.shape[-1]
    for row, row_kept in zip(x.reshape(-1, vocab), kept.reshape(-1, vocab), strict=True):
        finite = row > -np.inf  # (V,)
        kept_values = row[row_kept]
        dropped_values = row[finite & ~row_kept]
        if kept_values.size < min(k, finite.sum()):
            return False
        if kept_values.size == 0:
            continue  # only possible for a row with no finite logit at all
        if dropped_values.size and kept_values.min() <= dropped_values.max():
            return False
        if (kept_values > kept_values.min()).sum() >= k:
            return False
    return True
