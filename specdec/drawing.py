# Generated from notebooks/02_drawing_tokens.ipynb by tools/export.py: edit the notebook, not this file.
"""Drawing tokens from a distribution, and testing that a sampler draws from the right one."""

import math
from typing import NamedTuple

import numpy as np

from specdec.validation import check_integer, check_probs, check_rng


def inverse_cdf(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per row, the index i with F_(i-1) <= u < F_i, where F is the running sum of `weights`.

    That is the number of F_i that are <= u, clipped to the last index. An entry of weight 0
    owns an empty interval [F_(i-1), F_i), so it is never the answer, except past the end by
    rounding, which the caller repairs.
    """
    cdf = np.cumsum(weights, axis=-1)  # (R, V) non-decreasing
    return np.minimum((cdf <= u[:, None]).sum(axis=-1), weights.shape[-1] - 1)  # (R,)


def draw(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One token per row of `probs` (..., V), rows known to be distributions: `sample` without the checks.

    Token i wins when F_(i-1) <= u < F_i for u uniform on [0, total): probability p_i, never if p_i = 0.
    """
    rows = probs.reshape(-1, probs.shape[-1])  # (R, V)
    token = inverse_cdf(rows, rng.random(len(rows)) * rows.sum(axis=-1))  # (R,) clipped to V - 1
    landed_on_zero = rows[np.arange(len(rows)), token] == 0  # (R,) only past the end, by rounding
    last_with_mass = rows.shape[-1] - 1 - np.argmax(rows[:, ::-1] > 0, axis=-1)  # (R,)
    token = np.where(landed_on_zero, last_with_mass, token)  # (R,)
    return token.astype(np.int64).reshape(probs.shape[:-1])[()]  # [()] turns a 0-d array into a scalar


def sample(probs, rng: np.random.Generator) -> np.ndarray:
    """One token per row of `probs` (..., V), drawn with `rng`: an np.int64 for one row, else an int64 array.

    Checks `rng` and the rows (entries >= 0, summing to 1 within 1e-6; 1e-4 in float32), then calls `draw`.
    """
    return draw(check_probs(probs), check_rng(rng))


def empirical_distribution(tokens, vocab_size: int) -> np.ndarray:
    """Fraction of draws that landed on each token: counts / number of draws, shape (vocab_size,)."""
    tokens = np.asarray(tokens).ravel()
    return np.bincount(tokens, minlength=vocab_size) / tokens.size


def total_variation(p, q) -> float:
    """Total variation distance: half the L1 distance, the largest gap in probability any event can show."""
    return 0.5 * float(np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum())


def chi_square_sf(statistic: float, dof: int) -> float:
    """P(X >= statistic) for X chi-square with d = `dof` degrees of freedom: the p-value of Pearson's test.

    With h = statistic / 2: erfc(sqrt(h)) for d = 1, exp(-h) for d = 2; each 2 more degrees of freedom
    add h^a exp(-h) / Gamma(a + 1), for a = 1/2, 3/2, ... (odd d) or 1, 2, ... (even d) up to d/2 - 1.
    """
    dof = check_integer(dof, "dof", minimum=1)
    if not 0 < statistic < math.inf:  # X^2 = 0: no sampler can look better; X^2 = inf: impossible
        return 1.0 if statistic <= 0 else 0.0
    h, odd = statistic / 2, dof % 2 == 1
    first = math.erfc(math.sqrt(h)) if odd else math.exp(-h)  # 1 or 2 degrees of freedom
    more = sum(math.exp(a * math.log(h) - h - math.lgamma(a + 1)) for a in np.arange(0.5 if odd else 1.0, dof / 2))
    return min(first + more, 1.0)  # each term through its logarithm; a sum near 1 may round above 1


class ChiSquareResult(NamedTuple):
    """Pearson's X^2, its degrees of freedom, and the p-value: P(X^2 at least this large | right sampler)."""

    statistic: float
    dof: int
    p_value: float


def chi_square_test(counts, probs, min_expected: float = 5.0) -> ChiSquareResult:
    """Pearson's goodness-of-fit test of observed `counts` against the distribution `probs`.

    Tokens expected fewer than `min_expected` times are pooled into one category, so that the chi-square
    law holds; a token of probability 0 that was drawn gives statistic inf and p-value 0.
    """
    counts = np.asarray(counts, dtype=np.float64).ravel()  # (V,)
    probs = np.asarray(probs, dtype=np.float64).ravel()  # (V,)
    if counts.shape != probs.shape:
        raise ValueError(f"counts and probs must have the same shape, got {counts.shape} and {probs.shape}")
    expected = counts.sum() * probs  # (V,)
    big = expected >= min_expected  # (V,) tokens that are a category of their own
    small = ~big & (probs > 0)  # (V,) tokens pooled into one category, if there are any
    observed_k = np.append(counts[big], counts[small].sum() if small.any() else [])  # (k,) per category
    expected_k = np.append(expected[big], expected[small].sum() if small.any() else [])  # (k,)
    dof = observed_k.size - 1  # d = k - 1
    if (counts[probs == 0] > 0).any():  # a token of probability 0 was drawn: no correct sampler does that
        return ChiSquareResult(math.inf, dof, 0.0)
    if dof < 1:  # a point mass: every draw must be that token
        return ChiSquareResult(0.0, 0, 1.0)
    statistic = float(((observed_k - expected_k) ** 2 / expected_k).sum())
    return ChiSquareResult(statistic, dof, chi_square_sf(statistic, dof))


draw_flat = draw  # the core's flat search keeps a second name: this cell replaces `draw`
BLOCK = 256  # tokens per block in the two-level search


def draw_row(cdf: np.ndarray, total: float, probs: np.ndarray, rng: np.random.Generator) -> np.int64:
    """One token from one row `probs` (V,) whose running sums `cdf` (V,) and `total` are given.

    The search `draw` runs for a single row of at most BLOCK tokens: u uniform on [0, total), the
    first i with u < F_i, then the rounding repair. A caller that draws again and again from the
    same row (notebook 08) computes its running sums once and passes them in.
    """
    token = min(int(cdf.searchsorted(rng.random() * total, side="right")), probs.size - 1)
    if probs[token] == 0:  # the rounding repair below, for one row
        token = probs.size - 1 - int(np.argmax(probs[::-1] > 0))
    return np.int64(token)


def draw(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:  # noqa: F811 (replaces the core's draw: the same tokens, faster; a test checks it)
    """`sample` without the checks, in two levels: the core's flat `draw`, faster, with the same tokens.

    Inverse CDF: with u uniform on [0, total), token i wins when F_(i-1) <= u < F_i, an
    interval of length p_i, so it is drawn with probability p_i, and a token with p_i = 0
    never. Scaling u by the row's total (1 up to rounding) keeps that true for a row that
    sums to 0.9999999999999999. For a large vocabulary the search is done in two levels,
    like finding a word in a dictionary: first the block of 256 tokens that u falls in
    (from the blocks' masses), then the token inside that block, so a running sum over all
    V tokens is never needed.
    """
    vocab = probs.shape[-1]
    if probs.ndim == 1 and vocab <= BLOCK:  # one row, the decoding loop's case: the same search on scalars
        return draw_row(np.add.accumulate(probs), probs.sum(), probs, rng)  # np.cumsum, minus its wrapper
    rows = probs.reshape(-1, vocab)  # (R, V)
    r = np.arange(rows.shape[0])  # (R,)
    if vocab <= BLOCK:  # one level is enough
        token = inverse_cdf(rows, rng.random(rows.shape[0]) * rows.sum(axis=-1))  # (R,)
    else:
        starts = np.arange(0, vocab, BLOCK)  # (B,) first token of each block
        block_mass = np.add.reduceat(rows, starts, axis=-1)  # (R, B)
        mass_before = np.cumsum(block_mass, axis=-1) - block_mass  # (R, B) mass of all earlier blocks
        u = rng.random(rows.shape[0]) * block_mass.sum(axis=-1)  # (R,) uniform on [0, total)
        block = inverse_cdf(block_mass, u)  # (R,) the block u falls in
        tokens = starts[block][:, None] + np.arange(BLOCK)  # (R, BLOCK) that block's token ids
        local = rows[r[:, None], np.minimum(tokens, vocab - 1)]  # (R, BLOCK)
        local[tokens >= vocab] = 0.0  # the last block may be short
        token = tokens[r, inverse_cdf(local, u - mass_before[r, block])]  # (R,)
    # Rounding (u * total rounding up to total, or the two levels' sums disagreeing in the last
    # bit) can land past the end of a short last block or on a token of probability 0: clip to
    # the vocabulary, then step back to the last token with mass.
    token = np.minimum(token, vocab - 1)  # (R,)
    landed_on_zero = rows[r, token] == 0  # (R,)
    if landed_on_zero.any():
        last_with_mass = vocab - 1 - np.argmax(rows[:, ::-1] > 0, axis=-1)  # (R,)
        token = np.where(landed_on_zero, last_with_mass, token)
    return token.astype(np.int64).reshape(probs.shape[:-1])[()]  # [()] turns a 0-d array into a scalar
