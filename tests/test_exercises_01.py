"""Exercises of notebooks/01_logits_softmax_temperature.ipynb: solutions pass their checkers, wrong answers fail."""

import math

import numpy as np
import pytest
from helpers import load_solution

import specdec
from specdec.exercises.ex01 import check_entropy_bits, check_fixed_softmax, check_log_softmax, check_stable_softmax

solution = load_solution("ex01_softmax_temperature")


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
    ],
)
def test_stable_softmax_wrong_answers_fail(wrong, capsys):
    assert_fails(check_stable_softmax, wrong, capsys)


def test_stable_softmax_stub_is_not_attempted(capsys):
    assert_fails(check_stable_softmax, stub, capsys, "not attempted yet")


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
    ],
)
def test_log_softmax_wrong_answers_fail(wrong, capsys):
    assert_fails(check_log_softmax, wrong, capsys)


def test_log_softmax_of_softmax_fails_with_minus_inf(capsys):
    assert_fails(check_log_softmax, log_of_softmax, capsys, "-inf")


def test_log_softmax_stub_is_not_attempted(capsys):
    assert_fails(check_log_softmax, stub, capsys, "not attempted yet")


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
    ],
)
def test_fixed_softmax_wrong_answers_fail(wrong, capsys):
    assert_fails(check_fixed_softmax, wrong, capsys)


def test_fixed_softmax_refuses_delegation_and_restores_softmax(capsys):
    assert_fails(check_fixed_softmax, delegates_to_the_package, capsys, "it calls softmax")
    assert specdec.softmax([0.0, 0.0]).tolist() == [0.5, 0.5]  # restored after the check


def test_fixed_softmax_stub_is_not_attempted(capsys):
    assert_fails(check_fixed_softmax, stub, capsys, "not attempted yet")


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


def test_entropy_solution_passes(capsys):
    assert check_entropy_bits(solution.entropy_bits)
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize("wrong", [naive_entropy, entropy_in_nats, entropy_of_whole_batch, drops_the_minus_sign])
def test_entropy_wrong_answers_fail(wrong, capsys):
    assert_fails(check_entropy_bits, wrong, capsys)


def test_entropy_stub_is_not_attempted(capsys):
    assert_fails(check_entropy_bits, stub, capsys, "not attempted yet")
