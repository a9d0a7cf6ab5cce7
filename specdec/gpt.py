# Generated from notebooks/06_language_models.ipynb by tools/export.py: edit the notebook, not this file.
"""A tiny GPT for inference in numpy: pre-LN transformer, learned positions, tied embeddings, KV cache."""

import math

import numpy as np


def layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Normalise each row to mean 0 and variance 1, then scale and shift."""
    d = x.shape[-1]  # sum / d rather than .mean(): the same numbers, a few microseconds less per call
    centred = x - x.sum(axis=-1, keepdims=True) / d  # (n, d)
    return centred / np.sqrt((centred * centred).sum(axis=-1, keepdims=True) / d + eps) * gain + bias  # (n, d)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation (as in GPT-2)."""
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def layer_names(i: int) -> list[str]:
    """The names of layer i's arrays in a weights file."""
    return [
        f"h{i}.ln1.gain",
        f"h{i}.ln1.bias",
        f"h{i}.attn.w_qkv",
        f"h{i}.attn.b_qkv",
        f"h{i}.attn.w_out",
        f"h{i}.attn.b_out",
        f"h{i}.ln2.gain",
        f"h{i}.ln2.bias",
        f"h{i}.mlp.w_in",
        f"h{i}.mlp.b_in",
        f"h{i}.mlp.w_out",
        f"h{i}.mlp.b_out",
    ]


def expected_shapes(vocab_size: int, max_context: int, d_model: int, n_layer: int) -> dict[str, tuple]:
    """Every array a GPT weights file must hold, with its shape."""
    d = d_model
    shapes = {"wte": (vocab_size, d), "wpe": (max_context, d), "ln_f.gain": (d,), "ln_f.bias": (d,)}
    for i in range(n_layer):
        layer = [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
        shapes.update(zip(layer_names(i), layer, strict=True))
    return shapes


class GPT:
    """Next-token logits from a tiny GPT, one call per batch of new tokens.

    The model keeps a key/value cache of every token it has seen (preallocated for
    `max_context` tokens), so `score(tokens)` only computes the new positions:
    scoring n tokens in one call returns the same logits as n calls of one token.
    `rollback(length)` forgets everything after the first `length` tokens.
    """

    def __init__(self, weights: dict[str, np.ndarray], n_head: int, name: str = "gpt"):
        self.name = name
        self.w = {key: np.asarray(value, dtype=np.float32) for key, value in weights.items()}
        self.vocab_size, self.d_model = self.w["wte"].shape
        self.max_context = self.w["wpe"].shape[0]
        self.n_layer = sum(1 for key in self.w if key.endswith(".ln1.gain"))
        self.n_head = n_head
        self.head_dim = self.d_model // n_head
        cache_shape = (self.n_layer, n_head, self.max_context, self.head_dim)
        self.keys = np.zeros(cache_shape, dtype=np.float32)  # (L, H, T, dh)
        self.values = np.zeros(cache_shape, dtype=np.float32)  # (L, H, T, dh)
        self.layers = [[self.w[key] for key in layer_names(i)] for i in range(self.n_layer)]
        self.length = 0  # tokens in the cache

    def reset(self) -> None:
        """Forget every token (the cache is overwritten, not cleared)."""
        self.length = 0

    def rollback(self, length: int) -> None:
        """Keep only the first `length` tokens seen."""
        if not 0 <= length <= self.length:
            raise ValueError(f"rollback length must be in [0, {self.length}] (tokens seen), got {length}")
        self.length = length

    def score(self, tokens) -> np.ndarray:
        """Feed new tokens; return the logits for the token after each of them, shape (n, V)."""
        tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)  # (n,)
        n, start = tokens.size, self.length
        end = start + n
        if n == 0:
            raise ValueError("score needs at least one token")
        if end > self.max_context:
            raise ValueError(f"context overflow: {start} tokens seen + {n} new > max_context {self.max_context}")
        if tokens.min() < 0 or tokens.max() >= self.vocab_size:
            raise ValueError(f"token ids must be in [0, {self.vocab_size}), got {tokens.min()}..{tokens.max()}")
        h, dh = self.n_head, self.head_dim
        x = self.w["wte"][tokens] + self.w["wpe"][start:end]  # (n, d)
        # New position i (absolute start + i) may look at positions 0 .. start + i.
        future = np.arange(end)[None, :] > np.arange(start, end)[:, None]  # (n, end)
        for layer, (g1, b1, w_qkv, b_qkv, w_o, b_o, g2, b2, w_in, b_in, w_out, b_out) in enumerate(self.layers):
            qkv = layer_norm(x, g1, b1) @ w_qkv + b_qkv  # (n, 3d)
            q, k, v = qkv.reshape(n, 3, h, dh).transpose(1, 2, 0, 3)  # 3 x (h, n, dh)
            self.keys[layer, :, start:end] = k
            self.values[layer, :, start:end] = v
            scores = q @ self.keys[layer, :, :end].transpose(0, 2, 1) * (1 / math.sqrt(dh))  # (h, n, end)
            if n > 1:
                scores[:, future] = -np.inf
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (h, n, end)
            attention = scores / scores.sum(axis=-1, keepdims=True)  # (h, n, end) rows sum to 1
            mixed = (attention @ self.values[layer, :, :end]).transpose(1, 0, 2).reshape(n, -1)  # (n, d)
            x = x + mixed @ w_o + b_o  # (n, d)
            x = x + gelu(layer_norm(x, g2, b2) @ w_in + b_in) @ w_out + b_out  # (n, d)
        self.length = end
        return layer_norm(x, self.w["ln_f.gain"], self.w["ln_f.bias"]) @ self.w["wte"].T  # (n, V)
