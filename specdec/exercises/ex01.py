"""Checkers for the exercises in notebooks/01_logits_softmax_temperature.ipynb (support code)."""

from contextlib import contextmanager
from types import ModuleType

import numpy as np

import specdec
import specdec.logits
from specdec.exercises import call, check_against, show, verdict
from specdec.logits import log_softmax, softmax

INF = np.inf
NAN = np.nan


def close(got, expected) -> bool:
    """Same shape and the same numbers to about 6 significant digits (float32 arithmetic is fine)."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return got.shape == np.shape(expected) and bool(np.allclose(got, expected, rtol=1e-6, atol=1e-9))


def describe(args: tuple) -> str:
    """show(args), plus the dtype of any array that is not float64 (float16 overflows where float64 does not)."""
    dtypes = [str(a.dtype) for a in args if isinstance(a, np.ndarray) and a.dtype != np.float64]
    return show(args) + (f" with {', '.join(dtypes)} logits" if dtypes else "")


def as_array(fn):
    """fn with its result passed through np.asarray, so a 0-d answer prints as 2.0, not np.float64(2.0)."""
    return lambda *args: np.asarray(fn(*args))


def copying(fn):
    """Call fn on copies of the case's arrays, so a function that edits its input cannot change the case."""
    return lambda *args: fn(*(np.copy(a) if isinstance(a, np.ndarray) else a for a in args))


@contextmanager
def refusing(fn, names: tuple[str, ...], modules: tuple[ModuleType, ...]):
    """While checking, the reference functions `names` raise when called: fn must not delegate to them.

    They are replaced in fn's own namespace (the notebook's) and in `modules` (e.g. specdec), then restored.
    """
    spaces = [getattr(fn, "__globals__", {})] + [vars(module) for module in modules]
    saved = [(space, name, space[name]) for space in spaces for name in names if name in space]

    def refusal(name):
        def refuse(*args, **kwargs):
            raise RuntimeError(f"it calls {name}, the reference this exercise asks you to write yourself")

        return refuse

    for space, name, _ in saved:
        space[name] = refusal(name)
    try:
        yield
    finally:
        for space, name, value in saved:
            space[name] = value


# --- Exercise 1: a numerically stable softmax with temperature --------------------------------

STABLE_SOFTMAX_CASES = [
    (np.array([2.0, 1.0, 0.1]), 1.0),  # an ordinary row
    (np.array([1000.0, 999.0, 998.0]), 1.0),  # exp(1000) = inf: subtract the maximum first
    (np.array([-1000.0, -1001.0, -1002.0]), 1.0),  # exp(-1000) = 0: 0 / 0 without the shift
    (np.array([0.0, -INF, 1.0, -INF]), 0.5),  # -inf means probability exactly 0
    (np.array([3.0, 1.0, 2.0]), 0.1),  # low temperature: sharper
    (np.array([3.0, 1.0, 2.0]), 1e4),  # high temperature: nearly uniform
    (np.array([1.0, 2.0]), 1e-308),  # divide first and 2 / 1e-308 = inf, then inf - inf = NaN
    (np.array([2.0, 5.0, 5.0, 1.0]), 0.0),  # T = 0 is greedy; a tie goes to the lowest index
    (np.array([-INF, 4.0, -INF]), 0),  # greedy next to -inf, integer temperature
    (np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0], [5.0, 5.0, -INF]]), 0.7),  # a batch: each row alone
    (np.array([[1.0, 3.0, 3.0], [7.0, 7.0, 7.0]]), 0.0),  # greedy on a batch, ties in every row
    (np.array([[[0.5, 0.25]], [[100.0, 300.0]]], dtype=np.float32), 2),  # (2, 1, 2) float32 logits
]


def check_stable_softmax(fn) -> bool:
    """fn(logits, temperature) must equal softmax(logits / T) over the last axis, greedy at T = 0."""
    return check_against("stable_softmax", copying(fn), softmax, STABLE_SOFTMAX_CASES, same=close)


# --- Exercise 2: log-softmax without the log of zero ------------------------------------------

LOG_SOFTMAX_CASES = [
    (np.array([2.0, 1.0, 0.1]),),  # an ordinary row
    (np.array([0.0, -800.0, -1000.0]),),  # np.log(softmax(x)) gives -inf here; the answer is -800, -1000
    (np.array([1000.0, 999.0, 998.0]),),  # exp(1000) = inf: subtract the maximum first
    (np.array([0.0, -INF, 3.0]),),  # -inf stays -inf, the others are finite
    (np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0], [5.0, 5.0, -INF]]),),  # a batch: each row alone
    (np.array([[[0.5, 0.25]], [[100.0, 800.0]]], dtype=np.float32),),  # (2, 1, 2) float32 logits
]


def check_log_softmax(fn) -> bool:
    """fn(logits) must equal log(softmax(logits)) over the last axis, finite for every finite logit."""
    return check_against("stable_log_softmax", copying(fn), log_softmax, LOG_SOFTMAX_CASES, same=close)


# --- Exercise 3: fix the seed blog post's softmax ---------------------------------------------

FIXED_SOFTMAX_VALID = [
    (np.array([2.0, 1.0, 0.1]), 1.0),
    (np.array([1000.0, 999.0, 998.0]), 1.0),
    (np.array([0.0, -INF, 1.0]), 1.0),  # -inf is allowed: it is how a filter says "never"
    (np.array([70.0, 69.0], dtype=np.float16), 0.001),  # float16: 70 / 0.001 = 70000 > 65504 = inf
    (np.array([1.0, 2.0]), 1e-308),  # float64: 2 / 1e-308 = inf
    (np.array([2.0, 5.0, 5.0, 1.0]), 0.0),  # greedy, tie to the lowest index
    (np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]), 1.0),  # a batch: each row sums to 1, not the whole batch
]

FIXED_SOFTMAX_INVALID = [
    ((np.array([1.0, 2.0]), -1.0), "a negative temperature"),
    ((np.array([1.0, 2.0]), NAN), "a NaN temperature"),
    ((np.array([1.0, 2.0]), INF), "an infinite temperature"),
    ((np.array([1.0, NAN, 2.0]), 1.0), "a NaN logit"),
    ((np.array([1.0, INF]), 1.0), "a +inf logit"),
    ((np.array([-INF, -INF]), 1.0), "a row that is entirely -inf"),
    ((np.array([[0.0, 1.0], [-INF, -INF]]), 1.0), "a batch with one row entirely -inf"),
]


def check_fixed_softmax(fn) -> bool:
    """fn(x, temperature) must compute the right probabilities and raise ValueError on bad input."""
    name = "fixed_softmax"
    n_cases = len(FIXED_SOFTMAX_VALID) + len(FIXED_SOFTMAX_INVALID)
    with refusing(fn, ("softmax", "log_softmax"), (specdec, specdec.logits)):
        return fixed_softmax_verdict(copying(fn), name, n_cases)


def fixed_softmax_verdict(checked, name: str, n_cases: int) -> bool:
    for args in FIXED_SOFTMAX_VALID:
        got, error = call(checked, args)
        if error is not None:
            return verdict(name, error, n_cases)
        expected = softmax(*args)
        if not close(got, expected):
            return verdict(name, f"for input {describe(args)} expected {show(expected)}, got {show(got)}", n_cases)
    for args, what in FIXED_SOFTMAX_INVALID:
        try:
            got = checked(*args)
        except ValueError:
            continue
        except NotImplementedError:
            return verdict(name, "not attempted yet: replace `raise NotImplementedError` with your code", n_cases)
        except Exception as error:  # the learner's code may fail in any way; report it
            problem = f"raised {type(error).__name__}: {error}"
        else:
            problem = f"returned {show(got)}"
        return verdict(name, f"for input {describe(args)} ({what}) expected a ValueError, but it {problem}", n_cases)
    return verdict(name, None, n_cases)


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
    (np.full(1024, 1 / 1024),),  # uniform over 1024: 10 bits (in nats it would be 6.93)
    (np.array([0.5, 0.25, 0.25], dtype=np.float32),),  # float32 probabilities: 1.5 bits
    (np.array([[0.5, 0.5], [1.0, 0.0], [0.9, 0.1]]),),  # a batch: one entropy per row, shape (3,)
    (np.array([[[0.25, 0.75, 0.0]], [[1.0, 0.0, 0.0]]]),),  # (2, 1, 3) -> (2, 1)
]


def check_entropy_bits(fn) -> bool:
    """fn(probs) must return the entropy in bits of each row (last axis), treating 0 * log 0 as 0."""
    reference = as_array(reference_entropy_bits)
    return check_against("entropy_bits", as_array(copying(fn)), reference, ENTROPY_CASES, same=close)
