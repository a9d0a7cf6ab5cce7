"""Helpers shared by the exercise tests."""

import importlib.util
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


def load_solution(name: str):
    """Import solutions/<name>.py by path (solutions/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, SOLUTIONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
