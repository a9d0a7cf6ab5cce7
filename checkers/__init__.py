"""Automatic checkers for the course's exercises: course-side support code, not part of `specdec`.

Each notebook's checkers live in `checkers.exNN`. A checker takes the learner's function, runs it
on a fixed list of cases, prints "✓ ..." when every case is right, or "✗ ..." with the first
concrete counterexample, and returns a bool, so tests can assert that the reference solutions pass
and deliberately wrong answers fail.

One policy for every checker, applied by `attempt` and `result_problem` below; the diagnosis
always comes first, the arrays after:

- a function that changes an input array in place is refused, even when its result is right;
- a list where an array is asked, or an array of the wrong dtype, is refused by name;
- randomness comes from the `rng` argument only: a function that draws from numpy's global state
  is refused, and so is one that never uses the `rng` it is given (`must_draw`, `Attempt.rng_used`);
  a checker whose exercise draws checks the rest itself (a generator of its own, for instance);
- a function that calls the reference the exercise asks the learner to write is refused. Nothing
  is replaced to find out: a profile hook (sys.setprofile) watches the calls while the learner's
  function runs, so `specdec` and numpy stay exactly as they are.
"""

import copy
import inspect
import random
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np


class FixedUniform(np.random.Generator):
    """A Generator whose uniforms are all `u`: drives a draw or an acceptance test to its edge on purpose."""

    def __init__(self, u: float):
        super().__init__(np.random.PCG64(0))
        self.u = u

    def random(self, size=None, dtype=np.float64, out=None):
        return self.u if size is None else np.full(size, self.u)


NOT_ATTEMPTED = "not attempted yet: replace `raise NotImplementedError` with your code and run the cell again"


def show(value, digits: int = 6) -> str:
    """A value for a message, on one line: an array's rows side by side, no padding, long rows cut short
    (at most 20 entries: the first and last three of each axis). An array's floats get at most `digits`
    decimal places (positional), or, below 1e-4 or from 1e16 on, at most `digits` digits after the first
    significant one (scientific), fewer where fewer print the same float. A tuple is shown item by item;
    any other value as its repr prints it."""
    if isinstance(value, tuple):
        return "(" + ", ".join(show(v, digits) for v in value) + ")"
    if not isinstance(value, np.ndarray):
        return " ".join(repr(value).split())

    def number(v) -> str:
        if not np.isfinite(v):
            return repr(float(v))
        if v != 0 and not 1e-4 <= abs(float(v)) < 1e16:  # 1e-12 must not print as 0., nor 1e300 as 301 digits
            return np.format_float_scientific(v, precision=digits, unique=True, trim=".")
        return np.format_float_positional(v, precision=digits, unique=True, trim=".")

    text = np.array2string(
        value,
        separator=", ",
        threshold=20,
        edgeitems=3,
        max_line_width=10**6,
        formatter={"float_kind": number, "bool": str},
    )
    return " ".join(text.split())


def verdict(name: str, failure: str | None, n_cases: int) -> bool:
    """Print the checker's answer and return True when there was no failure."""
    if failure is None:
        print(f"✓ {name}: all {n_cases} checks passed")
        return True
    print(f"✗ {name}: {failure}")
    return False


# --- watching calls: how a checker refuses the reference, without replacing anything ---------------

# Where numpy defines the Python dispatchers of its C functions (np.lexsort, np.concatenate, ...).
NUMPY_DISPATCHERS = str(Path("numpy", "_core", "multiarray.py"))


def code_keys(obj) -> set:
    """What a profile hook sees when `obj` is called: its code object, or its C function's qualified name.

    Handles plain functions, methods, properties (their getter), numpy's dispatchers (`np.sort` runs a
    Python implementation) and builtins (`sorted`, `ndarray.sort`: a 'c_call' event with that name).
    """
    if isinstance(obj, property):
        return code_keys(obj.fget)
    if hasattr(obj, "_implementation"):  # numpy's array-function dispatchers
        if hasattr(obj._implementation, "__code__"):
            return code_keys(obj._implementation)
        return {("dispatch", obj.__name__)}  # a C function: its Python dispatcher runs first (see the hook)
    function = inspect.unwrap(getattr(obj, "__func__", obj)) if callable(obj) else None
    if function is None:
        return set()
    if hasattr(function, "__code__"):
        return {function.__code__}
    qualname = getattr(function, "__qualname__", None)
    return {("c", qualname)} if qualname else set()


@contextmanager
def watching(watched: Mapping[str, Iterable], exclude=None, quiet_callers: tuple[str, ...] = ()) -> Iterator[list[str]]:
    """While the block runs, every call of a watched function is recorded by name; nothing is replaced.

    watched: {name shown to the learner: the objects that count as that function}. `exclude` (the
    learner's own function) never counts, even when it has a watched name. A call made from a file
    under one of `quiet_callers` (numpy's own code, which sorts inside np.unique) is not the
    learner's and does not count. Yields the list of names called, in order (empty when nothing
    watched was called). The previous profile hook comes back afterwards.
    """
    names: dict = {}
    for name, objects in watched.items():
        for obj in objects:
            for key in code_keys(obj):
                names.setdefault(key, name)
    for key in code_keys(exclude) if exclude is not None else ():
        names.pop(key, None)
    used: list[str] = []

    def hook(frame, event, arg):
        if event == "call":
            code = frame.f_code
            name, caller = names.get(code), frame.f_back
            if name is None and code.co_filename.endswith(NUMPY_DISPATCHERS):  # np.lexsort's dispatcher
                name = names.get(("dispatch", code.co_name))
        elif event == "c_call":
            name, caller = names.get(("c", getattr(arg, "__qualname__", None))), frame
        else:
            return
        if name is not None and not (caller is not None and caller.f_code.co_filename.startswith(quiet_callers)):
            used.append(name)

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield used
    finally:
        sys.setprofile(previous)


def namesakes(fn, names: Iterable[str], *modules) -> dict[str, list]:
    """{name: the objects that count as the function `name`}, for `watching`.

    Found: `name` in each module and in fn's own namespace (the notebook's, which defines its own
    copies of the package's functions in its export cells), and any function in that namespace whose
    own name is `name`, whatever it is bound to (`f = nucleus_threshold_full_sort`). An alias of a
    package function is the same object, so `from specdec import softmax as sm` is covered too.
    """
    learner = getattr(fn, "__globals__", None) or {}
    spaces = [vars(module) for module in modules] + [learner]
    found = {name: [space[name] for space in spaces if callable(space.get(name))] for name in names}
    for value in list(learner.values()):
        if callable(value) and getattr(value, "__name__", None) in found:
            found[value.__name__].append(value)
    return found


# --- calling the learner's function under the policy ------------------------------------------------


@dataclass
class Attempt:
    """One call of the learner's function: its result, or what went wrong (said in words, first)."""

    result: object = None
    failure: str | None = None
    inputs: tuple = ()  # the copies the function was given (to see whether it returned one of them)
    rng_used: bool | None = None  # whether it drew from the `rng` it was given (None: it was given none)


UNUSED_RNG = (
    "your function never used the `rng` it was given: all its randomness must come from that generator (not from a"
    " generator of its own), so that a seed reproduces the result"
)


def argument_names(fn, n: int) -> list[str]:
    """The learner's own names for the first n arguments (`logits`, `probs`), for messages."""
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values() if p.kind != p.VAR_KEYWORD]
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) and not names[i].startswith("*") else f"argument {i + 1}" for i in range(n)]


def copied(args: tuple) -> tuple:
    """Copies of the case's arrays and lists; other arguments (models, generators) are passed as they are."""
    return tuple(copy.deepcopy(arg) if isinstance(arg, (np.ndarray, list)) else arg for arg in args)


def same(a, b) -> bool:
    """Equal results, arrays compared by value (NaN equal to NaN), tuples and lists item by item."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b, equal_nan=True))
        except TypeError:
            return False
    try:
        return bool(a == b) or (a != a and b != b)  # NaN == NaN for results too
    except (TypeError, ValueError):
        return False


def global_random_state() -> tuple:
    """numpy's legacy global state and Python's `random` state, to see whether a call drew from them."""
    _, keys, position, *_ = np.random.get_state()  # noqa: NPY002 (read, to see whether a call used it)
    return keys.tobytes(), position, random.getstate()


def attempt(
    fn,
    args: tuple,
    *,
    refused: Mapping[str, Iterable] | None = None,
    why: str | Callable[[str], str] = "the function this exercise asks you to write yourself",
    must_draw: bool = False,
    in_place: str = "compute into a new array (x = x - m, not x -= m; np.where(...), not x[mask] = ...)",
    quiet_callers: tuple[str, ...] = (),
) -> Attempt:
    """Call fn(*args) on copies of the arguments and apply the policy; return the result or the failure.

    Checked, in this order: the package's refused function itself passed as fn, not attempted, a
    call to a refused function (`refused`, see `watching`; the message says it calls it and `why`, a
    sentence or a function of the name called), an exception, an input changed in place, a draw
    from numpy's global random state. With an `rng` among the arguments, `must_draw` requires it to
    have been used (the result's `rng_used` says whether it was, for the checker's own checks, such
    as a generator of the function's own). `in_place` says how to avoid the in-place change this
    exercise invites; `quiet_callers`: see `watching`.
    """
    # The package's reference itself, not a function that calls it (a learner's own function may
    # share the reference's name: only the package's object is refused this way).
    passed = next((name for name, objects in (refused or {}).items() if any(fn is obj for obj in objects)), None)
    if passed is not None and getattr(fn, "__module__", "").startswith("specdec"):
        reason = why(passed) if callable(why) else why
        return Attempt(failure=f"you passed the package's {passed} itself: {reason}")
    inputs = copied(args)
    generators = [arg for arg in args if isinstance(arg, np.random.Generator)]
    states = [rng.bit_generator.state for rng in generators]
    before = global_random_state()
    with watching(refused or {}, exclude=fn, quiet_callers=quiet_callers) as used:
        try:
            result = fn(*inputs)
        except NotImplementedError:
            return Attempt(failure=NOT_ATTEMPTED)
        except Exception as error:  # the learner's code may fail in any way; report it with the input
            error_text = f"raised {type(error).__name__}: {error} for input {show(args)}"
        else:
            error_text = None
    if used:
        reason = why(used[0]) if callable(why) else why
        return Attempt(failure=f"your function calls {used[0]}: {reason}")
    if error_text is not None:
        return Attempt(failure=error_text)
    names = argument_names(fn, len(args))
    for name, original, after in zip(names, args, inputs, strict=True):
        if isinstance(original, (np.ndarray, list)) and not same(original, after):
            was, now = show(original), show(np.asarray(after) if isinstance(after, list) else after)
            return Attempt(
                failure=f"your function changed its input `{name}` in place: it was {was} and is now {now}"
                f"{last_digits(original, after) if was == now else ''}. The caller still needs it: {in_place}"
            )
    if global_random_state() != before:
        return Attempt(
            failure="your function draws from numpy's global random state (np.random.random, np.random.choice,"
            " ...) or Python's `random`: draw only from the `rng` it is given (rng.random(), rng.choice(...))"
        )
    rng_used = any(r.bit_generator.state != s for r, s in zip(generators, states, strict=True)) if generators else None
    if must_draw and rng_used is False:
        return Attempt(failure=UNUSED_RNG)
    return Attempt(result=result, inputs=inputs, rng_used=rng_used)


def last_digits(original, after) -> str:
    """Where two arrays that print alike differ: the first changed entry, with every digit."""
    a, b = np.asarray(original).reshape(-1), np.asarray(after).reshape(-1)
    if a.shape != b.shape:
        return f" (its shape changed from {np.shape(original)} to {np.shape(after)})"
    changed = np.flatnonzero(~((a == b) | ((a != a) & (b != b))))  # NaN equals NaN here
    if not changed.size:
        return ""
    i = int(changed[0])
    return f" (entry {i} was {a[i].item()!r} and is now {b[i].item()!r}: a change in the last digits)"


def located(failure: str, where: str) -> str:
    """A failure with the input it happened on: the diagnosis first, the input (its arrays) after.

    An exception's text from `attempt` already names its input; `where` replaces it, so the input is
    never shown twice.
    """
    if failure == NOT_ATTEMPTED:
        return failure
    return f"{without_input(failure)} ({where})"


def without_input(failure: str) -> str:
    """An exception's text from `attempt` without the input it names (the checker names it, after the diagnosis)."""
    if failure.startswith("raised ") and " for input " in failure:
        return failure[: failure.rindex(" for input ")]
    return failure


def call(fn: Callable, args: tuple, **policy):
    """attempt() as a pair: (result, None), or (None, a message saying what went wrong)."""
    outcome = attempt(fn, args, **policy)
    return outcome.result, outcome.failure


def values_agree(got: np.ndarray, expected: np.ndarray) -> bool:
    """Same shape and the same values to about 6 digits (what a float32 answer can give)."""
    try:
        return got.shape == expected.shape and bool(np.allclose(got, expected, rtol=1e-5, atol=1e-7, equal_nan=True))
    except (TypeError, ValueError):
        return False


def narrower_float(value) -> str | None:
    """The dtype name ('float32', 'float16') when value is a numpy float or float array of fewer than 64 bits.

    None for anything else: float64, a Python float, an integer, a list (even of float32 numbers).
    """
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind == "f" and dtype.itemsize < 8:
        return dtype.name
    return None


def result_problem(got, expected, what: str = "the result", shape: bool = True) -> str | None:
    """What is wrong with the *kind* of result, said first: a list for an array, a dtype, a shape; else None.

    expected: the reference's answer. A list or tuple where it is an array, an array (or a scalar)
    of another dtype, or (with shape=True) another shape is named in words; the values are the
    checker's to compare (and the shape too, with shape=False, for a checker that explains shapes).
    """
    if not isinstance(expected, np.ndarray):
        return None
    if got is None:
        return f"your function returned None (is a `return` missing?) where a result ({what}) is asked"
    if expected.shape == () and isinstance(got, (bool, int, float)):
        got = np.asarray(got)  # a Python number for a single value: float is float64, int is int64
    if isinstance(got, (list, tuple)):
        return (
            f"your function returned a {type(got).__name__} where a numpy array is asked ({what}, dtype"
            f" {expected.dtype}, shape {expected.shape}): return an array, np.array(your_list), or keep the array numpy"
            " gives you"
        )
    if not isinstance(got, (np.ndarray, np.generic)):
        return f"your function returned {type(got).__name__} {show(got)} where a numpy array is asked ({what})"
    if got.dtype != expected.dtype:
        integers = got.dtype.kind in "biu" and expected.dtype.kind == "f"
        why = " (integers hold neither fractions nor -inf: a floating dtype is asked)" if integers else ""
        if not why and values_agree(got, expected):
            why = f" (the values are right to {got.dtype}'s precision: only the dtype is wrong)"
        return f"your function returned {got.dtype} {what} where {expected.dtype} is asked{why}"
    if shape and np.shape(got) != expected.shape:
        return f"your function returned {what} of shape {np.shape(got)} where shape {expected.shape} is asked"
    return None
