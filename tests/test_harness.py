"""The benchmark harness (specdec/harness.py, written in notebook 10).

Timings are machine-dependent, so for them only the bookkeeping is tested: totals, ratios and fields.
Everything else is checked against hand computations: acceptance counts on hand-made rounds,
held-out quality on a tiny table model whose probabilities are known exactly.
"""

import dataclasses
import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest

from specdec import LanguageModel, SamplingParams, generate, speculative_generate
from specdec.exact import TableModel
from specdec.gpt import GPT, expected_shapes
from specdec.harness import (
    LOOP_FRACTION,
    PARTS,
    Breakdown,
    GapFactors,
    MeasuredCosts,
    Prediction,
    Quality,
    Repetition,
    Summary,
    SweepRow,
    TimedModel,
    TimeSplit,
    acceptance_by_position,
    acceptance_counts,
    gap_factors,
    heldout_prompts,
    heldout_quality,
    label,
    measure_costs,
    pooled_alpha,
    predict,
    repeated_fraction,
    repetition,
    round_breakdown,
    seed_for,
    side_by_side,
    summarize,
    sweep,
    text_bits,
)
from specdec.ngram import NGramModel
from specdec.speculative import SpeculativeResult
from specdec.timing import expected_tokens, predicted_speedup

GREEDY, T1 = SamplingParams(0.0), SamplingParams(1.0)


def rounds(accepted, drafted, seconds: float = 0.0) -> SpeculativeResult:
    """A SpeculativeResult holding only per-round counts (what the acceptance functions read) and its seconds."""
    tokens, counts = np.zeros(0, dtype=np.int64), (list(accepted), list(drafted))
    return SpeculativeResult(tokens, len(accepted), 0, sum(drafted), sum(accepted), seconds, *counts)


# --- acceptance --------------------------------------------------------------------------


def test_acceptance_counts_by_hand():
    # gamma = 4: round 1 accepts 1 (tests 1, 2), round 2 accepts all 4, round 3 rejects the first,
    # round 4 was cut to 2 drafts at the end and accepts both (tests 1, 2; nothing rejected).
    tested, accepted = acceptance_counts(rounds([1, 4, 0, 2], [4, 4, 4, 2]))
    assert tested.tolist() == [4, 3, 1, 1]
    assert accepted.tolist() == [3, 2, 1, 1]


def test_acceptance_by_position_by_hand_with_unreached_positions():
    rates = acceptance_by_position([rounds([1, 0], [4, 4]), rounds([2], [3])])
    # position 1: 3 tested, 2 accepted; 2: 2 tested, 1 accepted; 3: 1 tested, 0; 4: never reached
    np.testing.assert_allclose(rates, [2 / 3, 1 / 2, 0.0, np.nan])
    assert math.isnan(rates[3])


def test_pooled_alpha_is_accepted_over_tested_and_matches_the_result_property():
    result = rounds([1, 4, 0, 2], [4, 4, 4, 2])
    assert pooled_alpha(result) == pytest.approx(7 / 9)
    assert pooled_alpha(result) == pytest.approx(result.alpha)
    assert result.acceptance_rate == pytest.approx(7 / 14)  # the naive rate is lower: untested drafts count


def test_pooled_alpha_pools_several_results():
    assert pooled_alpha([rounds([0], [4]), rounds([4], [4])]) == pytest.approx(4 / 5)


def test_acceptance_of_no_rounds():
    assert acceptance_by_position([]).shape == (0,)
    assert math.isnan(pooled_alpha(rounds([], [])))


def test_acceptance_by_position_and_pooled_alpha_on_a_real_run(tiny_pair):
    target, draft = tiny_pair
    result = speculative_generate(target, draft, [1, 2, 3], 25, T1, 3, np.random.default_rng(0))
    tested, accepted = acceptance_counts(result)
    assert accepted.sum() == result.accepted
    assert pooled_alpha(result) == pytest.approx(result.alpha)
    # full rounds: mean tokens per round = 1 + a1 + a1 a2 + a1 a2 a3, exactly
    full = [n + 1 for n, g in zip(result.accepted_per_round, result.drafted_per_round, strict=True) if g == 3]
    full_only = rounds([n - 1 for n in full], [3] * len(full))
    assert 1 + np.cumprod(acceptance_by_position(full_only)).sum() == pytest.approx(np.mean(full))


# --- tiny models -------------------------------------------------------------------------


@pytest.fixture
def tiny_pair(rng):
    """A tiny random GPT target and a 3-gram draft over the same 11 tokens."""
    shapes = expected_shapes(vocab_size=11, max_context=40, d_model=8, n_layer=2)
    target = GPT({key: 0.5 * rng.standard_normal(shape) for key, shape in shapes.items()}, n_head=2, name="tiny")
    draft = NGramModel.build(rng.integers(0, 11, 2000), order=3, vocab_size=11, name="tiny-draft")
    return target, draft


PROMPTS = [np.array([1, 2, 3]), np.array([4, 5]), np.array([6, 7, 8, 9])]


# --- side_by_side ------------------------------------------------------------------------


def test_side_by_side_bookkeeping(tiny_pair):
    target, draft = tiny_pair
    rows = side_by_side(target, draft, PROMPTS, 20, T1, gammas=[1, 3], seed=5)
    assert [row.gamma for row in rows] == [1, 3]
    for row in rows:
        assert isinstance(row, Summary)
        spec, plain = row.speculative, row.plain
        assert len(spec) == len(plain) == len(PROMPTS)
        assert row.tokens == len(PROMPTS) * 20 == sum(r.tokens.size for r in spec)
        assert row.target_calls == sum(r.target_calls for r in spec)
        assert row.tokens_per_call == pytest.approx(row.tokens / row.target_calls)
        plain_seconds, spec_seconds = sum(r.seconds for r in plain), sum(r.seconds for r in spec)
        assert row.plain_tokens_per_second == pytest.approx(sum(r.tokens.size for r in plain) / plain_seconds)
        assert row.speculative_tokens_per_second == pytest.approx(row.tokens / spec_seconds)
        assert row.speedup == pytest.approx(row.speculative_tokens_per_second / row.plain_tokens_per_second)
        assert row.speedup == pytest.approx(plain_seconds / spec_seconds)
        assert row.drafted == sum(r.drafted for r in spec)
        assert row.accepted == sum(r.accepted for r in spec)
        assert row.alpha == pytest.approx(pooled_alpha(spec))
        assert row.acceptance_rate == pytest.approx(row.accepted / row.drafted)
        assert acceptance_by_position(spec).shape == (row.gamma,)
        assert 1 <= row.tokens_per_call <= row.gamma + 1
        assert row.costs is not None and row.costs.unit > 0


def test_results_are_frozen_dataclasses_with_named_fields(tiny_pair):
    target, draft = tiny_pair
    row = side_by_side(target, draft, PROMPTS[:1], 8, T1, gammas=[2])[0]
    for result in (row, row.costs):
        assert dataclasses.is_dataclass(result)
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.gamma = 3  # a result is read, not edited
    with pytest.raises(TypeError):
        row["speedup"]  # fields have names, not string keys


def test_side_by_side_runs_what_it_says(tiny_pair):
    """The same prompts, the same seeds for the plain and the speculative run of a prompt, every gamma."""
    target, draft = tiny_pair
    row = side_by_side(target, draft, PROMPTS, 15, T1, gammas=[2], seed=9)[0]
    for i, prompt in enumerate(PROMPTS):
        plain = generate(target, prompt, 15, T1, seed_for(9, i))
        spec = speculative_generate(target, draft, prompt, 15, T1, 2, seed_for(9, i))
        np.testing.assert_array_equal(row.plain[i].tokens, plain.tokens)
        np.testing.assert_array_equal(row.speculative[i].tokens, spec.tokens)
        assert row.speculative[i].accepted_per_round == spec.accepted_per_round


@pytest.mark.parametrize("verify", ["token", "block"])
def test_side_by_side_and_round_breakdown_pass_the_verification_rule_on(tiny_pair, verify):
    target, draft = tiny_pair
    row = side_by_side(target, draft, PROMPTS, 15, T1, gammas=[3], seed=4, verify=verify)[0]
    split = round_breakdown(target, draft, PROMPTS, 15, T1, 3, seed=4, verify=verify)
    spec_tokens = 0
    for i, prompt in enumerate(PROMPTS):
        spec = speculative_generate(target, draft, prompt, 15, T1, 3, seed_for(4, i), verify=verify)
        np.testing.assert_array_equal(row.speculative[i].tokens, spec.tokens)
        spec_tokens += spec.tokens.size
    assert split.speculative.tokens == spec_tokens
    with pytest.raises(ValueError, match='verify must be "token" or "block"'):
        side_by_side(target, draft, PROMPTS, 10, T1, verify="tree")


def test_side_by_side_greedy_outputs_are_identical(tiny_pair):
    target, draft = tiny_pair
    rows = side_by_side(target, draft, PROMPTS, 20, GREEDY, gammas=[1, 4])
    assert all(row.identical_outputs for row in rows)


def one_second_slower_every_other_call(function):
    """function, with 1 s added to the `seconds` of the result of its 2nd, 4th, ... call."""
    calls = itertools.count()

    def slowed(*args, **kwargs):
        result = function(*args, **kwargs)
        if next(calls) % 2:
            result.seconds += 1.0
        return result

    return slowed


def test_side_by_side_repeats_keep_the_fastest_time(tiny_pair, monkeypatch):
    """With 3 repeats and every other call 1 s slower, each prompt has a slow and a fast run on each side:
    only fast ones may be kept."""
    import specdec.harness

    for name in ("generate", "speculative_generate"):
        monkeypatch.setattr(specdec.harness, name, one_second_slower_every_other_call(getattr(specdec.harness, name)))
    target, draft = tiny_pair
    row = side_by_side(target, draft, PROMPTS, 10, T1, gammas=[2], repeats=3)[0]
    kept = row.plain + row.speculative
    assert len(kept) == 2 * len(PROMPTS) and all(r.seconds < 1.0 for r in kept), [r.seconds for r in kept]
    plain_speed = sum(r.tokens.size for r in row.plain) / sum(r.seconds for r in row.plain)  # the kept runs' times
    assert row.plain_tokens_per_second == pytest.approx(plain_speed)
    assert row.speculative_tokens_per_second == pytest.approx(row.tokens / sum(r.seconds for r in row.speculative))


def test_side_by_side_bad_input(tiny_pair):
    target, draft = tiny_pair
    with pytest.raises(ValueError, match="at least one prompt"):
        side_by_side(target, draft, [], 10, T1)
    with pytest.raises(ValueError, match="gamma"):
        side_by_side(target, draft, PROMPTS, 10, T1, gammas=[0])
    with pytest.raises(TypeError, match="SamplingParams"):
        side_by_side(target, draft, PROMPTS, 10, {"temperature": 1.0})


def test_summarize_by_hand():
    plain = [generate_result(5, 0.4), generate_result(5, 0.6)]
    spec = [rounds([2, 1], [2, 2], seconds=0.2), rounds([2, 2], [2, 2], seconds=0.3)]
    for result, tokens in zip(spec, (5, 5), strict=True):
        result.tokens = np.zeros(tokens, dtype=np.int64)
    row = summarize(2, plain, spec)
    assert row.speedup == pytest.approx(2.0)
    assert row.tokens_per_call == pytest.approx(10 / 4) and row.acceptance_rate == pytest.approx(7 / 8)
    assert row.alpha == pytest.approx(7 / 8)
    assert row.costs is None


def test_repeated_fraction_by_hand():
    assert repeated_fraction(np.arange(40)) == 0.0  # nothing repeats
    # a period-3 loop of 30 tokens: 22 windows of 9 tokens, only the first 3 are new
    assert repeated_fraction([1, 2, 3] * 10) == pytest.approx(19 / 22)
    assert repeated_fraction([5] * 20) == pytest.approx(11 / 12)  # one window, repeated 11 times
    # n counts the tokens before: with n = 2, "ab c" and "ab d" are different windows
    assert repeated_fraction([0, 1, 2, 0, 1, 3], n=2) == 0.0
    assert repeated_fraction([0, 1, 2, 0, 1, 2], n=2) == pytest.approx(1 / 4)
    assert math.isnan(repeated_fraction([1, 2, 3]))  # shorter than one window


def test_repetition_reports_the_looping_runs_and_the_figures_without_them():
    loop, fresh = np.array([7, 8] * 20), np.arange(40)  # repeated fractions 30/32 and 0
    plain = [generate_result(40, 0.4), generate_result(40, 0.8)]
    spec = [rounds([4] * 8, [4] * 8, seconds=0.1), rounds([1] * 20, [4] * 20, seconds=0.4)]  # 8 and 20 target calls
    spec[0].tokens, spec[1].tokens = loop, fresh
    row = summarize(4, plain, spec)
    loops = repetition(row)
    assert isinstance(loops, Repetition) and LOOP_FRACTION == 0.5
    assert loops.repeated == [pytest.approx(30 / 32), 0.0] and loops.looping == 1
    assert row.tokens_per_call == pytest.approx(80 / 28)
    assert loops.tokens_per_call_not_looping == pytest.approx(40 / 20)
    assert row.speedup == pytest.approx((80 / 0.5) / (80 / 1.2))
    assert loops.speedup_not_looping == pytest.approx((40 / 0.4) / (40 / 0.8))
    spec[1].tokens = loop.copy()  # every run loops: no figure without them
    loops = repetition(summarize(4, plain, spec))
    assert loops.looping == 2 and math.isnan(loops.tokens_per_call_not_looping)
    assert math.isnan(loops.speedup_not_looping)


def generate_result(tokens: int, seconds: float):
    from specdec.generation import GenerationResult

    return GenerationResult(np.zeros(tokens, dtype=np.int64), tokens, seconds)


# --- predict and gap_factors -------------------------------------------------------------


def test_predict_is_the_cost_model():
    f = {n: 1 + 0.1 * (n - 1) for n in range(1, 10)}
    prediction = predict(0.8, 4, 0.05, f)
    assert isinstance(prediction, Prediction)
    assert prediction.expected_tokens == pytest.approx(expected_tokens(0.8, 4))
    assert prediction.round_cost == pytest.approx(4 * 0.05 + f[5])
    assert prediction.speedup == pytest.approx(predicted_speedup(0.8, 4, 0.05, f))
    with pytest.raises(ValueError, match="alpha"):
        predict(1.5, 4, 0.05, f)


def test_gap_factors_multiply_to_measured_over_predicted():
    row = SimpleNamespace(  # the fields of a Summary that gap_factors reads
        plain_tokens_per_second=1000.0,
        speculative_tokens_per_second=1200 / 0.5,
        target_calls=400,
        tokens=1200,
        tokens_per_call=3.0,
        speedup=(1200 / 0.5) / 1000.0,
    )
    prediction = predict(0.8, 4, 0.05, lambda n: 1.4)
    factors = gap_factors(row, prediction, target_seconds=0.0009)
    assert isinstance(factors, GapFactors)
    product = factors.tokens * factors.plain * factors.round
    assert product == pytest.approx(factors.measured_over_predicted)
    assert factors.measured_over_predicted == pytest.approx(row.speedup / prediction.speedup)
    assert factors.plain == pytest.approx(0.001 / 0.0009)


# --- quality on a table model ------------------------------------------------------------


TABLE = [[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.25, 0.25, 0.5]]


def table_model() -> TableModel:
    """P(next | previous token) from TABLE: a model whose every probability is known."""
    return TableModel(np.log(TABLE), max_context=100)


WINDOWS = np.array([[0, 1, 2, 0], [1, 1, 0, 2]])  # predictions: 0->1, 1->2, 2->0, 1->1, 1->0, 0->2


def test_heldout_quality_at_temperature_one_by_hand():
    probs = [0.3, 0.3, 0.25, 0.6, 0.1, 0.2]
    quality = heldout_quality(table_model(), WINDOWS, T1)
    assert isinstance(quality, Quality)
    assert quality.heldout_tokens == 6
    assert quality.coverage == 1.0
    bits = -np.mean(np.log2(probs))
    assert quality.bits_per_token == pytest.approx(bits, rel=1e-12)
    assert quality.unfiltered_bits_per_token == pytest.approx(bits, rel=1e-12)


def test_heldout_quality_with_top_p_by_hand():
    # top-p 0.55 keeps: row 0 {0, 1} -> (0.625, 0.375, 0); row 1 {1} -> (0, 1, 0), since the mass above
    # token 2 is 0.6 >= 0.55; row 2 {2 and the tied 0, 1} -> all kept (the mass above 0 and 1 is 0.5 < 0.55).
    quality = heldout_quality(table_model(), WINDOWS, SamplingParams(1.0, top_p=0.55))
    kept = [0.375, 0.25, 1.0]  # 0->1 kept; 1->2 dropped; 2->0 kept; 1->1 kept; 1->0 and 0->2 dropped
    assert quality.coverage == pytest.approx(3 / 6)
    assert quality.bits_per_token == pytest.approx(-np.mean(np.log2(kept)), rel=1e-12)
    assert quality.unfiltered_bits_per_token == pytest.approx(-np.mean(np.log2([0.3, 0.3, 0.25, 0.6, 0.1, 0.2])))


def test_heldout_quality_greedy_is_top_one_accuracy_and_zero_bits():
    quality = heldout_quality(table_model(), WINDOWS, GREEDY)
    assert quality.coverage == pytest.approx(1 / 6)  # the argmaxes are 0->0, 1->1, 2->2: only 1->1 is covered
    assert quality.bits_per_token == 0.0
    assert not math.copysign(1.0, quality.bits_per_token) < 0  # 0.0, not -0.0


def test_heldout_quality_at_a_lower_temperature_by_hand():
    quality = heldout_quality(table_model(), WINDOWS, SamplingParams(0.5))
    sharpened = np.asarray(TABLE) ** 2 / (np.asarray(TABLE) ** 2).sum(axis=-1, keepdims=True)  # softmax(log p / 0.5)
    truth = [(0, 1), (1, 2), (2, 0), (1, 1), (1, 0), (0, 2)]
    expected = -np.mean([np.log2(sharpened[a, b]) for a, b in truth])
    assert quality.bits_per_token == pytest.approx(expected, rel=1e-9)


def test_heldout_quality_bad_windows():
    with pytest.raises(ValueError, match="windows"):
        heldout_quality(table_model(), np.array([0, 1, 2]), T1)


def test_text_bits_by_hand():
    model = table_model()
    bits = text_bits(model, [np.array([0]), np.array([2, 2])], [np.array([1, 1]), np.array([0])])
    # 0->1 (0.3), 1->1 (0.6); 2->0 (0.25)
    assert bits == pytest.approx(-np.mean(np.log2([0.3, 0.6, 0.25])))
    assert math.isnan(text_bits(model, [np.array([0])], [np.array([], dtype=np.int64)]))


# --- labels, sweep -----------------------------------------------------------------------


def test_labels():
    assert label(GREEDY) == "greedy"
    assert label(SamplingParams(0.0, top_k=5)) == "greedy"  # filters do not change the argmax
    assert label(T1) == "T=1"
    assert label(SamplingParams(0.7, top_k=20)) == "T=0.7, top-k 20"
    assert label(SamplingParams(1.0, top_p=0.9)) == "T=1, top-p 0.9"
    assert label(SamplingParams(1.3, top_k=5, top_p=0.95, min_p=0.1)) == "T=1.3, top-k 5, top-p 0.95, min-p 0.1"


def test_sweep_has_greedy_and_t1_rows_with_every_field(tiny_pair):
    target, draft = tiny_pair
    greedy_text = [np.concatenate([[p], generate(target, [p], 5, GREEDY).tokens]) for p in (1, 6)]
    windows = np.array(greedy_text)  # (2, 6): text the greedy setting covers entirely
    settings = [GREEDY, T1, SamplingParams(1.0, top_p=0.8)]
    gammas = {"greedy": 5, "T=1": 3, "T=1, top-p 0.8": 2}
    rows = sweep(target, draft, PROMPTS, settings, 12, gamma=gammas, windows=windows)
    assert [row.label for row in rows] == ["greedy", "T=1", "T=1, top-p 0.8"]
    assert [row.params for row in rows] == settings
    assert [row.summary.gamma for row in rows] == [5, 3, 2]
    for row in rows:
        assert isinstance(row, SweepRow) and isinstance(row.summary, Summary) and isinstance(row.quality, Quality)
        assert row.generated_bits > 0 and row.summary.costs is not None
        assert row.quality.heldout_tokens == 10
        assert 0 < row.quality.coverage <= 1
    greedy, sampled = rows[0], rows[1]
    assert greedy.summary.identical_outputs
    assert greedy.quality.coverage == 1.0 and greedy.quality.bits_per_token == 0.0  # the argmax, probability 1
    assert sampled.quality.coverage == 1.0
    assert sampled.quality.bits_per_token == pytest.approx(sampled.quality.unfiltered_bits_per_token)


def test_sweep_without_windows_has_no_quality(tiny_pair):
    target, draft = tiny_pair
    row = sweep(target, draft, PROMPTS[:1], [T1], 8, gamma=2)[0]
    assert row.quality is None and row.generated_bits > 0


# --- prompts -----------------------------------------------------------------------------


def test_heldout_prompts_start_at_line_starts_and_avoid_file_ends():
    rng = np.random.default_rng(3)
    stream = rng.integers(3, 20, 5000)
    stream[rng.choice(5000, 400, replace=False)] = 2  # newlines
    stream[rng.choice(5000, 30, replace=False)] = 0  # file ends
    prompts = heldout_prompts(stream, 12, length=16, seed=4)
    assert len(prompts) == 12 and all(p.shape == (16,) for p in prompts)
    assert all(0 not in p.tolist() for p in prompts)
    again = heldout_prompts(stream, 12, length=16, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(prompts, again, strict=True))
    for prompt in prompts:
        windows = np.lib.stride_tricks.sliding_window_view(stream, 16)
        where = np.flatnonzero((windows == prompt).all(axis=1))
        assert any(stream[w - 1] == 2 for w in where if w > 0)
    with pytest.raises(ValueError, match="line starts"):
        heldout_prompts(stream, 10_000, length=16)


# --- timing tools: shapes only -----------------------------------------------------------


def test_timed_model_passes_through_and_records(tiny_pair):
    target, _ = tiny_pair
    timed = TimedModel(target)
    state = timed.start()
    first = timed.score([1, 2, 3], state)
    second = timed.score([4], state)
    assert state.length == 4 and timed.vocab_size == 11
    expected = target.score([1, 2, 3, 4], target.start())  # (4, V) the wrapped model's own logits
    np.testing.assert_allclose(np.concatenate([first, second]), expected, atol=1e-5)
    assert isinstance(timed, LanguageModel)
    assert [n for n, _ in timed.calls] == [3, 1]
    assert all(seconds > 0 for _, seconds in timed.calls)


def test_round_breakdown_keys_and_counts(tiny_pair):
    target, draft = tiny_pair
    breakdown = round_breakdown(target, draft, PROMPTS, 12, T1, gamma=3)
    assert isinstance(breakdown, Breakdown)
    plain, spec = breakdown.plain, breakdown.speculative
    assert plain.tokens == spec.tokens == 36
    assert plain.target_calls == 36
    assert spec.target_calls < 36
    for split in (plain, spec):
        assert isinstance(split, TimeSplit)
        parts = [getattr(split, part) for part in PARTS]
        assert all(seconds >= -1e-9 for seconds in parts)  # "rest" is a difference of sums
        assert split.total == pytest.approx(sum(parts))
    assert plain.draft == 0.0


def test_measure_costs_shape(tiny_pair):
    target, draft = tiny_pair
    costs = measure_costs(target, draft, T1, [1, 2, 3], max_n=4, context=8, repeats=3)
    assert isinstance(costs, MeasuredCosts)
    assert list(costs.f) == [1, 2, 3, 4] and costs.f[1] == 1.0
    assert costs.c == pytest.approx(costs.draft_step_seconds / costs.target_seconds)
    assert costs.c > 0
