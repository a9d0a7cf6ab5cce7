# Generated from notebooks/06_language_models.ipynb by tools/export.py: edit the notebook, not this file.
"""A character n-gram language model: counts, Witten-Bell interpolation, the same interface as the GPT."""

import numpy as np

from specdec.protocol import TokenHistory
from specdec.validation import check_score

TABLES = ("contexts", "offsets", "next", "counts")  # per order k, the arrays contexts{k}, offsets{k}, ...


def context_ids(tokens: np.ndarray, k: int, vocab_size: int) -> np.ndarray:
    """For each position i >= k, the k tokens before it as one integer (base vocab_size), shape (n - k,)."""
    ids = np.zeros(tokens.size - k, dtype=np.int64)  # (n - k,)
    for j in range(k):  # oldest token first: ids = ((t[i-k] * V + t[i-k+1]) * V + ...)
        ids *= vocab_size  # in place: no second array of n integers
        ids += tokens[j : tokens.size - k + j]
    return ids


class NGramModel:
    """P(next | the last order-1 tokens): counts mixed with every shorter context's estimate (Witten-Bell).

    P_k(w | c) = (count(c, w) + T_c * P_(k-1)(w | c')) / (N_c + T_c), down to add-one smoothed unigram counts.
    """

    def __init__(self, order: int, vocab_size: int, tables: dict[str, np.ndarray], name: str = "ngram"):
        self.order, self.vocab_size, self.name = order, vocab_size, name
        self.max_context = 1_000_000  # only the last order-1 tokens matter; this bounds the history
        self.unigram = tables["unigram"].astype(np.float64)  # (V,) probabilities
        self.tables = [None] + [tuple(tables[f"{table}{k}"] for table in TABLES) for k in range(1, order)]

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
            out.update({f"{name}{k}": table for name, table in zip(TABLES, self.tables[k], strict=True)})
        return out

    def distribution(self, context: tuple) -> np.ndarray:
        """P(next | the last order-1 tokens of `context`), float64 (V,)."""
        probs = self.unigram.copy()  # (V,) order 0
        key, scale = 0, 1
        for k in range(1, min(len(context), self.order - 1) + 1):
            key += context[-k] * scale  # the last k tokens as one integer, oldest first
            scale *= self.vocab_size
            contexts, offsets, next_tokens, counts = self.tables[k]
            i = contexts.searchsorted(key)
            if i == contexts.size or contexts[i] != key:
                break  # a longer context containing an unseen one is unseen too
            followers = slice(offsets[i], offsets[i + 1])  # this context's (next token, count) pairs
            distinct = offsets[i + 1] - offsets[i]  # T_c
            total = counts[followers].sum() + distinct  # N_c + T_c
            probs *= distinct / total  # T_c / (N_c + T_c) of the shorter context's distribution ...
            probs[next_tokens[followers]] += counts[followers] / total  # ... plus count(c, w) / (N_c + T_c)
        return probs

    def start(self) -> "NGramState":  # a fresh decoding state: no tokens seen
        return NGramState()

    def score(self, tokens, state: "NGramState") -> np.ndarray:
        """Feed new tokens to `state`; return log P(next | everything it has seen) after each, shape (n, V)."""
        tokens = check_score(tokens, state, NGramState, self)  # (n,) and room for them
        rows = []
        for token in tokens.tolist():
            state.tokens.append(token)
            rows.append(self.distribution(tuple(state.tokens[-(self.order - 1) :]) if self.order > 1 else ()))
        return np.log(np.array(rows))  # (n, V)


class NGramState(TokenHistory):
    """What an n-gram remembers of one text: the tokens seen (only the last order - 1 matter)."""


class NGramModel(NGramModel):  # noqa: F811 (replaces the core's NGramModel: the same distributions, faster; the package's tests check it)
    """Section 5's n-gram, faster: each context's two weights computed once, and every distribution memoised."""

    def __init__(self, order: int, vocab_size: int, tables: dict[str, np.ndarray], name: str = "ngram"):
        super().__init__(order, vocab_size, tables, name)
        # Per context, what lookups need, computed once: keep = T_c / (N_c + T_c), the weight left for
        # the shorter context, and per (context, next) pair share = count / (N_c + T_c).
        self.weights = [None]
        for _, offsets, _, counts in self.tables[1:]:
            distinct = np.diff(offsets)  # (C,) T_c
            denominator = np.add.reduceat(counts, offsets[:-1]).astype(np.float64) + distinct  # (C,) N_c + T_c
            self.weights.append((distinct / denominator, counts / np.repeat(denominator, distinct)))
        self.memo: dict[tuple, np.ndarray] = {}  # context -> distribution: a cache, never a change of results

    def distribution(self, context: tuple) -> np.ndarray:
        """P(next | the last order-1 tokens of `context`), float64 (V,); memoised."""
        context = context[-(self.order - 1) :] if self.order > 1 else ()  # all of a shorter context
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
