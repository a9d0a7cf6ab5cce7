"""Notebook 10's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import math

import numpy as np
import pytest
from helpers import diagnosis, load_solution

from checkers import ex10
from specdec.timing import expected_tokens

alpha_solution = load_solution("ex10_estimate_alpha")
position_solution = load_solution("ex10_acceptance_per_position")
gamma_solution = load_solution("ex10_best_gamma_by_position")


def stub(*args):
    raise NotImplementedError


# --- estimate_alpha ----------------------------------------------------------------------


def accepted_over_drafted(accepted, drafted):  # the naive rate: counts never-tested drafts as rejected
    return sum(accepted) / sum(drafted)


def a_rejection_every_round(accepted, drafted):  # forgets that a fully accepted round rejected nothing
    return sum(accepted) / (sum(accepted) + len(accepted))


def mean_of_round_rates(accepted, drafted):  # averages per-round rates: a 1-test round weighs as much as a 5-test one
    rates = [n / (n + (n < g)) for n, g in zip(accepted, drafted, strict=True)]
    return sum(rates) / len(rates)


def compares_with_the_largest_gamma(accepted, drafted):  # a round cut short at the end "rejected" its missing drafts
    gamma = max(drafted)
    rejected = sum(1 for n in accepted if n < gamma)
    return sum(accepted) / (sum(accepted) + rejected)


def zero_when_empty(accepted, drafted):  # right, except that no evidence is reported as alpha = 0
    return alpha_solution.estimate_alpha(accepted, drafted) if accepted else 0.0


def gamma_of_the_first_round(accepted, drafted):  # assumes every round drafted as many as the first (not with "auto")
    gamma = drafted[0] if drafted else 0
    rejected = sum(1 for n in accepted if n < gamma)
    tested = sum(accepted) + rejected
    return sum(accepted) / tested if tested else math.nan


def delegates_to_speculative_result(accepted, drafted):  # the exercise asks for the bookkeeping, not .alpha
    from specdec.speculative import SpeculativeResult

    if not accepted:
        return math.nan
    result = SpeculativeResult(np.zeros(0, dtype=np.int64), len(accepted), 0, sum(drafted), sum(accepted), 0.0)
    result.accepted_per_round, result.drafted_per_round = list(accepted), list(drafted)
    return result.alpha


def delegates_to_the_harness(accepted, drafted):  # pooled_alpha is the reference written after the exercise
    from specdec import harness
    from specdec.speculative import SpeculativeResult

    result = SpeculativeResult(np.zeros(0, dtype=np.int64), len(accepted), 0, sum(drafted), sum(accepted), 0.0)
    result.accepted_per_round, result.drafted_per_round = list(accepted), list(drafted)
    return harness.pooled_alpha(result)


def a_rejection_every_round_in_numpy(accepted, drafted):  # the same mistake, as np.float64
    return np.float64(sum(accepted)) / (sum(accepted) + len(accepted))


def float32_alpha(accepted, drafted):  # the right number, in float32: about 7 digits instead of 16
    return np.float32(alpha_solution.estimate_alpha(accepted, drafted))


def test_estimate_alpha_solution_passes():
    assert ex10.check_estimate_alpha(alpha_solution.estimate_alpha)


@pytest.mark.parametrize(
    "wrong",
    [
        accepted_over_drafted,
        a_rejection_every_round,
        mean_of_round_rates,
        compares_with_the_largest_gamma,
        zero_when_empty,
        gamma_of_the_first_round,
        a_rejection_every_round_in_numpy,
        delegates_to_speculative_result,
        delegates_to_the_harness,
        float32_alpha,
    ],
)
def test_estimate_alpha_wrong_answers_fail(wrong, capsys):
    assert not ex10.check_estimate_alpha(wrong)
    assert "✗ estimate_alpha" in capsys.readouterr().out


def test_the_naive_rate_is_caught_on_the_first_case(capsys):
    ex10.check_estimate_alpha(accepted_over_drafted)
    out = capsys.readouterr().out
    assert out.startswith("✗ estimate_alpha: that is accepted / drafted, which counts the drafts after a rejection")
    assert "expected 0.5, got 0.25 (for accepted_per_round = [1], drafted_per_round = [4])" in out


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        (a_rejection_every_round, "you counted a rejection in every round; a round that accepted all its g drafts"),
        (a_rejection_every_round_in_numpy, "you counted a rejection in every round"),
        (compares_with_the_largest_gamma, "compare each round's n with its own g: a round cut short at the end"),
        (gamma_of_the_first_round, "compare each round's n with its own g"),
    ],
)
def test_estimate_alpha_mistakes_are_diagnosed_first(wrong, said, capsys):
    ex10.check_estimate_alpha(wrong)
    out = capsys.readouterr().out
    assert out.startswith(f"✗ estimate_alpha: {said}"), out
    assert out.index(said) < out.index("expected")


def test_a_numpy_float_is_written_as_the_expected_value_is(capsys):
    """got is written like expected (6 significant digits), not as np.float64(0.8)."""
    ex10.check_estimate_alpha(a_rejection_every_round_in_numpy)
    out = capsys.readouterr().out
    assert "expected 1, got 0.8 (for accepted_per_round = [4], drafted_per_round = [4])" in out, out
    assert "np.float64" not in out


def test_every_counterexample_puts_the_diagnosis_before_the_input(capsys):
    """The common policy: what is wrong first, the input it happened on last, in parentheses."""
    for checker, wrong in [
        (ex10.check_estimate_alpha, a_rejection_every_round),
        (ex10.check_estimate_alpha, float32_alpha),
        (ex10.check_acceptance_per_position, clamps_to_the_largest_gamma),
        (ex10.check_best_gamma_by_position, constant_alpha),
        (ex10.check_best_gamma_by_position, returns_a_float),
        (ex10.check_best_gamma_by_position, ignores_the_number_of_rates),
    ]:
        checker(wrong)
        out = capsys.readouterr().out.strip()
        assert not diagnosis(out).startswith("for "), out  # not the input first
        assert out.endswith(")") and " (for " in out, out  # the input last


def test_delegation_is_named_in_the_counterexample(capsys):
    ex10.check_estimate_alpha(delegates_to_speculative_result)
    assert "SpeculativeResult.alpha" in capsys.readouterr().out
    ex10.check_estimate_alpha(delegates_to_the_harness)
    assert "pooled_alpha" in capsys.readouterr().out


def test_the_refused_names_are_restored_after_checking():
    from specdec import harness
    from specdec.speculative import SpeculativeResult

    before = (harness.pooled_alpha, harness.acceptance_counts, SpeculativeResult.__dict__["alpha"])
    ex10.check_estimate_alpha(delegates_to_the_harness)
    ex10.check_acceptance_per_position(delegates_to_acceptance_by_position)
    assert (harness.pooled_alpha, harness.acceptance_counts, SpeculativeResult.__dict__["alpha"]) == before


def test_float32_alpha_is_rejected_for_its_precision_in_words(capsys):
    ex10.check_estimate_alpha(float32_alpha)
    out = capsys.readouterr().out
    assert "float32" in out and "float64" in out


def test_the_estimate_agrees_with_speculative_result_alpha():
    from specdec.speculative import SpeculativeResult

    accepted, drafted = [3, 0, 5, 5, 2, 1], [5, 5, 5, 5, 5, 3]
    result = SpeculativeResult(np.zeros(0, dtype=np.int64), 6, 0, sum(drafted), sum(accepted), 0.0, accepted, drafted)
    assert alpha_solution.estimate_alpha(accepted, drafted) == pytest.approx(result.alpha)


# --- acceptance_per_position -------------------------------------------------------------


def divides_by_all_rounds(accepted, drafted):  # P(reach i and accept), not P(accept i | reached i)
    gamma = max(drafted, default=0)
    counts = np.zeros(gamma)
    for n in accepted:
        counts[:n] += 1
    return counts / max(len(accepted), 1)


def reaches_one_past_the_end(accepted, drafted):  # n + 1 positions reached even when all g were accepted
    gamma = max(drafted, default=0)
    reached, kept = np.zeros(gamma + 1), np.zeros(gamma + 1)
    for n in accepted:
        reached[: n + 1] += 1
        kept[:n] += 1
    with np.errstate(invalid="ignore"):
        return (kept / reached)[:gamma]


def counts_n_plus_one(accepted, drafted):  # tested[: n + 1]: n + 1 positions reached, not capped at the round's g
    gamma = max(drafted, default=0)
    reached, kept = np.zeros(gamma), np.zeros(gamma)
    for n in accepted:
        reached[: n + 1] += 1
        kept[:n] += 1
    return np.where(reached > 0, kept / np.maximum(reached, 1), np.nan)


def divides_by_the_rounds_that_drafted_i(accepted, drafted):  # a round that rejected earlier never reached i
    gamma = max(drafted, default=0)
    drafting, kept = np.zeros(gamma), np.zeros(gamma)
    for n, g in zip(accepted, drafted, strict=True):
        drafting[:g] += 1
        kept[:n] += 1
    return kept / np.maximum(drafting, 1)


def reaches_only_accepted(accepted, drafted):  # forgets the rejected position: every rate is 1 or NaN
    gamma = max(drafted, default=0)
    reached = np.zeros(gamma)
    for n in accepted:
        reached[:n] += 1
    return np.where(reached > 0, 1.0, np.nan)


def zero_where_unreached(accepted, drafted):  # 0 instead of NaN: "never tested" shown as "always rejected"
    return np.nan_to_num(position_solution.acceptance_per_position(accepted, drafted), nan=0.0)


def divides_into_zeros(accepted, drafted):  # the hint's np.divide(..., where=...), but into np.zeros: 0 where unreached
    gamma = max(drafted, default=0)
    reached, kept = np.zeros(gamma), np.zeros(gamma)
    for n, g in zip(accepted, drafted, strict=True):
        reached[: min(n + 1, g)] += 1
        kept[:n] += 1
    return np.divide(kept, reached, out=np.zeros(gamma), where=reached > 0)


def clamps_to_the_largest_gamma(accepted, drafted):  # min(n + 1, gamma) with the largest gamma, not the round's own g
    gamma = max(drafted, default=0)
    reached, kept = np.zeros(gamma), np.zeros(gamma)
    for n in accepted:
        reached[: min(n + 1, gamma)] += 1
        kept[:n] += 1
    return np.where(reached > 0, kept / np.maximum(reached, 1), np.nan)


def positions_of_the_first_round(accepted, drafted):  # gamma = the first round's g: too short when "auto" drafts more
    gamma = drafted[0] if drafted else 0
    reached, kept = np.zeros(gamma), np.zeros(gamma)
    for n, g in zip(accepted, drafted, strict=True):
        reached[: min(n + 1, g, gamma)] += 1
        kept[: min(n, gamma)] += 1
    return np.where(reached > 0, kept / np.maximum(reached, 1), np.nan)


def delegates_to_acceptance_by_position(accepted, drafted):  # the harness's reference, shown in section 2
    from specdec import harness
    from specdec.speculative import SpeculativeResult

    result = SpeculativeResult(np.zeros(0, dtype=np.int64), len(accepted), 0, sum(drafted), sum(accepted), 0.0)
    result.accepted_per_round, result.drafted_per_round = list(accepted), list(drafted)
    return harness.acceptance_by_position(result)


def returns_a_list(accepted, drafted):  # the right numbers, but a list: the statement asks for a numpy array
    return position_solution.acceptance_per_position(accepted, drafted).tolist()


def float32_rates(accepted, drafted):  # the right rates, in float32
    return position_solution.acceptance_per_position(accepted, drafted).astype(np.float32)


def test_acceptance_per_position_solution_passes():
    assert ex10.check_acceptance_per_position(position_solution.acceptance_per_position)


@pytest.mark.parametrize(
    "wrong",
    [
        divides_by_all_rounds,
        reaches_one_past_the_end,
        counts_n_plus_one,
        divides_by_the_rounds_that_drafted_i,
        reaches_only_accepted,
        zero_where_unreached,
        divides_into_zeros,
        clamps_to_the_largest_gamma,
        positions_of_the_first_round,
        delegates_to_acceptance_by_position,
        returns_a_list,
        float32_rates,
    ],
)
def test_acceptance_per_position_wrong_answers_fail(wrong, capsys):
    assert not ex10.check_acceptance_per_position(wrong)
    assert "✗ acceptance_per_position" in capsys.readouterr().out


@pytest.mark.parametrize("wrong", [zero_where_unreached, divides_into_zeros])
def test_a_rate_at_an_unreached_position_is_told_to_be_nan_first(wrong, capsys):
    """The diagnosis leads: positions no round reached were never tested, so NaN is asked there, not 0."""
    ex10.check_acceptance_per_position(wrong)
    out = capsys.readouterr().out
    assert out.startswith("✗ acceptance_per_position: no round reached position(s) [3, 4], so no draft there was")
    assert "asks for np.nan there, not 0" in out and "np.full(gamma, np.nan)" in out
    assert out.index("not 0") < out.index("expected [")  # the mistake before the arrays
    assert "0 / 0" not in out  # no division by zero happened: the zeros were written there


@pytest.mark.parametrize("wrong", [divides_by_all_rounds, divides_by_the_rounds_that_drafted_i])
def test_dividing_by_the_rounds_that_drafted_i_is_named_not_blamed_on_unreached_positions(wrong, capsys):
    """On the first case it looks like 0 written where no round reached; the real mistake shows on the next one,
    where every round drafted every position: dividing by all the rounds and by those that drafted i agree."""
    ex10.check_acceptance_per_position(wrong)
    out = capsys.readouterr().out
    assert out.startswith(
        "✗ acceptance_per_position: you counted every round that drafted position i (here, all the rounds);"
        " a round that rejected an earlier draft never reached i: the rate at position i counts only the rounds"
    ), out
    assert "no round reached" not in out
    assert "accepted_per_round = [4, 0], drafted_per_round = [4, 4]" in out


@pytest.mark.parametrize("wrong", [reaches_one_past_the_end, counts_n_plus_one, clamps_to_the_largest_gamma])
def test_reaching_past_the_rounds_own_g_is_named(wrong, capsys):
    """A round that accepted all its g drafts (g below the largest) reached no position after them."""
    ex10.check_acceptance_per_position(wrong)
    out = capsys.readouterr().out
    assert out.startswith(
        "✗ acceptance_per_position: a round that drafted g reaches positions 1..min(n + 1, g), not n + 1"
    ), out
    assert "accepted_per_round = [4, 2], drafted_per_round = [4, 2]" in out


def test_other_mistakes_get_no_unreached_hint(capsys):
    ex10.check_acceptance_per_position(reaches_only_accepted)  # NaN where a rate exists: a different bug
    out = capsys.readouterr().out
    assert "no round reached" not in out and "divided by all" not in out


def test_the_reasons_for_type_and_precision_are_said_in_words(capsys):
    ex10.check_acceptance_per_position(returns_a_list)
    assert "list" in capsys.readouterr().out
    ex10.check_acceptance_per_position(float32_rates)
    out = capsys.readouterr().out
    assert "float32" in out and "float64" in out
    ex10.check_acceptance_per_position(delegates_to_acceptance_by_position)
    assert "acceptance_by_position" in capsys.readouterr().out


def test_per_position_rates_reproduce_the_mean_tokens_of_full_rounds():
    """1 + a1 + a1 a2 + ... over full rounds is exactly the mean number of tokens those rounds yielded."""
    rng = np.random.default_rng(10)
    gamma = 5
    accepted = [int(n) for n in rng.integers(0, gamma + 1, 200)]
    rates = position_solution.acceptance_per_position(accepted, [gamma] * len(accepted))
    assert 1 + np.cumprod(rates).sum() == pytest.approx(np.mean(accepted) + 1, rel=1e-12)


# --- best_gamma_by_position --------------------------------------------------------------


def candidates(acceptance, f):
    return [g for g in range(1, len(acceptance) + 1) if g + 1 in f]


def constant_alpha(acceptance, c, f):  # one alpha for all positions: the mean of the first gamma rates
    def speedup(g):
        alpha = float(np.mean(acceptance[:g]))
        return expected_tokens(alpha, g) / (g * c + f[g + 1])

    return max(candidates(acceptance, f), key=speedup)


def mean_rate_as_one_alpha(acceptance, c, f):  # one alpha for every gamma: the mean of all the measured rates
    alpha = float(np.mean(acceptance))
    return max(candidates(acceptance, f), key=lambda g: expected_tokens(alpha, g) / (g * c + f[g + 1]))


def sums_instead_of_products(acceptance, c, f):  # treats every draft as kept when accepted, as if independent
    return max(candidates(acceptance, f), key=lambda g: (1 + float(np.sum(acceptance[:g]))) / (g * c + f[g + 1]))


def prices_with_f_of_gamma(acceptance, c, f):  # off by one: verification scores gamma + 1 positions
    valid = [g for g in range(1, len(acceptance) + 1) if g in f]
    return max(valid, key=lambda g: (1 + float(np.cumprod(acceptance[:g]).sum())) / (g * c + f[g]))


def ignores_the_draft_cost(acceptance, c, f):
    return gamma_solution.best_gamma_by_position(acceptance, 0.0, f)


def ignores_the_number_of_rates(acceptance, c, f):  # gamma up to the largest f, rates beyond the last measured ignored
    valid = [g for g in range(1, max(f)) if g + 1 in f]
    return max(valid, key=lambda g: (1 + float(np.cumprod(acceptance)[:g].sum())) / (g * c + f[g + 1]))


def misses_the_largest_gamma(acceptance, c, f):  # range(1, len(acceptance)) stops one short
    valid = [g for g in range(1, len(acceptance)) if g + 1 in f]
    return max(valid, key=lambda g: (1 + float(np.cumprod(acceptance)[:g].sum())) / (g * c + f[g + 1]))


def returns_a_float(acceptance, c, f):  # the right gamma as 5.0: a number of drafts is an integer
    return float(gamma_solution.best_gamma_by_position(acceptance, c, f))


def without_the_leading_one(acceptance, c, f):  # E[tokens] = a1 + a1 a2 + ...: the target's own token forgotten
    return max(candidates(acceptance, f), key=lambda g: float(np.cumprod(acceptance)[:g].sum()) / (g * c + f[g + 1]))


def returns_the_argmax_index(acceptance, c, f):  # the index of the best gamma, which counts from 0
    speedups = [(1 + float(np.cumprod(acceptance)[:g].sum())) / (g * c + f[g + 1]) for g in candidates(acceptance, f)]
    return int(np.argmax(speedups))


def mean_rate_in_the_closed_form(acceptance, c, f):  # the shortcut, with (1 - a**(g + 1)) / (1 - a): 0 / 0 at a = 1
    alpha = float(np.mean(acceptance))
    return max(candidates(acceptance, f), key=lambda g: (1 - alpha ** (g + 1)) / (1 - alpha) / (g * c + f[g + 1]))


def ties_to_the_largest(acceptance, c, f):
    best, best_speedup = None, -math.inf
    for g in candidates(acceptance, f):
        speedup = (1 + float(np.cumprod(acceptance[:g]).sum())) / (g * c + f[g + 1])
        if speedup >= best_speedup:
            best, best_speedup = g, speedup
    return best


def test_best_gamma_by_position_solution_passes():
    assert ex10.check_best_gamma_by_position(gamma_solution.best_gamma_by_position)


@pytest.mark.parametrize(
    "wrong",
    [
        constant_alpha,
        mean_rate_as_one_alpha,
        sums_instead_of_products,
        prices_with_f_of_gamma,
        ignores_the_draft_cost,
        ties_to_the_largest,
        ignores_the_number_of_rates,
        misses_the_largest_gamma,
        returns_a_float,
        without_the_leading_one,
        returns_the_argmax_index,
        mean_rate_in_the_closed_form,
    ],
)
def test_best_gamma_by_position_wrong_answers_fail(wrong, capsys):
    assert not ex10.check_best_gamma_by_position(wrong)
    assert "✗ best_gamma_by_position" in capsys.readouterr().out


HINTS = {
    "one": "E[tokens] starts at 1, the target's own token: write E = 1 + np.cumprod(acceptance)[:gamma].sum()",
    "index": "gamma counts from 1; an index from argmax counts from 0",
    "mean": "that is the gamma the mean of the rates gives as one alpha, the shortcut the statement warns about",
    "largest": "gamma = 4, the largest candidate, wins: the candidates run up to len(acceptance) included",
}


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (without_the_leading_one, "one"),
        (returns_the_argmax_index, "index"),
        (mean_rate_as_one_alpha, "mean"),
        (mean_rate_in_the_closed_form, "mean"),  # the falling rates come before the all-ones case (0 / 0)
        (misses_the_largest_gamma, "largest"),
        # the other mistakes fail first where no diagnosis fits: no hint, only the speedups
        (constant_alpha, None),
        (sums_instead_of_products, None),
        (prices_with_f_of_gamma, None),
        (ignores_the_draft_cost, None),
        (ties_to_the_largest, None),
        (ignores_the_number_of_rates, None),
    ],
)
def test_best_gamma_mistakes_get_their_own_diagnosis_and_no_other(wrong, hint, capsys):
    ex10.check_best_gamma_by_position(wrong)
    out = capsys.readouterr().out
    for name, words in HINTS.items():
        assert (words in out) == (name == hint), (name, out)
    if hint is not None:
        assert out.startswith(f"✗ best_gamma_by_position: {HINTS[hint]}"), out  # the diagnosis first


def test_a_float_gamma_is_rejected_in_words(capsys):
    ex10.check_best_gamma_by_position(returns_a_float)
    assert "float" in capsys.readouterr().out.split("expected")[0]


def test_constant_rates_agree_with_expected_tokens():
    for alpha in (0.0, 0.3, 0.8, 1.0):
        for gamma in (1, 4, 8):
            assert ex10.tokens_by_position(np.full(gamma, alpha), gamma) == pytest.approx(expected_tokens(alpha, gamma))


# --- every checker -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "checker", [ex10.check_estimate_alpha, ex10.check_acceptance_per_position, ex10.check_best_gamma_by_position]
)
def test_a_stub_is_not_attempted_yet(checker, capsys):
    assert not checker(stub)
    assert "not attempted yet" in capsys.readouterr().out
