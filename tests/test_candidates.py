"""largest_candidates and m_largest (notebook 05's Going further): the m largest logits without partitioning the row.

The claim is exact: the columns returned hold the m largest logits of every row, ties with the m-th
included, or the function says None and the caller partitions. Checked against a full sort on rows a
language model gives and on adversarial ones (all equal, two values, runs of -inf, subnormals, ties
among group maxima, widths that leave a partial group), then through sampling_probs against the core's
composition of the filters on GPT-2-sized rows.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec import SamplingParams, sampling_probs
from specdec.pipeline import CANDIDATE_BLOCK, composed_sampling_probs, largest_candidates, m_largest

KINDS = ["normal", "peaked", "integers", "all equal", "two values", "minus inf runs", "subnormal", "tied maxima"]


def adversarial_rows(kind: str, rows: int, vocab: int, seed: int) -> np.ndarray:
    """A (rows, vocab) float64 batch of one kind (every kind is exact in float64, ties included)."""
    gen = np.random.default_rng(seed)
    if kind == "normal":
        return gen.normal(scale=3.0, size=(rows, vocab))
    if kind == "peaked":  # a few strong logits over a background, as a language model's rows
        x = gen.normal(scale=3.0, size=(rows, vocab))
        x[np.arange(rows)[:, None], gen.integers(0, vocab, size=(rows, 4))] += 20.0
        return x
    if kind == "integers":  # heavy ties everywhere
        return gen.integers(-3, 4, size=(rows, vocab)).astype(float)
    if kind == "all equal":
        return np.full((rows, vocab), 1.5)
    if kind == "two values":
        return np.where(gen.random((rows, vocab)) < 0.01, 2.0, -1.0)
    if kind == "minus inf runs":
        x = gen.normal(size=(rows, vocab))
        start = gen.integers(0, vocab // 2, size=rows)
        for row, first in enumerate(start):
            x[row, first : first + vocab // 3] = -np.inf
        return x
    if kind == "subnormal":  # logits a few subnormal steps apart
        return gen.integers(0, 50, size=(rows, vocab)) * 5e-324
    # "tied maxima": every group maximum the same value, so t ties across many groups
    x = gen.normal(size=(rows, vocab)) - 10.0
    groups = vocab // CANDIDATE_BLOCK
    x[:, gen.permutation(groups)[: groups // 2]] = 0.0  # half the groups reach exactly 0 (in their first slice)
    return x


def assert_holds_the_m_largest(rows: np.ndarray, columns: np.ndarray, m: int) -> None:
    """The columns are distinct, in range, and their logits include the row's m largest values."""
    assert columns.ndim == 2 and columns.shape[0] == rows.shape[0]
    for row, cols in zip(rows, columns, strict=True):
        assert np.unique(cols).size == cols.size and cols.min() >= 0 and cols.max() < row.size
        got = np.sort(row[cols])[::-1][:m]
        np.testing.assert_array_equal(got, np.sort(row)[::-1][:m])


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    vocab=st.sampled_from([4096, 4099, 5003, 8191, 50257]),
    m=st.sampled_from([1, 2, 7, 31, 32]),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_candidates_hold_the_m_largest_of_every_row(kind, vocab, m, seed):
    rows = adversarial_rows(kind, 3, vocab, seed)
    candidates = largest_candidates(rows, m)
    if candidates is not None:
        assert candidates.shape[1] == m * CANDIDATE_BLOCK + vocab % CANDIDATE_BLOCK
        assert_holds_the_m_largest(rows, candidates, m)
    assert_holds_the_m_largest(rows, m_largest(rows, m), m)


def test_rows_a_language_model_gives_take_the_candidates_path():
    """The detour is taken where it pays: ties among group maxima are rare in real logits."""
    rows = adversarial_rows("peaked", 64, 50257, 0).astype(np.float32)
    candidates = largest_candidates(rows, 64)
    assert candidates is not None and candidates.shape == (64, 64 * 32 + 50257 % 32)
    assert_holds_the_m_largest(rows, candidates, 64)


@pytest.mark.parametrize("kind", ["all equal", "two values", "tied maxima", "integers"])
def test_tied_group_maxima_are_refused_not_guessed(kind):
    rows = adversarial_rows(kind, 4, 50257, 1)
    assert largest_candidates(rows, 64) is None


def fewer_groups(rows: np.ndarray, m: int) -> np.ndarray:
    """A plausible mistake: the m - 1 best groups (the m-th largest maximum taken as the threshold's own group)."""
    r, vocab = rows.shape
    groups = vocab // CANDIDATE_BLOCK
    group_max = rows[:, : groups * CANDIDATE_BLOCK].reshape(r, CANDIDATE_BLOCK, groups).max(axis=1)
    best = np.argpartition(group_max, groups - m + 1, axis=-1)[:, groups - m + 1 :]
    return (best[:, :, None] + groups * np.arange(CANDIDATE_BLOCK)).reshape(r, -1)


def test_the_check_rejects_a_selection_with_one_group_too_few():
    """Negative control: the same check fails a selection one group short (the 3 largest in 3 groups)."""
    rows = adversarial_rows("normal", 8, 50257, 2)
    with pytest.raises(AssertionError):
        assert_holds_the_m_largest(rows, fewer_groups(rows, 3), 3)


SETTINGS = [
    SamplingParams(0.7, 50, 0.9),
    SamplingParams(1.0, 1),
    SamplingParams(0.7, None, 0.9),
    SamplingParams(1.3, 200, 0.99, 0.01),
    SamplingParams(0.5, 20, 0.5, 0.2),
    SamplingParams(1.0, 64, 1.0),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("params", SETTINGS, ids=str)
def test_sampling_probs_on_gpt2_sized_rows_equals_the_composition(kind, params):
    rows = adversarial_rows(kind, 4, 50257, 3).astype(np.float32 if kind == "peaked" else np.float64)
    fast, slow = sampling_probs(rows, params), composed_sampling_probs(rows, params)
    assert np.array_equal(fast > 0, slow > 0)  # identical kept sets
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-15)
