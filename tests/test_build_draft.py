"""The draft's training script (training/build_draft.py): soft counts are counts of the target's distributions."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))

from build_draft import soft_count_model  # noqa: E402

from specdec.ngram import NGramModel  # noqa: E402

V, PROMPT, TOTAL = 7, 6, 20


def runs_and_one_hot(rng, n_runs):
    runs = rng.integers(0, V, (n_runs, TOTAL))  # (N, T)
    probs = np.eye(V, dtype=np.float32)[runs[:, PROMPT:]]  # (N, T - P, V) a point mass on what was written
    return runs, probs


@pytest.mark.parametrize("order", [2, 4])
def test_one_hot_distributions_give_the_counts_of_the_text(order):
    """With point masses (a target that is sure of what it wrote) soft counts are ordinary counts."""
    runs, probs = runs_and_one_hot(np.random.default_rng(order), 1)
    soft = soft_count_model(runs, probs, PROMPT, order, scale=1.0)
    hard = NGramModel.build(runs[0], order, V)
    for key, table in hard.arrays().items():
        np.testing.assert_array_equal(soft.arrays()[key], table, err_msg=key)


def test_soft_counts_add_scale_times_the_distributions():
    rng = np.random.default_rng(0)
    runs, _ = runs_and_one_hot(rng, 3)
    probs = rng.dirichlet(np.ones(V), size=(3, TOTAL - PROMPT)).astype(np.float32)  # (N, T - P, V)
    scale = 8.0
    model = soft_count_model(runs, probs, PROMPT, 2, scale)
    expected = {}  # context token -> summed soft counts of its followers
    for r in range(3):
        for i in range(1, TOTAL):
            row = probs[r, i - PROMPT] if i >= PROMPT else np.eye(V)[runs[r, i]]
            expected[runs[r, i - 1]] = expected.get(runs[r, i - 1], 0) + row.astype(np.float64)
    contexts, offsets, nexts, counts = (
        model.arrays()[f"{name}1"] for name in ("contexts", "offsets", "next", "counts")
    )
    assert contexts.tolist() == sorted(expected)
    for c, context in enumerate(contexts):
        dense = np.zeros(V, np.int64)
        dense[nexts[offsets[c] : offsets[c + 1]]] = counts[offsets[c] : offsets[c + 1]]
        want = np.rint(scale * expected[context]).astype(np.int64)
        if not want.any():
            want[np.argmax(expected[context])] = 1
        np.testing.assert_array_equal(dense, want)
    assert np.isclose(model.unigram.sum(), 1.0)
