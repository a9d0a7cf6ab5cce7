"""Checkers for the exercises of notebook 07 (the cost of decoding and the cost model).

check_tokens_per_call(fn):   fn(alpha, gamma) -> expected tokens per target call
check_best_gamma(fn):        fn(alpha, c, f) -> the gamma with the highest predicted speedup (smallest on ties)
check_break_even_alpha(fn):  fn(gamma, c, f) -> smallest alpha with predicted speedup >= 1, 0.0, or None
"""

import math

from specdec.exercises import call, show, verdict
from specdec.timing import expected_tokens, predicted_speedup


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


# --- tokens_per_call ---------------------------------------------------------------------


def tokens_per_call_cases() -> list[tuple]:
    return [
        (0.5, 1),  # 1 + 0.5
        (0.5, 2),  # 1 + 0.5 + 0.25: where 1 + gamma * alpha first goes wrong
        (0.8, 4),
        (0.0, 1),  # nothing accepted: plain decoding's one token
        (0.0, 6),
        (1.0, 1),  # everything accepted: gamma + 1 (the closed form divides 0 by 0 here)
        (1.0, 7),
        (1, 3),  # an integer alpha
        (0.9, 15),
        (0.3, 20),
        (1 - 1e-9, 4),  # just below 1: close to 5
        (0.999, 10),
    ]


def check_tokens_per_call(fn) -> bool:
    """fn(alpha, gamma) must return 1 + alpha + ... + alpha**gamma to a relative 1e-6."""
    cases = tokens_per_call_cases()
    for alpha, gamma in cases:
        got, error = call(fn, (alpha, gamma))
        if error is not None:
            return verdict("tokens_per_call", error, len(cases))
        expected = expected_tokens(alpha, gamma)
        try:
            ok = math.isclose(float(got), expected, rel_tol=1e-6)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            failure = f"for alpha = {alpha}, gamma = {gamma} expected {expected:.10g}, got {show(got)}"
            return verdict("tokens_per_call", failure, len(cases))
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
        (0.95, 0.0, F_CPU),
        (0.9, 0.0, {n: 1.0 for n in range(1, 10)}),  # free drafts, free verification: the largest gamma known
        (0.0, 0.01, F_FLAT),  # nothing is ever accepted: every gamma loses, gamma = 1 loses least
        (1.0, 0.0, {n: float(n) for n in range(1, 9)}),  # every gamma gives exactly 1.0: a tie, take the smallest
        (0.9, 0.02, {1: 1.0, 2: 1.2, 4: 1.3, 8: 1.5}),  # only gamma = 1, 3, 7 can be priced
        (0.7, 0.05, {3: 1.2, 5: 1.3}),  # no n = 1 entry: gamma = 2 or 4
        (0.85, 0.3, F_CPU),  # an expensive draft
    ]


def check_best_gamma(fn) -> bool:
    """fn(alpha, c, f) must return the gamma of reference_best_gamma (an integer)."""
    cases = best_gamma_cases()
    for alpha, c, f in cases:
        got, error = call(fn, (alpha, c, dict(f)))
        if error is not None:
            return verdict("best_gamma", error, len(cases))
        expected = reference_best_gamma(alpha, c, f)
        if not (isinstance(got, int) or hasattr(got, "__index__")) or got != expected:
            speedups = ", ".join(f"{n - 1}: {predicted_speedup(alpha, n - 1, c, f):.4f}" for n in sorted(f) if n >= 2)
            failure = (
                f"for alpha = {alpha}, c = {c}, f = {show(f)} expected gamma = {expected}, got {show(got)} "
                f"(predicted speedup by gamma: {speedups})"
            )
            return verdict("best_gamma", failure, len(cases))
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
        (1, 0.0, F_ONE),  # a free draft and free verification: never slower
        (3, 0.0, F_FLAT),
        (1, 0.5, {2: 1.5}),  # the round costs exactly 2 = gamma + 1: breaks even only at alpha = 1
        (1, 0.5, {2: 1.5000001}),  # a hair more: never
    ]


def check_break_even_alpha(fn) -> bool:
    """fn(gamma, c, f) must match reference_break_even_alpha to 1e-6, with None where it is None."""
    cases = break_even_cases()
    for gamma, c, f in cases:
        argument = dict(f) if isinstance(f, dict) else f
        got, error = call(fn, (gamma, c, argument))
        if error is not None:
            return verdict("break_even_alpha", error, len(cases))
        expected = reference_break_even_alpha(gamma, c, f)
        if expected is None or got is None:
            ok = got is None and expected is None
        else:
            try:
                ok = abs(float(got) - expected) <= 1e-6
            except (TypeError, ValueError):
                ok = False
        if not ok:
            cost = gamma * c + (f(gamma + 1) if callable(f) else f[gamma + 1])
            shown = "None" if expected is None else f"{expected:.7f}"
            failure = (
                f"for gamma = {gamma}, c = {c}, f = {show(f)} (a round costs {cost:.7g} target steps) "
                f"expected {shown}, got {show(got)}"
            )
            return verdict("break_even_alpha", failure, len(cases))
    return verdict("break_even_alpha", None, len(cases))
