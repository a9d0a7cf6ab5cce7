"""Checkers for the exercises of notebook 03 (top-k).

check_kth_largest(fn):  fn(x, k) -> the k-th largest value of each row, shape (..., 1)
check_top_k_filter(fn): fn(logits, k) -> logits with -inf outside the top k (ties with the k-th kept)
check_top_k_test(fn):   fn(logits, k, filtered) -> True iff `filtered` is a correct top-k result
"""

import numpy as np

from specdec.exercises import call, show, verdict

NEG_INF = -np.inf


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


def check_cases(name: str, fn, cases: list[tuple], reference, same) -> bool:
    """Like check_against, but with a comparison that also insists on the shape."""
    for args in cases:
        got, error = call(fn, args)
        if error is not None:
            return verdict(name, error, len(cases))
        expected = reference(*args)
        if not same(got, expected):
            shape = np.shape(got)
            note = f" (shape {shape}, expected {expected.shape})" if shape != expected.shape else ""
            return verdict(name, f"for input {show(args)} expected {show(expected)}, got {show(got)}{note}", len(cases))
    return verdict(name, None, len(cases))


def kth_cases() -> list[tuple]:
    rng = np.random.default_rng(3)
    return [
        (np.array([3.0, 1.0, 4.0, 1.0, 5.0]), 2),
        (np.array([2.0, 1.0, 1.0, 1.0, 0.5]), 2),  # the 2nd largest is tied
        (np.array([2.0, 1.0, 1.0, 1.0, 0.5]), 3),  # the 3rd largest is still 1.0, not 0.5
        (np.array([5.0, 5.0, 1.0]), 1),  # tied maximum
        (np.array([5.0, 5.0, 1.0]), 2),
        (np.array([3.0, 1.0, 2.0]), 3),  # k = V: the smallest
        (np.array([0.0, -np.inf, -np.inf, 1.0]), 3),  # the 3rd largest is -inf
        (np.array([[4, 9, 2], [7, 7, 1]]), 2),  # integers, batched
        (rng.normal(size=(4, 10)), 3),  # batched
        (rng.normal(size=(2, 3, 7)).round(1), 7),  # two leading axes, ties from rounding
        (rng.normal(size=(8, 50)).astype(np.float32), 10),
    ]


def check_kth_largest(fn) -> bool:
    """fn(x, k) must return the k-th largest value of every row, keeping the axis: shape (..., 1)."""
    return check_cases("kth_largest_value", fn, kth_cases(), reference_kth_largest, same_values)


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
        (np.array([0.3, -1.2, 2.5]), 3),  # k = V keeps everything
        (np.array([0.3, -1.2, 2.5]), 10),  # k > V keeps everything
        (np.array([0.0, -np.inf, 1.0, -np.inf]), 3),  # fewer finite logits than k
        (np.array([0.0, -np.inf, 1.0, -np.inf]), 1),
        (batch, 2),  # batched: each row has its own threshold
        (rng.normal(size=(2, 2, 6)), 3),
        (np.array([[3, 1, 2], [5, 5, 0]]), 1),  # integer logits: the result must be floating
        (rng.normal(size=12).astype(np.float32), 5),
        (rng.normal(size=(8, 50)).round(1), 10),  # many ties
    ]


def check_top_k_filter(fn) -> bool:
    """fn(logits, k) must keep every logit >= the k-th largest of its row and set the rest to -inf.

    Also checked: the input array is not modified, and integer logits give a floating result.
    """
    cases = top_k_cases()
    for logits, k in cases:
        pristine = logits.copy()
        got, error = call(fn, (logits, k))
        if error is not None:
            return verdict("top_k_keep_ties", error, len(cases))
        if not np.array_equal(logits, pristine):
            return verdict(
                "top_k_keep_ties",
                f"your function modified its input: logits {show(pristine)} became {show(logits)}"
                " (work on a copy, the caller still needs the original)",
                len(cases),
            )
        expected = reference_top_k(logits, k)
        if not same_filtered(got, expected):
            return verdict(
                "top_k_keep_ties",
                f"for logits {show(logits)}, k={k} expected {show(expected)}, got {show(got)}",
                len(cases),
            )
    return verdict("top_k_keep_ties", None, len(cases))


def top_k_test_cases() -> list[tuple]:
    """(logits, k, filtered, should_accept, why) for the test-writing exercise."""
    blog = np.array([0.1, 0.5, 1.2, 0.3, 0.9])
    ties = np.array([2.0, 1.0, 1.0, 1.0, 0.5])
    masked = np.array([0.0, -np.inf, 1.0, -np.inf])
    batch = np.array([[0.0, 1.0, 2.0, 3.0], [10.0, 11.0, 12.0, 13.0]])
    rng = np.random.default_rng(31)
    many = rng.normal(size=(4, 30)).round(1)
    inf = NEG_INF
    return [
        (blog, 3, reference_top_k(blog, 3), True, "a correct result without ties"),
        (ties, 2, reference_top_k(ties, 2), True, "a correct result: all three tokens tied with the 2nd largest stay"),
        (masked, 3, reference_top_k(masked, 3), True, "a correct result: only 2 logits are finite, both are kept"),
        (blog, 5, blog.copy(), True, "a correct result: k = V keeps everything"),
        (blog, 9, blog.copy(), True, "a correct result: k > V keeps everything"),
        (np.array([4.0, 4.0, 1.0]), 1, np.array([4.0, 4.0, inf]), True, "a correct result: a tied maximum"),
        (batch, 2, reference_top_k(batch, 2), True, "a correct batched result"),
        (many, 10, reference_top_k(many, 10), True, "a correct batched result with many ties"),
        (blog.astype(np.float32), 2, reference_top_k(blog, 2).astype(np.float32), True, "a correct float32 result"),
        (ties, 2, np.array([2.0, 1.0, inf, inf, inf]), False, "wrong: drops tokens tied with the 2nd largest"),
        (blog, 3, np.array([0.1, inf, 1.2, inf, 0.9]), False, "wrong: keeps 0.1 but drops the larger 0.5"),
        (blog, 3, np.array([inf, inf, 1.2, inf, 0.9]), False, "wrong: keeps only 2 tokens"),
        (blog, 2, np.array([inf, 0.5, 1.2, inf, 0.9]), False, "wrong: keeps 3 tokens"),
        (blog, 3, np.array([inf, -0.7, 0.0, inf, -0.3]), False, "wrong: the kept logits were changed"),
        (blog, 3, np.array([0.0, 0.5, 1.2, 0.0, 0.9]), False, "wrong: dropped logits set to 0, not -inf"),
        (blog, 3, np.array([1.2, 0.9, 0.5]), False, "wrong: returns only the kept values (shape changed)"),
        (blog, 3, np.array([np.nan, 0.5, 1.2, np.nan, 0.9]), False, "wrong: NaN instead of -inf"),
        (blog, 1, np.full(5, inf), False, "wrong: keeps nothing"),
        (batch, 2, np.array([[inf] * 4, [inf, inf, 12.0, 13.0]]), False, "wrong: one threshold for the whole batch"),
        (masked, 3, np.array([inf, inf, 1.0, inf]), False, "wrong: drops a finite logit although k > #finite"),
    ]


def check_top_k_test(fn) -> bool:
    """fn(logits, k, filtered) -> bool must accept every correct top-k result and reject every wrong one."""
    cases = top_k_test_cases()
    for logits, k, filtered, should_accept, why in cases:
        got, error = call(fn, (logits.copy(), k, filtered.copy()))
        if error is not None:
            return verdict("top_k_result_ok", error, len(cases))
        if not isinstance(got, (bool, np.bool_)):
            return verdict("top_k_result_ok", f"must return True or False, got {show(got)}", len(cases))
        if bool(got) != should_accept:
            said = "accepted" if got else "rejected"
            return verdict(
                "top_k_result_ok",
                f"for logits {show(logits)}, k={k}, filtered {show(filtered)}: your test {said} it, but this is {why}",
                len(cases),
            )
    return verdict("top_k_result_ok", None, len(cases))
