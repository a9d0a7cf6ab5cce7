"""Checkers for the exercises in notebooks/01_logits_softmax_temperature.ipynb (support code)."""

import numpy as np

import specdec
import specdec.logits
import specdec.validation
from checkers import attempt, namesakes, result_problem, show, verdict
from specdec.logits import log_softmax, softmax

INF = np.inf
NAN = np.nan


TOLERANCE = {"float64": (1e-9, 1e-12), "loose": (1e-6, 1e-9)}  # (rtol, atol): float64 digits, or about 6


def close(got, expected, tolerance: str = "loose") -> bool:
    """Same shape and the same numbers to the tolerance's digits (the dtype is checked apart)."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    rtol, atol = TOLERANCE[tolerance]
    return got.shape == np.shape(expected) and bool(np.allclose(got, expected, rtol=rtol, atol=atol))


def show_difference(got, expected) -> tuple[str, str, str]:
    """expected and got as text; with more digits, and the gap, when 6 decimals would print them alike."""
    try:
        values = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return show(expected), show(got), ""
    if values.shape != np.shape(expected):
        return show(expected), show(got), ""
    with np.errstate(invalid="ignore"):  # inf - inf: those entries are equal, and counted as no gap
        same = (values == expected) | (np.isnan(values) & np.isnan(expected))
        gap = np.where(same, 0.0, np.abs(values - expected))  # (...,) NaN where only one side is NaN
    if not (gap < 1e-6).all():
        return show(expected), show(got), ""
    with np.printoptions(formatter={"float_kind": "{:.10g}".format}):
        digits = [np.array2string(np.asarray(v, dtype=np.float64), separator=", ") for v in (expected, got)]
    return *digits, f" (they differ by {gap.max():.1e}, too little to show at 6 decimals)"


def describe(args: tuple, noun: str = "logits") -> str:
    """show(args), plus the dtype of any array that is not float64 (float16 overflows where float64 does not)."""
    dtypes = [str(a.dtype) for a in args if isinstance(a, np.ndarray) and a.dtype != np.float64]
    return show(args) + (f" with {', '.join(dtypes)} {noun}" if dtypes else "")


def attempt_on(fn, args: tuple, refused: dict) -> tuple[object, str | None]:
    """Call the learner's function under the course's policy (checkers.attempt): result, or what went wrong.

    An overflow in (x - m) / T at a subnormal T is right (exp then gives 0), so numpy's warning is
    silenced; a function that changes the caller's array, or calls a refused package function, is
    refused by name.
    """
    with np.errstate(over="ignore"):
        outcome = attempt(fn, args, refused=refused, why=NUMPY_ONLY)
    if outcome.failure is not None and outcome.failure.startswith("raised"):
        return None, outcome.failure.replace(f"for input {show(args)}", f"for input {describe(args)}")
    return outcome.result, outcome.failure


NUMPY_ONLY = "a function of the package, and this exercise asks for numpy, without the package's functions"


def first_wrong(fn, cases, expected, *, what: str, float64: bool, refused: dict, per: str = "token") -> str | None:
    """The first case where fn disagrees with the expected answer, diagnosis first; None when all agree.

    `expected` holds the reference's answers, computed before the check. A list for an array, a dtype
    other than float64 (when float64=True) or a shape other than the input's is said first, in words;
    then the values, with more digits when 6 decimals would print them alike, and "close, but not to
    float64 precision" when float32 arithmetic is the only problem. `per` says what one value is
    (one probability per token; one entropy per row).
    """
    for args, answer in zip(cases, expected, strict=True):
        got, error = attempt_on(fn, args, refused)
        if error is not None:
            return error
        where = f"for input {describe(args)}"
        asked = answer
        if not float64 and isinstance(got, (np.ndarray, np.generic)) and got.dtype.kind == "f":
            asked = answer.astype(got.dtype)  # any float dtype will do here
        kind = result_problem(got, asked, what)
        if kind is not None and "shape" in kind:
            return f"{kind}, {where}: one value per {per} (the input has shape {np.shape(args[0])})"
        if not close(got, answer, "float64" if float64 else "loose"):
            shown_answer, shown_got, gap = show_difference(got, answer)
            note = ""
            if float64 and kind is None and close(got, answer, "loose"):
                note = " (close, but not to float64 precision, as float32 arithmetic gives: compute in float64)"
            lead = f"{kind}. And " if kind is not None else ""
            return f"{lead}{where} expected {shown_answer}, got {shown_got}{gap}{note}"
        if kind is not None:
            return f"{kind} (the values are right, only that is not), {where}"
    return None


def refused_functions(fn, names: tuple[str, ...]) -> dict:
    """The package's functions `names`, and the notebook's copies and aliases of them: calls are refused."""
    return namesakes(fn, names, specdec, specdec.logits, specdec.validation)


# --- Exercise 1: a numerically stable softmax with temperature --------------------------------

STABLE_SOFTMAX_CASES = [
    (np.array([2.0, 1.0, 0.1]), 1.0),  # an ordinary row
    (np.array([1000.0, 999.0, 998.0]), 1.0),  # exp(1000) = inf: subtract the maximum first
    (np.array([-1000.0, -1001.0, -1002.0]), 1.0),  # exp(-1000) = 0: 0 / 0 without the shift
    (np.array([0.0, -INF, 1.0, -INF]), 0.5),  # -inf means probability exactly 0
    (np.array([3.0, 1.0, 2.0]), 0.1),  # low temperature: sharper
    (np.array([3.0, 1.0, 2.0]), 1e4),  # high temperature: nearly uniform
    (np.array([1.0, 2.0]), 1e-308),  # divide first and 2 / 1e-308 = inf, then inf - inf = NaN
    (np.array([1.0, 2.0]), 1e-310),  # subnormal T: 1 / T = inf, so (x - m) * (1 / T) has 0 * inf = NaN
    (np.array([4.5]), 1.0),  # a one-token vocabulary: probability 1
    (np.array([2.0, 5.0, 5.0, 1.0]), 0.0),  # T = 0 is greedy; a tie goes to the lowest index
    (np.array([2.0, 5.0, 5.0, 1.0]), 0.01),  # a tiny T is not greedy: the tied tokens share the mass
    (np.array([1000.0, 1000.0, 999.0]), 1e-306),  # dividing first overflows; a greedy guard gives [1, 0, 0]
    (np.array([-INF, 4.0, -INF]), 0),  # greedy next to -inf, integer temperature
    (np.array([4.5]), 0.0),  # greedy over one token
    (np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0], [5.0, 5.0, -INF]]), 0.7),  # a batch: each row alone
    (np.array([[1.0, 3.0, 3.0], [7.0, 7.0, 7.0]]), 0.0),  # greedy on a batch, ties in every row
    (np.array([[[0.5, 0.25]], [[100.0, 300.0]]], dtype=np.float32), 2),  # (2, 1, 2) float32 logits
    (np.array([[[1.0, 4.0, 4.0], [9.0, 0.0, 2.0]], [[3.0, 3.0, 1.0], [0.0, 1.0, 6.0]]]), 0.0),  # (2, 2, 3) greedy
    (np.array([[2, 7, 7], [5, 1, 0]]), 0),  # integer logits, greedy: still float64 probabilities
    (np.array([[2, 7, 7], [5, 1, 0]]), 0.5),  # integer logits
    (np.array([[[1.0, 2.0]], [[2.0, 1.0]]], dtype=np.float32), 0.0),  # float32 logits, greedy
]


def check_stable_softmax(fn) -> bool:
    """fn(logits, temperature) must equal softmax(logits / T) over the last axis in float64, greedy at T = 0."""
    expected = [softmax(*args) for args in STABLE_SOFTMAX_CASES]
    refused = refused_functions(fn, ("softmax", "log_softmax", "one_hot_argmax"))
    failure = first_wrong(fn, STABLE_SOFTMAX_CASES, expected, what="probabilities", float64=True, refused=refused)
    return verdict("stable_softmax", failure, len(STABLE_SOFTMAX_CASES))


# --- Exercise 2: log-softmax without the log of zero ------------------------------------------

LOG_SOFTMAX_CASES = [
    (np.array([2.0, 1.0, 0.1]),),  # an ordinary row
    (np.array([0.0, -800.0, -1000.0]),),  # np.log(softmax(x)) gives -inf here; the answer is -800, -1000
    (np.array([1000.0, 999.0, 998.0]),),  # exp(1000) = inf: subtract the maximum first
    (np.array([0.0, -INF, 3.0]),),  # -inf stays -inf, the others are finite
    (np.array([-INF, 2.5, -INF]),),  # one token left: log 1 = 0
    (np.array([7.0]),),  # a one-token vocabulary: log 1 = 0
    (np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0], [5.0, 5.0, -INF]]),),  # a batch: each row alone
    (np.array([[[0.5, 0.25]], [[100.0, 800.0]]], dtype=np.float32),),  # (2, 1, 2) float32 logits
    (np.array([[3, 1, 2], [0, 0, 0]]),),  # integer logits
]


def check_log_softmax(fn) -> bool:
    """fn(logits) must equal log(softmax(logits)) over the last axis in float64, finite for every finite logit."""
    expected = [log_softmax(*args) for args in LOG_SOFTMAX_CASES]
    refused = refused_functions(fn, ("log_softmax",))
    failure = first_wrong(fn, LOG_SOFTMAX_CASES, expected, what="log-probabilities", float64=True, refused=refused)
    return verdict("stable_log_softmax", failure, len(LOG_SOFTMAX_CASES))


# --- Exercise 3: fix the seed blog post's softmax ---------------------------------------------

FIXED_SOFTMAX_VALID = [
    (np.array([2.0, 1.0, 0.1]), 1.0),
    (np.array([1000.0, 999.0, 998.0]), 1.0),
    (np.array([0.0, -INF, 1.0]), 1.0),  # -inf is allowed: it is how a filter says "never"
    (np.array([70.0, 69.0], dtype=np.float16), 0.001),  # float16: 70 / 0.001 = 70000 > 65504 = inf
    (np.array([1.0, 2.0]), 1e-308),  # float64: 2 / 1e-308 = inf
    (np.array([1.0, 2.0]), 1e-310),  # subnormal T: multiplying by 1 / T = inf gives 0 * inf = NaN
    (np.array([2.0, 5.0, 5.0, 1.0]), 0.0),  # greedy, tie to the lowest index
    (np.array([2.0, 5.0, 5.0, 1.0]), 0.01),  # a tiny T is not greedy: the tied tokens share the mass
    (np.array([1000.0, 1000.0, 999.0]), 1e-306),  # rule 2: dividing first overflows; a greedy guard gives [1, 0, 0]
    (np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]), 1.0),  # a batch: each row sums to 1, not the whole batch
    (np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]), 0.0),  # greedy on a batch: each row its own argmax
    (np.array([[0.0, 5.0, 5.0], [9.0, 1.0, 9.0], [2.0, 2.0, 2.0]]), 0),  # greedy, ties in every row
    (np.array([[[1.0, 4.0, 4.0], [9.0, 0.0, 2.0]], [[3.0, 3.0, 1.0], [0.0, 1.0, 6.0]]]), 0.0),  # (2, 2, 3) greedy
    (np.array([[8.0, -INF], [-INF, 8.0]]), 0.0),  # greedy next to -inf
]

FIXED_SOFTMAX_INVALID = [
    ((np.array([1.0, 2.0]), -1.0), "a negative temperature"),
    ((np.array([1.0, 2.0]), NAN), "a NaN temperature"),
    ((np.array([1.0, 2.0]), INF), "an infinite temperature"),
    ((np.array([1.0, NAN, 2.0]), 1.0), "a NaN logit"),
    ((np.array([1.0, INF]), 1.0), "a +inf logit"),
    ((np.array([-INF, -INF]), 1.0), "a row that is entirely -inf"),
    ((np.array([[0.0, 1.0], [-INF, -INF]]), 1.0), "a batch with one row entirely -inf"),
    ((np.array([[0.0, 1.0], [2.0, NAN]]), 1.0), "a batch with a NaN in its second row"),
    ((np.array([[[0.0, 1.0]], [[INF, 0.0]]]), 0.5), "a (2, 1, 2) batch with +inf in its second row"),
    ((np.array([1.0, NAN, 2.0]), 0.0), "a NaN logit at T = 0 (greedy must check the logits too)"),
    ((np.array([[0.0, 1.0], [-INF, -INF]]), 0.0), "a row entirely -inf at T = 0"),
]


def check_fixed_softmax(fn) -> bool:
    """fn(x, temperature) must compute the right float64 probabilities and raise ValueError on bad input."""
    n_cases = len(FIXED_SOFTMAX_VALID) + len(FIXED_SOFTMAX_INVALID)
    expected = [softmax(*args) for args in FIXED_SOFTMAX_VALID]
    refused = refused_functions(fn, ("softmax", "log_softmax", "one_hot_argmax", "check_logits", "check_temperature"))
    failure = first_wrong(fn, FIXED_SOFTMAX_VALID, expected, what="probabilities", float64=True, refused=refused)
    if failure is None:
        failure = first_not_refused(fn, refused)
    return verdict("fixed_softmax", failure, n_cases)


def first_not_refused(fn, refused: dict) -> str | None:
    """The first invalid case for which fn does not raise ValueError, said in words; None if it refuses them all."""
    for args, what in FIXED_SOFTMAX_INVALID:
        got, error = attempt_on(fn, args, refused)
        if error is not None and error.startswith("raised ValueError"):
            continue
        if error is not None and not error.startswith("raised"):
            return error  # a policy failure: it changed its input, it called the package
        problem = error if error is not None else f"returned {show(got)}"
        return f"for input {describe(args)} ({what}) expected a ValueError, but it {problem.split(' for input ')[0]}"
    return None


# --- Exercise 4: entropy in bits, with 0 * log 0 = 0 ------------------------------------------


def reference_entropy_bits(probs):
    """H = -sum p log2 p over the last axis, where a zero probability contributes exactly 0."""
    p = np.asarray(probs, dtype=np.float64)  # (..., V)
    terms = np.zeros_like(p)  # (..., V)
    positive = p > 0
    terms[positive] = -p[positive] * np.log2(p[positive])
    return terms.sum(axis=-1)  # (...,)


ENTROPY_CASES = [
    (np.array([0.25, 0.25, 0.25, 0.25]),),  # uniform over 4: exactly 2 bits
    (np.array([0.7, 0.2, 0.1]),),
    (np.array([0.0, 1.0, 0.0]),),  # certain: 0 bits, and 0 * log 0 must count as 0, not NaN
    (np.array([0.5, 0.0, 0.5]),),  # a fair coin with an impossible third side: 1 bit
    (np.array([1.0]),),  # a one-token vocabulary: 0 bits
    (np.full(1024, 1 / 1024),),  # uniform over 1024: 10 bits (in nats it would be 6.93)
    (np.array([0.5, 0.25, 0.25], dtype=np.float32),),  # float32 probabilities: 1.5 bits
    (np.array([[0.5, 0.5], [1.0, 0.0], [0.9, 0.1]]),),  # a batch: one entropy per row, shape (3,)
    (np.array([[[0.25, 0.75, 0.0]], [[1.0, 0.0, 0.0]]]),),  # (2, 1, 3) -> (2, 1)
    (np.array([[0.0, 0.0, 1.0], [0.2, 0.0, 0.8]], dtype=np.float32),),  # float32 with zeros
]


def check_entropy_bits(fn) -> bool:
    """fn(probs) must return the entropy in bits of each row (last axis), treating 0 * log 0 as 0.

    The entropy is a summary, not a distribution to sample from: float32 arithmetic is fine.
    """
    expected = [np.asarray(reference_entropy_bits(*args)) for args in ENTROPY_CASES]  # 0-d arrays print as 2.0
    failure = first_wrong(fn, ENTROPY_CASES, expected, what="entropies", float64=False, refused={}, per="row")
    return verdict("entropy_bits", failure, len(ENTROPY_CASES))
