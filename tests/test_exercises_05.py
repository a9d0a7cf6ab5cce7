"""Notebook 05's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import numpy as np
import pytest
from helpers import copy_of, diagnosis
from helpers import load_solution as load

import specdec
from checkers import ex05
from specdec import SamplingParams, softmax, top_k_filter, top_p_filter

pipeline_solution = load("ex05_pipeline_probs")
fixed_solution = load("ex05_fixed_top_k_top_p")
order_solution = load("ex05_which_order")


def stub(*args):
    raise NotImplementedError


def nucleus(z, p):
    """Top-p on logits (the package filter), for building wrong pipelines below."""
    return top_p_filter(z, p) if p < 1 else z


# --- Exercise 1: pipeline_probs -------------------------------------------------------------


def no_renormalisation(logits, params):  # the seed post's mistake: top-p on the raw masses of the top-k survivors
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature == 0:
        return softmax(x, 0)
    z = (x - x.max(axis=-1, keepdims=True)) / params.temperature
    probs = softmax(z)
    if params.top_k is not None:
        probs = np.where(np.isfinite(top_k_filter(z, params.top_k)), probs, 0.0)
    if params.top_p < 1:
        beats = probs[..., None, :] > probs[..., :, None]
        above = (beats * probs[..., None, :]).sum(axis=-1)
        probs = np.where(above < params.top_p, probs, 0.0)
    if params.min_p > 0:
        probs = np.where(probs >= params.min_p * probs.max(axis=-1, keepdims=True), probs, 0.0)
    return probs / probs.sum(axis=-1, keepdims=True)


def top_p_before_top_k(logits, params):  # the wrong order
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature == 0:
        return softmax(x, 0)
    z = nucleus((x - x.max(axis=-1, keepdims=True)) / params.temperature, params.top_p)
    if params.top_k is not None:
        z = top_k_filter(z, params.top_k)
    return softmax(specdec.min_p_filter(z, params.min_p))


def temperature_last(logits, params):  # filters on the untempered logits, temperature at the end
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature == 0:
        return softmax(x, 0)
    z = x if params.top_k is None else top_k_filter(x, params.top_k)
    z = specdec.min_p_filter(nucleus(z, params.top_p), params.min_p)
    return softmax(z, params.temperature)


def divides_by_zero(logits, params):  # the seed: x / T with no greedy case (T = 0 gives inf and NaN)
    x = np.asarray(logits, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = x / params.temperature
    if params.top_k is not None:
        z = top_k_filter(z, params.top_k)
    return softmax(specdec.min_p_filter(nucleus(z, params.top_p), params.min_p))


def divides_before_subtracting_max(logits, params):  # (x / T) - max: a tiny T overflows x / T to inf
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature == 0:
        return softmax(x, 0)
    with np.errstate(over="ignore", invalid="ignore"):
        z = x / params.temperature
        z = z - z.max(axis=-1, keepdims=True)
    if params.top_k is not None:
        z = top_k_filter(z, params.top_k)
    return softmax(specdec.min_p_filter(nucleus(z, params.top_p), params.min_p))


def divides_without_subtracting_max(logits, params):  # x / T straight into the filters: 2 / 1e-308 is +inf
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature == 0:
        return softmax(x, 0)
    with np.errstate(over="ignore"):
        z = x / params.temperature
    if params.top_k is not None:
        z = top_k_filter(z, params.top_k)
    return softmax(specdec.min_p_filter(nucleus(z, params.top_p), params.min_p))


def nan_at_temperature_zero(logits, params):  # right for T > 0; at T = 0 its own softmax of (x - max) / 0 is NaN
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature > 0:
        return pipeline_solution.pipeline_probs(x, params)
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = np.exp((x - x.max(axis=-1, keepdims=True)) / params.temperature)
        return weights / weights.sum(axis=-1, keepdims=True)


def ignores_min_p(logits, params):
    return pipeline_solution.pipeline_probs(logits, SamplingParams(params.temperature, params.top_k, params.top_p))


def min_p_absolute(logits, params):  # p_i >= min_p instead of p_i >= min_p * p_max
    probs = pipeline_solution.pipeline_probs(logits, SamplingParams(params.temperature, params.top_k, params.top_p))
    if params.min_p > 0 and params.temperature > 0:
        probs = np.where(probs >= params.min_p, probs, 0.0)
        probs = probs / probs.sum(axis=-1, keepdims=True)
    return probs


def min_p_before_temperature(logits, params):  # min-p on the untempered distribution
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature == 0:
        return softmax(x, 0)
    keep = np.isfinite(specdec.min_p_filter(x, params.min_p))
    probs = pipeline_solution.pipeline_probs(x, SamplingParams(params.temperature, params.top_k, params.top_p))
    probs = np.where(keep, probs, 0.0)
    return probs / probs.sum(axis=-1, keepdims=True)


def greedy_last_maximum(logits, params):  # greedy ties broken towards the last index
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature == 0:
        last = x.shape[-1] - 1 - np.argmax(x[..., ::-1], axis=-1)
        return np.eye(x.shape[-1])[last]
    return pipeline_solution.pipeline_probs(x, params)


def exactly_k_tokens(logits, params):  # top-k that breaks ties by position
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature == 0 or params.top_k is None or params.top_k >= x.shape[-1]:
        return pipeline_solution.pipeline_probs(x, params)
    z = (x - x.max(axis=-1, keepdims=True)) / params.temperature
    drop = np.argsort(-z, axis=-1, kind="stable")[..., params.top_k :]
    np.put_along_axis(z, drop, -np.inf, axis=-1)
    return softmax(specdec.min_p_filter(nucleus(z, params.top_p), params.min_p))


def batch_maximum(logits, params):  # x - x.max(): one row's code on a batch, so a tiny T underflows whole rows
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature == 0:
        return softmax(x, 0)
    with np.errstate(over="ignore"):
        z = (x - x.max()) / params.temperature
    if params.top_k is not None:
        z = top_k_filter(z, params.top_k)
    return softmax(specdec.min_p_filter(nucleus(z, params.top_p), params.min_p))


def delegates_pipeline_to_sampling_probs(logits, params):  # the package's pipeline, not one built from the filters
    return specdec.sampling_probs(logits, params)


def delegates_pipeline_to_the_composition(logits, params):
    return specdec.pipeline.composed_sampling_probs(logits, params)


def delegates_pipeline_to_the_checker(logits, params):  # the checker's reference, under the checker's name
    return ex05.REFERENCE_PROBS(logits, params)


def float64_from_float32_arithmetic(logits, params):  # float64 dtype, but computed in float32 (about 7 digits)
    probs = pipeline_solution.pipeline_probs(logits, params)
    return probs.astype(np.float32).astype(np.float64)


def float32_result(logits, params):  # right tokens, but the probabilities rounded to float32 (rtol 1e-9 fails)
    return pipeline_solution.pipeline_probs(logits, params).astype(np.float32)


def test_pipeline_solution_passes():
    assert ex05.check_pipeline_probs(pipeline_solution.pipeline_probs)


def test_the_checkers_reference_is_the_one_composed_pipeline():  # each oracle once: notebook 05's definition
    assert ex05.REFERENCE_PROBS is specdec.pipeline.composed_sampling_probs


def filters_without_special_cases(logits, params):  # only top_k=None skipped: top_p=1 and min_p=0 keep everything
    x = np.asarray(logits, dtype=np.float64)
    if params.temperature == 0:
        return softmax(x, 0)
    z = (x - x.max(axis=-1, keepdims=True)) / params.temperature
    if params.top_k is not None:
        z = top_k_filter(z, params.top_k)
    return softmax(specdec.min_p_filter(top_p_filter(z, params.top_p), params.min_p))


def test_disabled_top_p_and_min_p_need_no_special_case():  # what Exercise 1's statement says
    assert ex05.check_pipeline_probs(filters_without_special_cases)


def test_the_exported_composition_passes():  # notebook 05's reference implementation, shown after the exercise
    assert ex05.check_pipeline_probs(copy_of(specdec.pipeline.composed_sampling_probs))
    assert not ex05.check_pipeline_probs(specdec.pipeline.composed_sampling_probs)  # the reference itself


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        no_renormalisation,
        top_p_before_top_k,
        temperature_last,
        divides_by_zero,
        divides_before_subtracting_max,
        divides_without_subtracting_max,
        nan_at_temperature_zero,
        ignores_min_p,
        min_p_absolute,
        min_p_before_temperature,
        greedy_last_maximum,
        exactly_k_tokens,
        batch_maximum,
        float64_from_float32_arithmetic,
        float32_result,
    ],
)
def test_pipeline_rejects(wrong, capsys):
    assert not ex05.check_pipeline_probs(wrong)
    assert "✗" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong",
    [delegates_pipeline_to_sampling_probs, delegates_pipeline_to_the_composition, delegates_pipeline_to_the_checker],
)
def test_pipeline_refuses_delegation(wrong, capsys):
    assert not ex05.check_pipeline_probs(wrong)
    out = capsys.readouterr().out
    assert "your function calls" in out
    assert "build the pipeline from top_k_filter, top_p_filter, min_p_filter and softmax" in out  # what Ex1 asks
    assert specdec.sampling_probs([0.0, 0.0]).tolist() == [0.5, 0.5]  # restored
    assert ex05.REFERENCE_PROBS(np.zeros(2), SamplingParams()).tolist() == [0.5, 0.5]


def test_a_precision_failure_says_so(capsys):
    assert not ex05.check_pipeline_probs(float32_result)
    out = capsys.readouterr().out
    assert "returned float32 probabilities where float64 is asked" in out and "only the dtype is wrong" in out
    assert not ex05.check_pipeline_probs(float64_from_float32_arithmetic)
    assert "float32 precision" in capsys.readouterr().out


def test_a_ragged_answer_gets_a_message_not_a_crash(capsys):
    assert not ex05.check_pipeline_probs(lambda logits, params: [[1.0], [0.5, 0.5]])
    assert "returned a list where a numpy array is asked" in capsys.readouterr().out


def forgets_return(logits, params):  # computes the answer, then falls off the end: returns None
    pipeline_solution.pipeline_probs(logits, params)


def wrong_in_one_batch_row(logits, params):  # right everywhere except row (1, 2) of the (3, 4, 30) batch
    probs = pipeline_solution.pipeline_probs(logits, params)
    if np.ndim(logits) == 3:
        probs[1, 2] = np.roll(probs[1, 2], 1)
    return probs


def ignores_the_temperature_once_filtered(logits, params):  # T = 1 whenever T > 0
    temperature = 1.0 if params.temperature > 0 else 0.0
    return pipeline_solution.pipeline_probs(
        logits, SamplingParams(temperature, params.top_k, params.top_p, params.min_p)
    )


def test_a_crash_on_a_batch_says_where_to_find_its_arguments(capsys):
    def crashes_on_batches(logits, params):
        if np.ndim(logits) > 1:
            raise ValueError("only one row")
        return pipeline_solution.pipeline_probs(logits, params)

    assert not ex05.check_pipeline_probs(crashes_on_batches)
    assert (
        "only one row" in (out := capsys.readouterr().out) and "(the exact arguments: ex05.pipeline_cases()[7])" in out
    )
    assert "temperature 0" not in out and "overflowed" not in out  # no temperature trap in this case


def test_the_temperature_traps_are_named_only_on_their_own_cases(capsys):
    def crashes_with_inf(logits, params):  # an inf error on the very first case (T = 1): no trap there
        raise ValueError("logits contains +inf")

    assert not ex05.check_pipeline_probs(crashes_with_inf)
    out = capsys.readouterr().out
    assert "raised ValueError: logits contains +inf" in out and "temperature 0" not in out and "x / T" not in out


def test_a_nan_at_temperature_zero_names_the_division_not_an_empty_row(capsys):
    with np.errstate(all="ignore"):
        assert not ex05.check_pipeline_probs(nan_at_temperature_zero)
    out = capsys.readouterr().out
    assert "at temperature 0 your code divided by T (T = 0 means greedy: one-hot on the first maximum): got NaN" in out
    assert "no token survived" not in out


@pytest.mark.parametrize("checker", [ex05.check_pipeline_probs, ex05.check_fixed_top_k_top_p, ex05.check_which_order])
def test_the_stub_message_is_only_not_attempted(checker, capsys):
    assert not checker(stub)
    assert "not attempted yet" in (out := capsys.readouterr().out) and "exact arguments" not in out


def test_a_missing_return_is_named(capsys):
    assert not ex05.check_pipeline_probs(forgets_return)
    out = capsys.readouterr().out
    assert "returned None (is a `return` missing?)" in out and "got shape ()" not in out


def test_a_wrong_batch_row_is_named_and_shown_whole(capsys):
    assert not ex05.check_pipeline_probs(wrong_in_one_batch_row)
    out = capsys.readouterr().out
    assert "row (1, 2) of logits shape (3, 4, 30)" in out
    assert "..." not in out  # the row's 30 logits, and what came back, in full
    assert "ex05.pipeline_cases()[17]" in out  # where to get the exact logits to reproduce it
    row = ex05.pipeline_cases()[17][0][1, 2]
    assert all(f"{v:.6f}".rstrip("0") in out for v in row)  # every logit of that row is shown


def test_the_softmax_note_is_at_the_temperature_of_the_case(capsys):
    assert not ex05.check_pipeline_probs(ignores_the_temperature_once_filtered)
    out = capsys.readouterr().out  # the first failing case: logits [3, 1, 2] at T = 0.5
    assert "softmax of the logits at T=0.5" in out and "0.866813" in out  # softmax([3, 1, 2] / 0.5)
    assert "0.665241" not in out.split("same kept tokens")[0]  # not the T = 1 softmax in the note


def test_pipeline_solution_matches_the_package_on_random_rows(rng):
    for _ in range(40):
        logits = rng.normal(scale=rng.uniform(0.2, 3), size=(3, int(rng.integers(2, 80))))
        params = SamplingParams(
            float(rng.choice([0.0, 0.5, 1.0, 1.7])),
            None if rng.random() < 0.3 else int(rng.integers(1, 90)),
            float(rng.choice([1.0, 0.9, 0.5, 0.05])),
            float(rng.choice([0.0, 0.02, 0.2])),
        )
        expected = specdec.sampling_probs(logits, params)
        got = pipeline_solution.pipeline_probs(logits, params)
        np.testing.assert_array_equal(got > 0, expected > 0)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300)


# --- Exercise 2: fixed_top_k_top_p ------------------------------------------------------------


def renormalise_at_the_end_only(logits, top_k, top_p):  # the buggy code, unchanged
    return ex05.buggy_top_k_top_p(logits, top_k, top_p)


def fix_that_breaks_ties(logits, top_k, top_p):  # renormalises, but top-k keeps exactly k tokens
    logits = np.asarray(logits, dtype=np.float64)
    probs = softmax(logits)
    keep = np.zeros(logits.size, dtype=bool)
    keep[np.argsort(-logits, kind="stable")[:top_k]] = True
    probs = np.where(keep, probs, 0.0)
    probs = probs / probs.sum()
    beats = probs[None, :] > probs[:, None]
    above = (beats * probs[None, :]).sum(axis=1)
    probs = np.where(above < top_p, probs, 0.0)
    return probs / probs.sum()


def fix_with_inclusive_cumsum(logits, top_k, top_p):  # renormalises, but keeps a running sum <= p (seed post)
    logits = np.asarray(logits, dtype=np.float64)
    probs = softmax(logits)
    probs = np.where(logits >= np.sort(logits)[-min(top_k, logits.size)], probs, 0.0)
    probs = probs / probs.sum()
    beats_or_ties = probs[None, :] >= probs[:, None]
    including = (beats_or_ties * probs[None, :]).sum(axis=1)
    probs = np.where(including <= top_p, probs, 0.0)  # can keep nothing: 0 / 0
    with np.errstate(invalid="ignore"):
        return probs / probs.sum()


def fix_with_less_or_equal(logits, top_k, top_p):  # renormalises, but keeps i when the mass above it is <= p
    logits = np.asarray(logits, dtype=np.float64)
    probs = softmax(logits)
    probs = np.where(logits >= np.sort(logits)[-min(top_k, logits.size)], probs, 0.0)
    probs = probs / probs.sum()
    beats = probs[None, :] > probs[:, None]
    above = (beats * probs[None, :]).sum(axis=1)
    probs = np.where(above <= top_p, probs, 0.0)  # the boundary token, whose mass above is exactly p, stays
    return probs / probs.sum()


def fix_by_scaling_p(logits, top_k, top_p):  # a right answer: mass above / total < p, written as mass above < p * total
    logits = np.asarray(logits, dtype=np.float64)
    probs = softmax(logits)
    probs = np.where(logits >= np.sort(logits)[-min(top_k, logits.size)], probs, 0.0)
    beats = probs[None, :] > probs[:, None]
    above = (beats * probs[None, :]).sum(axis=1)
    probs = np.where(above < top_p * probs.sum(), probs, 0.0)
    return probs / probs.sum()


def delegates_to_sampling_probs(logits, top_k, top_p):  # the instructions' formula, called directly
    return specdec.sampling_probs(logits, SamplingParams(1.0, top_k, top_p))


def delegates_to_the_composition(logits, top_k, top_p):
    from specdec.pipeline import composed_sampling_probs

    return composed_sampling_probs(logits, SamplingParams(1.0, top_k, top_p))


def delegates_to_the_checker(logits, top_k, top_p):
    return ex05.top_k_top_p(logits, top_k, top_p)


@pytest.mark.parametrize("wrong", [delegates_to_sampling_probs, delegates_to_the_composition, delegates_to_the_checker])
def test_fixed_refuses_delegation(wrong, capsys):
    assert not ex05.check_fixed_top_k_top_p(wrong)
    out = capsys.readouterr().out
    assert "your function calls" in out
    assert "fix buggy_top_k_top_p" in out and "write yourself" not in out  # Ex2 asks for a fix, not a pipeline
    assert specdec.sampling_probs([0.0, 0.0]).tolist() == [0.5, 0.5]  # restored


def test_fixed_solution_passes():
    assert ex05.check_fixed_top_k_top_p(fixed_solution.fixed_top_k_top_p)


def test_an_equivalent_fix_passes():  # the exact-boundary cases reject `<=`, not a right answer written otherwise
    assert ex05.check_fixed_top_k_top_p(fix_by_scaling_p)


def test_the_boundary_case_is_exact():  # the mass above the tied pair is 0.75 to the last bit, after top-k
    probs = softmax(np.log(ex05.EXACT_HALVES))
    kept = np.where(np.arange(probs.size) < 4, probs, 0.0)
    assert (kept / kept.sum())[:4].tolist() == [0.5, 0.25, 0.125, 0.125]


@pytest.mark.parametrize(
    "wrong",
    [stub, renormalise_at_the_end_only, fix_that_breaks_ties, fix_with_inclusive_cumsum, fix_with_less_or_equal],
)
def test_fixed_rejects(wrong, capsys):
    assert not ex05.check_fixed_top_k_top_p(wrong)
    assert "✗" in capsys.readouterr().out


def test_the_buggy_version_is_top_p_then_top_k_in_disguise(rng):
    """The claim in the solution: un-renormalised top-p after top-k = top-p on the full distribution, then top-k."""
    for _ in range(200):
        logits = rng.normal(scale=rng.uniform(0.3, 3), size=int(rng.integers(2, 40)))
        top_k, top_p = int(rng.integers(1, 45)), float(rng.uniform(0.05, 1.0))
        buggy = ex05.buggy_top_k_top_p(logits, top_k, top_p)
        p_then_k = softmax(top_k_filter(top_p_filter(logits, top_p), top_k))
        np.testing.assert_array_equal(buggy > 0, p_then_k > 0)


# --- Exercise 3: which_order --------------------------------------------------------------------


def always_the_right_order(logits, params, probs):
    return ex05.ORDERS[0]


def two_orders_only(logits, params, probs):  # knows the pipeline and "top-p first", forgets the temperature
    if np.array_equal(order_solution.apply_in_order(logits, params, ex05.ORDERS[0]) > 0, np.asarray(probs) > 0):
        return ex05.ORDERS[0]
    return ex05.ORDERS[1]


def returns_an_index(logits, params, probs):
    return order_solution.ORDERS.index(order_solution.which_order(logits, params, probs))


def ignores_the_temperature(logits, params, probs):  # tries the three orders, all at T = 1
    at_one = SamplingParams(1.0, params.top_k, params.top_p)
    return order_solution.which_order(logits, at_one, probs) or ex05.ORDERS[0]


def returns_an_array(logits, params, probs):  # np.array(...) of the answer: comparing it must not crash the checker
    return np.array([order_solution.which_order(logits, params, probs)] * 2)


def delegates_to_the_checkers_orders(logits, params, probs):
    for order in ex05.ORDERS:
        candidate = ex05.filtered_in_order(logits, params, order)
        if np.array_equal(candidate > 0, np.asarray(probs) > 0):
            return order
    return None


def test_which_order_solution_passes():
    assert ex05.check_which_order(order_solution.which_order)
    assert order_solution.ORDERS == ex05.ORDERS


@pytest.mark.parametrize(
    "wrong",
    [stub, always_the_right_order, two_orders_only, returns_an_index, ignores_the_temperature, returns_an_array],
)
def test_which_order_rejects(wrong, capsys):
    assert not ex05.check_which_order(wrong)
    assert "✗" in capsys.readouterr().out


def test_which_order_names_the_type_with_the_right_article(capsys):
    assert not ex05.check_which_order(returns_an_index)
    out = capsys.readouterr().out
    assert "returned an int, not a string" in out and "a int" not in out


def test_which_order_names_a_missing_return_or_no_order_matched(capsys):  # a loop where no order matched
    def loop_that_matches_nothing(logits, params, probs):  # compares with the temperature forgotten: never equal
        for order in order_solution.ORDERS:
            if np.allclose(
                order_solution.apply_in_order(logits, SamplingParams(1.0, params.top_k, 0.999), order), probs
            ):
                return order

    assert not ex05.check_which_order(loop_that_matches_nothing)
    out = capsys.readouterr().out
    assert "returned None: a `return` is missing, or none of your three orders reproduced `probs`" in out
    assert "(compare the kept sets `probs > 0` first)" in out


def test_fixed_names_a_missing_return(capsys):
    assert not ex05.check_fixed_top_k_top_p(lambda logits, top_k, top_p: None)
    assert "returned None (is a `return` missing?)" in capsys.readouterr().out


def test_which_order_refuses_the_checkers_own_orders(capsys):
    assert not ex05.check_which_order(delegates_to_the_checkers_orders)
    out = capsys.readouterr().out
    assert "calls filtered_in_order" in out and "write the three orders yourself" in out
    assert ex05.filtered_in_order(np.zeros(2), SamplingParams(top_k=2), ex05.ORDERS[0]).tolist() == [0.5, 0.5]


def test_every_order_is_an_answer_in_the_cases():
    answers = [answer for *_, answer in ex05.which_order_cases()]
    assert set(answers) == set(ex05.ORDERS)


# --- every message: the diagnosis first, the arrays after ----------------------------------------

PIPELINE = ex05.check_pipeline_probs
FIXED = ex05.check_fixed_top_k_top_p
ORDER = ex05.check_which_order
DIAGNOSES = [  # (checker, wrong answer, the words that must come before the message's first array)
    (PIPELINE, no_renormalisation, "kept tokens"),
    (PIPELINE, top_p_before_top_k, "kept tokens"),
    (PIPELINE, temperature_last, "kept tokens"),
    (PIPELINE, divides_by_zero, "at temperature 0 your code divided by T (T = 0 means greedy: one-hot on the first"),
    (PIPELINE, divides_before_subtracting_max, "x / T overflowed to inf for T = 1e-308: subtract the row maximum"),
    (PIPELINE, divides_without_subtracting_max, "x / T overflowed to inf for T = 1e-308: subtract the row maximum"),
    (PIPELINE, nan_at_temperature_zero, "at temperature 0 your code divided by T"),
    (PIPELINE, ignores_min_p, "kept tokens"),
    (PIPELINE, min_p_absolute, "kept tokens"),
    (PIPELINE, min_p_before_temperature, "kept tokens"),
    (PIPELINE, greedy_last_maximum, "kept tokens"),
    (PIPELINE, exactly_k_tokens, "kept tokens"),
    (PIPELINE, batch_maximum, "a whole row became -inf at T = 1e-308: subtract each row's own maximum"),
    (PIPELINE, float64_from_float32_arithmetic, "right only to about float32 precision (compute in float64"),
    (PIPELINE, float32_result, "returned float32 probabilities where float64 is asked"),
    (PIPELINE, forgets_return, "returned None (is a `return` missing?)"),
    (PIPELINE, wrong_in_one_batch_row, "kept tokens"),
    (PIPELINE, ignores_the_temperature_once_filtered, "same kept tokens, wrong probabilities"),
    (PIPELINE, delegates_pipeline_to_sampling_probs, "your function calls sampling_probs"),
    (PIPELINE, delegates_pipeline_to_the_checker, "your function calls"),
    (FIXED, renormalise_at_the_end_only, "kept tokens"),
    (FIXED, fix_that_breaks_ties, "kept tokens"),
    (FIXED, fix_with_inclusive_cumsum, "no token survived (an all-zero row), so the final division is 0/0: got NaN"),
    (FIXED, fix_with_less_or_equal, "kept tokens"),
    (FIXED, delegates_to_the_checker, "your function calls top_k_top_p"),
    (ORDER, always_the_right_order, "you said 'temperature, top-k, top-p', but this output came from"),
    (ORDER, two_orders_only, "you said"),
    (ORDER, returns_an_index, "returned an int, not a string"),
    (ORDER, ignores_the_temperature, "you said"),
    (ORDER, returns_an_array, "returned a numpy array, not a string"),
    (ORDER, delegates_to_the_checkers_orders, "your function calls filtered_in_order"),
]


@pytest.mark.parametrize(("checker", "wrong", "words"), DIAGNOSES, ids=[w.__name__ for _, w, _ in DIAGNOSES])
def test_every_message_says_what_is_wrong_before_any_array(checker, wrong, words, capsys):
    """A counterexample's arrays (up to 64 logits) come after the one-line diagnosis, never before it."""
    with np.errstate(all="ignore"):
        assert not checker(wrong)
    message = diagnosis(capsys.readouterr().out)
    first_words = ("kept tokens", "same kept", "got NaN", "right only", "your function", "raised", "you")
    assert message.startswith((*first_words, "at temperature 0", "x / T", "a whole row", "no token survived"))
    before_arrays = message.split("[", 1)[0]
    assert words in before_arrays, message
    if "(for " in message:  # the input comes last, in parentheses (checkers.located)
        assert message.index("(for ") > message.index(words)
