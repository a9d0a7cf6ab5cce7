"""Does a generation loop keep the target's law? Tiny models whose law is known exactly, and a chi-square test.

`TableModel` (specdec.exact, notebook 09) is a first-order Markov chain over a few tokens (its logits
depend on the last token only), so the exact probability of every continuation of length m is a
product of m table entries (`exact_law`, from specdec.exact.target_law). `law_test` runs a
generation function many times, counts the continuations, and compares the counts with the exact
law by Pearson's chi-square test (specdec.drawing.chi_square_test, from notebook 02). numpy only.
"""

import itertools

import numpy as np

from specdec.drawing import chi_square_test
from specdec.exact import TableModel, bigram, target_law
from specdec.logits import softmax

__all__ = ["TableModel", "exact_law", "law_test"]


def exact_law(model: TableModel, last: int, m: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every continuation of m tokens after token `last`, and its probability under `model` (temperature 1)."""
    outcomes = list(itertools.product(range(model.vocab_size), repeat=m))  # the order of ravel() below
    return outcomes, target_law(bigram(softmax(model.logits)), (last,), m).ravel()


def law_test(generate_once, model: TableModel, last: int, m: int, n: int):
    """Run `generate_once()` (-> m tokens) n times; chi-square test of the counts against the exact law."""
    outcomes, probs = exact_law(model, last, m)
    index = {seq: i for i, seq in enumerate(outcomes)}
    counts = np.zeros(len(outcomes))
    for _ in range(n):
        counts[index[tuple(int(t) for t in generate_once())]] += 1
    return chi_square_test(counts, probs), counts / n, probs
