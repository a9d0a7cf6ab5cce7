# Generated from notebooks/05_sampling_pipeline.ipynb by tools/export.py: edit the notebook, not this file.
"""The sampling pipeline: temperature -> top-k -> top-p -> min-p, validated, batched and fast."""

from dataclasses import dataclass

import numpy as np

from specdec.drawing import draw
from specdec.logits import one_hot_argmax, softmax
from specdec.nucleus import descending_exclusive_cumsum, top_p_filter
from specdec.topk import top_k_filter
from specdec.validation import (
    as_array,
    check_count,
    check_logits,
    check_min_p,
    check_params,
    check_sampling_rng,
    check_temperature,
    check_top_p,
    maxima_are_finite,
)


def min_p_filter(logits, min_p: float) -> np.ndarray:
    """Keep tokens with p_i >= min_p * p_max, that is exp(x_i - x_max) >= min_p (equality kept)."""
    x = check_logits(logits)  # (..., V)
    min_p = check_min_p(min_p)
    out = x.astype(np.result_type(x.dtype, np.float32), copy=True)  # (..., V)
    with np.errstate(over="ignore"):  # as in softmax: an overflow here can only mean -inf, weight 0
        weights = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))  # (..., V), max is 1
    out[weights < min_p] = -np.inf
    return out


@dataclass(frozen=True)
class SamplingParams:
    """How to turn logits into the distribution a token is drawn from.

    temperature >= 0 (0 = greedy); top_k >= 1 or None; top_p in (0, 1] (1 = off); min_p in [0, 1]
    (0 = off). Applied in that order, each filter on the previous survivors, renormalised.
    """

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float = 1.0
    min_p: float = 0.0

    def __post_init__(self):
        # Validate once here, so every later use can trust the values; store canonical types.
        object.__setattr__(self, "temperature", check_temperature(self.temperature))
        if self.top_k is not None:
            object.__setattr__(self, "top_k", check_count(self.top_k, "top_k"))
        object.__setattr__(self, "top_p", check_top_p(self.top_p, "top_p"))
        object.__setattr__(self, "min_p", check_min_p(self.min_p))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def sampling_probs(logits, params: SamplingParams = SamplingParams()) -> np.ndarray:
    """THE distribution a token is drawn from: float64, same shape as `logits`, rows sum to 1.

    By definition: T = 0 is the one-hot argmax (ties to the lowest index); otherwise scale (x - max x) / T,
    then top-k, top-p and min-p, each filter on the previous one's output, and a softmax over the survivors.
    """
    x = check_logits(logits).astype(np.float64)  # (..., V)
    params = check_params(params)
    if params.greedy:
        return one_hot_argmax(x)  # ties -> the lowest index
    with np.errstate(over="ignore"):  # logits a float range apart overflow to -inf: probability 0
        z = (x - x.max(axis=-1, keepdims=True)) / params.temperature  # (..., V) max first, then divide
    if params.top_k is not None:
        z = top_k_filter(z, params.top_k)
    if params.top_p < 1:
        z = top_p_filter(z, params.top_p)
    if params.min_p > 0:
        z = min_p_filter(z, params.min_p)
    return softmax(z)


composed_sampling_probs = sampling_probs  # a second name: Going further's faster sampling_probs is checked against it


def sample_token(logits, params: SamplingParams = SamplingParams(), rng: np.random.Generator | None = None):
    """Draw one token per row from sampling_probs(logits, params); greedy needs no rng.

    Returns an np.int64 for one row of logits (shape (V,)), an int64 array for a batch.
    """
    params = check_params(params)
    if params.greedy:
        return np.argmax(check_logits(logits), axis=-1)
    return draw(
        sampling_probs(logits, params), check_sampling_rng(rng, params)
    )  # rows are distributions by construction


def kept_count(top: np.ndarray, full_mass: np.ndarray | None, whole_row: bool, params: SamplingParams) -> np.ndarray:
    """How many of the sorted candidates survive all filters, per row (ties at the edge included).

    top: (r, m) scaled logits in descending order, the m largest of each row (top[:, 0] = 0);
    whole_row says whether m is the whole vocabulary. full_mass: (r,) sum of exp(scaled
    logits) over the whole row (needed when top-p acts on the unfiltered distribution).
    Each filter keeps a prefix of `top` (an upper set of the logits), so a count per row
    describes the whole pipeline. A count of m means "maybe more beyond the candidates".
    """
    r, m = top.shape
    weights = np.exp(top)  # (r, m) unnormalised probabilities, weights[:, 0] = 1
    position = np.arange(m)  # (m,)
    kept = np.full(r, m)  # (r,)
    unsure = np.zeros(r, dtype=bool)  # (r,) rows whose top-k survivors may not all be candidates
    if params.top_k is not None and params.top_k < m:
        kth = top[:, params.top_k - 1 : params.top_k]  # (r, 1)
        kept = (top >= kth).sum(axis=-1)  # (r,) the k largest and every tie with the k-th
        unsure = (kept == m) & (not whole_row)  # ties with the k-th may go on past the candidates
    if params.top_p < 1:
        survivors = position < kept[:, None]  # (r, m)
        mass = full_mass if params.top_k is None else (weights * survivors).sum(axis=-1)  # (r,)
        probs = weights / mass[:, None]  # (r, m) probabilities renormalised over the survivors
        n = (descending_exclusive_cumsum(probs) < params.top_p).sum(axis=-1)  # (r,) >= 1
        # Ties are ties of probability: distinct logits can round to the same weight.
        at_edge = weights[np.arange(r), np.minimum(n, kept) - 1][:, None]  # (r, 1)
        kept = np.minimum(kept, (weights >= at_edge).sum(axis=-1))  # ties with the edge token stay
    if params.min_p > 0:
        kept = np.minimum(kept, (weights >= params.min_p).sum(axis=-1))  # the max weight is 1
    return np.where(unsure, m, kept)


def scaled_logits(x: np.ndarray, row_max: np.ndarray, temperature: float) -> np.ndarray:
    """(x - max x) / T in float64, for rows whose max is finite: the same numbers softmax(x, T) exponentiates."""
    if temperature == 1 and x.dtype.itemsize <= 4:  # float32 (or narrower) minus its max: no overflow
        return np.subtract(x, row_max, dtype=np.float64)  # (..., n) <= 0, without errstate's cost
    with np.errstate(over="ignore"):  # as in softmax: logits a float range apart overflow to -inf, probability 0
        z = np.subtract(x, row_max, dtype=np.float64)  # (..., n) <= 0
        if temperature != 1:  # x / 1 is x: skip a pass over the row
            z /= temperature
    return z


def temperature_probs(logits, temperature: float) -> np.ndarray:
    """softmax(logits / T) over the last axis, float64, checked through the row maxima: decoding's hot path.

    A row's max is NaN or +inf if the row holds one, -inf if the row is all -inf; so finite maxima
    check every row, and check_logits runs only to explain a failure. Bit for bit the same numbers
    as softmax(logits, T).
    """
    x = as_array(logits, "logits")
    if x.dtype.kind != "f" or x.ndim == 0 or x.size == 0:  # integers, scalars, empty: check_logits first
        x = check_logits(x)
    row_max = x.max(axis=-1, keepdims=True)  # (..., 1)
    if not maxima_are_finite(row_max):
        check_logits(x)  # raises: it says which row holds NaN, +inf or only -inf
    probs = scaled_logits(x, row_max, temperature)  # (..., V) a fresh array: exponentiate it in place
    np.exp(probs, out=probs)
    probs /= probs.sum(axis=-1, keepdims=True)
    return probs


CANDIDATE_BLOCK = 32  # logits per group in largest_candidates


def largest_candidates(rows: np.ndarray, m: int, block: int = CANDIDATE_BLOCK) -> np.ndarray | None:
    """Column indices (R, c) that hold the m largest logits of each row, ties with the m-th included; or None.

    Group j of a row holds columns j, j + G, j + 2G, ... (G = V // block groups of `block` columns).
    If t is the m-th largest group maximum, m logits are >= t, so the row's m-th largest logit is >= t,
    and every logit that large is in a group whose maximum is >= t: the m best groups hold them all,
    unless another group's maximum ties with t (then None: partition the whole row). The columns
    past the last whole group always join: c = m * block + V % block. Needs m <= G.
    """
    r, vocab = rows.shape
    groups = vocab // block
    whole = rows[:, : groups * block].reshape(r, block, groups)  # (R, block, G) column j + g G at [:, g, j]
    group_max = whole.max(axis=1)  # (R, G) elementwise maxima of `block` contiguous slices
    best = np.argpartition(group_max, groups - m, axis=-1)[:, groups - m :]  # (R, m) the m best groups
    t = np.take_along_axis(group_max, best, axis=-1).min(axis=-1, keepdims=True)  # (R, 1)
    if ((group_max >= t).sum(axis=-1) > m).any():  # a group outside the m best reaches t too
        return None
    columns = (best[:, :, None] + groups * np.arange(block)).reshape(r, m * block)  # (R, m * block)
    rest = np.broadcast_to(np.arange(groups * block, vocab), (r, vocab - groups * block))  # (R, V % block)
    return np.concatenate([columns, rest], axis=-1)  # (R, c)


def m_largest(rows: np.ndarray, m: int) -> np.ndarray:
    """Column indices (R, m) of the m largest logits of each row, in no order (ties: any of them)."""
    vocab = rows.shape[-1]
    candidates = largest_candidates(rows, m) if 4 * m * CANDIDATE_BLOCK <= vocab else None  # (R, c)
    if candidates is None:  # few columns, or tied group maxima: partition the whole row
        return np.argpartition(rows, vocab - m, axis=-1)[:, vocab - m :]
    values = np.take_along_axis(rows, candidates, axis=-1)  # (R, c) about 32 m logits per row
    chosen = np.argpartition(values, values.shape[-1] - m, axis=-1)[:, values.shape[-1] - m :]  # (R, m)
    return np.take_along_axis(candidates, chosen, axis=-1)  # (R, m)


def row_masses(rows: np.ndarray, row_max: np.ndarray, temperature: float, chunk: int = 4) -> np.ndarray:
    """sum(exp((x - max x) / T)) of each row (R,), a few rows at a time: the same sums, about twice as fast.

    A whole batch's float64 copy (25 MB for 64 x 50,257) goes out to memory and back for the subtraction,
    the division and the exponential; `chunk` rows at a time stay in the CPU's cache.
    """
    masses = np.empty(rows.shape[0])  # (R,)
    for start in range(0, rows.shape[0], chunk):
        z = scaled_logits(rows[start : start + chunk], row_max[start : start + chunk], temperature)  # (c, V)
        masses[start : start + chunk] = np.exp(z, out=z).sum(axis=-1)
    return masses


def sampling_probs(logits, params: SamplingParams = SamplingParams()) -> np.ndarray:  # noqa: F811 (replaces the core's sampling_probs: the same distribution, faster; a test checks it)
    """THE distribution a token is drawn from, as composed_sampling_probs gives it, by one threshold per row.

    Every filter keeps the tokens whose scaled logit is >= some threshold of its row, so the
    pipeline only needs the top of each row: take the m largest logits (m_largest, O(V)),
    sort those few, count how many survive every filter (kept_count), and write the
    survivors' renormalised weights into a row of zeros. If the survivors might continue past
    the m candidates, those rows retry with 16x more (finally a full sort): always exact.
    Temperature never reorders logits, so candidates can be chosen on the raw logits and
    scaled afterwards; only top-p without top-k needs the normalising sum of the whole row.
    Temperature alone, decoding's usual case, is a softmax: temperature_probs.
    """
    params = check_params(params)
    x = as_array(logits, "logits")  # (..., V)
    vocab = x.shape[-1] if x.ndim else 0
    filtered = (params.top_k is not None and params.top_k < vocab) or params.top_p < 1 or params.min_p > 0
    if not (params.greedy or filtered):  # temperature alone: decoding's hot path
        return temperature_probs(x, params.temperature)
    x = check_logits(x)
    if params.greedy:
        return one_hot_argmax(x)
    rows = x.reshape(-1, vocab)  # (R, V)
    row_max = rows.max(axis=-1, keepdims=True)  # (R, 1)
    full_mass = None
    if params.top_k is None and params.top_p < 1:
        full_mass = row_masses(rows, row_max, params.temperature)  # (R,)
    probs = np.zeros(rows.shape)  # (R, V) float64
    todo = np.arange(rows.shape[0])  # rows not yet written
    # Small vocabularies are sorted whole: cheaper than partitioning first.
    m = vocab if vocab <= 1024 else min(vocab, max(64, 2 * (params.top_k or 0)))
    while todo.size:
        block = rows if todo.size == rows.shape[0] else rows[todo]  # (r, V)
        r = np.arange(todo.size)[:, None]  # (r, 1) for indexing row by row
        if m == vocab:
            index = np.argsort(-block, axis=-1, kind="stable")  # (r, V) descending
        else:
            index = m_largest(block, m)  # (r, m) the m largest, in no order
            index = index[r, np.argsort(-block[r, index], axis=-1, kind="stable")]  # (r, m) sorted descending
        top = scaled_logits(block[r, index], row_max[todo], params.temperature)  # (r, m) descending
        mass = None if full_mass is None else full_mass[todo]  # (r,)
        kept = kept_count(top, mass, m == vocab, params)  # (r,)
        settled = (kept < m) | (m == vocab)  # (r,) the survivors end inside the candidates
        weights = np.where(np.arange(m) < kept[:, None], np.exp(top), 0.0)  # (r, m) survivors only
        weights /= weights.sum(axis=-1, keepdims=True)  # (r, m) renormalised over the survivors
        probs[todo[settled][:, None], index[settled]] = weights[settled]
        todo = todo[~settled]
        m = min(16 * m, vocab)
    return probs.reshape(x.shape)
