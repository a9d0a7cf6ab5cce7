"""gamma="auto": the draft decides, round by round, how many tokens to propose; the output law must not change.

Stopping early is a decision made from the draft's own probabilities only, before the target
has seen anything, so verification stays exact (notebook 08, Going further). The evidence: the
chi-square tests of test_speculative.py, end to end through speculative_generate with
gamma="auto" on the toy pair, and two plausible adaptive rules that break exactness, which the
same tests must reject: one ends a block before the draft that made it unsure (so that draft
was drawn, then thrown away for its value), the other re-draws a draft token the draft is unsure
of. Either way the drafts no longer come from the q they report.
"""

from functools import cache
from unittest import mock

import numpy as np
import pytest
from test_speculative import (
    DRAFT_LOGITS,
    PROMPT,
    SETTINGS,
    TARGET_LOGITS,
    expected,
    observed,
    tables,
)

import specdec.speculative
from specdec import SamplingParams, generate, load_model, sampling_probs, speculative_generate
from specdec.drawing import chi_square_test, draw
from specdec.exact import TableModel
from specdec.speculative import AUTO_MAX_GAMMA, AUTO_MIN_CONFIDENCE, propose

ALPHA, REJECT = 1e-3, 1e-6
SETTING = "T=1"
MAX_NEW = 5
N_RUNS, N_CONTROL = 10_000, 10_000
TOY_MAX_GAMMA, TOY_MIN_CONFIDENCE = 3, 0.3  # the toy draft's q(x) spans 0.01-1: rounds of every length


def drops_the_unsure_draft(draft, state, sequence, gamma, params, rng, min_confidence=0.0):
    """Wrong: the block ends BEFORE the draft that took its probability below the threshold.

    That draft was drawn and is then thrown away because of its value, so the drafts that
    reach the target no longer come from q (an off-by-one of the exact rule, which keeps it).
    """
    drafts, q = propose(draft, state, sequence, gamma, params, rng, min_confidence)
    block = np.cumprod(q[np.arange(len(drafts)), drafts])  # (g,)
    if block[-1] < min_confidence:
        return (drafts[:-1], q[:-1]) if len(drafts) > 1 else ([], None)
    return drafts, q


def redraws_unsure_drafts(draft, state, sequence, gamma, params, rng, min_confidence=0.0):
    """Wrong: a draft token with q(x) < 0.5 is drawn again once, but q is reported as if drawn once."""
    logits = draft.score(sequence[state.length :], state)[-1]
    drafts, rows = [], []
    for i in range(gamma):
        q = sampling_probs(logits, params)
        token = int(draw(q, rng))
        if q[token] < 0.5:
            token = int(draw(q, rng))
        drafts.append(token)
        rows.append(q)
        if i < gamma - 1:
            logits = draft.score([token], state)[0]
    return drafts, np.array(rows)


RULES = {
    "exact": propose,
    "drops the unsure draft": drops_the_unsure_draft,
    "re-draws unsure drafts": redraws_unsure_drafts,
}


@cache
def run(rule: str, n_runs: int):
    """n_runs of speculative_generate(..., gamma="auto") on the toy pair; returns tokens, first rounds, gammas."""
    target, draft = TableModel(TARGET_LOGITS, "target"), TableModel(DRAFT_LOGITS, "draft")
    rng = np.random.default_rng([7, list(RULES).index(rule)])
    tokens = np.zeros((n_runs, MAX_NEW), dtype=np.int64)
    first_round = np.zeros(n_runs, dtype=np.int64)
    gammas = []
    with (
        mock.patch.object(specdec.speculative, "AUTO_MAX_GAMMA", TOY_MAX_GAMMA),
        mock.patch.object(specdec.speculative, "AUTO_MIN_CONFIDENCE", TOY_MIN_CONFIDENCE),
        mock.patch.object(specdec.speculative, "propose", RULES[rule]),
    ):
        for i in range(n_runs):
            result = speculative_generate(target, draft, [PROMPT], MAX_NEW, SETTINGS[SETTING], "auto", rng)
            tokens[i] = result.tokens
            first_round[i] = result.accepted_per_round[0] if result.accepted_per_round else 0
            gammas += result.drafted_per_round
    return tokens, first_round, np.array(gammas)


POSITIONS = ["first token", "third token", "tokens 1 and 2"]


def test_the_toy_rounds_draft_every_number_of_tokens_up_to_the_cap():
    _, _, gammas = run("exact", N_RUNS)
    assert set(gammas.tolist()) == {1, 2, 3}  # early stops, full rounds and the shorter last rounds


@pytest.mark.parametrize("position", POSITIONS)
def test_automatic_gamma_follows_the_target(position):
    tokens, first_round, _ = run("exact", N_RUNS)
    result = chi_square_test(observed(position, tokens, first_round), expected(position, SETTING))
    assert result.p_value > ALPHA, result


# Where each wrong rule shows. Dropping a draft never happens at the first one here (every token the
# toy draft is likely to propose first has q >= 0.3), so that rule leaves the first token's law alone.
CONTROLS = [
    ("first token", "re-draws unsure drafts"),
    ("tokens 1 and 2", "re-draws unsure drafts"),
    ("third token", "drops the unsure draft"),
    ("tokens 1 and 2", "drops the unsure draft"),
]


@pytest.mark.parametrize(("position", "rule"), CONTROLS)
def test_the_same_tests_reject_adaptive_rules_that_are_not_exact(position, rule):
    tokens, first_round, _ = run(rule, N_CONTROL)
    result = chi_square_test(observed(position, tokens, first_round), expected(position, SETTING))
    assert result.p_value < REJECT, result


def test_auto_is_the_default_and_greedy_still_equals_generate():
    target, draft = load_model("target"), load_model("draft")
    prompt = np.arange(3, 40)
    result = speculative_generate(target, draft, prompt, 60, SamplingParams(0.0))
    assert max(result.drafted_per_round) <= AUTO_MAX_GAMMA
    assert any(g < AUTO_MAX_GAMMA for g in result.drafted_per_round[:-2])  # it stopped early, not only at the end
    np.testing.assert_array_equal(result.tokens, generate(target, prompt, 60, SamplingParams(0.0)).tokens)


def test_a_round_stops_exactly_when_the_blocks_probability_falls_below_the_threshold():
    draft = TableModel(DRAFT_LOGITS, "draft")
    params = SamplingParams(1.0)
    _, Q = tables(SETTING)
    for seed in range(50):
        drafts, q = propose(draft, draft.start(), [PROMPT], 6, params, np.random.default_rng(seed), 0.2)
        block = np.cumprod([Q[c, x] for c, x in zip([PROMPT, *drafts[:-1]], drafts, strict=True)])
        assert len(drafts) == (6 if (block >= 0.2).all() else int(np.argmax(block < 0.2)) + 1)
        np.testing.assert_array_equal(q, Q[[PROMPT, *drafts[:-1]]])


def test_gamma_refuses_other_words():
    target, draft = TableModel(TARGET_LOGITS, "target"), TableModel(DRAFT_LOGITS, "draft")
    with pytest.raises(ValueError, match=r'gamma must be an integer >= 1 or "auto", got \'adaptive\''):
        speculative_generate(target, draft, [0], 3, SamplingParams(1.0), "adaptive", np.random.default_rng(0))


def test_the_defaults_are_the_documented_ones():
    assert (AUTO_MAX_GAMMA, AUTO_MIN_CONFIDENCE) == (8, 0.15)


def test_the_statistics_count_the_drafts_a_shortened_round_really_made():
    target, draft = TableModel(TARGET_LOGITS, "target"), TableModel(DRAFT_LOGITS, "draft")
    with mock.patch.object(specdec.speculative, "AUTO_MIN_CONFIDENCE", TOY_MIN_CONFIDENCE):
        result = speculative_generate(
            target, draft, [PROMPT], 40, SamplingParams(1.0), "auto", np.random.default_rng(3)
        )
    assert result.draft_calls == draft.calls  # one score call per drafted token (the first one catches up)
    assert result.drafted == sum(result.drafted_per_round) == draft.calls
    assert result.target_calls == target.calls
