"""The warm-up exercise in notebooks/00_welcome.ipynb: the solution passes its checker, wrong answers fail."""

import numpy as np
import pytest
from helpers import load_solution

from specdec.exercises.ex00 import check_normalise

solution = load_solution("ex00_warm_up")


def test_solution_passes(capsys):
    assert check_normalise(solution.normalise)
    assert capsys.readouterr().out.startswith("✓")


def stub(weights):
    raise NotImplementedError


def whole_batch_sum(weights):  # divides every row by the sum of the whole batch
    weights = np.asarray(weights, dtype=np.float64)
    return weights / weights.sum()


def no_keepdims(weights):  # (B, V) / (B,) broadcasts against the wrong axis
    weights = np.asarray(weights, dtype=np.float64)
    return weights / weights.sum(axis=-1)


def divides_by_max(weights):  # scales but does not normalise
    weights = np.asarray(weights, dtype=np.float64)
    return weights / weights.max(axis=-1, keepdims=True)


def forgets_return(weights):
    weights / np.sum(weights)


@pytest.mark.parametrize("wrong", [stub, whole_batch_sum, no_keepdims, divides_by_max, forgets_return])
def test_wrong_answers_fail(wrong, capsys):
    assert not check_normalise(wrong)
    out = capsys.readouterr().out
    assert out.startswith("✗")
    if wrong is stub:
        assert "not attempted yet" in out
