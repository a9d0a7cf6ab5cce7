"""Does a generation loop keep the target's law? Tiny models whose law is known exactly, and a chi-square test.

`TableModel` is a first-order Markov chain over a few tokens (its logits depend on the last
token only), so the exact probability of every continuation of length m is a product of m
table entries (`exact_law`). `law_test` runs a generation function many times, counts the
continuations, and compares the counts with the exact law by Pearson's chi-square test
(specdec.drawing.chi_square_test, from notebook 02). numpy only.
"""

import itertools

import numpy as np

from specdec.drawing import chi_square_test
from specdec.logits import softmax
from specdec.protocol import TokenHistory


class TableState(TokenHistory):
    """A TableModel's decoding state: the tokens seen."""


class TableModel:
    """A LanguageModel with logits table[last token] (V, V): a Markov chain, cheap and exactly known."""

    def __init__(self, table, name: str = "table", max_context: int = 64):
        self.table = np.asarray(table, dtype=np.float64)  # (V, V)
        self.name, self.vocab_size, self.max_context = name, self.table.shape[0], max_context

    def start(self) -> TableState:
        return TableState()

    def score(self, tokens, state: TableState) -> np.ndarray:
        tokens = [int(t) for t in np.asarray(tokens).reshape(-1)]
        if state.length + len(tokens) > self.max_context:
            raise ValueError(f"context overflow: {state.length} + {len(tokens)} > {self.max_context}")
        state.tokens.extend(tokens)
        return self.table[tokens]  # (n, V)


def exact_law(model: TableModel, last: int, m: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every continuation of m tokens after token `last`, and its probability under `model` (temperature 1)."""
    p = softmax(model.table)  # (V, V) next-token distribution after each token
    outcomes = list(itertools.product(range(model.vocab_size), repeat=m))
    probs = np.array([np.prod([p[a, b] for a, b in itertools.pairwise((last, *seq))]) for seq in outcomes])
    return outcomes, probs


def law_test(generate_once, model: TableModel, last: int, m: int, n: int):
    """Run `generate_once()` (-> m tokens) n times; chi-square test of the counts against the exact law."""
    outcomes, probs = exact_law(model, last, m)
    index = {seq: i for i, seq in enumerate(outcomes)}
    counts = np.zeros(len(outcomes))
    for _ in range(n):
        counts[index[tuple(int(t) for t in generate_once())]] += 1
    return chi_square_test(counts, probs), counts / n, probs
