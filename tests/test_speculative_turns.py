"""The two turns of a speculative round, `propose` and `verify`, on models whose logits we choose.

The toy models give the same logits at every position, so what each turn must return is known
exactly; in particular, verification must divide by the draft's *filtered* distribution q, the one
its tokens were really drawn from, not by the unfiltered softmax.
"""

import numpy as np
import pytest

import specdec
import specdec.speculative as speculative
from specdec import SamplingParams
from specdec.speculative import propose, verify_round


class Constant:
    """A LanguageModel whose logits are the same row at every position (its state only counts tokens)."""

    def __init__(self, row, name: str = "constant"):
        self.row = np.asarray(row, dtype=np.float64)  # (V,)
        self.name, self.vocab_size, self.max_context = name, self.row.size, 10_000

    class State:
        def __init__(self):
            self.length = 0

        def rollback(self, length):
            self.length = length

    def start(self):
        return Constant.State()

    def score(self, tokens, state):
        n = len(tokens)
        state.length += n
        return np.tile(self.row, (n, 1))  # (n, V)


# A draft whose filtered q differs a lot from its softmax: top-2 keeps 0.4 + 0.2 of the mass.
DRAFT_ROW = np.log([0.4, 0.2, 0.1, 0.1, 0.1, 0.1])
TARGET_ROW = np.log([0.2, 0.5, 0.1, 0.1, 0.05, 0.05])
TOP2 = SamplingParams(temperature=1.0, top_k=2)


def test_propose_returns_the_filtered_rows_its_tokens_were_drawn_from():
    draft = Constant(DRAFT_ROW)
    state = draft.start()
    drafts, q = propose(draft, state, [1, 2, 3], 5, TOP2, np.random.default_rng(0))
    expected = specdec.sampling_probs(DRAFT_ROW, TOP2)  # (V,) [2/3, 1/3, 0, 0, 0, 0]
    assert q.shape == (5, 6)
    np.testing.assert_array_equal(q, np.tile(expected, (5, 1)))
    assert set(drafts) <= {0, 1}  # never a token the filter dropped
    assert state.length == 3 + 4  # caught up on the sequence, read every draft but the last


def test_propose_greedy_takes_the_argmax_and_needs_no_rows():
    draft = Constant(DRAFT_ROW)
    drafts, q = propose(draft, draft.start(), [1], 3, SamplingParams(0), None)
    assert drafts == [0, 0, 0] and q is None


def test_verification_divides_by_the_filtered_q(monkeypatch):
    """Deterministic: every q that reaches verify_drawn must equal sampling_probs(draft logits, params)."""
    seen = []
    real = speculative.verify_drawn

    def recording(tokens, q, p, rng):
        seen.append(q.copy())
        return real(tokens, q, p, rng)

    monkeypatch.setattr(speculative, "verify_drawn", recording)
    target, draft = Constant(TARGET_ROW, "target"), Constant(DRAFT_ROW, "draft")
    specdec.speculative_generate(target, draft, [1, 2], 30, TOP2, gamma=3, rng=np.random.default_rng(1))
    expected = specdec.sampling_probs(DRAFT_ROW, TOP2)
    assert seen, "verify_drawn was never called"
    for q in seen:
        np.testing.assert_array_equal(q, np.tile(expected, (q.shape[0], 1)))


def test_the_acceptance_rate_is_the_one_of_the_filtered_q():
    """alpha = sum_x min(p, q) with both filtered (0.62); dividing by the unfiltered q would give 0.81."""
    target, draft = Constant(TARGET_ROW, "target"), Constant(DRAFT_ROW, "draft")
    p, q = specdec.sampling_probs(TARGET_ROW, TOP2), specdec.sampling_probs(DRAFT_ROW, TOP2)
    alpha = np.minimum(p, q).sum()  # 0.2/0.7 + 1/3 = 0.619
    q_unfiltered = specdec.softmax(DRAFT_ROW)
    alpha_if_unfiltered = (q * np.minimum(1, p / q_unfiltered)).sum()  # 2/3 * (0.2/0.7) / 0.4 + 1/3 = 0.810
    accepted = tested = 0
    for seed in range(40):
        result = specdec.speculative_generate(target, draft, [1], 100, TOP2, gamma=2, rng=np.random.default_rng(seed))
        rejected = sum(n < g for n, g in zip(result.accepted_per_round, result.drafted_per_round, strict=True))
        accepted, tested = accepted + result.accepted, tested + result.accepted + rejected
    measured = accepted / tested  # about 2,700 tested drafts: standard error about 0.01
    assert alpha_if_unfiltered - alpha > 0.15  # the two hypotheses are far apart: this test can tell them apart
    assert abs(measured - alpha) < 0.05


def test_verify_greedy_accepts_the_matching_prefix_and_adds_the_target_token():
    target = Constant(TARGET_ROW, "target")  # argmax 1 everywhere
    state = target.start()
    emitted, n = verify_round(target, state, [3, 4], [1, 1, 0, 1], None, SamplingParams(0), None)
    assert (emitted, n) == ([1, 1, 1], 2)
    assert state.length == 2 + 4  # read the unread sequence and every draft, in one call


def test_verify_with_no_drafts_is_one_ordinary_step():
    target = Constant(np.log([0.0001, 0.9999, 1e-12]), "target")
    emitted, n = verify_round(
        target, target.start(), [0], [], None, SamplingParams(1.0, top_k=1), np.random.default_rng(0)
    )
    assert (emitted, n) == ([1], 0)


@pytest.mark.parametrize("gamma", [1, 2, 5])
def test_the_driver_counts_one_target_call_per_round_and_one_draft_call_per_draft(gamma):
    target, draft = Constant(TARGET_ROW, "target"), Constant(DRAFT_ROW, "draft")
    result = specdec.speculative_generate(target, draft, [1], 25, TOP2, gamma=gamma, rng=np.random.default_rng(3))
    assert result.tokens.size == 25
    rounds_with_drafts = len(result.drafted_per_round)
    assert rounds_with_drafts <= result.target_calls <= rounds_with_drafts + 1  # + a last round with nothing to draft
    assert result.draft_calls == result.drafted == sum(result.drafted_per_round)
    assert result.accepted == sum(result.accepted_per_round)
