"""The tiny GPT's KV cache: incremental decoding, multi-token scoring and rollback (specdec/gpt.py)."""

import numpy as np
import pytest

from specdec.gpt import GPT, expected_shapes, gelu, layer_names

VOCAB, CONTEXT, D_MODEL, N_LAYER, N_HEAD = 98, 64, 32, 2, 4


def random_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    weights = {}
    for key, shape in expected_shapes(VOCAB, CONTEXT, D_MODEL, N_LAYER).items():
        base = 1.0 if key.endswith("gain") else 0.0
        weights[key] = (base + rng.normal(0, 0.3, shape)).astype(np.float32)
    return weights


def reference_logits(weights: dict[str, np.ndarray], tokens: np.ndarray) -> np.ndarray:
    """A plain, cache-free forward pass over the whole sequence, in float64, head by head."""
    w = {key: value.astype(np.float64) for key, value in weights.items()}

    def norm(x, gain, bias):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * gain + bias

    n = tokens.size
    x = w["wte"][tokens] + w["wpe"][:n]  # (n, d)
    causal = np.tril(np.ones((n, n), dtype=bool))  # (n, n) position i sees j <= i
    head_dim = D_MODEL // N_HEAD
    for i in range(N_LAYER):
        g1, b1, w_qkv, b_qkv, w_o, b_o, g2, b2, w_in, b_in, w_out, b_out = (w[key] for key in layer_names(i))
        q, k, v = np.split(norm(x, g1, b1) @ w_qkv + b_qkv, 3, axis=-1)  # 3 x (n, d)
        heads = []
        for h in range(N_HEAD):
            part = slice(h * head_dim, (h + 1) * head_dim)
            scores = np.where(causal, q[:, part] @ k[:, part].T / np.sqrt(head_dim), -np.inf)  # (n, n)
            attention = np.exp(scores - scores.max(-1, keepdims=True))
            heads.append(attention / attention.sum(-1, keepdims=True) @ v[:, part])  # (n, dh)
        x = x + np.concatenate(heads, axis=-1) @ w_o + b_o
        x = x + gelu(norm(x, g2, b2) @ w_in + b_in) @ w_out + b_out
    return norm(x, w["ln_f.gain"], w["ln_f.bias"]) @ w["wte"].T  # (n, V)


@pytest.fixture
def model() -> GPT:
    return GPT(random_weights(), n_head=N_HEAD)


@pytest.fixture
def tokens() -> np.ndarray:
    return np.random.default_rng(1).integers(0, VOCAB, CONTEXT)


def test_incremental_decoding_equals_a_full_recompute_at_every_position(model, tokens):
    cache = model.start()
    incremental = np.concatenate([model.score(tokens[i : i + 1], cache) for i in range(CONTEXT)])  # (T, V)
    reference = reference_logits(model.w, tokens)  # (T, V)
    assert np.abs(incremental - reference).max() <= 1e-5 * max(1.0, np.abs(reference).max())
    assert incremental.dtype == np.float32


def test_scoring_n_positions_at_once_equals_n_single_steps(model, tokens):
    cache = model.start()
    single = np.concatenate([model.score(tokens[i : i + 1], cache) for i in range(20)])
    for n in (1, 2, 5, 8, 16):
        cache = model.start()
        model.score(tokens[:4], cache)
        together = model.score(tokens[4 : 4 + n], cache)  # (n, V)
        np.testing.assert_allclose(together, single[4 : 4 + n], atol=1e-5)
        assert cache.length == 4 + n


def test_rollback_then_rescoring_equals_never_having_scored_the_rolled_back_tokens(model, tokens):
    cache = model.start()
    model.score(tokens[:10], cache)
    clean = model.score(tokens[10:14], cache)  # (4, V)
    cache = model.start()
    model.score(tokens[:10], cache)
    model.score(np.array([3, 1, 4, 1, 5]), cache)  # five tokens that will be rejected
    cache.rollback(10)
    assert cache.length == 10
    np.testing.assert_array_equal(model.score(tokens[10:14], cache), clean)


def test_the_model_fills_its_whole_context_and_then_refuses_more(model, tokens):
    cache = model.start()
    model.score(tokens, cache)
    assert cache.length == CONTEXT
    with pytest.raises(ValueError, match="context overflow: 64 tokens seen \\+ 1 new > max_context 64"):
        model.score(tokens[:1], cache)


@pytest.mark.parametrize("length", [-1, 11])
def test_rollback_past_the_start_or_beyond_the_current_length(model, tokens, length):
    cache = model.start()
    model.score(tokens[:10], cache)
    with pytest.raises(ValueError, match=r"rollback length \(tokens seen: 10\) must be an integer in \[0, 10\]"):
        cache.rollback(length)
    assert cache.length == 10  # a refused rollback forgets nothing


@pytest.mark.parametrize("length", [2.0, "3", None, True])
def test_rollback_to_a_non_integer_length(model, tokens, length):
    cache = model.start()
    model.score(tokens[:10], cache)
    with pytest.raises(TypeError, match=r"rollback length \(tokens seen: 10\) must be an integer in \[0, 10\]"):
        cache.rollback(length)


@pytest.mark.parametrize("bad", [[VOCAB], [-1], []])
def test_bad_token_ids(model, bad):
    with pytest.raises(ValueError, match="token ids must be in|at least one token"):
        model.score(np.array(bad, dtype=np.int64), model.start())


def test_float_token_ids_are_refused(model):
    with pytest.raises(TypeError, match="tokens must be integer token ids, got dtype float64"):
        model.score(np.array([1.0, 2.0]), model.start())


def test_states_are_independent_and_the_model_keeps_none(model, tokens):
    first, second = model.start(), model.start()
    expected = model.score(tokens[:12], model.start())  # (12, V)
    model.score(np.array([7, 7, 7]), first)  # another text read by the same model meanwhile
    np.testing.assert_array_equal(model.score(tokens[:12], second), expected)
    assert first.length == 3 and second.length == 12
    np.testing.assert_array_equal(model.score(tokens[:12], model.start()), expected)  # the model itself is unchanged


def test_a_cache_from_another_model_or_no_cache_is_refused(model, tokens):
    other = GPT(random_weights(), n_head=N_HEAD)
    with pytest.raises(TypeError, match="must be this model's KVCache, from its start"):
        model.score(tokens[:3], other.start())
    with pytest.raises(TypeError, match="must be this model's KVCache, from its start"):
        model.score(tokens[:3], None)


def test_the_weights_are_a_read_only_copy(tokens):
    weights = random_weights()
    model = GPT(weights, n_head=N_HEAD)
    expected = model.score(tokens[:5], model.start())
    weights["wte"][:] = 0  # changing the caller's arrays changes nothing in the model
    np.testing.assert_array_equal(model.score(tokens[:5], model.start()), expected)
    with pytest.raises(ValueError, match="read-only"):
        model.w["wte"][0, 0] = 1.0
