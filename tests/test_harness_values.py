"""Known values of the benchmark harness's arithmetic (specdec/harness.py): predict for short runs, looping outputs.

Every expected number is worked out by hand from the docstrings' formulas, in the docstring of its test:
predict's whole-run speedup (plain pays prompt + n - 1 target steps; speculative pays prompt + gamma c for
its first round, then round_cost for each of the R - 1 later rounds, R = n / E[tokens] but at least one),
and repeated_fraction's share of (n + 1)-token windows seen before (NaN when there is no window).
"""

import math

import numpy as np
import pytest

from specdec.generation import GenerationResult
from specdec.harness import LOOP_FRACTION, heldout_prompts, predict, repeated_fraction, repetition, summarize
from specdec.speculative import SpeculativeResult


def plain_run(tokens: int, seconds: float) -> GenerationResult:
    """A plain run of `tokens` tokens in `seconds`: one target call per token."""
    return GenerationResult(np.zeros(tokens, dtype=np.int64), tokens, seconds)


def speculative_run(tokens, accepted, drafted, seconds: float) -> SpeculativeResult:
    """A speculative run that wrote `tokens` in rounds that accepted/drafted the given numbers, in `seconds`."""
    tokens = np.asarray(tokens, dtype=np.int64)
    return SpeculativeResult(
        tokens, len(accepted), sum(drafted), sum(drafted), sum(accepted), seconds, accepted, drafted
    )


# --- predict: whole runs, short ones included --------------------------------------------------------

# alpha = 1, gamma = 4: every draft accepted, E[tokens] = 1 + 1 + 1 + 1 + 1 = 5 per round; c = 0.1 and
# f(5) = 1.5, so a round costs 4 * 0.1 + 1.5 = 1.9 target steps and the first round 2 + 0.4 = 2.4 after a
# prompt of 2 steps.
SURE = {"alpha": 1.0, "gamma": 4, "c": 0.1, "f": {5: 1.5}, "prompt": 2.0}


@pytest.mark.parametrize(
    ("new_tokens", "speedup"),
    [
        (1, 2 / 2.4),  # plain 2 + 0; one round (R = 1/5 -> 1): 2.4
        (3, 4 / 2.4),  # plain 2 + 2; one round (R = 3/5 -> 1): 2.4, not 2.4 - 0.4 * 1.9 = 1.64
        (5, 6 / 2.4),  # plain 2 + 4; exactly one round
        (10, 11 / (2.4 + 1.9)),  # plain 2 + 9; R = 2 rounds
        (12, 13 / (2.4 + 1.4 * 1.9)),  # plain 2 + 11; R = 12 / 5 = 2.4 rounds, fractions count
    ],
)
def test_predict_for_runs_shorter_than_a_round_charges_one_whole_round(new_tokens, speedup):
    """A run of n <= E[tokens] = 5 tokens still pays its first round in full: speedup (2 + n - 1) / 2.4.

    Without the "at least one round" clamp, n = 3 would be charged 0.6 rounds and its speedup overstated
    as 4 / 1.64 = 2.44 instead of 4 / 2.4 = 1.67.
    """
    prediction = predict(**SURE, new_tokens=new_tokens)
    assert prediction.speedup == pytest.approx(speedup, rel=1e-12)
    assert prediction.expected_tokens == 5.0 and prediction.round_cost == pytest.approx(1.9, rel=1e-12)


def test_predict_for_a_short_run_with_partial_acceptance():
    """alpha = 1/2, gamma = 2: E[tokens] = 1 + 1/2 + 1/4 = 1.75; c = 0.2, f(3) = 1.2: a round costs 1.6.

    The prompt's default is 1 step. n = 1: one round (R = 1/1.75 -> 1), 1 + 0.4 = 1.4 steps against plain's
    1 + 0: speedup 1 / 1.4. n = 7: R = 4 rounds, 1.4 + 3 * 1.6 = 6.2 steps against 7: speedup 7 / 6.2.
    """
    short = predict(0.5, 2, 0.2, {3: 1.2}, new_tokens=1)
    assert short.expected_tokens == 1.75
    assert short.speedup == pytest.approx(1 / 1.4, rel=1e-12)
    assert predict(0.5, 2, 0.2, {3: 1.2}, new_tokens=7).speedup == pytest.approx(7 / 6.2, rel=1e-12)


def test_a_short_run_is_never_predicted_faster_than_a_long_one():
    """Here the whole-run speedup rises with n towards the per-token 5 / 1.9 and never reaches it.

    By hand: (1 + n) / 2.4 for n <= 5, then (1 + n) / (0.5 + 0.38 n), whose derivative has the sign of
    0.5 - 0.38 = 0.12 > 0; the limit is 1 / 0.38 = 5 / 1.9. A clamp-free formula would put n = 1 at 2.27.
    """
    speedups = [predict(**SURE, new_tokens=n).speedup for n in range(1, 200)]
    assert all(a < b for a, b in zip(speedups, speedups[1:], strict=False))
    per_token = predict(SURE["alpha"], SURE["gamma"], SURE["c"], SURE["f"]).speedup
    assert per_token == pytest.approx(5 / 1.9, rel=1e-12)
    assert speedups[-1] < per_token


# --- repetition: short outputs do not loop -------------------------------------------------------------


def test_repeated_fraction_at_the_length_of_one_window():
    """Windows of n + 1 = 9 tokens: 8 tokens have none (NaN); 9 have one, new (0); 10 have two, the second
    a repeat of the first (1/2); 11 have three, two repeats (2/3). With n = 2: 2 tokens NaN, 3 tokens 0."""
    assert math.isnan(repeated_fraction([5] * 8))
    assert repeated_fraction([5] * 9) == 0.0
    assert repeated_fraction([5] * 10) == 0.5
    assert repeated_fraction([5] * 11) == pytest.approx(2 / 3)
    assert math.isnan(repeated_fraction([5, 5], n=2))
    assert repeated_fraction([5, 5, 5], n=2) == 0.0


def test_outputs_shorter_than_a_window_do_not_count_as_looping():
    """Run 0 writes 5 identical tokens (shorter than a 9-token window: repeated_fraction NaN) in 2 target calls
    and 0.1 s, its plain run 5 tokens in 0.5 s; run 1 loops ("7 8" 20 times: 30 of 32 windows repeat).

    Only run 1 loops. Without it: 5 tokens / 2 calls = 2.5 tokens per call, and a speed-up of
    (5 / 0.1) / (5 / 0.5) = 5.
    """
    plain = [plain_run(5, 0.5), plain_run(40, 0.8)]
    spec = [
        speculative_run([3] * 5, [3, 0], [4, 1], seconds=0.1),
        speculative_run([7, 8] * 20, [4] * 8, [4] * 8, seconds=0.1),
    ]
    loops = repetition(summarize(4, plain, spec))
    assert math.isnan(loops.repeated[0]) and loops.repeated[1] == pytest.approx(30 / 32)
    assert loops.looping == 1
    assert loops.tokens_per_call_not_looping == pytest.approx(2.5, rel=1e-12)
    assert loops.speedup_not_looping == pytest.approx(5.0, rel=1e-12)


def test_only_outputs_above_half_repeated_loop():
    """LOOP_FRACTION = 1/2 and "loops" means more than it: [5] * 10 (exactly 1/2) does not loop, [5] * 11 (2/3) does.

    Runs: 10 tokens in 4 calls, 0.2 s (plain 10 in 0.4 s); 11 tokens in 3 calls (plain 11 in 0.4 s). Without
    the looping one: 10 / 4 = 2.5 tokens per call, speed-up (10 / 0.2) / (10 / 0.4) = 2.
    """
    assert LOOP_FRACTION == 0.5
    plain = [plain_run(10, 0.4), plain_run(11, 0.4)]
    spec = [
        speculative_run([5] * 10, [1, 1, 1, 3], [2, 2, 2, 3], seconds=0.2),
        speculative_run([5] * 11, [3, 3, 2], [3, 3, 3], seconds=0.2),
    ]
    loops = repetition(summarize(3, plain, spec))
    assert loops.repeated == [0.5, pytest.approx(2 / 3)] and loops.looping == 1
    assert loops.tokens_per_call_not_looping == pytest.approx(2.5, rel=1e-12)
    assert loops.speedup_not_looping == pytest.approx(2.0, rel=1e-12)


def test_when_every_output_is_short_none_loops_and_the_figures_are_the_whole_rows():
    """Two runs of 4 tokens (no window at all): looping 0, and the figures without looping runs are the row's."""
    plain = [plain_run(4, 0.4), plain_run(4, 0.2)]
    spec = [speculative_run([1, 1, 1, 1], [3], [3], 0.1), speculative_run([2, 2, 2, 2], [1, 1], [2, 2], 0.1)]
    row = summarize(2, plain, spec)
    loops = repetition(row)
    assert loops.looping == 0
    assert loops.tokens_per_call_not_looping == row.tokens_per_call == pytest.approx(8 / 3, rel=1e-12)
    assert loops.speedup_not_looping == row.speedup == pytest.approx((8 / 0.2) / (8 / 0.6), rel=1e-12)


# --- summarize's other fields, heldout_prompts -----------------------------------------------------------


def test_identical_outputs_needs_every_prompt_to_match():
    """Two prompts: the first pair of outputs equal, the second differing in its last token: not identical."""
    plain = [GenerationResult(np.array([1, 2, 3]), 3, 0.3), GenerationResult(np.array([4, 5]), 2, 0.2)]
    same = speculative_run([1, 2, 3], [2], [2], 0.1)
    assert summarize(2, plain, [same, speculative_run([4, 6], [1], [2], 0.1)]).identical_outputs is False
    assert summarize(2, plain, [same, speculative_run([4, 5], [1], [2], 0.1)]).identical_outputs is True


def test_heldout_prompts_exclude_a_window_whose_last_token_ends_a_file():
    """Prompts of 3 tokens after a newline (2), none holding an end token (0), in a stream of 16 tokens.

    Newlines at 1, 5, 10 and 14; a prompt must fit, so it starts at 2, 6 or 11 (not 15). The one at 2,
    (6, 7, 0), ends with the end token: out. (8, 9, 10) is followed by an end token, but does not hold one:
    in. So exactly two prompts exist, and asking for three is refused.
    """
    #               0  1  2  3  4  5  6  7   8  9 10  11  12  13 14 15
    stream = np.array([5, 2, 6, 7, 0, 2, 8, 9, 10, 0, 2, 11, 12, 13, 2, 1])
    prompts = heldout_prompts(stream, 2, length=3, seed=0)
    assert [prompt.tolist() for prompt in prompts] == [[8, 9, 10], [11, 12, 13]]
    with pytest.raises(ValueError, match="the stream has 2 line starts with room for 3 tokens, need 3"):
        heldout_prompts(stream, 3, length=3)
