"""top_k_filter (notebook 03, specdec/topk.py)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import specdec

# Small integers make ties common, which is where top-k implementations go wrong.
tied_logits = arrays(np.float64, st.integers(1, 25), elements=st.integers(-4, 4).map(float))


def reference_top_k(logits: np.ndarray, k: int) -> np.ndarray:
    """Keep x_i iff fewer than k logits are strictly larger than x_i (so ties with the k-th stay)."""
    larger = (logits[None, :] > logits[:, None]).sum(axis=1)  # (V,) how many beat each token
    return np.where(larger < k, logits, -np.inf)


@given(tied_logits, st.integers(1, 30))
def test_matches_the_definition_including_ties(logits, k):
    np.testing.assert_array_equal(specdec.top_k_filter(logits, k), reference_top_k(logits, k))


@given(tied_logits, st.integers(1, 30), st.randoms(use_true_random=False))
def test_does_not_depend_on_token_order(logits, k, random):
    order = list(range(logits.size))
    random.shuffle(order)
    np.testing.assert_array_equal(specdec.top_k_filter(logits[order], k), specdec.top_k_filter(logits, k)[order])


def test_ties_with_the_kth_value_all_survive():
    out = specdec.top_k_filter(np.array([1.0, 3.0, 2.0, 2.0, 2.0, 0.0]), 2)
    np.testing.assert_array_equal(np.isfinite(out), [False, True, True, True, True, False])  # 4 kept for k = 2


@pytest.mark.parametrize("k", [5, 6, 100])
def test_k_at_least_the_vocabulary_keeps_everything(k):
    logits = np.array([0.3, -1.0, 2.0, -np.inf, 0.0])
    np.testing.assert_array_equal(specdec.top_k_filter(logits, k), logits)


def test_k_larger_than_the_number_of_finite_logits():
    out = specdec.top_k_filter(np.array([-np.inf, 1.0, -np.inf, 0.5]), 3)
    np.testing.assert_array_equal(out, [-np.inf, 1.0, -np.inf, 0.5])


def test_batched_rows_are_filtered_independently(rng):
    logits = rng.normal(size=(3, 4, 50))
    out = specdec.top_k_filter(logits, 7)
    for index in np.ndindex(3, 4):
        np.testing.assert_array_equal(out[index], specdec.top_k_filter(logits[index], 7))
    assert (np.isfinite(out).sum(axis=-1) == 7).all()  # continuous logits: no ties, exactly k


def test_dtypes_float32_stays_float32_and_ints_become_floats():
    assert specdec.top_k_filter(np.array([1, 2, 3], dtype=np.float32), 1).dtype == np.float32
    out = specdec.top_k_filter(np.array([1, 2, 3]), 1)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [-np.inf, -np.inf, 3.0])


def test_the_input_is_not_modified():
    logits = np.array([1.0, 2.0, 3.0])
    specdec.top_k_filter(logits, 1)
    np.testing.assert_array_equal(logits, [1.0, 2.0, 3.0])


def test_numpy_integers_are_accepted():
    np.testing.assert_array_equal(specdec.top_k_filter(np.array([1.0, 2.0]), np.int64(1)), [-np.inf, 2.0])


@pytest.mark.parametrize("k", [0, -1, -100])
def test_k_below_one_is_a_value_error(k):
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        specdec.top_k_filter(np.array([1.0, 2.0]), k)


@pytest.mark.parametrize("k", [2.5, 2.0, True, np.bool_(True), "3", None])
def test_non_integer_k_is_a_type_error(k):
    with pytest.raises(TypeError, match="k must be an integer >= 1"):
        specdec.top_k_filter(np.array([1.0, 2.0]), k)


@pytest.mark.parametrize("logits", [[np.nan, 1.0], [np.inf, 1.0], [-np.inf, -np.inf]])
def test_bad_logits_are_refused(logits):
    with pytest.raises(ValueError, match="logits"):
        specdec.top_k_filter(np.array(logits), 1)
