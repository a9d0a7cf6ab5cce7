"""Checkers for the exercises of notebook 10 (measuring speculative decoding).

check_estimate_alpha(fn):            fn(accepted_per_round, drafted_per_round) -> pooled acceptance rate alpha
check_acceptance_per_position(fn):   fn(accepted_per_round, drafted_per_round) -> (gamma,) acceptance by position
check_best_gamma_by_position(fn):    fn(acceptance, c, f) -> the gamma with the highest predicted speedup

Exercises 1 and 2 ask for the bookkeeping itself: while they are checked, the harness's
`pooled_alpha`, `acceptance_counts` and `acceptance_by_position` (in specdec.harness and in the
learner's own namespace) and `SpeculativeResult.alpha` are replaced by stand-ins that record
the use, and a function that uses one is refused with a message naming it.
"""

import math

import numpy as np

from checkers import call, located, namesakes, result_problem, show, verdict
from specdec import harness
from specdec.speculative import SpeculativeResult

# A CPU-like measurement of f(n) (the shape notebooks 07 and 10 measure).
F_CPU = {1: 1.0, 2: 1.11, 3: 1.24, 4: 1.26, 5: 1.36, 6: 1.45, 7: 1.58, 8: 1.6, 9: 1.77}


# --- what every checker shares -----------------------------------------------------------


def refused_in(fn, names: tuple[str, ...], alpha_property: bool = False) -> dict:
    """The harness functions `names` (the package's, the notebook's, any alias) and, optionally,
    SpeculativeResult.alpha: a function that uses one is refused."""
    refused = namesakes(fn, names, harness)
    if alpha_property:
        refused["SpeculativeResult.alpha"] = [SpeculativeResult.__dict__["alpha"]]
    return refused


def yourself(what: str) -> str:
    return f"it computes {what} for you, and the exercise asks you to count it yourself"


def float_width(got) -> str | None:
    """'float32' (or another name) when got is a numpy float or float array narrower than float64, else None."""
    dtype = getattr(got, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.floating) and dtype != np.float64:
        return str(dtype)
    return None


# --- estimate_alpha ----------------------------------------------------------------------


def reference_estimate_alpha(accepted_per_round, drafted_per_round) -> float:
    """Accepted drafts / tested drafts; a round tested its accepted drafts plus one rejected one if n < g."""
    accepted = sum(accepted_per_round)
    rejected = sum(n < g for n, g in zip(accepted_per_round, drafted_per_round, strict=True))
    return accepted / (accepted + rejected) if accepted + rejected else math.nan


def estimate_alpha_cases() -> list[tuple]:
    return [
        ([1], [4]),  # 1 accepted, 1 rejected, 2 drafts never tested: 0.5 (accepted / drafted says 0.25)
        ([4], [4]),  # everything accepted: no rejection was observed, alpha = 1
        ([0], [4]),  # the first draft rejected: 0
        ([0, 4], [4, 4]),  # pooled 4 / 5; the mean of per-round rates would say 0.5
        ([2, 1, 4, 0, 3], [4, 4, 4, 4, 4]),
        ([4, 1, 2], [4, 4, 2]),  # the last round was cut to 2 drafts at the end, and accepted both: no rejection
        ([0, 0, 0], [1, 1, 1]),
        ([1, 1], [1, 1]),
        ([3, 0, 5, 5, 2, 1], [5, 5, 5, 5, 5, 3]),
        ([1, 3, 0], [2, 5, 3]),  # gamma="auto": rounds draft different numbers, the first one not the most
        ([], []),  # no round at all: nothing was tested, alpha is unknown (NaN)
    ]


def same_rate(got, expected: float, rel_tol: float = 1e-9) -> bool:
    if isinstance(got, bool | str | bytes):
        return False
    try:
        got = float(got)
    except (TypeError, ValueError):
        return False
    if math.isnan(expected):
        return math.isnan(got)
    return math.isclose(got, expected, rel_tol=rel_tol, abs_tol=1e-12)


def check_estimate_alpha(fn) -> bool:
    """fn(accepted_per_round, drafted_per_round) must return accepted / tested drafts (NaN with no rounds).

    It must not use the harness's pooled_alpha / acceptance_counts or SpeculativeResult.alpha.
    """
    cases = estimate_alpha_cases()
    refused = refused_in(fn, ("pooled_alpha", "acceptance_counts", "acceptance_by_position"), alpha_property=True)
    for accepted, drafted in cases:
        got, error = call(fn, (list(accepted), list(drafted)), refused=refused, why=yourself("alpha"))
        where = f"for accepted_per_round = {accepted}, drafted_per_round = {drafted}"
        if error is not None:
            return verdict("estimate_alpha", located(error, where), len(cases))
        expected = reference_estimate_alpha(accepted, drafted)
        width = float_width(got)
        if width is not None and same_rate(got, expected, rel_tol=1e-6):
            failure = (
                f"{where} expected {expected:.17g}, got {show(got)}: the right value in {width}, which keeps only "
                "about 7 significant digits; float64 is asked (a Python float, or np.float64)"
            )
            return verdict("estimate_alpha", failure, len(cases))
        if not same_rate(got, expected):
            kind = "" if width is None and not isinstance(got, bool | str | bytes) else f" (a {type(got).__name__})"
            failure = f"{where} expected {expected:.6g}, got {show(got)}{kind}"
            return verdict("estimate_alpha", failure, len(cases))
    return verdict("estimate_alpha", None, len(cases))


# --- acceptance_per_position -------------------------------------------------------------


def reference_acceptance_per_position(accepted_per_round, drafted_per_round) -> np.ndarray:
    """For i = 1..max gamma: accepted at i / rounds that tested position i (NaN where none did)."""
    gamma = max(drafted_per_round, default=0)
    tested, accepted = np.zeros(gamma), np.zeros(gamma)  # (gamma,), (gamma,)
    for n, g in zip(accepted_per_round, drafted_per_round, strict=True):
        tested[: min(n + 1, g)] += 1
        accepted[:n] += 1
    return np.where(tested > 0, accepted / np.maximum(tested, 1), np.nan)


def acceptance_per_position_cases() -> list[tuple]:
    return [
        ([1], [4]),  # position 1 accepted, 2 rejected, 3 and 4 never reached: [1, 0, nan, nan]
        ([4, 0], [4, 4]),  # position 1 reached twice, accepted once; 2..4 reached once, accepted
        ([2, 1, 4, 0, 3], [4, 4, 4, 4, 4]),
        ([4, 2], [4, 2]),  # the second round drafted only 2 and accepted both: it never reached position 3
        ([0, 0], [3, 3]),
        ([1, 0, 2], [2, 2, 2]),
        ([3, 3, 1, 0, 3], [3, 3, 3, 3, 3]),
        ([5, 1, 5, 2, 0, 4], [6, 6, 6, 6, 6, 4]),
        ([1, 3, 0], [2, 5, 3]),  # gamma="auto": gamma = 5, the largest g, drafted by the second round only
        ([], []),  # no rounds: an empty array
    ]


def same_rates(got, expected: np.ndarray, rtol: float = 1e-9) -> bool:
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return got.shape == expected.shape and np.allclose(got, expected, rtol=rtol, atol=1e-12, equal_nan=True)


def check_acceptance_per_position(fn) -> bool:
    """fn(accepted_per_round, drafted_per_round) must return the acceptance rate at each draft position.

    A float64 numpy array of shape (gamma,); it must not use the harness's acceptance_counts or
    acceptance_by_position.
    """
    cases = acceptance_per_position_cases()
    refused = refused_in(fn, ("acceptance_counts", "acceptance_by_position"))
    for accepted, drafted in cases:
        got, error = call(fn, (list(accepted), list(drafted)), refused=refused, why=yourself("the rates"))
        where = f"for accepted_per_round = {accepted}, drafted_per_round = {drafted}"
        if error is not None:
            return verdict("acceptance_per_position", located(error, where), len(cases))
        expected = reference_acceptance_per_position(accepted, drafted)
        kind = result_problem(got, expected, "rates", shape=False)
        if kind is not None:
            if isinstance(got, list | tuple) and same_rates(got, expected):
                kind += " (the numbers are right; an array can hold np.nan and divides element by element)"
            return verdict("acceptance_per_position", located(kind, where), len(cases))
        if not same_rates(got, expected):
            shape = f" (shape {got.shape}, expected {expected.shape})" if got.shape != expected.shape else ""
            failure = located(
                f"expected {show(expected)}, got {show(got)}{shape}{unreached_hint(got, expected)}", where
            )
            return verdict("acceptance_per_position", failure, len(cases))
    return verdict("acceptance_per_position", None, len(cases))


def unreached_hint(got: np.ndarray, expected: np.ndarray) -> str:
    """Names the mistake when the only wrong entries are numbers at positions that no round reached."""
    if got.shape != expected.shape or not np.issubdtype(got.dtype, np.number):
        return ""
    unreached = np.isnan(expected) & ~np.isnan(got.astype(np.float64))  # (gamma,)
    if not unreached.any() or not same_rates(np.where(unreached, np.nan, got.astype(np.float64)), expected):
        return ""
    positions = (np.flatnonzero(unreached) + 1).tolist()
    return f": no round reached position(s) {positions}, so the rate there is 0 / 0, undefined: np.nan, not a number"


# --- best_gamma_by_position --------------------------------------------------------------


def tokens_by_position(acceptance, gamma: int) -> float:
    """E[tokens] of a round of gamma drafts when draft i is accepted with probability acceptance[i - 1]
    given that all before it were: 1 + a1 + a1 a2 + ... + a1 ... a_gamma."""
    return 1.0 + float(np.cumprod(np.asarray(acceptance, dtype=np.float64)[:gamma]).sum())


def reference_best_gamma_by_position(acceptance, c: float, f: dict) -> int:
    """The gamma (1..len(acceptance), f(gamma + 1) known) with the highest speedup; the smallest on ties."""
    candidates = [gamma for gamma in range(1, len(acceptance) + 1) if gamma + 1 in f]
    return max(candidates, key=lambda gamma: tokens_by_position(acceptance, gamma) / (gamma * c + f[gamma + 1]))


def best_gamma_cases() -> list[tuple]:
    return [
        # Greedy-like: a hard first position, easy later ones (what notebook 10 measures).
        (np.array([0.7, 0.86, 0.95, 0.9, 0.91, 0.75, 0.84, 0.98]), 0.02, F_CPU),
        # T = 1-like: closer to constant.
        (np.array([0.61, 0.72, 0.74, 0.78, 0.76, 0.78, 0.72, 0.73]), 0.09, F_CPU),
        # A strong first position, then weak ones: later drafts are rarely worth their cost.
        (np.array([0.95, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]), 0.05, F_CPU),
        # A weak first position, then near-certain ones: once past the first, drafts pay.
        (np.array([0.5, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99]), 0.03, F_CPU),
        (np.array([0.8, 0.8, 0.8, 0.8]), 0.1, F_CPU),  # only 4 positions measured: gamma <= 4
        (np.ones(6), 0.0, {n: float(n) for n in range(1, 8)}),  # every gamma gives 1.0: take the smallest
        (np.zeros(5), 0.01, F_CPU),  # nothing accepted: gamma = 1 loses least
        (np.array([0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]), 0.02, {2: 1.1, 4: 1.2, 8: 1.5}),  # gamma = 1, 3, 7 only
        (np.array([0.85, 0.9, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95]), 0.25, F_CPU),  # an expensive draft
        # Falling rates: the mean rate (0.64) as one alpha picks gamma = 3; the products pick 5.
        (np.array([0.98, 0.95, 0.9, 0.8, 0.6, 0.4, 0.3, 0.2]), 0.05, F_CPU),
        # Three measured rates and a measured f that dips at 5 (measured f need not grow steadily):
        # gamma = 4 would look cheaper, but it has no measured rate; the answer is 3.
        (np.array([0.9, 0.9, 0.9]), 0.02, {1: 1.0, 2: 1.1, 3: 1.3, 4: 1.4, 5: 1.15, 6: 1.6}),
    ]


def check_best_gamma_by_position(fn) -> bool:
    """fn(acceptance, c, f) must return the gamma of reference_best_gamma_by_position (an integer)."""
    cases = best_gamma_cases()
    for acceptance, c, f in cases:
        got, error = call(fn, (acceptance.copy(), c, dict(f)))
        if error is not None:
            return verdict("best_gamma_by_position", error, len(cases))
        expected = reference_best_gamma_by_position(acceptance, c, f)
        whole = (isinstance(got, int) or hasattr(got, "__index__")) and not isinstance(got, bool | np.bool_)
        if not whole:
            failure = (
                f"for acceptance = {show(acceptance)}, c = {c}, f = {show(f)} got {show(got)}, a "
                f"{type(got).__name__}: gamma is a number of drafts, return an integer (expected {expected})"
            )
            return verdict("best_gamma_by_position", failure, len(cases))
        if got != expected:
            speedups = ", ".join(
                f"{g}: {tokens_by_position(acceptance, g) / (g * c + f[g + 1]):.4f}"
                for g in range(1, len(acceptance) + 1)
                if g + 1 in f
            )
            valid = [g for g in range(1, len(acceptance) + 1) if g + 1 in f]
            outside = (
                f"; gamma = {show(got)} is not a candidate: it needs a measured rate for each of its drafts "
                f"({len(acceptance)} are given) and a measured f(gamma + 1)"
                if got not in valid
                else ""
            )
            failure = (
                f"for acceptance = {show(acceptance)}, c = {c}, f = {show(f)} expected gamma = {expected}, "
                f"got {show(got)} (predicted speedup by gamma: {speedups}){outside}"
            )
            return verdict("best_gamma_by_position", failure, len(cases))
    return verdict("best_gamma_by_position", None, len(cases))
