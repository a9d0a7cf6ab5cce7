# Generated from notebooks/10_how_much_faster.ipynb by tools/export.py: edit the notebook, not this file.
"""How much faster? Speculative decoding measured (notebook 10): acceptance, speed side by side, prediction."""

import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from specdec.generation import GenerationResult, generate
from specdec.logits import log_softmax
from specdec.pipeline import SamplingParams, sampling_probs
from specdec.speculative import SpeculativeResult, speculative_generate
from specdec.timing import blas_threads, cost_ratios, expected_tokens, predicted_speedup, time_scoring
from specdec.validation import check_count, check_gamma, check_params, check_real, check_verify


def heldout_prompts(stream, n_prompts: int, length: int = 48, seed: int = 0, newline: int = 2, end: int = 0) -> list:
    """n_prompts prompts of `length` tokens, drawn (seeded) after a `newline` of a held-out stream, no `end` inside."""
    stream = np.asarray(stream).astype(np.int64)  # (N,)
    n_prompts, length = check_count(n_prompts, "n_prompts"), check_count(length, "length")
    ends_before = np.concatenate([[0], np.cumsum(stream == end)])  # (N + 1,) END tokens in stream[:i]
    starts = np.flatnonzero(stream[:-length] == newline) + 1  # (S,) positions after a newline
    starts = starts[ends_before[starts + length] == ends_before[starts]]  # no END inside the prompt
    if starts.size < n_prompts:
        raise ValueError(f"the stream has {starts.size} line starts with room for {length} tokens, need {n_prompts}")
    chosen = np.sort(np.random.default_rng(seed).choice(starts, size=n_prompts, replace=False))  # (n_prompts,)
    return [stream[start : start + length] for start in chosen]


def acceptance_counts(results) -> tuple[np.ndarray, np.ndarray]:
    """Per draft position i = 1..gamma: (rounds that tested the draft at i, rounds that accepted it).

    A round that drafted g tokens and accepted n tested positions 1..min(n + 1, g): its accepted drafts and
    the first rejected one, if any; the drafts after it are never looked at. gamma is the largest g."""
    results = [results] if isinstance(results, SpeculativeResult) else list(results)  # one result, or several
    gamma = max((g for result in results for g in result.drafted_per_round), default=0)
    tested, accepted = np.zeros(gamma, dtype=np.int64), np.zeros(gamma, dtype=np.int64)  # (gamma,), (gamma,)
    for result in results:
        for n, g in zip(result.accepted_per_round, result.drafted_per_round, strict=True):
            tested[: min(n + 1, g)] += 1
            accepted[:n] += 1
    return tested, accepted


def acceptance_by_position(results) -> np.ndarray:
    """(gamma,) for i = 1..gamma: of the rounds that reached draft position i, the fraction that accepted it.

    A round reaches i when it drafted i or more and accepted drafts 1..i-1. NaN where none did: no test, no rate."""
    tested, accepted = acceptance_counts(results)
    return np.where(tested > 0, accepted / np.maximum(tested, 1), np.nan)  # (gamma,)


def pooled_alpha(results) -> float:
    """All positions and rounds together: accepted drafts / tested drafts (NaN if none was tested)."""
    tested, accepted = acceptance_counts(results)
    return float(accepted.sum() / tested.sum()) if tested.sum() else math.nan


def seed_for(seed: int, prompt_index: int) -> np.random.Generator:
    """The generator of one run: the same for the plain and the speculative run of a prompt."""
    return np.random.default_rng([seed, prompt_index])


class TimedModel:
    """A model that notes when each `score` call starts, its size and its seconds; the rest passes through."""

    def __init__(self, model):
        self.model, self.starts, self.calls = model, [], []  # starts: perf_counter() at each call; calls: (n, seconds)

    def __getattr__(self, name):  # start, vocab_size, max_context, name
        return getattr(self.model, name)

    def score(self, tokens, state) -> np.ndarray:
        self.starts.append(time.perf_counter())
        logits = self.model.score(tokens, state)
        self.calls.append((len(tokens), time.perf_counter() - self.starts[-1]))
        return logits


@dataclass(frozen=True)
class PlainTurns:
    """A plain run's seconds, cut where its target calls start (`run_turns`)."""

    prompt: float  # from the run's start to the second call: reading the prompt, drawing the first token
    steps: float  # every later step: a call of one token, sampling it, the loop
    step_count: int  # how many steps: one per token after the first


@dataclass(frozen=True)
class RoundTurns:
    """A speculative run's seconds, cut into the turns of its rounds (`run_turns`)."""

    prompt: float  # the first round, which reads the prompt: from the run's start to the second round
    draft: float  # the draft's turns of the later rounds: each from its first draft call to the target's call
    drafted: int  # the draft calls in those turns, one per drafted token
    turns: list[tuple[int, float, float]]  # per later round: (n tokens scored, the target's turn, its call alone)
    first_calls: float  # the first round's calls: the draft's turn from its first call, then the target's call alone


def run_turns(result, target: TimedModel, draft: TimedModel | None, end: float) -> PlainTurns | RoundTurns:
    """One run's seconds cut into the turns the cost model charges; `end` is time.perf_counter() after the run."""
    start = end - result.seconds
    if draft is None:  # plain: a step runs from one target call to the next
        steps = end - target.starts[1] if len(target.starts) > 1 else 0.0
        return PlainTurns(result.seconds - steps, steps, max(len(target.starts) - 1, 0))
    begins, drafted = [], []  # per round: when it begins, how many draft calls it made
    for previous, call in zip([-math.inf, *target.starts], target.starts, strict=False):  # round by round
        mine = [t for t in draft.starts if previous < t < call]  # its draft calls: after the previous target call
        begins.append(mine[0] if mine else call)  # it begins with its first draft call, if it drafted
        drafted.append(len(mine))
    ends = [*begins[1:], end]  # a round ends where the next one begins
    # the rounds after the first: (n tokens scored, the target's turn from its call at t, the call's s seconds)
    turns = [(n, stop - t, s) for t, (n, s), stop in zip(target.starts[1:], target.calls[1:], ends[1:], strict=True)]
    draft_seconds = sum(call - begin for begin, call in zip(begins[1:], target.starts[1:], strict=True))
    # the first round's calls: the draft's turn (if it drafted) and the target's call; none for no new token
    first_calls = target.starts[0] - begins[0] + target.calls[0][1] if target.calls else 0.0
    return RoundTurns(ends[0] - start, draft_seconds, sum(drafted[1:]), turns, first_calls)


@dataclass(frozen=True)
class TurnCosts:
    """The cost model's inputs measured inside the runs (`turn_costs`): `unit` in seconds, the rest in units."""

    unit: float  # one plain step: a target call of one token, sampling it, the loop
    c: float  # the draft's turn per drafted token: its call and its sampling
    f: dict[int, float]  # {n: the target's turn in a round scoring n tokens: the call, sampling, verification}
    f_call: dict[int, float]  # {n: the target's call of n tokens alone}
    prompt: float  # a plain run's first step: reading the prompt and drawing the first token
    rounds: dict[int, int]  # {n: how many rounds after the first scored n tokens}
    first_calls: float  # a speculative run's first round (it reads the prompt), its calls only (calls_only)


def turn_costs(plain: Sequence[PlainTurns], speculative: Sequence[RoundTurns]) -> TurnCosts:
    """The unit, c, f(n) and the prompt from the turns of plain and speculative runs; NaN for an empty sum."""
    steps, drafted = sum(t.step_count for t in plain), sum(t.drafted for t in speculative)
    unit = sum(t.steps for t in plain) / steps if steps else math.nan
    turns, calls, rounds = Counter(), Counter(), Counter()  # {n: seconds}, {n: seconds}, {n: rounds}
    for n, turn, call in (round_ for t in speculative for round_ in t.turns):
        turns[n], calls[n], rounds[n] = turns[n] + turn, calls[n] + call, rounds[n] + 1
    c = sum(t.draft for t in speculative) / drafted / unit if drafted else math.nan
    f, f_call = ({n: seconds[n] / rounds[n] / unit for n in sorted(rounds)} for seconds in (turns, calls))
    prompt = sum(t.prompt for t in plain) / len(plain) / unit if plain else math.nan
    first_calls = sum(t.first_calls for t in speculative) / len(speculative) / unit if speculative else math.nan
    return TurnCosts(unit, c, f, f_call, prompt, dict(sorted(rounds.items())), first_calls)


@dataclass(frozen=True)
class Summary:
    """One gamma's runs side by side (`summarize`): speed, tokens per target call, acceptance, the runs."""

    gamma: int | str  # drafts per round, or "auto"
    tokens: int  # tokens the speculative runs generated
    plain_tokens_per_second: float  # over all plain runs, prompts included
    speculative_tokens_per_second: float  # over all speculative runs, prompts included
    speedup: float  # speculative tokens per second / plain tokens per second
    target_calls: int  # the speculative runs' target calls
    tokens_per_call: float  # tokens / target_calls
    drafted: int  # draft tokens proposed
    accepted: int  # draft tokens accepted
    alpha: float  # accepted / tested drafts (pooled_alpha)
    acceptance_rate: float  # accepted / drafted: lower, as the drafts after a rejection are never tested
    identical_outputs: bool  # plain and speculative wrote the same tokens for every prompt (greedy must)
    plain: list[GenerationResult]  # the runs, one per prompt
    speculative: list[SpeculativeResult]
    costs: TurnCosts | None = None  # the cost model's inputs measured inside these runs


def summarize(gamma, plain: Sequence, speculative: Sequence, costs: TurnCosts | None = None) -> Summary:
    """The totals of one gamma's runs (GenerationResults, SpeculativeResults), each timed by its own `seconds`."""
    tokens, plain_tokens = (sum(r.tokens.size for r in runs) for runs in (speculative, plain))
    seconds, plain_seconds = (sum(r.seconds for r in runs) for runs in (speculative, plain))
    calls, drafted = sum(r.target_calls for r in speculative), sum(r.drafted for r in speculative)
    accepted = sum(r.accepted for r in speculative)
    return Summary(
        gamma=gamma,
        tokens=tokens,
        plain_tokens_per_second=plain_tokens / plain_seconds,
        speculative_tokens_per_second=tokens / seconds,
        speedup=(tokens / seconds) / (plain_tokens / plain_seconds),
        target_calls=calls,
        tokens_per_call=tokens / calls if calls else math.nan,
        drafted=drafted,
        accepted=accepted,
        alpha=pooled_alpha(speculative),
        acceptance_rate=accepted / drafted if drafted else math.nan,
        identical_outputs=all(np.array_equal(a.tokens, b.tokens) for a, b in zip(plain, speculative, strict=True)),
        plain=list(plain),
        speculative=list(speculative),
        costs=costs,
    )


def side_by_side(
    target,
    draft,
    prompts: Sequence,
    max_new_tokens: int,
    params: SamplingParams = SamplingParams(),
    gammas: Iterable[int | str] = (4,),
    seed: int = 0,
    repeats: int = 1,
    verify: str = "token",
) -> list[Summary]:
    """Plain `generate` against `speculative_generate`, same target, same prompts: one Summary per gamma.

    Each prompt runs both ways back to back (plain first for even prompts), same generator, after an untimed warm-up;
    with `repeats` > 1 each side keeps its fastest run. A gamma may be "auto"; `verify` is passed on."""
    params, gammas, verify = check_params(params), [check_gamma(g) for g in gammas], check_verify(verify)
    prompts, repeats = [np.asarray(prompt) for prompt in prompts], check_count(repeats, "repeats")
    if not prompts or not gammas:
        raise ValueError(f"need at least one prompt and one gamma, got {len(prompts)} prompts and gammas {gammas}")

    def run(kind: str, i: int, gamma) -> tuple:  # one timed run: (its result, its turns)
        timed, rng = (TimedModel(target), TimedModel(draft)), seed_for(seed, i)
        if kind == "plain":
            result = generate(timed[0], prompts[i], max_new_tokens, params, rng)
            return result, run_turns(result, timed[0], None, time.perf_counter())
        result = speculative_generate(*timed, prompts[i], max_new_tokens, params, gamma, rng, verify=verify)
        return result, run_turns(result, *timed, time.perf_counter())

    for kind in ("plain", "speculative"):  # the warm-up: one run of each, thrown away
        run(kind, 0, gammas[0])
    rows = []
    for gamma in gammas:
        runs = {"plain": [], "speculative": []}  # (result, turns) per prompt
        for i in range(len(prompts)):
            order = ("plain", "speculative") if i % 2 == 0 else ("speculative", "plain")
            pairs = [[run(kind, i, gamma) for kind in order] for _ in range(repeats)]
            for j, kind in enumerate(order):  # each side's fastest repeat: noise only adds time
                runs[kind].append(min((pair[j] for pair in pairs), key=lambda timed: timed[0].seconds))
        (plain, plain_turns), (fast, fast_turns) = (zip(*runs[kind], strict=True) for kind in runs)
        rows.append(summarize(gamma, plain, fast, turn_costs(plain_turns, fast_turns)))
    return rows


class Prediction(NamedTuple):
    """What the cost model of notebook 07 predicts for one (alpha, gamma, c, f)."""

    expected_tokens: float  # tokens per target call, (1 - alpha**(gamma + 1)) / (1 - alpha)
    round_cost: float  # gamma * c + f(gamma + 1), in target steps
    speedup: float  # expected_tokens / round_cost, or for whole runs (predict's new_tokens)


def predict(alpha: float, gamma: int, c: float, f, prompt: float = 1.0, new_tokens: int | None = None) -> Prediction:
    """The cost model: E[tokens], the cost of a round in target steps, and the speedup, per token.

    With `new_tokens` = n, of whole runs after a prompt read of `prompt` steps: plain pays prompt + n - 1 steps,
    speculative prompt + gamma c + (R - 1) round_cost for R = n / E[tokens] rounds (at least one)."""
    speedup, tokens = predicted_speedup(alpha, gamma, c, f), expected_tokens(alpha, gamma)  # the first checks all
    round_cost = tokens / speedup
    if new_tokens is None:
        return Prediction(tokens, round_cost, speedup)
    new_tokens = check_count(new_tokens, "new_tokens")
    prompt = check_real(prompt, "prompt (target steps)", 0)
    rounds = max(new_tokens / tokens, 1.0)
    speculative = prompt + gamma * c + (rounds - 1) * round_cost  # target steps
    return Prediction(tokens, round_cost, (prompt + new_tokens - 1) / speculative)


LOOP_FRACTION = 0.5  # an output "loops" when more than half of its 9-token windows already occurred in it


def repeated_fraction(tokens, n: int = 8) -> float:
    """Share of the output's (n + 1)-token windows that already occurred earlier in the same output.

    0 for text that never repeats n + 1 tokens; near 1 for a loop ("the other of the other of ..."),
    which a draft that has seen the loop predicts perfectly, so that tokens per call then partly
    measure repetition. NaN for an output shorter than n + 1 tokens.
    """
    tokens = np.asarray(tokens, dtype=np.int64)  # (L,)
    if tokens.size < n + 1:
        return math.nan
    windows = np.lib.stride_tricks.sliding_window_view(tokens, n + 1)  # (L - n, n + 1)
    distinct = np.unique(windows, axis=0).shape[0]  # each distinct window's first occurrence is not a repeat
    return (windows.shape[0] - distinct) / windows.shape[0]


@dataclass(frozen=True)
class Repetition:
    """How much of a Summary's figures is repetition (`repetition`)."""

    repeated: list[float]  # each speculative output's repeated_fraction, in prompt order
    looping: int  # how many of them exceed LOOP_FRACTION
    tokens_per_call_not_looping: float  # tokens per target call over the other runs (NaN if every run loops)
    speedup_not_looping: float  # the speed-up over the other runs, each timed by its `seconds` (NaN if none)


def repetition(row: Summary) -> Repetition:
    """The runs of `row` whose output loops, and its figures without them."""
    repeated = [repeated_fraction(result.tokens) for result in row.speculative]
    fresh = [i for i, fraction in enumerate(repeated) if not fraction > LOOP_FRACTION]  # runs that do not loop
    rest = summarize(row.gamma, [row.plain[i] for i in fresh], [row.speculative[i] for i in fresh]) if fresh else None
    return Repetition(
        repeated=repeated,
        looping=len(repeated) - len(fresh),
        tokens_per_call_not_looping=rest.tokens_per_call if rest else math.nan,
        speedup_not_looping=rest.speedup if rest else math.nan,
    )


def draft_step_seconds(
    draft, params: SamplingParams, prompt_tokens, n_tokens: int = 200, repeats: int = 5, rng=None
) -> float:
    """Seconds of one WHOLE draft step under `params`: scoring a token AND drawing the next one from it.

    That is what speculative decoding pays per drafted token, so it is the c of the cost model
    (notebook 07, section 6): the median over `repeats` runs of `generate(draft, ...)` of
    `n_tokens` tokens after `prompt_tokens`, per token, after a warm-up run, one BLAS thread.
    """
    params = check_params(params)
    n_tokens, repeats = check_count(n_tokens, "n_tokens"), check_count(repeats, "repeats")
    rng = np.random.default_rng(0) if rng is None else rng
    with blas_threads(1):
        generate(draft, prompt_tokens, n_tokens, params, rng)  # warm-up
        runs = [generate(draft, prompt_tokens, n_tokens, params, rng).seconds for _ in range(repeats)]
    return float(np.median(runs)) / n_tokens


@dataclass(frozen=True)
class MeasuredCosts:
    """The cost model's inputs timed apart from any run, as in notebook 07 (`measure_costs`)."""

    c: float  # one whole draft step, in units of target_seconds
    f: dict[int, float]  # {n: one target call of n tokens after a fixed context, in units of target_seconds}
    target_seconds: float  # the unit: one target call of one token, in seconds
    draft_step_seconds: float  # one whole draft step (scoring and drawing), in seconds


def measure_costs(
    target, draft, params: SamplingParams, prompt_tokens, max_n: int = 9, context: int = 64, repeats: int = 21
) -> MeasuredCosts:
    """The cost model's inputs measured as in notebook 07, one BLAS thread.

    f(n) for n = 1..max_n from `time_scoring(target, ...)` after `context` random tokens, in
    units of one target.score of one token (`target_seconds`); c = `draft_step_seconds(...)`
    in the same unit.
    """
    max_n = check_count(max_n, "max_n")
    with blas_threads(1):
        times = time_scoring(target, list(range(1, max_n + 1)), repeats=repeats, context=context)
    step = draft_step_seconds(draft, params, prompt_tokens)
    return MeasuredCosts(c=step / times[1], f=cost_ratios(times), target_seconds=times[1], draft_step_seconds=step)


@dataclass(frozen=True)
class GapFactors:
    """measured / predicted speedup per token, written as a product of three measured factors (`gap_factors`)."""

    tokens: float  # measured tokens per target call / E[tokens]: alpha varies by position and prompt; the end
    plain: float  # measured seconds per plain token / the unit: plain decoding's prompt, sampling and loop
    round: float  # predicted round cost x unit / measured seconds per round: what a round does beyond its turns
    measured_over_predicted: float  # tokens x plain x round


def gap_factors(row: Summary, prediction: Prediction, target_seconds: float) -> GapFactors:
    """Why a measured speedup (`row`, a Summary) differs from its per-token `prediction`, `target_seconds` its unit."""
    measured_round = row.tokens_per_call / row.speculative_tokens_per_second  # seconds per round
    return GapFactors(
        tokens=row.tokens_per_call / prediction.expected_tokens,
        plain=1 / row.plain_tokens_per_second / target_seconds,
        round=prediction.round_cost * target_seconds / measured_round,
        measured_over_predicted=row.speedup / prediction.speedup,
    )


PARTS = ("prompt", "target", "draft", "rest")  # the fields of a TimeSplit, in the order they are summed


@dataclass(frozen=True)
class TimeSplit:
    """One decoding's time per generated token, in seconds, by where it went (`round_breakdown`)."""

    prompt: float  # the first target call, which reads the whole prompt
    target: float  # the target's other calls
    draft: float  # the draft's calls
    rest: float  # everything else: sampling and drawing (the draft's too), verifying, the loop's bookkeeping
    tokens: int  # the tokens generated
    target_calls: int

    @property
    def total(self) -> float:
        """Seconds per generated token, all parts together."""
        return self.prompt + self.target + self.draft + self.rest


@dataclass(frozen=True)
class Breakdown:
    """Where the time goes, plain and speculative, on the same prompts (`round_breakdown`)."""

    plain: TimeSplit
    speculative: TimeSplit


def round_breakdown(
    target,
    draft,
    prompts: Sequence,
    max_new_tokens: int,
    params: SamplingParams,
    gamma: int,
    seed: int = 0,
    verify: str = "token",
) -> Breakdown:
    """Where the time goes, in seconds per generated token, for plain and for speculative decoding.

    Runs every prompt once each way (one BLAS thread) with models that time their `score`
    calls, and splits each run's time into: the first target call (it reads the whole prompt),
    the target's other calls, the draft's calls, and the rest: sampling and drawing tokens (the
    draft's too), the verification, and the Python bookkeeping of the loop. `verify` is passed on
    to speculative_generate.
    """
    seconds = {kind: dict.fromkeys(PARTS, 0.0) for kind in ("plain", "speculative")}
    tokens, calls = {"plain": 0, "speculative": 0}, {"plain": 0, "speculative": 0}
    with blas_threads(1):
        for i, prompt in enumerate(prompts):
            for kind in ("plain", "speculative"):
                timed_target, timed_draft = TimedModel(target), TimedModel(draft)
                if kind == "plain":
                    result = generate(timed_target, prompt, max_new_tokens, params, seed_for(seed, i))
                else:
                    rng = seed_for(seed, i)
                    result = speculative_generate(
                        timed_target, timed_draft, prompt, max_new_tokens, params, gamma, rng, verify=verify
                    )
                target_seconds = [s for _, s in timed_target.calls]
                draft_seconds = sum(s for _, s in timed_draft.calls)
                seconds[kind]["prompt"] += target_seconds[0]
                seconds[kind]["target"] += sum(target_seconds[1:])
                seconds[kind]["draft"] += draft_seconds
                seconds[kind]["rest"] += result.seconds - sum(target_seconds) - draft_seconds
                tokens[kind] += result.tokens.size
                calls[kind] += result.target_calls
    split = {
        kind: TimeSplit(
            **{part: s / tokens[kind] for part, s in seconds[kind].items()},
            tokens=tokens[kind],
            target_calls=calls[kind],
        )
        for kind in seconds
    }
    return Breakdown(split["plain"], split["speculative"])


def calls_only(row: Summary) -> float:
    """A row's speed-up if only the target's calls and the draft's turns took time: a bound.

    Plain runs keep their real time, in plain steps. A speculative run is charged its calls: its first
    round's (the draft's turn and the target's call that reads the prompt: costs.first_calls), then
    (n - 1) c + f_call(n) per later round that scores n = drafts + 1 tokens; c (the draft's whole turn
    per drafted token) and f_call (the target's bare call of n tokens) are measured in the row's own
    runs. Sampling the target's rows, verifying, rollbacks and the loop cost nothing: no leaner code
    around these rounds' calls can beat it.
    """
    costs = row.costs
    plain_steps = sum(run.seconds for run in row.plain) / costs.unit  # what plain decoding really took
    drafted = sum(k * (n - 1) for n, k in costs.rounds.items())  # the later rounds' drafts ({n: rounds})
    bare_calls = math.fsum(k * costs.f_call[n] for n, k in costs.rounds.items())  # the target's, later rounds
    later = bare_calls + (drafted * costs.c if drafted else 0.0)  # c is NaN when those rounds drafted nothing
    calls = len(row.speculative) * costs.first_calls + later  # plain steps
    plain_tokens = sum(run.tokens.size for run in row.plain)
    return (row.tokens / calls) / (plain_tokens / plain_steps)


@dataclass(frozen=True)
class Quality:
    """How well a setting's distribution predicts held-out text (`heldout_quality`)."""

    heldout_tokens: int  # the held-out tokens scored
    coverage: float  # the fraction of them the setting keeps (probability > 0)
    bits_per_token: float  # mean -log2 probability over the covered tokens (NaN if none)
    unfiltered_bits_per_token: float  # the same tokens under the target at T = 1, no filter: the reference


def heldout_quality(target, windows, params: SamplingParams = SamplingParams()) -> Quality:
    """How well a sampling setting's distribution predicts held-out text.

    Each window (a row of token ids) is read from a fresh decoding state; every token after the first
    is scored under sampling_probs(target logits, params), the distribution the setting
    actually draws from. A filter can give a real token probability 0 (log-likelihood -inf),
    so two numbers describe a setting: `coverage`, the fraction of held-out tokens it keeps
    (probability > 0), and `bits_per_token`, the mean -log2 probability over those covered
    tokens (NaN if none). `unfiltered_bits_per_token` is the target at T = 1 without
    filters on the same tokens, the reference.
    """
    params = check_params(params)
    windows = np.asarray(windows)
    if windows.ndim != 2 or windows.shape[1] < 2:
        raise ValueError(f"windows must be a 2-D array of token ids with at least 2 per row, got shape {windows.shape}")
    kept, unfiltered = [], []
    for window in windows:
        logits = target.score(window[:-1], target.start())  # (T, V): row t predicts window[t + 1]
        truth = window[1:, None]  # (T, 1)
        kept.append(np.take_along_axis(sampling_probs(logits, params), truth, axis=-1)[:, 0])  # (T,)
        unfiltered.append(np.take_along_axis(log_softmax(logits.astype(np.float64)), truth, axis=-1)[:, 0])  # (T,)
    probs, log_probs = np.concatenate(kept), np.concatenate(unfiltered)  # (N,), (N,)
    covered = probs > 0  # (N,)
    return Quality(
        heldout_tokens=int(probs.size),
        coverage=float(covered.mean()),
        bits_per_token=float(-np.log2(probs[covered]).mean()) + 0.0 if covered.any() else math.nan,  # no -0.0
        unfiltered_bits_per_token=float(-log_probs.mean() / math.log(2)),
    )


def text_bits(target, prompts: Sequence, continuations: Sequence) -> float:
    """The unfiltered target's mean bits per token of generated continuations, each after its prompt.

    Low means text the target finds predictable (greedy text, repetition); high means
    surprising text. A property of the text, not of the setting's own distribution.
    """
    bits, count = 0.0, 0
    for prompt, tokens in zip(prompts, continuations, strict=True):
        prompt, tokens = np.asarray(prompt), np.asarray(tokens)
        if tokens.size == 0:
            continue
        text = np.concatenate([prompt, tokens[:-1]])  # (P + n - 1,)
        logits = target.score(text, target.start())[prompt.size - 1 :]  # (n, V) predicts tokens
        log_probs = np.take_along_axis(log_softmax(logits.astype(np.float64)), tokens[:, None], axis=-1)  # (n, 1)
        bits -= log_probs.sum() / math.log(2)
        count += tokens.size
    return bits / count if count else math.nan


def label(params: SamplingParams) -> str:
    """A short name for a setting: 'greedy', 'T=1', 'T=0.7, top-k 20', 'T=1, top-p 0.9'."""
    params = check_params(params)
    if params.greedy:
        return "greedy"
    parts = [f"T={params.temperature:g}"]
    if params.top_k is not None:
        parts.append(f"top-k {params.top_k}")
    if params.top_p < 1:
        parts.append(f"top-p {params.top_p:g}")
    if params.min_p > 0:
        parts.append(f"min-p {params.min_p:g}")
    return ", ".join(parts)


@dataclass(frozen=True)
class SweepRow:
    """One sampling setting's throughput and quality (`sweep`)."""

    label: str  # the setting's short name (`label`)
    params: SamplingParams
    summary: Summary  # side_by_side at the setting's gamma: speed, tokens per call, alpha, costs
    generated_bits: float  # the unfiltered target's bits per token of the plain runs' text (`text_bits`)
    quality: Quality | None  # heldout_quality under the setting, if held-out windows were given


def sweep(
    target,
    draft,
    prompts: Sequence,
    settings: Sequence[SamplingParams],
    max_new_tokens: int,
    gamma: int | Mapping[str, int] = 4,
    windows=None,
    seed: int = 0,
) -> list[SweepRow]:
    """Throughput and quality for each sampling setting: one SweepRow per setting.

    Throughput: side_by_side at `gamma` (an int, or {label: gamma}). Quality: the unfiltered
    target's bits per token of the plain runs' text (`generated_bits`) and, if held-out
    `windows` are given, `heldout_quality` under the setting (coverage, bits_per_token).
    """
    rows = []
    for params in settings:
        name = label(params)
        g = gamma[name] if isinstance(gamma, Mapping) else gamma
        summary = side_by_side(target, draft, prompts, max_new_tokens, params, [g], seed)[0]
        bits = text_bits(target, prompts, [result.tokens for result in summary.plain])
        quality = heldout_quality(target, windows, params) if windows is not None else None
        rows.append(SweepRow(name, params, summary, bits, quality))
    return rows


def predict_from_rounds(
    results: Sequence[SpeculativeResult], c: float, f: Mapping[int, float], prompt: float = 1.0
) -> Prediction:
    """The cost model for the rounds as they happened: plain steps / sum over rounds of (g c + f(g + 1)).

    For gamma="auto", whose rounds draft different numbers of tokens, this is the prediction; for
    a fixed gamma it differs from `predict` only in using the measured tokens per call instead of
    E[tokens] from one alpha. Each run also reads its prompt, which costs `prompt` target steps
    in both decodings: plain decoding pays prompt + (n - 1) steps for n tokens, and a
    speculative run's first round pays prompt + g c (its target turn is the prompt read).
    Rounds that drafted nothing (g = 0, at the very end) cost f(1) = 1.
    """
    prompt = check_real(prompt, "prompt (target steps)", 0)
    tokens = sum(result.tokens.size for result in results)
    calls = sum(result.target_calls for result in results)

    def turn(n: int) -> float:
        if n == 1:
            return f.get(1, 1.0)
        if n not in f:
            raise ValueError(f"f has no cost for n = {n} positions (it has n = {sorted(f)})")
        return f[n]

    plain, cost = 0.0, 0.0  # in target steps
    for result in results:
        plain += prompt + result.tokens.size - 1
        drafted = list(result.drafted_per_round) + [0] * (result.target_calls - len(result.drafted_per_round))
        for i, g in enumerate(drafted):
            cost += (g * c if g else 0.0) + (prompt if i == 0 else turn(g + 1))
    return Prediction(tokens / calls, cost / calls, plain / cost)
