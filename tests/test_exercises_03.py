"""Notebook 03's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from specdec.exercises import ex03

SOLUTION_PATH = Path(__file__).resolve().parent.parent / "solutions" / "ex03_top_k.py"
spec = importlib.util.spec_from_file_location("ex03_top_k", SOLUTION_PATH)
solution = importlib.util.module_from_spec(spec)
spec.loader.exec_module(solution)


def stub(*args):
    raise NotImplementedError


# --- kth_largest_value -------------------------------------------------------------------


def kth_smallest(x, k):  # partitions at k - 1: the k-th *smallest*
    return np.partition(x, k - 1, axis=-1)[..., k - 1 : k]


def kth_without_keepdims(x, k):  # right value, but shape (...,) does not broadcast against (..., V)
    return np.partition(x, -k, axis=-1)[..., -k]


def kth_distinct(x, k):  # the k-th largest *distinct* value: wrong as soon as there are ties
    return np.apply_along_axis(lambda row: np.unique(row)[-k], -1, np.asarray(x))[..., None]


def kth_ascending_slice(x, k):  # sorts ascending, then reads position k - 1 as if descending
    return np.sort(x, axis=-1)[..., k - 1 : k]


def test_kth_largest_solution_passes():
    assert ex03.check_kth_largest(solution.kth_largest_value)


@pytest.mark.parametrize("wrong", [stub, kth_smallest, kth_without_keepdims, kth_distinct, kth_ascending_slice])
def test_kth_largest_rejects(wrong, capsys):
    assert not ex03.check_kth_largest(wrong)
    assert "✗" in capsys.readouterr().out


# --- top_k_keep_ties ---------------------------------------------------------------------


def exactly_k(logits, k):  # keeps exactly k tokens: the tie is broken by token order
    x = np.asarray(logits, dtype=np.float64)
    if k >= x.shape[-1]:
        return x.copy()
    drop = np.argsort(-x, axis=-1, kind="stable")[..., k:]
    out = x.copy()
    np.put_along_axis(out, drop, -np.inf, axis=-1)
    return out


def strict_greater(logits, k):  # x > k-th largest: drops the k-th itself and its ties
    x = np.asarray(logits, dtype=np.float64)
    if k >= x.shape[-1]:
        return x.copy()
    return np.where(x > solution.kth_largest_value(x, k), x, -np.inf)


def in_place(logits, k):  # right values, but writes -inf into the caller's array
    x = np.asarray(logits)
    if k < x.shape[-1] and np.issubdtype(x.dtype, np.floating):
        x[x < solution.kth_largest_value(x, k)] = -np.inf
    return x


def crashes_when_k_exceeds_vocab(logits, k):  # np.partition with kth = V - k < 0 goes out of range
    x = np.asarray(logits, dtype=np.float64)
    j = x.shape[-1] - k
    return np.where(x >= np.partition(x, j, axis=-1)[..., j : j + 1], x, -np.inf)


def global_threshold(logits, k):  # one threshold for the whole batch instead of one per row
    x = np.asarray(logits, dtype=np.float64)
    if k >= x.shape[-1]:
        return x.copy()
    return np.where(x >= np.sort(x.ravel())[-k], x, -np.inf)


def copy_keeps_dtype(logits, k):  # a copy in the input's dtype: integer logits cannot hold -inf
    out = np.array(logits, copy=True)
    if k < out.shape[-1]:
        out[out < solution.kth_largest_value(out, k)] = -np.inf
    return out


def test_top_k_solution_passes():
    assert ex03.check_top_k_filter(solution.top_k_keep_ties)


@pytest.mark.parametrize(
    "wrong",
    [stub, exactly_k, strict_greater, in_place, crashes_when_k_exceeds_vocab, global_threshold, copy_keeps_dtype],
)
def test_top_k_rejects(wrong, capsys):
    assert not ex03.check_top_k_filter(wrong)
    assert "✗" in capsys.readouterr().out


def test_top_k_solution_matches_package(rng):
    import specdec

    for shape, k in [((7,), 3), ((4, 20), 5), ((2, 3, 9), 9), ((5, 11), 30)]:
        logits = rng.normal(size=shape).round(1)
        assert np.array_equal(solution.top_k_keep_ties(logits, k), specdec.top_k_filter(logits, k))


# --- top_k_result_ok ---------------------------------------------------------------------


def blog_test(logits, k, filtered):  # the seed blog: "exactly k finite values"
    return bool(np.isfinite(filtered).sum() == k)


def blog_prose(logits, k, filtered):  # the blog's prose: "never fewer than k finite logits"
    return bool(np.isfinite(filtered).sum() >= k)


def count_only(logits, k, filtered):  # the right count, but never looks at which tokens or values
    x = np.asarray(logits, dtype=np.float64)
    expected = (x >= ex03.reference_kth_largest(x, min(k, x.shape[-1]))) & (x > -np.inf)
    return bool(np.shape(filtered) == x.shape and np.isfinite(filtered).sum() == expected.sum())


def accepts_everything(logits, k, filtered):
    return True


def test_top_k_test_solution_passes():
    assert ex03.check_top_k_test(solution.top_k_result_ok)


@pytest.mark.parametrize("wrong", [stub, blog_test, blog_prose, count_only, accepts_everything])
def test_top_k_test_rejects(wrong, capsys):
    assert not ex03.check_top_k_test(wrong)
    assert "✗" in capsys.readouterr().out


def test_top_k_test_solution_agrees_with_package(rng):
    """The property test accepts the package's output on random (tie-rich) inputs and rejects a perturbation."""
    import specdec

    for _ in range(50):
        logits = rng.normal(size=(3, 12)).round(1)
        k = int(rng.integers(1, 14))
        filtered = specdec.top_k_filter(logits, k)
        assert solution.top_k_result_ok(logits, k, filtered)
        if k < 12:
            assert not solution.top_k_result_ok(logits, k, exactly_k(logits, k)) or np.array_equal(
                exactly_k(logits, k), filtered
            )


def kth_by_sorting(x, k):  # slower, but correct: the checker must not insist on np.partition
    return np.sort(x, axis=-1)[..., -k:][..., :1]


def test_other_correct_answers_pass_too():
    assert ex03.check_kth_largest(kth_by_sorting)
    assert ex03.check_top_k_filter(
        lambda logits, k: np.where(
            np.asarray(logits) >= kth_by_sorting(logits, min(k, np.shape(logits)[-1])), logits, -np.inf
        )
    )
