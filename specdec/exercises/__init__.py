"""Automatic checkers for the course exercises (support code).

Each notebook's checkers live in `specdec.exercises.exNN`. A checker takes the learner's
function, runs it on a fixed list of cases, prints "✓ ..." when every case is right, or
"✗ ..." with the first concrete counterexample (input, expected, got), and returns a bool,
so tests can assert that the reference solutions pass and deliberately wrong answers fail.
"""

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import numpy as np


def show(value) -> str:
    """A short, stable text for a value in a counterexample."""
    with np.printoptions(precision=6, suppress=True, threshold=20):
        if isinstance(value, tuple):
            return "(" + ", ".join(show(v) for v in value) + ")"
        return repr(value) if not isinstance(value, np.ndarray) else np.array2string(value, separator=", ")


def verdict(name: str, failure: str | None, n_cases: int) -> bool:
    """Print the checker's answer and return True when there was no failure."""
    if failure is None:
        print(f"✓ {name}: all {n_cases} checks passed")
        return True
    print(f"✗ {name}: {failure}")
    return False


def call(fn: Callable, args: tuple):
    """Call the learner's function; return (result, None) or (None, a message saying what went wrong)."""
    try:
        return fn(*args), None
    except NotImplementedError:
        return None, "not attempted yet: replace `raise NotImplementedError` with your code and run the cell again"
    except Exception as error:  # the learner's code may fail in any way; report it as a counterexample
        return None, f"raised {type(error).__name__}: {error} for input {show(args)}"


def check_against(
    name: str,
    fn: Callable,
    reference: Callable,
    cases: Iterable[tuple],
    same: Callable = lambda got, expected: np.array_equal(np.asarray(got), np.asarray(expected)),
) -> bool:
    """Compare fn(*case) with reference(*case) on every case; report the first disagreement."""
    cases = list(cases)
    for args in cases:
        got, error = call(fn, args)
        if error is not None:
            return verdict(name, error, len(cases))
        expected = reference(*args)
        if not same(got, expected):
            return verdict(name, f"for input {show(args)} expected {show(expected)}, got {show(got)}", len(cases))
    return verdict(name, None, len(cases))


def check_property(name: str, fn: Callable, cases: Iterable[tuple], prop: Callable) -> bool:
    """Run fn(*case) on every case; prop(args, result) returns None when fine, else what is wrong."""
    cases = list(cases)
    for args in cases:
        got, error = call(fn, args)
        if error is None:
            problem = prop(args, got)
            error = None if problem is None else f"for input {show(args)} got {show(got)}: {problem}"
        if error is not None:
            return verdict(name, error, len(cases))
    return verdict(name, None, len(cases))


def refusal(name: str, used: list[str]) -> Callable:
    """A stand-in for the reference `name`: it records the call in `used`, then refuses it."""

    def refuse(*args, **kwargs):
        used.append(name)
        raise RuntimeError(f"{name} is the reference this exercise asks you to write yourself")

    return refuse


@contextmanager
def replaced(slots: Iterable[tuple[dict, str, object]]) -> Iterator[None]:
    """Each (namespace, key, stand-in) holds the stand-in while the block runs; the originals come back after.

    The originals are read before anything is replaced, so a key listed twice is still restored to
    what it held before the block.
    """
    slots = list(slots)
    originals = [(space, key, space[key]) for space, key, _ in slots]
    for space, key, stand_in in slots:
        space[key] = stand_in
    try:
        yield
    finally:
        for space, key, value in originals:
            space[key] = value


@contextmanager
def refusing_in(spaces: list[dict], names: Iterable[str]) -> Iterator[list[str]]:
    """While a checker runs, each of `names` found in a namespace of `spaces` is a `refusal`, then restored.

    spaces: module dictionaries (vars(module)) and the learner's function's own globals (the
    notebook's). Yields the list of the names the learner's code called (empty: it delegated nothing).
    """
    used: list[str] = []
    with replaced((space, name, refusal(name, used)) for space in spaces for name in names if name in space):
        yield used
