"""Helpers shared by the tests: solutions by path, copies of a reference, checker messages, prose, fixed uniforms."""

import importlib.util
import json
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
sys.path.insert(0, str(ROOT / "tools"))
import course_stats  # noqa: E402

from checkers import FixedUniform  # noqa: E402, F401 (one definition, course-side: the tests' edge draws use it too)


def load_solution(name: str):
    """Import solutions/<name>.py by path (solutions/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, SOLUTIONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_of(fn):
    """A new function with fn's code: what a learner who retyped the reference would pass.

    A checker refuses the reference itself (`you passed the package's block_weights itself`); a copy shows
    that the reference's *values* pass every check.
    """
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


# --- a checker's message: "✗ name: <diagnosis> (for <the input>)" ------------------------------------


def diagnosis(out: str) -> str:
    """The checker's message without its '✗ name: ' prefix."""
    return out.split(": ", 1)[1]


def words_before_the_input(out: str) -> str:
    """The checker's words before the input it names: the diagnosis comes first."""
    return out.split(" (for ", 1)[0]


def the_input(out: str) -> str:
    """What the checker's message names after its words: the input it ran, and what follows."""
    return out.split(" (for ", 1)[1]


# --- a notebook's markdown ----------------------------------------------------------------------


def markdown_cells(notebook: str | Path) -> list[str]:
    """The source of each markdown cell of a notebook: a path, or a file name under notebooks/."""
    path = NOTEBOOKS / notebook if isinstance(notebook, str) else notebook
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [course_stats.cell_source(cell) for cell in cells if cell["cell_type"] == "markdown"]


def notebook_prose(notebook: str | Path) -> str:
    """A notebook's markdown as one line: every run of whitespace, line breaks included, one space."""
    return " ".join(" ".join(markdown_cells(notebook)).split())
