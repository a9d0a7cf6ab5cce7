"""The warm-up exercise in notebooks/00_welcome.ipynb: the solution passes its checker, wrong answers fail."""

import numpy as np
import pytest
from helpers import load_solution

from checkers.ex00 import check_normalise

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


def loops_over_the_first_axis(weights):  # right for (V,) and (B, V); a (B, T, V) block gets one sum per block
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 1:
        return weights / weights.sum()
    return np.array([row / row.sum() for row in weights])


def rounded_to_two_decimals(weights):  # right on short decimals, wrong on thirds
    weights = np.asarray(weights, dtype=np.float64)
    return np.round(weights / weights.sum(axis=-1, keepdims=True), 2)


def in_float32(weights):  # the right values, to float32 precision only
    weights = np.asarray(weights, dtype=np.float32)
    return weights / weights.sum(axis=-1, keepdims=True)


WRONG = [
    stub,
    whole_batch_sum,
    no_keepdims,
    divides_by_max,
    forgets_return,
    loops_over_the_first_axis,
    rounded_to_two_decimals,
    in_float32,
]


@pytest.mark.parametrize("wrong", WRONG)
def test_wrong_answers_fail(wrong, capsys):
    assert not check_normalise(wrong)
    out = capsys.readouterr().out
    assert out.startswith("✗")
    if wrong is stub:
        assert "not attempted yet" in out


def test_the_messages_say_in_words_what_printed_numbers_hide(capsys):
    check_normalise(in_float32)
    assert "float64 is asked" in capsys.readouterr().out


def test_a_missing_keepdims_is_named_first(capsys):
    """Learner reads: `w / w.sum(axis=-1)` on the square first batch got only "the values differ"."""
    assert not check_normalise(no_keepdims)
    out = capsys.readouterr().out
    words = (
        "✗ normalise: row 0 sums to 0.625, not 1: a sum without keepdims=True has shape (2,), which numpy lines up"
        " with the last axis, so column j is divided by row j's sum"
    )
    assert out.startswith(words), out
    assert out.index("keepdims") < out.index("[[")  # the diagnosis first, the arrays after


def sums_with_a_new_axis_in_the_middle(weights):  # w.sum(axis=-1)[:, None]: right up to 2-D, not for (2, 2, 3)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 1:
        return weights / weights.sum()
    return weights / weights.sum(axis=-1)[:, None]


def test_a_broadcasting_error_points_at_keepdims(capsys):
    assert not check_normalise(sums_with_a_new_axis_in_the_middle)
    out = capsys.readouterr().out
    assert out.startswith("✗ normalise: a sum without keepdims=True has one value per row"), out
    assert "could not be broadcast" in out


def test_one_sum_for_the_whole_array_is_named_first(capsys):
    """The warm-up's wrong attempt: right for one row, wrong for a batch."""
    assert not check_normalise(whole_batch_sum)
    out = capsys.readouterr().out
    assert out.startswith(
        "✗ normalise: each row must sum to 1, not the whole array: row 0 sums to 0.333333; divide each row by its"
        " own sum"
    ), out
    assert out.index("each row must") < out.index("[[")  # the diagnosis first, the arrays after
    assert "keepdims" not in out and "axis=" not in out  # the notebook shows this message: it must not give the code
