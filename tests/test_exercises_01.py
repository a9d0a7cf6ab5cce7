"""Exercises of notebooks/01_logits_softmax_temperature.ipynb: solutions pass their checkers, wrong answers fail."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import diagnosis, load_solution

import specdec
from checkers.ex01 import check_entropy_bits, check_fixed_softmax, check_log_softmax, check_stable_softmax

solution = SimpleNamespace(  # one solution file per exercise
    stable_softmax=load_solution("ex01_stable_softmax").stable_softmax,
    stable_log_softmax=load_solution("ex01_log_softmax").stable_log_softmax,
    fixed_softmax=load_solution("ex01_fixed_softmax").fixed_softmax,
    entropy_bits=load_solution("ex01_entropy_bits").entropy_bits,
)


def stub(*args):
    raise NotImplementedError


def assert_fails(checker, fn, capsys, why: str = ""):
    with np.errstate(all="ignore"):  # the wrong answers overflow and divide by zero on purpose
        assert not checker(fn)
    out = capsys.readouterr().out
    assert out.startswith("✗")
    assert why in out


# --- Exercise 1 --------------------------------------------------------------------------------


def naive_softmax(logits, temperature):  # exp overflows at 1000
    weights = np.exp(np.asarray(logits, dtype=np.float64) / temperature)
    return weights / weights.sum(axis=-1, keepdims=True)


def seed_softmax(x, temperature=1.0):  # the seed blog post's version, verbatim
    x = x / temperature
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()


def divide_then_shift(logits, temperature):  # stable at ordinary T, NaN at a tiny T
    if temperature == 0:
        return solution.stable_softmax(logits, 0)
    x = np.asarray(logits, dtype=np.float64) / temperature
    weights = np.exp(x - x.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def greedy_splits_ties(logits, temperature):  # the T -> 0 limit, not greedy decoding
    if temperature == 0:
        x = np.asarray(logits, dtype=np.float64)
        best = x == x.max(axis=-1, keepdims=True)
        return best / best.sum(axis=-1, keepdims=True)
    return solution.stable_softmax(logits, temperature)


def greedy_last_index(logits, temperature):  # ties to the highest index
    if temperature == 0:
        x = np.asarray(logits, dtype=np.float64)
        last = x.shape[-1] - 1 - np.argmax(x[..., ::-1], axis=-1)
        return np.eye(x.shape[-1])[last]
    return solution.stable_softmax(logits, temperature)


def global_max(logits, temperature):  # one max for the whole batch: small rows underflow to 0 / 0
    if temperature == 0:
        return solution.stable_softmax(logits, 0)
    x = np.asarray(logits, dtype=np.float64)
    weights = np.exp((x - x.max()) / temperature)
    return weights / weights.sum(axis=-1, keepdims=True)


def float16_arithmetic(logits, temperature):  # right idea, but float16 keeps only ~3 significant digits
    if temperature == 0:
        return solution.stable_softmax(logits, 0)
    x = np.asarray(logits, dtype=np.float16)
    weights = np.exp((x - x.max(axis=-1, keepdims=True)) / temperature)
    return weights / weights.sum(axis=-1, keepdims=True)


def float32_arithmetic(logits, temperature):  # keeps float32 logits in float32: float64 is asked
    x = np.asarray(logits)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    if temperature == 0:
        probs = np.zeros_like(x)
        np.put_along_axis(probs, np.argmax(x, axis=-1, keepdims=True), 1.0, axis=-1)
        return probs
    weights = np.exp((x - x.max(axis=-1, keepdims=True)) / temperature)
    return weights / weights.sum(axis=-1, keepdims=True)


def greedy_one_hot_keeps_the_dtype(logits, temperature):  # np.zeros_like(logits): integer logits, integer one-hot
    if temperature == 0:
        x = np.asarray(logits)
        probs = np.zeros_like(x)
        np.put_along_axis(probs, np.argmax(x, axis=-1, keepdims=True), 1, axis=-1)
        return probs
    return solution.stable_softmax(logits, temperature)


def greedy_rows_by_arange(logits, temperature):  # right for one row and for a 2-D batch, wrong for 3-D
    if temperature == 0:
        x = np.asarray(logits, dtype=np.float64)
        if x.ndim == 1:
            return np.eye(x.shape[-1])[np.argmax(x)]
        probs = np.zeros_like(x)
        probs[np.arange(x.shape[0]), np.argmax(x, axis=-1)] = 1.0
        return probs
    return solution.stable_softmax(logits, temperature)


def greedy_below_a_small_temperature(logits, temperature):  # "tiny T means greedy": ties are split in the limit
    if temperature < 0.05:
        return solution.stable_softmax(logits, 0)
    return solution.stable_softmax(logits, temperature)


def divides_first_with_a_tiny_temperature_guard(logits, temperature):  # dodges the overflow with a greedy guard
    if temperature < 1e-300:
        return solution.stable_softmax(logits, 0)
    x = np.asarray(logits, dtype=np.float64) / temperature
    weights = np.exp(x - x.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def exp_of_the_package_log_softmax(logits, temperature):  # "in numpy", not with the package's log_softmax
    if temperature == 0:
        return solution.stable_softmax(logits, 0)
    x = np.asarray(logits, dtype=np.float64)
    return np.exp(specdec.log_softmax((x - x.max(axis=-1, keepdims=True)) / temperature))


def greedy_with_the_package_one_hot(logits, temperature):  # greedy from specdec.logits, not written in numpy
    if temperature == 0:
        return specdec.logits.one_hot_argmax(np.asarray(logits, dtype=np.float64))
    return solution.stable_softmax(logits, temperature)


def float32_arithmetic_cast_at_the_end(logits, temperature):  # float64 dtype, float32 digits
    x = np.asarray(logits)
    x = x.astype(np.float32) if x.dtype == np.float32 else x.astype(np.float64)
    if temperature == 0:
        return solution.stable_softmax(x, 0)
    weights = np.exp((x - x.max(axis=-1, keepdims=True)) / x.dtype.type(temperature))
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float64)


def shifts_the_callers_logits_in_place(logits, temperature):  # x -= max edits the caller's float64 array
    x = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return solution.stable_softmax(x, 0)
    x -= x.max(axis=-1, keepdims=True)
    weights = np.exp(x / temperature)
    return weights / weights.sum(axis=-1, keepdims=True)


def multiplies_by_the_reciprocal(logits, temperature):  # (x - m) * (1 / T): subnormal T, 1 / T = inf, 0 * inf = NaN
    x = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return solution.stable_softmax(x, 0)
    weights = np.exp((x - x.max(axis=-1, keepdims=True)) * (1 / temperature))
    return weights / weights.sum(axis=-1, keepdims=True)


def stable_softmax_delegates(logits, temperature):  # the package's softmax, not the learner's
    return specdec.softmax(logits, temperature)


def stable_softmax_delegates_under_an_alias(logits, temperature):
    return package_softmax(logits, temperature)


package_softmax = specdec.softmax  # as `from specdec import softmax as package_softmax` would bind it


def test_stable_softmax_solution_passes(capsys):
    assert check_stable_softmax(solution.stable_softmax)
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize(
    "wrong",
    [
        naive_softmax,
        seed_softmax,
        divide_then_shift,
        greedy_splits_ties,
        greedy_last_index,
        global_max,
        float16_arithmetic,
        float32_arithmetic,
        greedy_one_hot_keeps_the_dtype,
        greedy_rows_by_arange,
        stable_softmax_delegates,
        stable_softmax_delegates_under_an_alias,
        greedy_below_a_small_temperature,
        divides_first_with_a_tiny_temperature_guard,
        exp_of_the_package_log_softmax,
        greedy_with_the_package_one_hot,
        float32_arithmetic_cast_at_the_end,
        shifts_the_callers_logits_in_place,
        multiplies_by_the_reciprocal,
    ],
)
def test_stable_softmax_wrong_answers_fail(wrong, capsys):
    assert_fails(check_stable_softmax, wrong, capsys)


@pytest.mark.parametrize(
    ("wrong", "why"),
    [
        (float32_arithmetic, "returned float32 probabilities where float64 is asked"),
        (greedy_one_hot_keeps_the_dtype, "returned int64 probabilities where float64 is asked"),
        (stable_softmax_delegates, "calls softmax"),
        (stable_softmax_delegates_under_an_alias, "calls softmax"),
        (greedy_below_a_small_temperature, "expected [2.5741e-131, 0.5, 0.5, 9.575848e-175]"),
        (divides_first_with_a_tiny_temperature_guard, "expected [0.5, 0.5, 0.]"),
        (exp_of_the_package_log_softmax, "calls log_softmax"),
        (greedy_with_the_package_one_hot, "calls one_hot_argmax"),
        (float32_arithmetic_cast_at_the_end, "float32 arithmetic"),
        (shifts_the_callers_logits_in_place, "changed its input `logits` in place"),
        (multiplies_by_the_reciprocal, "got [nan, nan]"),
    ],
)
def test_stable_softmax_says_why(wrong, why, capsys):
    assert_fails(check_stable_softmax, wrong, capsys, why)
    assert specdec.softmax([0.0, 0.0]).tolist() == [0.5, 0.5]  # restored after the check


def test_stable_softmax_stub_is_not_attempted(capsys):
    assert_fails(check_stable_softmax, stub, capsys, "not attempted yet")


# Learner reads: the likeliest batch and greedy mistakes got "wrong probabilities" or "returned NaN" over a
# 3x3 dump. Each is named now, before the arrays, with the rows that are wrong.


def softmax_sum_without_keepdims(logits, temperature):  # (B, V) / (B,): numpy lines the sums up with the tokens
    x = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return solution.stable_softmax(x, 0)
    weights = np.exp((x - x.max(axis=-1, keepdims=True)) / temperature)
    return weights / weights.sum(axis=-1)


def softmax_max_without_keepdims(logits, temperature):  # (B, V) - (B,)
    x = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return solution.stable_softmax(x, 0)
    weights = np.exp((x - x.max(axis=-1)) / temperature)
    return weights / weights.sum(axis=-1, keepdims=True)


def greedy_by_fancy_indexing(logits, temperature):  # probs[..., best] = 1 sets every row's best column in every row
    x = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        probs = np.zeros_like(x)
        probs[..., np.argmax(x, axis=-1)] = 1.0
        return probs
    return solution.stable_softmax(x, temperature)


def greedy_ties_set_to_one(logits, temperature):  # x == max: a 1 on every tied maximum
    x = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return (x == x.max(axis=-1, keepdims=True)).astype(np.float64)
    return solution.stable_softmax(x, temperature)


@pytest.mark.parametrize(
    ("wrong", "first_words", "also"),
    [
        (
            global_max,
            "each row must be shifted by its own maximum, x.max(axis=-1, keepdims=True)",
            "Row 1 is right, row 0 is NaN",
        ),
        (
            softmax_sum_without_keepdims,
            "a row maximum or sum without keepdims=True has one value per row, shape (2,)",
            "could not be broadcast together with shapes (2,3) (2,)",
        ),
        (softmax_max_without_keepdims, "a row maximum or sum without keepdims=True", "keepdims=True) has shape (2, 1)"),
        (
            greedy_by_fancy_indexing,
            "greedy puts 1 on the first maximum of each row: np.put_along_axis",
            "row 0 has 1 in columns 0 and 1",
        ),
        (
            greedy_ties_set_to_one,
            "T = 0 puts probability 1 on the first maximum only, ties to the lowest index; a tiny T shares tied"
            " tokens, T = 0 does not",
            "tokens 1 and 2 tied",
        ),
        (greedy_splits_ties, "T = 0 puts probability 1 on the first maximum only", "got [0., 0.5, 0.5, 0.]"),
        (greedy_last_index, "ties go to the lowest index at T = 0", "token 1 gets probability 1, not token 2"),
        (greedy_below_a_small_temperature, "T = 0.01 is not T = 0: only T = 0 is greedy", "tied tokens share"),
        (
            divide_then_shift,
            "dividing first overflows: 2 / 1e-308 = inf, and inf - inf = NaN; subtract the maximum first",
            "got [nan, nan]",
        ),
        (multiplies_by_the_reciprocal, "multiplying by 1 / T overflows: 1 / 1e-310 = inf", "got [nan, nan]"),
    ],
)
def test_stable_softmax_names_the_batch_and_greedy_mistakes_first(wrong, first_words, also, capsys):
    with np.errstate(all="ignore"):
        assert not check_stable_softmax(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith(first_words), message
    assert also in message, message
    assert message.index(first_words) < message.index("(for input")  # the diagnosis first, the arrays after


def test_a_square_batch_without_keepdims_is_named_too():
    """A square batch broadcasts a missing keepdims silently: the checker still names it, and the rows."""
    from checkers.ex01 import first_wrong

    case = (np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0], [5.0, 5.0, -np.inf]]), 0.7)
    expected = [solution.stable_softmax(*case)]
    messages = {}
    for wrong, words in [
        (softmax_sum_without_keepdims, "a row sum without keepdims=True has shape (3,), which numpy lines up with"),
        (softmax_max_without_keepdims, "a row maximum without keepdims=True has shape (3,)"),
    ]:
        with np.errstate(all="ignore"):
            messages[wrong] = first_wrong(wrong, [case], expected, what="probabilities", float64=True, refused={})
        assert messages[wrong].startswith(words), messages[wrong]
    message = messages[softmax_sum_without_keepdims]
    assert "the diagonal is right, the rest is not" in message, message


# --- Exercise 2: log_softmax -----------------------------------------------------------------


def log_of_softmax(logits):  # the route the notebook warns about: -inf where the answer is -800
    return np.log(solution.stable_softmax(logits, 1.0))


def unshifted_log_sum_exp(logits):  # right formula, but exp(1000) = inf
    x = np.asarray(logits, dtype=np.float64)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def log_softmax_global_max(logits):  # one max for the whole batch: rows far below it underflow
    x = np.asarray(logits, dtype=np.float64)
    shifted = x - x.max()
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def log_softmax_forgets_the_shift_in_the_sum(logits):  # log sum exp(x - m) mixed with x: off by m
    x = np.asarray(logits, dtype=np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def log_softmax_without_keepdims(logits):  # right for one row, broadcasts wrongly on a batch
    x = np.asarray(logits, dtype=np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1))


def log_softmax_float32(logits):  # right formula, but float32 logits stay float32: float64 is asked
    x = np.asarray(logits)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def log_softmax_clamps_minus_inf(logits):  # avoids -inf - (-inf) by clipping: -inf becomes a finite number
    x = np.maximum(np.asarray(logits, dtype=np.float64), -1e30)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def log_softmax_float32_cast_at_the_end(logits):  # float64 dtype, float32 digits
    x = np.asarray(logits)
    x = x.astype(np.float32) if x.dtype == np.float32 else x.astype(np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))).astype(np.float64)


def log_softmax_in_place(logits):  # x -= max edits the caller's float64 array
    x = np.asarray(logits, dtype=np.float64)
    x -= x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def log_softmax_delegates(logits):
    return specdec.log_softmax(logits)


def test_log_softmax_solution_passes(capsys):
    assert check_log_softmax(solution.stable_log_softmax)
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize(
    "wrong",
    [
        log_of_softmax,
        unshifted_log_sum_exp,
        log_softmax_global_max,
        log_softmax_forgets_the_shift_in_the_sum,
        log_softmax_without_keepdims,
        log_softmax_float32,
        log_softmax_clamps_minus_inf,
        log_softmax_delegates,
        log_softmax_float32_cast_at_the_end,
        log_softmax_in_place,
    ],
)
def test_log_softmax_wrong_answers_fail(wrong, capsys):
    assert_fails(check_log_softmax, wrong, capsys)


@pytest.mark.parametrize(
    ("wrong", "why"),
    [
        (log_softmax_float32, "returned float32 log-probabilities where float64 is asked"),
        (log_softmax_delegates, "calls log_softmax"),
        (log_softmax_float32_cast_at_the_end, "float32 arithmetic"),
        (log_softmax_in_place, "changed its input `logits` in place"),
    ],
)
def test_log_softmax_says_why(wrong, why, capsys):
    assert_fails(check_log_softmax, wrong, capsys, why)


def test_log_softmax_of_softmax_fails_with_minus_inf(capsys):
    assert_fails(
        check_log_softmax, log_of_softmax, capsys, "returned -inf where the right log-probabilities are finite"
    )


def test_log_softmax_stub_is_not_attempted(capsys):
    assert_fails(check_log_softmax, stub, capsys, "not attempted yet")


@pytest.mark.parametrize(
    ("wrong", "first_words", "also"),
    [
        (
            log_softmax_global_max,
            "each row must be shifted by its own maximum, x.max(axis=-1, keepdims=True)",
            "Row 1 is right, row 0 is infinite",
        ),
        (
            log_softmax_without_keepdims,
            "a row maximum or sum without keepdims=True has one value per row, shape (2,)",
            "could not be broadcast",
        ),
    ],
)
def test_log_softmax_names_the_batch_mistakes_first(wrong, first_words, also, capsys):
    with np.errstate(all="ignore"):
        assert not check_log_softmax(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith(first_words), message
    assert also in message, message


# --- Exercise 3 --------------------------------------------------------------------------------


def seed_with_greedy(x, temperature=1.0):  # guards T = 0 only
    if temperature == 0:
        return solution.stable_softmax(x, 0)
    return seed_softmax(x, temperature)


def unvalidated(x, temperature=1.0):  # right numbers, silent on bad input
    return solution.stable_softmax(x, temperature)


def validates_temperature_only(x, temperature=1.0):
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError("bad temperature")
    return solution.stable_softmax(x, temperature)


def misses_all_minus_inf(x, temperature=1.0):  # an all -inf row still becomes NaN
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError("bad temperature")
    x = np.asarray(x, dtype=np.float64)
    if not (np.isfinite(x) | (x == -np.inf)).all():
        raise ValueError("NaN or +inf")
    return solution.stable_softmax(x, temperature)


def checks_only_first_row(x, temperature=1.0):  # looks at x[0] instead of every row
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError("bad temperature")
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any() or (x == np.inf).any() or (np.atleast_2d(x)[0] == -np.inf).all():
        raise ValueError("bad logits")
    return solution.stable_softmax(x, temperature)


def validated_but_global(x, temperature=1.0):  # validation right, but the whole batch sums to 1
    probs = solution.fixed_softmax(x, temperature)
    return probs / probs.sum()


def validated_but_divides_first(x, temperature=1.0):
    solution.fixed_softmax(x, temperature)  # validation only
    return divide_then_shift(np.asarray(x), temperature)


def wrong_exception_type(x, temperature=1.0):
    try:
        return solution.fixed_softmax(x, temperature)
    except ValueError as error:
        raise RuntimeError(str(error)) from None


def validated(x, temperature):  # the solution's checks, then its values are replaced below
    solution.fixed_softmax(x, temperature)
    return np.asarray(x, dtype=np.float64)


def greedy_global_argmax(x, temperature=1.0):  # greedy right for one row: a batch gets the column of the global max
    x = validated(x, temperature)
    if temperature == 0:
        probs = np.zeros_like(x)
        probs[..., np.argmax(x) % x.shape[-1]] = 1.0
        return probs
    return solution.stable_softmax(x, temperature)


def greedy_first_row_argmax(x, temperature=1.0):  # every row gets the first row's argmax
    x = validated(x, temperature)
    if temperature == 0:
        probs = np.zeros_like(x)
        probs[..., np.argmax(x.reshape(-1, x.shape[-1])[0])] = 1.0
        return probs
    return solution.stable_softmax(x, temperature)


def greedy_ties_all_ones(x, temperature=1.0):  # a one at every tied maximum: not a distribution
    x = validated(x, temperature)
    if temperature == 0:
        return (x == x.max(axis=-1, keepdims=True)).astype(np.float64)
    return solution.stable_softmax(x, temperature)


def greedy_before_validation(x, temperature=1.0):  # returns the greedy answer before checking the logits
    if temperature == 0:
        return solution.stable_softmax(x, 0)
    return solution.fixed_softmax(x, temperature)


def nan_check_on_the_first_row_only(x, temperature=1.0):  # a batch with NaN or +inf in a later row passes
    if not np.isfinite(temperature) or temperature < 0:
        raise ValueError("bad temperature")
    x = np.asarray(x, dtype=np.float64)
    first = x.reshape(-1, x.shape[-1])[0]
    if np.isnan(first).any() or (first == np.inf).any() or (x == -np.inf).all(axis=-1).any():
        raise ValueError("bad logits")
    return solution.stable_softmax(x, temperature)


def fixed_keeps_float16(x, temperature=1.0):  # right values, but float16 logits give float16 probabilities
    return solution.fixed_softmax(x, temperature).astype(np.asarray(x).dtype)


def fixed_greedy_below_a_small_temperature(x, temperature=1.0):  # validated, but "tiny T means greedy"
    if temperature < 0.05:
        return solution.fixed_softmax(x, 0.0 if temperature >= 0 else temperature)
    return solution.fixed_softmax(x, temperature)


def fixed_divides_first_with_a_guard(x, temperature=1.0):  # breaks rule 2, with a greedy guard against the overflow
    solution.fixed_softmax(x, temperature)  # validation only
    return divides_first_with_a_tiny_temperature_guard(x, temperature)


def validates_with_the_package(x, temperature=1.0):  # rules 4 and 5 delegated to specdec's own checks
    specdec.validation.check_temperature(temperature)
    checked = specdec.validation.check_logits(x)
    return solution.stable_softmax(checked, temperature)


def fixed_with_the_package_log_softmax(x, temperature=1.0):  # exp(log_softmax): the package does the work
    solution.fixed_softmax(x, temperature)  # validation only
    if temperature == 0:
        return solution.stable_softmax(x, 0)
    x = np.asarray(x, dtype=np.float64)
    return np.exp(specdec.log_softmax((x - x.max(axis=-1, keepdims=True)) / temperature))


def fixed_in_place(x, temperature=1.0):  # validated, then x -= max edits the caller's array
    solution.fixed_softmax(x, temperature)  # validation only
    return shifts_the_callers_logits_in_place(x, temperature)


def fixed_multiplies_by_the_reciprocal(x, temperature=1.0):  # validated, then (x - m) * (1 / T): NaN at T = 1e-310
    solution.fixed_softmax(x, temperature)  # validation only
    return multiplies_by_the_reciprocal(x, temperature)


def test_fixed_softmax_solution_passes(capsys):
    assert check_fixed_softmax(solution.fixed_softmax)
    assert capsys.readouterr().out.startswith("✓")


def delegates_to_the_package(x, temperature=1.0):  # passes every value check: the reference itself
    return specdec.softmax(x, temperature)


def delegates_to_the_module(x, temperature=1.0):  # the same, imported from specdec.logits
    from specdec.logits import softmax

    return softmax(x, temperature)


@pytest.mark.parametrize(
    "wrong",
    [
        delegates_to_the_package,
        delegates_to_the_module,
        seed_softmax,
        seed_with_greedy,
        unvalidated,
        validates_temperature_only,
        misses_all_minus_inf,
        checks_only_first_row,
        validated_but_global,
        validated_but_divides_first,
        wrong_exception_type,
        greedy_global_argmax,
        greedy_first_row_argmax,
        greedy_ties_all_ones,
        greedy_before_validation,
        nan_check_on_the_first_row_only,
        fixed_keeps_float16,
        fixed_greedy_below_a_small_temperature,
        fixed_divides_first_with_a_guard,
        validates_with_the_package,
        fixed_with_the_package_log_softmax,
        fixed_in_place,
        fixed_multiplies_by_the_reciprocal,
    ],
)
def test_fixed_softmax_wrong_answers_fail(wrong, capsys):
    assert_fails(check_fixed_softmax, wrong, capsys)


@pytest.mark.parametrize(
    ("wrong", "first_words"),
    [
        (unvalidated, "no ValueError for a negative temperature: your function returned"),
        (wrong_exception_type, "no ValueError for a negative temperature: your function raised RuntimeError"),
        (misses_all_minus_inf, "no ValueError for a row that is entirely -inf"),
        (greedy_before_validation, "no ValueError for a NaN logit at T = 0"),
        (validated_but_divides_first, "dividing first overflows: 2 / 1e-308 = inf, and inf - inf = NaN"),
    ],
)
def test_fixed_softmax_names_the_mistake_before_the_input(wrong, first_words, capsys):
    with np.errstate(all="ignore"):
        assert not check_fixed_softmax(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith(first_words), message
    assert "(for input " in message


def test_fixed_softmax_says_float64_is_asked(capsys):
    assert_fails(
        check_fixed_softmax, fixed_keeps_float16, capsys, "returned float16 probabilities where float64 is asked"
    )


@pytest.mark.parametrize(
    ("wrong", "why"),
    [
        (fixed_greedy_below_a_small_temperature, "expected [2.5741e-131, 0.5, 0.5, 9.575848e-175]"),
        (fixed_divides_first_with_a_guard, "expected [0.5, 0.5, 0.]"),
        (validates_with_the_package, "calls check_temperature"),
        (fixed_with_the_package_log_softmax, "calls log_softmax"),
        (fixed_in_place, "changed its input `x` in place"),
        (fixed_multiplies_by_the_reciprocal, "got [nan, nan]"),
    ],
)
def test_fixed_softmax_says_why(wrong, why, capsys):
    assert_fails(check_fixed_softmax, wrong, capsys, why)
    assert specdec.validation.check_logits([0.0, 1.0]).tolist() == [0.0, 1.0]  # restored after the check


def test_fixed_softmax_refusal_does_not_claim_the_exercise_asks_for_log_softmax(capsys):
    assert_fails(check_fixed_softmax, fixed_with_the_package_log_softmax, capsys, "numpy")
    assert specdec.log_softmax([0.0, 0.0]).tolist() == [-np.log(2), -np.log(2)]  # restored after the check


def test_fixed_softmax_refuses_delegation_and_restores_softmax(capsys):
    assert_fails(check_fixed_softmax, delegates_to_the_package, capsys, "calls softmax")
    assert specdec.softmax([0.0, 0.0]).tolist() == [0.5, 0.5]  # restored after the check


def test_fixed_softmax_stub_is_not_attempted(capsys):
    assert_fails(check_fixed_softmax, stub, capsys, "not attempted yet")


def refuses_minus_inf(x, temperature=1.0):  # np.isinf refuses -inf too: a valid input, probability 0
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any() or np.isinf(x).any():
        raise ValueError("bad logits")
    return solution.fixed_softmax(x, temperature)


def refuses_temperature_zero(x, temperature=1.0):  # "temperature must be > 0": T = 0 is greedy, and valid
    if temperature <= 0:
        raise ValueError("bad temperature")
    return solution.fixed_softmax(x, temperature)


def fixed_divides_first_in_float16(x, temperature=1.0):  # validated, then the blog's x / T in the logits' dtype
    solution.fixed_softmax(x, temperature)  # validation only
    if temperature == 0:
        return solution.stable_softmax(x, 0)
    x = np.asarray(x) / temperature
    weights = np.exp(x - x.max(axis=-1, keepdims=True)).astype(np.float64)
    return weights / weights.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize(
    ("wrong", "first_words"),
    [
        (
            refuses_minus_inf,
            "your function refused a valid input: -inf logits are allowed (probability 0); only NaN, +inf and rows"
            " entirely -inf are refused",
        ),
        (refuses_temperature_zero, "your function refused a valid input: T = 0 is allowed (greedy)"),
        (fixed_divides_first_in_float16, "dividing first overflows: 70 / 0.001 = inf in float16"),
        (
            greedy_global_argmax,
            "at T = 0 each row puts 1 on its own first maximum, np.argmax(x, axis=-1): row 1's is token 0, but your"
            " function put the 1 on token 2",
        ),
        (validated_but_global, "wrong probabilities. Rows 0 and 1 are wrong"),
    ],
)
def test_fixed_softmax_names_a_refused_valid_input_and_a_float16_overflow(wrong, first_words, capsys):
    with np.errstate(all="ignore"):
        assert not check_fixed_softmax(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith(first_words), message
    assert message.index(first_words) < message.index("(for input")


# --- Exercise 4 --------------------------------------------------------------------------------


def naive_entropy(probs):  # 0 * log2(0) = 0 * -inf = NaN
    p = np.asarray(probs, dtype=np.float64)
    return -(p * np.log2(p)).sum(axis=-1)


def entropy_in_nats(probs):
    p = np.asarray(probs, dtype=np.float64)
    safe = np.where(p > 0, p, 1.0)
    return -(p * np.log(safe)).sum(axis=-1)


def entropy_of_whole_batch(probs):
    p = np.asarray(probs, dtype=np.float64)
    safe = np.where(p > 0, p, 1.0)
    return -(p * np.log2(safe)).sum()


def drops_the_minus_sign(probs):
    p = np.asarray(probs, dtype=np.float64)
    safe = np.where(p > 0, p, 1.0)
    return (p * np.log2(safe)).sum(axis=-1)


def masks_then_sums_everything(probs):  # p[p > 0] flattens the batch: one number for all the rows
    p = np.asarray(probs, dtype=np.float64)
    return -(p[p > 0] * np.log2(p[p > 0])).sum()


def entropy_over_the_first_axis(probs):  # sums over axis 0: right for one row, not for a batch
    p = np.asarray(probs, dtype=np.float64)
    safe = np.where(p > 0, p, 1.0)
    return -(p * np.log2(safe)).sum(axis=0)


def entropy_with_a_small_epsilon(probs):  # log2(p + 1e-9): no NaN, but every term is a little off
    p = np.asarray(probs, dtype=np.float64)
    return -(p * np.log2(p + 1e-9)).sum(axis=-1)


def entropy_in_place(probs):  # overwrites the caller's zeros with ones
    p = np.asarray(probs, dtype=np.float64)
    p[p == 0] = 1.0
    return -(np.where(p < 1, p, 0.0) * np.log2(p)).sum(axis=-1)


def entropy_in_float32(probs):  # right, in the input's own precision: entropy does not ask for float64
    p = np.asarray(probs)
    safe = np.where(p > 0, p, np.ones_like(p))
    return -(p * np.log2(safe)).sum(axis=-1)


def test_entropy_in_float32_arithmetic_passes(capsys):
    assert check_entropy_bits(entropy_in_float32)
    assert capsys.readouterr().out.startswith("✓")


def test_entropy_solution_passes(capsys):
    assert check_entropy_bits(solution.entropy_bits)
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize(
    "wrong",
    [
        naive_entropy,
        entropy_in_nats,
        entropy_of_whole_batch,
        drops_the_minus_sign,
        masks_then_sums_everything,
        entropy_over_the_first_axis,
        entropy_with_a_small_epsilon,
        entropy_in_place,
    ],
)
def test_entropy_wrong_answers_fail(wrong, capsys):
    assert_fails(check_entropy_bits, wrong, capsys)


@pytest.mark.parametrize(
    ("wrong", "first_words"),
    [
        (entropy_of_whole_batch, "your function summed over the whole array, all the rows together"),
        (masks_then_sums_everything, "your function summed over the whole array, all the rows together"),
        (entropy_over_the_first_axis, "your function summed over the first axis (axis=0, across the rows)"),
    ],
)
def test_an_entropy_summed_over_more_than_each_row_is_told_so_first(wrong, first_words, capsys):
    """A learner's sum over the whole array was told only "one value per row": the mistake is named first now."""
    with np.errstate(all="ignore"):
        assert not check_entropy_bits(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith(first_words), message
    assert "one entropy per row is asked" in message and "sum over the last axis" in message
    assert message.index("one entropy per row") < message.index("for input")  # the input's arrays come after


def test_a_flattening_mask_is_named_in_the_message(capsys):
    assert_fails(check_entropy_bits, masks_then_sums_everything, capsys, "`p[p > 0]`, which flattens the rows")


@pytest.mark.parametrize(
    ("wrong", "first_words"),
    [
        (naive_entropy, "your function returned NaN where the entropies are all numbers"),
        (entropy_in_nats, "these are entropies in nats"),
        (drops_the_minus_sign, "the sign is flipped"),
    ],
)
def test_entropy_says_why_first(wrong, first_words, capsys):
    with np.errstate(all="ignore"):
        assert not check_entropy_bits(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith(first_words), message


def test_entropy_shows_a_difference_too_small_for_six_digits(capsys):
    assert_fails(check_entropy_bits, entropy_with_a_small_epsilon, capsys, "got -1.442695")


def test_entropy_says_it_changed_its_input(capsys):
    assert_fails(check_entropy_bits, entropy_in_place, capsys, "changed its input `probs` in place")


def test_entropy_stub_is_not_attempted(capsys):
    assert_fails(check_entropy_bits, stub, capsys, "not attempted yet")


def test_a_one_token_row_returned_as_a_scalar_is_told_the_shape(capsys):
    def scalar_for_one_token(logits, temperature):  # the mistake: [1.] flattened to 1.
        probs = solution.stable_softmax(logits, temperature)
        return probs[0] if np.shape(probs) == (1,) else probs

    assert_fails(
        check_stable_softmax,
        scalar_for_one_token,
        capsys,
        "of shape () where shape (1,) is asked",
    )
