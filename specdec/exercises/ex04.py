"""Checkers for the exercises of notebook 04 (top-p / nucleus).

check_nucleus_keep(fn):           fn(probs, p) -> boolean keep-mask, same shape as probs
check_fixed_nucleus_filter(fn):   fn(logits, p) -> logits (one row) with -inf outside the nucleus
"""

import numpy as np

import specdec
import specdec.nucleus
from specdec.exercises import call, show, verdict
from specdec.exercises.ex01 import refusing
from specdec.nucleus import top_p_filter


def precise(value) -> str:
    """Like show(), with enough digits to see differences of 1e-9 (the boundary cases need them)."""
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.number):
        return show(value)
    if array.ndim == 0:
        return f"{float(array):.12g}"
    with np.printoptions(precision=12, suppress=True, threshold=20):
        return np.array2string(array, separator=", ")


def reference_keep(probs, p: float) -> np.ndarray:
    """The definition, literally: keep token i iff the mass of the tokens strictly more likely than i is < p.

    O(V^2) per row, fine for the small rows used here, and independent of any sorting.
    """
    probs = np.asarray(probs, dtype=np.float64)  # (..., V)
    more_likely = probs[..., None, :] > probs[..., :, None]  # (..., V, V) [i, j]: token j beats token i
    above = np.where(more_likely, probs[..., None, :], 0.0).sum(axis=-1)  # (..., V)
    return above < p


def random_rows(rng: np.random.Generator, shape: tuple, scale: float) -> np.ndarray:
    """Softmax of random logits: probabilities without exact ties."""
    logits = rng.normal(scale=scale, size=shape)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def keep_cases() -> list[tuple]:
    rng = np.random.default_rng(40)
    batch = np.array(
        [
            [0.5, 0.25, 0.125, 0.125],
            [0.25, 0.25, 0.25, 0.25],
            [0.0625, 0.0625, 0.375, 0.5],
        ]
    )
    return [
        (np.array([0.5, 0.25, 0.25]), 0.5),  # the top token alone reaches p exactly
        (np.array([0.5, 0.25, 0.25]), 0.75),  # ties at the boundary: both 0.25 are kept
        (np.array([0.25, 0.25, 0.5]), 0.6),  # the same, in another token order
        (np.array([0.5, 0.25, 0.125, 0.125]), 0.75),  # the kept mass is exactly p
        (np.array([0.125, 0.5, 0.125, 0.25]), 0.8),
        (np.array([0.4, 0.4, 0.2]), 0.1),  # tiny p: the tied maxima both stay
        (np.array([0.2, 0.7, 0.1]), 1e-9),  # tiny p: the argmax
        (np.array([0.2, 0.7, 0.1]), 1.0),  # p = 1 keeps everything
        (np.array([0.6, 0.4, 0.0]), 0.7),  # a probability-0 token is never needed
        (np.array([0.5 + 1e-9, 0.5 - 1e-9]), 0.5 + 5e-10),  # a difference float32 cannot see
        (batch, 0.6),  # each row has its own nucleus
        (random_rows(rng, (2, 3, 20), 2.0), 0.9),
        (random_rows(rng, (5, 200), 0.5), 0.5),  # flat rows: large nuclei
    ]


def check_nucleus_keep(fn) -> bool:
    """fn(probs, p) must return the boolean nucleus mask of every row (shape of probs)."""
    cases = keep_cases()
    for probs, p in cases:
        got, error = call(fn, (probs.copy(), p))
        if error is not None:
            return verdict("nucleus_keep", error, len(cases))
        expected = reference_keep(probs, p)
        got_array = np.asarray(got)
        if got_array.shape != expected.shape or not np.array_equal(got_array, expected):
            note = f" (shape {got_array.shape}, expected {expected.shape})" if got_array.shape != expected.shape else ""
            kept_mass = np.where(expected, probs, 0.0).sum(axis=-1)
            return verdict(
                "nucleus_keep",
                f"for probs {precise(probs)}, p={p!r} expected {show(expected)} (kept mass {precise(kept_mass)}),"
                f" got {show(got)}{note}",
                len(cases),
            )
    return wide_row_verdict(fn, len(cases) + 1)


WIDE_VOCAB = 1_000_000  # a V x V array of this row would take a terabyte


def wide_row_verdict(fn, n_cases: int) -> bool:
    """A real vocabulary's row: an O(V^2) answer (a V x V comparison, like mass_strictly_above) runs out of memory."""
    probs = np.random.default_rng(44).dirichlet(np.full(WIDE_VOCAB, 0.01))  # (V,) a peaked row
    try:
        got = np.asarray(fn(probs.copy(), 0.9))
    except MemoryError:
        return verdict(
            "nucleus_keep",
            f"on one row of {WIDE_VOCAB:,} probabilities your function ran out of memory: it builds a V x V array"
            " (O(V^2), like mass_strictly_above); sort the row instead (O(V log V))",
            n_cases,
        )
    except Exception as error:  # the learner's code may fail in any way; report it
        return verdict("nucleus_keep", f"raised {type(error).__name__}: {error} on a row of {WIDE_VOCAB:,}", n_cases)
    top = np.sort(probs)[::-1]  # (V,) descending: the definition by sorting, O(V log V)
    above = np.concatenate([[0.0], np.cumsum(top[:-1])])  # (V,) exclusive running sum
    if not np.array_equal(got, probs >= top[(above < 0.9).sum() - 1]):
        return verdict("nucleus_keep", f"wrong mask on one row of {WIDE_VOCAB:,} probabilities with p=0.9", n_cases)
    return verdict("nucleus_keep", None, n_cases)


def fixed_filter_cases() -> list[tuple]:
    rng = np.random.default_rng(41)
    return [
        (np.array([5.0, 1.0, 0.2, -1.0, -3.0]), 0.7),  # the blog's own test input: top prob 0.97 > p
        (np.log(np.array([0.5, 0.3, 0.2])).astype(np.float32), 0.5),  # float32 rounds the top prob above 0.5
        (np.log(np.array([0.5, 0.3, 0.2])), 0.6),  # the nucleus must reach 0.6: two tokens
        (np.log(np.array([0.5, 0.25, 0.25])), 0.6),  # ties at the boundary: all three
        (np.log(np.array([0.25, 0.5, 0.25])), 0.75),
        (np.array([2.0, 2.0, 0.0]), 1e-6),  # tiny p: both tied maxima
        (np.array([0.3, -1.2, 2.5, 0.0]), 1.0),  # p = 1 keeps everything
        (np.array([1.0, -np.inf, 0.0, -np.inf]), 0.5),  # masked tokens stay masked
        (np.log(np.array([0.5 + 1e-9, 0.5 - 1e-9])), 0.5 + 5e-10),  # needs float64
        (rng.normal(scale=2.0, size=20), 0.9),
        (rng.normal(scale=0.5, size=300), 0.95),
    ]


def check_fixed_nucleus_filter(fn) -> bool:
    """fn(logits, p) on one row of logits must equal specdec.top_p_filter: same -inf places, kept logits unchanged."""
    with refusing(fn, ("top_p_filter",), (specdec, specdec.nucleus)):
        return fixed_filter_verdict(fn, fixed_filter_cases())


def fixed_filter_verdict(fn, cases: list[tuple]) -> bool:
    for logits, p in cases:
        pristine = logits.copy()
        got, error = call(fn, (logits, p))
        if error is not None:
            return verdict("fixed_nucleus_filter", error, len(cases))
        if not np.array_equal(logits, pristine):
            message = f"your function modified its input: {show(pristine)} became {show(logits)}"
            return verdict("fixed_nucleus_filter", message, len(cases))
        expected = top_p_filter(logits, p).astype(np.float64)
        got_array = np.asarray(got)
        ok = got_array.shape == expected.shape and np.issubdtype(got_array.dtype, np.floating)
        if not (ok and np.array_equal(got_array.astype(np.float64), expected)):
            return verdict(
                "fixed_nucleus_filter",
                f"for logits {precise(logits)} ({logits.dtype}), p={p!r}"
                f" expected {precise(expected)}, got {precise(got)}",
                len(cases),
            )
    return verdict("fixed_nucleus_filter", None, len(cases))
