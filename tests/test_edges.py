"""Edge cases that one-line bugs hide behind: each test below fails for a specific wrong variant.

The stopping rule of gamma="auto" (the block's probability, compared with `<`), the vocabulary
check in both directions, large vocabularies whose top-k ties run past the candidates, the
one-row and the batched draw agreeing, the chi-square test's statistic, degrees of freedom and
p-value on hand-computed cases, and the n-gram reading all of its context.
"""

import math

import numpy as np
import pytest

import specdec
from specdec import SamplingParams, speculative_generate
from specdec.drawing import chi_square_test, draw
from specdec.ngram import NGramModel
from specdec.pipeline import composed_sampling_probs
from specdec.protocol import TokenHistory
from specdec.speculative import propose
from specdec.validation import check_new_tokens

GREEDY, T1 = SamplingParams(0.0), SamplingParams(1.0)


class FixedDraft:
    """A draft whose every row is the same logits: its top token has a known softmax probability."""

    def __init__(self, logits, name: str = "fixed"):
        self.logits = np.asarray(logits, dtype=np.float64)  # (V,)
        self.vocab_size, self.max_context, self.name = self.logits.size, 1000, name

    def start(self) -> TokenHistory:
        return TokenHistory()

    def score(self, tokens, state: TokenHistory) -> np.ndarray:
        tokens = check_new_tokens(tokens, self.vocab_size)
        state.tokens.extend(tokens.tolist())
        return np.tile(self.logits, (tokens.size, 1))  # (n, V)


def two_way(top: float, vocab: int = 6) -> np.ndarray:
    """Logits whose softmax gives token 0 probability `top` and token 1 the rest (others -inf)."""
    logits = np.full(vocab, -np.inf)
    logits[0], logits[1] = 0.0, math.log((1 - top) / top)
    return logits


def drafted(logits, min_confidence: float, params: SamplingParams = GREEDY, gamma: int = 8) -> int:
    draft = FixedDraft(logits)
    rng = None if params.greedy else np.random.default_rng(0)
    tokens, _ = propose(draft, draft.start(), [0, 0], gamma, params, rng, min_confidence)
    return len(tokens)


# --- the stopping rule of gamma="auto" ---------------------------------------------------


def test_auto_stops_on_the_blocks_probability_not_on_each_tokens():
    # every token is 0.6 sure, each above 0.3; the block is 0.6, 0.36, then 0.216 < 0.3: stop at 3
    assert drafted(two_way(0.6), 0.3) == 3
    assert drafted(two_way(0.6), 0.0) == 8  # no threshold: the whole gamma


def test_auto_continues_when_the_block_equals_the_threshold_exactly():
    # 0.5 * 0.5 = 0.25 exactly (two tied tokens): "below 0.25" is false, so a third token is drafted
    tied = np.array([0.0, 0.0, -np.inf, -np.inf])
    assert drafted(tied, 0.25) == 3
    assert drafted(tied, 0.2500001) == 2


def test_sampled_auto_multiplies_the_probabilities_of_the_drawn_tokens():
    # sampled: q(token) of whichever token was drawn; with one possible token of probability 1 the
    # block never falls, and with two equally likely tokens it halves at every draft
    sure = np.array([0.0, -np.inf, -np.inf])
    assert drafted(sure, 0.99, T1) == 8
    assert drafted(np.array([0.0, 0.0, -np.inf]), 0.25, T1) == 3


# --- the vocabulary check ----------------------------------------------------------------


@pytest.mark.parametrize(("target_vocab", "draft_vocab"), [(6, 7), (7, 6)])
def test_target_and_draft_must_share_a_vocabulary_either_way(target_vocab, draft_vocab):
    target, draft = FixedDraft(np.zeros(target_vocab), "t"), FixedDraft(np.zeros(draft_vocab), "d")
    with pytest.raises(ValueError, match=f"vocab_size {target_vocab} vs {draft_vocab}"):
        speculative_generate(target, draft, [1, 2], 4, GREEDY, gamma=2)


# --- large vocabularies: ties with the k-th logit past the candidates ---------------------


def test_large_vocabularies_with_many_ties_match_the_composed_filters():
    """Integer logits over V > 1024 tie often, also at the k-th largest: the top-p mass must count every tie."""
    rng = np.random.default_rng(20261201)
    for _ in range(300):
        vocab = int(rng.integers(1025, 3000))
        logits = rng.integers(0, int(rng.integers(3, 30)), vocab).astype(np.float64)  # (V,) few distinct values
        params = SamplingParams(
            float(rng.choice([0.5, 1.0, 2.0])), int(rng.integers(1, 80)), float(rng.uniform(0.2, 0.99))
        )
        fast, slow = specdec.sampling_probs(logits, params), composed_sampling_probs(logits, params)
        np.testing.assert_array_equal(fast > 0, slow > 0)
        np.testing.assert_allclose(fast, slow, rtol=1e-11, atol=0)


# --- one row and a batch draw the same token ---------------------------------------------


def test_one_row_and_a_batch_of_one_draw_the_same_token_from_the_same_generator():
    rng = np.random.default_rng(7)
    for seed in range(300):
        vocab = int(rng.integers(2, 200))
        probs = rng.dirichlet(np.full(vocab, 0.3))  # (V,) peaked rows, many tiny entries
        probs[rng.random(vocab) < 0.3] = 0.0  # and some zeros
        if probs.sum() == 0:
            probs[0] = 1.0
        probs /= probs.sum()
        one = draw(probs, np.random.default_rng(seed))
        batch = draw(probs[None, :], np.random.default_rng(seed))  # (1,)
        assert one == batch[0], (seed, vocab)


# --- the chi-square test on known cases ----------------------------------------------------


def test_chi_square_statistic_dof_and_p_value_by_hand():
    # expected 25, 25, 50: (30 - 25)^2 / 25 + (20 - 25)^2 / 25 + 0 = 2, with 3 - 1 = 2 degrees of freedom,
    # whose survival function is exp(-x / 2)
    result = chi_square_test([30, 20, 50], [0.25, 0.25, 0.5])
    assert result.statistic == pytest.approx(2.0, rel=1e-12)
    assert result.dof == 2
    assert result.p_value == pytest.approx(math.exp(-1.0), rel=1e-9)
    # 1 degree of freedom: survival function erfc(sqrt(x / 2)); (60 - 50)^2 / 50 * 2 = 4
    result = chi_square_test([60, 40], [0.5, 0.5])
    assert (result.statistic, result.dof) == (pytest.approx(4.0), 1)
    assert result.p_value == pytest.approx(math.erfc(math.sqrt(2.0)), rel=1e-9)
    # 4 degrees of freedom: exp(-x/2) (1 + x/2); five equal cells of 20, counts 30 10 20 20 20 -> 10
    result = chi_square_test([30, 10, 20, 20, 20], [0.2] * 5)
    assert (result.statistic, result.dof) == (pytest.approx(10.0), 4)
    assert result.p_value == pytest.approx(math.exp(-5.0) * 6.0, rel=1e-9)


# --- the n-gram reads its whole context ----------------------------------------------------


def test_an_order_3_ngram_tells_apart_contexts_that_differ_two_tokens_back():
    # after (1, 0) always 2; after (3, 0) always 4: only the token two back tells which
    stream = np.array([1, 0, 2, 3, 0, 4] * 200)
    model = NGramModel.build(stream, order=3, vocab_size=5)
    after_one = np.exp(model.score([1, 0], model.start())[-1])  # (5,)
    after_three = np.exp(model.score([3, 0], model.start())[-1])  # (5,)
    assert after_one[2] > 0.9 and after_three[4] > 0.9
    assert after_one[4] < 0.05 and after_three[2] < 0.05
