"""What a model returns is checked before anything reads it, and ragged input is named, in every path.

A model whose `score` returns NaN or +inf, a column too many or a row too few is refused with a
ValueError that names the model's role (target or draft) by plain `generate` and by
`speculative_generate`, greedy and sampled alike: without the check, greedy decoding would pick
token 0 from NaN rows and a wide row would let a token outside the vocabulary out.
"""

import warnings
from pathlib import Path

import numpy as np
import pytest

import specdec
from specdec import SamplingParams, generate, speculative_generate
from specdec.models import check_ngram_rows

GREEDY, T1 = SamplingParams(0.0), SamplingParams(1.0)
TARGET, DRAFT = specdec.load_model("target"), specdec.load_model("draft")
RNG = np.random.default_rng(0)


class Broken:
    """A model that returns its wrapped model's logits, spoiled one way."""

    def __init__(self, model, how: str):
        self.model, self.how = model, how
        self.vocab_size, self.max_context, self.name = model.vocab_size, model.max_context, f"broken {model.name}"

    def start(self):
        return self.model.start()

    def score(self, tokens, state):
        logits = np.array(self.model.score(tokens, state))  # (n, V)
        if self.how == "nan":
            logits[-1, 5] = np.nan
        elif self.how == "+inf":
            logits[0, 7] = np.inf
        elif self.how == "all -inf":
            logits[-1] = -np.inf
        elif self.how == "a column too many":
            logits = np.concatenate([logits, logits[:, :1]], axis=1)  # (n, V + 1)
        elif self.how == "a row too few":
            logits = logits[:-1]
        elif self.how == "huge":  # valid float64 rows whose maxima sum past the float64 range
            logits = logits.astype(np.float64)
            logits[:, 0] = 1e308
        elif self.how == "ragged":
            logits = [list(row) for row in logits[:-1]] + [list(logits[-1][:-1])]
        return logits


HOW = {
    "nan": "contains NaN",
    "+inf": r"contains \+inf",
    "all -inf": "is entirely -inf",
    "a column too many": r"must return logits of shape \(tokens scored, vocab_size\) = \(\d+, 98\) .*got \(\d+, 99\)",
    "a row too few": r"must return logits of shape \(tokens scored, vocab_size\) = \((\d+), 98\) .*got",
    "ragged": "must be a rectangular array",
}


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("params", [GREEDY, T1], ids=["greedy", "T=1"])
def test_plain_generate_refuses_what_the_model_returns_wrong(how, params):
    with pytest.raises(ValueError, match=f"model.score.*{HOW[how]}"):
        generate(Broken(TARGET, how), [1, 2, 3], 6, params, np.random.default_rng(0))


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("params", [GREEDY, T1], ids=["greedy", "T=1"])
@pytest.mark.parametrize("role", ["target", "draft"])
def test_speculative_generate_refuses_what_either_model_returns_wrong(how, params, role):
    target = Broken(TARGET, how) if role == "target" else TARGET
    draft = Broken(DRAFT, how) if role == "draft" else DRAFT
    with pytest.raises(ValueError, match=f"{role}.score.*{HOW[how]}"):
        speculative_generate(target, draft, [1, 2, 3], 12, params, 3, np.random.default_rng(0))


def test_the_unbroken_control_runs():
    """The same wrapper, unspoiled: the tests above fail because of the spoiling, not the wrapper."""
    result = speculative_generate(Broken(TARGET, "none"), Broken(DRAFT, "none"), [1, 2, 3], 12, GREEDY, 3)
    assert np.array_equal(result.tokens, generate(TARGET, [1, 2, 3], 12, GREEDY).tokens)


@pytest.mark.parametrize("params", [GREEDY, T1], ids=["greedy", "T=1"])
def test_valid_rows_whose_maxima_sum_past_the_float64_range_pass_without_a_warning(params):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning from the checks fails the test
        plain = generate(Broken(TARGET, "huge"), [1, 2, 3], 12, params, np.random.default_rng(0))
        fast = speculative_generate(Broken(TARGET, "huge"), DRAFT, [1, 2, 3], 12, params, 3, np.random.default_rng(0))
    assert not plain.tokens.any() and not fast.tokens.any()  # every row's mass is on token 0


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda ragged: specdec.sampling_probs(ragged), "logits"),
        (lambda ragged: specdec.sampling_probs(ragged, SamplingParams(0.7, top_k=1)), "logits"),
        (lambda ragged: specdec.softmax(ragged), "logits"),
        (lambda ragged: specdec.sample(ragged, np.random.default_rng(0)), "probs"),
        (lambda ragged: generate(TARGET, ragged, 2), "prompt_tokens"),
        (lambda ragged: TARGET.score(ragged, TARGET.start()), "tokens"),
        (
            lambda ragged: specdec.speculative_verify(ragged, [[1.0, 0.0]], [[0.5, 0.5]] * 2, RNG),
            "draft_tokens",
        ),
    ],
    ids=["sampling_probs", "filtered", "softmax", "sample", "prompt", "score", "verify"],
)
def test_ragged_input_is_named_not_left_to_numpy(call, name):
    with pytest.raises(ValueError, match=f"{name} must be a rectangular array"):
        call([[1.0, 2.0], [1.0]] if name in ("logits", "probs") else [[1, 2], [1]])


def test_ngram_rows_that_do_not_sum_to_one_are_refused():
    model = specdec.load_model("draft")
    check_ngram_rows(model, Path("draft.npz"))  # the bundled draft's rows do
    keep, share = model.weights[-1]
    model.weights[-1] = (keep, 0.99 * share)  # the longest contexts' own counts short by 1%
    model.memo.clear()
    with pytest.raises(ValueError, match="the n-gram's distributions must sum to 1, one sums to 0.99"):
        check_ngram_rows(model, Path("draft.npz"))
