# Generated from notebooks/07_why_decoding_is_slow.ipynb by tools/export.py: edit the notebook, not this file.
"""Timing a decoding step, and the cost model that predicts what speculative decoding gains.

Measuring (notebook 07): `time_calls`, `time_call` and `time_scoring` return medians after a
warm-up, interleaving the settings they compare; `cost_ratios` turns timings into
f(n) = cost(n) / cost(1); `blas_threads` pins numpy's BLAS threads. Predicting:
`expected_tokens(alpha, gamma)` is the mean number of tokens one target call produces, and
`predicted_speedup(alpha, gamma, c, f)` the speedup over plain decoding. Notebook 10 compares
these predictions with measured speedups.
"""

import math
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import pairwise

import numpy as np

from specdec.validation import check_alpha, check_count, check_integer, check_real


@contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """Inside the `with` block, numpy's BLAS (the matrix products) uses at most `n` threads.

    threadpoolctl changes the limit of the BLAS library numpy has already loaded, and restores
    the previous limit on leaving the block. (Environment variables such as OMP_NUM_THREADS
    only work if set before numpy is imported.)
    """
    from threadpoolctl import threadpool_limits  # imported here: `import specdec` needs numpy only

    with threadpool_limits(limits=check_count(n, "n"), user_api="blas"):
        yield


def time_scoring(
    model,
    n_values: Sequence[int],
    repeats: int = 21,
    context: int = 64,
    rng: np.random.Generator | None = None,
    number: int = 4,
) -> dict[int, float]:
    """Median seconds of one `model.score` call of n new tokens after `context` random tokens, for each n.

    Rounds (after one untimed warm-up) visit the n in a shuffled order and time `number` calls of
    each n in a row, each call on its own; the state rolls back after every call, so every call
    starts from the same cache length. Token ids: `rng` (default seeded 0).
    """
    n_values = [check_count(n, "each n") for n in n_values]
    if not n_values or len(set(n_values)) != len(n_values):
        raise ValueError(f"n_values must be distinct integers >= 1, got {n_values}")
    repeats, number = check_count(repeats, "repeats"), check_count(number, "number")
    context = check_integer(context, "context", minimum=0)
    if context + max(n_values) > model.max_context:
        raise ValueError(
            f"context {context} + n up to {max(n_values)} is more than {model.name}'s max_context {model.max_context}"
        )
    rng = np.random.default_rng(0) if rng is None else rng
    timings: dict[int, list[float]] = {n: [] for n in n_values}
    for round_ in range(repeats + 1):  # round 0 is the warm-up
        state = model.start()
        if context:
            model.score(rng.integers(0, model.vocab_size, context), state)
        base = state.length
        for n in rng.permutation(n_values).tolist():
            for tokens in rng.integers(0, model.vocab_size, (number, n)):  # (n,) each: `number` calls in a row
                start = time.perf_counter()
                model.score(tokens, state)
                seconds = time.perf_counter() - start
                state.rollback(base)
                if round_ > 0:
                    timings[n].append(seconds)
    return {n: float(np.median(timings[n])) for n in n_values}


def time_calls(
    functions: Mapping[Hashable, Callable[[], object]],
    repeats: int = 21,
    number: int = 1,
    rng: np.random.Generator | None = None,
) -> dict[Hashable, float]:
    """Median seconds of one call of each function, all measured interleaved: {key: seconds}.

    One untimed warm-up call of each first (a first call pays for allocations and cold caches).
    Then `repeats` rounds; each round times `number` back-to-back calls of every function, in a
    shuffled order (from `rng`, default seeded with 0), so that a slow moment of the machine hits
    them all alike instead of spoiling one. The median, not the mean: on a shared machine the
    noise is one-sided (other programs only ever make a call slower) and one long interruption
    would drag a mean far off. For calls of a few microseconds, use `number` > 1 so that each
    timing is far above the clock's resolution and the cost of reading it.
    """
    repeats, number = check_count(repeats, "repeats"), check_count(number, "number")
    rng = np.random.default_rng(0) if rng is None else rng
    keys = list(functions)
    for key in keys:
        functions[key]()  # warm-up
    timings: dict[Hashable, list[float]] = {key: [] for key in keys}
    for _ in range(repeats):
        for i in rng.permutation(len(keys)).tolist():
            fn = functions[keys[i]]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            timings[keys[i]].append((time.perf_counter() - start) / number)
    return {key: float(np.median(timings[key])) for key in keys}


def time_call(fn: Callable[[], object], repeats: int = 21, number: int = 1) -> float:
    """Median seconds of one call of `fn()`, after a warm-up call (`time_calls` for a single function)."""
    return time_calls({"fn": fn}, repeats, number)["fn"]


def cost_ratios(times: Mapping[int, float]) -> dict[int, float]:
    """f(n) = cost(n) / cost(1): the cost of scoring n positions in one call, in units of one position."""
    if 1 not in times:
        raise ValueError(f"times must include n = 1 (the unit), got n = {sorted(times)}")
    if not all(math.isfinite(t) and t > 0 for t in times.values()):
        raise ValueError(f"times must be positive and finite, got {dict(times)}")
    return {n: t / times[1] for n, t in times.items()}


def f_dips(f: Mapping[int, float]) -> list[int]:
    """The n at which f falls: f(n) < f(m), m the next smaller size measured; [] when f increases.

    Scoring more positions cannot really cost less, so a dip is a BLAS kernel switching at that
    size (it stays when you measure again) or a busy moment of the machine (it moves).
    """
    sizes = sorted(f)
    return [n for m, n in pairwise(sizes) if f[n] < f[m]]


def expected_tokens(alpha: float, gamma: int) -> float:
    """Expected tokens from one target call: gamma drafts, each accepted with probability alpha.

    1 + alpha + ... + alpha**gamma = (1 - alpha**(gamma + 1)) / (1 - alpha), summed term by term (exact at alpha = 1).
    """
    alpha, gamma = check_alpha(alpha), check_count(gamma, "gamma")
    return math.fsum(alpha**k for k in range(gamma + 1))


def predicted_speedup(alpha: float, gamma: int, c: float, f: Mapping[int, float] | Callable[[int], float]) -> float:
    """Speedup of speculative decoding over plain decoding: E[tokens] / (gamma * c + f(gamma + 1)).

    Costs in units of one target call of one token; `f` is a dict {n: f(n)} or a function of n.
    """
    alpha, gamma = check_alpha(alpha), check_count(gamma, "gamma")
    c = check_real(c, "c (draft cost / target cost)", 0)
    if callable(f):
        verify = f(gamma + 1)
    elif gamma + 1 in f:
        verify = f[gamma + 1]
    else:
        raise ValueError(f"f has no cost for gamma + 1 = {gamma + 1} positions (it has n = {sorted(f)})")
    if not 0 < verify < math.inf:
        raise ValueError(f"f({gamma + 1}) must be a positive cost, got {verify}")
    return expected_tokens(alpha, gamma) / (gamma * c + verify)
