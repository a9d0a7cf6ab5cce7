"""Checkers for the exercises of notebook 07 (the cost of decoding and the cost model).

check_tokens_per_call(fn):   fn(alpha, gamma) -> expected tokens per target call, one float64 number
                             (an int where the value is whole; without calling specdec.timing.expected_tokens)
check_best_gamma(fn):        fn(alpha, c, f) -> the gamma with the highest predicted speedup (smallest on ties)
check_break_even_alpha(fn):  fn(gamma, c, f) -> smallest alpha with predicted speedup >= 1, 0.0, or None

Each call of the learner's function is stopped after LIMIT_S seconds where the platform allows
it (a timer signal in the main thread), and reported as too slow otherwise: a grid search or a
bisection that never ends gets a message instead of a silent hang. Every message says what is
wrong first, then the case it happened on.
"""

import math
import signal
import threading
import time

import numpy as np

import specdec.timing
from checkers import call, located, namesakes, narrower_float, show, verdict
from specdec.timing import expected_tokens, predicted_speedup

LIMIT_S = 2.0  # per call of the learner's function; the reference answers take microseconds


class CostFunction:
    """f as a function of n with a readable name (a lambda would print as a memory address)."""

    def __init__(self, name: str, fn):
        self.name, self.fn = name, fn

    def __call__(self, n: int) -> float:
        return self.fn(n)

    def __repr__(self) -> str:
        return self.name


F_ONE = CostFunction("(lambda n: 1.0)", lambda n: 1.0)
F_N = CostFunction("(lambda n: float(n))", lambda n: float(n))
# A CPU-like measurement: grows with n, unevenly (the shape notebook 07 measures).
F_CPU = {1: 1.0, 2: 1.12, 3: 1.21, 4: 1.31, 5: 1.38, 6: 1.47, 7: 1.55, 8: 1.62, 9: 1.78, 10: 1.86, 11: 1.97}
F_FLAT = {n: 1.0 for n in range(1, 17)}


REFUSED_WHY = "the reference this exercise asks you to write yourself"


class TookTooLong(BaseException):
    """Raised inside the learner's function when a call runs past its limit (not an Exception: `call` lets it by)."""


def limited_call(fn, args: tuple, advice: str, limit_s: float = LIMIT_S, **policy):
    """call(fn, args, **policy), stopped after limit_s seconds: (result, None) or (None, what went wrong)."""
    alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if alarm:

        def stop(signum, frame):
            raise TookTooLong

        previous = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, limit_s)
    start = time.perf_counter()
    try:
        got, error = call(fn, args, **policy)
    except TookTooLong:
        return None, f"stopped after {limit_s:g} s without an answer: {advice} (input {show(args)})"
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    seconds = time.perf_counter() - start
    if error is None and seconds > limit_s:
        return None, f"took {seconds:.1f} s, too slow: {advice} (input {show(args)})"
    return got, error


def not_a_number(got) -> str | None:
    """Why got is not one real number (None when it is one: a Python or numpy int or float, or a 0-d array)."""
    if got is None:
        return "got None (is a `return` missing?)"
    if isinstance(got, bool | np.bool_):
        return f"got {got!r}, a bool"
    if isinstance(got, np.ndarray) and got.ndim > 0:
        return f"got an array of shape {got.shape}; one number is asked"
    try:
        value = float(got)
    except (TypeError, ValueError):
        return f"got {show(got)}, which is not a number"
    if math.isnan(value):
        return "got nan"
    return None


# --- tokens_per_call ---------------------------------------------------------------------


def tokens_per_call_cases() -> list[tuple]:
    return [
        (0.5, 1),  # 1 + 0.5
        (0.5, 2),  # 1 + 0.5 + 0.25: where 1 + gamma * alpha first goes wrong
        (0.8, 4),
        (0.0, 1),  # nothing accepted: plain decoding's one token
        (0.0, 6),
        (0, 2),  # an integer alpha = 0
        (1.0, 1),  # everything accepted: gamma + 1 (the closed form divides 0 by 0 here)
        (1.0, 7),
        (1, 3),  # an integer alpha = 1
        (0.9, 15),
        (0.3, 20),
        (np.float64(0.6), np.int64(3)),  # numpy numbers, as a measured alpha or a gamma from an array would be
        (1 - 1e-9, 4),  # just below 1: close to 5
        (0.999, 10),
    ]


def one_token_off(value: float, expected: float) -> str | None:
    """The diagnosis of an answer exactly one token above or below the expected count, else None."""
    if math.isclose(value - expected, 1.0, rel_tol=0, abs_tol=1e-9):
        return (
            "exactly 1 token too many: is the target's token counted twice? The sum 1 + alpha + ... + alpha**gamma"
            " already holds it: its first term, 1, is the correction or the bonus"
        )
    if math.isclose(expected - value, 1.0, rel_tol=0, abs_tol=1e-9):
        return "exactly 1 token too few: the target's own token (the correction or the bonus) is missing: add 1"
    return None


def check_tokens_per_call(fn) -> bool:
    """fn(alpha, gamma) must return 1 + alpha + ... + alpha**gamma to a relative 1e-6, as one float64 or int."""
    cases = tokens_per_call_cases()
    advice = "the expectation is a sum of gamma + 1 terms; no simulation or long loop is needed"
    refused = namesakes(fn, ("expected_tokens",), specdec.timing)
    for alpha, gamma in cases:
        expected = expected_tokens(alpha, gamma)
        got, error = limited_call(fn, (alpha, gamma), advice, refused=refused, why=REFUSED_WHY)
        if error is not None:
            return verdict("tokens_per_call", error, len(cases))
        where = f"for alpha = {alpha!r}, gamma = {gamma!r}"
        problem = not_a_number(got)
        if problem is not None:
            return verdict("tokens_per_call", located(f"expected {expected:.10g}, {problem}", where), len(cases))
        value = float(got)
        dtype = narrower_float(got)
        if dtype is not None:  # float16 or float32: refused even when right to its precision
            if math.isclose(value, expected, rel_tol=10 * float(np.finfo(dtype).eps)):
                said = f"the value is right to {dtype}'s precision, but float64 is asked"
            else:
                said = f"too imprecise even for a {dtype}; float64 is asked"
            failure = f"got {show(got)}, a {dtype} number: {said} (compute with Python floats or np.float64)"
            return verdict("tokens_per_call", located(failure, f"{where}, expected {expected:.10g}"), len(cases))
        if not math.isclose(value, expected, rel_tol=1e-6):
            off_by_one = one_token_off(value, expected)
            if off_by_one is not None:
                failure = located(off_by_one, f"{where}: expected {expected:.10g}, got {show(got)}")
                return verdict("tokens_per_call", failure, len(cases))
            failure = f"expected {expected:.10g}, got {show(got)}"
            if math.isclose(value, expected, rel_tol=1e-2):
                failure += (
                    ": close, but not within 1e-6: the expected number of tokens is exact, so an estimate"
                    " such as a simulated mean, a shortened sum or a rounded value is not enough"
                )
            return verdict("tokens_per_call", located(failure, where), len(cases))
    return verdict("tokens_per_call", None, len(cases))


# --- best_gamma --------------------------------------------------------------------------


def reference_best_gamma(alpha: float, c: float, f: dict) -> int:
    """The gamma >= 1 with f(gamma + 1) known and the highest predicted speedup; the smallest on ties."""
    candidates = sorted(n - 1 for n in f if n >= 2)
    return max(candidates, key=lambda gamma: predicted_speedup(alpha, gamma, c, f))


def best_gamma_cases() -> list[tuple]:
    return [
        (0.8, 0.05, F_FLAT),  # an accelerator: the best gamma is in the middle, set by c
        (0.8, 0.07, F_CPU),  # a CPU: the growing f pulls it down
        (0.6, 0.07, F_CPU),
        (0.95, 0.0, F_CPU),  # c = 0: free drafts
        (0.9, 0.0, {n: 1.0 for n in range(1, 10)}),  # free drafts, free verification: the largest gamma known
        (0.0, 0.01, F_FLAT),  # nothing is ever accepted: every gamma loses, gamma = 1 loses least
        (1.0, 0.0, {n: float(n) for n in range(1, 9)}),  # every gamma gives exactly 1.0: a tie, take the smallest
        (1.0, 0.0, {9: 9.0, 5: 5.0, 3: 3.0, 2: 2.0}),  # the same tie, the dict's keys in decreasing order
        (0.9, 0.02, {1: 1.0, 2: 1.2, 4: 1.3, 8: 1.5}),  # only gamma = 1, 3, 7 can be priced
        (0.7, 0.05, {3: 1.2, 5: 1.3}),  # no n = 1 entry: gamma = 2 or 4
        (0.85, 0.3, F_CPU),  # an expensive draft
        (0.99, 0.001, {n: 1.0 for n in range(1, 33)}),  # f known up to n = 32: the best gamma is 31
    ]


def check_best_gamma(fn) -> bool:
    """fn(alpha, c, f) must return the gamma of reference_best_gamma, as an integer."""
    cases = best_gamma_cases()
    advice = "one predicted speedup for each n in f is all it takes"
    for alpha, c, f in cases:
        got, error = limited_call(fn, (alpha, c, dict(f)), advice)
        if error is not None:
            return verdict("best_gamma", error, len(cases))
        expected = reference_best_gamma(alpha, c, f)
        where = f"for alpha = {alpha}, c = {c}, f = {show(f)}"
        if isinstance(got, bool | np.bool_) or not hasattr(got, "__index__"):
            kind = "a bool" if isinstance(got, bool | np.bool_) else f"a {type(got).__name__}"
            failure = f"got {show(got)}, {kind}: gamma is a number of drafts, an integer (expected gamma = {expected})"
            return verdict("best_gamma", located(failure, where), len(cases))
        if got != expected:
            speedups = ", ".join(f"{n - 1}: {predicted_speedup(alpha, n - 1, c, f):.4f}" for n in sorted(f) if n >= 2)
            failure = f"expected gamma = {expected}, got {show(got)}; predicted speedup by gamma: {speedups}"
            return verdict("best_gamma", located(failure, where), len(cases))
    return verdict("best_gamma", None, len(cases))


# --- break_even_alpha --------------------------------------------------------------------


def reference_break_even_alpha(gamma: int, c: float, f) -> float | None:
    """Smallest alpha in [0, 1] with predicted speedup >= 1 (bisection to 1e-12); 0.0 or None at the ends."""
    if predicted_speedup(0.0, gamma, c, f) >= 1:
        return 0.0
    if predicted_speedup(1.0, gamma, c, f) < 1:
        return None
    low, high = 0.0, 1.0  # speedup(low) < 1 <= speedup(high); the speedup grows with alpha
    while high - low > 1e-12:
        middle = (low + high) / 2
        low, high = (low, middle) if predicted_speedup(middle, gamma, c, f) >= 1 else (middle, high)
    return high


def break_even_cases() -> list[tuple]:
    return [
        (4, 0.05, F_ONE),  # an accelerator: about 0.167
        (2, 0.1, {3: 1.3}),  # 1 + alpha + alpha^2 = 1.5
        (5, 0.07, F_CPU),
        (1, 0.07, F_CPU),
        (10, 0.07, F_CPU),
        (4, 0.05, F_N),  # verification saves nothing: never breaks even
        (1, 0.0, F_ONE),  # a free draft and free verification: never slower (speedup exactly 1 at alpha = 0)
        (3, 0.0, F_FLAT),
        (1, 0.5, {2: 1.5}),  # the round costs exactly 2 = gamma + 1: breaks even only at alpha = 1
        (1, 0.5, {2: 1.5000001}),  # a hair more: never
    ]


def coarse_by(got, expected: float | None) -> float | None:
    """How far a number is from the expected alpha when it is near (within 0.02) but not within 1e-6, else None."""
    if expected is None or got is None or isinstance(got, bool | np.bool_):
        return None
    try:
        off = abs(float(got) - expected)
    except (TypeError, ValueError):
        return None
    return off if 1e-6 < off <= 0.02 else None


def check_break_even_alpha(fn) -> bool:
    """fn(gamma, c, f) must match reference_break_even_alpha to 1e-6, with None where it is None."""
    cases = break_even_cases()
    advice = (
        "scanning alpha on a fine grid takes millions of evaluations, and a bisection whose tolerance is "
        "finer than floats can resolve never ends; bisect until the interval is shorter than 1e-7 (about 24 halvings)"
    )
    for gamma, c, f in cases:
        argument = dict(f) if isinstance(f, dict) else f
        got, error = limited_call(fn, (gamma, c, argument), advice)
        if error is not None:
            if error.startswith(("raised TypeError", "raised AttributeError", "raised KeyError")):  # the kind of f?
                kind = "a dict: look it up, f[n]" if isinstance(f, dict) else "a function: call it, f(n)"
                error = error.replace(f"'{type(f).__name__}' object", "f")
                error += f" (f may be a function or a dict, as for predicted_speedup; here it is {kind})"
            return verdict("break_even_alpha", error, len(cases))
        expected = reference_break_even_alpha(gamma, c, f)
        if expected is None or got is None:
            ok = got is None and expected is None
        elif isinstance(got, bool | np.bool_):
            ok = False
        else:
            try:
                ok = abs(float(got) - expected) <= 1e-6
            except (TypeError, ValueError):
                ok = False
        if not ok:
            cost = gamma * c + (f(gamma + 1) if callable(f) else f[gamma + 1])
            shown = "None" if expected is None else f"{expected:.7f}"
            where = f"for gamma = {gamma}, c = {c}, f = {show(f)}: a round costs {cost:.7g} target steps"
            off = coarse_by(got, expected)
            if off is not None:  # near, not within 1e-6: a grid scan, or a bisection stopped too early
                failure = (
                    f"off by {off:.1e}, but 1e-6 is asked: bisect until the interval is shorter than 1e-7"
                    " (about 24 halvings; a grid of alpha that fine would take millions of evaluations)"
                )
                return verdict(
                    "break_even_alpha", located(failure, f"{where}; expected {shown}, got {show(got)}"), len(cases)
                )
            failure = f"expected {shown}, got {show(got)}"
            if isinstance(got, bool | np.bool_):
                failure += ", a bool: return a number in [0, 1], or None"
            return verdict("break_even_alpha", located(failure, where), len(cases))
    return verdict("break_even_alpha", None, len(cases))
