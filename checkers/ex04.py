"""Checkers for the exercises of notebook 04 (top-p / nucleus).

check_nucleus_keep(fn):           fn(probs, p) -> boolean keep-mask, same shape as probs (float64 or float32
                                  probabilities, summed in float64, input left alone; top_p_filter,
                                  nucleus_threshold and nucleus_threshold_full_sort refused, under any name;
                                  an O(V^2) answer is stopped after two timed mid-sized rows, before a wide one)
check_fixed_nucleus_filter(fn):   fn(logits, p) -> logits (one row) with -inf outside the nucleus
                                  (top_p_filter refused; float32 logits need float64 probabilities)
"""

import time

import numpy as np

import specdec
import specdec.nucleus
from checkers import call, located, namesakes, result_problem, show, verdict
from specdec.nucleus import top_p_filter


def refused_in(fn, names: tuple[str, ...]) -> dict:
    """The references `names` (the package's, the notebook's copies, any alias): calling one is refused."""
    return namesakes(fn, names, specdec, specdec.nucleus)


REFUSED_WHY = "the reference this exercise asks you to write yourself"
SORT_A_COPY = "sort a copy (np.sort returns one), not the caller's array (probs.sort() sorts it in place)"


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
        (np.array([0.1, 0.4, 0.2, 0.3]), 0.5),  # no ties, not sorted: the two most likely tokens
        (np.array([0.5, 0.25, 0.25]), 0.5),  # the top token alone reaches p exactly
        (np.array([0.5, 0.25, 0.25]), 0.75),  # ties at the boundary: both 0.25 are kept
        (np.array([0.25, 0.25, 0.5]), 0.6),  # the same, in another token order
        (np.array([0.5, 0.25, 0.125, 0.125]), 0.75),  # the kept mass is exactly p
        (np.array([0.125, 0.5, 0.125, 0.25]), 0.8),
        (np.array([0.4, 0.4, 0.2]), 0.1),  # small p: the tied maxima both stay
        (np.array([0.4, 0.4, 0.2]), 1e-9),  # tiny p: still both tied maxima (np.argmax picks one)
        (np.array([0.2, 0.7, 0.1]), 1e-9),  # tiny p: the argmax
        (np.array([0.2, 0.7, 0.1]), 1.0),  # p = 1 keeps everything
        (np.array([0.6, 0.4, 0.0]), 0.7),  # a probability-0 token is never needed
        (np.array([0.5 + 1e-9, 0.5 - 1e-9]), 0.5 + 5e-10),  # a difference float32 cannot see
        (batch, 0.6),  # each row has its own nucleus
        (random_rows(rng, (2, 3, 20), 2.0), 0.9),
        (random_rows(rng, (5, 200), 0.5), 0.5),  # flat rows: large nuclei
        # float32 input: the mass above 0.2 is 0.70000002 < p summed in float64, 0.70000005 >= p summed in float32
        (np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]], dtype=np.float32), 0.70000004),
    ]


def splits_ties(probs, kept) -> bool:
    """Whether a keep-mask keeps one token and drops another of exactly the same probability (in some row)."""
    probs, kept = np.asarray(probs, dtype=np.float64), np.asarray(kept)
    if kept.shape != probs.shape or kept.dtype != bool:
        return False
    same = probs[..., :, None] == probs[..., None, :]  # (..., V, V)
    return bool((same & kept[..., :, None] & ~kept[..., None, :]).any())


TIES_NOTE = ": tokens of equal probability were split, but tied tokens are kept or dropped together"


def boundary_note(probs, kept, expected, p: float) -> str:
    """When the mask keeps every expected token and more, and the expected tokens alone already reach p exactly."""
    probs, kept, expected = np.asarray(probs, dtype=np.float64), np.asarray(kept), np.asarray(expected)
    if kept.shape != expected.shape or kept.dtype != bool or not (kept >= expected).all():
        return ""
    if not (np.where(expected, probs, 0.0).sum(axis=-1) == p).any():
        return ""
    return (
        f": the expected tokens alone have a mass of exactly p={p!r}, so the mass above the next token is exactly p,"
        " which is not < p: keep a position only while the mass strictly above it is < p"
    )


def first_wrong_row(probs, got, expected) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """For a batch: the index of the first row that differs, and that row of probs, expected and got."""
    wrong = (np.asarray(got) != expected).any(axis=-1)  # (...,)
    index = tuple(int(i) for i in np.argwhere(wrong)[0])
    return str(list(index)), probs[index], expected[index], np.asarray(got)[index]


def only_ties_wrong(probs, kept, expected) -> bool:
    """Whether the mask splits ties and adding every token tied with a kept one gives the right mask.

    Only then is the tie note the diagnosis; a split that comes from another bug (no sort, a sorted
    input, the wrong axis, the blog's running sum) gets the plain counterexample instead.
    """
    probs, kept = np.asarray(probs, dtype=np.float64), np.asarray(kept)
    if not splits_ties(probs, kept) or not kept.any(axis=-1).all():
        return False
    lowest_kept = np.where(kept, probs, np.inf).min(axis=-1, keepdims=True)  # (..., 1)
    return np.array_equal(probs >= lowest_kept, expected)


def float32_keep(probs, p: float) -> np.ndarray:
    """The rule computed in the probabilities' own float32: what a filter that never converts to float64 returns."""
    probs = np.asarray(probs)  # (..., V)
    top = -np.sort(-probs, axis=-1)  # (..., V) descending, still float32
    above = np.cumsum(top, axis=-1) - top  # (..., V) float32 running sums
    threshold = np.take_along_axis(top, (above < p).sum(axis=-1, keepdims=True) - 1, axis=-1)
    return probs >= threshold


# The package's answers to this exercise: a nucleus_keep that calls them is refused.
KEEP_REFERENCES = ("top_p_filter", "nucleus_threshold", "nucleus_threshold_full_sort")


def check_nucleus_keep(fn) -> bool:
    """fn(probs, p) must return the boolean nucleus mask of every row (shape of probs), computed in float64."""
    return keep_verdict(fn, refused_in(fn, KEEP_REFERENCES))


def keep_verdict(fn, refused: dict) -> bool:
    cases = keep_cases()
    n_cases = len(cases) + len(PILOT_VOCABS) + 1
    for probs, p in cases:
        got, error = call(fn, (probs, p), refused=refused, why=REFUSED_WHY, in_place=SORT_A_COPY)
        if error is not None:
            return verdict("nucleus_keep", located(error, f"for probs {precise(probs)}, p={p!r}"), n_cases)
        kind = result_problem(got, reference_keep(probs, p), "keep-mask", shape=False)
        if kind is not None:
            return verdict("nucleus_keep", located(kind, f"for probs {precise(probs)}, p={p!r}"), n_cases)
        expected = reference_keep(probs, p)
        got_array = np.asarray(got)
        if got_array.shape != expected.shape or not np.array_equal(got_array, expected):
            note = f" (shape {got_array.shape}, expected {expected.shape})" if got_array.shape != expected.shape else ""
            if probs.shape[-1] <= 20 and only_ties_wrong(probs, got_array, expected):
                note += TIES_NOTE
            elif probs.dtype == np.float64 and np.array_equal(got_array, reference_keep(probs.astype(np.float32), p)):
                note += ": that is the nucleus of these probabilities rounded to float32 (float64 is asked)"
            elif probs.dtype == np.float32 and np.array_equal(got_array, float32_keep(probs, p)):
                note += (
                    ": that is the nucleus of float32 arithmetic. These probabilities are float32, and summed in"
                    " float32 the mass above a token rounds past p; convert them to float64 before summing"
                    " (float64 is asked)"
                )
            else:
                note += boundary_note(probs, got_array, expected, p)
            if probs.ndim > 1 and got_array.shape == expected.shape:  # name the first wrong row, show it alone
                index, row, row_expected, row_got = first_wrong_row(probs, got_array, expected)
                where = f"for a batch of shape {probs.shape} ({probs.dtype}), p={p!r}, row {index}:"
                where += f" probs {precise(row)}"
            else:
                row, row_expected, row_got = probs, expected, got
                where = f"for probs {precise(probs)} ({probs.dtype}), p={p!r}"
            kept_mass = np.where(row_expected, np.asarray(row, dtype=np.float64), 0.0).sum(axis=-1)
            differs = ""
            if np.shape(row_got) == row_expected.shape and row_expected.shape[-1] > 20:
                tokens = np.flatnonzero(np.asarray(row_got) != row_expected)
                differs = f" (the tokens that differ: {show(tokens)}, of probabilities {precise(row[tokens])})"
            message = (
                f"{where} expected {show(row_expected)} (kept mass {precise(kept_mass)}),"
                f" got {show(row_got)}{differs}{note}"
            )
            return verdict("nucleus_keep", message, n_cases)
        if got_array.dtype != bool:
            return verdict(
                "nucleus_keep",
                f"for probs {precise(probs)}, p={p!r} the right tokens, but it returned an array of dtype"
                f" {got_array.dtype}: a boolean mask is asked (an integer array used as an index, probs[mask],"
                " picks tokens by number)",
                n_cases,
            )
    return wide_row_verdict(fn, n_cases, refused)


WIDE_VOCAB = 1_000_000  # a V x V array of this row would take a terabyte
PILOT_VOCABS = (1_000, 4_000)  # timed first, so that an O(V^2) loop is stopped instead of running for hours
PATIENCE_S = 60.0  # the longest a million-token row may be expected to take


def peaked_row(vocab: int) -> np.ndarray:
    return np.random.default_rng(44).dirichlet(np.full(vocab, 0.01))  # (V,) a peaked row, no ties


def sorted_keep(probs: np.ndarray, p: float) -> np.ndarray:
    """The definition by sorting, O(V log V), for one row."""
    top = np.sort(probs)[::-1]  # (V,) descending
    above = np.concatenate([[0.0], np.cumsum(top[:-1])])  # (V,) exclusive running sum
    return probs >= top[(above < p).sum() - 1]


def pilot_verdict(fn, n_cases: int, refused: dict):
    """Time fn on two mid-sized rows; refuse it (return False) when its growth predicts hours on a million tokens."""
    seconds = []
    for vocab in PILOT_VOCABS:
        probs = peaked_row(vocab)
        start = time.perf_counter()
        got, error = call(fn, (probs.copy(), 0.9), refused=refused, why=REFUSED_WHY)
        seconds.append(time.perf_counter() - start)
        if error is not None:
            return verdict("nucleus_keep", f"{error} (one row of {vocab:,} probabilities, p=0.9)", n_cases)
        if not np.array_equal(np.asarray(got), sorted_keep(probs, 0.9)):
            return verdict("nucleus_keep", f"wrong mask on one row of {vocab:,} probabilities with p=0.9", n_cases)
    if len(seconds) < 2 or seconds[-1] < 0.02:
        return None
    (small, large), (t_small, t_large) = PILOT_VOCABS[-2:], seconds[-2:]
    growth = np.log(max(t_large, 1e-9) / max(t_small, 1e-4)) / np.log(large / small)  # t ~ V^growth
    predicted = t_large * (WIDE_VOCAB / large) ** max(growth, 1.0)
    if predicted > PATIENCE_S:
        return verdict(
            "nucleus_keep",
            f"on rows of {small:,} and {large:,} probabilities your function took {t_small:.3f} s and"
            f" {t_large:.3f} s: it grows like V^{growth:.1f}, so one row of {WIDE_VOCAB:,} would take about"
            f" {predicted:,.0f} s. Comparing every token with every other is O(V^2) (like mass_strictly_above);"
            " sort the row instead (O(V log V))",
            n_cases,
        )
    return None


def wide_row_verdict(fn, n_cases: int, refused: dict) -> bool:
    """A real vocabulary's row: an O(V^2) answer (a V x V comparison, like mass_strictly_above) runs out of memory."""
    too_slow = pilot_verdict(fn, n_cases, refused)
    if too_slow is not None:
        return too_slow
    probs = peaked_row(WIDE_VOCAB)  # (V,)
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
    if not np.array_equal(got, sorted_keep(probs, 0.9)):
        return verdict("nucleus_keep", f"wrong mask on one row of {WIDE_VOCAB:,} probabilities with p=0.9", n_cases)
    return verdict("nucleus_keep", None, n_cases)


def fixed_filter_cases() -> list[tuple]:
    rng = np.random.default_rng(41)
    return [
        (np.array([5.0, 1.0, 0.2, -1.0, -3.0]), 0.7),  # the blog's own test input: top prob 0.97 > p
        (np.log(np.array([0.5, 0.3, 0.2])).astype(np.float32), 0.5),  # float32 rounds the top prob above 0.5
        (np.log(np.array([0.5, 0.3, 0.2])), 0.5),  # the top token alone reaches p exactly: one token
        (np.log(np.array([0.5, 0.25, 0.25])), 0.5),  # the same, with ties below: still one token
        (np.log(np.array([0.5, 0.3, 0.2])), 0.6),  # the nucleus must reach 0.6: two tokens
        (np.log(np.array([0.5, 0.25, 0.25])), 0.6),  # ties at the boundary: all three
        (np.log(np.array([0.25, 0.5, 0.25])), 0.75),
        (np.array([2.0, 2.0, 0.0]), 1e-6),  # tiny p: both tied maxima
        (np.array([0.3, -1.2, 2.5, 0.0]), 1.0),  # p = 1 keeps everything
        (np.array([1.0, -np.inf, 0.0, -np.inf]), 0.5),  # masked tokens stay masked
        (np.log(np.array([0.5 + 1e-9, 0.5 - 1e-9])), 0.5 + 5e-10),  # needs float64
        # float32 logits: the top probability is 0.5000000044 in float64 (< p: two tokens), 0.50000006 in float32
        (np.log(np.array([0.5, 0.3, 0.2])).astype(np.float32), 0.50000002),
        (rng.normal(scale=2.0, size=20), 0.9),
        (rng.normal(scale=0.5, size=300), 0.95),
    ]


def float32_softmax(logits: np.ndarray) -> np.ndarray:
    """The blog's softmax, which keeps the logits' dtype: float32 probabilities for float32 logits."""
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def float32_nucleus(logits: np.ndarray, p: float) -> np.ndarray:
    """The right rule applied to float32 probabilities (what a fix that keeps the blog's softmax keeps)."""
    probs = float32_softmax(logits)  # (V,) float32
    return np.asarray(float32_keep(probs, p))


def check_fixed_nucleus_filter(fn) -> bool:
    """fn(logits, p) on one row of logits must equal specdec.top_p_filter: same -inf places, kept logits unchanged."""
    return fixed_filter_verdict(fn, fixed_filter_cases(), refused_in(fn, ("top_p_filter",)))


def fixed_filter_verdict(fn, cases: list[tuple], refused: dict) -> bool:
    for logits, p in cases:
        got, error = call(fn, (logits, p), refused=refused, why=REFUSED_WHY)
        where = f"for logits {precise(logits)} ({logits.dtype}), p={p!r}"
        if error is None:
            error = result_problem(got, top_p_filter(logits, p), "filtered logits", shape=False)
        if error is not None:
            return verdict("fixed_nucleus_filter", located(error, where), len(cases))
        expected = top_p_filter(logits, p).astype(np.float64)
        got_array = np.asarray(got)
        ok = got_array.shape == expected.shape and np.issubdtype(got_array.dtype, np.floating)
        if not (ok and np.array_equal(got_array.astype(np.float64), expected)):
            note = ""
            if got_array.shape == expected.shape and not ok:
                note = f": it returned an array of dtype {got_array.dtype}; logits with -inf need a floating dtype"
            rounded = specdec.softmax(logits).astype(np.float32).astype(np.float64)  # (V,) float32 precision
            if ok and only_ties_wrong(specdec.softmax(logits), got_array > -np.inf, expected > -np.inf):
                note = TIES_NOTE
            elif ok and np.array_equal(got_array > -np.inf, reference_keep(rounded, p)):
                note = ": that is the nucleus of the probabilities rounded to float32 (compute them in float64)"
            elif ok and logits.dtype == np.float32 and np.array_equal(got_array > -np.inf, float32_nucleus(logits, p)):
                top32, top64 = float32_softmax(logits).max(), specdec.softmax(logits).max()
                note = (
                    f": that is the nucleus of float32 probabilities (the top one is {top32:.10f} in float32,"
                    f" {top64:.10f} in float64). Float32 logits are fine, but compute the probabilities from them"
                    " in float64 (specdec.softmax does)"
                )
            elif ok:
                note = boundary_note(specdec.softmax(logits), got_array > -np.inf, expected > -np.inf, p)
            return verdict(
                "fixed_nucleus_filter",
                f"for logits {precise(logits)} ({logits.dtype}), p={p!r}"
                f" expected {precise(expected)}, got {precise(got)}{note}",
                len(cases),
            )
    return verdict("fixed_nucleus_filter", None, len(cases))
