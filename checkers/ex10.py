"""Checkers for the exercises of notebook 10 (measuring speculative decoding).

check_estimate_alpha(fn):            fn(accepted_per_round, drafted_per_round) -> pooled acceptance rate alpha
check_acceptance_per_position(fn):   fn(accepted_per_round, drafted_per_round) -> (gamma,) acceptance by position
check_best_gamma_by_position(fn):    fn(acceptance, c, f) -> the gamma with the highest predicted speedup

Exercises 1 and 2 ask for the bookkeeping itself: a function that calls the harness's
`pooled_alpha`, `acceptance_counts` or `acceptance_by_position` (the package's, the notebook's
copies, any alias) or `SpeculativeResult.alpha` is refused with a message naming it (the common
policy of checkers/__init__.py watches the calls; nothing is replaced).
"""

import math

import numpy as np

from checkers import call, located, namesakes, narrower_float, result_problem, show, verdict
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
        width = narrower_float(got)
        if width is not None and same_rate(got, expected, rel_tol=1e-6):
            failure = (
                f"the right value in {width}, which keeps only about 7 significant digits; float64 is asked"
                f" (a Python float, or np.float64): expected {expected:.17g}, got {show(got)}"
            )
            return verdict("estimate_alpha", located(failure, where), len(cases))
        if not same_rate(got, expected):
            kind = "" if width is None and not isinstance(got, bool | str | bytes) else f" (a {type(got).__name__})"
            failure = f"{alpha_hint(got, accepted, drafted)}expected {expected:.6g}, got {number(got)}{kind}"
            return verdict("estimate_alpha", located(failure, where), len(cases))
    return verdict("estimate_alpha", None, len(cases))


def number(got) -> str:
    """A number as the expected value is written (6 significant digits), anything else as `show` writes it."""
    if isinstance(got, int | float | np.integer | np.floating) and not isinstance(got, bool | np.bool_):
        return f"{float(got):.6g}"
    return show(got)


def alpha_hint(got, accepted_per_round, drafted_per_round) -> str:
    """The diagnosis of a mistake seen in learners' answers, to put first; '' for any other answer."""
    accepted = sum(accepted_per_round)
    if sum(drafted_per_round) and same_rate(got, accepted / sum(drafted_per_round)):
        return (
            "that is accepted / drafted, which counts the drafts after a rejection as failures, though they were"
            " thrown away untested; alpha is accepted / tested: "
        )
    if accepted_per_round and same_rate(got, accepted / (accepted + len(accepted_per_round))):
        return "you counted a rejection in every round; a round that accepted all its g drafts rejected none: "
    largest = max(drafted_per_round, default=0)
    rejected = sum(n < largest for n in accepted_per_round)  # every round compared with the largest g
    if accepted + rejected and same_rate(got, accepted / (accepted + rejected)):
        return (
            "compare each round's n with its own g: a round cut short at the end drafted fewer and accepted them all: "
        )
    return ""


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

    A float64 numpy array of shape (gamma,), NaN at the positions no round reached; it must not use the
    harness's acceptance_counts or acceptance_by_position. A mistake at a position some round reached is
    reported before numbers written where no round reached, so that the message names the real mistake.
    """
    cases = acceptance_per_position_cases()
    refused = refused_in(fn, ("acceptance_counts", "acceptance_by_position"))
    unreached = None  # the first case whose only mistakes are numbers at positions no round reached
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
        if same_rates(got, expected):
            continue
        if unreached_only(got, expected):
            unreached = unreached or (got, expected, where)
            continue  # a mistake at a reached position, in a later case, would be the real one
        shape = f" (shape {got.shape}, expected {expected.shape})" if got.shape != expected.shape else ""
        failure = f"{reached_hint(got, accepted, drafted)}expected {show(expected)}, got {show(got)}{shape}"
        return verdict("acceptance_per_position", located(failure, where), len(cases))
    if unreached is not None:
        got, expected, where = unreached
        return verdict("acceptance_per_position", located(unreached_failure(got, expected), where), len(cases))
    return verdict("acceptance_per_position", None, len(cases))


def unreached_only(got: np.ndarray, expected: np.ndarray) -> bool:
    """True when got is right at every position some round reached and holds numbers where none did."""
    if got.shape != expected.shape or not np.issubdtype(got.dtype, np.number):
        return False
    numbers = np.isnan(expected) & ~np.isnan(got.astype(np.float64))  # (gamma,) numbers where NaN is asked
    return bool(numbers.any()) and same_rates(np.where(numbers, np.nan, got.astype(np.float64)), expected)


def unreached_failure(got: np.ndarray, expected: np.ndarray) -> str:
    """The mistake first: a position never tested has no rate, so NaN is asked there, not the number written."""
    numbers = np.isnan(expected) & ~np.isnan(got.astype(np.float64))  # (gamma,)
    positions = (np.flatnonzero(numbers) + 1).tolist()
    written = " or ".join(f"{value:g}" for value in np.unique(got[numbers]))
    return (
        f"no round reached position(s) {positions}, so no draft there was ever tested and there is no rate to"
        f" give: the statement asks for np.nan there, not {written} (a 0 would read as 'always rejected'; if you"
        f" divide only where rounds reached, start from np.full(gamma, np.nan), not np.zeros). Every other rate"
        f" is right: expected {show(expected)}, got {show(got)}"
    )


def reached_hint(got: np.ndarray, accepted_per_round, drafted_per_round) -> str:
    """The diagnosis of a mistake seen in learners' answers, to put first, or ''."""
    gamma = max(drafted_per_round, default=0)
    if not accepted_per_round or got.shape != (gamma,):
        return ""
    kept, drafting, past_g = np.zeros(gamma), np.zeros(gamma), np.zeros(gamma)  # (gamma,) each, per position
    for n, g in zip(accepted_per_round, drafted_per_round, strict=True):
        kept[:n] += 1  # rounds that accepted the draft at each position
        drafting[:g] += 1  # rounds that drafted each position (all > 0: some round drafted gamma)
        past_g[: n + 1] += 1  # rounds "reaching" n + 1 positions, even past their own g
    reached = (
        "the rate at position i counts only the rounds that reached it (they drafted at least i tokens and"
        " accepted drafts 1..i-1): "
    )
    if same_rates(got, kept / drafting):  # also dividing by all the rounds, where every round drafted gamma
        every = " (here, all the rounds)" if min(drafted_per_round) == gamma else ""
        return (
            f"you counted every round that drafted position i{every}; a round that rejected an earlier draft"
            f" never reached i: {reached}"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        beyond = np.where(past_g > 0, kept / past_g, np.nan)  # (gamma,)
    if same_rates(got, beyond):
        return (
            "a round that drafted g reaches positions 1..min(n + 1, g), not n + 1: one that accepted all its g drafts"
            " reached no position after them: "
        )
    return ""


# --- best_gamma_by_position --------------------------------------------------------------


def tokens_by_position(acceptance, gamma: int) -> float:
    """E[tokens] of a round of gamma drafts when draft i is accepted with probability acceptance[i - 1]
    given that all before it were: 1 + a1 + a1 a2 + ... + a1 ... a_gamma."""
    return 1.0 + float(np.cumprod(np.asarray(acceptance, dtype=np.float64)[:gamma]).sum())


def speedup(acceptance, gamma: int, c: float, f: dict) -> float:
    """The predicted speedup of gamma drafts: E[tokens] over the round's cost gamma c + f(gamma + 1)."""
    return tokens_by_position(acceptance, gamma) / (gamma * c + f[gamma + 1])


def candidates(acceptance, f: dict) -> list[int]:
    """The gammas that can be priced: a measured rate for each draft and a measured f(gamma + 1)."""
    return [gamma for gamma in range(1, len(acceptance) + 1) if gamma + 1 in f]


def reference_best_gamma_by_position(acceptance, c: float, f: dict) -> int:
    """The gamma (1..len(acceptance), f(gamma + 1) known) with the highest speedup; the smallest on ties."""
    return max(candidates(acceptance, f), key=lambda gamma: speedup(acceptance, gamma, c, f))


def best_gamma_cases() -> list[tuple]:
    return [
        # Greedy-like: a hard first position, easy later ones (what notebook 10 measures).
        (np.array([0.7, 0.86, 0.95, 0.9, 0.91, 0.75, 0.84, 0.98]), 0.02, F_CPU),
        # Rates that go up and down, a moderately cheap draft: gamma = 4. Without the leading 1 of E[tokens]
        # the choice is 5, without the draft's cost 7: each mistake shows here with its own answer.
        (np.array([0.93, 0.66, 0.89, 0.87, 0.69, 0.7, 0.93, 0.73]), 0.07, F_CPU),
        # T = 1-like: closer to constant.
        (np.array([0.61, 0.72, 0.74, 0.78, 0.76, 0.78, 0.72, 0.73]), 0.09, F_CPU),
        # A strong first position, then weak ones: later drafts are rarely worth their cost.
        (np.array([0.95, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]), 0.05, F_CPU),
        # A weak first position, then near-certain ones: once past the first, drafts pay.
        (np.array([0.5, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99]), 0.03, F_CPU),
        (np.array([0.8, 0.8, 0.8, 0.8]), 0.1, F_CPU),  # only 4 positions measured: gamma <= 4
        # Falling rates: the mean rate (0.64) as one alpha picks gamma = 3; the products pick 5. Before the
        # all-ones case, where the closed form (1 - alpha**(gamma + 1)) / (1 - alpha) of a mean rate divides by 0.
        (np.array([0.98, 0.95, 0.9, 0.8, 0.6, 0.4, 0.3, 0.2]), 0.05, F_CPU),
        # A free draft never accepted, and f = 1 at every size (the accelerator's case): every gamma gives 1.0.
        (np.zeros(5), 0.0, {n: 1.0 for n in range(1, 7)}),
        (np.ones(6), 0.0, {n: float(n) for n in range(1, 8)}),  # every gamma gives 1.0 again: take the smallest
        (np.zeros(5), 0.01, F_CPU),  # nothing accepted: gamma = 1 loses least
        (np.array([0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]), 0.02, {2: 1.1, 4: 1.2, 8: 1.5}),  # gamma = 1, 3, 7 only
        (np.array([0.85, 0.9, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95]), 0.25, F_CPU),  # an expensive draft
        # Three measured rates and a measured f that dips at 5 (measured f need not grow steadily):
        # gamma = 4 would look cheaper, but it has no measured rate; the answer is 3.
        (np.array([0.9, 0.9, 0.9]), 0.02, {1: 1.0, 2: 1.1, 3: 1.3, 4: 1.4, 5: 1.15, 6: 1.6}),
    ]


def check_best_gamma_by_position(fn) -> bool:
    """fn(acceptance, c, f) must return the gamma of reference_best_gamma_by_position (an integer)."""
    cases = best_gamma_cases()
    for acceptance, c, f in cases:
        got, error = call(fn, (acceptance, c, dict(f)))  # call copies the array, not the dict
        where = f"for acceptance = {show(acceptance)}, c = {c}, f = {show(f)}"
        if error is not None:
            return verdict("best_gamma_by_position", located(error, where), len(cases))
        expected = reference_best_gamma_by_position(acceptance, c, f)
        whole = (isinstance(got, int) or hasattr(got, "__index__")) and not isinstance(got, bool | np.bool_)
        if not whole:
            failure = (
                f"your function returned {show(got)}, a {type(got).__name__}: gamma is a number of drafts, return"
                f" an integer (expected {expected})"
            )
            return verdict("best_gamma_by_position", located(failure, where), len(cases))
        if got != expected:
            valid = candidates(acceptance, f)
            speedups = ", ".join(f"{g}: {speedup(acceptance, g, c, f):.4f}" for g in valid)
            outside = (
                f"gamma = {show(got)} is not a candidate: it needs a measured rate for each of its drafts "
                f"({len(acceptance)} are given) and a measured f(gamma + 1); "
                if got not in valid
                else ""
            )
            hint = gamma_hint(got, expected, acceptance, c, f) or outside  # an index of 0 is told as an index
            failure = f"{hint}expected gamma = {expected}, got {show(got)} (predicted speedup by gamma: {speedups})"
            return verdict("best_gamma_by_position", located(failure, where), len(cases))
    return verdict("best_gamma_by_position", None, len(cases))


def gamma_hint(got: int, expected: int, acceptance, c: float, f: dict) -> str:
    """The diagnosis of a mistake seen in learners' answers, to put first, or ''. The cases are ordered so that
    each of these mistakes fails first where no other known mistake gives the same gamma."""
    valid = candidates(acceptance, f)
    reach = np.cumprod(np.asarray(acceptance, dtype=np.float64))  # (L,) P(draft j is kept)
    without_one = max(valid, key=lambda gamma: reach[:gamma].sum() / (gamma * c + f[gamma + 1]))
    alpha = float(np.mean(acceptance))  # the shortcut: one alpha for every position
    mean_rate = max(valid, key=lambda gamma: speedup(np.full(gamma, alpha), gamma, c, f))
    if got == without_one:
        return "E[tokens] starts at 1, the target's own token: write E = 1 + np.cumprod(acceptance)[:gamma].sum(): "
    if got == mean_rate:
        return (
            "that is the gamma the mean of the rates gives as one alpha, the shortcut the statement warns about:"
            " E[tokens] = 1 + a1 + a1 a2 + ... takes each position's rate, and the first ones weigh most: "
        )
    if got == expected - 1 and expected == max(valid):
        return (
            f"gamma = {expected}, the largest candidate, wins: the candidates run up to len(acceptance) included"
            " (and an index from argmax counts from 0, gamma from 1): "
        )
    if got == expected - 1:
        return "gamma counts from 1; an index from argmax counts from 0: "
    return ""
