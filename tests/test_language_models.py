"""Tokenizer, n-gram model and generate (specdec/tokenizer.py, ngram.py, generation.py)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import specdec
from specdec.generation import generate
from specdec.gpt import GPT, expected_shapes
from specdec.models import load_model
from specdec.ngram import NGramModel
from specdec.tokenizer import CHARACTERS, END, UNKNOWN, CharTokenizer

tokenizer = CharTokenizer()
TEXT = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n" * 20


@given(st.text(alphabet=CHARACTERS))
def test_encode_decode_round_trip(text):
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_unknown_characters_have_a_documented_rule():
    ids = tokenizer.encode("x\té")
    assert ids[1:] == [UNKNOWN, UNKNOWN]
    assert tokenizer.decode(ids) == "x\ufffd\ufffd"
    assert tokenizer.decode([END]) == ""


def test_tokenizer_bad_input():
    with pytest.raises(TypeError, match="text must be a str"):
        tokenizer.encode(b"bytes")
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 98\)"):
        tokenizer.decode([98])
    with pytest.raises(TypeError, match="token ids must be integers, got dtype float64"):
        tokenizer.decode([1.7, 2.9])  # np.asarray(..., dtype=int64) would silently truncate them to 1 and 2
    assert tokenizer.decode([]) == "" and tokenizer.decode(np.array([71, 72], dtype=np.uint8)) == "de"


@pytest.fixture
def ngram() -> NGramModel:
    return NGramModel.build(tokenizer.encode(TEXT), order=4, vocab_size=tokenizer.vocab_size)


def test_ngram_rows_are_distributions_with_full_support(ngram):
    logits = ngram.score(tokenizer.encode("def add("), ngram.start())  # (8, V)
    probs = np.exp(logits)
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-12)
    assert (probs > 0).all()


def test_ngram_learns_what_always_follows(ngram):
    logits = ngram.score(tokenizer.encode("    retur"), ngram.start())
    assert tokenizer.decode([int(np.argmax(logits[-1]))]) == "n"
    assert np.exp(logits[-1]).max() > 0.9


def test_ngram_scoring_is_the_same_at_once_or_one_by_one_and_after_rollback(ngram):
    tokens = tokenizer.encode("def sub(a, b):")
    together = ngram.score(tokens, ngram.start())
    state = ngram.start()
    single = np.concatenate([ngram.score([t], state) for t in tokens])
    np.testing.assert_array_equal(together, single)
    assert state.length == len(tokens)
    state.rollback(5)
    assert state.length == 5
    np.testing.assert_array_equal(ngram.score(tokens[5:], state), together[5:])
    with pytest.raises(ValueError, match=r"rollback length \(tokens seen: 14\) must be an integer in \[0, 14\], got 9"):
        state.rollback(99)
    with pytest.raises(TypeError, match="rollback length"):
        state.rollback(2.0)
    assert state.length == 14  # a refused rollback forgets nothing


def test_ngram_states_are_independent_and_checked(ngram):
    tokens = tokenizer.encode("def sub(a, b):")
    expected = ngram.score(tokens, ngram.start())
    first, second = ngram.start(), ngram.start()
    ngram.score(tokenizer.encode("xyz"), first)  # another text read by the same model meanwhile
    np.testing.assert_array_equal(ngram.score(tokens, second), expected)
    assert (first.length, second.length) == (3, len(tokens))
    with pytest.raises(TypeError, match="state must be this model's NGramState"):
        ngram.score(tokens, None)
    with pytest.raises(TypeError, match="state must be this model's NGramState"):
        ngram.score(tokens, small_gpt().start())
    with pytest.raises(ValueError, match="score needs at least one token"):
        ngram.score([], ngram.start())
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 98\), got 0..98"):
        ngram.score([0, 98], ngram.start())
    with pytest.raises(TypeError, match="tokens must be integer token ids, got dtype float64"):
        ngram.score([1.0, 2.0], ngram.start())


def test_both_models_follow_the_protocols(ngram):
    for model in (ngram, small_gpt()):
        assert isinstance(model, specdec.LanguageModel)
        assert isinstance(model.start(), specdec.DecodingState)
        assert model.start().length == 0


def test_ngram_round_trips_through_its_arrays(ngram, tmp_path):
    np.savez(tmp_path / "draft.npz", **ngram.arrays())
    loaded = load_model(str(tmp_path / "draft.npz"))
    tokens = tokenizer.encode("def add(a, b")
    np.testing.assert_array_equal(loaded.score(tokens, loaded.start()), ngram.score(tokens, ngram.start()))


def test_the_package_ngram_gives_the_core_ngrams_distributions(ngram):
    """The package's NGramModel is notebook 06's section 5 class with each context's weights computed once
    and a memo (its Going further replaces the core's class): the same log-probabilities, to the last bit,
    from the first token on (contexts shorter than order - 1 included)."""
    core = NGramModel.__mro__[1]  # the class the notebook's core writes, which the fast one subclasses
    assert core.__name__ == "NGramModel" and core is not NGramModel
    code = tokenizer.encode(TEXT[:200] + "class Stack:\n    def push(self, item):\n        self.items.append(item)\n")
    for fast in (ngram, load_model("draft")):
        plain = core(fast.order, fast.vocab_size, fast.arrays(), name="plain")
        expected = plain.score(code, plain.start())  # (n, V)
        np.testing.assert_array_equal(fast.score(code, fast.start()), expected)
        np.testing.assert_array_equal(fast.score(code, fast.start()), expected)  # again, from the memo
        state = fast.start()
        fast.score(code[:50], state)
        state.rollback(20)
        np.testing.assert_array_equal(fast.score(code[20:], state), expected[20:])


def small_gpt() -> GPT:
    rng = np.random.default_rng(0)
    weights = {key: rng.normal(0, 0.5, shape) for key, shape in expected_shapes(98, 32, 16, 1).items()}
    return GPT(weights, n_head=2, name="tiny")


def test_generate_same_seed_same_tokens_and_greedy_is_deterministic():
    model, prompt = small_gpt(), tokenizer.encode("def ")
    params = specdec.SamplingParams(temperature=1.0, top_k=20)
    first = generate(model, prompt, 20, params, np.random.default_rng(3))
    second = generate(model, prompt, 20, params, np.random.default_rng(3))
    np.testing.assert_array_equal(first.tokens, second.tokens)
    assert first.tokens.size == 20 and first.target_calls == 20
    greedy = generate(model, prompt, 20, specdec.SamplingParams(0))
    np.testing.assert_array_equal(greedy.tokens, generate(model, prompt, 20, specdec.SamplingParams(0)).tokens)


def test_generate_greedy_follows_the_argmax_of_a_full_recompute():
    model, prompt = small_gpt(), tokenizer.encode("ab")
    tokens = generate(model, prompt, 10, specdec.SamplingParams(0)).tokens
    sequence = list(prompt)
    for token in tokens:
        assert token == int(np.argmax(model.score(sequence, model.start())[-1]))
        sequence.append(int(token))


def test_generate_stops_at_the_end_token():
    model, prompt = small_gpt(), tokenizer.encode("ab")
    tokens = generate(model, prompt, 30, specdec.SamplingParams(0)).tokens
    stop = int(tokens[4])
    stopped = generate(model, prompt, 30, specdec.SamplingParams(0), end_token=stop).tokens
    assert stopped[-1] == stop and stopped.size == list(tokens).index(stop) + 1


def test_generate_zero_tokens_makes_no_call():
    result = generate(small_gpt(), [5], 0, specdec.SamplingParams(0))
    assert result.tokens.size == 0 and result.target_calls == 0


@pytest.mark.parametrize(
    ("prompt", "max_new", "error", "message"),
    [
        ([], 5, ValueError, "prompt_tokens must be a non-empty 1-D sequence"),
        ([[1, 2]], 5, ValueError, "prompt_tokens must be a non-empty 1-D sequence"),
        ([1, 98], 5, ValueError, r"prompt_tokens must be token ids in \[0, 98\)"),
        ([-1], 5, ValueError, r"prompt_tokens must be token ids in \[0, 98\)"),
        ([1.5], 5, TypeError, "prompt_tokens must hold integer token ids"),
        ([1], -1, ValueError, "max_new_tokens must be an integer >= 0, got -1"),
        ([1], 2.0, TypeError, "max_new_tokens must be an integer"),
        ([1] * 30, 5, ValueError, "more than tiny's max_context 32"),
    ],
)
def test_generate_bad_input(prompt, max_new, error, message):
    with pytest.raises(error, match=message):
        generate(small_gpt(), prompt, max_new, specdec.SamplingParams(0))


def test_generate_needs_a_generator_to_sample():
    with pytest.raises(TypeError, match="rng must be a np.random.Generator"):
        generate(small_gpt(), [1], 3, specdec.SamplingParams(1.0))
