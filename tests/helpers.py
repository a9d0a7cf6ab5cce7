"""Helpers shared by the exercise tests."""

import importlib.util
import types
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


def load_solution(name: str):
    """Import solutions/<name>.py by path (solutions/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, SOLUTIONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_of(fn):
    """A new function with fn's code: what a learner who retyped the reference would pass.

    A checker refuses the reference itself (`you passed block_weights itself`); a copy shows that the
    reference's *values* pass every check.
    """
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy
