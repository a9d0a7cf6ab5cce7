"""Checkers for the exercises in notebooks/01_logits_softmax_temperature.ipynb (support code)."""

from contextlib import contextmanager
from types import ModuleType

import numpy as np

import specdec
import specdec.logits
from specdec.exercises import replaced, show, verdict
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


def dtype_of(value) -> str | None:
    """The dtype name of a result (a list of Python floats counts as float64), or None if it is not numeric."""
    try:
        return np.asarray(value).dtype.name
    except (TypeError, ValueError):
        return None


def as_array(fn):
    """fn with its result passed through np.asarray, so a 0-d answer prints as 2.0, not np.float64(2.0)."""
    return lambda *args: np.asarray(fn(*args))


def copying(fn):
    """Call fn on copies of the case's arrays, so a function that edits its input cannot change the case."""
    return lambda *args: fn(*(np.copy(a) if isinstance(a, np.ndarray) else a for a in args))


def attempt(fn, args: tuple, noun: str = "logits"):
    """Call the learner's function on copies of args; return (result, None) or (None, what went wrong).

    A function that changes the array it was given (x -= x.max(...) on the caller's logits) is wrong
    even when its result is right: the caller's logits are not its to edit.
    """
    copies = tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args)
    try:
        with np.errstate(over="ignore"):  # (x - m) / T overflows to -inf at a subnormal T, rightly: exp gives 0
            result = fn(*copies)
    except NotImplementedError:
        return None, NOT_ATTEMPTED
    except Exception as error:  # the learner's code may fail in any way; report it as a counterexample
        return None, f"raised {type(error).__name__}: {error} for input {describe(args, noun)}"
    for original, copy in zip(args, copies, strict=True):
        if isinstance(original, np.ndarray) and not np.array_equal(original, copy, equal_nan=True):
            return None, (
                f"it changed the {noun} it was given, in place, for input {describe(args, noun)} "
                f"(now {show(copy)}): leave the caller's array as it is; compute into a new one "
                f"({NEW_ARRAY[noun]})"
            )
    return result, None


NEW_ARRAY = {"logits": "x = x - m, not x -= m", "probabilities": "np.where(p > 0, p, 1.0), not p[p == 0] = 1.0"}
NOT_ATTEMPTED = "not attempted yet: replace `raise NotImplementedError` with your code and run the cell again"


def first_wrong(fn, cases, expected, *, what: str, float64: bool, noun: str = "logits") -> str | None:
    """The first case where fn disagrees with the expected answer, as a counterexample; None when all agree.

    `expected` holds the reference's answers, computed before the check (the reference may use
    functions the check refuses to the learner). With float64=True the result must be float64 and
    right to float64 precision; a dtype or a precision that is the only problem is said in words
    ("returned float32 probabilities; float64 is asked", "close, but not to float64 precision").
    """
    for args, answer in zip(cases, expected, strict=True):
        got, error = attempt(fn, args, noun)
        if error is not None:
            return error
        dtype = dtype_of(got)
        wrong_dtype = float64 and dtype is not None and dtype != "float64"
        where = f"for input {describe(args, noun)}"
        if not close(got, answer, "float64" if float64 else "loose"):
            shown_answer, shown_got, gap = show_difference(got, answer)
            note = ""
            shape = np.shape(got) if dtype is not None else None
            if shape is not None and shape != np.shape(answer):
                note = (
                    f" (an array of shape {shape}: the result keeps the input's shape {np.shape(answer)},"
                    " one value per token, even for a vocabulary of one)"
                )
            elif float64 and not wrong_dtype and close(got, answer, "loose"):
                note = (
                    " (close, but not to float64 precision, as float32 arithmetic gives: compute in float64, as asked)"
                )
            lead = f"it returned {dtype} {what}; float64 is asked. And " if wrong_dtype else ""
            return f"{lead}{where} expected {shown_answer}, got {shown_got}{gap}{note}"
        if wrong_dtype:
            return f"{where} it returned {dtype} {what}; float64 is asked (the values are right, only the dtype is not)"
    return None


def same_function(value, original) -> bool:
    """value is the package's function, or a copy of its code (the notebook defines the same functions)."""
    if value is original:
        return True
    code, reference = getattr(value, "__code__", None), original.__code__
    return code is not None and (code.co_code, code.co_names) == (reference.co_code, reference.co_names)


@contextmanager
def refusing(fn, names: tuple[str, ...], modules: tuple[ModuleType, ...]):
    """While checking, the package's functions `names` raise when called: fn must not delegate to them.

    They are replaced in `modules` (e.g. specdec) and, in fn's own namespace (the notebook's), every
    name bound to one of them or to a function with the same code (the notebook's own copy, an alias
    such as `from specdec import softmax as sm`); everything is restored afterwards.
    """
    originals = {name: getattr(specdec.logits, name) for name in names}
    listed = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    spaces = [getattr(fn, "__globals__", {})] + [vars(module) for module in modules]
    saved = []
    for space in spaces:
        for key, value in list(space.items()):
            for name, original in originals.items():
                if callable(value) and same_function(value, original):
                    saved.append((space, key, name, value))
                    break

    def refusal(name):
        def refuse(*args, **kwargs):
            raise RuntimeError(
                f"it calls {name} from specdec; this exercise asks for numpy, without the package's {listed}"
            )

        return refuse

    with replaced((space, key, refusal(name)) for space, key, name, _ in saved):
        yield


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
    with refusing(fn, ("softmax", "log_softmax", "one_hot_argmax"), (specdec, specdec.logits)):
        failure = first_wrong(fn, STABLE_SOFTMAX_CASES, expected, what="probabilities", float64=True)
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
    with refusing(fn, ("log_softmax",), (specdec, specdec.logits)):
        failure = first_wrong(fn, LOG_SOFTMAX_CASES, expected, what="log-probabilities", float64=True)
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
    refused = ("softmax", "log_softmax", "one_hot_argmax", "check_logits", "check_temperature")
    with refusing(fn, refused, (specdec, specdec.logits)):
        failure = first_wrong(fn, FIXED_SOFTMAX_VALID, expected, what="probabilities", float64=True)
        if failure is None:
            failure = first_not_refused(copying(fn))
    return verdict("fixed_softmax", failure, n_cases)


def first_not_refused(checked) -> str | None:
    """The first invalid case for which fn does not raise ValueError, said in words; None if it refuses them all."""
    for args, what in FIXED_SOFTMAX_INVALID:
        try:
            got = checked(*args)
        except ValueError:
            continue
        except NotImplementedError:
            return NOT_ATTEMPTED
        except Exception as error:  # the learner's code may fail in any way; report it
            problem = f"raised {type(error).__name__}: {error}"
        else:
            problem = f"returned {show(got)}"
        return f"for input {describe(args)} ({what}) expected a ValueError, but it {problem}"
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
    failure = first_wrong(as_array(fn), ENTROPY_CASES, expected, what="entropies", float64=False, noun="probabilities")
    return verdict("entropy_bits", failure, len(ENTROPY_CASES))
