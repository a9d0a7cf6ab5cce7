# Generated from notebooks/04_top_p.ipynb by tools/export.py: edit the notebook, not this file.
"""Top-p (nucleus) filtering: keep the most likely tokens until their mass reaches p."""

import numpy as np

from specdec.logits import softmax
from specdec.topk import kth_largest
from specdec.validation import check_count, check_logits, check_top_p


def descending_exclusive_cumsum(sorted_desc: np.ndarray) -> np.ndarray:
    """For values sorted in descending order, the sum of everything before each position."""
    above = np.zeros_like(sorted_desc)  # (..., m)
    np.cumsum(sorted_desc[..., :-1], axis=-1, out=above[..., 1:])
    return above


def nucleus_threshold(probs: np.ndarray, p: float) -> np.ndarray:
    """The smallest probability the nucleus keeps (the crossing token's), per row, shape (..., 1).

    Token i is kept iff the mass of the tokens strictly more likely than i is < p. Sorted in
    descending order, that mass is the exclusive running sum, which never decreases, so the kept
    positions are a prefix of length n = #(mass above < p) >= 1; keeping every token whose
    probability is >= the n-th one also keeps all ties with it. Sorts each whole row, in float64.
    """
    top = np.sort(np.asarray(probs, dtype=np.float64), axis=-1)[..., ::-1]  # (..., V) float64, descending
    n = (descending_exclusive_cumsum(top) < p).sum(axis=-1, keepdims=True)  # (..., 1), >= 1
    return np.take_along_axis(top, n - 1, axis=-1)  # (..., 1)


nucleus_threshold_full_sort = nucleus_threshold  # this version's second name: Going further defines a faster one


def top_p_filter(logits, p: float, min_tokens_to_keep: int = 1) -> np.ndarray:
    """Keep token i iff the mass of the tokens strictly more likely than i is < p; -inf elsewhere.

    So the crossing token and all ties at the boundary are kept (float64 throughout); p = 1 keeps
    everything; the `min_tokens_to_keep` largest logits (and ties) always survive.
    """
    x = check_logits(logits)  # (..., V)
    p = check_top_p(p)
    min_tokens_to_keep = check_count(min_tokens_to_keep, "min_tokens_to_keep")
    out = x.astype(np.result_type(x.dtype, np.float32), copy=True)  # (..., V)
    if p == 1:
        return out
    probs = softmax(x)  # (..., V) float64
    keep = probs >= nucleus_threshold(probs, p)  # (..., V)
    if min_tokens_to_keep > 1:
        keep |= out >= kth_largest(out, min(min_tokens_to_keep, x.shape[-1]))
    out[~keep] = -np.inf
    return out


def nucleus_threshold(probs: np.ndarray, p: float, candidates: int = 64) -> np.ndarray:  # noqa: F811 (redefines the core's nucleus_threshold: same thresholds, faster; tests/test_nucleus.py checks it)
    """The smallest probability the nucleus keeps, per row, shape (..., 1).

    Token i is kept iff the mass of tokens strictly more likely than i is < p. Walk the
    probabilities in descending order: the mass above position j is the exclusive cumulative
    sum, which never decreases, so the kept positions are a prefix of length n = #(mass < p),
    and keeping every token with probability >= the n-th one also keeps all ties with it.

    Only the top of each row matters, so first sort just the `candidates` largest
    probabilities (found in O(V) by np.partition). That answer is exact whenever the prefix
    ends inside them (n < candidates); rows where it does not retry with 16x more
    candidates, and finally a full sort. Float64, like the core's version.
    """
    probs = np.asarray(probs, dtype=np.float64)  # (..., V) no copy for float64 input
    vocab = probs.shape[-1]
    rows = probs.reshape(-1, vocab)  # (R, V)
    threshold = np.empty(rows.shape[0])  # (R,)
    todo = np.arange(rows.shape[0])  # rows still to settle
    m = min(candidates, vocab)
    while todo.size:
        part = rows[todo] if m == vocab else np.partition(rows[todo], vocab - m, axis=-1)[:, vocab - m :]
        top = np.sort(part, axis=-1)[:, ::-1]  # (r, m) descending
        n = (descending_exclusive_cumsum(top) < p).sum(axis=-1)  # (r,) >= 1: nothing is above the top
        settled = (n < m) | (m == vocab)  # (r,)
        threshold[todo[settled]] = top[settled, n[settled] - 1]
        todo = todo[~settled]
        m = vocab if 16 * m > vocab // 4 else 16 * m  # for a nucleus that big a full sort is cheaper
    return threshold.reshape(probs.shape[:-1] + (1,))
