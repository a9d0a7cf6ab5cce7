"""top_p_filter (notebook 04, specdec/nucleus.py)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import specdec
from specdec.nucleus import nucleus_threshold

logit_rows = arrays(np.float64, st.integers(1, 40), elements=st.floats(-8, 8) | st.integers(-3, 3).map(float))
top_ps = st.floats(1e-9, 1.0, exclude_max=True)


def reference_keep(probs: np.ndarray, p: float) -> np.ndarray:
    """Keep i iff the mass of tokens strictly more likely than i is < p (quadratic, obviously right)."""
    sorted_desc = np.sort(probs)[::-1]
    above = np.array([sorted_desc[sorted_desc > q].sum() for q in probs])  # summed in descending order
    return above < p


@given(logit_rows, top_ps)
def test_matches_the_definition(logits, p):
    kept = np.isfinite(specdec.top_p_filter(logits, p))
    np.testing.assert_array_equal(kept, reference_keep(specdec.softmax(logits), p))


@given(logit_rows, top_ps)
def test_the_real_properties_of_a_nucleus(logits, p):
    """The properties the seed blog's unit test should have checked (docs/seed-errata.md, item 2)."""
    probs = specdec.softmax(logits)
    kept = np.isfinite(specdec.top_p_filter(logits, p))
    assert kept.any()  # never empty
    assert probs[kept].sum() >= p - 1e-12  # enough mass
    smallest = probs[kept].min()
    assert probs[kept & (probs > smallest)].sum() < p + 1e-12  # minimal: without the last tie group, too little
    if (~kept).any():
        assert probs[kept].min() >= probs[~kept].max()  # the most likely tokens, in order


@given(logit_rows, top_ps, st.randoms(use_true_random=False))
def test_does_not_depend_on_token_order(logits, p, random):
    order = list(range(logits.size))
    random.shuffle(order)
    np.testing.assert_array_equal(specdec.top_p_filter(logits[order], p), specdec.top_p_filter(logits, p)[order])


@pytest.mark.parametrize(
    ("probs", "p", "kept"),
    [
        ([0.5, 0.25, 0.25], 0.5, [1, 0, 0]),  # mass above the 0.25s is exactly 0.5: not < 0.5
        ([0.5, 0.25, 0.25], 0.5000001, [1, 1, 1]),  # both tied tokens cross together
        ([0.5, 0.25, 0.25], 0.75, [1, 1, 1]),
        ([0.5, 0.25, 0.125, 0.125], 0.75, [1, 1, 0, 0]),
        ([0.5, 0.25, 0.125, 0.125], 0.7500001, [1, 1, 1, 1]),
        ([0.5, 0.3, 0.2], 0.5, [1, 0, 0]),  # the seed blog drops the top token here in float32
        ([0.25, 0.25, 0.25, 0.25], 0.1, [1, 1, 1, 1]),  # ties with the argmax always stay
    ],
)
def test_exactly_representable_boundaries(probs, p, kept):
    for dtype in (np.float64, np.float32):
        logits = np.log(np.array(probs)).astype(dtype)
        assert np.all(specdec.softmax(logits.astype(np.float64)) > 0)
        np.testing.assert_array_equal(np.isfinite(specdec.top_p_filter(logits, p)), np.array(kept, dtype=bool))


def test_p_one_keeps_everything_even_vanishing_tokens():
    logits = np.array([0.0, -700.0, -np.inf, -30.0])
    np.testing.assert_array_equal(specdec.top_p_filter(logits, 1.0), logits)


def test_tiny_p_keeps_only_the_argmax_and_its_ties():
    np.testing.assert_array_equal(
        np.isfinite(specdec.top_p_filter(np.array([1.0, 3.0, 3.0, 2.9]), 1e-300)), [0, 1, 1, 0]
    )


def test_all_but_one_minus_infinity():
    np.testing.assert_array_equal(specdec.top_p_filter(np.array([-np.inf, 2.0, -np.inf]), 0.3), [-np.inf, 2.0, -np.inf])


def test_min_tokens_to_keep_adds_the_largest_logits_and_their_ties():
    logits = np.log(np.array([0.7, 0.1, 0.1, 0.06, 0.04]))
    np.testing.assert_array_equal(np.isfinite(specdec.top_p_filter(logits, 0.5)), [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(np.isfinite(specdec.top_p_filter(logits, 0.5, min_tokens_to_keep=2)), [1, 1, 1, 0, 0])
    assert np.isfinite(specdec.top_p_filter(logits, 0.5, min_tokens_to_keep=99)).all()


DECIMAL_ROWS = [  # decimal probabilities: the running sums round, and p sits exactly on them
    [0.4, 0.3, 0.2, 0.1],
    [0.5, 0.2, 0.2, 0.1],
    [0.6, 0.3, 0.1],
    [0.4, 0.3, 0.3],
    [0.35, 0.35, 0.2, 0.1],
    [0.1, 0.2, 0.3, 0.4],
    [0.05, 0.15, 0.25, 0.05, 0.5],
    [0.25, 0.25, 0.25, 0.25],
]


def test_the_fast_path_gives_the_core_thresholds(rng):
    """The package's nucleus_threshold (Going further: candidates only) equals the core's full sort, bit for bit.

    Notebook 04's core defines nucleus_threshold by a full sort and keeps it as nucleus_threshold_full_sort;
    its Going-further section defines nucleus_threshold again, which is what top_p_filter uses.
    """
    fast, full = specdec.nucleus.nucleus_threshold, specdec.nucleus.nucleus_threshold_full_sort
    assert fast is not full and specdec.nucleus.top_p_filter.__globals__["nucleus_threshold"] is fast
    batches = []
    for scale in (0.05, 0.5, 2.0, 8.0):  # nearly uniform rows (huge nuclei) to very peaked ones
        logits = rng.normal(scale=scale, size=(40, 700))
        batches += [specdec.softmax(logits), specdec.softmax(logits.round(1)), specdec.softmax(logits.round())]
    batches.append(specdec.softmax(rng.normal(size=(3, 4, 300))).astype(np.float32))  # float32 input, leading axes
    for probs in batches:
        for p in (1e-9, 0.1, 0.4, 0.5, 0.7, 0.9, 0.999, 1.0):
            expected = full(probs, p)
            for candidates in (1, 3, 64):
                np.testing.assert_array_equal(fast(probs, p, candidates=candidates), expected)
    for row in DECIMAL_ROWS:
        probs = np.array(row)
        boundaries = specdec.nucleus.descending_exclusive_cumsum(np.sort(probs)[::-1])  # every mass above, exactly
        for p in [*boundaries[1:], *np.nextafter(boundaries[1:], 0), *np.nextafter(boundaries[1:], 1), 0.4, 0.5]:
            for candidates in (1, 2, 64):
                np.testing.assert_array_equal(fast(probs, p, candidates=candidates), full(probs, p))


def test_the_candidate_fast_path_equals_a_full_sort(rng):
    """Force retries (1 -> 16 -> 256 -> ...) and compare with candidates = the whole row."""
    for scale in (0.1, 1.0, 5.0):  # flat rows have huge nuclei, peaked rows tiny ones
        probs = specdec.softmax(rng.normal(scale=scale, size=(20, 3000)))
        for p in (0.1, 0.5, 0.9, 0.999):
            fast = nucleus_threshold(probs, p, candidates=1)
            full = nucleus_threshold(probs, p, candidates=3000)
            np.testing.assert_array_equal(fast, full)


def test_batched_rows_and_dtypes(rng):
    logits = rng.normal(size=(2, 3, 100)).astype(np.float32)
    out = specdec.top_p_filter(logits, 0.8)
    assert out.dtype == np.float32
    for index in np.ndindex(2, 3):
        np.testing.assert_array_equal(out[index], specdec.top_p_filter(logits[index], 0.8))


@pytest.mark.parametrize("p", [0, 0.0, -0.1, 1.0000001, 2, float("nan"), float("inf")])
def test_p_outside_zero_one_is_a_value_error(p):
    with pytest.raises(ValueError, match=r"p must be in \(0, 1\]"):
        specdec.top_p_filter(np.array([1.0, 2.0]), p)


@pytest.mark.parametrize("p", [True, "0.5", None])
def test_non_numeric_p_is_a_type_error(p):
    with pytest.raises(TypeError, match="p must be a real number"):
        specdec.top_p_filter(np.array([1.0, 2.0]), p)


@pytest.mark.parametrize(("n", "error"), [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError)])
def test_bad_min_tokens_to_keep(n, error):
    with pytest.raises(error, match="min_tokens_to_keep must be an integer >= 1"):
        specdec.top_p_filter(np.array([1.0, 2.0]), 0.5, min_tokens_to_keep=n)


@pytest.mark.parametrize("logits", [[np.nan, 1.0], [np.inf, 1.0], [-np.inf, -np.inf]])
def test_bad_logits_are_refused(logits):
    with pytest.raises(ValueError, match="logits"):
        specdec.top_p_filter(np.array(logits), 0.5)
