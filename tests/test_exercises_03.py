"""Notebook 03's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import notebook_prose, words_before_the_input

import specdec
import specdec.topk
from checkers import ex03
from specdec import top_k_filter as package_top_k

SOLUTION_PATH = Path(__file__).resolve().parent.parent / "solutions" / "ex03_top_k.py"
spec = importlib.util.spec_from_file_location("ex03_top_k", SOLUTION_PATH)
solution = importlib.util.module_from_spec(spec)
spec.loader.exec_module(solution)


def stub(*args):
    raise NotImplementedError


# --- kth_largest_value -------------------------------------------------------------------


def kth_smallest(x, k):  # partitions at k - 1: the k-th *smallest*
    return np.partition(x, k - 1, axis=-1)[..., k - 1 : k]


def kth_without_keepdims(x, k):  # right value, but shape (...,) does not broadcast against (..., V)
    return np.partition(x, -k, axis=-1)[..., -k]


def kth_distinct(x, k):  # the k-th largest *distinct* value: wrong as soon as there are ties
    return np.apply_along_axis(lambda row: np.unique(row)[-k], -1, np.asarray(x))[..., None]


def kth_ascending_slice(x, k):  # sorts ascending, then reads position k - 1 as if descending
    return np.sort(x, axis=-1)[..., k - 1 : k]


def kth_in_float32(x, k):  # right positions, but float32 arithmetic rounds float64 values
    x = np.asarray(x, dtype=np.float32)
    return np.partition(x, x.shape[-1] - k, axis=-1)[..., x.shape[-1] - k :][..., :1]


def kth_calls_the_package(x, k):  # the package's kth_largest is this exercise's answer
    return specdec.topk.kth_largest(np.asarray(x), k)


def kth_of_the_whole_batch(x, k):  # one value for the whole batch, broadcast to every row
    x = np.asarray(x)
    return np.full(x.shape[:-1] + (1,), np.partition(x.ravel(), x.size - k)[x.size - k])


def test_kth_largest_solution_passes():
    assert ex03.check_kth_largest(solution.kth_largest_value)


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        kth_smallest,
        kth_without_keepdims,
        kth_distinct,
        kth_ascending_slice,
        kth_in_float32,
        kth_calls_the_package,
        kth_of_the_whole_batch,
    ],
)
def test_kth_largest_rejects(wrong, capsys):
    assert not ex03.check_kth_largest(wrong)
    assert "✗" in capsys.readouterr().out


def test_kth_largest_says_float32_in_words(capsys):
    assert not ex03.check_kth_largest(kth_in_float32)
    out = capsys.readouterr().out
    assert "float32" in out and "float64" in out


def test_kth_largest_says_it_calls_the_package(capsys):
    assert not ex03.check_kth_largest(kth_calls_the_package)
    assert "kth_largest" in capsys.readouterr().out
    assert specdec.topk.kth_largest.__module__ == "specdec.topk"  # restored afterwards


# --- top_k_keep_ties ---------------------------------------------------------------------


def exactly_k(logits, k):  # keeps exactly k tokens: the tie is broken by token order
    x = np.asarray(logits, dtype=np.float64)
    if k >= x.shape[-1]:
        return x.copy()
    drop = np.argsort(-x, axis=-1, kind="stable")[..., k:]
    out = x.copy()
    np.put_along_axis(out, drop, -np.inf, axis=-1)
    return out


def strict_greater(logits, k):  # x > k-th largest: drops the k-th itself and its ties
    x = np.asarray(logits, dtype=np.float64)
    if k >= x.shape[-1]:
        return x.copy()
    return np.where(x > solution.kth_largest_value(x, k), x, -np.inf)


def in_place(logits, k):  # right values, but writes -inf into the caller's array
    x = np.asarray(logits)
    if k < x.shape[-1] and np.issubdtype(x.dtype, np.floating):
        x[x < solution.kth_largest_value(x, k)] = -np.inf
    return x


def crashes_when_k_exceeds_vocab(logits, k):  # np.partition with kth = V - k < 0 goes out of range
    x = np.asarray(logits, dtype=np.float64)
    j = x.shape[-1] - k
    return np.where(x >= np.partition(x, j, axis=-1)[..., j : j + 1], x, -np.inf)


def global_threshold(logits, k):  # one threshold for the whole batch instead of one per row
    x = np.asarray(logits, dtype=np.float64)
    if k >= x.shape[-1]:
        return x.copy()
    return np.where(x >= np.sort(x.ravel())[-k], x, -np.inf)


def copy_keeps_dtype(logits, k):  # a copy in the input's dtype: integer logits cannot hold -inf
    out = np.array(logits, copy=True)
    if k < out.shape[-1]:
        out[out < solution.kth_largest_value(out, k)] = -np.inf
    return out


def calls_the_package(logits, k):  # the package's top_k_filter is the function this exercise asks for
    return specdec.top_k_filter(logits, k)


def calls_the_imported_name(logits, k):  # the same, through a name imported from specdec
    return package_top_k(logits, k)


def always_float32(logits, k):  # right tokens, but float64 logits come back rounded to float32
    out = np.asarray(logits).astype(np.float32)
    if k < out.shape[-1]:
        out[out < solution.kth_largest_value(out, k)] = -np.inf
    return out


def very_negative_instead_of_inf(logits, k):  # -1e30 is not probability 0: softmax gives it a tiny weight
    x = np.asarray(logits, dtype=np.float64)
    if k >= x.shape[-1]:
        return x.copy()
    return np.where(x >= solution.kth_largest_value(x, k), x, -1e30)


def returns_the_mask(logits, k):  # which tokens survive, not the filtered logits
    x = np.asarray(logits, dtype=np.float64)
    return x >= solution.kth_largest_value(x, min(k, x.shape[-1]))


def asarray_is_not_a_copy(logits, k):  # np.asarray(float64 array, dtype=float) is the caller's array itself
    x = np.asarray(logits, dtype=np.float64)
    if k < x.shape[-1]:
        x[x < solution.kth_largest_value(x, k)] = -np.inf
    return x


def early_return_keeps_ints(logits, k):  # k >= V returns the integer logits as they came
    if k >= np.shape(logits)[-1]:
        return np.array(logits)
    out = np.array(logits, dtype=np.float64)
    out[out < solution.kth_largest_value(out, k)] = -np.inf
    return out


def test_top_k_solution_passes():
    assert ex03.check_top_k_filter(solution.top_k_keep_ties)


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        exactly_k,
        strict_greater,
        in_place,
        crashes_when_k_exceeds_vocab,
        global_threshold,
        copy_keeps_dtype,
        calls_the_package,
        calls_the_imported_name,
        always_float32,
        very_negative_instead_of_inf,
        returns_the_mask,
        asarray_is_not_a_copy,
        early_return_keeps_ints,
    ],
)
def test_top_k_rejects(wrong, capsys):
    assert not ex03.check_top_k_filter(wrong)
    assert "✗" in capsys.readouterr().out


def test_top_k_without_the_early_return_is_told_why_k_at_least_v_fails(capsys):
    def no_early_return(logits, k):  # np.partition with index V - k, negative once k > V
        x = np.asarray(logits, dtype=np.float64)
        j = x.shape[-1] - k
        kth = np.partition(x, j, axis=-1)[..., j : j + 1]  # (..., 1)
        return np.where(x >= kth, x, -np.inf)

    assert not ex03.check_top_k_filter(no_early_return)
    out = capsys.readouterr().out
    assert "k = 10 is at least the row length 3" in out and "before looking for the k-th largest" in out, out


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (always_float32, ["float32", "float64"]),
        (very_negative_instead_of_inf, ["must be -inf"]),
        (early_return_keeps_ints, ["integer", "floating"]),
        (returns_the_mask, ["bool"]),
        (calls_the_package, ["calls top_k_filter"]),
        (calls_the_imported_name, ["calls top_k_filter"]),
        (exactly_k, ["tied"]),
    ],
)
def test_top_k_says_what_is_wrong_in_words(wrong, words, capsys):
    assert not ex03.check_top_k_filter(wrong)
    out = capsys.readouterr().out
    for word in words:
        assert word in out, out
    assert specdec.top_k_filter is specdec.topk.top_k_filter and package_top_k is specdec.top_k_filter  # restored


def test_top_k_solution_matches_package(rng):
    import specdec

    for shape, k in [((7,), 3), ((4, 20), 5), ((2, 3, 9), 9), ((5, 11), 30)]:
        logits = rng.normal(size=shape).round(1)
        assert np.array_equal(solution.top_k_keep_ties(logits, k), specdec.top_k_filter(logits, k))


# --- top_k_result_ok ---------------------------------------------------------------------


def blog_test(logits, k, filtered):  # the seed blog: "exactly k finite values"
    return bool(np.isfinite(filtered).sum() == k)


def blog_prose(logits, k, filtered):  # the blog's prose: "never fewer than k finite logits"
    return bool(np.isfinite(filtered).sum() >= k)


def count_only(logits, k, filtered):  # the right count, but never looks at which tokens or values
    x = np.asarray(logits, dtype=np.float64)
    expected = (x >= ex03.reference_kth_largest(x, min(k, x.shape[-1]))) & (x > -np.inf)
    return bool(np.shape(filtered) == x.shape and np.isfinite(filtered).sum() == expected.sum())


def accepts_everything(logits, k, filtered):
    return True


def compares_with_the_package(logits, k, filtered):  # a copy of the filter, not a test of its properties
    expected = specdec.top_k_filter(logits, k)
    return bool(np.shape(filtered) == expected.shape and np.array_equal(filtered, expected))


def compares_with_the_module(logits, k, filtered):  # the same through specdec.topk
    return bool(np.array_equal(filtered, specdec.topk.top_k_filter(logits, k)))


def compares_with_the_imported_name(logits, k, filtered):  # the same through a name imported from specdec
    try:
        return bool(np.array_equal(filtered, package_top_k(logits, k)))
    except Exception:
        return False


def properties_without(skip):
    """The solution's properties with one of them left out: each must be needed."""

    def test(logits, k, filtered):
        x = np.asarray(logits, dtype=np.float64)
        f = np.asarray(filtered)
        if f.shape != x.shape or not np.issubdtype(f.dtype, np.floating):
            return False
        f = f.astype(np.float64)
        kept = f != -np.inf
        if skip != "values" and (np.isnan(f).any() or not np.array_equal(f[kept], x[kept])):
            return False
        vocab = x.shape[-1]
        for row, row_kept in zip(x.reshape(-1, vocab), kept.reshape(-1, vocab), strict=True):
            finite = row > -np.inf
            kept_values, dropped = row[row_kept], row[finite & ~row_kept]
            if skip != "enough" and kept_values.size < min(k, finite.sum()):
                return False
            if kept_values.size == 0:
                continue
            if skip == "strict" and dropped.size and kept_values.min() < dropped.max():
                return False
            if skip != "strict" and dropped.size and kept_values.min() <= dropped.max():
                return False
            if skip != "not_too_many" and (kept_values > kept_values.min()).sum() >= k:
                return False
        return True

    test.__name__ = f"properties_without_{skip}"
    return test


def treats_the_batch_as_one_row(logits, k, filtered):  # right properties, but on the flattened batch
    x, f = np.asarray(logits, dtype=np.float64), np.asarray(filtered)
    if x.ndim == 1:
        return solution.top_k_result_ok(x, k, f)
    return f.shape == x.shape and solution.top_k_result_ok(x.ravel(), k, f.ravel())


def insists_on_float64(logits, k, filtered):  # a correct float32 result is still correct
    return np.asarray(filtered).dtype == np.float64 and solution.top_k_result_ok(logits, k, filtered)


def test_top_k_test_solution_passes():
    assert ex03.check_top_k_test(solution.top_k_result_ok)


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        blog_test,
        blog_prose,
        count_only,
        accepts_everything,
        compares_with_the_package,
        compares_with_the_module,
        compares_with_the_imported_name,
        properties_without("values"),
        properties_without("enough"),
        properties_without("strict"),
        properties_without("not_too_many"),
        treats_the_batch_as_one_row,
        insists_on_float64,
    ],
)
def test_top_k_test_rejects(wrong, capsys):
    assert not ex03.check_top_k_test(wrong)
    assert "✗" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong", [compares_with_the_package, compares_with_the_module, compares_with_the_imported_name]
)
def test_top_k_test_says_a_copy_of_the_filter_is_not_a_test(wrong, capsys):
    assert not ex03.check_top_k_test(wrong)
    out = capsys.readouterr().out
    assert "calls top_k_filter" in out and "properties" in out, out
    assert specdec.top_k_filter is specdec.topk.top_k_filter and package_top_k is specdec.top_k_filter  # restored


def test_the_package_filter_is_restored_even_when_the_test_raises():
    original = specdec.topk.top_k_filter

    def raises(logits, k, filtered):
        specdec.top_k_filter(logits, k)
        raise KeyboardInterrupt  # not caught by the checker: only `finally` can restore the package

    with pytest.raises(KeyboardInterrupt):
        ex03.check_top_k_test(raises)
    assert specdec.topk.top_k_filter is original and specdec.top_k_filter is original


def test_top_k_test_solution_agrees_with_package(rng):
    """The property test accepts the package's output on random (tie-rich) inputs and rejects a perturbation."""
    import specdec

    for _ in range(50):
        logits = rng.normal(size=(3, 12)).round(1)
        k = int(rng.integers(1, 14))
        filtered = specdec.top_k_filter(logits, k)
        assert solution.top_k_result_ok(logits, k, filtered)
        if k < 12:
            assert not solution.top_k_result_ok(logits, k, exactly_k(logits, k)) or np.array_equal(
                exactly_k(logits, k), filtered
            )


def kth_by_sorting(x, k):  # right values by a full sort: exercise 1 asks for O(V), exercise 2 does not
    return np.sort(x, axis=-1)[..., -k:][..., :1]


def test_other_correct_answers_pass_too():
    assert ex03.check_top_k_filter(
        lambda logits, k: np.where(
            np.asarray(logits) >= kth_by_sorting(logits, min(k, np.shape(logits)[-1])), logits, -np.inf
        )
    )


def test_a_copy_of_the_notebook_filter_is_caught_too(capsys):
    """The notebook has its own top_k_filter (and the learner's top_k_keep_ties): comparing with them is copying too."""
    namespace = {"np": np, "specdec": specdec}
    exec(  # a stand-in for the notebook's namespace
        "def top_k_filter(logits, k):\n"
        "    return specdec.topk.top_k_filter(logits, k)\n"
        "top_k_keep_ties = top_k_filter\n"
        "def against_notebook_filter(logits, k, filtered):\n"
        "    return bool(np.array_equal(filtered, top_k_filter(logits, k)))\n"
        "def against_own_answer(logits, k, filtered):\n"
        "    return bool(np.array_equal(filtered, top_k_keep_ties(logits, k)))\n",
        namespace,
    )
    notebook_filter = namespace["top_k_filter"]
    for name in ["against_notebook_filter", "against_own_answer"]:
        assert not ex03.check_top_k_test(namespace[name])
        out = capsys.readouterr().out
        assert "your function calls top_k_" in out and "properties" in out, out
    assert namespace["top_k_filter"] is notebook_filter and namespace["top_k_keep_ties"] is notebook_filter


# --- wrong answers from a learner read ------------------------------------------------------


def kth_partitions_in_place(x, k):  # the method x.partition reorders the caller's array itself
    vocab = x.shape[-1]
    x.partition(vocab - k, axis=-1)
    return x[..., vocab - k : vocab - k + 1]


def kth_full_sort(x, k):  # right values, but a full O(V log V) sort where np.partition is asked
    return np.sort(x, axis=-1)[..., -k][..., None]


def kth_by_argsort(x, k):  # the same through argsort: still a full sort
    x = np.asarray(x)
    return np.take_along_axis(x, np.argsort(x, axis=-1)[..., -k:][..., :1], axis=-1)


def kth_negative_slice(x, k):  # [..., -k:-k + 1] is [..., -1:0] at k = 1: an empty slice
    return np.partition(x, -k, axis=-1)[..., -k : -k + 1]


def kth_len_of_batch(x, k):  # len(x) counts the rows of a batch, not the tokens of a row
    j = len(x) - k
    return np.partition(x, j, axis=-1)[..., j : j + 1]


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (kth_partitions_in_place, ["changed its input `x` in place", "np.partition(x"]),
        (kth_full_sort, ["np.sort", "O(V)"]),
        (kth_by_argsort, ["np.argsort", "O(V)"]),
        (kth_by_sorting, ["np.sort", "O(V)"]),
        (kth_negative_slice, ["empty", "-1:0"]),
        (kth_len_of_batch, ["empty", "x.shape[-1]"]),
    ],
)
def test_kth_largest_rejects_the_learner_read_answers_in_words(wrong, words, capsys):
    assert not ex03.check_kth_largest(wrong)
    out = capsys.readouterr().out
    for word in words:
        assert word in out, out
    assert "keep the last axis" not in out, out  # the axis was kept: the slice was empty


def returns_the_input_when_nothing_is_dropped(logits, k):  # k >= V hands back the caller's own array
    x = np.asarray(logits)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if k >= x.shape[-1]:
        return x
    out = x.copy()
    out[out < solution.kth_largest_value(out, k)] = -np.inf
    return out


def filter_with_the_in_place_kth(logits, k):  # exercise 2's hint with the in-place kth above in place of kth_largest
    out = np.asarray(logits).astype(np.result_type(np.asarray(logits).dtype, np.float32))
    if k >= out.shape[-1]:
        return out
    out[out < kth_partitions_in_place(out, k)] = -np.inf
    return out


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (returns_the_input_when_nothing_is_dropped, ["the input array itself", "new array"]),
        (filter_with_the_in_place_kth, ["wrong places", "in place", "np.partition(x"]),
    ],
)
def test_top_k_rejects_the_learner_read_answers_in_words(wrong, words, capsys):
    assert not ex03.check_top_k_filter(wrong)
    out = capsys.readouterr().out
    for word in words:
        assert word in out, out


def rebuilds_with_np_sort(logits, k, filtered):  # a second filter, not a check of properties
    x = np.asarray(logits, dtype=np.float64)
    kth = np.sort(x, axis=-1)[..., -min(k, x.shape[-1])][..., None]
    expected = np.where(x >= kth, x, -np.inf)
    return bool(np.shape(filtered) == x.shape and np.array_equal(filtered, expected))


def rebuilds_with_np_partition(logits, k, filtered):  # the same with np.partition
    x = np.asarray(logits, dtype=np.float64)
    j = x.shape[-1] - min(k, x.shape[-1])
    expected = np.where(x >= np.partition(x, j, axis=-1)[..., j : j + 1], x, -np.inf)
    return bool(np.shape(filtered) == x.shape and np.array_equal(filtered, expected))


def rebuilds_with_the_package_kth(logits, k, filtered):  # the package's kth_largest: the filter again
    x = np.asarray(logits, dtype=np.float64)
    expected = np.where(x >= specdec.topk.kth_largest(x, min(k, x.shape[-1])), x, -np.inf)
    return bool(np.shape(filtered) == x.shape and np.array_equal(filtered, expected))


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (rebuilds_with_np_sort, ["np.sort", "properties"]),
        (rebuilds_with_np_partition, ["np.partition", "properties"]),
        (rebuilds_with_the_package_kth, ["kth_largest", "properties"]),
    ],
)
def test_top_k_test_rejects_a_rebuilt_filter(wrong, words, capsys):
    assert not ex03.check_top_k_test(wrong)
    out = capsys.readouterr().out
    for word in words:
        assert word in out, out
    assert specdec.topk.kth_largest.__module__ == "specdec.topk"


def test_top_k_test_rejects_a_filter_rebuilt_from_the_learners_own_kth(capsys):
    namespace = {"np": np}
    exec(  # a stand-in for the notebook's namespace, holding the learner's exercise 1 answer
        "def kth_largest_value(x, k):\n"
        "    j = x.shape[-1] - k\n"
        "    return np.partition(x, j, axis=-1)[..., j : j + 1]\n"
        "def rebuilds_with_own_kth(logits, k, filtered):\n"
        "    x = np.asarray(logits, dtype=np.float64)\n"
        "    expected = np.where(x >= kth_largest_value(x, min(k, x.shape[-1])), x, -np.inf)\n"
        "    return bool(np.shape(filtered) == x.shape and np.array_equal(filtered, expected))\n",
        namespace,
    )
    own = namespace["kth_largest_value"]
    assert not ex03.check_top_k_test(namespace["rebuilds_with_own_kth"])
    out = capsys.readouterr().out
    assert "kth_largest_value" in out and "properties" in out, out
    assert namespace["kth_largest_value"] is own


def test_numpy_is_restored_after_every_checker():
    originals = {name: getattr(np, name) for name in ["sort", "argsort", "partition", "argpartition"]}
    ex03.check_kth_largest(kth_full_sort)
    ex03.check_top_k_test(rebuilds_with_np_sort)
    ex03.check_top_k_test(solution.top_k_result_ok)
    assert {name: getattr(np, name) for name in originals} == originals
    assert "sorted" not in globals()


# --- wrong answers from a second learner read: sorts through array methods ------------------


def kth_by_the_sort_method(x, k):  # the method y.sort() is a full sort too
    y = x.copy()
    y.sort(axis=-1)
    return y[..., -k:][..., :1]


def kth_by_sorting_an_asarray_copy(x, k):  # np.asarray drops any wrapper: the sort must still be seen
    y = np.array(np.asarray(x))
    y.sort(axis=-1)
    vocab = y.shape[-1]
    return y[..., vocab - k : vocab - k + 1]


def kth_by_the_argsort_method(x, k):  # x.argsort() sorts the indices
    return np.take_along_axis(x, x.argsort(axis=-1)[..., -k:][..., :1], axis=-1)


def kth_by_lexsort(x, k):  # np.lexsort with one key is an argsort
    order = np.lexsort(x[np.newaxis], axis=-1)  # (..., V)
    return np.take_along_axis(x, order[..., -k:][..., :1], axis=-1)


def kth_by_a_sorted_list(x, k):  # list.sort() on the rows, one at a time
    def one_row(row):
        values = row.tolist()
        values.sort()
        return values[-k]

    return np.apply_along_axis(one_row, -1, x)[..., None].astype(x.dtype)


def kth_by_heapq(x, k):  # heapq.nlargest keeps a heap of k values, not np.partition (minor)
    import heapq

    return np.apply_along_axis(lambda row: heapq.nlargest(k, row)[-1], -1, x)[..., None].astype(x.dtype)


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (kth_by_the_sort_method, ["method .sort()", "O(V log V)", "np.partition(x, j"]),
        (kth_by_sorting_an_asarray_copy, ["method .sort()", "O(V log V)"]),
        (kth_by_the_argsort_method, ["method .argsort()", "O(V log V)"]),
        (kth_by_lexsort, ["np.lexsort", "O(V log V)"]),
        (kth_by_a_sorted_list, ["list method .sort()", "O(V log V)"]),
        (kth_by_heapq, ["heapq.nlargest", "np.partition(x, j"]),
    ],
)
def test_kth_largest_catches_sorts_through_methods(wrong, words, capsys):
    assert not ex03.check_kth_largest(wrong)
    out = capsys.readouterr().out
    for word in words:
        assert word in out, out
    assert sys.getprofile() is None  # the watch is lifted afterwards


def kth_by_the_partition_method_on_a_copy(x, k):  # the method on a copy: O(V), the caller's x untouched
    y = np.array(x)
    vocab = y.shape[-1]
    y.partition(vocab - k, axis=-1)
    return y[..., vocab - k : vocab - k + 1]


def test_kth_largest_accepts_the_partition_method_on_a_copy():
    assert ex03.check_kth_largest(kth_by_the_partition_method_on_a_copy)


def rebuilds_with_the_sort_method(logits, k, filtered):  # the filter again, sorted through a method
    x = np.asarray(logits, dtype=np.float64)
    y = x.copy()
    y.sort(axis=-1)
    expected = np.where(x >= y[..., -min(k, x.shape[-1])][..., None], x, -np.inf)
    return bool(np.shape(filtered) == x.shape and np.array_equal(filtered, expected))


def rebuilds_with_the_partition_method(logits, k, filtered):  # the same with y.partition(j)
    x = np.asarray(logits, dtype=np.float64)
    j = x.shape[-1] - min(k, x.shape[-1])
    y = x.copy()
    y.partition(j, axis=-1)
    expected = np.where(x >= y[..., j : j + 1], x, -np.inf)
    return bool(np.shape(filtered) == x.shape and np.array_equal(filtered, expected))


def rebuilds_with_the_argpartition_method(logits, k, filtered):  # the same with x.argpartition(j)
    x = np.asarray(logits, dtype=np.float64)
    j = x.shape[-1] - min(k, x.shape[-1])
    kth = np.take_along_axis(x, x.argpartition(j, axis=-1)[..., j : j + 1], axis=-1)
    expected = np.where(x >= kth, x, -np.inf)
    return bool(np.shape(filtered) == x.shape and np.array_equal(filtered, expected))


def rebuilds_with_lexsort(logits, k, filtered):  # the same with np.lexsort
    x = np.asarray(logits, dtype=np.float64)
    kth = np.take_along_axis(x, np.lexsort(x[np.newaxis], axis=-1)[..., -min(k, x.shape[-1])][..., None], axis=-1)
    expected = np.where(x >= kth, x, -np.inf)
    return bool(np.shape(filtered) == x.shape and np.array_equal(filtered, expected))


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (rebuilds_with_the_sort_method, ["method .sort()", "properties"]),
        (rebuilds_with_the_partition_method, ["method .partition()", "properties"]),
        (rebuilds_with_the_argpartition_method, ["method .argpartition()", "properties"]),
        (rebuilds_with_lexsort, ["np.lexsort", "properties"]),
    ],
)
def test_top_k_test_catches_a_filter_rebuilt_through_methods(wrong, words, capsys):
    assert not ex03.check_top_k_test(wrong)
    out = capsys.readouterr().out
    for word in words:
        assert word in out, out
    assert sys.getprofile() is None


def test_top_k_filter_names_the_core_kth_largest_when_it_calls_the_package(capsys):
    assert not ex03.check_top_k_filter(calls_the_package)
    out = capsys.readouterr().out
    assert "kth_largest" in out and "specdec.topk" in out and "kth_largest_value" not in out, out


# --- what the notebook says about its checkers and its timings ------------------------------


def test_the_notebook_says_the_checkers_refuse_calls_and_replace_nothing():
    """The checkers watch calls (checkers.watching) and swap nothing: the prose must not say otherwise."""
    prose = notebook_prose("03_top_k.ipynb")
    assert "replaced by wrong" not in prose and "are replaced" not in prose
    assert "The checker refuses a call to `top_k_filter`, `kth_largest`" in prose


def test_the_timing_prose_promises_no_machine_dependent_gap():
    """np.partition against a sort, top_k_filter against np.partition: the gaps depend on the CPU."""
    prose = notebook_prose("03_top_k.ipynb")
    assert "well above" not in prose
    assert "usually sits above `np.partition`'s; by how much depends on the machine" in prose


# --- wrong answers from the timed reads after the restructure: each named, diagnosis first ------------


def kth_along_axis_0(x, k):  # np.partition down the batch: each column is partitioned, not each row
    j = x.shape[-1] - k
    return np.partition(x, j, axis=0)[..., j : j + 1]


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (kth_smallest, ["the 2nd smallest value of each row", "np.partition orders ascending", "index V - k"]),
        (kth_along_axis_0, ["axis 0", "axis=-1"]),
    ],
)
def test_kth_largest_names_the_mistake_first(wrong, words, capsys):
    assert not ex03.check_kth_largest(wrong)
    out = capsys.readouterr().out
    for word in words:
        assert word in words_before_the_input(out), out
    assert out.count("\n") == 1, out  # one line: a batch's rows side by side, not one per line


def top_k_through_asarray_float(logits, k):  # np.asarray(logits, dtype=float): float32 logits come back float64
    x = np.asarray(logits, dtype=float).copy()
    if k >= x.shape[-1]:
        return x
    x[x < solution.kth_largest_value(x, k)] = -np.inf
    return x


def threshold_without_the_kept_axis(logits, k):  # [..., j] instead of [..., j : j + 1]: shape (B,), not (B, 1)
    x = np.asarray(logits)
    out = x.astype(np.result_type(x.dtype, np.float32))
    if k >= out.shape[-1]:
        return out
    j = out.shape[-1] - k
    out[out < np.partition(out, j, axis=-1)[..., j]] = -np.inf
    return out


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (
            top_k_through_asarray_float,
            ["returned float64", "np.result_type(logits.dtype, np.float32)", "float32 stays float32", "float64"],
        ),
        (
            threshold_without_the_kept_axis,
            ["your threshold has shape (3,), not (3, 1)", "keep the last axis", "Exercise 1's answer"],
        ),
    ],
)
def test_top_k_names_the_mistake_first(wrong, words, capsys):
    assert not ex03.check_top_k_filter(wrong)
    out = capsys.readouterr().out
    for word in words:
        assert word in words_before_the_input(out), out
    assert out.count("\n") == 1, out


def test_top_k_test_says_which_result_it_accepted(capsys):
    assert not ex03.check_top_k_test(accepts_everything)
    out = capsys.readouterr().out
    assert words_before_the_input(out).endswith(
        "your test accepted a wrong result: it drops tokens tied with the 2nd largest"
    ), out


def test_top_k_test_names_one_threshold_for_the_whole_batch(capsys):
    assert not ex03.check_top_k_test(treats_the_batch_as_one_row)
    words = words_before_the_input(capsys.readouterr().out)
    for word in ["your test rejected a correct result", "checks the whole batch against one threshold", "row by row"]:
        assert word in words, words


def test_the_statement_says_which_dtype_the_filter_returns():
    assert "np.result_type(logits.dtype, np.float32)" in notebook_prose("03_top_k.ipynb")
    assert "float32 stays float32, integers become float64" in notebook_prose("03_top_k.ipynb")
