# Generated from notebooks/06_language_models.ipynb by tools/export.py: edit the notebook, not this file.
"""A tiny GPT for inference in numpy: pre-LN transformer, learned positions, tied embeddings, KV cache."""

import math

import numpy as np

from specdec.threads import blas_kernels
from specdec.validation import check_rollback, check_score


def layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Normalise each row to mean 0 and variance 1, then scale and shift."""
    d = x.shape[-1]  # sum / d rather than .mean(): the same numbers, a little less per call
    centred = x - x.sum(axis=-1, keepdims=True) / d  # (n, d)
    return centred / np.sqrt((centred * centred).sum(axis=-1, keepdims=True) / d + eps) * gain + bias  # (n, d)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, a smooth ReLU (the tanh approximation, as in GPT-2)."""
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def linear(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x @ w + b: every row of x (n, d_in) times the weights (d_in, d_out), plus the bias (d_out,)."""
    return x @ w + b  # (n, d_out)


def layer_names(i: int) -> list[str]:
    """The names of layer i's arrays in a weights file: two layer norms, attention, the MLP."""
    parts = ["ln1.gain", "ln1.bias", "attn.w_qkv", "attn.b_qkv", "attn.w_out", "attn.b_out"]
    parts += ["ln2.gain", "ln2.bias", "mlp.w_in", "mlp.b_in", "mlp.w_out", "mlp.b_out"]
    return [f"h{i}.{part}" for part in parts]


class KVCache:
    """A GPT's decoding state: keys and values of every token seen, preallocated; the first `length` are valid."""

    def __init__(self, model: "GPT"):
        self.model = model  # the GPT whose keys these are
        shape = (model.n_layer, model.n_head, model.max_context, model.head_dim)
        self.keys, self.values = np.zeros(shape, np.float32), np.zeros(shape, np.float32)  # (L, H, T, dh) each
        self.length = 0  # tokens in the cache

    def rollback(self, length: int) -> None:  # keep only the first `length` tokens seen
        self.length = check_rollback(length, self.length)


class GPT:
    """A tiny GPT: read-only weights; what it has read of one text lives in a KVCache from `start()`."""

    def __init__(self, weights: dict[str, np.ndarray], n_head: int, name: str = "gpt"):
        self.name = name
        self.w = {key: np.array(value, dtype=np.float32) for key, value in weights.items()}  # our own copy
        for array in self.w.values():
            array.flags.writeable = False  # immutable after loading: any number of generations may share it
        self.vocab_size, self.d_model = self.w["wte"].shape
        self.max_context = self.w["wpe"].shape[0]
        self.n_layer = sum(1 for key in self.w if key.endswith(".ln1.gain"))
        self.n_head, self.head_dim = n_head, self.d_model // n_head
        self.layers = [[self.w[key] for key in layer_names(i)] for i in range(self.n_layer)]
        # The causal mask, added to scores: -inf above the diagonal (exp(-inf) = 0).
        self.causal = np.triu(np.full((self.max_context, self.max_context), -np.inf, dtype=np.float32), k=1)
        self.causal.flags.writeable = False

    def start(self) -> KVCache:  # a fresh, empty KV cache for one text
        return KVCache(self)

    def score(self, tokens, cache: KVCache) -> np.ndarray:
        """Feed new tokens to `cache`; return the logits for the token after each of them, shape (n, V)."""
        tokens = check_score(tokens, cache, KVCache, self, "cache")  # (n,) and room for them in the cache
        n, past = tokens.size, cache.length  # past: the tokens already cached
        end = past + n
        h, dh = self.n_head, self.head_dim
        x = self.w["wte"][tokens] + self.w["wpe"][past:end]  # (n, d)
        for layer, (g1, b1, w_qkv, b_qkv, w_o, b_o, g2, b2, w_in, b_in, w_out, b_out) in enumerate(self.layers):
            qkv = linear(layer_norm(x, g1, b1), w_qkv, b_qkv)  # (n, 3d)
            q, k, v = qkv.reshape(n, 3, h, dh).transpose(1, 2, 0, 3)  # 3 x (h, n, dh)
            cache.keys[layer, :, past:end] = k
            cache.values[layer, :, past:end] = v
            scores = q @ cache.keys[layer, :, :end].transpose(0, 2, 1)  # (h, n, end)
            scores *= 1 / math.sqrt(dh)  # in place (here and below): fewer temporaries
            if n > 1:  # new token i (position past + i) must not see the new tokens after it
                scores[:, :, past:] += self.causal[:n, :n]  # (h, n, n) block of the new tokens
            scores -= scores.max(axis=-1, keepdims=True)
            attention = np.exp(scores, out=scores)  # (h, n, end)
            attention /= attention.sum(axis=-1, keepdims=True)  # rows sum to 1
            mixed = (attention @ cache.values[layer, :, :end]).transpose(1, 0, 2).reshape(n, -1)  # (n, d)
            x = x + linear(mixed, w_o, b_o)  # (n, d)
            x = x + linear(gelu(linear(layer_norm(x, g2, b2), w_in, b_in)), w_out, b_out)  # (n, d)
        cache.length = end
        return layer_norm(x, self.w["ln_f.gain"], self.w["ln_f.bias"]) @ self.w["wte"].T  # (n, V)


def expected_shapes(vocab_size: int, max_context: int, d_model: int, n_layer: int) -> dict[str, tuple]:
    """Every array a GPT weights file must hold, with its shape."""
    d = d_model
    shapes = {"wte": (vocab_size, d), "wpe": (max_context, d), "ln_f.gain": (d,), "ln_f.bias": (d,)}
    for i in range(n_layer):
        layer = [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
        shapes.update(zip(layer_names(i), layer, strict=True))
    return shapes


linear_gemm = linear  # the core's linear, kept to compare: this cell replaces `linear`
STACKED_KERNELS = frozenset({"Haswell"})  # BLAS kernels on which one gemv per row measured faster, for a few rows
STACKED_ROWS = 7 if blas_kernels() & STACKED_KERNELS else 0  # up to this many rows (0: never); read at every call


def linear(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:  # noqa: F811 (replaces the core's linear: the same products, faster where measured; a test checks it)
    """x @ w + b, with 2 to STACKED_ROWS rows as a stack of matrix-vector products in one numpy call.

    (n, 1, d_in) @ (d_in, d_out) multiplies each row by w on its own (BLAS's gemv): each row gets
    exactly the numbers a one-row call gives, and on the kernels in STACKED_KERNELS a few gemv cost
    less than one small matrix-matrix product (gemm).
    """
    if 1 < x.shape[0] <= STACKED_ROWS:
        return (x[:, None, :] @ w)[:, 0] + b  # (n, d_out) one gemv per row
    return x @ w + b  # (n, d_out)
