"""Notebook 11's exercise checker: the reference solution passes, realistic wrong answers and the stub fail."""

import warnings

import numpy as np
import pytest
from helpers import copy_of, load_solution

import specdec
from checkers import ex11
from specdec import block
from specdec.block import block_weights

solution = load_solution("ex11_block_weights")


def stub(*args):
    raise NotImplementedError


def as_float64(tokens, q, p):
    return np.asarray(tokens), np.asarray(q, dtype=np.float64), np.asarray(p, dtype=np.float64)


def weights(tokens, q, p, cap_each_step=True, per_token=False, p_shift=0):
    """w as a loop computes it, with one of the mistakes switched on."""
    tokens, q, p = as_float64(tokens, q, p)
    gamma = tokens.size
    w = np.ones(gamma + 1)
    product = 1.0
    for i in range(1, gamma + 1):
        x = tokens[i - 1]
        ratio = p[i - 1 + p_shift, x] / q[i - 1, x]
        if per_token:
            w[i] = min(1.0, ratio)
        elif cap_each_step:
            w[i] = min(1.0, w[i - 1] * ratio)
        else:
            product *= ratio
            w[i] = product
    return w


def stops(w, q, p, weighted=True, row_shift=0, last="w", at_zero=1.0, first=1.0):
    """h from w as a loop computes it, with one of the mistakes switched on."""
    q, p = np.asarray(q, dtype=np.float64), np.asarray(p, dtype=np.float64)
    gamma = w.size - 1
    h = np.ones(gamma + 1)
    h[0] = first
    for i in range(1, gamma):
        row = i - row_shift
        r = np.maximum((w[i] if weighted else 1.0) * p[row] - q[row], 0.0).sum()
        denominator = r + (1.0 - w[i])  # the statement's grouping: each wrong answer has one mistake
        if at_zero == "divide":
            h[i] = np.float64(r) / np.float64(denominator)  # 0 / 0 = nan (with a RuntimeWarning)
        else:
            h[i] = r / denominator if denominator > 0 else at_zero
    if last == "w":
        h[gamma] = w[gamma]
    else:  # the residual formula once more, with the last draft row reused: there is no q[gamma]
        r = np.maximum(w[gamma] * p[gamma] - q[gamma - 1], 0.0).sum()
        h[gamma] = r / (r + 1.0 - w[gamma]) if r + 1.0 - w[gamma] > 0 else 1.0
    return h


# --- wrong answers, each a mistake a learner can make -----------------------------------------


def no_cap(tokens, q, p):  # w_i = w_(i-1) * ratio: grows above 1
    w = weights(tokens, q, p, cap_each_step=False)
    return w, stops(np.minimum(w, 1.0), q, p)


def cap_at_the_end(tokens, q, p):  # min(1, ratio_1 ... ratio_i): a ratio above 1 banks credit
    w = np.minimum(1.0, weights(tokens, q, p, cap_each_step=False))
    return w, stops(w, q, p)


def token_ratios_only(tokens, q, p):  # min(1, p/q) per draft, as token verification's acceptance
    w = weights(tokens, q, p, per_token=True)
    return w, stops(w, q, p)


def judged_by_the_next_target_row(tokens, q, p):  # p[i] instead of p[i - 1] for the i-th draft
    w = weights(tokens, q, p, p_shift=1)
    return w, stops(w, q, p)


def plain_residual_mass(tokens, q, p):  # r_i = sum max(0, p - q): w_i not multiplied in
    w = weights(tokens, q, p)
    return w, stops(w, q, p, weighted=False)


def residual_of_the_draft_row(tokens, q, p):  # r_i from p[i - 1], q[i - 1]: off by one row
    w = weights(tokens, q, p)
    return w, stops(w, q, p, row_shift=1)


def last_from_the_residual_formula(tokens, q, p):  # h_gamma from the residual, not w_gamma
    w = weights(tokens, q, p)
    return w, stops(w, q, p, last="residual")


def divides_by_zero(tokens, q, p):  # no guard: 0 / 0 = nan where r_i + 1 - w_i = 0
    w = weights(tokens, q, p)
    return w, stops(w, q, p, at_zero="divide")


def zero_where_the_denominator_is_zero(tokens, q, p):  # a guard, but h_i = 0 instead of 1
    w = weights(tokens, q, p)
    return w, stops(w, q, p, at_zero=0.0)


def python_floats_divide_by_zero(tokens, q, p):  # float(r) / float(0) raises ZeroDivisionError
    w = weights(tokens, q, p)
    q, p = np.asarray(q, dtype=np.float64), np.asarray(p, dtype=np.float64)
    h = np.ones(w.size)
    for i in range(1, w.size - 1):
        r = float(np.maximum(w[i] * p[i] - q[i], 0.0).sum())
        h[i] = r / (r + (1.0 - float(w[i])))
    h[-1] = w[-1]
    return w, h


def h0_left_at_zero(tokens, q, p):  # h = np.zeros(gamma + 1): h_0 = 0
    w = weights(tokens, q, p)
    return w, stops(w, q, p, first=0.0)


def returns_float32(tokens, q, p):
    w, h = solution.my_block_weights(tokens, q, p)
    return w.astype(np.float32), h.astype(np.float32)


def keeps_the_input_dtype(tokens, q, p):  # np.ones(gamma + 1, dtype=p.dtype): float32 for float32 rows
    w, h = solution.my_block_weights(tokens, q, p)
    return w.astype(np.asarray(p).dtype), h.astype(np.asarray(p).dtype)


def float32_arithmetic(tokens, q, p):  # the ratios in the rows' own dtype, then float64
    tokens, q, p = np.asarray(tokens), np.asarray(q), np.asarray(p)
    gamma = tokens.size
    w = np.ones(gamma + 1)
    for i in range(1, gamma + 1):
        x = tokens[i - 1]
        w[i] = min(1.0, (p[i - 1, x] / q[i - 1, x]) * w[i - 1])  # float32 / float32 stays float32
    return w, stops(w, q, p)


def integer_weights(tokens, q, p):  # np.ones(gamma + 1, dtype=int): every fraction truncated
    w, h = solution.my_block_weights(tokens, q, p)
    return w.astype(np.int64), h.astype(np.int64)


def without_the_empty_prefix(tokens, q, p):  # gamma entries: w_1 .. w_gamma, h_1 .. h_gamma
    w, h = solution.my_block_weights(tokens, q, p)
    return w[1:], h[1:]


def as_lists(tokens, q, p):
    w, h = solution.my_block_weights(tokens, q, p)
    return w.tolist(), h.tolist()


def only_w(tokens, q, p):
    return solution.my_block_weights(tokens, q, p)[0]


def scales_p_in_place(tokens, q, p):  # right values, but p[i] *= w[i] writes over the caller's rows
    tokens, q, p = np.asarray(tokens), np.asarray(q, dtype=np.float64), np.asarray(p, dtype=np.float64)
    w = weights(tokens, q, p)
    gamma = tokens.size
    h = np.ones(gamma + 1)
    for i in range(1, gamma):
        p[i] *= w[i]  # for float64 rows, p is the caller's array
        r = np.maximum(p[i] - q[i], 0.0).sum()
        h[i] = r / (r + (1.0 - w[i])) if r + (1.0 - w[i]) > 0 else 1.0
    h[gamma] = w[gamma]
    return w, h


def delegates_block_weights(tokens, q, p):
    return specdec.block.block_weights(tokens, q, p)


def delegates_block_verify(tokens, q, p):  # asks block_verify how long a prefix it keeps
    emitted, tau = specdec.block_verify(tokens, q, p, np.random.default_rng(0))
    return solution.my_block_weights(tokens, q, p)


# --- right answers --------------------------------------------------------------------------


def vectorised(tokens, q, p):  # the ratios first, then w; the residuals of all rows at once
    tokens, q, p = as_float64(tokens, q, p)
    gamma = tokens.size
    ratio = p[np.arange(gamma), tokens] / q[np.arange(gamma), tokens]  # (gamma,)
    w = np.ones(gamma + 1)
    for i in range(gamma):
        w[i + 1] = min(1.0, ratio[i] * w[i])
    r = np.maximum(w[:gamma, None] * p[:gamma] - q, 0.0).sum(axis=-1)  # (gamma,)
    denominator = r + (1.0 - w[:gamma])
    h = np.append(np.where(denominator > 0, r / np.where(denominator > 0, denominator, 1.0), 1.0), w[gamma])
    h[0] = 1.0
    return w, h


def test_the_solution_and_the_reference_pass(capsys):
    assert ex11.check_block_weights(solution.my_block_weights)
    assert ex11.check_block_weights(copy_of(block_weights))
    assert ex11.check_block_weights(vectorised)
    assert capsys.readouterr().out.count("✓ block_weights: all") == 3
    assert not ex11.check_block_weights(block_weights)  # the reference itself, not a function of the learner's
    assert capsys.readouterr().out.startswith("✗ block_weights: you passed the package's block_weights itself")


def rounds_r_plus_one_first(tokens, q, p):  # R + 1 - w: where w_i = 1, (R + 1) - 1 is not R
    w = weights(tokens, q, p)
    q, p = np.asarray(q, dtype=np.float64), np.asarray(p, dtype=np.float64)
    h = np.ones(w.size)
    for i in range(1, w.size - 1):
        r = np.maximum(w[i] * p[i] - q[i], 0.0).sum()
        h[i] = r / (r + 1.0 - w[i]) if r + 1.0 - w[i] > 0 else 1.0
    h[-1] = w[-1]
    return w, h


def test_where_w_is_one_the_solution_and_the_reference_give_h_exactly_one():
    """R + (1 - w): where w_i = 1 the denominator is R_i itself, so h_i = 1 exactly (on `ba` and elsewhere)."""
    ba, q, p = ex11.block_weights_cases()[1]
    for w, h in (solution.my_block_weights(ba, q, p), block_weights(ba, q, p), vectorised(ba, q, p)):
        assert w[1] == 1.0 and h[1] == 1.0
    assert rounds_r_plus_one_first(ba, q, p)[1][1] == 1.0000000000000002  # a probability above 1


def test_h_a_hair_above_one_where_w_is_one_is_refused(capsys):
    """A learner who writes R + 1 - w: on the checker's `ba` case h_1 = 1.0000000000000002, refused by name."""
    assert not ex11.check_block_weights(rounds_r_plus_one_first)
    out = capsys.readouterr().out
    said = "h_1 = 1.0000000000000002, not exactly 1: R + 1 - w rounds R + 1 first; write R + (1 - w)"
    assert out.startswith("✗ block_weights: " + said)  # the diagnosis first
    assert out.index(said) < out.index("(for tokens = [1, 0], q = [[")  # the arrays after, on one line
    assert "\n" not in out.rstrip("\n")


def test_the_paper_example_is_the_first_case():
    (ab, q, p), (ba, q2, p2) = ex11.block_weights_cases()[:2]
    assert ab.tolist() == [0, 1] and ba.tolist() == [1, 0]
    np.testing.assert_allclose(q, [[2 / 3, 1 / 3]] * 2)
    np.testing.assert_allclose(p, [[1 / 3, 2 / 3]] * 3)
    for got, expected in [
        (block_weights(ab, q, p), ([1, 0.5, 1], [1, 0, 1])),
        (block_weights(ba, q2, p2), ([1, 1, 0.5], [1, 1, 0.5])),
    ]:
        np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=1e-15)
        np.testing.assert_allclose(got[1], expected[1], rtol=0, atol=1e-15)


def test_the_cases_cover_what_the_statement_names():
    cases = ex11.block_weights_cases()
    gammas = {tokens.size for tokens, _, _ in cases}
    assert 1 in gammas and max(gammas) == 6
    assert any(q.dtype == np.float32 for _, q, _ in cases)
    zero_denominator = zero_weight = False
    for tokens, q, p in cases:
        w, h = block_weights(tokens, q.astype(np.float64), p.astype(np.float64))
        r = ex11.residual_masses(w, tokens, q, p)
        zero_denominator |= any(r[i] + 1 - w[i] == 0 for i in range(1, tokens.size))
        zero_weight |= bool(w[-1] == 0)
    assert zero_denominator and zero_weight


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        (no_cap, "w grows above 1"),
        (cap_at_the_end, "caps only the product"),
        (token_ratios_only, "token verification's acceptance probability"),
        (judged_by_the_next_target_row, "by row i of p"),
        (plain_residual_mass, "plain residual mass"),
        (residual_of_the_draft_row, "the rows after the prefix"),
        (last_from_the_residual_formula, "h_gamma = w_gamma"),
        (divides_by_zero, "nan, 0 / 0"),
        (zero_where_the_denominator_is_zero, "sets h_1 = 1 when the denominator is 0"),
        (python_floats_divide_by_zero, "raised ZeroDivisionError"),
        (h0_left_at_zero, "h_0 = 1"),
        (returns_float32, "returned float32 w where float64 is asked (the values are right"),
        (keeps_the_input_dtype, "even for float32 q and p"),
        (float32_arithmetic, "float32 arithmetic"),
        (integer_weights, "returned int64 w where float64 is asked"),
        (without_the_empty_prefix, "expected (gamma + 1,) = (3,)"),
        (as_lists, "returned a list where a numpy array is asked"),
        (only_w, "return a pair (w, h)"),
        (scales_p_in_place, "changed its input `p` in place"),
    ],
)
def test_wrong_answers_fail_with_a_counterexample(wrong, said, capsys):
    assert not ex11.check_block_weights(wrong)
    out = capsys.readouterr().out
    assert out.startswith("✗ block_weights: ") and "(for tokens = [" in out and said in out
    assert "\n" not in out.rstrip("\n")  # one line, the in-place message's arrays too
    assert out.index(said) < out.index("(for tokens = [")  # the diagnosis first, the arrays after
    assert "q = [[" in out and "p = [[" in out  # the inputs of the counterexample, in full
    assert "..." not in out and " at 0x" not in out
    if "raised" not in said and "changed" not in said:
        assert "expected " in out and ", got " in out


def test_the_missing_w0_is_named(capsys):
    ex11.check_block_weights(without_the_empty_prefix)
    assert "w_0 is missing" in capsys.readouterr().out


def test_division_by_zero_is_explained(capsys):
    ex11.check_block_weights(python_floats_divide_by_zero)
    out = capsys.readouterr().out
    assert "the statement sets h_i = 1 then" in out
    ex11.check_block_weights(divides_by_zero)
    out = capsys.readouterr().out
    assert "the statement sets h_1 = 1 when the denominator is 0" in out and "RuntimeWarning" not in out


@pytest.mark.parametrize(
    ("wrong", "name"), [(delegates_block_weights, "block_weights"), (delegates_block_verify, "block_verify")]
)
def test_delegation_is_refused(wrong, name, capsys):
    assert not ex11.check_block_weights(wrong)
    assert f"your function calls {name}: it computes w and h for you" in capsys.readouterr().out


def test_the_references_are_restored_after_a_check():
    ex11.check_block_weights(delegates_block_weights)
    ex11.check_block_weights(delegates_block_verify)
    assert block.block_weights is block_weights and block.block_weights.__name__ == "block_weights"
    assert specdec.block_verify is block.block_verify and block.block_verify.__name__ == "block_verify"
    assert block.block_verify_drawn.__name__ == "block_verify_drawn"


def test_a_crash_is_reported_with_its_input(capsys):
    def crashes_on_one_draft(tokens, q, p):
        if len(tokens) == 1:
            raise IndexError("index 1 is out of bounds for axis 0 with size 1")
        return solution.my_block_weights(tokens, q, p)

    assert not ex11.check_block_weights(crashes_on_one_draft)
    out = capsys.readouterr().out
    assert "tokens = [2]" in out and "raised IndexError" in out and " at 0x" not in out


def test_a_stub_is_not_attempted_yet(capsys):
    assert not ex11.check_block_weights(stub)
    assert "not attempted yet" in capsys.readouterr().out


def h_gamma_as_a_residual_against_nothing(tokens, q, p):
    """Right in exact arithmetic: sum(w p) / (sum(w p) + 1 - w) = w when the row sums to 1 (q = 0 after the block)."""
    w, h = solution.my_block_weights(tokens, q, p)
    mass = float((w[-1] * np.asarray(p, dtype=np.float64)[-1]).sum())
    h = h.copy()
    h[-1] = mass / (mass + 1.0 - w[-1])
    return w, h


def h_gamma_is_one(tokens, q, p):
    w, h = solution.my_block_weights(tokens, q, p)
    h = h.copy()
    h[-1] = 1.0
    return w, h


def test_an_h_gamma_equal_to_w_gamma_in_exact_arithmetic_is_accepted(capsys):
    assert ex11.check_block_weights(h_gamma_as_a_residual_against_nothing)


def test_h_gamma_one_is_told_that_the_whole_block_is_kept_with_probability_w_gamma(capsys):
    assert not ex11.check_block_weights(h_gamma_is_one)
    assert "not 1" in capsys.readouterr().out


def plain_where(tokens, q, p):
    """The hint's remark: np.where(d > 0, R / d, 1.0) gives the right h but still computes 0 / 0 where d = 0."""
    tokens, q, p = as_float64(tokens, q, p)
    gamma = tokens.size
    w = weights(tokens, q, p)
    r = np.maximum(w[:gamma, None] * p[:gamma] - q, 0.0).sum(axis=-1)  # (gamma,)
    d = r + (1.0 - w[:gamma])  # (gamma,)
    h = np.append(np.where(d > 0, r / d, 1.0), w[gamma])
    h[0] = 1.0
    return w, h


def test_a_plain_where_warns_outside_the_checker_only(capsys):
    """The hint says a plain np.where still divides 0 by 0, "which numpy warns about outside the checker"."""
    p_equals_q = next(case for case in ex11.block_weights_cases() if np.array_equal(case[1], case[2][:-1]))
    with pytest.warns(RuntimeWarning, match="invalid value"):
        plain_where(*p_equals_q)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning escaping the checker would fail here
        assert ex11.check_block_weights(plain_where)
    assert capsys.readouterr().out.startswith("✓ block_weights: all")
