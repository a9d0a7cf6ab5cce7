# Generated from notebooks/02_drawing_tokens.ipynb by tools/export.py: edit the notebook, not this file.
"""Drawing tokens from a distribution, and testing that a sampler draws from the right one."""

import math
from typing import NamedTuple

import numpy as np

from specdec.validation import check_probs, check_rng


def inverse_cdf(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per row, the index i with F_(i-1) <= u < F_i, where F is the running sum of `weights`.

    That is the number of F_i that are <= u, clipped to the last index. An entry of weight 0
    owns an empty interval [F_(i-1), F_i), so it is never the answer, except past the end by
    rounding, which the caller repairs.
    """
    cdf = np.cumsum(weights, axis=-1)  # (R, V) non-decreasing
    return np.minimum((cdf <= u[:, None]).sum(axis=-1), weights.shape[-1] - 1)  # (R,)


BLOCK = 256  # tokens per block in the two-level search


def sample(probs, rng: np.random.Generator) -> np.ndarray:
    """Draw one token per row of `probs` (shape (..., V)) with the generator `rng`.

    Checks that `rng` is a Generator and each row a distribution, then calls `draw`.
    Returns an np.int64 for a single row, an int64 array of the leading shape for a batch.
    """
    return draw(check_probs(probs), check_rng(rng))


def draw(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`sample` without the checks, for callers whose rows are known to be distributions.

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
        token = min(int(np.searchsorted(np.cumsum(probs), rng.random() * probs.sum(), side="right")), vocab - 1)
        if probs[token] == 0:  # the rounding repair below, for one row
            token = vocab - 1 - int(np.argmax(probs[::-1] > 0))
        return np.int64(token)
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


def empirical_distribution(tokens, vocab_size: int) -> np.ndarray:
    """Fraction of draws that landed on each token: counts / number of draws, shape (vocab_size,)."""
    tokens = np.asarray(tokens).ravel()
    return np.bincount(tokens, minlength=vocab_size) / tokens.size


def total_variation(p, q) -> float:
    """Total variation distance: half the L1 distance, the largest gap in probability any event can show."""
    return 0.5 * float(np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum())


def chi_square_sf(statistic: float, dof: int) -> float:
    """P(X >= statistic) for X ~ chi-square with `dof` degrees of freedom.

    This is the regularised upper incomplete gamma function Q(dof/2, statistic/2): a power
    series when x < a + 1, a continued fraction (modified Lentz) otherwise, the textbook
    split in which each converges quickly.
    """
    if dof < 1:
        raise ValueError(f"dof must be >= 1, got {dof}")
    a, x = dof / 2.0, statistic / 2.0
    if x <= 0:
        return 1.0
    if x == math.inf:
        return 0.0
    log_prefactor = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:  # series for the lower function P(a, x), then Q = 1 - P
        term = total = 1.0 / a
        n = a
        while abs(term) > abs(total) * 1e-16:
            n += 1
            term *= x / n
            total += term
        return max(0.0, 1.0 - total * math.exp(log_prefactor))
    tiny = 1e-300  # continued fraction for Q(a, x)
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        h *= step
        if abs(step - 1) < 1e-16:
            break
    return math.exp(log_prefactor) * h


class ChiSquareResult(NamedTuple):
    statistic: float
    dof: int
    p_value: float


def chi_square_test(counts, probs, min_expected: float = 5.0) -> ChiSquareResult:
    """Pearson's goodness-of-fit test of observed `counts` against the distribution `probs`.

    statistic = sum_i (observed_i - expected_i)^2 / expected_i with expected = n * probs.
    Cells whose expected count is below `min_expected` are pooled into one cell, so the
    chi-square approximation holds. A draw of a token with probability 0 is impossible
    under `probs`: the test then returns statistic inf and p-value 0.
    """
    counts = np.asarray(counts, dtype=np.float64).ravel()  # (V,)
    probs = np.asarray(probs, dtype=np.float64).ravel()  # (V,)
    if counts.shape != probs.shape:
        raise ValueError(f"counts and probs must have the same shape, got {counts.shape} and {probs.shape}")
    n = counts.sum()
    if (counts[probs == 0] > 0).any():
        return ChiSquareResult(math.inf, max(1, int((probs > 0).sum()) - 1), 0.0)
    expected = n * probs  # (V,)
    big = expected >= min_expected  # (V,) cells kept as they are
    observed_cells = np.append(counts[big], counts[~big & (probs > 0)].sum())  # (cells,)
    expected_cells = np.append(expected[big], expected[~big & (probs > 0)].sum())  # (cells,)
    if expected_cells[-1] == 0:  # nothing was pooled
        observed_cells, expected_cells = observed_cells[:-1], expected_cells[:-1]
    dof = observed_cells.size - 1
    if dof < 1:  # a point mass: every draw must be that token
        return ChiSquareResult(0.0, 0, 1.0)
    statistic = float(((observed_cells - expected_cells) ** 2 / expected_cells).sum())
    return ChiSquareResult(statistic, dof, chi_square_sf(statistic, dof))
