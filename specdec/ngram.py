# Generated from notebooks/06_language_models.ipynb by tools/export.py: edit the notebook, not this file.
"""A character n-gram language model: counts, Witten-Bell interpolation, the same interface as the GPT."""

import numpy as np

from specdec.protocol import TokenHistory
from specdec.validation import check_new_tokens


def context_ids(tokens: np.ndarray, k: int, vocab_size: int) -> np.ndarray:
    """For each position i >= k, the k tokens before it as one integer (base vocab_size), shape (n - k,)."""
    ids = np.zeros(tokens.size - k, dtype=np.int64)  # (n - k,)
    for j in range(k):  # oldest token first: ids = ((t[i-k] * V + t[i-k+1]) * V + ...)
        ids *= vocab_size  # in place: no second array of n integers
        ids += tokens[j : tokens.size - k + j]
    return ids


class NGramModel:
    """P(next | last order-1 tokens), interpolated with every shorter context (Witten-Bell).

    For a context c seen N_c times with T_c distinct next tokens,
        P_k(w | c) = (count(c, w) + T_c * P_(k-1)(w | shorter c)) / (N_c + T_c),
    so a context that was always followed by the same token trusts it, and a context seen
    with many different followers leans on the shorter context. Order 0 is add-one smoothed
    unigram counts, so every token keeps a little probability. Building it is a few
    np.unique calls; looking up a context is a binary search per order, memoised.
    """

    def __init__(self, order: int, vocab_size: int, tables: dict[str, np.ndarray], name: str = "ngram"):
        self.order, self.vocab_size, self.name = order, vocab_size, name
        self.max_context = 1_000_000  # only the last order-1 tokens matter; this bounds the history
        self.unigram = tables["unigram"].astype(np.float64)  # (V,) probabilities
        self.tables = [None] + [
            tuple(tables[f"{table}{k}"] for table in ("contexts", "offsets", "next", "counts")) for k in range(1, order)
        ]
        # Per context, what lookups need, computed once: keep = T_c / (N_c + T_c), the weight left for
        # the shorter context, and per (context, next) pair share = count / (N_c + T_c).
        self.weights = [None]
        for _, offsets, _, counts in self.tables[1:]:
            distinct = np.diff(offsets)  # (C,) T_c
            denominator = np.add.reduceat(counts, offsets[:-1]).astype(np.float64) + distinct  # (C,) N_c + T_c
            self.weights.append((distinct / denominator, counts / np.repeat(denominator, distinct)))
        self.memo: dict[tuple, np.ndarray] = {}  # context -> distribution: a cache, never a change of results

    @classmethod
    def build(cls, tokens, order: int, vocab_size: int, name: str = "ngram") -> "NGramModel":
        """Count every k-gram, k < order, of a token stream."""
        tokens = np.asarray(tokens, dtype=np.int64)  # (n,)
        counts = np.bincount(tokens, minlength=vocab_size).astype(np.float64)  # (V,)
        tables = {"unigram": (counts + 1) / (counts.sum() + vocab_size)}
        for k in range(1, order):
            keys = context_ids(tokens, k, vocab_size) * vocab_size + tokens[k:]  # (n - k,) context and next
            unique_keys, key_counts = np.unique(keys, return_counts=True)  # sorted by context, then next
            contexts, starts = np.unique(unique_keys // vocab_size, return_index=True)
            tables[f"contexts{k}"] = contexts  # (C,) sorted context ids
            tables[f"offsets{k}"] = np.append(starts, unique_keys.size)  # (C + 1,) slice of each context
            tables[f"next{k}"] = (unique_keys % vocab_size).astype(np.uint8)  # (E,)
            tables[f"counts{k}"] = key_counts.astype(np.uint32)  # (E,)
        return cls(order, vocab_size, tables, name)

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything needed to rebuild the model, for np.savez."""
        out = {"kind": np.array("ngram"), "order": np.array(self.order), "unigram": self.unigram}
        for k in range(1, self.order):
            for name, table in zip(("contexts", "offsets", "next", "counts"), self.tables[k], strict=True):
                out[f"{name}{k}"] = table
        return out

    def distribution(self, context: tuple) -> np.ndarray:
        """P(next | the last order-1 tokens of `context`), float64 (V,); memoised."""
        context = context[len(context) - (self.order - 1) :] if self.order > 1 else ()
        cached = self.memo.get(context)  # one lookup: safe while another thread clears the memo
        if cached is not None:
            return cached
        probs = self.unigram.copy()  # (V,)
        key, scale = 0, 1
        for k in range(1, len(context) + 1):
            key += context[-k] * scale  # the last k tokens as one integer, oldest first
            scale *= self.vocab_size
            contexts, offsets, next_tokens, _ = self.tables[k]
            keep, share = self.weights[k]
            i = contexts.searchsorted(key)
            if i == contexts.size or contexts[i] != key:
                break  # a longer context containing an unseen one is unseen too
            lo, hi = offsets[i], offsets[i + 1]
            probs *= keep[i]  # T_c / (N_c + T_c) of the shorter context's distribution ...
            probs[next_tokens[lo:hi]] += share[lo:hi]  # ... plus count(c, w) / (N_c + T_c)
        if len(self.memo) >= 200_000:  # bound the memory: start afresh rather than grow forever
            self.memo.clear()
        probs.flags.writeable = False  # shared by every caller that asks for this context
        self.memo[context] = probs
        return probs

    def start(self) -> "NGramState":
        """A fresh decoding state: no tokens seen."""
        return NGramState()

    def score(self, tokens, state: "NGramState") -> np.ndarray:
        """Feed new tokens to `state`; return log P(next | everything it has seen) after each, shape (n, V)."""
        if not isinstance(state, NGramState):
            raise TypeError(f"state must be an NGramState from this model's start(), got {type(state).__name__}")
        tokens = check_new_tokens(tokens, self.vocab_size)  # (n,)
        if state.length + tokens.size > self.max_context:
            raise ValueError(f"context overflow: {state.length} + {tokens.size} > max_context {self.max_context}")
        history = state.tokens
        rows = []
        for token in tokens.tolist():
            history.append(token)
            rows.append(self.distribution(tuple(history[-(self.order - 1) :]) if self.order > 1 else ()))
        return np.log(np.array(rows))  # (n, V)


class NGramState(TokenHistory):
    """What an n-gram remembers of one text: the tokens seen (only the last order - 1 matter)."""
