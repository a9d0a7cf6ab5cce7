"""Notebook 02's exercise checkers accept the reference solutions and reject realistic wrong answers."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from specdec.drawing import chi_square_test
from specdec.exercises import ex02

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


def load_solution(name: str):
    """Import solutions/<name>.py (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"solution_{name}", SOLUTIONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def not_attempted(*args):
    raise NotImplementedError


# --- exercise 1: draw_with_u ----------------------------------------------------------------


def searchsorted_left(probs, u):  # the classic: default side="left" lands on empty intervals at u = 0
    return int(np.searchsorted(np.cumsum(probs), u))


def count_strictly_below(probs, u):  # `cdf < u` instead of `cdf <= u`: the same bug, written differently
    return int(np.minimum((np.cumsum(probs) < u).sum(), len(probs) - 1))


def unclipped(probs, u):  # forgets that rounding can push the count to V
    return int((np.cumsum(probs) <= u).sum())


def clipped_only(probs, u):  # clips to V - 1 but may then return a zero-probability last token
    return int(np.minimum((np.cumsum(probs) <= u).sum(), len(probs) - 1))


def argmax_above(probs, u):  # np.argmax returns 0 when no running sum exceeds u
    return int(np.argmax(np.cumsum(probs) > u))


def no_repair(probs, u):  # scales u by the total as `draw` does, but forgets that rounding can land past the end
    return int((np.cumsum(probs) <= u * np.sum(probs)).sum())


def scaled_by_last_running_sum(probs, u):
    """Also correct: scaled by cdf[-1] instead of the sum, u * cdf[-1] < cdf[-1], so no repair is needed."""
    cdf = np.cumsum(probs)
    return int((cdf <= u * cdf[-1]).sum())


def unscaled_but_careful(probs, u):
    """A correct alternative: no scaling by the total, but clip and step back from zeros."""
    token = min(int((np.cumsum(probs) <= u).sum()), len(probs) - 1)
    while probs[token] == 0:
        token -= 1
    return token


def test_draw_with_u_solution_passes(capsys):
    assert ex02.check_draw_with_u(load_solution("ex02_draw_with_u").draw_with_u)
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize("correct", [unscaled_but_careful, scaled_by_last_running_sum])
def test_draw_with_u_accepts_an_equivalent_correct_answer(correct):
    assert ex02.check_draw_with_u(correct)


@pytest.mark.parametrize(
    "wrong",
    [
        searchsorted_left,
        count_strictly_below,
        unclipped,
        clipped_only,
        argmax_above,
        no_repair,
    ],
)
def test_draw_with_u_rejects_wrong_answers(wrong, capsys):
    assert not ex02.check_draw_with_u(wrong)
    out = capsys.readouterr().out
    assert out.startswith("✗") and "for input" in out


def test_draw_with_u_needs_the_repair(capsys):
    """Ten 0.1s, u = 1 - 2**-53: u * sum equals the last running sum, so the count is V (past the end)."""
    probs, u = np.full(10, 0.1), ex02.JUST_BELOW_ONE
    assert no_repair(probs, u) == 10 and ex02.reference_draw_with_u(probs, u) == 9
    assert not ex02.check_draw_with_u(no_repair)
    assert "expected 9, got 10" in capsys.readouterr().out


def test_draw_with_u_stub_fails(capsys):
    assert not ex02.check_draw_with_u(not_attempted)
    assert "not attempted yet" in capsys.readouterr().out


def test_draw_with_u_rejects_a_float_answer():
    assert not ex02.check_draw_with_u(lambda probs, u: float(load_solution("ex02_draw_with_u").draw_with_u(probs, u)))


# --- exercise 2: total_variation ------------------------------------------------------------


def test_total_variation_solution_passes():
    assert ex02.check_total_variation(load_solution("ex02_total_variation").tv_by_events)


@pytest.mark.parametrize(
    "wrong",
    [
        lambda p, q: float(np.abs(p - q).sum()),  # L1, without the half
        lambda p, q: float(np.abs(p - q).max()),  # the largest single-token gap
        lambda p, q: float(np.abs(p - q).mean()),
        lambda p, q: float(np.linalg.norm(p - q)),  # L2
        lambda p, q: 0.5 * np.abs(p - q),  # forgot to sum: an array
    ],
)
def test_total_variation_rejects_wrong_answers(wrong):
    assert not ex02.check_total_variation(wrong)


def test_total_variation_stub_fails():
    assert not ex02.check_total_variation(not_attempted)


# --- exercise 3: find_counterexample --------------------------------------------------------


def test_counterexample_solution_passes(capsys):
    assert ex02.check_counterexample(load_solution("ex02_find_counterexample").find_counterexample)
    assert "probability 0" in capsys.readouterr().out


def test_buggy_draw_really_is_buggy_and_only_at_the_boundary():
    probs, u = load_solution("ex02_find_counterexample").find_counterexample()
    assert probs[ex02.buggy_draw(probs, u)] == 0
    for v in (1e-300, 0.25, 0.7, ex02.JUST_BELOW_ONE):  # strictly inside an interval it agrees
        assert ex02.buggy_draw(probs, v) == ex02.reference_draw_with_u(probs, v)


@pytest.mark.parametrize(
    "wrong",
    [
        lambda: (np.array([0.5, 0.0, 0.5]), 0.5),  # u on the step of a zero token in the middle: lands on 0
        lambda: (np.array([0.0, 0.5, 0.5]), 1.0),  # u = 1 is never returned by rng.random()
        lambda: (np.array([0.0, 0.5, 0.6]), 0.0),  # not a distribution
        lambda: [np.array([0.0, 1.0]), 0.0],  # a list, not a tuple (probs, u)
        not_attempted,
    ],
)
def test_counterexample_rejects_non_counterexamples(wrong):
    assert not ex02.check_counterexample(wrong)


# --- exercise 4: which_is_wrong -------------------------------------------------------------


def test_which_is_wrong_solution_passes():
    assert ex02.check_which_is_wrong(load_solution("ex02_which_is_wrong").which_is_wrong)


def too_few_draws(sampler_a, sampler_b, probs, rng):  # the right idea without the power to see small biases
    return load_solution("ex02_which_is_wrong").which_is_wrong(sampler_a, sampler_b, probs, rng, n=300)


def larger_p_value_is_wrong(sampler_a, sampler_b, probs, rng):  # the test read upside down
    answer = load_solution("ex02_which_is_wrong").which_is_wrong(sampler_a, sampler_b, probs, rng)
    return "b" if answer == "a" else "a"


def compares_the_samplers_to_each_other(sampler_a, sampler_b, probs, rng):
    """Tests a's counts against b's frequencies: finds that they differ, not which one is wrong."""
    counts_a = np.bincount(sampler_a(probs, 100_000, rng), minlength=len(probs))
    counts_b = np.bincount(sampler_b(probs, 100_000, rng), minlength=len(probs))
    result = chi_square_test(counts_a, (counts_b + 0.5) / (counts_b + 0.5).sum())
    return "a" if result.p_value < 0.01 else "b"


@pytest.mark.parametrize("wrong", [too_few_draws, larger_p_value_is_wrong, compares_the_samplers_to_each_other])
def test_which_is_wrong_rejects_wrong_answers(wrong):
    assert not ex02.check_which_is_wrong(wrong)


def test_which_is_wrong_stub_fails():
    assert not ex02.check_which_is_wrong(not_attempted)


@pytest.mark.parametrize("case", ex02.which_is_wrong_cases())
def test_each_wrong_sampler_is_really_wrong_and_the_exact_one_is_not(case):
    probs, wrong, _, _, seed = case
    rng = np.random.default_rng(seed)
    exact = chi_square_test(np.bincount(ex02.exact_sampler(probs, 100_000, rng), minlength=len(probs)), probs)
    biased = chi_square_test(np.bincount(wrong(probs, 100_000, rng), minlength=len(probs)), probs)
    assert exact.p_value > 1e-3 and biased.p_value < 1e-6
