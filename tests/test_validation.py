"""One validation rule for the whole package, and the bad inputs it must catch.

Wrong type -> TypeError, wrong value -> ValueError, and both name the argument and what is
allowed. The cases below are the ones a new user runs into first.
"""

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import specdec
from specdec import SamplingParams
from specdec.models import read_npz
from specdec.validation import check_generator, check_integer, check_new_tokens, check_optional_token, check_real

TARGET = specdec.load_model("target")
DRAFT = specdec.load_model("draft")
PROMPT = np.array(specdec.load_tokenizer().encode("def __init__(self"))


# --- the shared helpers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [True, np.bool_(False), 2.0, "3", None, [1], np.array([1])])
def test_check_integer_refuses_every_non_integer_with_a_type_error(value):
    with pytest.raises(TypeError, match=r"count must be an integer >= 1, got "):
        check_integer(value, "count", minimum=1)


def test_check_integer_accepts_python_and_numpy_integers_and_names_the_range():
    assert check_integer(np.int32(3), "k", 1) == 3 and type(check_integer(np.int64(3), "k", 1)) is int
    with pytest.raises(ValueError, match=r"^k must be an integer in \[0, 9\], got 10$"):
        check_integer(10, "k", 0, 9)
    with pytest.raises(ValueError, match=r"^k must be an integer <= 9, got 10$"):
        check_integer(10, "k", maximum=9)


@pytest.mark.parametrize(
    ("kwargs", "value", "message"),
    [
        ({"low": 0, "high": 1, "low_open": True}, 0.0, r"^p must be in \(0, 1\], got 0.0$"),
        ({"low": 0, "high": 1, "high_open": True}, 1, r"^p must be in \[0, 1\), got 1$"),
        ({"low": 0, "high": 1}, math.nan, r"^p must be in \[0, 1\], got nan$"),
        ({"low": 0}, math.inf, r"^p must be finite and >= 0, got inf$"),
        ({"low": 0, "note": "0 means off"}, -1, r"^p must be finite and >= 0 \(0 means off\), got -1$"),
        ({}, -math.inf, r"^p must be in \(-inf, inf\), got -inf$"),
    ],
)
def test_check_real_refuses_values_outside_its_interval_and_says_which(kwargs, value, message):
    with pytest.raises(ValueError, match=message):
        check_real(value, "p", **kwargs)


@pytest.mark.parametrize("value", [True, "0.5", None, 1j, np.array([0.5])])
def test_check_real_refuses_non_reals_with_a_type_error(value):
    with pytest.raises(TypeError, match=r"^p must be a real number in \[0, 1\], got "):
        check_real(value, "p", 0, 1)


def test_check_real_keeps_the_boundaries_it_is_told_to_keep():
    assert check_real(0, "p", 0, 1) == 0.0 and check_real(1, "p", 0, 1) == 1.0
    assert check_real(np.float32(0.25), "p", 0, 1, low_open=True) == 0.25


@pytest.mark.parametrize("rng", [42, None, np.random.RandomState(0), np.random, np.random.PCG64(0)])
def test_only_a_generator_is_a_generator(rng):
    with pytest.raises(TypeError, match=r"rng must be a np.random.Generator \(np.random.default_rng\(seed\)\)"):
        check_generator(rng)


@pytest.mark.parametrize(
    ("token", "error", "message"),
    [
        (98, ValueError, r"end_token must be an integer in \[0, 97\], got 98"),
        (999, ValueError, r"end_token must be an integer in \[0, 97\], got 999"),
        (-1, ValueError, r"got -1"),
        ("\n", TypeError, r"end_token must be a token id \(an integer\) or None, got the text '\\n': encode it first"),
        (True, TypeError, r"end_token must be an integer in \[0, 97\], got True"),
        (2.0, TypeError, r"end_token must be an integer"),
    ],
)
def test_end_tokens_are_checked_by_both_generators(token, error, message):
    with pytest.raises(error, match=message):
        check_optional_token(token, "end_token", 98)
    with pytest.raises(error, match=message):
        specdec.generate(TARGET, PROMPT, 5, SamplingParams(0), end_token=token)
    with pytest.raises(error, match=message):
        specdec.speculative_generate(TARGET, DRAFT, PROMPT, 5, SamplingParams(0), end_token=token)
    assert check_optional_token(np.int64(0), "end_token", 98) == 0 and check_optional_token(None, "x", 98) is None


# --- one rule for both generators ------------------------------------------------------------------------------


@pytest.mark.parametrize("rng", [42, np.random.RandomState(0), "seed"])
@pytest.mark.parametrize("params", [SamplingParams(1.0), SamplingParams(0)], ids=["sampling", "greedy"])
def test_a_seed_is_never_a_generator_in_either_generator(rng, params):
    with pytest.raises(TypeError, match="rng must be a np.random.Generator"):
        specdec.generate(TARGET, PROMPT, 5, params, rng)
    with pytest.raises(TypeError, match="rng must be a np.random.Generator"):
        specdec.speculative_generate(TARGET, DRAFT, PROMPT, 5, params, 4, rng)


def test_sampling_without_a_generator_is_refused_by_both_and_greedy_needs_none():
    for call in (
        lambda: specdec.generate(TARGET, PROMPT, 5, SamplingParams(1.0)),
        lambda: specdec.speculative_generate(TARGET, DRAFT, PROMPT, 5, SamplingParams(1.0)),
    ):
        with pytest.raises(TypeError, match="rng must be a np.random.Generator when temperature > 0, got None"):
            call()
    greedy = specdec.generate(TARGET, PROMPT, 5, SamplingParams(0), np.random.default_rng(0))  # allowed, unused
    np.testing.assert_array_equal(greedy.tokens, specdec.generate(TARGET, PROMPT, 5, SamplingParams(0)).tokens)


def test_text_instead_of_token_ids_gets_a_hint_to_encode_it():
    for call in (
        lambda: specdec.generate(TARGET, "def f", 5, SamplingParams(0)),
        lambda: specdec.speculative_generate(TARGET, DRAFT, "def f", 5, SamplingParams(0)),
    ):
        with pytest.raises(TypeError, match=r"prompt_tokens must be token ids, got the text 'def f': encode it first"):
            call()


@pytest.mark.parametrize("model", ["target", None, 3, specdec.load_tokenizer()])
def test_something_that_is_not_a_model_is_refused_by_name(model):
    with pytest.raises(TypeError, match=r"model must be a language model \(start\(\), score\(tokens, state\)"):
        specdec.generate(model, PROMPT, 5, SamplingParams(0))
    with pytest.raises(TypeError, match=r"draft must be a language model"):
        specdec.speculative_generate(TARGET, model, PROMPT, 5, SamplingParams(0))


@pytest.mark.parametrize(
    ("tokens", "error", "message"),
    [
        ([1.0, 2.0], TypeError, r"draft_tokens must hold integer token ids, got dtype float64"),
        ([[1, 2]], ValueError, r"draft_tokens must be a 1-D array of token ids, got shape \(1, 2\)"),
    ],
)
def test_float_draft_tokens_are_a_type_error_like_a_float_prompt(tokens, error, message):
    q = np.full((2, 3), 1 / 3)
    with pytest.raises(error, match=message):
        specdec.speculative_verify(tokens, q, np.full((3, 3), 1 / 3), np.random.default_rng(0))
    with pytest.raises(TypeError, match="prompt_tokens must hold integer token ids"):
        specdec.generate(TARGET, [1.0, 2.0], 5, SamplingParams(0))


def test_no_drafts_at_all_is_a_valid_verification_that_emits_one_token():
    p = np.array([[0.0, 1.0, 0.0]])  # (gamma + 1, V) with gamma = 0
    emitted, n = specdec.speculative_verify([], np.zeros((0, 3)), p, np.random.default_rng(0))
    assert n == 0 and emitted.tolist() == [1] and emitted.dtype == np.int64


# --- loading ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [None, 123, 4.5, ["target"]])
def test_load_model_names_its_argument_for_a_non_name(name):
    with pytest.raises(TypeError, match=r"name must be one of \['draft', 'target'\] or a path to an .npz file"):
        specdec.load_model(name)


def test_load_model_accepts_a_path_object(tmp_path):
    path = tmp_path / "copy.npz"
    np.savez(path, **read_npz(Path(specdec.__file__).parent / "weights" / "draft.npz"))
    assert specdec.load_model(path).vocab_size == DRAFT.vocab_size


def corrupt_draft(tmp_path, change) -> Path:
    """The bundled draft's arrays with one change applied, saved to a new .npz file."""
    arrays = read_npz(Path(specdec.__file__).parent / "weights" / "draft.npz")
    change(arrays)
    path = tmp_path / "draft.npz"
    np.savez(path, **arrays)
    return path


def set_entry(key: str, index: int, value):
    def change(arrays):
        arrays[key] = arrays[key].astype(np.float64 if isinstance(value, float) else arrays[key].dtype)
        arrays[key][index] = value

    return change


def negative_entry(key: str, index: int):
    def change(arrays):
        arrays[key] = arrays[key].astype(np.int16)  # uint8 cannot hold -1
        arrays[key][index] = -1

    return change


def repeat_next(key: str, offsets: str):
    """The second next token of the first context with two or more made equal to its first."""

    def change(arrays):
        first = int(np.argmax(np.diff(arrays[offsets]) >= 2))
        lo = arrays[offsets][first]
        arrays[key] = arrays[key].copy()
        arrays[key][lo + 1] = arrays[key][lo]

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (set_entry("unigram", 3, math.nan), "'unigram' must hold positive finite probabilities that sum to 1"),
        (set_entry("unigram", 3, -0.01), "'unigram' must hold positive finite probabilities"),
        (set_entry("next2", 10, 98), r"'next2' must hold token ids in \[0, 98\), got 0..98"),
        (negative_entry("next1", 0), r"'next1' must hold token ids in \[0, 98\), got -1"),
        (repeat_next("next1", "offsets1"), "'next1' repeats a next token within one context"),
        (set_entry("counts3", 0, 0), "'counts3' must be >= 1"),
        (set_entry("offsets1", 5, 10**9), "'offsets1' must rise strictly"),
        (set_entry("contexts2", 0, 98**2), "'contexts2' must be sorted distinct context ids"),
        (lambda arrays: arrays.pop("next4"), "missing array 'next4'"),
        (lambda arrays: arrays.update(next1=arrays["next1"][:-1]), "tables of order 2 disagree in size"),
        (lambda arrays: arrays.update(counts2=arrays["counts2"].astype(np.float32)), "'counts2' must be a 1-D integer"),
    ],
    ids=[
        "nan",
        "negative",
        "id >= V",
        "id < 0",
        "repeated",
        "zero count",
        "offsets",
        "contexts",
        "missing",
        "sizes",
        "dtype",
    ],
)
def test_a_corrupt_ngram_file_is_refused_at_loading_not_deep_inside_score(tmp_path, change, message):
    path = corrupt_draft(tmp_path, change)
    with pytest.raises(ValueError, match=message):
        specdec.load_model(str(path))


def test_the_corrupt_ngram_controls_are_loadable_when_left_alone(tmp_path):
    path = corrupt_draft(tmp_path, lambda arrays: None)
    model = specdec.load_model(str(path))
    np.testing.assert_array_equal(model.score(PROMPT, model.start()), DRAFT.score(PROMPT, DRAFT.start()))


# --- overflow warnings: none anywhere for logits a float range apart ---------------------------------------------


EXTREME = np.array([[1e308, -1e308, 0.0, 5.0], [-1e308, 3.0, 1e308, -np.inf]])


@pytest.mark.parametrize(
    "call",
    [
        lambda x: specdec.softmax(x),
        lambda x: specdec.softmax(x, temperature=0.5),
        lambda x: specdec.log_softmax(x),
        lambda x: specdec.sampling_probs(x),
        lambda x: specdec.sampling_probs(x, SamplingParams(0.3)),
        lambda x: specdec.sampling_probs(x, SamplingParams(0.7, top_k=2, top_p=0.9, min_p=0.1)),
        lambda x: specdec.sampling_probs(x, SamplingParams(1.0, top_p=0.5)),
        lambda x: specdec.sampling_probs(np.tile(x, (1, 400)), SamplingParams(1.0, top_k=3, top_p=0.9)),
        lambda x: specdec.min_p_filter(x, 0.1),
        lambda x: specdec.top_p_filter(x, 0.5),
        lambda x: specdec.top_k_filter(x, 2),
        lambda x: specdec.sample_token(x, SamplingParams(0.8), np.random.default_rng(0)),
    ],
    ids=[
        "softmax",
        "softmax T",
        "log_softmax",
        "probs",
        "probs T",
        "probs filtered",
        "probs top-p",
        "probs wide",
        "min_p",
        "top_p",
        "top_k",
        "sample_token",
    ],
)
def test_logits_a_float_range_apart_give_the_right_answer_without_a_warning(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning (overflow, invalid value) fails the test
        out = np.asarray(call(EXTREME))
    assert not np.isnan(out).any()
    if out.dtype == np.float64 and out.shape[-1] == 4 and np.all(out >= 0):  # a distribution: all mass on the max
        np.testing.assert_allclose(out, [[1, 0, 0, 0], [0, 0, 1, 0]], atol=0)


@pytest.mark.parametrize(
    "tokens",
    [[5, 200], [-1, 3], [3, 2**70], [97, 98]],
    ids=["too large", "negative", "beyond int64", "one past the end"],
)
def test_a_list_of_ints_is_checked_like_an_array(tokens):
    """check_new_tokens' fast path for a list of Python ints refuses what the array path refuses, alike."""
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 98\), got -?\d+\.\.\d+"):
        check_new_tokens(tokens, 98)
    ok = check_new_tokens([0, 97, 5], 98)
    assert ok.dtype == np.int64 and ok.tolist() == [0, 97, 5]
    with pytest.raises(TypeError, match="integer token ids, got dtype bool"):
        check_new_tokens([True, False], 98)  # bools are not ints here: the array path says so
