"""Checkers for the exercises of notebook 04 (top-p / nucleus).

check_nucleus_keep(fn):           fn(probs, p) -> boolean keep-mask, same shape as probs (float64 or float32
                                  probabilities, summed in float64, input left alone; top_p_filter,
                                  nucleus_threshold and nucleus_threshold_full_sort refused, under any name;
                                  an O(V^2) answer is stopped after two timed mid-sized rows, before a wide one)
check_fixed_nucleus_filter(fn):   fn(logits, p) -> logits (one row) with -inf outside the nucleus
                                  (top_p_filter refused; float32 logits need float64 probabilities)

Both include decimal boundaries, where the mass above a token computed as a running sum minus the
token (np.cumsum(top) - top) rounds below p although the exact sum of the tokens above is p: such an
answer is rejected, and told so.
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
    """On one line, with enough digits to see differences of 1e-9 (the boundary cases need them)."""
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.number):
        return show(value)
    if array.ndim == 0:
        return f"{float(array):.12g}"
    return show(array, digits=12)


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
        # decimal boundaries: the mass above 0.3 is 0.4, not < p; (0.4 + 0.3) - 0.3 is 0.39999999999999997 < p
        (np.array([0.4, 0.3, 0.2, 0.1]), 0.4),
        (np.array([0.5, 0.2, 0.2, 0.1]), 0.5),  # (0.5 + 0.2) - 0.2 is 0.49999999999999994: both 0.2s too
    ]


def splits_ties(probs, kept) -> bool:
    """Whether a keep-mask keeps one token and drops another of exactly the same probability (in some row)."""
    probs, kept = np.asarray(probs, dtype=np.float64), np.asarray(kept)
    if kept.shape != probs.shape or kept.dtype != bool:
        return False
    same = probs[..., :, None] == probs[..., None, :]  # (..., V, V)
    return bool((same & kept[..., :, None] & ~kept[..., None, :]).any())


TIES_NOTE = "tied tokens were split: tokens of equal probability are kept or dropped together"


def boundary_note(probs, kept, expected, p: float) -> str:
    """When the mask keeps every expected token and more, and the expected tokens alone already reach p exactly."""
    probs, kept, expected = np.asarray(probs, dtype=np.float64), np.asarray(kept), np.asarray(expected)
    if kept.shape != expected.shape or kept.dtype != bool or not (kept >= expected).all():
        return ""
    if not (np.where(expected, probs, 0.0).sum(axis=-1) == p).any():
        return ""
    return (
        f"one token too many: the expected tokens alone have a mass of exactly p={p!r}, so the mass above the next"
        " token is exactly p, which is not < p: keep a position only while the mass strictly above it is < p"
    )


def count_words(got, expected, what: str) -> str:
    """The plain diagnosis of a wrong keep-mask (a row or a batch): how many tokens it keeps, and how many it should."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return f"your {what} has shape {got.shape}: the shape of the input, {expected.shape}, is asked"
    n_got, n_expected = int(got.sum()), int(expected.sum())
    tokens = "token" if n_got == 1 else "tokens"
    if n_got == n_expected:
        return f"your {what} keeps {n_got} {tokens}, as many as the nucleus, but not the same ones"
    return f"your {what} keeps {n_got} {tokens} where the nucleus has {n_expected}"


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


def keep_by_mass_above(probs, p: float, subtract: bool) -> np.ndarray:
    """The rule by sorting, in the probabilities' own dtype, with the mass above each position computed as the
    running sum shifted by one place (subtract=False, exact as summed) or minus each token (subtract=True)."""
    probs = np.asarray(probs)  # (..., V)
    top = -np.sort(-probs, axis=-1)  # (..., V) descending, in the input's dtype
    running = np.cumsum(top, axis=-1)  # (..., V)
    if subtract:
        above = running - top  # (..., V) rounds: (a + b) - b need not be a
    else:
        above = np.concatenate([np.zeros_like(running[..., :1]), running[..., :-1]], axis=-1)  # (..., V)
    threshold = np.take_along_axis(top, (above < p).sum(axis=-1, keepdims=True) - 1, axis=-1)
    return probs >= threshold


def float32_keep(probs, p: float) -> tuple[np.ndarray, np.ndarray]:
    """The rule computed in the float32 probabilities' own dtype: the masks of both ways of summing the mass above."""
    return keep_by_mass_above(probs, p, subtract=True), keep_by_mass_above(probs, p, subtract=False)


def subtraction_note(probs, p: float) -> str:
    """Why a running sum minus each token is wrong, on this row: the first position where it rounds across p."""
    top = -np.sort(-np.asarray(probs, dtype=np.float64), axis=-1)  # (V,) descending
    running = np.cumsum(top)  # (V,)
    subtracted = running - top  # (V,)
    shifted = np.concatenate([[0.0], running[:-1]])  # (V,)
    j = int(np.flatnonzero((subtracted < p) != (shifted < p))[0])
    return (
        "your mass above each token is a running sum minus the token itself (np.cumsum(top) - top), and the"
        f" subtraction rounds: above the token {float(top[j])!r} the mass is {float(shifted[j])!r} (the tokens before"
        f" it, added up), but running sum - token gives {float(subtracted[j])!r}, which is < p={p!r}, so a token"
        " too many comes in. Shift the running sum by one place instead (descending_exclusive_cumsum): nothing is"
        " subtracted"
    )


def is_subtraction(probs, got, expected, p: float) -> bool:
    """Whether a wrong mask (one row, float64) is exactly what the running sum minus each token gives."""
    probs = np.asarray(probs)
    if probs.ndim != 1 or probs.dtype != np.float64 or np.shape(got) != probs.shape:
        return False
    right, wrong = keep_by_mass_above(probs, p, subtract=False), keep_by_mass_above(probs, p, subtract=True)
    return np.array_equal(right, expected) and not np.array_equal(wrong, expected) and np.array_equal(got, wrong)


# The package's answers to this exercise: a nucleus_keep that calls them is refused.
KEEP_REFERENCES = ("top_p_filter", "nucleus_threshold", "nucleus_threshold_full_sort")


def check_nucleus_keep(fn) -> bool:
    """fn(probs, p) must return the boolean nucleus mask of every row (shape of probs), computed in float64."""
    return keep_verdict(fn, refused_in(fn, KEEP_REFERENCES))


def sorted_positions(probs, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Each row sorted in float64, descending (..., V), and n (..., 1): how many positions have a mass above < p."""
    top = -np.sort(-np.asarray(probs, dtype=np.float64), axis=-1)  # (..., V) descending
    above = np.concatenate([np.zeros_like(top[..., :1]), np.cumsum(top, axis=-1)[..., :-1]], axis=-1)  # (..., V)
    return top, (above < p).sum(axis=-1, keepdims=True)


def crossing_probability(probs, p: float) -> np.ndarray:
    """The crossing token's probability per row, shape (..., 1), by sorting in float64 (the rule, independently).

    `probs >= crossing_probability(probs, p)` is the nucleus, in O(V log V) (for rows too wide for reference_keep).
    """
    top, n = sorted_positions(probs, p)
    return np.take_along_axis(top, n - 1, axis=-1)  # (..., 1)


def crossing_note(probs, kept, expected, p: float, what: str) -> str:
    """An off-by-one around the crossing token: the threshold read at index n, or the crossing token left out."""
    probs, kept = np.asarray(probs, dtype=np.float64), np.asarray(kept)
    if kept.shape != probs.shape or kept.dtype != bool:
        return ""
    top, n = sorted_positions(probs, p)  # (..., V) descending, (..., 1)
    one_past = probs >= np.take_along_axis(top, np.minimum(n, probs.shape[-1] - 1), axis=-1)  # (..., V)
    if np.array_equal(kept, one_past):
        return (
            f"{count_words(kept, expected, what)}: the threshold is read one position too far. With n the number"
            " of sorted positions whose mass above is < p, the crossing token is at index n - 1 (the n-th"
            " position), not at index n"
        )
    if np.array_equal(kept, probs > np.take_along_axis(top, n - 1, axis=-1)):  # > the crossing probability
        return (
            f"{count_words(kept, expected, what)}: the crossing token, during which the running total reaches p,"
            " is missing. Does your running sum include each token? The mass *above* a token counts only the"
            " tokens before it (and keep every token >= the crossing token's probability, not >)"
        )
    return ""


def rows_alone_right(fn, probs, p: float, refused: dict) -> bool:
    """Whether fn, given each row of a batch on its own, returns that row's right mask."""
    probs = np.asarray(probs)
    if probs.ndim < 2:
        return False
    for index in np.ndindex(probs.shape[:-1]):
        got, error = call(fn, (probs[index], p), refused=refused, why=REFUSED_WHY, in_place=SORT_A_COPY)
        expected = reference_keep(probs[index], p)
        if error is not None or result_problem(got, expected, "keep-mask") is not None:
            return False
        if not np.array_equal(got, expected):
            return False
    return True


def batch_words(shape: tuple) -> str:
    return (
        f"your function handles one row but not a batch of shape {shape}: sort and sum along axis=-1, reverse with"
        " [..., ::-1], count with keepdims=True, read with np.take_along_axis (each row gets its own crossing token)"
    )


def keep_diagnosis(probs, got: np.ndarray, expected: np.ndarray, p: float) -> str:
    """What is wrong with a keep-mask, in words: a split tie, a rounding, an exact boundary, or how many it keeps."""
    if got.shape == expected.shape:
        if probs.shape[-1] <= 20 and only_ties_wrong(probs, got, expected):
            return TIES_NOTE
        if is_subtraction(probs, got, expected, p):
            return subtraction_note(probs, p)
        if probs.dtype == np.float64 and np.array_equal(got, reference_keep(probs.astype(np.float32), p)):
            return "your mask is the nucleus of these probabilities rounded to float32 (float64 is asked)"
        if probs.dtype == np.float32 and any(np.array_equal(got, m) for m in float32_keep(probs, p)):
            return (
                "your mask is the nucleus of float32 arithmetic: these probabilities are float32, and summed in"
                " float32 the mass above a token rounds past p; convert them to float64 before summing (float64 is"
                " asked)"
            )
    return (
        boundary_note(probs, got, expected, p)
        or crossing_note(probs, got, expected, p, "mask")
        or count_words(got, expected, "mask")
    )


def keep_verdict(fn, refused: dict) -> bool:
    cases = keep_cases()
    n_cases = len(cases) + len(PILOT_VOCABS) + 1
    for probs, p in cases:
        got, error = call(fn, (probs, p), refused=refused, why=REFUSED_WHY, in_place=SORT_A_COPY)
        expected = reference_keep(probs, p)
        raised = error is not None and error.startswith("raised ")
        if error is None:
            error = result_problem(got, expected, "keep-mask", shape=False)
        if raised and rows_alone_right(fn, probs, p, refused):
            error = batch_words(probs.shape)
        if error is not None:
            return verdict("nucleus_keep", located(error, input_words(probs, p)), n_cases)
        got_array = np.asarray(got)
        if got_array.shape == expected.shape and np.array_equal(got_array, expected):
            continue
        if rows_alone_right(fn, probs, p, refused):
            diagnosis = batch_words(probs.shape)
        else:
            diagnosis = keep_diagnosis(probs, got_array, expected, p)
        if probs.ndim > 1 and got_array.shape == expected.shape:  # name the first wrong row, show it alone
            index, row, row_expected, row_got = first_wrong_row(probs, got_array, expected)
            where = f"for a batch of shape {probs.shape} ({probs.dtype}), p={p!r}, row {index}: probs {precise(row)}"
        else:
            row, row_expected, row_got = probs, expected, got_array
            where = f"for probs {precise(probs)} ({probs.dtype}), p={p!r}"
        kept_mass = np.where(row_expected, np.asarray(row, dtype=np.float64), 0.0).sum(axis=-1)
        differs = ""
        if row_got.shape == row_expected.shape and row_expected.shape[-1] > 20:
            tokens = np.flatnonzero(row_got != row_expected)
            differs = f"; the tokens that differ: {show(tokens)}, of probabilities {precise(row[tokens])}"
        arrays = f"{where} expected {show(row_expected)} (kept mass {precise(kept_mass)}), got {show(row_got)}{differs}"
        return verdict("nucleus_keep", located(diagnosis, arrays), n_cases)
    return wide_row_verdict(fn, n_cases, refused)


def input_words(probs: np.ndarray, p: float) -> str:
    """The case a failure happened on: the whole input when it is short, else its shape and first row."""
    if probs.ndim < 2 or probs.size <= 20:
        return f"for probs {precise(probs)} ({probs.dtype}), p={p!r}"
    first = (0,) * (probs.ndim - 1)
    return (
        f"for a batch of shape {probs.shape} ({probs.dtype}), p={p!r}; its row {list(first)}: probs"
        f" {precise(probs[first])}"
    )


WIDE_VOCAB = 1_000_000  # a V x V array of this row would take a terabyte
PILOT_VOCABS = (1_000, 4_000, 16_000, 64_000)  # timed first: an O(V^2) loop is stopped, never run for hours
JUDGED_S = 0.02  # a time long enough to measure growth from (shorter ones are mostly overhead and noise)
PATIENCE_S = 60.0  # the longest a million-token row may be expected to take


def peaked_row(vocab: int) -> np.ndarray:
    return np.random.default_rng(44).dirichlet(np.full(vocab, 0.01))  # (V,) a peaked row, no ties


def duration_words(seconds: float) -> str:
    """A long duration as a magnitude in words: about 20 minutes, about 3 hours, about 2 weeks."""
    for unit, size in [("year", 365 * 86400), ("week", 7 * 86400), ("day", 86400), ("hour", 3600), ("minute", 60)]:
        if seconds >= 1.5 * size or unit == "minute":
            count = max(1, round(seconds / size))
            return f"about {count} {unit}{'s' if count > 1 else ''}"
    return "about a minute"  # not reached


def pilot_verdict(fn, n_cases: int, refused: dict):
    """Time fn on rows of growing size; refuse it (return False) when its growth predicts hours on a million tokens.

    The first size whose time is long enough to measure (JUDGED_S) decides, from the growth since the size
    before it. A fast O(V^2) function (numpy comparisons, not a Python loop) can take well under that on
    4,000 tokens, so the sizes go on until one is measurable: never straight to a million tokens.
    """
    seconds = []
    for vocab in PILOT_VOCABS:
        probs = peaked_row(vocab)
        start = time.perf_counter()
        got, error = call(fn, (probs, 0.9), refused=refused, why=REFUSED_WHY)
        seconds.append(time.perf_counter() - start)
        if error is not None:
            return verdict("nucleus_keep", located(error, f"one row of {vocab:,} probabilities, p=0.9"), n_cases)
        expected = probs >= crossing_probability(probs, 0.9)
        if not np.array_equal(np.asarray(got), expected):
            words = count_words(got, expected, "mask")
            return verdict("nucleus_keep", located(words, f"one row of {vocab:,} probabilities, p=0.9"), n_cases)
        if len(seconds) >= 2 and seconds[-1] >= JUDGED_S:
            break
    if len(seconds) < 2 or seconds[-1] < JUDGED_S:  # fast at every pilot size: no quadratic cost to fear
        return None
    (small, large), (t_small, t_large) = PILOT_VOCABS[len(seconds) - 2 : len(seconds)], seconds[-2:]
    growth = np.log(max(t_large, 1e-9) / max(t_small, 1e-4)) / np.log(large / small)  # t ~ V^growth
    predicted = t_large * (WIDE_VOCAB / large) ** max(growth, 1.0)
    if predicted > PATIENCE_S:
        return verdict(
            "nucleus_keep",
            f"on rows of {small:,} and {large:,} probabilities your function took {t_small:.3f} s and"
            f" {t_large:.3f} s: it grows like V^{growth:.1f}, so one row of {WIDE_VOCAB:,} would take"
            f" {duration_words(predicted)}, far too long. Comparing every token with every other is O(V^2) (like"
            " mass_strictly_above); sort the row instead (O(V log V))",
            n_cases,
        )
    return None


def wide_row_verdict(fn, n_cases: int, refused: dict) -> bool:
    """A real vocabulary's row: an O(V^2) answer (a V x V comparison, like mass_strictly_above) runs out of memory."""
    too_slow = pilot_verdict(fn, n_cases, refused)
    if too_slow is not None:
        return too_slow
    probs = peaked_row(WIDE_VOCAB)  # (V,)
    where = f"one row of {WIDE_VOCAB:,} probabilities, p=0.9"
    got, error = call(fn, (probs, 0.9), refused=refused, why=REFUSED_WHY, in_place=SORT_A_COPY)
    if error is not None and error.startswith("raised MemoryError"):
        error = (
            "your function ran out of memory: it builds a V x V array (O(V^2), like mass_strictly_above);"
            " sort the row instead (O(V log V))"
        )
    if error is not None:
        return verdict("nucleus_keep", located(error, where), n_cases)
    expected = probs >= crossing_probability(probs, 0.9)
    if not np.array_equal(np.asarray(got), expected):
        return verdict("nucleus_keep", located(count_words(got, expected, "mask"), where), n_cases)
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
        # a decimal boundary: the mass above the 0.2s is 0.5, not < p; (0.5 + 0.2) - 0.2 is 0.49999999999999994 < p
        (np.log(np.array([0.5, 0.2, 0.2, 0.1])), 0.5),
    ]


def float32_softmax(logits: np.ndarray) -> np.ndarray:
    """The blog's softmax, which keeps the logits' dtype: float32 probabilities for float32 logits."""
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def float32_nucleus(logits: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """The right rule applied to float32 probabilities (what a fix that keeps the blog's softmax keeps), both ways."""
    return float32_keep(float32_softmax(logits), p)  # (V,), (V,) from float32 probabilities


def softmax_routes(logits: np.ndarray) -> list[np.ndarray]:
    """One row's float64 probabilities, computed the ways a fix of the blog's code may compute them.

    specdec.softmax and the blog's formula in float64, each on the logits in token order and in the
    argsort order of the blog's code (put back in token order): four arrays that may differ in the last bit.
    """
    x64 = np.asarray(logits, dtype=np.float64)  # (V,)
    order = np.argsort(logits)[::-1]  # (V,) the blog's sort
    routes = []
    for softmax in (specdec.softmax, float32_softmax):  # float32_softmax keeps the dtype: float64 here
        in_order, sorted_probs = softmax(x64), softmax(x64[order])  # (V,), (V,)
        back = np.empty_like(sorted_probs)
        back[order] = sorted_probs
        routes += [in_order, back]
    return routes


def mixes_two_softmaxes(logits: np.ndarray, kept: np.ndarray, right: np.ndarray, p: float) -> bool:
    """Whether a wrong mask is one array of probabilities compared with the crossing probability of another."""
    routes = softmax_routes(logits)
    for a in routes:
        for b in routes:
            if np.array_equal(a, b):
                continue
            mask = a >= crossing_probability(b, p)  # (V,)
            if np.array_equal(mask, kept) and not np.array_equal(mask, right):
                return True
    return False


TWO_SOFTMAXES = (
    "your two probability arrays come from different softmax calls and differ in the last bit (their sums add"
    " in different orders), so a token at the threshold lands on the wrong side: compute one array of"
    " probabilities and compare within it (or compare logits with the crossing token's logit)"
)


def check_fixed_nucleus_filter(fn) -> bool:
    """fn(logits, p) on one row of logits must equal specdec.top_p_filter: same -inf places, kept logits unchanged."""
    return fixed_filter_verdict(fn, fixed_filter_cases(), refused_in(fn, ("top_p_filter",)))


def fixed_filter_diagnosis(logits: np.ndarray, got: np.ndarray, expected: np.ndarray, p: float) -> str:
    """What is wrong with a filtered row, in words: which rule its kept tokens follow, or how many it keeps."""
    if got.shape != expected.shape:
        return count_words(got, expected, "filter's result")
    kept, right = got > -np.inf, expected > -np.inf  # (V,), (V,)
    if np.array_equal(kept, right):
        return "your filter keeps the right tokens, but the kept logits must come back unchanged (and -inf elsewhere)"
    probs = specdec.softmax(logits)  # (V,) float64
    rounded = probs.astype(np.float32).astype(np.float64)  # (V,) float32 precision
    if only_ties_wrong(probs, kept, right):
        return TIES_NOTE
    if is_subtraction(probs, kept, right, p):
        return subtraction_note(probs, p)
    if mixes_two_softmaxes(logits, kept, right, p):
        return TWO_SOFTMAXES
    if np.array_equal(kept, reference_keep(rounded, p)):
        return "your filter keeps the nucleus of the probabilities rounded to float32 (compute them in float64)"
    if logits.dtype == np.float32 and any(np.array_equal(kept, m) for m in float32_nucleus(logits, p)):
        top32, top64 = float32_softmax(logits).max(), probs.max()
        return (
            f"your filter keeps the nucleus of float32 probabilities (the top one is {top32:.10f} in float32,"
            f" {top64:.10f} in float64). Float32 logits are fine, but compute the probabilities from them in"
            " float64 (specdec.softmax does)"
        )
    return (
        boundary_note(probs, kept, right, p)
        or crossing_note(probs, kept, right, p, "filter")
        or count_words(kept, right, "filter")
    )


SHORT_ROW = 10  # longer rows are shown by the tokens kept, not by every value


def filter_arrays(logits: np.ndarray, p: float, got: np.ndarray, expected: np.ndarray) -> str:
    """The case and both results, on one line: every value for a short row, the kept tokens for a long one."""
    if logits.size <= SHORT_ROW or got.shape != expected.shape:
        return (
            f"for logits {precise(logits)} ({logits.dtype}), p={p!r} expected {precise(expected)}, got {precise(got)}"
        )
    kept, right = got > -np.inf, expected > -np.inf  # (V,), (V,)
    differ = np.flatnonzero(kept != right)  # (d,)
    return (
        f"for {logits.size} logits {show(logits)} ({logits.dtype}), p={p!r}: expected to keep tokens"
        f" {np.flatnonzero(right).tolist()}, got {np.flatnonzero(kept).tolist()}; the tokens that differ:"
        f" {differ.tolist()}, of logits {precise(logits[differ])} and probabilities"
        f" {precise(specdec.softmax(logits)[differ])}"
    )


def fixed_filter_verdict(fn, cases: list[tuple], refused: dict) -> bool:
    for logits, p in cases:
        got, error = call(fn, (logits, p), refused=refused, why=REFUSED_WHY)
        where = f"for logits {precise(logits)} ({logits.dtype}), p={p!r}"
        expected = top_p_filter(logits, p)  # (V,) the logits' floating dtype
        if error is None:
            error = result_problem(got, expected, "filtered logits", shape=False)
        if error is not None:
            return verdict("fixed_nucleus_filter", located(error, where), len(cases))
        got_array = np.asarray(got)
        if got_array.shape == expected.shape and np.array_equal(got_array, expected):
            continue
        diagnosis = fixed_filter_diagnosis(logits, got_array, expected, p)
        return verdict(
            "fixed_nucleus_filter", located(diagnosis, filter_arrays(logits, p, got_array, expected)), len(cases)
        )
    return verdict("fixed_nucleus_filter", None, len(cases))
