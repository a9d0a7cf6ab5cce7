"""The `on_round` hook of `generate` and `speculative_generate`: each round's tokens, as soon as they are verified.

A streaming server sends what the hook receives, so: the pieces concatenate to the result's
tokens, arrive one call per round (per token for plain decoding), the end token arrives and
nothing after it, and an exception raised in the hook stops the generation (a client that hung up).
"""

import numpy as np
import pytest

import specdec
from specdec import SamplingParams, generate, speculative_generate

TARGET, DRAFT, TOKENIZER = specdec.load_model("target"), specdec.load_model("draft"), specdec.load_tokenizer()
PROMPT = TOKENIZER.encode("def parse(self, text):\n")
GREEDY, T1 = SamplingParams(0.0), SamplingParams(1.0)


@pytest.mark.parametrize("params", [GREEDY, T1], ids=["greedy", "T=1"])
@pytest.mark.parametrize(("gamma", "verify"), [(1, "token"), (4, "token"), ("auto", "token"), (4, "block")])
def test_speculative_rounds_concatenate_to_the_result_one_call_per_round(params, gamma, verify):
    pieces = []
    result = speculative_generate(
        TARGET, DRAFT, PROMPT, 60, params, gamma, np.random.default_rng(3), verify=verify, on_round=pieces.append
    )
    assert len(pieces) == result.target_calls  # one call per round, none empty
    assert all(piece.dtype == np.int64 and piece.size >= 1 for piece in pieces)
    np.testing.assert_array_equal(np.concatenate(pieces), result.tokens)
    drafted = result.drafted_per_round + [0] * (result.target_calls - len(result.drafted_per_round))
    accepted = result.accepted_per_round + [0] * (result.target_calls - len(result.accepted_per_round))
    assert [piece.size for piece in pieces] == [n + 1 for n in accepted]  # accepted drafts + the target's token
    assert all(piece.size <= g + 1 for piece, g in zip(pieces, drafted, strict=True))
    same = speculative_generate(TARGET, DRAFT, PROMPT, 60, params, gamma, np.random.default_rng(3), verify=verify)
    np.testing.assert_array_equal(same.tokens, result.tokens)  # the hook changes nothing


def test_plain_generate_calls_the_hook_once_per_token():
    pieces = []
    result = generate(TARGET, PROMPT, 25, T1, np.random.default_rng(0), on_round=pieces.append)
    assert [piece.tolist() for piece in pieces] == [[token] for token in result.tokens.tolist()]


def test_the_end_token_arrives_and_nothing_after_it():
    end = TOKENIZER.encode("\n")[0]
    for seed in range(5):
        pieces = []
        result = speculative_generate(
            TARGET, DRAFT, PROMPT, 80, T1, 6, np.random.default_rng(seed), end_token=end, on_round=pieces.append
        )
        streamed = np.concatenate(pieces)
        np.testing.assert_array_equal(streamed, result.tokens)
        if end in streamed:
            assert streamed[-1] == end and (streamed[:-1] != end).all()


class Gone(Exception):
    """What a server raises from the hook once its client has hung up."""


def test_an_exception_in_the_hook_stops_the_generation():
    calls = []

    def hang_up_after_three(tokens):
        calls.append(tokens)
        if len(calls) == 3:
            raise Gone

    with pytest.raises(Gone):
        speculative_generate(TARGET, DRAFT, PROMPT, 100, T1, 4, np.random.default_rng(0), on_round=hang_up_after_three)
    assert len(calls) == 3  # no round ran after the one that raised
    calls.clear()
    with pytest.raises(Gone):
        generate(TARGET, PROMPT, 100, T1, np.random.default_rng(0), on_round=hang_up_after_three)
    assert len(calls) == 3


@pytest.mark.parametrize("hook", ["print", 3, [1]])
def test_a_hook_that_is_not_a_function_is_refused(hook):
    with pytest.raises(TypeError, match="on_round must be a function"):
        speculative_generate(TARGET, DRAFT, PROMPT, 5, GREEDY, on_round=hook)
    with pytest.raises(TypeError, match="on_round must be a function"):
        generate(TARGET, PROMPT, 5, GREEDY, on_round=hook)
