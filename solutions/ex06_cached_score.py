"""Solution to notebook 06, exercise 4: the bug in a KV-cache step.

The bug is in the causal mask. New token i sits at *absolute* position past + i (past: the
tokens already cached), and may look at every cached position up to and including its own:
columns 0 .. past + i. The buggy line compares the columns with np.arange(n), the *relative*
positions 0 .. n - 1, so as soon as something is already cached (past > 0) a block of new
tokens is forbidden to look at most of the past.

Why it hides: from an empty cache past = 0, so relative and absolute positions coincide and a
whole prompt scores correctly; and a single new token skips the mask (`if n > 1`), so
generation one token at a time is correct too. It breaks only when several tokens are scored
after a prefix, which is exactly what speculative decoding's verification call does.

The fix: np.arange(past, end) for the rows, as in specdec.gpt.GPT.score.
"""

import math

import numpy as np


def cached_score(w, cache, tokens):
    """Feed new tokens; return the logits after each, shape (n, V). One layer, one head, a KV cache."""
    tokens = np.asarray(tokens, dtype=np.int64)  # (n,)
    n, past = tokens.size, cache["length"]  # past: the tokens already cached
    end = past + n
    x = w["wte"][tokens] + w["wpe"][past:end]  # (n, d) token + position
    q, k, v = x @ w["w_q"], x @ w["w_k"], x @ w["w_v"]  # (n, d) each
    cache["keys"][past:end] = k  # the new positions' keys and values join the cache
    cache["values"][past:end] = v
    scores = q @ cache["keys"][:end].T / math.sqrt(k.shape[1])  # (n, end) every new token vs every cached one
    if n > 1:  # a single new token may see everything in the cache
        future = np.arange(end)[None, :] > np.arange(past, end)[:, None]  # THE FIX: absolute positions of the rows
        scores[future] = -np.inf
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))  # (n, end)
    weights /= weights.sum(axis=1, keepdims=True)
    x = x + weights @ cache["values"][:end] @ w["w_o"]  # (n, d)
    cache["length"] = end
    return x @ w["wte"].T  # (n, V)
