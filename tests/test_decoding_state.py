"""Models hold weights only; each generation owns its decoding state.

One model object can be the target and the draft of the same run, can serve several
generations at once (threads), and is never changed by scoring. Every generation's randomness
comes from the generator it is given: different seeds give different outputs.
"""

import threading

import numpy as np
import pytest

import specdec
from specdec import SamplingParams
from specdec.gpt import KVCache
from specdec.ngram import NGramState

TARGET = specdec.load_model("target")
DRAFT = specdec.load_model("draft")
TOKENIZER = specdec.load_tokenizer()
PROMPTS = [
    "class Stack:\n    def __init__(self, items=None):\n        self.",
    "import os\nimport sys\n\n\ndef main(argv=None):\n    if argv is None:\n        ",
    "    for key, value in sorted(mapping.items()):\n        if ",
    "def read_lines(path):\n    with open(path) as f:\n        return ",
]
SETTINGS = [
    SamplingParams(temperature=1.0),
    SamplingParams(temperature=0.7, top_p=0.9),
    SamplingParams(temperature=1.3, top_k=20, min_p=0.05),
]


def encode(text: str) -> np.ndarray:
    return np.array(TOKENIZER.encode(text))


@pytest.mark.parametrize("model", [TARGET, DRAFT], ids=["gpt", "ngram"])
def test_both_bundled_models_follow_the_protocol_and_hand_out_fresh_states(model):
    assert isinstance(model, specdec.LanguageModel)
    first, second = model.start(), model.start()
    assert isinstance(first, specdec.DecodingState) and first is not second
    assert first.length == 0
    model.score(encode("def f("), first)
    assert (first.length, second.length) == (6, 0)  # one state's tokens never reach another


def test_two_interleaved_states_of_one_gpt_give_the_logits_of_two_separate_runs():
    texts = [encode(PROMPTS[0]), encode(PROMPTS[1])]
    alone = [TARGET.score(text, TARGET.start()) for text in texts]  # (n, V) each, one state each
    states = [TARGET.start(), TARGET.start()]
    pieces = [[], []]
    for start in range(0, max(map(len, texts)), 7):  # alternate: 7 tokens of one text, then 7 of the other
        for i, text in enumerate(texts):
            if start < len(text):
                pieces[i].append(TARGET.score(text[start : start + 7], states[i]))
    for i in range(2):
        np.testing.assert_allclose(np.concatenate(pieces[i]), alone[i], atol=1e-4)


def test_scoring_never_changes_the_model():
    before = {key: value.copy() for key, value in TARGET.w.items()}
    state = TARGET.start()
    TARGET.score(encode(PROMPTS[2]), state)
    state.rollback(3)
    TARGET.score(encode("xyz"), state)
    assert all(np.array_equal(before[key], TARGET.w[key]) for key in before)
    assert not any(array.flags.writeable for array in TARGET.w.values())  # immutable after loading
    assert not hasattr(TARGET, "keys") and not hasattr(TARGET, "length")  # the cache lives in the state only


@pytest.mark.parametrize(
    ("model", "state", "error"),
    [
        (TARGET, NGramState(), "cache must be this model's KVCache, from its start"),
        (TARGET, KVCache(specdec.load_model("target")), "cache must be this model's KVCache, from its start"),
        (DRAFT, TARGET.start(), "state must be this model's NGramState"),
        (TARGET, None, "cache must be this model's KVCache"),
    ],
    ids=["ngram state to gpt", "another gpt's cache", "gpt cache to ngram", "no state"],
)
def test_a_model_refuses_a_state_it_did_not_make(model, state, error):
    with pytest.raises(TypeError, match=error):
        model.score([5, 6], state)


@pytest.mark.parametrize("model", [TARGET, DRAFT], ids=["gpt", "ngram"])
def test_rollback_only_forgets_and_names_its_range(model):
    state = model.start()
    model.score(encode("abcdef"), state)
    with pytest.raises(ValueError, match=r"rollback length \(tokens seen: 6\) must be an integer in \[0, 6\], got 7"):
        state.rollback(7)
    with pytest.raises(ValueError, match=r"got -1"):
        state.rollback(-1)
    with pytest.raises(TypeError, match="rollback length"):
        state.rollback(2.0)
    state.rollback(np.int64(2))
    assert state.length == 2


@pytest.mark.parametrize(
    "params", [SamplingParams(0), *SETTINGS], ids=["greedy", "T=1", "T=0.7 top-p", "T=1.3 top-k min-p"]
)
def test_the_same_object_as_target_and_draft_accepts_every_draft(params):
    """p = q at every position (both are the target's filtered distribution), so u < p/q = 1 always."""
    for i, text in enumerate(PROMPTS[:3]):
        result = specdec.speculative_generate(
            TARGET, TARGET, encode(text), 40, params, gamma=4, rng=np.random.default_rng(i)
        )
        assert result.tokens.size == 40
        assert result.drafted > 0 and result.accepted == result.drafted
        assert result.alpha == 1.0 and result.acceptance_rate == 1.0
        assert result.tokens_per_call == 40 / result.target_calls == pytest.approx(40 / 8)  # 5 tokens per round


def test_the_same_object_as_target_and_draft_is_plain_greedy_token_for_token():
    for text in PROMPTS:
        for gamma in (1, 3, 6):
            plain = specdec.generate(TARGET, encode(text), 60, SamplingParams(0))
            speculative = specdec.speculative_generate(TARGET, TARGET, encode(text), 60, SamplingParams(0), gamma)
            np.testing.assert_array_equal(speculative.tokens, plain.tokens)


def run_all(jobs):
    return [job() for job in jobs]


def test_two_threads_sharing_the_model_objects_give_the_sequential_tokens():
    params = SamplingParams(temperature=0.8, top_p=0.95)
    jobs = []
    for i, text in enumerate(PROMPTS):
        jobs.append(lambda t=text, s=i: specdec.generate(TARGET, encode(t), 50, params, np.random.default_rng(s)))
        jobs.append(
            lambda t=text, s=i: specdec.speculative_generate(
                TARGET, DRAFT, encode(t), 50, params, 4, np.random.default_rng(100 + s)
            )
        )
    sequential = [result.tokens for result in run_all(jobs)]
    threaded: list = [None] * len(jobs)
    barrier = threading.Barrier(2)

    def worker(indices):
        barrier.wait()  # start together, so the two threads really interleave
        for _ in range(3):  # several passes: many interleavings of the two threads' model calls
            for index in indices:
                tokens = jobs[index]().tokens
                assert threaded[index] is None or np.array_equal(threaded[index], tokens)
                threaded[index] = tokens

    threads = [threading.Thread(target=worker, args=(list(range(k, len(jobs), 2)),)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, tokens in enumerate(sequential):
        np.testing.assert_array_equal(threaded[index], tokens, err_msg=f"job {index}")


# --- different seeds, different outputs: the generator given is the one used ---------------------------------


def test_sample_token_uses_the_generator_it_is_given():
    logits = np.zeros((64, 50))  # uniform rows: 50^64 outcomes, two seeds never agree by chance
    draws = {seed: specdec.sample_token(logits, SamplingParams(1.0), np.random.default_rng(seed)) for seed in (1, 2)}
    assert not np.array_equal(draws[1], draws[2])
    again = specdec.sample_token(logits, SamplingParams(1.0), np.random.default_rng(1))
    np.testing.assert_array_equal(again, draws[1])


@pytest.mark.parametrize("kind", ["generate", "speculative"])
def test_generation_uses_the_generator_it_is_given(kind):
    def run(seed):
        rng = np.random.default_rng(seed)
        if kind == "generate":
            return specdec.generate(TARGET, encode(PROMPTS[0]), 40, SamplingParams(1.2), rng).tokens
        return specdec.speculative_generate(TARGET, DRAFT, encode(PROMPTS[0]), 40, SamplingParams(1.2), 4, rng).tokens

    outputs = [run(seed) for seed in (1, 2, 3)]
    assert len({tuple(tokens.tolist()) for tokens in outputs}) == 3  # three seeds, three different texts
    np.testing.assert_array_equal(run(1), outputs[0])  # and the same seed, the same text
