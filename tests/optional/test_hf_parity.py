"""Parity with Hugging Face's logits warpers: specdec keeps exactly the tokens transformers keeps.

Optional: needs torch and transformers (requirements-extras.txt), which the course environment does
not have, so the README's test command does not collect tests/optional/. CI (.ci/run) runs it in the
extras environment, where a missing dependency is an error, never a skip:

    .venv-extras/bin/python -m pytest tests/optional

Compared: the kept sets of top_k_filter, top_p_filter and min_p_filter with TopKLogitsWarper,
TopPLogitsWarper and MinPLogitsWarper, and of the whole pipeline (sampling_probs) with
TemperatureLogitsWarper -> TopKLogitsWarper -> TopPLogitsWarper -> MinPLogitsWarper, the order
`generate` applies them in, on random continuous logits (no ties) in float32 and float64.

In float64 the kept sets must be identical. In float32 Hugging Face computes probabilities and
their running sums in float32, so a token whose fate is decided within float32 rounding (the
mass above it within 2e-5 of top_p, or its weight within 1e-5 relative of min_p) may go either
way; such tokens are the only disagreements allowed, and they must be rare. On exact ties the
two rules really differ (see the last test).
"""

import numpy as np
import pytest
import torch
import transformers

import specdec
from specdec import SamplingParams

DTYPES = [np.float32, np.float64]
MASS_TOLERANCE_32 = 2e-5  # float32: |mass above a token - top_p| below this may round either way
RATIO_TOLERANCE_32 = 1e-5  # float32: |weight / min_p - 1| below this may round either way
SHAPES = [(400, 50), (60, 3000)]  # many small rows, and fewer rows with a GPT-sized slice of vocabulary


def continuous_logits(seed: int, shape: tuple[int, int], dtype) -> np.ndarray:
    """Normal logits with a random scale per row (flat to peaked rows), no two equal in a row."""
    rng = np.random.default_rng(seed)
    rows, vocab = shape
    logits = (rng.normal(size=shape) * rng.uniform(0.3, 4.0, size=(rows, 1))).astype(dtype)  # (rows, V)
    tied = (np.diff(np.sort(logits, axis=-1), axis=-1) == 0).any(axis=-1)  # (rows,) the cast can make ties
    while tied.any():
        logits[tied] = rng.normal(scale=2.0, size=(int(tied.sum()), vocab)).astype(dtype)
        tied = (np.diff(np.sort(logits, axis=-1), axis=-1) == 0).any(axis=-1)
    return logits


def hf_kept(warpers: list, logits: np.ndarray) -> np.ndarray:
    """Apply Hugging Face's warpers in order; True where the score is still finite."""
    scores = torch.from_numpy(logits)  # (rows, V), same dtype
    input_ids = torch.zeros((logits.shape[0], 1), dtype=torch.long)  # unused by these warpers
    with torch.no_grad():
        for warper in warpers:
            scores = warper(input_ids, scores)
    return torch.isfinite(scores).numpy()


def hf_pipeline(params: SamplingParams) -> list:
    """The warpers `generate(do_sample=True, ...)` builds for these parameters, in its order."""
    warpers = [transformers.TemperatureLogitsWarper(params.temperature)]
    if params.top_k is not None:
        warpers.append(transformers.TopKLogitsWarper(top_k=params.top_k))
    if params.top_p < 1:
        warpers.append(transformers.TopPLogitsWarper(top_p=params.top_p))
    if params.min_p > 0:
        warpers.append(transformers.MinPLogitsWarper(min_p=params.min_p))
    return warpers


def mass_above(logits: np.ndarray) -> np.ndarray:
    """For each token, the probability mass of the tokens strictly more likely (float64, no ties assumed)."""
    probs = specdec.softmax(logits)  # (rows, V)
    order = np.argsort(-probs, axis=-1)  # (rows, V) descending
    ranked = np.take_along_axis(probs, order, axis=-1)  # (rows, V)
    above = np.empty_like(probs)  # (rows, V)
    np.put_along_axis(above, order, np.cumsum(ranked, axis=-1) - ranked, axis=-1)
    return above


def near_top_p_edge(logits: np.ndarray, top_p: float) -> np.ndarray:
    """Tokens whose top-p fate float32 rounding could flip (never the most likely one: both always keep it)."""
    above = mass_above(logits)  # (rows, V)
    return np.isfinite(logits) & (above > 0) & (np.abs(above - top_p) <= MASS_TOLERANCE_32)


def near_min_p_edge(logits: np.ndarray, min_p: float) -> np.ndarray:
    """Tokens whose min-p fate float32 rounding could flip."""
    if min_p == 0:
        return np.zeros(logits.shape, dtype=bool)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))  # (rows, V) the max is 1
    return np.isfinite(logits) & (np.abs(weights / min_p - 1) <= RATIO_TOLERANCE_32)


def assert_same_kept(ours: np.ndarray, theirs: np.ndarray, dtype, near_edge: np.ndarray | None = None):
    """float64: identical. float32: identical except on tokens at an edge within rounding, in under 1% of rows."""
    if dtype == np.float64 or near_edge is None:
        np.testing.assert_array_equal(ours, theirs)
        return
    differ = ours != theirs  # (rows, V)
    assert not (differ & ~near_edge).any(), f"disagreement away from any edge in rows {np.flatnonzero(differ.any(-1))}"
    assert differ.any(axis=-1).mean() < 0.01, "too many rows decided by rounding"


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("k", [1, 2, 7, 49, 50, 51, 1000, 2999, 3000, 5000])
def test_top_k_filter_keeps_what_top_k_logits_warper_keeps(k, dtype, shape):
    logits = continuous_logits(1, shape, dtype)
    ours = np.isfinite(specdec.top_k_filter(logits, k))
    theirs = hf_kept([transformers.TopKLogitsWarper(top_k=k)], logits)
    assert_same_kept(ours, theirs, dtype)  # only comparisons of the same numbers: exact in both dtypes


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("top_p", [1e-6, 0.1, 0.5, 0.8, 0.9, 0.95, 0.99])
def test_top_p_filter_keeps_what_top_p_logits_warper_keeps(top_p, dtype, shape):
    logits = continuous_logits(2, shape, dtype)
    ours = np.isfinite(specdec.top_p_filter(logits, top_p))
    theirs = hf_kept([transformers.TopPLogitsWarper(top_p=top_p)], logits)
    assert_same_kept(ours, theirs, dtype, near_top_p_edge(logits.astype(np.float64), top_p))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("min_p", [0.0, 0.001, 0.05, 0.1, 0.3, 0.9, 1.0])
def test_min_p_filter_keeps_what_min_p_logits_warper_keeps(min_p, dtype, shape):
    logits = continuous_logits(3, shape, dtype)
    ours = np.isfinite(specdec.min_p_filter(logits, min_p))
    theirs = hf_kept([transformers.MinPLogitsWarper(min_p=min_p)], logits)
    assert_same_kept(ours, theirs, dtype, near_min_p_edge(logits.astype(np.float64), min_p))


PIPELINES = [
    SamplingParams(temperature=0.7, top_k=50, top_p=0.9),
    SamplingParams(temperature=0.7, top_p=0.9),
    SamplingParams(temperature=1.0, top_k=5, top_p=0.5),
    SamplingParams(temperature=1.3, top_k=20, top_p=0.95, min_p=0.05),
    SamplingParams(temperature=0.5, top_p=0.99, min_p=0.1),
    SamplingParams(temperature=2.0, top_k=1000, min_p=0.01),
    SamplingParams(temperature=0.9, top_k=10, top_p=0.3, min_p=0.5),
]


def edges_of_the_pipeline(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """Tokens whose fate float32 rounding could flip at the top-p or the min-p step (float64 reference)."""
    z = (logits - logits.max(axis=-1, keepdims=True)) / params.temperature  # (rows, V)
    if params.top_k is not None:
        z = specdec.top_k_filter(z, params.top_k)
    near = np.zeros(z.shape, dtype=bool)  # (rows, V)
    if params.top_p < 1:
        near |= near_top_p_edge(z, params.top_p)  # top-p sees the distribution renormalised after top-k
        z = specdec.top_p_filter(z, params.top_p)
    return near | near_min_p_edge(z, params.min_p)  # each flip concerns that token only: the rest are upper sets


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("params", PIPELINES, ids=str)
def test_sampling_probs_keeps_what_the_generate_warpers_keep(params, dtype, shape):
    logits = continuous_logits(4, shape, dtype)
    probs = specdec.sampling_probs(logits, params)  # (rows, V) float64
    theirs = hf_kept(hf_pipeline(params), logits)
    assert_same_kept(probs > 0, theirs, dtype, edges_of_the_pipeline(logits.astype(np.float64), params))
    # Where the kept sets agree, the distributions agree too (up to the precision of the dtype).
    scores = torch.from_numpy(logits)
    with torch.no_grad():
        for warper in hf_pipeline(params):
            scores = warper(None, scores)
        hf_probs = torch.softmax(scores, dim=-1).numpy().astype(np.float64)  # (rows, V)
    same = ((probs > 0) == theirs).all(axis=-1)  # (rows,)
    tolerance = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(probs[same], hf_probs[same], rtol=tolerance, atol=tolerance)


def test_sampling_probs_with_top_p_one_and_min_p_zero_is_the_tempered_softmax():
    logits = continuous_logits(5, (50, 300), np.float64)
    params = SamplingParams(temperature=0.8)
    scores = transformers.TemperatureLogitsWarper(0.8)(None, torch.from_numpy(logits))
    np.testing.assert_allclose(specdec.sampling_probs(logits, params), torch.softmax(scores, -1).numpy(), rtol=1e-12)


def test_ties_at_the_top_p_edge_our_rule_keeps_the_whole_group_hugging_face_keeps_part_of_it():
    """The one place the rules differ: exact ties where the running mass crosses top_p.

    Our rule (keep i iff the mass strictly more likely than i is < p) treats tied tokens alike,
    so the answer does not depend on the order of the vocabulary. Hugging Face sorts and cuts a
    running sum, so only some members of a tied group survive, and which ones depends on where
    the tied tokens sit in the vocabulary.
    """
    probs = np.array([0.4, 0.2, 0.2, 0.2])  # three tokens tied at 0.2
    top_p = 0.5  # 0.4 alone is short of 0.5; the mass above each tied token is 0.4 < 0.5
    warper = [transformers.TopPLogitsWarper(top_p=top_p)]
    kept_by_order = {}
    for order in ([0, 1, 2, 3], [1, 2, 3, 0], [3, 0, 2, 1]):
        logits = np.log(probs[order])[None, :]  # (1, 4) the same distribution, tokens placed differently
        ours = np.isfinite(specdec.top_p_filter(logits, top_p))[0]
        theirs = hf_kept(warper, logits)[0]
        assert ours.all()  # all four, in every order
        assert theirs.sum() == 2  # the 0.4 token and only one of the three tied tokens
        # Which original token of the tied group Hugging Face kept (positions mapped back):
        kept_by_order[tuple(order)] = sorted(int(order[i]) for i in np.flatnonzero(theirs))
    assert all(0 in kept for kept in kept_by_order.values())
    assert len({tuple(kept) for kept in kept_by_order.values()}) > 1, kept_by_order  # depends on the order
