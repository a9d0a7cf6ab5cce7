"""Notebook 04's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import notebook_prose, the_input, words_before_the_input

import specdec
from checkers import ex04

SOLUTION_PATH = Path(__file__).resolve().parent.parent / "solutions" / "ex04_top_p.py"
spec = importlib.util.spec_from_file_location("ex04_top_p", SOLUTION_PATH)
solution = importlib.util.module_from_spec(spec)
spec.loader.exec_module(solution)


def stub(*args):
    raise NotImplementedError


# --- nucleus_keep ------------------------------------------------------------------------


def sorted_rows(probs, dtype=np.float64):
    probs = np.asarray(probs, dtype=dtype)
    order = np.argsort(-probs, axis=-1, kind="stable")  # (..., V)
    return probs, order, np.take_along_axis(probs, order, axis=-1)


def keep_first(order, n):
    """Mask that keeps the first n positions of `order` in every row."""
    keep_sorted = np.arange(order.shape[-1]) < n  # (..., V)
    keep = np.zeros(order.shape, dtype=bool)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    return keep


def blog_rule(probs, p):  # keep while the running sum *including* the token is <= p
    probs, order, desc = sorted_rows(probs)
    n = (np.cumsum(desc, axis=-1) <= p).sum(axis=-1, keepdims=True)
    return keep_first(order, n)


def mass_above_at_most_p(probs, p):  # <= instead of <: one token too many at exact boundaries
    probs, order, desc = sorted_rows(probs)
    above = np.cumsum(desc, axis=-1) - desc
    threshold = np.take_along_axis(desc, (above <= p).sum(axis=-1, keepdims=True) - 1, axis=-1)
    return probs >= threshold


def first_n_positions(probs, p):  # the right count, but the first n in argsort order: ties split
    probs, order, desc = sorted_rows(probs)
    running = np.cumsum(desc, axis=-1)
    above = np.concatenate([np.zeros_like(running[..., :1]), running[..., :-1]], axis=-1)
    return keep_first(order, (above < p).sum(axis=-1, keepdims=True))


def in_float32(probs, p):  # the right rule, in float32
    return solution.nucleus_keep(np.asarray(probs, dtype=np.float32).astype(np.float64), p)


def keeps_float32(probs, p):  # the right rule, but float32 probabilities are summed in float32
    probs = np.asarray(probs)
    desc = -np.sort(-probs, axis=-1)
    above = np.cumsum(desc, axis=-1) - desc
    threshold = np.take_along_axis(desc, (above < p).sum(axis=-1, keepdims=True) - 1, axis=-1)
    return probs >= threshold


def returns_ints(probs, p):  # the right tokens as 0/1 integers: used as an index, it picks tokens 0 and 1
    return solution.nucleus_keep(probs, p).astype(int)


def delegates_to_the_threshold(probs, p):  # the package's own nucleus_threshold, which the exercise asks for
    from specdec.nucleus import nucleus_threshold

    probs = np.asarray(probs, dtype=np.float64)
    return probs >= nucleus_threshold(probs, p)


def delegates_to_the_filter(probs, p):
    probs = np.asarray(probs, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return specdec.top_p_filter(np.log(probs), p) > -np.inf


def quadratic_definition(probs, p):  # right on small rows (notebook 04's mass_strictly_above), O(V^2) memory
    probs = np.asarray(probs, dtype=np.float64)
    beats = probs[..., None, :] > probs[..., :, None]
    return np.where(beats, probs[..., None, :], 0.0).sum(axis=-1) < p


def test_nucleus_keep_refuses_a_quadratic_answer(capsys):
    assert not ex04.check_nucleus_keep(quadratic_definition)
    assert "O(V^2)" in capsys.readouterr().out


def test_nucleus_keep_says_float32_in_words(capsys):
    assert not ex04.check_nucleus_keep(keeps_float32)
    diagnosis = words_before_the_input(capsys.readouterr().out)  # the words come first, the arrays after
    assert "float32 arithmetic" in diagnosis and "float64" in diagnosis, diagnosis


def test_nucleus_keep_asks_for_a_boolean_mask(capsys):
    assert not ex04.check_nucleus_keep(returns_ints)
    assert "returned int64 keep-mask where bool is asked" in capsys.readouterr().out


@pytest.mark.parametrize("wrong", [delegates_to_the_threshold, delegates_to_the_filter])
def test_nucleus_keep_refuses_delegation(wrong, capsys):
    assert not ex04.check_nucleus_keep(wrong)
    out = capsys.readouterr().out
    assert "your function calls" in out, out
    assert specdec.top_p_filter([0.0, -5.0], 0.5).tolist() == [0.0, -np.inf]  # restored


def test_nucleus_keep_stops_a_quadratic_loop_quickly(capsys):
    """The definition as a Python loop is right but O(V^2): on a million tokens it would run for hours."""
    import time

    start = time.perf_counter()
    assert not ex04.check_nucleus_keep(direct_definition)
    assert time.perf_counter() - start < 10
    assert "O(V^2)" in capsys.readouterr().out


def no_sort(probs, p):  # the exclusive running sum in token order: nothing is sorted
    probs = np.asarray(probs, dtype=np.float64)
    above = np.cumsum(probs, axis=-1) - probs
    return above < p


def sorts_in_place(probs, p):  # probs.sort() sorts the caller's array: the mask comes back in sorted order
    probs = np.asarray(probs, dtype=np.float64)
    probs.sort(axis=-1)
    desc = probs[..., ::-1]
    above = np.cumsum(desc, axis=-1) - desc
    threshold = np.take_along_axis(desc, (above < p).sum(axis=-1, keepdims=True) - 1, axis=-1)
    return probs >= threshold


def sums_over_the_wrong_axis(probs, p):  # cumsum down the batch instead of along each row
    probs = np.asarray(probs, dtype=np.float64)
    desc = -np.sort(-probs, axis=-1)
    above = np.cumsum(desc, axis=0) - desc
    threshold = np.take_along_axis(desc, (above < p).sum(axis=-1, keepdims=True) - 1, axis=-1)
    return probs >= threshold


def _reference_under_another_name():
    def nucleus_threshold_full_sort(probs, p):  # the second name of notebook 04's core nucleus_threshold
        top = np.sort(probs, axis=-1)[..., ::-1]
        n = (specdec.nucleus.descending_exclusive_cumsum(top) < p).sum(axis=-1, keepdims=True)
        return np.take_along_axis(top, n - 1, axis=-1)

    return nucleus_threshold_full_sort


renamed_reference = _reference_under_another_name()


def delegates_to_a_renamed_reference(probs, p):  # an alias of the notebook's reference, plus a float64 cast
    probs = np.asarray(probs, dtype=np.float64)
    return probs >= renamed_reference(probs, p)


def test_nucleus_keep_refuses_a_renamed_reference(capsys):
    assert not ex04.check_nucleus_keep(delegates_to_a_renamed_reference)
    assert "calls nucleus_threshold_full_sort" in capsys.readouterr().out
    assert renamed_reference(np.array([0.5, 0.5]), 0.5).tolist() == [0.5]  # restored


@pytest.mark.parametrize("wrong", [no_sort, sorts_in_place, sums_over_the_wrong_axis, blog_rule])
def test_nucleus_keep_blames_ties_only_when_ties_are_the_error(wrong, capsys):
    """A tie split that comes from another bug (no sort, a sort of the input, the wrong axis) gets no tie note."""
    assert not ex04.check_nucleus_keep(wrong)
    out = capsys.readouterr().out
    assert "tied tokens" not in out, out


def test_nucleus_keep_blames_ties_when_they_are_the_error(capsys):
    assert not ex04.check_nucleus_keep(first_n_positions)
    assert "tied tokens" in capsys.readouterr().out


def test_nucleus_keep_says_it_modified_its_input(capsys):
    assert not ex04.check_nucleus_keep(sorts_in_place)
    assert "changed its input `probs` in place" in capsys.readouterr().out


def test_nucleus_keep_solution_passes():
    assert ex04.check_nucleus_keep(solution.nucleus_keep)


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        blog_rule,
        mass_above_at_most_p,
        first_n_positions,
        in_float32,
        keeps_float32,
        returns_ints,
        no_sort,
        sorts_in_place,
        sums_over_the_wrong_axis,
    ],
)
def test_nucleus_keep_rejects(wrong, capsys):
    assert not ex04.check_nucleus_keep(wrong)
    assert "✗" in capsys.readouterr().out


def test_random_cases_are_far_from_the_boundary():
    """The random cases must not depend on summation order: every mass above is > 1e-9 away from p."""
    for probs, p in ex04.keep_cases():
        above = np.where(probs[..., None, :] > probs[..., :, None], probs[..., None, :], 0.0).sum(axis=-1)
        if probs.ndim > 1 and probs.shape[-1] >= 20:
            assert np.abs(above - p).min() > 1e-9


def test_nucleus_keep_matches_package(rng):
    for _ in range(100):
        logits = rng.normal(scale=rng.uniform(0.1, 4), size=(4, 50)).round(1)
        p = float(rng.uniform(0.01, 1))
        probs = specdec.softmax(logits)
        assert np.array_equal(solution.nucleus_keep(probs, p), specdec.top_p_filter(logits, p) > -np.inf)


# --- fixed_nucleus_filter ----------------------------------------------------------------


def blog_softmax(x, temperature=1.0):
    x = x / temperature
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()


def blog_nucleus_filter(logits, p=0.9):  # the seed blog's code; VOCAB_SIZE -> logits.size
    sorted_indices = np.argsort(logits)[::-1]
    sorted_logits = logits[sorted_indices]
    with np.errstate(invalid="ignore"):
        cum_probs = np.cumsum(blog_softmax(sorted_logits))
    cutoff = np.searchsorted(cum_probs, p, side="right")
    mask = np.zeros(logits.size, dtype=bool)
    if cutoff < logits.size:
        mask[sorted_indices[cutoff:]] = True
    filtered = logits.copy()
    filtered[mask] = -np.inf
    return filtered


def blog_in_float64(logits, p=0.9):  # only the dtype fixed
    return blog_nucleus_filter(np.asarray(logits, dtype=np.float64), p)


def searchsorted_left_plus_one(logits, p=0.9):  # the crossing token fixed, ties still split by argsort
    logits = np.asarray(logits)
    sorted_indices = np.argsort(logits)[::-1]
    cum_probs = np.cumsum(specdec.softmax(logits)[sorted_indices])
    cutoff = np.searchsorted(cum_probs, p, side="left") + 1
    filtered = logits.copy()
    filtered[sorted_indices[cutoff:]] = -np.inf
    return filtered


def fixed_but_float32(logits, p=0.9):  # the right rule, probabilities rounded to float32
    logits = np.asarray(logits)
    probs = specdec.softmax(logits).astype(np.float32)
    keep = solution.nucleus_keep(probs, p)
    return np.where(keep, logits, -np.inf)


def blog_fixed_but_float32_probs(logits, p=0.9):  # fixes 1 and 2; blog_softmax keeps the logits' dtype
    sorted_indices = np.argsort(logits)[::-1]
    sorted_probs = blog_softmax(logits[sorted_indices])  # float32 for float32 logits
    mass_above = np.cumsum(sorted_probs) - sorted_probs
    threshold = sorted_probs[np.sum(mass_above < p) - 1]
    keep = np.zeros(logits.size, dtype=bool)
    keep[sorted_indices] = sorted_probs >= threshold
    return np.where(keep, logits, -np.inf)


def delegates_to_the_package(logits, p=0.9):  # returns exactly what is asked, by calling the reference
    return specdec.top_p_filter(logits, p).astype(np.float64)


def delegates_to_the_module(logits, p=0.9):
    from specdec.nucleus import top_p_filter

    return top_p_filter(logits, p).astype(np.float64)


@pytest.mark.parametrize("wrong", [delegates_to_the_package, delegates_to_the_module])
def test_fixed_filter_refuses_delegation(wrong, capsys):
    assert not ex04.check_fixed_nucleus_filter(wrong)
    assert "calls top_p_filter" in capsys.readouterr().out
    assert specdec.top_p_filter([0.0, -5.0], 0.5).tolist() == [0.0, -np.inf]  # restored


def test_fixed_filter_solution_passes():
    assert ex04.check_fixed_nucleus_filter(solution.fixed_nucleus_filter)


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        blog_nucleus_filter,
        blog_in_float64,
        searchsorted_left_plus_one,
        fixed_but_float32,
        blog_fixed_but_float32_probs,
    ],
)
def test_fixed_filter_rejects(wrong, capsys):
    assert not ex04.check_fixed_nucleus_filter(wrong)
    assert "✗" in capsys.readouterr().out


def fixed_filter_in_token_order(logits, p=0.9):  # fixes 1 and 3, but sums the probabilities in token order
    probs = specdec.softmax(logits)
    mass_above = np.cumsum(probs) - probs
    threshold = np.sort(probs[mass_above < p])[0]
    return np.where(probs >= threshold, logits, -np.inf)


def test_fixed_filter_blames_ties_only_when_ties_are_the_error(capsys):
    assert not ex04.check_fixed_nucleus_filter(fixed_filter_in_token_order)
    assert "tied tokens" not in capsys.readouterr().out
    assert not ex04.check_fixed_nucleus_filter(searchsorted_left_plus_one)
    assert "tied tokens" in capsys.readouterr().out


def test_fixed_filter_says_float32_probabilities_in_words(capsys):
    assert not ex04.check_fixed_nucleus_filter(blog_fixed_but_float32_probs)
    assert "float32 probabilities" in capsys.readouterr().out


def test_fixed_filter_matches_package(rng):
    for _ in range(200):
        logits = rng.normal(scale=rng.uniform(0.1, 4), size=int(rng.integers(1, 60))).round(1)
        p = float(rng.uniform(0.01, 1))
        assert np.array_equal(solution.fixed_nucleus_filter(logits, p), specdec.top_p_filter(logits, p))


def blog_fixed_in_place(logits, p=0.9):
    """A learner's minimal fix of the blog's code: float64, exclusive sum, ties; sums in sorted order."""
    sorted_indices = np.argsort(logits)[::-1]
    sorted_logits = np.asarray(logits, dtype=np.float64)[sorted_indices]
    sorted_probs = blog_softmax(sorted_logits)
    mass_above = np.concatenate([[0.0], np.cumsum(sorted_probs)[:-1]])  # the running sum, shifted by one place
    n_keep = np.sum(mass_above < p)
    keep = np.zeros(logits.size, dtype=bool)
    keep[sorted_indices] = sorted_probs >= sorted_probs[n_keep - 1]
    return np.where(keep, logits, -np.inf)


def direct_definition(probs, p):
    """The O(V^2) definition, as a learner might write it with a loop."""
    probs = np.asarray(probs, dtype=np.float64)
    flat = probs.reshape(-1, probs.shape[-1])
    keep = np.array([[row[row > q].sum() < p for q in row] for row in flat])
    return keep.reshape(probs.shape)


def test_other_correct_answers_pass_too(monkeypatch):
    """Correct solutions that sum in another order must not be failed by rounding: the cases keep clear of it."""
    assert ex04.check_fixed_nucleus_filter(blog_fixed_in_place)
    monkeypatch.setattr(ex04, "WIDE_VOCAB", 300)  # direct_definition is O(V^2): right, but refused on a wide row
    assert ex04.check_nucleus_keep(direct_definition)


def test_fixed_filter_random_cases_are_far_from_the_boundary():
    for logits, p in ex04.fixed_filter_cases():
        if logits.size >= 20:
            probs = specdec.softmax(logits)
            above = np.array([probs[probs > q].sum() for q in probs])
            assert np.abs(above - p).min() > 1e-9


# --- wrong answers found by the second learner read ----------------------------------------


def tiny_p_means_argmax(probs, p):  # a shortcut for tiny p: np.argmax keeps one of two tied maxima
    probs = np.asarray(probs, dtype=np.float64)
    if p < 1e-6:
        return np.arange(probs.shape[-1]) == np.argmax(probs, axis=-1)[..., None]
    return solution.nucleus_keep(probs, p)


def test_nucleus_keep_rejects_a_tiny_p_argmax(capsys):
    assert not ex04.check_nucleus_keep(tiny_p_means_argmax)
    assert "tied tokens" in capsys.readouterr().out


def mass_above_at_most_p_filter(logits, p=0.9):  # keeps a position while the mass above it is <= p
    logits = np.asarray(logits)
    probs = specdec.softmax(logits)
    sorted_probs = np.sort(probs)[::-1]
    mass_above = np.cumsum(sorted_probs) - sorted_probs
    threshold = sorted_probs[np.sum(mass_above <= p) - 1]
    return np.where(probs >= threshold, logits, -np.inf)


def searchsorted_right_plus_one(logits, p=0.9):  # the blog's cutoff + 1, ties kept: one token too many at p
    sorted_indices = np.argsort(logits)[::-1]
    sorted_probs = specdec.softmax(logits[sorted_indices])
    cum_probs = np.cumsum(sorted_probs)
    cutoff = min(np.searchsorted(cum_probs, p, side="right") + 1, logits.size)
    mask = np.zeros(logits.size, dtype=bool)
    mask[sorted_indices] = sorted_probs < sorted_probs[cutoff - 1]
    filtered = logits.copy()
    filtered[mask] = -np.inf
    return filtered


@pytest.mark.parametrize("wrong", [mass_above_at_most_p_filter, searchsorted_right_plus_one])
def test_fixed_filter_rejects_one_token_too_many_at_an_exact_boundary(wrong, capsys):
    assert not ex04.check_fixed_nucleus_filter(wrong)
    out = capsys.readouterr().out
    assert "p=0.5," in out, out


def flattens_the_batch(probs, p):  # one nucleus per first index: the rows of a (B, T, V) batch are merged
    probs = np.asarray(probs, dtype=np.float64)
    rows = probs.reshape(probs.shape[0], -1) if probs.ndim > 2 else probs
    return solution.nucleus_keep(rows, p).reshape(probs.shape)


def test_nucleus_keep_names_the_wrong_row_of_a_batch(capsys):
    assert not ex04.check_nucleus_keep(flattens_the_batch)
    out = capsys.readouterr().out
    assert "(2, 3, 20)" in out and "row [0, " in out, out
    arrays = the_input(out)
    assert "..." not in arrays and "…" not in arrays, out  # the row is shown whole, not cut short


# --- the mass above as a running sum minus the token: right in exact arithmetic, wrong in floats ------


def keep_by_subtraction(probs, p):  # float64 throughout, ties kept, but the mass above is cumsum - top
    probs = np.asarray(probs, dtype=np.float64)
    desc = -np.sort(-probs, axis=-1)
    above = np.cumsum(desc, axis=-1) - desc  # (0.4 + 0.3) - 0.3 is 0.39999999999999997, not 0.4
    threshold = np.take_along_axis(desc, (above < p).sum(axis=-1, keepdims=True) - 1, axis=-1)
    return probs >= threshold


def blog_fixed_by_subtraction(logits, p=0.9):  # the three fixes, but the exclusive sum as cum_probs - sorted_probs
    sorted_indices = np.argsort(logits)[::-1]
    sorted_probs = specdec.softmax(logits[sorted_indices])
    mass_above = np.cumsum(sorted_probs) - sorted_probs
    n_keep = np.sum(mass_above < p)
    keep = np.zeros(logits.size, dtype=bool)
    keep[sorted_indices] = sorted_probs >= sorted_probs[n_keep - 1]
    return np.where(keep, logits, -np.inf)


def test_a_subtraction_really_rounds_below_a_decimal_boundary():
    tenths = np.array([0.4, 0.3, 0.2, 0.1])
    assert specdec.nucleus.descending_exclusive_cumsum(tenths)[1] == 0.4
    assert (np.cumsum(tenths) - tenths)[1] < 0.4
    assert keep_by_subtraction(tenths, 0.4).tolist() == [True, True, False, False]
    assert solution.nucleus_keep(tenths, 0.4).tolist() == [True, False, False, False]


def test_nucleus_keep_rejects_the_mass_above_by_subtraction_and_says_so(capsys):
    assert not ex04.check_nucleus_keep(keep_by_subtraction)
    out = capsys.readouterr().out
    diagnosis = words_before_the_input(out)
    for words in [
        "running sum minus the token",
        "np.cumsum(top) - top",
        "0.39999999999999997",
        "p=0.4",
        "descending_exclusive_cumsum",
    ]:
        assert words in diagnosis, out
    assert "[0.4, 0.3, 0.2, 0.1]" in the_input(out), out


def test_fixed_filter_rejects_the_mass_above_by_subtraction_and_says_so(capsys):
    assert not ex04.check_fixed_nucleus_filter(blog_fixed_by_subtraction)
    out = capsys.readouterr().out
    diagnosis = words_before_the_input(out)
    for words in ["running sum minus the token", "0.49999999999999994", "p=0.5", "descending_exclusive_cumsum"]:
        assert words in diagnosis, out


def test_nucleus_keep_refuses_the_cores_threshold_under_its_second_name(capsys):
    """In the notebook, the core's nucleus_threshold keeps a second name once Going further redefines the first."""
    namespace = {"np": np, "specdec": specdec}
    exec(  # a stand-in for the notebook's namespace after the whole notebook ran
        "def nucleus_threshold(probs, p):\n"
        "    top = np.sort(np.asarray(probs, dtype=np.float64), axis=-1)[..., ::-1]\n"
        "    n = (specdec.nucleus.descending_exclusive_cumsum(top) < p).sum(axis=-1, keepdims=True)\n"
        "    return np.take_along_axis(top, n - 1, axis=-1)\n"
        "nucleus_threshold_full_sort = nucleus_threshold\n"
        "nucleus_threshold = specdec.nucleus.nucleus_threshold\n"
        "def nucleus_keep(probs, p):\n"
        "    return np.asarray(probs) >= nucleus_threshold_full_sort(probs, p)\n",
        namespace,
    )
    assert not ex04.check_nucleus_keep(namespace["nucleus_keep"])
    assert "calls nucleus_threshold" in capsys.readouterr().out


# --- wrong answers from the timed reads after the restructure: each named, diagnosis first ------------


def one_row_only(probs, p):  # right on one row; on a batch, np.cumsum flattens it and top[n - 1] picks a row
    probs = np.asarray(probs, dtype=np.float64)
    top = -np.sort(-probs)
    above = np.concatenate([[0.0], np.cumsum(top)[:-1]])
    return probs >= top[(above < p).sum() - 1]


def threshold_at_index_n(probs, p):  # the crossing token is at index n - 1; index n is the token after it
    probs = np.asarray(probs, dtype=np.float64)
    top = -np.sort(-probs, axis=-1)
    n = (specdec.nucleus.descending_exclusive_cumsum(top) < p).sum(axis=-1, keepdims=True)
    return probs >= np.take_along_axis(top, np.minimum(n, top.shape[-1] - 1), axis=-1)


def inclusive_running_sum(probs, p):  # counts the positions whose running sum *including* the token is < p
    probs = np.asarray(probs, dtype=np.float64)
    top = -np.sort(-probs, axis=-1)
    n = np.maximum((np.cumsum(top, axis=-1) < p).sum(axis=-1, keepdims=True), 1)
    return probs >= np.take_along_axis(top, n - 1, axis=-1)


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (
            one_row_only,
            [
                "your function handles one row but not a batch of shape (",
                "axis=-1",
                "[..., ::-1]",
                "keepdims=True",
                "np.take_along_axis",
            ],
        ),
        (threshold_at_index_n, ["keeps 3 tokens where the nucleus has 2", "index n - 1", "not at index n"]),
        (inclusive_running_sum, ["keeps 1 token where the nucleus has 2", "crossing token", "include each token"]),
    ],
)
def test_nucleus_keep_names_the_mistake_first(wrong, words, capsys):
    assert not ex04.check_nucleus_keep(wrong)
    out = capsys.readouterr().out
    for word in words:
        assert word in words_before_the_input(out), out
    assert out.count("\n") == 1, out  # one line, the arrays after the words


def test_a_quadratic_answer_is_told_a_magnitude_in_words(capsys):
    assert not ex04.check_nucleus_keep(direct_definition)
    out = capsys.readouterr().out
    assert "far too long" in out and "O(V^2)" in out, out
    assert not re.search(r"about [\d,]{4,} s\b", out), out  # no seven-digit count of seconds


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(90, "about 2 minutes"), (4_000, "about 67 minutes"), (9_000, "about 2 hours"), (3_491_008, "about 6 weeks")],
)
def test_durations_are_said_as_magnitudes(seconds, words):
    assert ex04.duration_words(seconds) == words


def fixed_with_two_softmaxes(logits, p=0.9):  # hint (2) read literally: the threshold from the sorted softmax,
    sorted_indices = np.argsort(logits)[::-1]  # compared with the probabilities of a second softmax call
    sorted_probs = specdec.softmax(logits[sorted_indices])
    mass_above = np.concatenate([[0.0], np.cumsum(sorted_probs)[:-1]])
    cutoff = np.searchsorted(mass_above, p, side="left")
    probs = specdec.softmax(logits)  # token order: the sums add in another order, the last bit differs
    return np.where(probs >= sorted_probs[cutoff - 1], logits, -np.inf)


def test_fixed_filter_names_two_softmax_calls_and_keeps_the_arrays_short(capsys):
    assert not ex04.check_fixed_nucleus_filter(fixed_with_two_softmaxes)
    out = capsys.readouterr().out
    for words in ["two probability arrays come from different softmax calls", "last bit", "compare within it"]:
        assert words in words_before_the_input(out), out
    assert out.count("\n") == 1, out
    assert "expected to keep tokens [3, 5, 11, 12, 15, 16], got [5, 11, 12, 15, 16]" in out, out
    assert len(out) < 900, out  # the 20 logits once, not three arrays of 20 values


def test_fixed_filter_blog_rule_is_told_the_crossing_token_is_missing(capsys):
    assert not ex04.check_fixed_nucleus_filter(blog_nucleus_filter)
    words = words_before_the_input(capsys.readouterr().out)
    assert "keeps 0 tokens where the nucleus has 1" in words and "crossing token" in words, words


def test_the_hints_name_the_same_array_and_show_take_along_axis():
    prose = notebook_prose("04_top_p.ipynb")
    assert "from the same array" in prose  # exercise 2's hint (2): one softmax call, not two
    assert "np.take_along_axis(np.array(" in prose  # exercise 1's hint: a one-line example
