"""Notebook 04's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import specdec
from specdec.exercises import ex04

SOLUTION_PATH = Path(__file__).resolve().parent.parent / "solutions" / "ex04_top_p.py"
spec = importlib.util.spec_from_file_location("ex04_top_p", SOLUTION_PATH)
solution = importlib.util.module_from_spec(spec)
spec.loader.exec_module(solution)


def stub(*args):
    raise NotImplementedError


# --- nucleus_keep ------------------------------------------------------------------------


def sorted_rows(probs, dtype=np.float64):
    probs = np.asarray(probs, dtype=dtype)
    order = np.argsort(-probs, axis=-1, kind="stable")  # (..., V)
    return probs, order, np.take_along_axis(probs, order, axis=-1)


def keep_first(order, n):
    """Mask that keeps the first n positions of `order` in every row."""
    keep_sorted = np.arange(order.shape[-1]) < n  # (..., V)
    keep = np.zeros(order.shape, dtype=bool)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    return keep


def blog_rule(probs, p):  # keep while the running sum *including* the token is <= p
    probs, order, desc = sorted_rows(probs)
    n = (np.cumsum(desc, axis=-1) <= p).sum(axis=-1, keepdims=True)
    return keep_first(order, n)


def mass_above_at_most_p(probs, p):  # <= instead of <: one token too many at exact boundaries
    probs, order, desc = sorted_rows(probs)
    above = np.cumsum(desc, axis=-1) - desc
    threshold = np.take_along_axis(desc, (above <= p).sum(axis=-1, keepdims=True) - 1, axis=-1)
    return probs >= threshold


def first_n_positions(probs, p):  # the right count, but the first n in argsort order: ties split
    probs, order, desc = sorted_rows(probs)
    running = np.cumsum(desc, axis=-1)
    above = np.concatenate([np.zeros_like(running[..., :1]), running[..., :-1]], axis=-1)
    return keep_first(order, (above < p).sum(axis=-1, keepdims=True))


def in_float32(probs, p):  # the right rule, in float32
    return solution.nucleus_keep(np.asarray(probs, dtype=np.float32).astype(np.float64), p)


def quadratic_definition(probs, p):  # right on small rows (notebook 04's mass_strictly_above), O(V^2) memory
    probs = np.asarray(probs, dtype=np.float64)
    beats = probs[..., None, :] > probs[..., :, None]
    return np.where(beats, probs[..., None, :], 0.0).sum(axis=-1) < p


def test_nucleus_keep_refuses_a_quadratic_answer(capsys):
    assert not ex04.check_nucleus_keep(quadratic_definition)
    assert "O(V^2)" in capsys.readouterr().out


def test_nucleus_keep_solution_passes():
    assert ex04.check_nucleus_keep(solution.nucleus_keep)


@pytest.mark.parametrize("wrong", [stub, blog_rule, mass_above_at_most_p, first_n_positions, in_float32])
def test_nucleus_keep_rejects(wrong, capsys):
    assert not ex04.check_nucleus_keep(wrong)
    assert "✗" in capsys.readouterr().out


def test_random_cases_are_far_from_the_boundary():
    """The random cases must not depend on summation order: every mass above is > 1e-9 away from p."""
    for probs, p in ex04.keep_cases():
        above = np.where(probs[..., None, :] > probs[..., :, None], probs[..., None, :], 0.0).sum(axis=-1)
        if probs.ndim > 1 and probs.shape[-1] >= 20:
            assert np.abs(above - p).min() > 1e-9


def test_nucleus_keep_matches_package(rng):
    for _ in range(100):
        logits = rng.normal(scale=rng.uniform(0.1, 4), size=(4, 50)).round(1)
        p = float(rng.uniform(0.01, 1))
        probs = specdec.softmax(logits)
        assert np.array_equal(solution.nucleus_keep(probs, p), specdec.top_p_filter(logits, p) > -np.inf)


# --- fixed_nucleus_filter ----------------------------------------------------------------


def blog_softmax(x, temperature=1.0):
    x = x / temperature
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()


def blog_nucleus_filter(logits, p=0.9):  # the seed blog's code; VOCAB_SIZE -> logits.size
    sorted_indices = np.argsort(logits)[::-1]
    sorted_logits = logits[sorted_indices]
    with np.errstate(invalid="ignore"):
        cum_probs = np.cumsum(blog_softmax(sorted_logits))
    cutoff = np.searchsorted(cum_probs, p, side="right")
    mask = np.zeros(logits.size, dtype=bool)
    if cutoff < logits.size:
        mask[sorted_indices[cutoff:]] = True
    filtered = logits.copy()
    filtered[mask] = -np.inf
    return filtered


def blog_in_float64(logits, p=0.9):  # only the dtype fixed
    return blog_nucleus_filter(np.asarray(logits, dtype=np.float64), p)


def searchsorted_left_plus_one(logits, p=0.9):  # the crossing token fixed, ties still split by argsort
    logits = np.asarray(logits)
    sorted_indices = np.argsort(logits)[::-1]
    cum_probs = np.cumsum(specdec.softmax(logits)[sorted_indices])
    cutoff = np.searchsorted(cum_probs, p, side="left") + 1
    filtered = logits.astype(np.float64)
    filtered[sorted_indices[cutoff:]] = -np.inf
    return filtered


def fixed_but_float32(logits, p=0.9):  # the right rule, probabilities rounded to float32
    logits = np.asarray(logits)
    probs = specdec.softmax(logits).astype(np.float32)
    keep = solution.nucleus_keep(probs, p)
    return np.where(keep, logits, -np.inf)


def delegates_to_the_package(logits, p=0.9):  # returns exactly what is asked, by calling the reference
    return specdec.top_p_filter(logits, p).astype(np.float64)


def delegates_to_the_module(logits, p=0.9):
    from specdec.nucleus import top_p_filter

    return top_p_filter(logits, p).astype(np.float64)


@pytest.mark.parametrize("wrong", [delegates_to_the_package, delegates_to_the_module])
def test_fixed_filter_refuses_delegation(wrong, capsys):
    assert not ex04.check_fixed_nucleus_filter(wrong)
    assert "it calls top_p_filter" in capsys.readouterr().out
    assert specdec.top_p_filter([0.0, -5.0], 0.5).tolist() == [0.0, -np.inf]  # restored


def test_fixed_filter_solution_passes():
    assert ex04.check_fixed_nucleus_filter(solution.fixed_nucleus_filter)


@pytest.mark.parametrize(
    "wrong", [stub, blog_nucleus_filter, blog_in_float64, searchsorted_left_plus_one, fixed_but_float32]
)
def test_fixed_filter_rejects(wrong, capsys):
    assert not ex04.check_fixed_nucleus_filter(wrong)
    assert "✗" in capsys.readouterr().out


def test_fixed_filter_matches_package(rng):
    for _ in range(200):
        logits = rng.normal(scale=rng.uniform(0.1, 4), size=int(rng.integers(1, 60))).round(1)
        p = float(rng.uniform(0.01, 1))
        assert np.array_equal(solution.fixed_nucleus_filter(logits, p), specdec.top_p_filter(logits, p))


def blog_fixed_in_place(logits, p=0.9):
    """A learner's minimal fix of the blog's code: float64, exclusive sum, ties; sums in sorted order."""
    sorted_indices = np.argsort(logits)[::-1]
    sorted_logits = np.asarray(logits, dtype=np.float64)[sorted_indices]
    sorted_probs = blog_softmax(sorted_logits)
    mass_above = np.cumsum(sorted_probs) - sorted_probs
    n_keep = np.sum(mass_above < p)
    keep = np.zeros(logits.size, dtype=bool)
    keep[sorted_indices] = sorted_probs >= sorted_probs[n_keep - 1]
    return np.where(keep, logits, -np.inf)


def direct_definition(probs, p):
    """The O(V^2) definition, as a learner might write it with a loop."""
    probs = np.asarray(probs, dtype=np.float64)
    flat = probs.reshape(-1, probs.shape[-1])
    keep = np.array([[row[row > q].sum() < p for q in row] for row in flat])
    return keep.reshape(probs.shape)


def test_other_correct_answers_pass_too(monkeypatch):
    """Correct solutions that sum in another order must not be failed by rounding: the cases keep clear of it."""
    assert ex04.check_fixed_nucleus_filter(blog_fixed_in_place)
    monkeypatch.setattr(ex04, "WIDE_VOCAB", 300)  # direct_definition is O(V^2): right, but refused on a wide row
    assert ex04.check_nucleus_keep(direct_definition)


def test_fixed_filter_random_cases_are_far_from_the_boundary():
    for logits, p in ex04.fixed_filter_cases():
        if logits.size >= 20:
            probs = specdec.softmax(logits)
            above = np.array([probs[probs > q].sum() for q in probs])
            assert np.abs(above - p).min() > 1e-9
