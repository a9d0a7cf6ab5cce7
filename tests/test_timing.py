"""The timing tools and the cost model (specdec/timing.py, written in notebook 07).

Timings themselves are machine-dependent, so only their shape is tested: the right keys, positive
values, and a model left as it was found. The formulas are tested exactly.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specdec.gpt import GPT, expected_shapes
from specdec.ngram import NGramModel
from specdec.timing import (
    blas_threads,
    cost_ratios,
    expected_tokens,
    f_dips,
    predicted_speedup,
    time_call,
    time_calls,
    time_scoring,
)

FLAT = {n: 1.0 for n in range(1, 17)}


def tiny_gpt(rng) -> GPT:
    shapes = expected_shapes(vocab_size=11, max_context=40, d_model=8, n_layer=2)
    return GPT({key: 0.1 * rng.standard_normal(shape) for key, shape in shapes.items()}, n_head=2, name="tiny")


# --- expected_tokens ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alpha", "gamma", "expected"),
    [
        (0.0, 1, 1.0),  # nothing accepted: one token per call, like plain decoding
        (0.0, 7, 1.0),
        (1.0, 1, 2.0),  # everything accepted: gamma drafts + the bonus token
        (1.0, 4, 5.0),
        (1, 3, 4.0),  # integer alpha
        (0.5, 1, 1.5),
        (0.5, 2, 1.75),
        (0.8, 4, 3.3616),
        (np.float32(0.5), np.int64(3), 1.875),  # numpy scalars
    ],
)
def test_expected_tokens_values(alpha, gamma, expected):
    assert expected_tokens(alpha, gamma) == pytest.approx(expected, rel=1e-12)


@given(st.floats(0.0, 0.999999), st.integers(1, 40))
def test_expected_tokens_matches_the_closed_form(alpha, gamma):
    closed_form = (1 - alpha ** (gamma + 1)) / (1 - alpha)
    assert expected_tokens(alpha, gamma) == pytest.approx(closed_form, rel=1e-9)


def test_expected_tokens_is_continuous_at_alpha_one():
    # the closed form cancels catastrophically just below 1; the sum does not
    assert expected_tokens(1 - 1e-12, 4) == pytest.approx(5.0, abs=1e-10)
    assert expected_tokens(1 - 1e-12, 4) < 5.0


def test_expected_tokens_grows_with_alpha_and_gamma():
    alphas = np.linspace(0, 1, 21)
    for gamma in (1, 2, 5):
        values = [expected_tokens(a, gamma) for a in alphas]
        assert all(x < y for x, y in zip(values, values[1:], strict=False))
        assert all(expected_tokens(a, gamma) <= expected_tokens(a, gamma + 1) for a in alphas)


@pytest.mark.parametrize(
    ("alpha", "gamma", "error", "message"),
    [
        (-0.1, 4, ValueError, r"alpha must be in \[0, 1\]"),
        (1.5, 4, ValueError, r"alpha must be in \[0, 1\]"),
        (float("nan"), 4, ValueError, r"alpha must be in \[0, 1\], got nan"),
        ("0.5", 4, TypeError, "alpha must be a real number"),
        (True, 4, TypeError, "alpha must be a real number"),
        (0.5, 0, ValueError, "gamma must be an integer >= 1, got 0"),
        (0.5, -2, ValueError, "gamma must be an integer >= 1"),
        (0.5, 2.5, TypeError, "gamma must be an integer >= 1, got 2.5"),
        (0.5, True, TypeError, "gamma must be an integer >= 1"),
    ],
)
def test_expected_tokens_refuses_bad_arguments(alpha, gamma, error, message):
    with pytest.raises(error, match=message):
        expected_tokens(alpha, gamma)


# --- predicted_speedup -------------------------------------------------------------------


def test_predicted_speedup_formula():
    f = {n: 1.0 + 0.1 * (n - 1) for n in range(1, 17)}
    for alpha, gamma, c in [(0.8, 4, 0.05), (0.5, 1, 0.2), (0.95, 10, 0.0), (0.0, 3, 0.1)]:
        expected = expected_tokens(alpha, gamma) / (gamma * c + f[gamma + 1])
        assert predicted_speedup(alpha, gamma, c, f) == pytest.approx(expected, rel=1e-12)
    assert predicted_speedup(0.8, 4, 0.05, FLAT) == pytest.approx(3.3616 / 1.2, rel=1e-12)


def test_predicted_speedup_accepts_a_function_and_gives_the_same_answer():
    f = {n: 1.0 + 0.1 * (n - 1) for n in range(1, 17)}
    for gamma in range(1, 16):
        assert predicted_speedup(0.7, gamma, 0.03, lambda n: f[n]) == predicted_speedup(0.7, gamma, 0.03, f)


def test_predicted_speedup_reference_points():
    # free draft and free verification: the speedup is E[tokens]
    assert predicted_speedup(0.9, 5, 0.0, lambda n: 1.0) == pytest.approx(expected_tokens(0.9, 5))
    # nothing accepted, free draft: exactly plain decoding's speed
    assert predicted_speedup(0.0, 3, 0.0, FLAT) == 1.0
    # f(n) = n: one call of n positions costs n calls, so speculation can never win
    linear = {n: float(n) for n in range(1, 17)}
    assert all(predicted_speedup(a, g, 0.0, linear) <= 1.0 for a in np.linspace(0, 1, 11) for g in range(1, 16))


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((1.2, 4, 0.05, FLAT), ValueError, r"alpha must be in \[0, 1\]"),
        ((0.8, 0, 0.05, FLAT), ValueError, "gamma must be an integer >= 1"),
        ((0.8, 2.0, 0.05, FLAT), TypeError, "gamma must be an integer >= 1"),
        ((0.8, 4, -0.1, FLAT), ValueError, r"c \(draft cost / target cost\) must be finite and >= 0"),
        ((0.8, 4, float("inf"), FLAT), ValueError, "must be finite"),
        ((0.8, 4, float("nan"), FLAT), ValueError, "must be finite"),
        ((0.8, 4, "0.1", FLAT), TypeError, "c .* must be a real number"),
        ((0.8, 20, 0.05, FLAT), ValueError, "f has no cost for gamma \\+ 1 = 21 positions"),
        ((0.8, 4, 0.05, {5: 0.0}), ValueError, r"f\(5\) must be finite and > 0, got 0.0"),
        ((0.8, 4, 0.05, lambda n: float("nan")), ValueError, r"f\(5\) must be finite and > 0"),
    ],
)
def test_predicted_speedup_refuses_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        predicted_speedup(*args)


# --- cost_ratios -------------------------------------------------------------------------


def test_cost_ratios_divides_by_the_cost_of_one():
    assert cost_ratios({1: 2e-3, 2: 3e-3, 8: 5e-3}) == pytest.approx({1: 1.0, 2: 1.5, 8: 2.5})
    assert list(cost_ratios({4: 4.0, 1: 2.0})) == [4, 1]  # keeps the order it was given


@pytest.mark.parametrize(
    ("times", "message"),
    [({2: 1.0, 3: 2.0}, "times must include n = 1"), ({1: 0.0, 2: 1.0}, "positive"), ({1: 1.0, 2: math.nan}, "finite")],
)
def test_cost_ratios_refuses_bad_times(times, message):
    with pytest.raises(ValueError, match=message):
        cost_ratios(times)


# --- time_call, time_scoring, blas_threads -----------------------------------------------


def test_time_call_returns_a_positive_median_and_calls_the_function():
    calls = []
    seconds = time_call(lambda: calls.append(1), repeats=5, number=3)
    assert seconds > 0
    assert len(calls) == 1 + 5 * 3  # one warm-up, then repeats x number


def test_time_calls_interleaves_and_times_every_function():
    order = []
    functions = {key: (lambda key=key: order.append(key)) for key in ("a", "b", "c")}
    times = time_calls(functions, repeats=4, number=2, rng=np.random.default_rng(1))
    assert list(times) == ["a", "b", "c"] and all(t > 0 for t in times.values())
    assert order[:3] == ["a", "b", "c"]  # the warm-up calls
    rounds = [order[3 + 6 * r : 9 + 6 * r] for r in range(4)]  # each round: 2 calls of each, in some order
    assert all(sorted(r) == ["a", "a", "b", "b", "c", "c"] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # shuffled, not always the same order


def test_time_call_refuses_bad_counts():
    with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
        time_call(lambda: None, repeats=0)
    with pytest.raises(TypeError, match="number must be an integer >= 1"):
        time_call(lambda: None, number=1.5)


def test_time_scoring_times_every_n_and_leaves_the_model_as_it_was(rng):
    model = tiny_gpt(rng)
    state = model.start()  # a caller's own decoding state, in the middle of a text
    model.score([1, 2, 3, 4, 5], state)
    logits_before = model.score([6], state)
    state.rollback(5)
    fresh_before = model.score([1, 2, 3, 4, 5, 6], model.start())  # (6, V)
    times = time_scoring(model, [1, 3, 2], repeats=3, context=8, rng=rng)
    assert list(times) == [1, 3, 2]
    assert all(isinstance(t, float) and t > 0 for t in times.values())
    assert state.length == 5  # time_scoring used its own state, not the caller's
    np.testing.assert_array_equal(model.score([6], state), logits_before)  # the cache of the first 5 tokens is intact
    np.testing.assert_array_equal(model.score([1, 2, 3, 4, 5, 6], model.start()), fresh_before)  # the model too


def test_time_scoring_makes_number_calls_of_each_n_in_a_row(rng):
    """Decoding repeats one shape, so the timed calls come in runs of the same n, each from the same cache length."""
    model = tiny_gpt(rng)
    calls = []  # (n, cache length before the call) of every score call

    class Recording:
        name, vocab_size, max_context = model.name, model.vocab_size, model.max_context
        start = model.start

        def score(self, tokens, state):
            calls.append((len(tokens), state.length))
            return model.score(tokens, state)

    time_scoring(Recording(), [1, 3, 2], repeats=2, context=8, rng=rng, number=5)
    timed = [call for call in calls if call[0] != 8]  # the context calls score 8 tokens
    assert len(timed) == 3 * 5 * 3  # warm-up round + 2 rounds, 5 calls of each n
    runs = [timed[i : i + 5] for i in range(0, len(timed), 5)]
    assert all(len({n for n, _ in run}) == 1 for run in runs)  # each run is one n
    assert {length for _, length in timed} == {8}  # every call starts after the context
    with pytest.raises(ValueError, match="number must be an integer >= 1"):
        time_scoring(model, [1], number=0)


def test_time_scoring_works_with_the_ngram_and_an_empty_context(rng):
    draft = NGramModel.build(rng.integers(0, 11, 500), order=3, vocab_size=11)
    probe = rng.integers(0, 11, 20)  # (20,)
    before = draft.score(probe, draft.start())  # (20, V)
    times = time_scoring(draft, range(1, 5), repeats=2, context=0)
    assert list(times) == [1, 2, 3, 4] and all(t > 0 for t in times.values())
    np.testing.assert_array_equal(draft.score(probe, draft.start()), before)  # the model is unchanged


def test_time_scoring_refuses_what_does_not_fit_or_makes_no_sense(rng):
    model = tiny_gpt(rng)
    before = model.score([1, 2, 3], model.start())  # (3, V)
    with pytest.raises(ValueError, match="context 32 \\+ n up to 16 is more than tiny's max_context 40"):
        time_scoring(model, [1, 16], context=32)
    with pytest.raises(ValueError, match="distinct"):
        time_scoring(model, [1, 1])
    with pytest.raises(ValueError, match="distinct"):
        time_scoring(model, [])
    with pytest.raises(ValueError, match="each n must be an integer >= 1"):
        time_scoring(model, [0, 1])
    with pytest.raises(ValueError, match="context must be an integer >= 0, got -1"):
        time_scoring(model, [1], context=-1)
    with pytest.raises(TypeError, match="context must be an integer >= 0, got 2.5"):
        time_scoring(model, [1], context=2.5)
    with pytest.raises(ValueError, match="max_context") as refused:
        time_scoring(model, [40], context=1)
    assert "tokens seen" not in str(refused.value)  # it is about the context asked for, not a model's state
    np.testing.assert_array_equal(model.score([1, 2, 3], model.start()), before)  # the model is unchanged


def test_blas_threads_sets_and_restores_the_limit():
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_limits():
        return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]

    before = blas_limits()
    with blas_threads(1):
        assert all(n == 1 for n in blas_limits())
    assert blas_limits() == before
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        with blas_threads(0):
            pass


def test_f_dips_names_where_f_falls():
    assert f_dips({1: 1.0, 2: 1.4, 3: 1.6, 4: 1.9}) == []
    assert f_dips({1: 1.0, 2: 1.5, 3: 1.7, 4: 1.6, 5: 1.8, 6: 1.75}) == [4, 6]
    assert f_dips({9: 2.0, 2: 1.5, 5: 1.4}) == [5]  # sizes in increasing order, whatever the dict's order
    assert f_dips({3: 1.5, 4: 1.5}) == []  # level is not a fall
    assert f_dips({}) == [] and f_dips({2: 1.4}) == []
