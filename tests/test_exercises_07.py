"""Notebook 07's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import pytest
from helpers import load_solution

from specdec.exercises import ex07
from specdec.timing import expected_tokens, predicted_speedup

tokens_solution = load_solution("ex07_tokens_per_call")
gamma_solution = load_solution("ex07_best_gamma")
break_even_solution = load_solution("ex07_break_even_alpha")


def stub(*args):
    raise NotImplementedError


# --- tokens_per_call ---------------------------------------------------------------------


def independent_acceptances(alpha, gamma):  # the notebook's first attempt: ignores that a round stops
    return 1 + gamma * alpha


def closed_form_unguarded(alpha, gamma):  # right except at alpha = 1: ZeroDivisionError
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def no_target_token(alpha, gamma):  # counts the kept drafts only, forgets the correction / bonus token
    return sum(alpha**j for j in range(1, gamma + 1))


def no_bonus_token(alpha, gamma):  # stops the sum one term early: (1 - alpha**gamma) / (1 - alpha)
    return sum(alpha**j for j in range(gamma))


def closed_form_guarded(alpha, gamma):  # a correct alternative: the closed form with alpha = 1 handled
    return gamma + 1.0 if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def test_tokens_per_call_solution_and_a_closed_form_pass():
    assert ex07.check_tokens_per_call(tokens_solution.tokens_per_call)
    assert ex07.check_tokens_per_call(closed_form_guarded)


@pytest.mark.parametrize("wrong", [independent_acceptances, closed_form_unguarded, no_target_token, no_bonus_token])
def test_tokens_per_call_wrong_answers_fail(wrong, capsys):
    assert not ex07.check_tokens_per_call(wrong)
    assert "✗ tokens_per_call" in capsys.readouterr().out


def test_tokens_per_call_counterexample_names_the_case(capsys):
    ex07.check_tokens_per_call(closed_form_unguarded)
    out = capsys.readouterr().out
    assert "ZeroDivisionError" in out and "(1.0, 1)" in out


# --- best_gamma --------------------------------------------------------------------------


def most_tokens(alpha, c, f):  # maximises E[tokens]: always the largest gamma
    return max(n - 1 for n in f if n >= 2)


def prices_with_f_of_gamma(alpha, c, f):  # off by one: a round verifies gamma + 1 positions, not gamma
    candidates = sorted(n for n in f if n >= 1 and n + 1 in f)
    return max(candidates, key=lambda g: expected_tokens(alpha, g) / (g * c + f[g]))


def ties_to_the_largest(alpha, c, f):  # >= keeps the last of equal maxima
    best = None
    for gamma in sorted(n - 1 for n in f if n >= 2):
        if best is None or predicted_speedup(alpha, gamma, c, f) >= predicted_speedup(alpha, best, c, f):
            best = gamma
    return best


def forgets_the_last_entry(alpha, c, f):  # range(1, max(f) - 1): the largest gamma is never tried
    candidates = [n - 1 for n in sorted(f) if 2 <= n < max(f)]
    return max(candidates, key=lambda g: predicted_speedup(alpha, g, c, f))


def assumes_contiguous_f(alpha, c, f):  # gamma = 1 .. len(f) - 1, as if f had every n from 1
    return max(range(1, len(f)), key=lambda g: predicted_speedup(alpha, g, c, f))


def test_best_gamma_solution_passes():
    assert ex07.check_best_gamma(gamma_solution.best_gamma)


@pytest.mark.parametrize(
    "wrong", [most_tokens, prices_with_f_of_gamma, ties_to_the_largest, forgets_the_last_entry, assumes_contiguous_f]
)
def test_best_gamma_wrong_answers_fail(wrong, capsys):
    assert not ex07.check_best_gamma(wrong)
    assert "✗ best_gamma" in capsys.readouterr().out


# --- break_even_alpha --------------------------------------------------------------------


def cost_of(gamma, c, f):
    return gamma * c + (f(gamma + 1) if callable(f) else f[gamma + 1])


def ignores_the_draft_cost(gamma, c, f):  # prices the round as the verification alone
    return break_even_solution.break_even_alpha(gamma, 0.0, f)


def one_at_alpha_one(gamma, c, f):  # returns 1.0 when it never breaks even, instead of None
    result = break_even_solution.break_even_alpha(gamma, c, f)
    return 1.0 if result is None else result


def bisects_without_checking_the_ends(gamma, c, f):  # converges to 0 or 1 where it should say 0.0 or None
    low, high = 0.0, 1.0
    while high - low > 1e-9:
        middle = (low + high) / 2
        low, high = (low, middle) if predicted_speedup(middle, gamma, c, f) >= 1 else (middle, high)
    return high


def solves_for_accepted_drafts(gamma, c, f):  # E[accepted] = E[tokens] - 1 set equal to the cost
    target = cost_of(gamma, c, f)
    low, high = 0.0, 1.0
    if sum(1.0 for _ in range(gamma)) < target:
        return None
    while high - low > 1e-9:
        middle = (low + high) / 2
        accepted = sum(middle**j for j in range(1, gamma + 1))
        low, high = (low, middle) if accepted >= target else (middle, high)
    return high


def strict_at_the_boundary(gamma, c, f):  # asks for speedup > 1, so a tie at alpha = 1 becomes None
    if predicted_speedup(1.0, gamma, c, f) <= 1:
        return None
    return break_even_solution.break_even_alpha(gamma, c, f)


def test_break_even_alpha_solution_passes():
    assert ex07.check_break_even_alpha(break_even_solution.break_even_alpha)


@pytest.mark.parametrize(
    "wrong",
    [
        ignores_the_draft_cost,
        one_at_alpha_one,
        bisects_without_checking_the_ends,
        solves_for_accepted_drafts,
        strict_at_the_boundary,
    ],
)
def test_break_even_alpha_wrong_answers_fail(wrong, capsys):
    assert not ex07.check_break_even_alpha(wrong)
    assert "✗ break_even_alpha" in capsys.readouterr().out


def test_the_accelerator_answer_in_the_notebook():
    assert break_even_solution.break_even_alpha(4, 0.05, ex07.F_ONE) == pytest.approx(0.1668, abs=1e-4)
    assert break_even_solution.break_even_alpha(4, 0.05, ex07.F_N) is None


# --- every checker -----------------------------------------------------------------------


@pytest.mark.parametrize("checker", [ex07.check_tokens_per_call, ex07.check_best_gamma, ex07.check_break_even_alpha])
def test_a_stub_is_not_attempted_yet(checker, capsys):
    assert not checker(stub)
    assert "not attempted yet" in capsys.readouterr().out
