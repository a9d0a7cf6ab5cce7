"""Checkers for the exercises of notebook 05 (the sampling pipeline).

check_pipeline_probs(fn):       fn(logits, params) -> the distribution sampling_probs gives
check_fixed_top_k_top_p(fn):    fn(logits, top_k, top_p) -> probabilities (one row, T = 1), bug fixed
check_which_order(fn):          fn(logits, params, probs) -> which of ORDERS produced `probs`

The buggy function of exercise 2 and the three pipelines of exercise 3 live here too, so the
notebook cannot change them by accident. The reference is the package's composed_sampling_probs:
notebook 05's definition of sampling_probs, the one composed-pipeline oracle.
"""

import sys

import numpy as np

import specdec
import specdec.pipeline
from checkers import call, located, namesakes, result_problem, show, verdict
from specdec.logits import softmax
from specdec.nucleus import top_p_filter
from specdec.pipeline import SamplingParams, composed_sampling_probs
from specdec.topk import top_k_filter

# The checkers' reference: the pipeline by definition (notebook 05's sampling_probs, which the package
# keeps as composed_sampling_probs). A learner's function that calls it, under any name, is refused.
REFERENCE_PROBS = composed_sampling_probs


def refused_in(fn, names: tuple[str, ...]) -> dict:
    """The ready-made functions `names` (the package's, this module's, the notebook's, any alias): refused."""
    return namesakes(fn, names, specdec, specdec.pipeline, sys.modules[__name__])


def describe(params: SamplingParams) -> str:
    """SamplingParams without the class name, for short counterexamples."""
    return f"T={params.temperature:g}, top_k={params.top_k}, top_p={params.top_p:g}, min_p={params.min_p:g}"


def precise(values: np.ndarray) -> str:
    """Probabilities with 12 significant digits, so that small differences are visible; the whole row."""
    with np.printoptions(precision=12, suppress=True, threshold=WHOLE):
        return np.array2string(np.asarray(values, dtype=np.float64), separator=", ")


WHOLE = 64  # a row of up to this many values is shown whole in a counterexample


def whole(values) -> str:
    """One row of a counterexample, every value shown (rows longer than WHOLE are shortened with ...)."""
    with np.printoptions(precision=6, suppress=True, threshold=WHOLE):
        return np.array2string(np.asarray(values), separator=", ")


def article(noun: str) -> str:
    """'an int', 'a float': the type name with its article."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


ALL_ZERO = "no token survived (an all-zero row), so the final division is 0/0"


def temperature_trap(args: tuple, failure: str) -> str | None:
    """What a crash or a NaN result means on exercise 1's two temperature traps; None on other cases.

    At T = 0 a pipeline that divides by T gets inf or NaN logits, which the filters refuse. At a
    temperature so small that x / T overflows (T = 1e-308), dividing before subtracting the row
    maximum gives inf (and inf - inf = NaN); subtracting the batch's maximum instead of each row's
    own turns a whole row into -inf. `failure`: the exception's text, or "NaN" for a NaN result.
    """
    if not any(word in failure for word in ("inf", "NaN", "ZeroDivisionError", "FloatingPointError")):
        return None
    logits, params = args
    temperature = params.temperature
    if temperature == 0:
        return "at temperature 0 your code divided by T (T = 0 means greedy: one-hot on the first maximum)"
    x = np.asarray(logits, dtype=np.float64)
    with np.errstate(over="ignore"):
        overflows = bool(np.isinf(np.abs(x[np.isfinite(x)]).max(initial=0.0) / temperature))
    if not overflows:
        return None
    if "entirely -inf" in failure:
        return (
            f"a whole row became -inf at T = {temperature:g}: subtract each row's own maximum"
            " (x.max(axis=-1, keepdims=True)), not the batch's, before dividing"
        )
    return f"x / T overflowed to inf for T = {temperature:g}: subtract the row maximum before dividing"


def compare_probs(got: np.ndarray, expected: np.ndarray, cause: str | None = None) -> tuple[tuple, str] | None:
    """None when `got` is the same distribution as `expected`, else (the first bad row, what is wrong there).

    `got` has expected's dtype and shape already (result_problem says what is wrong otherwise). The
    message says what is wrong first, the probabilities after; `cause` is said first for a NaN row
    (else an all-NaN row is named as the 0/0 of a row that kept nothing).
    """
    close = np.isclose(got, expected, rtol=1e-9, atol=1e-12) & ((got > 0) == (expected > 0))  # (..., V)
    if close.all():
        return None
    row = tuple(int(i) for i in np.argwhere(~close.all(axis=-1))[0]) if expected.ndim > 1 else ()
    kept_got, kept_expected = np.flatnonzero(got[row] > 0).tolist(), np.flatnonzero(expected[row] > 0).tolist()
    if np.isnan(got[row]).any():
        cause = cause or (ALL_ZERO if np.isnan(got[row]).all() else None)
        return row, f"{cause + ': ' if cause else ''}got NaN: {whole(got[row])}"
    if kept_got != kept_expected:
        return row, f"kept tokens {kept_got}, expected {kept_expected}"
    values = f"{precise(got[row])}, expected {precise(expected[row])}"
    if np.allclose(got[row], expected[row], rtol=1e-5, atol=1e-7):
        return row, f"right only to about float32 precision (compute in float64: compared to 1e-9): got {values}"
    return row, f"same kept tokens, wrong probabilities: got {values}"


def describe_input(args: tuple, row: tuple, names: tuple = (), source: str = "") -> str:
    """The case, or for a batch the offending row of it, shown whole (the logits come first in every case).

    `source` is the expression that gives this case's exact arguments, quoted when the logits are
    more than a few rounded numbers, so that the failure can be reproduced.
    """
    logits = np.asarray(args[0])
    rest = ", ".join(
        describe(a) if isinstance(a, SamplingParams) else f"{name}={show(a)}" if name else show(a)
        for a, name in zip(args[1:], names or ("",) * len(args[1:]), strict=True)
    )
    if row:
        text = f"row {row[0] if len(row) == 1 else row} of logits shape {logits.shape}: {whole(logits[row])}, {rest}"
    else:
        text = f"logits {whole(logits)}, {rest}"
    temperature = next((a.temperature for a in args[1:] if isinstance(a, SamplingParams)), 1.0) or 1.0
    shown = logits[row] if row else logits
    if shown.ndim == 1 and shown.size <= 8 and np.isfinite(shown).any():
        text += f" (softmax of the logits at T={temperature:g}: {show(softmax(shown.astype(np.float64), temperature))})"
    if source and logits.size > 8:
        text += f" (the exact arguments: {source})"
    return text


def check_probs_cases(
    name: str,
    fn,
    cases: list[tuple],
    reference,
    names: tuple = (),
    source: str = "",
    refused=None,
    asked: str = "",
    trap=None,
) -> bool:
    """Run fn(*case) and compare with reference(*case): same kept set, same probabilities, input untouched.

    `source` names the function that made `cases` (e.g. "ex05.pipeline_cases()"): a counterexample
    quotes `source[i]`, the exact arguments of the failing case. `trap(case, failure)`, if given, says
    what a crash or a NaN result on that case usually means (said first), or None.
    """
    for i, args in enumerate(cases):
        got, error = call(fn, args, refused=refused, why=f"this exercise asks you to {asked}")
        if error is not None:
            crashed = error.startswith("raised")  # not for "not attempted yet" or a refused call
            cause = trap(args, error) if crashed and trap else None
            if cause:
                error = f"{cause}; your function {error}"
            return verdict(
                name, error + (f" (the exact arguments: {source}[{i}])" if crashed and source else ""), len(cases)
            )
        expected = reference(*args)
        kind = result_problem(got, expected, "probabilities")
        cause = trap(args, "NaN") if trap else None
        problem = ((), kind) if kind is not None else compare_probs(got, expected, cause)
        if problem is not None:  # the diagnosis first, then the input (rows of up to 64 logits)
            row, what = problem
            where = describe_input(args, row, names, f"{source}[{i}]" if source else "")
            return verdict(name, located(what, f"for {where}"), len(cases))
    return verdict(name, None, len(cases))


# --- Exercise 1: the pipeline composed from the filters ---------------------------------------


# Weights 1, 1/2, 1/4, 1/4 and 32 tokens of 1/16: exact binary fractions (their exp(log) is exact), so
# after top-k = 4 the renormalised probabilities are exactly 1/2, 1/4, 1/8, 1/8 and the mass above the
# tied pair is exactly 0.75: top-p = 0.75 must drop it (mass above < p), a `<=` keeps it.
EXACT_HALVES = np.array([1.0, 0.5, 0.25, 0.25] + [0.0625] * 32)  # (36,)


def pipeline_cases() -> list[tuple]:
    rng = np.random.default_rng(50)
    ninf = -np.inf
    return [
        (np.array([2.0, 1.0, 1.0, 1.0, 0.5]), SamplingParams(top_k=2)),  # ties with the k-th all stay
        (np.log(np.array([0.30, 0.25, 0.25, 0.20])), SamplingParams(top_k=3, top_p=0.35)),  # renormalise after top-k
        (np.log(np.array([0.30, 0.25, 0.25, 0.20])), SamplingParams(top_k=3, top_p=0.4)),  # a tied pair crosses p
        (np.log(np.array([0.4, 0.1, 0.3, 0.2])), SamplingParams(top_k=2, top_p=0.5)),  # top-p first would keep 2
        (np.log(np.array([0.4, 0.2, 0.2, 0.2])), SamplingParams(top_p=0.5)),  # the nucleus edge is a tied group
        (np.array([3.0, 1.0, 2.0]), SamplingParams(0.5, top_k=10)),  # k >= V keeps everything
        (np.array([1.0, 4.0, 4.0]), SamplingParams(0, top_k=1, top_p=0.2)),  # greedy: ties to the lowest index
        (np.array([[9.0, 0.0, 9.0], [0.0, 1.0, 0.5]]), SamplingParams(0.0)),  # greedy, batched
        (np.array([1000.0, 999.0, 0.0]), SamplingParams(0.01)),  # tiny T, large logits: no overflow
        (np.array([1.0, 2.0]), SamplingParams(1e-308)),  # x / T overflows to inf unless the max goes first
        (np.array([[1.0, 1.5], [3.5, 3.0]]), SamplingParams(1e-308)),  # each row's own max, not the batch's
        (np.log(np.array([0.5, 0.25, 0.25])), SamplingParams(min_p=0.5)),  # min-p keeps equality
        (np.array([2.0, 2.0, 1.0]), SamplingParams(min_p=1.0)),  # min_p = 1: only the (tied) top
        (np.array([0.0, -1.0, -3.0, -6.0]), SamplingParams(2.0, min_p=0.3)),  # min-p after the temperature
        (np.array([ninf, 0.5, ninf, 0.2]), SamplingParams(0.7, top_k=3, top_p=0.9)),  # masked tokens stay masked
        (np.log(EXACT_HALVES), SamplingParams(top_k=4, top_p=0.75)),  # renormalised mass above = p exactly
        (rng.normal(size=6), SamplingParams()),  # nothing enabled: softmax
        (rng.normal(size=(3, 4, 30)), SamplingParams(0.8, 10, 0.9, 0.05)),  # batched, every filter
        (rng.normal(size=(5, 40)).astype(np.float32), SamplingParams(1.3, None, 0.95)),
        (np.array([[3, 1, 2], [5, 5, 0]]), SamplingParams(top_k=1)),  # integer logits
        (rng.normal(scale=0.3, size=500), SamplingParams(1.0, None, 0.99)),  # a flat row: a big nucleus
        (rng.normal(size=(8, 50)).round(1), SamplingParams(0.7, 5, 0.8, 0.1)),  # many ties
        (rng.normal(size=(4, 12)), SamplingParams(5.0, 4, 0.6)),  # a high temperature
    ]


REFERENCES = ("sampling_probs", "composed_sampling_probs", "top_k_top_p")


def check_pipeline_probs(fn) -> bool:
    """fn(logits, params) must return sampling_probs(logits, params): same kept tokens, same probabilities.

    It must be built from the filters: calls to the package's pipelines (or this checker's) are refused.
    """
    asked = "build the pipeline from top_k_filter, top_p_filter, min_p_filter and softmax, not call a ready-made one"
    return check_probs_cases(
        "pipeline_probs",
        fn,
        pipeline_cases(),
        REFERENCE_PROBS,
        source="ex05.pipeline_cases()",
        refused=refused_in(fn, REFERENCES),
        asked=asked,
        trap=temperature_trap,
    )


# --- Exercise 2: spot the bug ------------------------------------------------------------------


def buggy_top_k_top_p(logits, top_k: int, top_p: float) -> np.ndarray:
    """Top-k then top-p at temperature 1, for one row, the way it is often written (the bug is yours to find)."""
    logits = np.asarray(logits, dtype=np.float64)  # (V,)
    probs = softmax(logits)  # (V,) computed once, up front
    kth = np.sort(logits)[-min(top_k, logits.size)]  # the k-th largest logit
    probs = np.where(logits >= kth, probs, 0.0)  # top-k: zero the rest (ties with the k-th stay)
    beats = probs[None, :] > probs[:, None]  # (V, V) [i, j]: token j is strictly more likely than token i
    above = (beats * probs[None, :]).sum(axis=1)  # (V,) mass of the tokens more likely than each token
    probs = np.where(above < top_p, probs, 0.0)  # top-p: keep i iff the mass above it is < p
    return probs / probs.sum()


def top_k_top_p(logits, top_k: int, top_p: float) -> np.ndarray:
    """What buggy_top_k_top_p should return."""
    return REFERENCE_PROBS(logits, SamplingParams(1.0, top_k, top_p))


def fixed_cases() -> list[tuple]:
    rng = np.random.default_rng(51)
    return [
        (np.log(np.array([0.30, 0.25, 0.25, 0.20])), 3, 0.35),  # the bug keeps all three
        (np.log(np.array([0.4, 0.3, 0.2, 0.1])), 2, 0.5),
        (np.log(np.array([0.1, 0.2, 0.3, 0.4])), 2, 0.5),  # the same, tokens in another order
        (np.array([2.0, 1.0, 1.0, 1.0, 0.5]), 2, 0.3),  # ties with the k-th
        (np.array([1.0, 1.0, 2.0, 1.0, 0.5]), 2, 0.95),  # ties with the k-th, all inside the nucleus
        (np.log(np.array([0.30, 0.25, 0.25, 0.20])), 3, 0.4),  # the tied pair crosses p together
        (np.array([3.0, 1.0, 2.0]), 10, 0.5),  # k >= V
        (np.array([0.5, 0.2, -1.0]), 1, 0.9),  # k = 1
        (np.array([1.0, 0.0, -0.5, -2.0]), 4, 1.0),  # nothing filtered
        (np.array([0.0, -np.inf, 1.0, -np.inf, 0.5]), 2, 0.6),
        (np.log(np.array([0.5, 0.25, 0.125, 0.125])), 4, 0.5),  # exact binary fractions: mass above token 1 = p
        (np.log(EXACT_HALVES), 4, 0.75),  # after top-k, exactly 1/2, 1/4, 1/8, 1/8: mass above the pair = p
        (rng.normal(scale=2.0, size=40), 10, 0.9),
        (rng.normal(scale=0.5, size=200), 50, 0.8),  # top-k removes a lot of mass: the bug keeps all 50
        (rng.normal(scale=1.0, size=30).astype(np.float32), 8, 0.7),
    ]


def check_fixed_top_k_top_p(fn) -> bool:
    """fn(logits, top_k, top_p) on one row must give sampling_probs(logits, SamplingParams(1.0, top_k, top_p))."""
    asked = "fix buggy_top_k_top_p with the smallest change to its own lines, not call a pipeline"
    return check_probs_cases(
        "fixed_top_k_top_p",
        fn,
        fixed_cases(),
        top_k_top_p,
        names=("top_k", "top_p"),
        source="ex05.fixed_cases()",
        refused=refused_in(fn, REFERENCES),
        asked=asked,
    )


# --- Exercise 3: which order made this output? -----------------------------------------------

NO_ORDER_MATCHED = (
    "returned None: a `return` is missing, or none of your three orders reproduced `probs` (compare the kept sets"
    " `probs > 0` first)"
)
ORDERS = ("temperature, top-k, top-p", "temperature, top-p, top-k", "top-k, top-p, temperature")


def filtered_in_order(logits, params: SamplingParams, order: str) -> np.ndarray:
    """The distribution from applying temperature, top-k and top-p in the given order (softmax at the end)."""
    z = np.asarray(logits, dtype=np.float64)  # (V,)
    steps = {
        "temperature": lambda z: z / params.temperature,
        "top-k": lambda z: top_k_filter(z, params.top_k),
        "top-p": lambda z: top_p_filter(z, params.top_p),
    }
    for step in order.split(", "):
        z = steps[step](z)
    return softmax(z)


def which_order_cases() -> list[tuple]:
    """(logits, params, probs, answer), chosen so the three orders give three different kept sets."""
    rng = np.random.default_rng(52)
    cases, count = [], 0
    while len(cases) < 18:
        logits = rng.normal(scale=rng.uniform(0.5, 3.0), size=int(rng.integers(6, 30)))
        params = SamplingParams(
            float(rng.choice([0.4, 0.6, 1.5, 2.5])), int(rng.integers(2, 6)), round(float(rng.uniform(0.3, 0.9)), 2)
        )
        outputs = [filtered_in_order(logits, params, order) for order in ORDERS]
        kept = {tuple(np.flatnonzero(p > 0)) for p in outputs}
        if len(kept) == len(ORDERS):  # the output identifies its order
            answer = ORDERS[count % len(ORDERS)]
            cases.append((logits, params, outputs[ORDERS.index(answer)], answer))
            count += 1
    return cases


def check_which_order(fn) -> bool:
    """fn(logits, params, probs) must name the order in ORDERS that turned `logits` into `probs`.

    The three orders are the learner's to write: this checker's own filtered_in_order is refused.
    """
    cases = which_order_cases()
    asked = "write the three orders yourself, with top_k_filter, top_p_filter, a division by T and softmax"
    refused = refused_in(fn, ("filtered_in_order",))
    for i, (logits, params, probs, answer) in enumerate(cases):
        got, error = call(fn, (logits, params, probs), refused=refused, why=f"this exercise asks you to {asked}")
        exact = f"the exact arguments: ex05.which_order_cases()[{i}][:3]"
        if error is not None:
            return verdict("which_order", f"{error} ({exact})" if error.startswith("raised") else error, len(cases))
        if not isinstance(got, str) or got != answer:  # the diagnosis first, the case after
            if got is None:
                said = f"your function {NO_ORDER_MATCHED};"
            elif not isinstance(got, str):
                kind = "numpy array" if isinstance(got, np.ndarray) else type(got).__name__
                said = f"your function returned {article(kind)}, not a string: {show(got)};"
            else:
                said = f"you said {got!r}, but"
            failure = f"{said} this output came from {answer!r}; return one of the strings in ex05.ORDERS"
            kept = np.flatnonzero(probs > 0).tolist()
            where = f"for logits {whole(logits)} with {describe(params)}, the output keeps tokens {kept}; {exact}"
            return verdict("which_order", located(failure, where), len(cases))
    return verdict("which_order", None, len(cases))
