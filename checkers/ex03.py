"""Checkers for the exercises of notebook 03 (top-k).

check_kth_largest(fn):  exercise 1, fn(x, k) -> the k-th largest value of each row, shape (..., 1)
check_top_k_filter(fn): exercise 2, fn(logits, k) -> logits with -inf outside the top k (ties kept)
check_top_k_test(fn):   exercise 3, fn(logits, k, filtered) -> True iff `filtered` is a correct top-k result

While a checker runs, the package functions its exercise must not lean on (the exercise's own
answer, or a filter to copy) and the numpy functions it must not use (a sort where O(V) is asked; a
sort or partition that rebuilds the filter in a test of its properties), the array methods that
sort (`y.sort()`, `y.argsort()`, ...), `list.sort()` and heapq are watched by the course's profile
hook (checkers.watching: nothing is replaced), and a function that calls one is told so.
"""

import heapq
import os

import numpy as np

import specdec
import specdec.topk
from checkers import attempt, call, located, namesakes, result_problem, show, verdict, without_input

NEG_INF = -np.inf


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def reference_kth_largest(x, k: int) -> np.ndarray:
    """Sort each row and read the k-th value from the top: slow (O(V log V)) but obviously right."""
    x = np.asarray(x)
    vocab = x.shape[-1]
    return np.sort(x, axis=-1)[..., vocab - k : vocab - k + 1]  # (..., 1)


def reference_top_k(logits, k: int) -> np.ndarray:
    """Keep every logit >= the k-th largest of its row (k capped at V); -inf elsewhere; float64."""
    x = np.asarray(logits, dtype=np.float64)  # (..., V)
    kth = reference_kth_largest(x, min(k, x.shape[-1]))  # (..., 1)
    return np.where(x >= kth, x, NEG_INF)  # (..., V)


# --- what an exercise must not call -------------------------------------------------------------

# Sorting and ranking, seen by the course's profile hook (checkers.watching) whatever the array is:
# numpy's functions, the array methods, the builtins and heapq. Calls made by numpy's own code (np.unique
# sorts inside) and by heapq are not the learner's and do not count.
SORTS = {
    "np.sort": [np.sort],
    "np.argsort": [np.argsort],
    "np.lexsort": [np.lexsort],
    "sorted": [sorted],
    "the array method .sort()": [np.ndarray.sort],
    "the array method .argsort()": [np.ndarray.argsort],
    "the list method .sort()": [list.sort],
    "heapq.nlargest": [heapq.nlargest],
    "heapq.nsmallest": [heapq.nsmallest],
}
PARTITIONS = {
    "np.partition": [np.partition],
    "np.argpartition": [np.argpartition],
    "the array method .partition()": [np.ndarray.partition],
    "the array method .argpartition()": [np.ndarray.argpartition],
}
NOT_THE_LEARNERS = (os.path.dirname(np.__file__), heapq.__file__)


def package_functions(fn, names) -> dict:
    """The package's functions `names` (and the notebook's copies, any alias), for checkers.watching."""
    return namesakes(fn, names, specdec, specdec.topk)


def sort_words(name: str) -> str:
    """What a sort-like call costs, for the O(V) exercise's message."""
    if name.startswith("heapq"):
        return "a heap of the k largest values built one row at a time in Python (O(V log k)), not np.partition"
    return "a full sort of each row (O(V log V))"


# --- words for a difference the printed arrays may hide -------------------------------------


def where(index: tuple, name: str) -> str:
    return f"{name}[{', '.join(str(i) for i in index)}]"


def explain_kth(x, k, got, expected) -> str:
    """What is wrong with a kth_largest_value answer of the right kind and dtype (result_problem ran first)."""
    array = np.asarray(got)
    x = np.asarray(x)
    if array.size == 0 and expected.size:
        return (
            f"your slice came back empty (shape {array.shape}). A slice [a:b] selects nothing when it ends"
            " where it starts or before: [..., -k:-k + 1] is [..., -1:0] at k = 1, and with V = len(x) a batch"
            " gives the number of rows, not of tokens. Take j = V - k with V = x.shape[-1], then slice"
            " [..., j : j + 1]"
        )
    if array.shape == expected.shape[:-1]:
        return f"shape {array.shape}, expected {expected.shape}: keep the last axis (length 1) so it broadcasts"
    if array.shape != expected.shape:
        return f"shape {array.shape}, expected {expected.shape}: one value per row, the last axis kept with length 1"
    vocab = x.shape[-1]
    if same_values(array, np.sort(x, axis=-1)[..., k - 1 : k]):
        return (
            f"your result is the {ordinal(k)} smallest value of each row, not the {ordinal(k)} largest: np.partition"
            f" orders ascending, so the k-th largest sits at index V - k (here {vocab} - {k} = {vocab - k}), not k - 1"
        )
    if x.ndim >= 2 and same_values(array, np.partition(x, vocab - k, axis=0)[..., vocab - k : vocab - k + 1]):
        return (
            "your function partitions along axis 0, down the batch (each column), not along each row: pass"
            " axis=-1 (the last axis, the tokens of a row)"
        )
    index = next(i for i in np.ndindex(expected.shape) if not array[i] == expected[i])
    words = f"at {where(index, 'result')}: expected {expected[index].item()!r}, got {array[index].item()!r}"
    rows = len(x) - k  # the index a V = len(x) mistake reads
    if x.ndim >= 2 and 0 <= rows < x.shape[-1] and same_values(array, np.sort(x, axis=-1)[..., rows : rows + 1]):
        words += "; that is the value at index len(x) - k, but len(x) counts the rows of a batch: V is x.shape[-1]"
    return words


def explain_filter(logits, k: int, got, expected) -> str:
    """What is wrong with a top-k result of the right kind and dtype (result_problem ran first): shape, then tokens."""
    x = np.asarray(logits)
    array = np.asarray(got)
    if array.shape != expected.shape:
        return f"shape {array.shape}, expected {expected.shape}: the result has the shape of the logits"
    reordered = reordered_row(array, expected)
    if reordered is not None:
        return (
            f"{reordered} holds the right values in the wrong places: it is the correct row reordered. Something"
            " reordered your copy before the comparison: the methods x.partition(j) and x.sort() reorder x in"
            " place (a kth_largest_value that calls them reorders the array it is given), while"
            " np.partition(x, j) returns a reordered copy and leaves x alone"
        )
    for index in np.ndindex(expected.shape):
        g, e, v = array[index], expected[index], float(x[index])
        if g == e:
            continue
        if np.isnan(g):
            return f"{where(index, 'logits')} came back as NaN; a dropped logit must be -inf"
        if e == NEG_INF:
            return (
                f"{where(index, 'logits')} = {v!r} is below the k-th largest value of its row, so it must be -inf"
                f" (probability exactly 0); got {g.item()!r}"
            )
        if g == NEG_INF:
            return f"{where(index, 'logits')} = {v!r} must be kept: {tie_words(x, k, index)}; got -inf"
        return f"{where(index, 'logits')} = {v!r} is kept and must come back unchanged; got {g.item()!r}"
    return "the values differ"  # not reached: same_filtered said they differ


def reordered_row(got: np.ndarray, expected: np.ndarray) -> str | None:
    """For the first row that differs, its name when it is the right row reordered, else None."""
    vocab = expected.shape[-1]
    for index in np.ndindex(expected.shape[:-1]):
        g, e = got[index].astype(np.float64), expected[index]
        if np.array_equal(g, e):
            continue
        if np.array_equal(np.sort(g), np.sort(e)) and vocab > 1:
            return f"row [{', '.join(str(i) for i in index)}] of your result" if index else "your result"
        return None
    return None


def tie_words(x: np.ndarray, k: int, index: tuple) -> str:
    """Why a dropped token should have been kept: it is the k-th largest value, tied with it, or larger."""
    row = np.asarray(x, dtype=np.float64)[index[:-1]]  # (V,)
    threshold = float(reference_kth_largest(row, min(k, row.size))[0])  # the k-th largest value of the row
    value = float(row[index[-1]])
    if value > threshold:
        return f"it is larger than the k-th largest value of its row ({threshold!r})"
    if (row == threshold).sum() == 1:
        return "it is the k-th largest value of its row"
    return f"it is tied with the k-th largest value of its row ({threshold!r}), and ties with the k-th are kept"


# --- Exercise 1: the k-th largest value --------------------------------------------------------


def same_filtered(got, expected) -> bool:
    """Same shape, -inf in the same places, and the kept values unchanged (any floating dtype)."""
    got = np.asarray(got)
    if got.shape != expected.shape or not np.issubdtype(got.dtype, np.floating):
        return False
    return bool(np.array_equal(got.astype(np.float64), expected))


def same_values(got, expected) -> bool:
    """Same shape and the same values."""
    got = np.asarray(got)
    return got.shape == expected.shape and bool(np.array_equal(got, expected))


def kth_cases() -> list[tuple]:
    rng = np.random.default_rng(3)
    return [
        (np.array([3.0, 1.0, 4.0, 1.0, 5.0]), 2),
        (np.array([2.0, 1.0, 1.0, 1.0, 0.5]), 2),  # the 2nd largest is tied
        (np.array([2.0, 1.0, 1.0, 1.0, 0.5]), 3),  # the 3rd largest is still 1.0, not 0.5
        (np.array([5.0, 5.0, 1.0]), 1),  # tied maximum
        (np.array([5.0, 5.0, 1.0]), 2),
        (np.array([3.0, 1.0, 2.0]), 3),  # k = V: the smallest
        (np.full((2, 4), 0.7), 3),  # all-equal rows: every k gives the common value
        (np.array([0.0, -np.inf, -np.inf, 1.0]), 3),  # the 3rd largest is -inf
        (np.array([[4, 9, 2], [7, 7, 1]]), 2),  # integers, batched
        (rng.normal(size=(4, 10)), 3),  # batched, float64 values float32 cannot hold
        (rng.normal(size=(2, 3, 7)).round(1), 7),  # two leading axes, k = V, ties from rounding
        (rng.normal(size=(8, 50)).astype(np.float32), 10),  # float32 in: float32 values out
    ]


def check_kth_largest(fn) -> bool:
    """fn(x, k) must return the k-th largest value of every row, keeping the axis: shape (..., 1).

    It must not call the package's kth_largest (this exercise's answer), nor sort (np.sort,
    np.argsort, np.lexsort, sorted, the methods y.sort() and y.argsort(), list.sort(),
    heapq.nlargest: the exercise asks for O(V) with np.partition), nor reorder the array it is given.
    """
    name, cases = "kth_largest_value", kth_cases()
    refused = package_functions(fn, ["kth_largest"]) | SORTS

    def why(called: str) -> str:
        if called == "kth_largest":
            return "the package's answer to this exercise: write it yourself with np.partition"
        return (
            f"{sort_words(called)}; the exercise asks for O(V): np.partition(x, j, axis=-1) puts the value that"
            " belongs at sorted index j at index j, without sorting the rest"
        )

    in_place = (
        "the method x.partition(j) reorders x itself; np.partition(x, j) returns a reordered copy and leaves x"
        " alone (the caller still needs its logits in token order)"
    )
    for x, k in cases:
        expected = reference_kth_largest(x, k)
        got, error = call(fn, (x, k), refused=refused, why=why, in_place=in_place, quiet_callers=NOT_THE_LEARNERS)
        if error is not None:
            return verdict(name, located(error, f"for input {show((x, k))}"), len(cases))
        kind = result_problem(got, expected, "k-th largest values", shape=False)
        if kind is not None:
            return verdict(name, located(kind, f"for input {show((x, k))}, got {show(got)}"), len(cases))
        if not same_values(got, expected):
            return verdict(
                name,
                located(
                    explain_kth(x, k, got, expected),
                    f"for input {show((x, k))} expected {show(expected)}, got {show(got)}",
                ),
                len(cases),
            )
    return verdict(name, None, len(cases))


# --- Exercise 2: top-k that keeps ties ---------------------------------------------------------


def top_k_cases() -> list[tuple]:
    rng = np.random.default_rng(30)
    batch = np.array(
        [
            [0.5, 2.0, 0.5, 1.0, 0.5],  # the 2nd largest (1.0) is unique, ties further down
            [1.0, 0.5, 1.0, 2.0, 1.0],  # three tokens tied at the 2nd largest value
            [-np.inf, 3.0, -np.inf, 0.0, -1.0],
        ]
    )
    return [
        (np.array([1.0, 3.0, 2.0, 5.0, 4.0]), 2),
        (np.array([2.0, 1.0, 1.0, 1.0, 0.5]), 2),  # ties at the boundary: 4 survive
        (np.array([1.0, 0.5, 1.0, 2.0, 1.0]), 2),  # the same tokens in another order
        (np.array([4.0, 4.0, 1.0]), 1),  # tied maximum, k = 1
        (np.array([3.0, 3.0, 3.0, 1.0, 0.0]), 2),  # a tied group straddles k
        (np.full(4, 1.5), 1),  # an all-equal row: every token is tied with the largest
        (np.array([0.3, -1.2, 2.5]), 3),  # k = V keeps everything
        (np.array([0.3, -1.2, 2.5]), 10),  # k > V keeps everything
        (np.array([0.0, -np.inf, 1.0, -np.inf]), 3),  # fewer finite logits than k
        (np.array([0.0, -np.inf, 1.0, -np.inf]), 1),
        (batch, 2),  # batched: each row has its own threshold
        (np.array([[2.0, 2.0, 2.0], [1.0, 0.0, -1.0]]), 2),  # an all-equal row next to an ordinary one
        (rng.normal(size=(2, 2, 6)), 3),  # two leading axes, float64 values float32 cannot hold
        (np.array([[3, 1, 2], [5, 5, 0]]), 1),  # integer logits: the result must be floating
        (np.array([3, 1, 2]), 5),  # integer logits and k > V: floating too, although nothing is dropped
        (rng.normal(size=12).astype(np.float32), 5),
        (rng.normal(size=(3, 8)).round(1).astype(np.float32), 3),  # float32 with ties
        (rng.normal(size=(8, 50)).round(1), 10),  # many ties
    ]


def raised_words(error: str, logits: np.ndarray, k: int) -> str:
    """An exception in a top-k answer, with its usual cause when it is recognised: k >= V, or a threshold without
    the kept axis."""
    vocab, lead = logits.shape[-1], logits.shape[:-1]
    if k >= vocab:  # the usual cause: no early return, np.partition given an index outside the row
        return (
            f"{error}. Here k = {k} is at least the row length {vocab}, so every token survives: return a"
            " floating copy of the logits before looking for the k-th largest (there is none)"
        )
    if lead and "could not be broadcast" in error and str(lead).replace(" ", "") in error.replace(" ", ""):
        return (
            f"your threshold has shape {lead}, not {lead + (1,)}: keep the last axis, as Exercise 1's answer does"
            f" ([..., j : j + 1], not [..., j]), so that it broadcasts against logits of shape {logits.shape}, one"
            f" threshold per row (numpy: {error.split(': ', 1)[-1].strip()})"
        )
    return error


def check_top_k_filter(fn) -> bool:
    """fn(logits, k) must keep every logit >= the k-th largest of its row and set the rest to -inf.

    Also checked: the input array is not modified nor returned, integer logits give a floating result, and fn
    does not call the package's top_k_filter (the function the exercise asks for).
    """
    name, cases = "top_k_keep_ties", top_k_cases()
    refused = package_functions(fn, ["top_k_filter"])
    why = (
        "the function this exercise asks you to write: build it from kth_largest (exercise 1's reference, in"
        " specdec.topk, as the hint does; your own k-th largest would do as well) and one comparison"
    )
    for logits, k in cases:
        outcome = attempt(fn, (logits, k), refused=refused, why=why, in_place="work on a copy")
        got, error = outcome.result, outcome.failure
        if error is not None:
            error = raised_words(without_input(error), logits, k)
            return verdict(name, located(error, f"for logits {show(logits)}, k={k}"), len(cases))
        expected = reference_top_k(logits, k)
        dtype = np.result_type(logits.dtype, np.float32)  # floating, and float32 logits stay float32
        kind = result_problem(got, expected.astype(dtype), "filtered logits", shape=False)
        if kind is not None:
            if isinstance(got, np.ndarray) and got.dtype.kind == "f" and logits.dtype.kind in "fiu":
                kind += (
                    f"; the result's dtype is np.result_type(logits.dtype, np.float32), here {dtype}: float32"
                    " stays float32, integers become float64"
                )
            return verdict(name, located(kind, f"for logits {show(logits)}, k={k}, got {show(got)}"), len(cases))
        if not same_filtered(got, expected):
            return verdict(
                name,
                located(
                    explain_filter(logits, k, got, expected),
                    f"for logits {show(logits)}, k={k} expected {show(expected)}, got {show(got)}",
                ),
                len(cases),
            )
        if isinstance(got, np.ndarray) and np.shares_memory(got, outcome.inputs[0]):
            words = (
                "your function returned the input array itself (or a view of it): return a new array, as"
                " top_k_filter does for every k, even when nothing is dropped; otherwise a caller that writes into"
                " the result changes its own logits"
            )
            return verdict(name, located(words, f"for logits {show(logits)}, k={k}"), len(cases))
    return verdict(name, None, len(cases))


# --- Exercise 3: the test the blog should have written -----------------------------------------


def top_k_test_cases() -> list[tuple]:
    """(logits, k, filtered, should_accept, why) for the test-writing exercise."""
    blog = np.array([0.1, 0.5, 1.2, 0.3, 0.9])
    ties = np.array([2.0, 1.0, 1.0, 1.0, 0.5])
    masked = np.array([0.0, -np.inf, 1.0, -np.inf])
    batch = np.array([[0.0, 1.0, 2.0, 3.0], [10.0, 11.0, 12.0, 13.0]])
    deep = np.array([[[1.0, 2.0, 2.0, 0.0, 3.0], [5.0, 4.0, 4.0, 4.0, 1.0]], [[0.0] * 5, [1.0, 2.0, 3.0, 4.0, 5.0]]])
    rng = np.random.default_rng(31)
    many = rng.normal(size=(4, 30)).round(1)
    inf = NEG_INF
    deep_wrong = reference_top_k(deep, 2)
    deep_wrong[0, 1, 2] = inf  # one token tied with the 2nd largest (4.0) dropped, in one row only
    return [
        (blog, 3, reference_top_k(blog, 3), True, "a row without ties"),
        (ties, 2, reference_top_k(ties, 2), True, "all three tokens tied with the 2nd largest stay"),
        (masked, 3, reference_top_k(masked, 3), True, "only 2 logits are finite, both are kept"),
        (blog, 5, blog.copy(), True, "k = V keeps everything"),
        (blog, 9, blog.copy(), True, "k > V keeps everything"),
        (np.array([4.0, 4.0, 1.0]), 1, np.array([4.0, 4.0, inf]), True, "a tied maximum: both are kept"),
        (np.full(4, 1.5), 1, np.full(4, 1.5), True, "in an all-equal row every token is tied"),
        (batch, 2, reference_top_k(batch, 2), True, "a batch, one threshold per row"),
        (deep, 2, reference_top_k(deep, 2), True, "a (2, 2, 5) batch, one threshold per row"),
        (many, 10, reference_top_k(many, 10), True, "a batch with many ties"),
        (
            blog.astype(np.float32),
            2,
            reference_top_k(blog, 2).astype(np.float32),
            True,
            "a float32 result for float32 logits",
        ),
        (ties, 2, np.array([2.0, 1.0, inf, inf, inf]), False, "it drops tokens tied with the 2nd largest"),
        (ties, 2, ties.copy(), False, "it keeps 0.5 too, below the tied 2nd largest value"),
        (blog, 3, np.array([0.1, inf, 1.2, inf, 0.9]), False, "it keeps 0.1 but drops the larger 0.5"),
        (blog, 3, np.array([inf, inf, 1.2, inf, 0.9]), False, "it keeps only 2 tokens"),
        (blog, 2, np.array([inf, 0.5, 1.2, inf, 0.9]), False, "it keeps 3 tokens"),
        (blog, 5, reference_top_k(blog, 4), False, "it drops 0.1, but k = V must keep everything"),
        (blog, 3, np.array([inf, -0.7, 0.0, inf, -0.3]), False, "the kept logits were changed"),
        (blog, 3, np.array([0.0, 0.5, 1.2, 0.0, 0.9]), False, "its dropped logits are 0, not -inf"),
        (blog, 3, np.array([1.2, 0.9, 0.5]), False, "it returns only the kept values (the shape changed)"),
        (blog, 3, np.array([np.nan, 0.5, 1.2, np.nan, 0.9]), False, "it has NaN instead of -inf"),
        (blog, 3, np.array([np.inf, 0.5, 1.2, np.inf, 0.9]), False, "it has +inf instead of -inf"),
        (blog, 1, np.full(5, inf), False, "it keeps nothing"),
        (batch, 2, np.array([[inf] * 4, [inf, inf, 12.0, 13.0]]), False, "it uses one threshold for the whole batch"),
        (deep, 2, deep_wrong, False, "in row [0, 1] it drops a token tied with the 2nd largest (4.0)"),
        (masked, 3, np.array([inf, inf, 1.0, inf]), False, "it drops a finite logit although k > #finite"),
    ]


def one_threshold_for_the_batch(logits: np.ndarray, k: int, filtered, verdict_given: bool) -> bool:
    """Whether a wrong verdict on a batch is what a correct test gives on the whole batch taken as one row."""
    f = np.asarray(filtered)
    if logits.ndim < 2 or f.shape != logits.shape:
        return False
    as_one_row = same_filtered(f.reshape(-1), reference_top_k(logits.reshape(-1), k))
    return as_one_row == verdict_given


FILTERS = ["top_k_filter", "top_k_keep_ties", "keep_ties"]
KTHS = ["kth_largest", "kth_largest_value"]


def rebuilt_words(name: str) -> str:
    """Why calling `name` in a test of the filter's properties is not a test."""
    if name in FILTERS:
        what = "a top-k filter"
    elif name in KTHS:
        what = "the k-th largest value a filter is built from"
    else:
        what = "a way to rebuild the filter's answer by sorting, partitioning or ranking the row"
    return (
        f"{what}. A test that rebuilds the expected result is a second copy of the filter, and repeats that"
        " copy's answers, right or wrong. Check the properties of `filtered` itself with comparisons, counts,"
        " min and max (see the hint): no sort or partition is needed"
    )


def check_top_k_test(fn) -> bool:
    """fn(logits, k, filtered) -> bool must accept every correct top-k result and reject every wrong one.

    It must check properties, not rebuild the result: a call to the package's top_k_filter or
    kth_largest, the notebook's top_k_filter, top_k_keep_ties, keep_ties or kth_largest_value, or
    to np.sort, np.argsort, np.partition, np.argpartition, np.lexsort, sorted, the array methods
    y.sort(), y.argsort(), y.partition(), y.argpartition(), list.sort() or heapq.nlargest is refused.
    """
    name, cases = "top_k_result_ok", top_k_test_cases()
    refused = package_functions(fn, FILTERS + KTHS) | SORTS | PARTITIONS
    for logits, k, filtered, should_accept, why in cases:
        where = f"for logits {show(logits)}, k={k}, filtered {show(filtered)}"
        got, error = call(fn, (logits, k, filtered), refused=refused, why=rebuilt_words, quiet_callers=NOT_THE_LEARNERS)
        if error is not None:
            return verdict(name, located(error, where), len(cases))
        if not isinstance(got, (bool, np.bool_)):
            return verdict(name, f"your test must return True or False, got {show(got)} ({where})", len(cases))
        if bool(got) != should_accept:
            words = (
                f"your test accepted a wrong result: {why}" if got else f"your test rejected a correct result ({why})"
            )
            if one_threshold_for_the_batch(logits, k, filtered, bool(got)):
                words += (
                    ", as a test that checks the whole batch against one threshold does: each row has its own k-th"
                    " largest value, so check the properties row by row (for row in logits.reshape(-1, V))"
                )
            return verdict(name, located(words, where), len(cases))
    return verdict(name, None, len(cases))
