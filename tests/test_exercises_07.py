"""Notebook 07's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import time

import numpy as np
import pytest
from helpers import diagnosis, load_solution

from checkers import ex07
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


def guards_alpha_one_with_gamma(alpha, gamma):  # the closed form, with the wrong value at alpha = 1
    return float(gamma) if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def calls_the_reference(alpha, gamma):  # delegation: the exercise asks for the formula, not a call
    from specdec.timing import expected_tokens as reference

    return reference(alpha, gamma)


def float16_sum(alpha, gamma):  # the right sum in a 16-bit float: about 3 digits
    return np.sum(np.float16(alpha) ** np.arange(gamma + 1, dtype=np.float16))


def one_element_array(alpha, gamma):  # the right value, wrapped in an array of shape (1,)
    return np.array([sum(alpha**j for j in range(gamma + 1))])


def simulated_mean(alpha, gamma):  # the notebook's simulation used as the answer: close, not exact
    accepted = np.random.default_rng(0).random((20_000, gamma)) < alpha  # (rounds, gamma)
    return 1 + np.cumprod(accepted, axis=1).sum(axis=1).mean()


def float32_sum(alpha, gamma):  # the right sum, returned as a float32: right to 7 digits, but float64 is asked
    return np.float32(sum(alpha**j for j in range(gamma + 1)))


def rounded_to_two_decimals(alpha, gamma):  # the right sum, rounded for display: close, but no simulation
    return round(sum(alpha**j for j in range(gamma + 1)), 2)


def counts_the_target_token_twice(alpha, gamma):  # the sum from j = 0 already holds the target's token; + 1 again
    return 1 + sum(alpha**j for j in range(gamma + 1))


def forgets_to_return(alpha, gamma):  # computes the sum and drops it
    sum(alpha**j for j in range(gamma + 1))


def closed_form_guarded(alpha, gamma):  # a correct alternative: the closed form with alpha = 1 handled
    return gamma + 1.0 if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def numpy_sum(alpha, gamma):  # a correct alternative: numpy powers, a numpy float64 result
    return np.sum(np.float64(alpha) ** np.arange(gamma + 1))


def int_where_whole(alpha, gamma):  # a correct alternative: the int gamma + 1 at alpha = 1, as the statement allows
    return gamma + 1 if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def test_tokens_per_call_solution_and_a_closed_form_pass():
    assert ex07.check_tokens_per_call(tokens_solution.tokens_per_call)
    assert ex07.check_tokens_per_call(closed_form_guarded)
    assert ex07.check_tokens_per_call(numpy_sum)
    assert ex07.check_tokens_per_call(int_where_whole)


@pytest.mark.parametrize(
    "wrong, said",
    [
        (independent_acceptances, "expected"),
        (closed_form_unguarded, "ZeroDivisionError"),
        (no_target_token, "expected"),
        (no_bonus_token, "expected"),
        (
            guards_alpha_one_with_gamma,
            "exactly 1 token too few: the target's own token (the correction or the bonus) is missing: add 1"
            " (for alpha = 1.0, gamma = 1: expected 2, got 1.0)",
        ),
        (calls_the_reference, "calls expected_tokens"),
        (float16_sum, "float16"),
        (one_element_array, "shape (1,)"),
        (simulated_mean, "not within 1e-6"),
        (float32_sum, "a float32 number: the value is right to float32's precision, but float64 is asked"),
        (rounded_to_two_decimals, "not within 1e-6"),
        (forgets_to_return, "got None"),
        (counts_the_target_token_twice, "exactly 1 token too many: is the target's token counted twice?"),
        (no_target_token, "exactly 1 token too few: the target's own token (the correction or the bonus) is missing"),
    ],
)
def test_tokens_per_call_wrong_answers_fail(wrong, said, capsys):
    assert not ex07.check_tokens_per_call(wrong)
    out = capsys.readouterr().out
    assert "✗ tokens_per_call" in out and said in out


def test_refusing_the_reference_restores_it():
    ex07.check_tokens_per_call(calls_the_reference)
    assert ex07.check_tokens_per_call(tokens_solution.tokens_per_call)
    assert expected_tokens(0.5, 2) == 1.75


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


def candidates_in_dict_order(alpha, c, f):  # max over the keys as the dict lists them: a tie goes to the first listed
    return max((n - 1 for n in f if n >= 2), key=lambda g: predicted_speedup(alpha, g, c, f))


def searches_gamma_1_to_15(alpha, c, f):  # the notebook's fixed range, as if f stopped at n = 16
    return max((g for g in range(1, 16) if g + 1 in f), key=lambda g: predicted_speedup(alpha, g, c, f))


def returns_the_index(alpha, c, f):  # np.argmax gives a position in the list, not the gamma there
    candidates = sorted(n - 1 for n in f if n >= 2)
    return int(np.argmax([predicted_speedup(alpha, g, c, f) for g in candidates]))


def returns_a_float(alpha, c, f):  # the right gamma as a float
    return float(gamma_solution.best_gamma(alpha, c, f))


def test_best_gamma_solution_passes():
    assert ex07.check_best_gamma(gamma_solution.best_gamma)


@pytest.mark.parametrize(
    "wrong, said",
    [
        (most_tokens, "expected gamma"),
        (prices_with_f_of_gamma, "expected gamma"),
        (ties_to_the_largest, "expected gamma"),
        (forgets_the_last_entry, "expected gamma"),
        (assumes_contiguous_f, "f has no cost"),
        (candidates_in_dict_order, "expected gamma = 1, got 8"),
        (searches_gamma_1_to_15, "expected gamma = 31"),
        (returns_the_index, "expected gamma"),
        (returns_a_float, "an integer"),
    ],
)
def test_best_gamma_wrong_answers_fail(wrong, said, capsys):
    assert not ex07.check_best_gamma(wrong)
    out = capsys.readouterr().out
    assert "✗ best_gamma" in out and said in out


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


def break_even_with_f_of_gamma(gamma, c, f):  # off by one: prices the verification of gamma positions
    price = (lambda n: f(n - 1)) if callable(f) else {n + 1: cost for n, cost in f.items()}
    return break_even_solution.break_even_alpha(gamma, c, price)


def bisects_forever(gamma, c, f):  # right at the ends, then a tolerance of 0: floats never get there
    if predicted_speedup(0.0, gamma, c, f) >= 1:
        return 0.0
    if predicted_speedup(1.0, gamma, c, f) < 1:
        return None
    low, high = 0.0, 1.0
    while high - low > 0:
        middle = (low + high) / 2
        low, high = (low, middle) if predicted_speedup(middle, gamma, c, f) >= 1 else (middle, high)
    return high


def scans_a_fine_grid(gamma, c, f):  # brute force: every alpha on a grid of step 1e-7
    for alpha in np.linspace(0, 1, 10_000_001):
        if predicted_speedup(float(alpha), gamma, c, f) >= 1:
            return float(alpha)
    return None


def scans_a_coarse_grid(gamma, c, f):  # a grid of step 1e-3: quick, but only as close as its step
    for alpha in np.linspace(0, 1, 1001):
        if predicted_speedup(float(alpha), gamma, c, f) >= 1:
            return float(alpha)
    return None


def stops_bisecting_early(gamma, c, f):  # the ends checked, then halves until the interval is shorter than 1e-3
    if predicted_speedup(0.0, gamma, c, f) >= 1:
        return 0.0
    if predicted_speedup(1.0, gamma, c, f) < 1:
        return None
    low, high = 0.0, 1.0
    while high - low > 1e-3:
        middle = (low + high) / 2
        low, high = (low, middle) if predicted_speedup(middle, gamma, c, f) >= 1 else (middle, high)
    return high


@pytest.mark.parametrize("near", [scans_a_coarse_grid, stops_bisecting_early])
def test_break_even_alpha_near_but_not_within_1e6_is_told_to_bisect(near, capsys):
    assert not ex07.check_break_even_alpha(near)
    message = diagnosis(capsys.readouterr().out)
    assert (
        message.startswith("off by ") and "but 1e-6 is asked: bisect until the interval is shorter than 1e-7" in message
    )
    assert "(for gamma = 4, c = 0.05, f = (lambda n: 1.0): a round costs 1.2 target steps; expected 0.1667" in message


def indexes_f(gamma, c, f):  # treats f as a dict only: f[n] fails when f is a function
    return break_even_solution.break_even_alpha(gamma, c, {gamma + 1: f[gamma + 1]})


def calls_f(gamma, c, f):  # treats f as a function only: f(n) fails when f is a dict
    return break_even_solution.break_even_alpha(gamma, c, lambda n: f(n))


def test_break_even_alpha_solution_passes():
    assert ex07.check_break_even_alpha(break_even_solution.break_even_alpha)


@pytest.mark.parametrize(
    "wrong, said",
    [
        (indexes_f, "here it is a function: call it, f(n)"),
        (calls_f, "here it is a dict: look it up, f[n]"),
    ],
)
def test_break_even_alpha_says_f_may_be_a_function_or_a_dict(wrong, said, capsys):
    assert not ex07.check_break_even_alpha(wrong)
    out = capsys.readouterr().out
    assert "✗ break_even_alpha" in out and "f may be a function or a dict" in out and said in out
    assert "CostFunction" not in out  # the checker's own helper class is no business of the learner


@pytest.mark.parametrize(
    "wrong",
    [
        ignores_the_draft_cost,
        one_at_alpha_one,
        bisects_without_checking_the_ends,
        solves_for_accepted_drafts,
        strict_at_the_boundary,
        break_even_with_f_of_gamma,
    ],
)
def test_break_even_alpha_wrong_answers_fail(wrong, capsys):
    assert not ex07.check_break_even_alpha(wrong)
    assert "✗ break_even_alpha" in capsys.readouterr().out


@pytest.mark.parametrize("slow", [bisects_forever, scans_a_fine_grid])
def test_break_even_alpha_stops_a_search_that_would_not_end_and_says_why(slow, capsys):
    start = time.perf_counter()
    assert not ex07.check_break_even_alpha(slow)
    assert time.perf_counter() - start < 3 * ex07.LIMIT_S
    out = capsys.readouterr().out
    assert "✗ break_even_alpha: stopped after" in out and "bisect" in out
    assert ex07.check_break_even_alpha(break_even_solution.break_even_alpha)  # the timer is gone


def test_the_accelerator_answer_in_the_notebook():
    assert break_even_solution.break_even_alpha(4, 0.05, ex07.F_ONE) == pytest.approx(0.1668, abs=1e-4)
    assert break_even_solution.break_even_alpha(4, 0.05, ex07.F_N) is None


# --- every checker -----------------------------------------------------------------------


@pytest.mark.parametrize("checker", [ex07.check_tokens_per_call, ex07.check_best_gamma, ex07.check_break_even_alpha])
def test_a_stub_is_not_attempted_yet(checker, capsys):
    assert not checker(stub)
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize(
    "checker, wrong, first_words, case",
    [
        (ex07.check_tokens_per_call, independent_acceptances, "expected 1.75, got 2.0", "(for alpha = 0.5, gamma = 2)"),
        (
            ex07.check_tokens_per_call,
            counts_the_target_token_twice,
            "exactly 1 token too many",
            "(for alpha = 0.5, gamma = 1: expected 1.5, got 2.5)",
        ),
        (ex07.check_break_even_alpha, scans_a_coarse_grid, "off by 2.3e-04", "(for gamma = 4, c = 0.05, f = "),
        (
            ex07.check_tokens_per_call,
            float32_sum,
            "got np.float32(1.5), a float32",
            "(for alpha = 0.5, gamma = 1, expected 1.5)",
        ),
        (ex07.check_best_gamma, most_tokens, "expected gamma = ", "(for alpha = 0.8, c = 0.05, f = "),
        (ex07.check_best_gamma, returns_a_float, "got ", "an integer (expected gamma = "),
        (ex07.check_break_even_alpha, ignores_the_draft_cost, "expected 0.1", "(for gamma = 4, c = 0.05, f = "),
    ],
)
def test_every_message_says_what_is_wrong_first_then_the_case(checker, wrong, first_words, case, capsys):
    assert not checker(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith(first_words), message
    assert case in message, message
