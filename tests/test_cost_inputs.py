"""The cost model's inputs measured inside the runs (specdec/harness.py, notebook 10 section 3).

`run_turns` splits a run's time into the parts the cost model charges, `turn_costs` turns those
into the unit, c, f(n) and the prompt, and `predict` / `predict_from_rounds` charge them. The
bookkeeping is checked on real runs of tiny models; the claim that in-run inputs keep predicting
when the machine changes is checked on models whose calls sleep for known times, with a
"load" that slows the target's calls only, as a second program competing for memory does: inputs
measured inside the loaded runs predict them, inputs measured on the quiet machine do not.
"""

import dataclasses
import time
from types import SimpleNamespace

import numpy as np
import pytest

from specdec import SamplingParams, generate, speculative_generate
from specdec.gpt import GPT, expected_shapes
from specdec.harness import (
    PlainTurns,
    RoundTurns,
    TimedModel,
    TurnCosts,
    calls_only,
    predict,
    predict_from_rounds,
    run_turns,
    side_by_side,
    turn_costs,
)
from specdec.ngram import NGramModel

GREEDY, T1 = SamplingParams(0.0), SamplingParams(1.0)
PROMPTS = [np.array([1, 2, 3]), np.array([4, 5]), np.array([6, 7, 8, 9])]


@pytest.fixture
def tiny_pair():
    """A tiny random GPT target and a 3-gram draft over the same 11 tokens."""
    rng = np.random.default_rng(20261201)
    shapes = expected_shapes(vocab_size=11, max_context=64, d_model=8, n_layer=2)
    target = GPT({key: 0.5 * rng.standard_normal(shape) for key, shape in shapes.items()}, n_head=2, name="tiny")
    draft = NGramModel.build(rng.integers(0, 11, 2000), order=3, vocab_size=11, name="tiny-draft")
    return target, draft


def timed_plain(target, prompt, n, params, seed=0):
    timed = TimedModel(target)
    result = generate(timed, prompt, n, params, np.random.default_rng(seed))
    return result, timed, run_turns(result, timed, None, time.perf_counter())


def timed_speculative(target, draft, prompt, n, params, gamma, seed=0):
    timed_target, timed_draft = TimedModel(target), TimedModel(draft)
    result = speculative_generate(timed_target, timed_draft, prompt, n, params, gamma, np.random.default_rng(seed))
    return result, timed_target, timed_draft, run_turns(result, timed_target, timed_draft, time.perf_counter())


# --- run_turns on real runs ----------------------------------------------------------------


def test_timed_model_records_when_each_call_starts(tiny_pair):
    target, _ = tiny_pair
    result, timed, _ = timed_plain(target, [1, 2, 3], 6, T1)
    assert len(timed.starts) == len(timed.calls) == result.target_calls == 6
    assert all(
        a + seconds <= b for a, b, (_, seconds) in zip(timed.starts, timed.starts[1:], timed.calls, strict=False)
    )


def test_run_turns_splits_a_plain_run_into_the_prompt_and_its_steps(tiny_pair):
    target, _ = tiny_pair
    result, timed, turns = timed_plain(target, [1, 2, 3], 12, T1)
    assert isinstance(turns, PlainTurns)
    assert turns.step_count == 11  # the prompt call yields the first token, 11 steps the others
    assert turns.prompt + turns.steps == pytest.approx(result.seconds)
    assert turns.prompt >= timed.calls[0][1]  # the prompt's call, and drawing the first token
    last_end = timed.starts[-1] + timed.calls[-1][1]
    assert turns.steps >= last_end - timed.starts[1]  # the steps: calls AND the sampling between them
    single = timed_plain(target, [1, 2, 3], 1, T1)[2]
    assert single.step_count == 0 and single.steps == 0.0


@pytest.mark.parametrize(("params", "gamma"), [(T1, 3), (GREEDY, 2), (T1, "auto")])
def test_run_turns_splits_a_speculative_run_round_by_round(tiny_pair, params, gamma):
    target, draft = tiny_pair
    result, timed_target, timed_draft, turns = timed_speculative(target, draft, [1, 2, 3], 30, params, gamma)
    assert isinstance(turns, RoundTurns)
    assert len(turns.turns) == result.target_calls - 1  # every round but the first, which reads the prompt
    for (n, turn, call), (m, seconds) in zip(turns.turns, timed_target.calls[1:], strict=True):
        assert n == m and call == seconds  # the call alone: the target's own timing
        assert turn >= call  # a turn is its call and more
    first_round = result.drafted_per_round[0] if result.drafted_per_round else 0
    assert turns.drafted == result.drafted - first_round == len(timed_draft.calls) - first_round
    total = turns.prompt + turns.draft + sum(turn for _, turn, _ in turns.turns)
    assert total == pytest.approx(result.seconds, rel=0.01, abs=2e-4)  # the turns tile the run


def test_run_turns_by_hand():
    """A round begins with its first draft call (its target call if it drafted nothing) and ends where the next begins.

    A run from 0.0 s to 1.0 s: the first round drafts at 0.1 and 0.2 and reads the prompt at 0.3; the second
    drafts at 0.4 and 0.45 and calls the target at 0.5 for 0.1 s; the third drafts nothing, calls at 0.8 for 0.02 s.
    """
    target = SimpleNamespace(starts=[0.3, 0.5, 0.8], calls=[(3, 0.05), (3, 0.1), (1, 0.02)])
    draft = SimpleNamespace(starts=[0.1, 0.2, 0.4, 0.45])
    turns = run_turns(SimpleNamespace(seconds=1.0), target, draft, end=1.0)
    assert turns.prompt == pytest.approx(0.4)  # the first round: from the start to the second round's first draft
    assert turns.draft == pytest.approx(0.1) and turns.drafted == 2  # 0.4 to 0.5; the third round drafted nothing
    assert [n for n, _, _ in turns.turns] == [3, 1]
    assert [turn for _, turn, _ in turns.turns] == pytest.approx([0.3, 0.2])  # 0.5 to 0.8, and 0.8 to the end
    assert [call for _, _, call in turns.turns] == pytest.approx([0.1, 0.02])
    alone = run_turns(SimpleNamespace(seconds=1.0), SimpleNamespace(starts=[0.3], calls=[(5, 0.1)]), draft, end=1.0)
    assert alone.prompt == pytest.approx(1.0) and alone.turns == [] and alone.drafted == 0  # one round: the prompt's
    assert turns.first_calls == pytest.approx(0.25)  # the draft's turn 0.1 to 0.3, then the target's call of 0.05
    assert alone.first_calls == pytest.approx(0.3)  # 0.1 to 0.3, then 0.1: the draft calls after its call are ignored
    assert target.calls[0][1] <= turns.first_calls <= turns.prompt  # the call, at most the whole first round


def test_turn_costs_by_hand():
    plain = [PlainTurns(0.010, 0.020, 10), PlainTurns(0.014, 0.040, 20)]  # unit = 0.060 s / 30 steps = 2 ms
    speculative = [  # turns: (n tokens scored, the target's turn, its call alone) of each round after the first
        RoundTurns(prompt=0.02, draft=0.003, drafted=6, turns=[(5, 0.006, 0.005)], first_calls=0.015),
        RoundTurns(0.02, 0.001, 4, turns=[(5, 0.004, 0.003), (2, 0.003, 0.002), (5, 0.006, 0.004)], first_calls=0.017),
    ]
    costs = turn_costs(plain, speculative)
    assert isinstance(costs, TurnCosts)
    assert costs.unit == pytest.approx(0.002)
    assert costs.c == pytest.approx(0.004 / 10 / 0.002)  # 0.2
    assert costs.f == pytest.approx({2: 1.5, 5: (0.016 / 3) / 0.002})
    assert list(costs.f) == [2, 5]  # by size
    assert costs.f_call == pytest.approx({2: 1.0, 5: (0.012 / 3) / 0.002})
    assert costs.prompt == pytest.approx(0.012 / 0.002)  # 6 steps
    assert costs.rounds == {2: 1, 5: 3}
    assert costs.first_calls == pytest.approx(0.016 / 0.002)  # 8 steps per run
    assert np.isnan(turn_costs([PlainTurns(0.01, 0.0, 0)], speculative).unit)
    with pytest.raises(dataclasses.FrozenInstanceError):
        costs.c = 0.1


def test_side_by_side_rows_carry_inputs_that_add_up_to_the_plain_runs(tiny_pair):
    target, draft = tiny_pair
    for row in side_by_side(target, draft, PROMPTS, 16, T1, gammas=[2, "auto"], seed=3):
        costs = row.costs
        assert isinstance(costs, TurnCosts) and set(costs.f) == set(costs.f_call) == set(costs.rounds)
        steps = sum(result.tokens.size - 1 for result in row.plain)  # every plain token but the first
        runs = len(row.plain)
        assert (costs.prompt * runs + steps) * costs.unit == pytest.approx(sum(r.seconds for r in row.plain))
        assert sum(costs.rounds.values()) == row.target_calls - len(row.speculative)
        assert costs.c > 0 and all(f > costs.f_call[n] for n, f in costs.f.items())
        assert calls_only(row) >= row.speedup  # the calls are disjoint stretches of the runs they are timed in


# --- predictions ---------------------------------------------------------------------------


def test_predict_whole_runs_counts_the_prompt_once():
    f = {5: 1.5}
    per_token = predict(0.8, 4, 0.1, f)
    tokens, round_cost = per_token.expected_tokens, per_token.round_cost  # 3.3616, 1.9
    whole = predict(0.8, 4, 0.1, f, prompt=6.0, new_tokens=100)
    rounds = 100 / tokens
    assert whole.speedup == pytest.approx((6 + 99) / (6 + 0.4 + (rounds - 1) * round_cost))
    assert whole.speedup < per_token.speedup  # the prompt dilutes the gain
    assert predict(0.8, 4, 0.1, f, prompt=6.0, new_tokens=10**9).speedup == pytest.approx(per_token.speedup)
    assert whole.expected_tokens == tokens and whole.round_cost == round_cost
    with pytest.raises(ValueError, match="prompt"):
        predict(0.8, 4, 0.1, f, prompt=-1.0, new_tokens=10)
    with pytest.raises(ValueError, match="new_tokens"):
        predict(0.8, 4, 0.1, f, prompt=1.0, new_tokens=0)


def test_predict_from_rounds_with_a_prompt_by_hand(tiny_pair):
    from specdec.speculative import SpeculativeResult

    # 10 tokens in 4 rounds: 3 drafted (prompt round), 3, 2, then one that drafted nothing
    result = SpeculativeResult(np.zeros(10, dtype=np.int64), 4, 8, 8, 5, 0.0, [2, 3, 0], [3, 3, 2])
    f = {3: 1.4, 4: 1.6}
    prediction = predict_from_rounds([result], 0.1, f, prompt=5.0)
    plain = 5 + 9  # the prompt step, then 9 steps
    speculative = (5 + 0.3) + (0.3 + 1.6) + (0.2 + 1.4) + 1.0  # the last round is one plain step, f(1) = 1
    assert prediction.speedup == pytest.approx(plain / speculative)
    assert prediction.expected_tokens == pytest.approx(10 / 4)
    with pytest.raises(ValueError, match="n = 3"):
        predict_from_rounds([result], 0.1, {4: 1.6}, prompt=5.0)


class Sleepy:
    """A model whose `score` sleeps a known time, `base` + `per_token` (n - 1) seconds, times `load` if it is loaded."""

    def __init__(self, model, base: float, per_token: float = 0.0):
        self.model, self.base, self.per_token, self.load = model, base, per_token, 1.0

    def __getattr__(self, name):
        return getattr(self.model, name)

    def start(self):
        return self.model.start()

    def score(self, tokens, state):
        time.sleep(self.load * (self.base + self.per_token * (len(tokens) - 1)))
        return self.model.score(tokens, state)


def test_in_run_inputs_keep_predicting_when_the_machine_changes(tiny_pair):
    """Inputs measured inside the runs predict them within 10%, also when a load slows the target's calls;
    the inputs of the quiet machine mispredict the loaded one (the negative control)."""
    target, draft = tiny_pair
    slow_target, slow_draft = Sleepy(target, 0.002, 0.0004), Sleepy(draft, 0.0006)
    quiet = side_by_side(slow_target, slow_draft, PROMPTS, 24, T1, gammas=[4], seed=1)[0]
    slow_target.load = 2.5  # a second program competes for memory: the big model's calls slow down
    loaded = side_by_side(slow_target, slow_draft, PROMPTS, 24, T1, gammas=[4], seed=1)[0]

    def predicted(row, costs):
        return predict_from_rounds(row.speculative, costs.c, costs.f, costs.prompt).speedup

    for row in (quiet, loaded):
        assert predicted(row, row.costs) == pytest.approx(row.speedup, rel=0.10)
    assert loaded.speedup > 1.1 * quiet.speedup  # the load changed the answer...
    assert abs(predicted(loaded, quiet.costs) - loaded.speedup) > 0.10 * loaded.speedup  # ...and old inputs miss it


def test_run_turns_of_runs_that_generate_nothing(tiny_pair):
    target, draft = tiny_pair
    _, _, plain = timed_plain(target, [1, 2, 3], 0, T1)
    assert plain.step_count == 0 and plain.steps == 0.0
    _, _, _, fast = timed_speculative(target, draft, [1, 2, 3], 0, T1, 3)
    assert fast.drafted == 0 and fast.turns == [] and fast.first_calls == 0.0
