"""Notebook 02's exercise checkers accept the reference solutions and reject realistic wrong answers."""

import importlib.util
import itertools
import time
from pathlib import Path

import numpy as np
import pytest

from checkers import ex02
from specdec.drawing import chi_square_test, total_variation

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
    """Clips and steps back from zeros, but ignores the scaling by probs.sum() the statement asks for."""
    token = min(int((np.cumsum(probs) <= u).sum()), len(probs) - 1)
    while probs[token] == 0:
        token -= 1
    return token


def one_step_back(probs, u):  # clips to V - 1, then steps back one token only: two trailing zeros defeat it
    token = min(int((np.cumsum(probs) <= u * probs.sum()).sum()), len(probs) - 1)
    if probs[token] == 0:
        token -= 1
    return token


def draw_in_float32(probs, u):  # the right steps, but the running sums and u rounded to float32
    probs32 = np.asarray(probs, dtype=np.float32)
    token = int((np.cumsum(probs32) <= np.float32(u) * probs32.sum()).sum())
    if token >= probs32.size or probs32[token] == 0:
        token = int(np.flatnonzero(probs32 > 0)[-1])
    return token


def returns_a_numpy_integer(probs, u):  # the reference without int(): np.int64 is an integer too
    return np.int64(load_solution("ex02_draw_with_u").draw_with_u(probs, u))


def test_draw_with_u_solution_passes(capsys):
    assert ex02.check_draw_with_u(load_solution("ex02_draw_with_u").draw_with_u)
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize("correct", [scaled_by_last_running_sum, returns_a_numpy_integer])
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
        unscaled_but_careful,
        one_step_back,
        draw_in_float32,
    ],
)
def test_draw_with_u_rejects_wrong_answers(wrong, capsys):
    assert not ex02.check_draw_with_u(wrong)
    out = capsys.readouterr().out
    assert out.startswith("✗") and "for input" in out


PAST_END = "return the last token with positive probability (see the statement)"


def test_draw_with_u_needs_the_repair(capsys):
    """Ten 0.1s, u = 1 - 2**-53: u * sum equals the last running sum, so the count is V (past the end)."""
    probs, u = np.full(10, 0.1), ex02.JUST_BELOW_ONE
    assert no_repair(probs, u) == 10 and ex02.reference_draw_with_u(probs, u) == 9
    assert not ex02.check_draw_with_u(no_repair)
    assert "expected 9, got 10" in capsys.readouterr().out


def test_draw_with_u_needs_the_repair_to_step_back_over_every_trailing_zero(capsys):
    """Ten 0.1s then two zeros, u = 1 - 2**-53: the count is 12, clipped to 11, one step back is 10 (a zero)."""
    probs, u = np.append(np.full(10, 0.1), [0.0, 0.0]), ex02.JUST_BELOW_ONE
    assert one_step_back(probs, u) == 10 and ex02.reference_draw_with_u(probs, u) == 9
    assert not ex02.check_draw_with_u(one_step_back)
    out = capsys.readouterr().out
    assert out.startswith("✗ draw_with_u: token 10 has probability 0, so it can never be drawn: u * probs.sum() = ")
    assert "by rounding" in out and f"{PAST_END}: expected 9, got 10" in out


@pytest.mark.parametrize("strict", [count_strictly_below, searchsorted_left])
def test_draw_with_u_says_a_u_on_a_step_belongs_to_the_token_on_its_right(strict, capsys):
    assert not ex02.check_draw_with_u(strict)
    out = capsys.readouterr().out
    assert "expected 1, got 0" in out and "a u exactly on a step belongs to the token on its right" in out


def test_draw_with_u_names_searchsorted_side_right_for_the_strict_count(capsys):
    """np.searchsorted's default side='left' is the `<` count: the message names the side that counts `<=`."""
    assert not ex02.check_draw_with_u(searchsorted_left)
    out = capsys.readouterr().out
    assert out.startswith("✗ draw_with_u: u * probs.sum() = 0.375 is exactly the running sum F_0")
    assert "np.searchsorted(..., side='right'): the default side='left' is the < count" in out


def test_draw_with_u_asks_for_the_scaling_and_says_so(capsys):
    """A row summing to 1 + 2**-52: u = 0.5 - 2**-54 scaled by the total lands on the step of token 1."""
    probs, u = np.array([0.5, 0.5 + 2**-52]), float(np.nextafter(0.5, 0.0))
    assert unscaled_but_careful(probs, u) == 0 and ex02.reference_draw_with_u(probs, u) == 1
    assert not ex02.check_draw_with_u(unscaled_but_careful)
    out = capsys.readouterr().out
    assert "expected 1, got 0" in out and "u * probs.sum()" in out


def unscaled_against_the_weights(probs, u):
    """The learner of the reads: u against the running sums of the row as it is, the repair done right."""
    token = int((np.cumsum(probs) <= u).sum())
    if token >= len(probs) or probs[token] == 0:
        token = int(np.flatnonzero(probs > 0)[-1])
    return token


@pytest.mark.parametrize("unscaled", [unscaled_against_the_weights, unscaled_but_careful])
def test_draw_with_u_names_the_missing_scaling_first_not_the_strict_comparison(unscaled, capsys):
    """u * probs.sum() lands exactly on the step 0.5 that u itself is just below: the `<` mistake gives the same
    token, but this learner counted with `<=`; the message must blame the missing scaling, first, not `<`."""
    assert not ex02.check_draw_with_u(unscaled)
    diagnosis = capsys.readouterr().out.removeprefix("✗ draw_with_u: ")
    assert diagnosis.startswith("u is compared with the running sums without being scaled: this row sums to ")
    assert "1.0000000000000002, not exactly 1" in diagnosis and "u * probs.sum() = 0.5" in diagnosis
    assert "expected 1, got 0 (for input ([0.5, 0.5000000000000002], 0.49999999999999994))" in diagnosis
    assert "not < u" not in diagnosis and "a step of the staircase" not in diagnosis


def test_draw_with_u_says_when_only_float32_rounding_is_wrong(capsys):
    """u = 0.375 - 2**-54 rounds up to the step 0.375 in float32: token 1 instead of 0."""
    probs, u = np.array([0.375, 0.25, 0.0, 0.125, 0.25]), float(np.nextafter(0.375, 0.0))
    assert draw_in_float32(probs, u) == 1 and ex02.reference_draw_with_u(probs, u) == 0
    assert not ex02.check_draw_with_u(draw_in_float32)
    assert "float64 is asked" in capsys.readouterr().out


def test_draw_with_u_stub_fails(capsys):
    assert not ex02.check_draw_with_u(not_attempted)
    assert "not attempted yet" in capsys.readouterr().out


def test_draw_with_u_rejects_a_float_answer_and_says_why(capsys):
    assert not ex02.check_draw_with_u(lambda probs, u: float(load_solution("ex02_draw_with_u").draw_with_u(probs, u)))
    assert "the right token, but a float; the token is asked as an integer" in capsys.readouterr().out


def test_draw_with_u_rejects_an_array_answer_and_says_why(capsys):
    solution = load_solution("ex02_draw_with_u").draw_with_u
    assert not ex02.check_draw_with_u(lambda probs, u: np.array([solution(probs, u)]))
    assert "an array of shape (1,); one integer is asked" in capsys.readouterr().out


def test_draw_with_u_names_a_zero_probability_answer(capsys):
    assert not ex02.check_draw_with_u(clipped_only)
    assert "token 10 has probability 0, so it can never be drawn" in capsys.readouterr().out


@pytest.mark.parametrize("missing_repair", [unclipped, no_repair])
def test_draw_with_u_says_past_the_end_is_not_a_token_and_why_it_happens(missing_repair, capsys):
    """got == V: the symptom (not a token), then the cause (rounding past the last piece) and the repair."""
    assert not ex02.check_draw_with_u(missing_repair)
    out = capsys.readouterr().out
    assert out.startswith("✗ draw_with_u: 10 is not a token (the vocabulary is 0 to 9): u * probs.sum() = ")
    assert "reaches the last running sum F_9 = 0.9999999999999999 by rounding" in out
    assert f"{PAST_END}: expected 9, got 10 (for input" in out


def test_draw_with_u_explains_past_the_end_when_argmax_gives_token_0(capsys):
    """np.argmax of an all-False row is 0: the cause is the same rounding past the last piece."""
    assert not ex02.check_draw_with_u(argmax_above)
    out = capsys.readouterr().out
    assert out.startswith("✗ draw_with_u: u * probs.sum() = 0.9999999999999999 reaches the last running sum")
    assert f"{PAST_END}: expected 9, got 0" in out


def test_draw_with_u_refuses_a_function_that_edits_its_input(capsys):
    def edits_then_answers(probs, u):
        answer = load_solution("ex02_draw_with_u").draw_with_u(probs, u)
        probs[:] = 0.0
        return answer

    assert not ex02.check_draw_with_u(edits_then_answers)
    assert "your function changed its input `probs` in place" in capsys.readouterr().out


# --- exercise 2: the event that attains total variation -------------------------------------


def test_best_event_solution_passes(capsys):
    assert ex02.check_total_variation(load_solution("ex02_total_variation").best_event)
    assert capsys.readouterr().out.startswith("✓")


def half_l1_formula(p, q):  # the formula the exercise asks you to explain, not an event
    return 0.5 * np.abs(p - q).sum()


def half_l1_as_float(p, q):
    return float(0.5 * np.abs(p - q).sum())


def largest_single_gap(p, q):  # the token with the largest |p_i - q_i| alone
    return np.abs(p - q) == np.abs(p - q).max()


def tokens_with_mass(p, q):
    return p > 0


def every_token(p, q):  # the whole vocabulary: P(A) - Q(A) = 1 - 1 = 0
    return np.ones(len(p), dtype=bool)


def indices_not_a_mask(p, q):  # the right tokens, as indices
    return np.flatnonzero(p > q)


def forgot_the_comparison(p, q):  # an array of gaps, not of True/False
    return p - q


@pytest.mark.parametrize(
    "wrong",
    [
        half_l1_formula,
        half_l1_as_float,
        largest_single_gap,
        tokens_with_mass,
        every_token,
        indices_not_a_mask,
        forgot_the_comparison,
        lambda p, q: (p > q)[:-1],  # one token short
    ],
)
def test_best_event_rejects_wrong_answers(wrong, capsys):
    assert not ex02.check_total_variation(wrong)
    out = capsys.readouterr().out
    assert out.startswith("✗") and "for input" in out


def test_best_event_says_a_number_is_not_an_event(capsys):
    assert not ex02.check_total_variation(half_l1_formula)
    assert "a number; the event A is asked" in capsys.readouterr().out


def test_best_event_says_indices_are_not_a_mask(capsys):
    assert not ex02.check_total_variation(indices_not_a_mask)
    out = capsys.readouterr().out
    assert out.startswith("✗ best_event: your function returned int64 token ids where a bool mask is asked")
    assert "one entry per token" in out and "returned int64 event" not in out


def test_best_event_says_a_0_1_mask_has_the_right_tokens_but_not_bools(capsys):
    assert not ex02.check_total_variation(lambda p, q: (p > q).astype(np.int64))
    out = capsys.readouterr().out
    assert out.startswith("✗ best_event: your function returned int64 0/1 values where a bool mask is asked")
    assert ".astype(bool)" in out and "token ids" not in out


def test_best_event_names_the_gap_of_a_wrong_event(capsys):
    assert not ex02.check_total_variation(largest_single_gap)
    out = capsys.readouterr().out
    assert "your event's gap |P(A) - Q(A)|" in out and "total variation" in out


@pytest.mark.parametrize(
    "correct",
    [
        lambda p, q: p >= q,  # ties change nothing
        lambda p, q: q > p,  # the complement: the same gap, with the opposite sign
    ],
)
def test_best_event_accepts_equivalent_events(correct):
    assert ex02.check_total_variation(correct)


def test_best_event_refuses_a_list_of_bools(capsys):
    assert not ex02.check_total_variation(lambda p, q: list(p > q))
    assert "your function returned a list where a numpy array is asked" in capsys.readouterr().out


def every_event(p, q):  # the definition taken literally: all 2**V events, one by one
    best, best_gap = np.zeros(len(p), dtype=bool), -1.0
    for size in range(len(p) + 1):
        for event in itertools.combinations(range(len(p)), size):
            mask = np.zeros(len(p), dtype=bool)
            mask[list(event)] = True
            gap = abs(p[mask].sum() - q[mask].sum())
            if gap > best_gap:
                best, best_gap = mask, gap
    return best


def every_mask(p, q):  # the same, with itertools.product
    best, best_gap = None, -1.0
    for mask in itertools.product([False, True], repeat=len(p)):
        chosen = np.array(mask)
        gap = abs(p[chosen].sum() - q[chosen].sum())
        if gap > best_gap:
            best, best_gap = chosen, gap
    return best


def every_event_at_once(p, q):  # all 2**V events as one matrix: fast at V = 14, 2**50 rows at V = 50
    masks = ((np.arange(2 ** len(p))[:, None] >> np.arange(len(p))) & 1).astype(bool)  # (2**V, V)
    return masks[np.argmax(np.abs(masks @ (p - q)))]


@pytest.mark.parametrize("brute_force", [every_event, every_mask, every_event_at_once])
def test_best_event_stops_a_brute_force_with_a_message_instead_of_hanging(brute_force, capsys):
    start = time.perf_counter()
    assert not ex02.check_total_variation(brute_force)
    assert time.perf_counter() - start < 10  # V = 50 would take years
    out = capsys.readouterr().out
    assert "grows like 2^V" in out and "which tokens must be in A" in out


def mask_in_float32(p, q):  # the right event, but p and q compared in float32
    return p.astype(np.float32) > q.astype(np.float32)


def test_best_event_says_when_only_precision_is_wrong(capsys):
    assert not ex02.check_total_variation(mask_in_float32)
    assert "float64 is asked" in capsys.readouterr().out


def mask_with_a_tolerance(p, q):  # the right event, except where p and q differ by less than 1e-9
    return (p - q) > 1e-9


def test_best_event_names_a_tolerance_too_when_only_precision_is_wrong(capsys):
    """p - q > 1e-9 where the gap is 1e-10: the event is empty, its gap 0.0, not "right to about 7 digits"."""
    assert not ex02.check_total_variation(mask_with_a_tolerance)
    out = capsys.readouterr().out
    assert out.startswith(
        "✗ best_event: your event's gap |P(A) - Q(A)| is off by less than 1e-6 (your gap 0.0, the total variation"
        " 1e-10): as when p and q are compared with a tolerance"
    )
    assert "float32" in out and "compare p > q exactly" in out and "7 digits" not in out


def test_best_event_stub_fails(capsys):
    assert not ex02.check_total_variation(not_attempted)
    assert "not attempted yet" in capsys.readouterr().out


def test_best_event_refuses_a_function_that_edits_its_input(capsys):
    def edits_then_answers(p, q):
        answer = p > q
        p[:] = q
        return answer

    assert not ex02.check_total_variation(edits_then_answers)
    assert "your function changed its input `p` in place" in capsys.readouterr().out


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
        lambda: (["zero", "one"], 0.0),  # not numbers: a message, not a crash
        lambda: (np.array([0.0, 0.5, 0.5]), False),  # a bool is not a uniform number
        lambda: (np.array([0.0, 0.5, 0.5]), "0"),  # nor is a string
        lambda: (np.full(7, 1 / 7), ex02.JUST_BELOW_ONE),  # past the end (index 7): not a token of probability 0
        not_attempted,
    ],
)
def test_counterexample_rejects_non_counterexamples(wrong, capsys):
    assert not ex02.check_counterexample(wrong)
    assert capsys.readouterr().out.startswith("✗")


def test_counterexample_says_buggy_draw_is_wrong_there_but_on_a_token_with_mass(capsys):
    """u = 0.5 on the step of a zero token in the middle: buggy_draw is wrong (0, not 2), but not the bug asked."""
    assert not ex02.check_counterexample(lambda: (np.array([0.5, 0.0, 0.5]), 0.5))
    out = capsys.readouterr().out
    assert out.startswith(
        "✗ find_counterexample: buggy_draw is wrong here (the right token is 2), but the token it picks has "
        "probability 0.5: the exercise asks for a u on which it picks a token of probability 0."
    )
    assert "Which zero-probability token can own a non-empty piece?" in out and "not a counterexample" not in out


def test_counterexample_says_when_buggy_draw_is_right(capsys):
    assert not ex02.check_counterexample(lambda: (np.array([0.25, 0.75]), 0.5))
    out = capsys.readouterr().out
    assert out.startswith("✗ find_counterexample: not a counterexample: buggy_draw returns token 1, the right token")


def test_counterexample_says_past_the_end_is_another_bug(capsys):
    assert not ex02.check_counterexample(lambda: (np.full(7, 1 / 7), ex02.JUST_BELOW_ONE))
    out = capsys.readouterr().out
    assert out.startswith("✗ find_counterexample: buggy_draw returns 7, past the end of the vocabulary")
    assert "a token of probability 0" in out and "= 7)" in out


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


def coin_flip(sampler_a, sampler_b, probs, rng):  # guesses; one call per pair, in one position, would let it through
    return "a" if rng.integers(2) else "b"


def always_a(sampler_a, sampler_b, probs, rng):
    return "a"


def always_b(sampler_a, sampler_b, probs, rng):
    return "b"


def peeks_at_the_name(sampler_a, sampler_b, probs, rng):  # reads which function it was given, not its draws
    return "b" if getattr(sampler_a, "__name__", "") == "exact_sampler" else "a"


def peeks_at_the_object(sampler_a, sampler_b, probs, rng):
    return "b" if sampler_a is ex02.exact_sampler else "a"


def peeks_at_the_closure(sampler_a, sampler_b, probs, rng):  # digs the real sampler out of the wrapper
    inside = [cell.cell_contents for cell in getattr(sampler_a, "__closure__", None) or ()]
    return "b" if ex02.exact_sampler in inside else "a"


def compares_total_variations(sampler_a, sampler_b, probs, rng):
    """Also sound: the sampler whose empirical distribution is farther from probs, with 10^5 draws."""
    tv = [
        total_variation(np.bincount(sampler(probs, 100_000, rng), minlength=len(probs)) / 100_000, probs)
        for sampler in (sampler_a, sampler_b)
    ]
    return "a" if tv[0] > tv[1] else "b"


def test_which_is_wrong_accepts_any_method_that_reads_only_the_draws():
    assert ex02.check_which_is_wrong(compares_total_variations)


@pytest.mark.parametrize(
    "wrong",
    [
        too_few_draws,
        larger_p_value_is_wrong,
        compares_the_samplers_to_each_other,
        coin_flip,
        always_a,
        always_b,
        peeks_at_the_name,
        peeks_at_the_object,
        peeks_at_the_closure,
    ],
)
def test_which_is_wrong_rejects_wrong_answers(wrong, capsys):
    assert not ex02.check_which_is_wrong(wrong)
    out = capsys.readouterr().out
    assert out.startswith("✗ which_is_wrong: ") and "ou answered" in out and "default_rng(" in out


def test_which_is_wrong_names_too_few_draws_first(capsys):
    assert not ex02.check_which_is_wrong(too_few_draws)
    out = capsys.readouterr().out
    assert out.startswith("✗ which_is_wrong: your function drew only 300 tokens from each sampler: at that size ")
    assert "an exact sampler's statistic varies as much as a wrong one's (section 6's table at 10^3); draw more" in out
    assert ". You answered '" in out and "default_rng(" in out


def few_draws_from_b(sampler_a, sampler_b, probs, rng):  # 10^5 draws from a, 500 from b
    p_values = [
        chi_square_test(np.bincount(sampler(probs, n, rng), minlength=len(probs)), probs).p_value
        for sampler, n in ((sampler_a, 100_000), (sampler_b, 500))
    ]
    return "a" if p_values[0] < p_values[1] else "b"


def test_which_is_wrong_names_the_sampler_drawn_too_little(capsys):
    assert not ex02.check_which_is_wrong(few_draws_from_b)
    assert capsys.readouterr().out.startswith("✗ which_is_wrong: your function drew only 500 tokens from sampler_b")


@pytest.mark.parametrize("blind", [coin_flip, always_a, peeks_at_the_name, peeks_at_the_closure])
def test_which_is_wrong_says_when_the_function_never_drew(blind, capsys):
    assert not ex02.check_which_is_wrong(blind)
    out = capsys.readouterr().out
    assert out.startswith("✗ which_is_wrong: your function never drew from either sampler")


def test_which_is_wrong_runs_every_pair_in_both_positions_with_several_seeds():
    cases = ex02.which_is_wrong_cases()
    placed = {(wrong, position, seed) for _, wrong, _, position, seed in cases}
    wrongs = {wrong for _, wrong, _, _, _ in cases}
    seeds = {seed for *_, seed in cases}
    assert len(wrongs) == 4 and len(seeds) >= 3
    assert placed == {(w, p, s) for w in wrongs for p in "ab" for s in seeds}


def test_which_is_wrong_stub_fails():
    assert not ex02.check_which_is_wrong(not_attempted)


@pytest.mark.parametrize("case", [case for case in ex02.which_is_wrong_cases() if case[3] == "b"])
def test_each_wrong_sampler_is_really_wrong_and_the_exact_one_is_not(case):
    probs, wrong, _, _, seed = case
    rng = np.random.default_rng(seed)
    exact = chi_square_test(np.bincount(ex02.exact_sampler(probs, 100_000, rng), minlength=len(probs)), probs)
    biased = chi_square_test(np.bincount(wrong(probs, 100_000, rng), minlength=len(probs)), probs)
    assert exact.p_value > 1e-3 and biased.p_value < 1e-6
