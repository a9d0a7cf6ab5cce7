"""Prompt-lookup drafting (specdec/lookup.py, notebook 10): what it copies, its state, and exactness.

A draft only proposes, so any draft keeps the target's law, provided the q handed to verification
is the distribution the draft token was drawn from. PromptLookupDraft's q is the mixture
copy_weight * (copied token) + (1 - copy_weight) * fallback. The chi-square tests of
test_speculative.py run end to end with it, and two wrong variants that report the fallback's q
instead of the mixture must be rejected by the same tests.
"""

from functools import cache
from unittest import mock

import numpy as np
import pytest
from test_speculative import DRAFT_LOGITS, PROMPT, SETTINGS, TARGET_LOGITS, expected, observed

import specdec
import specdec.speculative
from specdec import PromptLookupDraft, SamplingParams, generate, load_model, sampling_probs, speculative_generate
from specdec.drawing import chi_square_test, draw
from specdec.exact import TableModel
from specdec.logits import log_softmax
from specdec.lookup import LookupState
from specdec.speculative import propose

ALPHA, REJECT = 1e-3, 1e-6
SETTING = "T=1"
MAX_NEW = 5
N_RUNS, N_CONTROL = 10_000, 4_000
# The toy target is a bigram model: its law depends on the last prompt token only, so the expected
# laws of test_speculative.py (prompt = PROMPT) hold for this longer prompt, which gives the lookup
# something to copy from the first draft on.
LOOKUP_PROMPT = [PROMPT, 4, 1, 3, PROMPT]


def toy_lookup(copy_weight: float = 0.5) -> PromptLookupDraft:
    """Over a 5-token vocabulary a 1-token match is frequent: most drafts are mixtures with a copy."""
    return PromptLookupDraft(TableModel(DRAFT_LOGITS, "draft"), min_match=1, max_match=3, copy_weight=copy_weight)


def reports_the_fallbacks_q(drawn_from: str):
    """A wrong propose: draws from the mixture (or takes the copy outright) but hands over the fallback's q."""

    def wrong_propose(draft, state, sequence, gamma, params, rng, min_confidence=0.0):
        draft.score(sequence[state.length :], state)
        drafts, rows = [], []
        for i in range(gamma):
            fallback = sampling_probs(draft.fallback.logits[state.tokens[-1]], params)  # (V,) the n-gram's q
            copy = draft.continuation(state)
            if drawn_from == "the copy" and copy is not None:
                token = copy
            else:
                token = int(draw(sampling_probs(mixture(draft, state), params), rng))
            if fallback[token] == 0:  # the reported q must at least allow the token
                token = int(draw(fallback, rng))
            drafts.append(token)
            rows.append(fallback)
            if i < gamma - 1:
                draft.score([token], state)
        return drafts, np.array(rows)

    return wrong_propose


def mixture(draft: PromptLookupDraft, state: LookupState) -> np.ndarray:
    """The lookup draft's logits for the next token, recomputed from its state (for the wrong variants)."""
    fallback = np.exp(log_softmax(draft.fallback.logits[state.tokens[-1]]))
    copy = draft.continuation(state)
    if copy is None:
        return np.log(fallback)
    probs = (1 - draft.copy_weight) * fallback
    probs[copy] += draft.copy_weight
    return np.log(probs)


RULES = {
    "exact": propose,
    "copies, reports the fallback's q": reports_the_fallbacks_q("the copy"),
    "mixes, reports the fallback's q": reports_the_fallbacks_q("the mixture"),
}


@cache
def run(rule: str, gamma, n_runs: int):
    target, draft = TableModel(TARGET_LOGITS, "target"), toy_lookup()
    rng = np.random.default_rng([11, list(RULES).index(rule), 0 if gamma == "auto" else gamma])
    tokens = np.zeros((n_runs, MAX_NEW), dtype=np.int64)
    first_round = np.zeros(n_runs, dtype=np.int64)
    with mock.patch.object(specdec.speculative, "propose", RULES[rule]):
        for i in range(n_runs):
            result = speculative_generate(target, draft, LOOKUP_PROMPT, MAX_NEW, SETTINGS[SETTING], gamma, rng)
            tokens[i], first_round[i] = result.tokens, result.accepted_per_round[0]
    return tokens, first_round


@pytest.mark.parametrize("gamma", [2, "auto"])
@pytest.mark.parametrize("position", ["first token", "third token", "tokens 1 and 2"])
def test_speculative_sampling_with_a_lookup_draft_follows_the_target(position, gamma):
    tokens, first_round = run("exact", gamma, N_RUNS)
    result = chi_square_test(observed(position, tokens, first_round), expected(position, SETTING))
    assert result.p_value > ALPHA, result


@pytest.mark.parametrize("rule", ["copies, reports the fallback's q", "mixes, reports the fallback's q"])
@pytest.mark.parametrize("position", ["first token", "third token", "tokens 1 and 2"])
def test_the_same_tests_reject_a_lookup_draft_that_reports_the_wrong_q(position, rule):
    tokens, first_round = run(rule, 2, N_CONTROL)
    result = chi_square_test(observed(position, tokens, first_round), expected(position, SETTING))
    assert result.p_value < REJECT, result


def test_it_proposes_what_followed_the_most_recent_longest_match():
    fallback = TableModel(np.zeros((10, 10)), "flat")
    draft = PromptLookupDraft(fallback, min_match=2, max_match=4, copy_weight=1.0)
    state = draft.start()
    #          0  1  2  3  4  5  6  7  8  9 10 11 12
    text = [1, 2, 3, 7, 9, 2, 3, 8, 1, 2, 3]  # "2 3" ended at 2 and 6; "1 2 3" only at 2 -> 7 follows
    logits = draft.score(text, state)
    assert np.argmax(logits[-1]) == 7 and np.isneginf(np.delete(logits[-1], 7)).all()
    assert draft.continuation(state) == 7
    draft.score([5, 2, 3], state)  # now "2 3" after 5: the longest match is 2 tokens; the most recent is at 10
    assert draft.continuation(state) == 5  # position 10 was followed by 5


def test_no_match_means_the_fallbacks_distribution():
    fallback = TableModel(DRAFT_LOGITS, "draft")
    draft = PromptLookupDraft(fallback, min_match=3)
    logits = draft.score([0, 1, 2, 3, 4], draft.start())
    np.testing.assert_allclose(logits, log_softmax(DRAFT_LOGITS[[0, 1, 2, 3, 4]]), atol=1e-12)


def test_its_distribution_is_the_mixture():
    draft = toy_lookup(copy_weight=0.3)
    state = draft.start()
    logits = draft.score([1, 2, 1], state)[-1]  # "1" ended at 0 and was followed by 2
    fallback = np.exp(log_softmax(DRAFT_LOGITS[1]))
    want = 0.7 * fallback
    want[2] += 0.3
    np.testing.assert_allclose(np.exp(logits), want, rtol=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_rolling_back_gives_the_same_logits_as_a_fresh_state(seed):
    rng = np.random.default_rng(seed)
    draft = PromptLookupDraft(TableModel(DRAFT_LOGITS, "draft", max_context=400), min_match=2, max_match=4)
    text = rng.integers(0, 3, size=60).tolist()  # 3 tokens of 5: many matches
    state = draft.start()
    draft.score(text[:10], state)
    for _ in range(30):
        keep = int(rng.integers(0, state.length + 1))
        state.rollback(keep)
        more = int(rng.integers(1, 6))
        logits = draft.score(text[keep : keep + more], state)
        fresh_state = draft.start()
        fresh = draft.score(text[: keep + more], fresh_state)[keep:]
        np.testing.assert_array_equal(logits, fresh)
        assert state.length == keep + more and state.fallback.length == keep + more


def test_greedy_with_the_bundled_models_is_still_plain_greedy():
    target, ngram = load_model("target"), load_model("draft")
    draft = PromptLookupDraft(ngram)
    prompt = np.array(specdec.load_tokenizer().encode("    def push(self, item):\n        self.items.append(item)\n"))
    for gamma in (3, "auto"):
        result = speculative_generate(target, draft, prompt, 120, SamplingParams(0.0), gamma)
        np.testing.assert_array_equal(result.tokens, generate(target, prompt, 120, SamplingParams(0.0)).tokens)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"min_match": 0}, ValueError, "min_match must be an integer >= 1"),
        ({"min_match": 3, "max_match": 2}, ValueError, "max_match must be an integer >= 3"),
        ({"copy_weight": 1.5}, ValueError, "copy_weight must be"),
        ({"copy_weight": "half"}, TypeError, "copy_weight must be"),
        ({"candidates": 0}, ValueError, "candidates must be an integer >= 1"),
    ],
)
def test_bad_settings_are_refused_by_name(kwargs, error, message):
    with pytest.raises(error, match=message):
        PromptLookupDraft(TableModel(DRAFT_LOGITS, "draft"), **kwargs)


def test_a_foreign_state_is_refused():
    with pytest.raises(TypeError, match="state must be a LookupState"):
        toy_lookup().score([1], TableModel(DRAFT_LOGITS, "d").start())
