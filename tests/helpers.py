"""Helpers shared by the exercise tests."""

import importlib.util
from pathlib import Path

import numpy as np

import specdec
from specdec import SamplingParams

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


def load_solution(name: str):
    """Import solutions/<name>.py by path (solutions/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, SOLUTIONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def composed(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """The pipeline written the obvious way: each filter on the previous filter's output."""
    if params.temperature == 0:
        return specdec.softmax(logits, 0)
    x = (logits - logits.max(axis=-1, keepdims=True)) / params.temperature
    if params.top_k is not None:
        x = specdec.top_k_filter(x, params.top_k)
    if params.top_p < 1:
        x = specdec.top_p_filter(x, params.top_p)
    if params.min_p > 0:
        x = specdec.min_p_filter(x, params.min_p)
    return specdec.softmax(x)
