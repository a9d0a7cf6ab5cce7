"""Notebook 09's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import numpy as np
import pytest
from helpers import load_solution

from specdec.exercises import ex09
from specdec.verify import residual_distribution

residual_solution = load_solution("ex09_residual_distribution")
accepts_solution = load_solution("ex09_accepts")
last_token_solution = load_solution("ex09_last_token")


def stub(*args):
    raise NotImplementedError


# --- residual_distribution -----------------------------------------------------------------


def not_normalised(p, q):  # the excess itself: sums to 1 - alpha, not 1
    return np.maximum(np.asarray(p) - np.asarray(q), 0.0)


def no_fallback(p, q):  # 0 / 0 = NaN when p == q
    excess = np.maximum(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64), 0.0)
    with np.errstate(invalid="ignore"):
        return excess / excess.sum(axis=-1, keepdims=True)


def swapped(p, q):  # norm(max(0, q - p)): where the draft over-offers
    return residual_distribution(q, p)


def absolute_difference(p, q):  # norm(|p - q|)
    gap = np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64))
    mass = gap.sum(axis=-1, keepdims=True)
    return np.where(mass > 0, gap / np.where(mass > 0, mass, 1.0), p)


def normalised_over_everything(p, q):  # one sum over the whole batch instead of one per row
    p = np.asarray(p, dtype=np.float64)
    excess = np.maximum(p - np.asarray(q, dtype=np.float64), 0.0)
    return excess / excess.sum() if excess.sum() > 0 else p


def uniform_fallback(p, q):  # falls back to the uniform distribution instead of p
    p = np.asarray(p, dtype=np.float64)
    excess = np.maximum(p - np.asarray(q, dtype=np.float64), 0.0)
    mass = excess.sum(axis=-1, keepdims=True)
    return np.where(mass > 0, excess / np.where(mass > 0, mass, 1.0), 1.0 / p.shape[-1])


def test_residual_solution_passes():
    assert ex09.check_residual_distribution(residual_solution.residual_distribution)
    assert ex09.check_residual_distribution(residual_distribution)


@pytest.mark.parametrize(
    "wrong",
    [not_normalised, no_fallback, swapped, absolute_difference, normalised_over_everything, uniform_fallback],
)
def test_residual_wrong_answers_fail(wrong, capsys):
    assert not ex09.check_residual_distribution(wrong)
    assert "✗ residual_distribution" in capsys.readouterr().out


def test_residual_nan_is_explained(capsys):
    ex09.check_residual_distribution(no_fallback)
    assert "NaN" in capsys.readouterr().out


# --- accepts -------------------------------------------------------------------------------


def less_or_equal(u, p_x, q_x):  # u <= p/q: accepts a token the target forbids when u == 0
    return bool(u <= p_x / q_x)


def inverted_ratio(u, p_x, q_x):  # u < q/p: divides by 0 for p = 0, and favours the wrong tokens
    return bool(u < q_x / p_x)


def greater(u, p_x, q_x):  # the inequality the wrong way round
    return bool(u > p_x / q_x)


def ignores_u(u, p_x, q_x):  # "accept when the target likes it at least as much": deterministic
    return bool(p_x >= q_x)


def ignores_q(u, p_x, q_x):  # u < p(x): accepts too rarely
    return bool(u < p_x)


def returns_the_ratio(u, p_x, q_x):  # the probability of accepting, not the decision
    return min(1.0, p_x / q_x)


def test_accepts_solution_and_min_form_pass():
    assert ex09.check_accepts(accepts_solution.accepts)
    assert ex09.check_accepts(lambda u, p_x, q_x: u < min(1.0, p_x / q_x))
    assert ex09.check_accepts(lambda u, p_x, q_x: np.float64(u) < np.float64(p_x) / np.float64(q_x))


@pytest.mark.parametrize("wrong", [less_or_equal, inverted_ratio, greater, ignores_u, ignores_q, returns_the_ratio])
def test_accepts_wrong_answers_fail(wrong, capsys):
    assert not ex09.check_accepts(wrong)
    assert "✗ accepts" in capsys.readouterr().out


def test_accepts_less_or_equal_is_caught_at_p_zero(capsys):
    ex09.check_accepts(less_or_equal)
    assert "u = 0.0, p_x = 0.0" in capsys.readouterr().out


# --- last_token (spot the bug) -------------------------------------------------------------


def seed_fall_back(p_rows, q_rows, drafts, n_accepted):  # the seed: nothing after a rejection
    return p_rows[n_accepted] if n_accepted == len(drafts) else None


def fall_back_to_p(p_rows, q_rows, drafts, n_accepted):  # resample from p itself
    return p_rows[n_accepted]


def fall_back_to_q(p_rows, q_rows, drafts, n_accepted):  # draft again, once, and keep it
    return p_rows[n_accepted] if n_accepted == len(drafts) else q_rows[n_accepted]


def accepted_part(p_rows, q_rows, drafts, n_accepted):  # norm(min(p, q)): what re-drafting until accepted draws
    if n_accepted == len(drafts):
        return p_rows[n_accepted]
    overlap = np.minimum(p_rows[n_accepted], q_rows[n_accepted])
    return overlap / overlap.sum() if overlap.sum() > 0 else p_rows[n_accepted]


def bonus_off_by_one(p_rows, q_rows, drafts, n_accepted):  # the bonus from the last draft's own row
    if n_accepted == len(drafts):
        return p_rows[n_accepted - 1]
    return residual_distribution(p_rows[n_accepted], q_rows[n_accepted])


def residual_of_the_first_position(p_rows, q_rows, drafts, n_accepted):  # always row 0
    if n_accepted == len(drafts):
        return p_rows[n_accepted]
    return residual_distribution(p_rows[0], q_rows[0])


def residual_swapped(p_rows, q_rows, drafts, n_accepted):
    if n_accepted == len(drafts):
        return p_rows[n_accepted]
    return residual_distribution(q_rows[n_accepted], p_rows[n_accepted])


def no_bonus(p_rows, q_rows, drafts, n_accepted):  # correct on rejection, but skips the free bonus token
    return None if n_accepted == len(drafts) else residual_distribution(p_rows[n_accepted], q_rows[n_accepted])


def test_last_token_solution_passes():
    assert ex09.check_last_token(last_token_solution.last_token)


def test_skipping_the_bonus_keeps_the_law():
    """Not drawing the bonus wastes a token but is still exact: the next round draws it from p."""
    assert ex09.check_last_token(no_bonus)


@pytest.mark.parametrize(
    "wrong",
    [
        seed_fall_back,
        fall_back_to_p,
        fall_back_to_q,
        accepted_part,
        bonus_off_by_one,
        residual_of_the_first_position,
        residual_swapped,
    ],
)
def test_last_token_wrong_answers_fail(wrong, capsys):
    assert not ex09.check_last_token(wrong)
    out = capsys.readouterr().out
    assert "✗ last_token" in out


def test_last_token_reports_the_total_variation(capsys):
    ex09.check_last_token(seed_fall_back)
    out = capsys.readouterr().out
    assert "total variation" in out and "three tokens" in out


def test_last_token_not_a_distribution(capsys):
    assert not ex09.check_last_token(lambda p_rows, q_rows, drafts, n: p_rows[n] * 2)
    assert "not a distribution" in capsys.readouterr().out


def test_enumeration_matches_the_target_exactly():
    for world in ex09.WORLDS:
        for gamma in (1, 2, 3):
            tv, gap, *_ = ex09.law_gap(last_token_solution.last_token, world, gamma)
            assert gap < 1e-14 and tv < 1e-13


# --- every checker -------------------------------------------------------------------------


@pytest.mark.parametrize("checker", [ex09.check_residual_distribution, ex09.check_accepts, ex09.check_last_token])
def test_a_stub_is_not_attempted_yet(checker, capsys):
    assert not checker(stub)
    assert "not attempted yet" in capsys.readouterr().out
