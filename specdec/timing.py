# Generated from notebooks/07_why_decoding_is_slow.ipynb by tools/export.py: edit the notebook, not this file.
"""Timing a decoding step, and the cost model that predicts what speculative decoding gains (notebook 07).

`time_calls`, `time_call` and `time_scoring` return medians, interleaving what they compare; `cost_ratios`
gives f(n) = cost(n) / cost(1); `expected_tokens` and `predicted_speedup` are the cost model (notebook 10 tests it).
"""

import math
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import pairwise

import numpy as np

from specdec.validation import check_alpha, check_count, check_real, check_scoring, check_times


@contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """Inside the `with` block, numpy's BLAS (the matrix products) uses at most `n` threads, set by threadpoolctl.

    (OMP_NUM_THREADS and the like work only if set before numpy is imported.)
    """
    from threadpoolctl import threadpool_limits  # imported here: `import specdec` needs numpy only

    with threadpool_limits(limits=check_count(n, "n"), user_api="blas"):
        yield


def time_calls(
    functions: Mapping[Hashable, Callable[[], object]], repeats: int = 21, number: int = 1, rng=None
) -> dict[Hashable, float]:
    """{key: median seconds of one call}, timed in rounds shuffled by `rng` (default seeded 0), interleaved."""
    repeats, number = check_count(repeats, "repeats"), check_count(number, "number")
    rng = np.random.default_rng(0) if rng is None else rng
    keys = list(functions)
    for key in keys:
        functions[key]()  # warm-up: a first call pays for allocations and cold caches
    timings: dict[Hashable, list[float]] = {key: [] for key in keys}
    for _ in range(repeats):
        for i in rng.permutation(len(keys)).tolist():
            fn = functions[keys[i]]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            timings[keys[i]].append((time.perf_counter() - start) / number)
    return {key: float(np.median(timings[key])) for key in keys}  # the median: the noise is one-sided


def time_call(fn: Callable[[], object], repeats: int = 21, number: int = 1) -> float:
    """Median seconds of one call of `fn()` (`time_calls` for a single function)."""
    return time_calls({"fn": fn}, repeats, number)["fn"]


def time_scoring(
    model, n_values: Sequence[int], repeats: int = 21, context: int = 64, rng=None, number: int = 4
) -> dict[int, float]:
    """{n: median seconds of one `model.score` call of n new tokens after `context` random tokens}.

    Token ids and the shuffled order of the n in each round: `rng` (default seeded 0).
    """
    n_values, repeats, context, number = check_scoring(model, n_values, repeats, context, number)
    rng = np.random.default_rng(0) if rng is None else rng
    timings: dict[int, list[float]] = {n: [] for n in n_values}
    for _ in range(repeats + 1):  # the first round is a warm-up
        state = model.start()  # a fresh state each round ...
        if context:
            model.score(rng.integers(0, model.vocab_size, context), state)
        for n in rng.permutation(n_values).tolist():
            for tokens in rng.integers(0, model.vocab_size, (number, n)):  # (n,) each: `number` calls in a row
                start = time.perf_counter()
                model.score(tokens, state)
                timings[n].append(time.perf_counter() - start)
                state.rollback(context)  # ... and every call starts from the same cache length
    return {n: float(np.median(timings[n][number:])) for n in n_values}  # the warm-up round's calls left out


def cost_ratios(times: Mapping[int, float]) -> dict[int, float]:
    """f(n) = cost(n) / cost(1): the cost of scoring n positions in one call, in units of one position."""
    times = check_times(times)
    return {n: t / times[1] for n, t in times.items()}


def f_dips(f: Mapping[int, float]) -> list[int]:
    """The n at which f falls: f(n) < f(m), m the next smaller size measured; [] when f increases."""
    return [n for m, n in pairwise(sorted(f)) if f[n] < f[m]]


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
    verify = f(gamma + 1) if callable(f) else f.get(gamma + 1)  # the verification call's cost, f(gamma + 1)
    if verify is None:
        raise ValueError(f"f has no cost for gamma + 1 = {gamma + 1} positions (it has n = {sorted(f)})")
    return expected_tokens(alpha, gamma) / (gamma * c + check_real(verify, f"f({gamma + 1})", 0, low_open=True))
