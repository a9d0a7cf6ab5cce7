"""specdec.huggingface: the bundled GPT converted to Transformers, and Transformers models driven by specdec.

Optional: needs torch and transformers (requirements-extras.txt). The README's test command does not
collect tests/optional/; CI (.ci/run) runs it in .venv-extras, where a missing dependency is an error,
never a skip:

    .venv-extras/bin/python -m pytest tests/optional/test_huggingface.py

What is checked:

* to_transformers: every weight maps; the converted GPT2LMHeadModel's logits equal the numpy GPT's on
  held-out text within LOGIT_BOUND, for a whole window in one call, one position per call through the
  KV cache, and chunks of several positions after rollbacks; a float64 copy of the converted model
  shows both float32 computations are that close to the exact value.
* TransformersLM: follows the LanguageModel protocol; rollback crops the cache (logits after a
  rollback equal a fresh computation); greedy `specdec.generate` and `specdec.speculative_generate`
  on it equal `GPT2LMHeadModel.generate(do_sample=False)` token for token on 20 held-out prompts, and
  on a randomly initialised Llama (another architecture, rotary positions, its own cache layout).
* Sampling: the first two tokens of speculative_generate (Transformers target, n-gram draft, specdec's
  filter pipeline) follow the target's filtered law (chi-square, 10^4 draws), and four broken
  variants are rejected by the same tests. To afford 10^4 draws, the target's logits are memoised
  per context (`specdec.huggingface.LogitsMemo`: each distinct context costs one Transformers call);
  a separate test shows that sampling through the memo and through the live adapter (cache,
  rollbacks) gives the same tokens for the same seeds.
"""

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may download: every model here is built locally

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from threadpoolctl import threadpool_limits

import specdec
import specdec.speculative
from specdec import SamplingParams, sampling_probs, speculative_generate
from specdec.drawing import chi_square_test
from specdec.huggingface import LogitsMemo, TransformersLM, parameter_names, to_transformers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "training"))
import corpus  # noqa: E402

LOGIT_BOUND = 1e-4  # max |logit difference|, float32; measured about 4e-5 (logits up to about 15 in size)
GREEDY = SamplingParams(temperature=0)
FILTERED = SamplingParams(temperature=0.9, top_k=8, top_p=0.95)
CHI_PROMPT = "        if "
DRAWS = 10_000
NEGATIVE_DRAWS = 3_000  # the broken variants fail by far (p-values below 1e-40 at 3,000 draws)
FAIL = 1e-3  # a p-value below this fails a test


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models: one BLAS thread and one torch thread are the fastest and steadiest."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(limits=1, user_api="blas"):
        yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def target():
    return specdec.load_model("target")


@pytest.fixture(scope="module")
def draft():
    return specdec.load_model("draft")


@pytest.fixture(scope="module")
def hf(target):
    return to_transformers(target)


@pytest.fixture(scope="module")
def windows() -> np.ndarray:
    """Held-out windows of 256 tokens (the target never trained on them)."""
    return corpus.heldout_windows(corpus.load_corpus().heldout, 24, 256)[:, :-1]  # (24, 256)


def hf_logits(hf_model, tokens) -> np.ndarray:
    """Logits (n, V) of one text in one call, no cache."""
    with torch.inference_mode():
        return hf_model(input_ids=torch.as_tensor(np.asarray(tokens))[None]).logits[0].double().numpy()


# --- to_transformers ---------------------------------------------------------------------------------------


def test_every_array_has_a_parameter_and_the_embeddings_are_tied(target, hf):
    names = parameter_names(target.n_layer)
    assert sorted(names) == sorted(target.w)
    params = dict(hf.named_parameters())
    for ours, theirs in names.items():
        np.testing.assert_array_equal(params[theirs].detach().numpy(), target.w[ours], err_msg=ours)
    assert hf.lm_head.weight.data_ptr() == hf.transformer.wte.weight.data_ptr()
    assert not hf.training and hf.config.activation_function == "gelu_new" and hf.config.layer_norm_epsilon == 1e-5
    assert sum(p.numel() for p in hf.parameters()) == sum(a.size for a in target.w.values())  # 1,235,200


@pytest.mark.parametrize("attn_implementation", ["sdpa", "eager"])
def test_converted_logits_equal_the_numpy_models_on_heldout_text(target, windows, attn_implementation):
    """A whole 256-token window in one call (no cache): every position within LOGIT_BOUND."""
    hf_model = to_transformers(target, attn_implementation)
    exact = to_transformers(target, attn_implementation).double()  # the same weights, float64 arithmetic
    worst = {"hf32 vs numpy": 0.0, "hf32 vs exact": 0.0, "numpy vs exact": 0.0}
    for window in windows[:12]:
        ours = target.score(window, target.start()).astype(np.float64)  # (256, V)
        theirs, reference = hf_logits(hf_model, window), hf_logits(exact, window)
        worst["hf32 vs numpy"] = max(worst["hf32 vs numpy"], np.abs(theirs - ours).max())
        worst["hf32 vs exact"] = max(worst["hf32 vs exact"], np.abs(theirs - reference).max())
        worst["numpy vs exact"] = max(worst["numpy vs exact"], np.abs(ours - reference).max())
    assert max(worst.values()) < LOGIT_BOUND, worst
    assert worst["hf32 vs numpy"] > 0  # float32 in two libraries: equal would mean something is not compared


def test_one_position_per_call_through_the_cache_equals_the_numpy_model(target, hf, windows):
    lm = TransformersLM(hf)
    for window in windows[12:14]:
        state = lm.start()
        logits = np.concatenate([lm.score(window[i : i + 1], state) for i in range(window.size)])  # (256, V)
        assert state.length == window.size == state.cache.get_seq_length()
        np.testing.assert_allclose(logits, target.score(window, target.start()), rtol=0, atol=LOGIT_BOUND)


def test_chunks_with_rollbacks_equal_the_numpy_model(target, hf, windows):
    """Chunks of 1-9 positions, each followed by a rollback of a few of them, as speculative decoding does."""
    lm, rng = TransformersLM(hf), np.random.default_rng(11)
    for window in windows[14:18]:
        reference = target.score(window, target.start())  # (256, V)
        state = lm.start()
        while state.length < window.size:
            start = state.length
            n = min(int(rng.integers(1, 10)), window.size - start)
            logits = lm.score(window[start : start + n], state)  # (n, V)
            np.testing.assert_allclose(logits, reference[start : start + n], rtol=0, atol=LOGIT_BOUND)
            state.rollback(start + int(rng.integers(1, n + 1)))  # keep at least one new token
            assert state.cache.get_seq_length() == state.length


# --- TransformersLM: the protocol and its state -------------------------------------------------------------


def test_transformers_lm_follows_the_protocol(hf, target):
    lm = TransformersLM(hf)
    assert isinstance(lm, specdec.LanguageModel)
    assert isinstance(lm.start(), specdec.DecodingState)
    assert (lm.vocab_size, lm.max_context) == (target.vocab_size, target.max_context) == (98, 256)
    logits = lm.score([5, 6, 7], lm.start())
    assert logits.shape == (3, 98) and logits.dtype == np.float32


def test_states_are_independent_and_the_model_is_not_changed(hf, windows):
    lm = TransformersLM(hf)
    before = {name: p.clone() for name, p in hf.state_dict().items()}
    a, b = lm.start(), lm.start()
    first = lm.score(windows[0][:20], a)
    lm.score(windows[1][:50], b)
    again = lm.score(windows[0][:20], lm.start())
    np.testing.assert_array_equal(first, again)
    assert (a.length, b.length) == (20, 50)
    assert all(torch.equal(before[name], p) for name, p in hf.state_dict().items())


def test_rollback_crops_the_cache(hf, windows):
    """After a rollback, the next logits are those of the kept prefix: the forgotten tokens are gone."""
    lm, window = TransformersLM(hf), windows[2]
    state = lm.start()
    lm.score(window[:30], state)
    lm.score(window[40:45], state)  # five tokens that are then taken back
    state.rollback(30)
    assert state.length == state.cache.get_seq_length() == 30
    np.testing.assert_allclose(lm.score(window[30:40], state), hf_logits(hf, window[:40])[30:], rtol=0, atol=1e-5)


def test_bad_input_is_refused(hf, target):
    lm = TransformersLM(hf)
    state = lm.start()
    with pytest.raises(ValueError, match="token ids"):
        lm.score([98], state)
    with pytest.raises(TypeError, match="start"):
        lm.score([1], target.start())
    lm.score(np.zeros(256, dtype=np.int64), state)
    with pytest.raises(ValueError, match="context overflow"):
        lm.score([1], state)
    with pytest.raises(ValueError):
        state.rollback(257)
    with pytest.raises(TypeError, match="specdec.gpt.GPT"):
        to_transformers(specdec.load_model("draft"))
    training = to_transformers(target).train()
    with pytest.raises(ValueError, match="eval"):
        TransformersLM(training)


# --- greedy: token for token the same as Transformers' own generate ------------------------------------------


def hf_greedy(hf_model, prompt, max_new_tokens: int) -> np.ndarray:
    """GPT2LMHeadModel.generate(do_sample=False): the new tokens (ends after END, token 0)."""
    prompt = torch.as_tensor(np.asarray(prompt))[None]  # (1, n)
    with torch.inference_mode():
        out = hf_model.generate(
            prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=max_new_tokens, do_sample=False
        )
    return out[0, prompt.shape[1] :].numpy()


def test_greedy_through_transformers_lm_equals_hf_generate_on_20_prompts(hf, draft, windows):
    """20 held-out prompts of 8..179 tokens, 40 new tokens; plain generate and speculative (gamma 1, 3, 5)."""
    lm = TransformersLM(hf)
    for w in range(20):
        prompt = windows[w][: 8 + 9 * w]
        reference = hf_greedy(hf, prompt, 40)
        plain = specdec.generate(lm, prompt, 40, GREEDY, end_token=0).tokens
        gamma = (1, 3, 5)[w % 3]
        fast = speculative_generate(lm, draft, prompt, 40, GREEDY, gamma, end_token=0)
        np.testing.assert_array_equal(plain, reference, err_msg=f"generate, prompt {w}")
        np.testing.assert_array_equal(fast.tokens, reference, err_msg=f"speculative_generate, prompt {w}")
        assert fast.target_calls < reference.size  # the drafts were used


def tiny_llama(seed: int) -> transformers.LlamaForCausalLM:
    """A randomly initialised 2-layer Llama (rotary positions, grouped KV heads), built locally."""
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    llama = transformers.LlamaForCausalLM(config).eval()
    llama.generation_config = transformers.GenerationConfig(do_sample=False, eos_token_id=0, pad_token_id=0)
    return llama


def test_greedy_also_matches_on_another_architecture():
    """The adapter is not GPT-2 specific: a tiny Llama target, another one as its draft (many rejections)."""
    llama = tiny_llama(0)
    lm, other = TransformersLM(llama, name="tiny-llama"), TransformersLM(tiny_llama(1), name="other-llama")
    assert lm.max_context == 128
    rng = np.random.default_rng(5)
    rejected = 0
    for _ in range(5):
        prompt = rng.integers(1, 64, size=int(rng.integers(3, 20)))
        reference = hf_greedy(llama, prompt, 20)
        np.testing.assert_array_equal(specdec.generate(lm, prompt, 20, GREEDY, end_token=0).tokens, reference)
        fast = speculative_generate(lm, other, prompt, 20, GREEDY, 3, end_token=0)
        np.testing.assert_array_equal(fast.tokens, reference)
        rejected += sum(n < g for n, g in zip(fast.accepted_per_round, fast.drafted_per_round, strict=True))
    assert rejected > 10  # both caches were cropped many times


# --- sampling: the target's filtered law, and broken variants rejected ---------------------------------------


@pytest.fixture(scope="module")
def chi_setup(hf):
    """The prompt, the exact filtered law of the first two tokens (float64), and a memoised target."""
    prompt = np.array(specdec.load_tokenizer().encode(CHI_PROMPT))
    p1 = sampling_probs(hf_logits(hf, prompt)[-1], FILTERED)  # (V,)
    support = np.flatnonzero(p1)
    pairs = np.zeros((p1.size, p1.size))  # (V, V) P(t1, t2)
    with torch.inference_mode():
        batch = torch.as_tensor(np.column_stack([np.tile(prompt, (support.size, 1)), support]))  # (S, n + 1)
        last = hf(input_ids=batch).logits[:, -1].double().numpy()  # (S, V)
    pairs[support] = p1[support, None] * sampling_probs(last, FILTERED)
    return prompt, pairs, LogitsMemo(TransformersLM(hf))


def draw_pairs(target, draft, prompt, rng, n: int = DRAWS) -> np.ndarray:
    """(n, 2): the first two tokens of n speculative_generate runs (gamma 1: one draft, then a bonus or a fix)."""
    return np.array([speculative_generate(target, draft, prompt, 2, FILTERED, 1, rng).tokens for _ in range(n)])


def p_values(tokens: np.ndarray, pairs: np.ndarray) -> dict:
    vocab = pairs.shape[0]
    first = np.bincount(tokens[:, 0], minlength=vocab)
    joint = np.bincount(tokens[:, 0] * vocab + tokens[:, 1], minlength=vocab * vocab)
    return {
        "first": chi_square_test(first, pairs.sum(axis=1)).p_value,
        "pair": chi_square_test(joint, pairs.ravel()).p_value,
    }


def test_the_chi_square_law_is_not_trivial(chi_setup, draft):
    """The test has power only if the draft's law differs from the target's and the filter matters."""
    prompt, pairs, _ = chi_setup
    p1 = pairs.sum(axis=1)
    q1 = sampling_probs(draft.score(prompt, draft.start())[-1], FILTERED)
    unfiltered = specdec.softmax(hf_logits(chi_setup[2].lm.hf_model, prompt)[-1], FILTERED.temperature)
    assert 4 <= np.count_nonzero(p1) < np.count_nonzero(unfiltered)
    assert specdec.drawing.total_variation(p1, q1) > 0.05


def test_memoised_and_live_sampling_draw_the_same_tokens(chi_setup, draft, hf):
    """Same seeds, same tokens: the memo only saves time; the live adapter's cache and rollbacks sample alike."""
    prompt, _, memo = chi_setup
    live = TransformersLM(hf)
    for seed in range(12):
        a = speculative_generate(memo, draft, prompt, 30, FILTERED, 4, np.random.default_rng(seed))
        b = speculative_generate(live, draft, prompt, 30, FILTERED, 4, np.random.default_rng(seed))
        np.testing.assert_array_equal(a.tokens, b.tokens, err_msg=f"seed {seed}")


def test_sampled_tokens_follow_the_filtered_law_of_the_hf_target(chi_setup, draft):
    prompt, pairs, memo = chi_setup
    values = p_values(draw_pairs(memo, draft, prompt, np.random.default_rng(2026_11)), pairs)
    assert min(values.values()) >= FAIL, values


def fall_back_to_p(drafts, q, p, rng):
    """Broken: the usual accept test, but a rejected draft is replaced by a draw from p, not the residual."""
    gamma = drafts.size
    accepted = rng.random(gamma) < p[np.arange(gamma), drafts] / q[np.arange(gamma), drafts]  # (gamma,)
    n = gamma if accepted.all() else int(np.argmin(accepted))
    return np.append(drafts[:n], specdec.sample(p[n], rng)).astype(np.int64), n


def accept_all(drafts, q, p, rng):
    """Broken: every draft is kept (the text follows the draft's law), then a bonus token."""
    return np.append(drafts, specdec.sample(p[drafts.size], rng)).astype(np.int64), drafts.size


def propose_reporting_unfiltered_q(draft, state, sequence, gamma, params, rng, min_confidence=0.0):
    """Broken: each draft is drawn from the filtered q, but the verifier is given the unfiltered softmax."""
    drafts, _ = ORIGINAL_PROPOSE(draft, state, sequence, gamma, params, rng, min_confidence)
    rows = draft.score([*sequence, *drafts[:-1]], draft.start())[-len(drafts) :]  # (g, V) logits before each draft
    return drafts, specdec.softmax(rows, params.temperature)


ORIGINAL_PROPOSE = specdec.speculative.propose
BROKEN = {
    "unfiltered sampling": None,  # the filters dropped: temperature only
    "unfiltered q in the ratio": ("propose", propose_reporting_unfiltered_q),
    "fall back to p": ("verify_drawn", fall_back_to_p),
    "always accept": ("verify_drawn", accept_all),
}


@pytest.mark.parametrize("variant", BROKEN)
def test_the_same_tests_reject_broken_samplers(chi_setup, draft, variant, monkeypatch):
    """Each broken variant, NEGATIVE_DRAWS runs, the same two tests: at least one must fail."""
    prompt, pairs, memo = chi_setup
    rng = np.random.default_rng(2026_12)
    if BROKEN[variant] is None:
        params = SamplingParams(temperature=FILTERED.temperature)
        runs = [speculative_generate(memo, draft, prompt, 2, params, 1, rng) for _ in range(NEGATIVE_DRAWS)]
        tokens = np.array([run.tokens for run in runs])
    else:
        monkeypatch.setattr(specdec.speculative, *BROKEN[variant])
        tokens = draw_pairs(memo, draft, prompt, rng, NEGATIVE_DRAWS)
    values = p_values(tokens, pairs)
    assert min(values.values()) < FAIL, values
