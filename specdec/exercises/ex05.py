"""Checkers for the exercises of notebook 05 (the sampling pipeline).

check_pipeline_probs(fn):       fn(logits, params) -> the filtered distribution, like sampling_probs
check_fixed_top_k_top_p(fn):    fn(logits, top_k, top_p) -> probabilities (one row, T = 1), bug fixed
check_which_order(fn):          fn(logits, params, probs) -> which of ORDERS produced `probs`

The buggy function of exercise 2 and the three pipelines of exercise 3 live here too, so the
notebook cannot change them by accident.
"""

import numpy as np

import specdec
import specdec.pipeline
from specdec.exercises import call, show, verdict
from specdec.exercises.ex01 import refusing
from specdec.logits import softmax
from specdec.nucleus import top_p_filter
from specdec.pipeline import SamplingParams, min_p_filter, sampling_probs
from specdec.topk import top_k_filter


def describe(params: SamplingParams) -> str:
    """SamplingParams without the class name, for short counterexamples."""
    return f"T={params.temperature:g}, top_k={params.top_k}, top_p={params.top_p:g}, min_p={params.min_p:g}"


def precise(values: np.ndarray) -> str:
    """Probabilities with 12 significant digits, so that small differences are visible."""
    with np.printoptions(precision=12, suppress=True, threshold=20):
        return np.array2string(np.asarray(values, dtype=np.float64), separator=", ")


def compare_probs(got, expected: np.ndarray) -> tuple[tuple, str] | None:
    """None when `got` is the same distribution as `expected`, else (the first bad row, what is wrong there)."""
    got = np.asarray(got)
    if got.shape != expected.shape:
        return (), f"got shape {got.shape}, expected {expected.shape}"
    if got.dtype != np.float64:
        return (), f"got dtype {got.dtype}: return float64 probabilities (rows must sum to 1 within 1e-12)"
    close = np.isclose(got, expected, rtol=1e-9, atol=1e-12) & ((got > 0) == (expected > 0))  # (..., V)
    if close.all():
        return None
    row = tuple(int(i) for i in np.argwhere(~close.all(axis=-1))[0]) if expected.ndim > 1 else ()
    kept_got, kept_expected = np.flatnonzero(got[row] > 0).tolist(), np.flatnonzero(expected[row] > 0).tolist()
    if np.isnan(got[row]).any():
        return row, f"got NaN: {show(got[row])}"
    if kept_got != kept_expected:
        return row, f"kept tokens {kept_got}, expected {kept_expected}"
    return row, f"same kept tokens, but probabilities {precise(got[row])}, expected {precise(expected[row])}"


def describe_input(args: tuple, row: tuple, names: tuple = ()) -> str:
    """The case, or for a batch the offending row of it (the logits come first in every case)."""
    logits = np.asarray(args[0])
    rest = ", ".join(
        describe(a) if isinstance(a, SamplingParams) else f"{name}={show(a)}" if name else show(a)
        for a, name in zip(args[1:], names or ("",) * len(args[1:]), strict=True)
    )
    if row:
        return f"row {row[0] if len(row) == 1 else row} of logits shape {logits.shape}: {show(logits[row])}, {rest}"
    text = f"logits {show(logits)}, {rest}"
    if logits.ndim == 1 and logits.size <= 8 and np.isfinite(logits).any():
        text += f" (softmax of the logits: {show(softmax(logits))})"
    return text


def check_probs_cases(name: str, fn, cases: list[tuple], reference, names: tuple = ()) -> bool:
    """Run fn(*case) and compare with reference(*case): same kept set, same probabilities, input untouched."""
    for args in cases:
        pristine = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
        got, error = call(fn, args)
        if error is not None:
            return verdict(name, error, len(cases))
        if not all(np.array_equal(a, b) for a, b in zip(args, pristine, strict=True) if isinstance(a, np.ndarray)):
            return verdict(name, f"your function modified its input {show(pristine[0])}", len(cases))
        problem = compare_probs(got, reference(*args))
        if problem is not None:
            row, what = problem
            return verdict(name, f"for {describe_input(args, row, names)}: {what}", len(cases))
    return verdict(name, None, len(cases))


# --- Exercise 1: the pipeline composed from the filters ---------------------------------------


def reference_pipeline(logits, params: SamplingParams) -> np.ndarray:
    """The obvious composition, filter after filter on logits: softmax(min_p(top_p(top_k(x / T)))).

    Each filter works on logits and computes its own softmax, so the survivors of one filter are
    renormalised before the next looks at them (a -inf logit has probability exactly 0).
    Subtracting the row maximum before dividing by T keeps a tiny T from overflowing.
    """
    x = np.asarray(logits, dtype=np.float64)  # (..., V)
    if params.temperature == 0:
        return softmax(x, 0)  # greedy: one-hot on the first maximum
    z = (x - x.max(axis=-1, keepdims=True)) / params.temperature  # (..., V) all <= 0
    if params.top_k is not None:
        z = top_k_filter(z, params.top_k)
    if params.top_p < 1:
        z = top_p_filter(z, params.top_p)
    if params.min_p > 0:
        z = min_p_filter(z, params.min_p)
    return softmax(z)


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
        (np.log(np.array([0.5, 0.25, 0.25])), SamplingParams(min_p=0.5)),  # min-p keeps equality
        (np.array([2.0, 2.0, 1.0]), SamplingParams(min_p=1.0)),  # min_p = 1: only the (tied) top
        (np.array([0.0, -1.0, -3.0, -6.0]), SamplingParams(2.0, min_p=0.3)),  # min-p after the temperature
        (np.array([ninf, 0.5, ninf, 0.2]), SamplingParams(0.7, top_k=3, top_p=0.9)),  # masked tokens stay masked
        (rng.normal(size=6), SamplingParams()),  # nothing enabled: softmax
        (rng.normal(size=(3, 4, 30)), SamplingParams(0.8, 10, 0.9, 0.05)),  # batched, every filter
        (rng.normal(size=(5, 40)).astype(np.float32), SamplingParams(1.3, None, 0.95)),
        (np.array([[3, 1, 2], [5, 5, 0]]), SamplingParams(top_k=1)),  # integer logits
        (rng.normal(scale=0.3, size=500), SamplingParams(1.0, None, 0.99)),  # a flat row: a big nucleus
        (rng.normal(size=(8, 50)).round(1), SamplingParams(0.7, 5, 0.8, 0.1)),  # many ties
        (rng.normal(size=(4, 12)), SamplingParams(5.0, 4, 0.6)),  # a high temperature
    ]


def check_pipeline_probs(fn) -> bool:
    """fn(logits, params) must return sampling_probs(logits, params): same kept tokens, same probabilities."""
    return check_probs_cases("pipeline_probs", fn, pipeline_cases(), sampling_probs)


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
    return sampling_probs(logits, SamplingParams(1.0, top_k, top_p))


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
        (rng.normal(scale=2.0, size=40), 10, 0.9),
        (rng.normal(scale=0.5, size=200), 50, 0.8),  # top-k removes a lot of mass: the bug keeps all 50
        (rng.normal(scale=1.0, size=30).astype(np.float32), 8, 0.7),
    ]


def check_fixed_top_k_top_p(fn) -> bool:
    """fn(logits, top_k, top_p) on one row must give sampling_probs(logits, SamplingParams(1.0, top_k, top_p))."""
    with refusing(fn, ("sampling_probs", "composed_sampling_probs"), (specdec, specdec.pipeline)):
        return check_probs_cases("fixed_top_k_top_p", fn, fixed_cases(), top_k_top_p, names=("top_k", "top_p"))


# --- Exercise 3: which order made this output? -----------------------------------------------

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
    """fn(logits, params, probs) must name the order in ORDERS that turned `logits` into `probs`."""
    cases = which_order_cases()
    for logits, params, probs, answer in cases:
        got, error = call(fn, (logits.copy(), params, probs.copy()))
        if error is not None:
            return verdict("which_order", error, len(cases))
        if got != answer:
            kept = np.flatnonzero(probs > 0).tolist()
            return verdict(
                "which_order",
                f"for logits {show(logits)} with {describe(params)}, the output keeps tokens {kept}: "
                f"it came from {answer!r}, you said {got!r}",
                len(cases),
            )
    return verdict("which_order", None, len(cases))
