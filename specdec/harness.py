# Generated from notebooks/10_how_much_faster.ipynb by tools/export.py: edit the notebook, not this file.
"""How much faster? Measuring speculative decoding: acceptance, speed side by side, prediction, quality.

Written in notebook 10. Inputs: `heldout_prompts` draws prompts from held-out text. Reading
results: `acceptance_counts`, `acceptance_by_position` and `pooled_alpha` turn the per-round
counts of SpeculativeResult into acceptance rates.
Measuring: `side_by_side` times plain `generate` against `speculative_generate` on the same
prompts, interleaved, with one BLAS thread, and measures the cost model's inputs inside those
runs (`TimedModel`, `run_turns`, `turn_costs`); `measure_costs` and `draft_step_seconds`
measure f(n) and c apart from the runs, as notebook 07 does; `round_breakdown` splits the time
per token into target calls, draft calls and the rest. Predicting: `predict` is
notebook 07's cost model, and `gap_factors` writes measured / predicted as a product of three
measured factors. Quality: `heldout_quality` scores held-out text under a setting's filtered
target distribution, `text_bits` scores generated text under the unfiltered target. `sweep`
puts throughput and quality together for a list of sampling settings, named by `label`.
"""

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from specdec.generation import GenerationResult, generate
from specdec.logits import log_softmax
from specdec.pipeline import SamplingParams, sampling_probs
from specdec.speculative import SpeculativeResult, speculative_generate
from specdec.timing import blas_threads, cost_ratios, expected_tokens, predicted_speedup, time_scoring
from specdec.validation import check_count, check_gamma, check_params, check_real, check_verify


def heldout_prompts(
    stream, n_prompts: int, length: int = 48, seed: int = 0, newline: int = 2, end: int = 0
) -> list[np.ndarray]:
    """n_prompts prompts of `length` tokens from a held-out token stream, each starting at a line start.

    The start positions are drawn without replacement, seeded, among the positions right after a
    `newline` token whose next `length` tokens contain no `end` (end of file) token, and returned
    in stream order. Text the models never trained on, cut where a programmer would pause.
    """
    stream = np.asarray(stream).astype(np.int64)  # (N,)
    n_prompts, length = check_count(n_prompts, "n_prompts"), check_count(length, "length")
    ends_before = np.concatenate([[0], np.cumsum(stream == end)])  # (N + 1,) END tokens in stream[:i]
    starts = np.flatnonzero(stream[:-length] == newline) + 1  # (S,) positions after a newline
    starts = starts[ends_before[starts + length] == ends_before[starts]]  # no END inside the prompt
    if starts.size < n_prompts:
        raise ValueError(f"the stream has {starts.size} line starts with room for {length} tokens, need {n_prompts}")
    chosen = np.sort(np.random.default_rng(seed).choice(starts, size=n_prompts, replace=False))  # (n_prompts,)
    return [stream[start : start + length] for start in chosen]


def as_results(results) -> list[SpeculativeResult]:
    """One SpeculativeResult or an iterable of them, as a list."""
    return [results] if isinstance(results, SpeculativeResult) else list(results)


def acceptance_counts(results) -> tuple[np.ndarray, np.ndarray]:
    """Per draft position i = 1..gamma: (rounds that tested the draft at i, rounds that accepted it).

    A round that drafted g tokens and accepted n of them tested positions 1..min(n + 1, g):
    every accepted draft, and the first rejected one if there was one. Drafts after a
    rejection are never looked at, so they count nowhere. gamma is the largest g of any round.
    """
    results = as_results(results)
    gamma = max((g for result in results for g in result.drafted_per_round), default=0)
    tested = np.zeros(gamma, dtype=np.int64)  # (gamma,)
    accepted = np.zeros(gamma, dtype=np.int64)  # (gamma,)
    for result in results:
        for n, g in zip(result.accepted_per_round, result.drafted_per_round, strict=True):
            tested[: min(n + 1, g)] += 1
            accepted[:n] += 1
    return tested, accepted


def acceptance_by_position(results) -> np.ndarray:
    """(gamma,) for i = 1..gamma: of the rounds that reached draft position i, the fraction that accepted it.

    Position i is reached when drafts 1..i-1 were all accepted (and the round drafted at
    least i tokens). NaN where no round reached position i.
    """
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
    """A model that records the size, the start and the seconds of every `score` call; the rest passes through."""

    def __init__(self, model):
        self.model = model
        self.calls: list[tuple[int, float]] = []  # (tokens scored, seconds) of each call
        self.starts: list[float] = []  # time.perf_counter() when each call began

    def __getattr__(self, name):  # vocab_size, max_context, name
        return getattr(self.model, name)

    def start(self):
        return self.model.start()

    def score(self, tokens, state) -> np.ndarray:
        start = time.perf_counter()
        logits = self.model.score(tokens, state)
        self.calls.append((len(tokens), time.perf_counter() - start))
        self.starts.append(start)
        return logits


def run_turns(result, target: TimedModel, draft: TimedModel | None, end: float) -> dict:
    """One run's seconds split into what the cost model charges, from the calls its models timed.

    Plain (`draft` None): "prompt", from the start of the run to the second target call (the
    prompt read and the first token drawn), and "steps" seconds for "step_count" steps, each
    one call of one token, its sampling and the loop, up to the next call. Speculative: a round
    begins at its first draft call (or at its target call, if it drafts nothing) and the first
    round, which reads the prompt, is "prompt". In every later round, the draft's turn runs
    from its first call to the target's ("draft" seconds for "drafted" tokens, one call each),
    and the target's turn from its call to the next round: {n: [seconds, count]} in "turns" by
    the tokens scored, n = g + 1 (the call, `sampling_probs` on its n rows, the verification,
    the rollbacks), and in "calls" for the call alone. `end` is time.perf_counter() after the run.
    """
    start = end - result.seconds
    if draft is None:
        starts = target.starts
        steps = end - starts[1] if len(starts) > 1 else 0.0
        return {"prompt": result.seconds - steps, "steps": steps, "step_count": max(len(starts) - 1, 0)}
    events = sorted(
        [(t, "target", n, seconds) for t, (n, seconds) in zip(target.starts, target.calls, strict=True)]
        + [(t, "draft", n, seconds) for t, (n, seconds) in zip(draft.starts, draft.calls, strict=True)]
    )
    rounds, pending = [], []  # rounds: (start of the round, draft calls, the target's call)
    for event in events:
        if event[1] == "draft":
            pending.append(event)
        else:
            rounds.append(((pending or [event])[0][0], len(pending), event))
            pending = []
    turns = {"draft": 0.0, "drafted": 0, "turns": {}, "calls": {}}
    turns["prompt"] = (rounds[1][0] if len(rounds) > 1 else end) - start
    for r in range(1, len(rounds)):
        round_start, drafted, (call_start, _, n, call_seconds) = rounds[r]
        turn_end = rounds[r + 1][0] if r + 1 < len(rounds) else end
        turns["draft"] += call_start - round_start
        turns["drafted"] += drafted
        for key, seconds in (("turns", turn_end - call_start), ("calls", call_seconds)):
            total = turns[key].setdefault(n, [0.0, 0])
            total[0] += seconds
            total[1] += 1
    return turns


def turn_costs(plain: Sequence[dict], speculative: Sequence[dict]) -> dict:
    """The cost model's inputs measured inside the runs (`run_turns` of each run), in plain steps.

    "unit": the seconds of one plain step (one target call of one token, its sampling and the
    loop: what plain decoding pays per token after the prompt). In units of it: "c", the draft's
    turn per drafted token (its call and its sampling); "f" {n: the target's turn of n tokens:
    its call, sampling its n rows, the verification}; "f_call", the call alone; "prompt", a plain
    run's prompt step (reading the prompt, drawing the first token); and "rounds" {n: how many
    rounds scored n}. Rounds that read the prompt count in none of them. Empty sums give NaN.
    """
    steps, count = sum(t["steps"] for t in plain), sum(t["step_count"] for t in plain)
    unit = steps / count if count else math.nan
    drafted = sum(t["drafted"] for t in speculative)

    def totals(key: str) -> dict[int, list]:  # {n: [seconds, rounds]} over all runs
        summed: dict[int, list] = {}
        for t in speculative:
            for n, (seconds, k) in t[key].items():
                total = summed.setdefault(n, [0.0, 0])
                total[0], total[1] = total[0] + seconds, total[1] + k
        return dict(sorted(summed.items()))

    turns, calls = totals("turns"), totals("calls")
    return {
        "unit": unit,
        "c": sum(t["draft"] for t in speculative) / drafted / unit if drafted else math.nan,
        "f": {n: seconds / k / unit for n, (seconds, k) in turns.items()},
        "f_call": {n: seconds / k / unit for n, (seconds, k) in calls.items()},
        "prompt": sum(t["prompt"] for t in plain) / len(plain) / unit if plain else math.nan,
        "rounds": {n: k for n, (_, k) in turns.items()},
    }


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
) -> list[dict]:
    """Plain `generate` against `speculative_generate` with the same target, on the same prompts.

    For each gamma, every prompt is generated plainly and speculatively, back to back (plain
    first for even prompts, speculative first for odd ones), so that a slow moment of a shared
    machine hits both; with `repeats` > 1 each pair is run that many times and each run keeps
    its fastest time (noise only ever adds time; the tokens are the same every time). One
    untimed warm-up run of each comes first. BLAS threads are what the generators use by
    default (specdec.threads). The seconds are the runs' own `seconds`, prompt
    scoring included, as any user would pay it. A gamma may be "auto"; `verify` is passed on to
    speculative_generate ("token" or "block", notebook 11). The models are wrapped in
    `TimedModel`s, so each dict (one per gamma, keys: see `summarize`) also has "costs": the
    cost model's inputs measured inside these very runs (`turn_costs`; with `repeats` > 1,
    those of the fastest run of each).
    """
    params = check_params(params)
    gammas = [check_gamma(gamma) for gamma in gammas]
    prompts = [np.asarray(prompt) for prompt in prompts]
    repeats = check_count(repeats, "repeats")
    verify = check_verify(verify)
    if not prompts or not gammas:
        raise ValueError(f"need at least one prompt and one gamma, got {len(prompts)} prompts and gammas {gammas}")

    def run(kind: str, i: int, gamma: int) -> tuple:
        timed_target, timed_draft = TimedModel(target), TimedModel(draft)
        if kind == "plain":
            result = generate(timed_target, prompts[i], max_new_tokens, params, seed_for(seed, i))
            return result, run_turns(result, timed_target, None, time.perf_counter())
        rng = seed_for(seed, i)
        result = speculative_generate(
            timed_target, timed_draft, prompts[i], max_new_tokens, params, gamma, rng, verify=verify
        )
        return result, run_turns(result, timed_target, timed_draft, time.perf_counter())

    rows = []
    warm_up = seed_for(seed, len(prompts))  # a generator no timed run uses
    generate(target, prompts[0], min(max_new_tokens, 8), params, warm_up)
    speculative_generate(target, draft, prompts[0], min(max_new_tokens, 8), params, gammas[0], warm_up, verify=verify)
    for gamma in gammas:
        results, turns = {"plain": [], "speculative": []}, {"plain": [], "speculative": []}
        for i in range(len(prompts)):
            order = ("plain", "speculative") if i % 2 == 0 else ("speculative", "plain")
            runs = [[run(kind, i, gamma) for kind in order] for _ in range(repeats)]
            for j, kind in enumerate(order):
                result, split = min((pair[j] for pair in runs), key=lambda timed: timed[0].seconds)
                results[kind].append(result)  # the tokens are the same in every repeat
                turns[kind].append(split)
        row = summarize(gamma, results["plain"], results["speculative"])
        row["costs"] = turn_costs(turns["plain"], turns["speculative"])
        rows.append(row)
    return rows


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


def summarize(
    gamma: int, plain: list[GenerationResult], speculative: list[SpeculativeResult], seconds: dict | None = None
) -> dict:
    """The totals of one gamma's runs: speed, tokens per target call, acceptance.

    `seconds` ({"plain": [...], "speculative": [...]}, one per run) replaces the runs' own
    times when given. Keys: gamma, tokens, plain_seconds, speculative_seconds,
    plain_tokens_per_second, speculative_tokens_per_second, speedup, target_calls,
    tokens_per_call, tokens_per_full_round (the mean over rounds that drafted all gamma
    tokens), drafted, tested, accepted, alpha (pooled), acceptance_rate (accepted / drafted),
    by_position, identical_outputs (plain and speculative gave the same tokens for every
    prompt, as greedy must), repeated (each speculative output's `repeated_fraction`),
    looping (how many exceed LOOP_FRACTION), tokens_per_call_not_looping and
    speedup_not_looping (the same figures over the other runs only; NaN if there are none),
    and the runs themselves: plain, speculative.
    """
    if seconds is None:
        seconds = {"plain": [r.seconds for r in plain], "speculative": [r.seconds for r in speculative]}
    tested, accepted = acceptance_counts(speculative)
    tokens = sum(result.tokens.size for result in speculative)
    plain_tokens = sum(result.tokens.size for result in plain)
    plain_seconds, speculative_seconds = sum(seconds["plain"]), sum(seconds["speculative"])
    target_calls = sum(result.target_calls for result in speculative)
    drafted = sum(result.drafted for result in speculative)
    full_rounds = [  # tokens yielded by each round that drafted all gamma tokens (not cut short at the end)
        n + 1
        for result in speculative
        for n, g in zip(result.accepted_per_round, result.drafted_per_round, strict=True)
        if g == gamma
    ]
    repeated = [repeated_fraction(result.tokens) for result in speculative]
    fresh = [i for i, fraction in enumerate(repeated) if not fraction > LOOP_FRACTION]  # runs that do not loop
    fresh_tokens = sum(speculative[i].tokens.size for i in fresh)
    fresh_plain_tokens = sum(plain[i].tokens.size for i in fresh)
    fresh_calls = sum(speculative[i].target_calls for i in fresh)
    fresh_seconds = sum(seconds["speculative"][i] for i in fresh), sum(seconds["plain"][i] for i in fresh)
    return {
        "gamma": gamma,
        "tokens": tokens,
        "plain_seconds": plain_seconds,
        "speculative_seconds": speculative_seconds,
        "plain_tokens_per_second": plain_tokens / plain_seconds,
        "speculative_tokens_per_second": tokens / speculative_seconds,
        "speedup": (tokens / speculative_seconds) / (plain_tokens / plain_seconds),
        "target_calls": target_calls,
        "tokens_per_call": tokens / target_calls if target_calls else math.nan,
        "tokens_per_full_round": float(np.mean(full_rounds)) if full_rounds else math.nan,
        "drafted": drafted,
        "tested": int(tested.sum()),
        "accepted": int(accepted.sum()),
        "alpha": pooled_alpha(speculative),
        "acceptance_rate": int(accepted.sum()) / drafted if drafted else math.nan,
        "by_position": acceptance_by_position(speculative),
        "identical_outputs": all(np.array_equal(a.tokens, b.tokens) for a, b in zip(plain, speculative, strict=True)),
        "repeated": repeated,
        "looping": len(speculative) - len(fresh),
        "tokens_per_call_not_looping": fresh_tokens / fresh_calls if fresh_calls else math.nan,
        "speedup_not_looping": (
            (fresh_tokens / fresh_seconds[0]) / (fresh_plain_tokens / fresh_seconds[1]) if fresh else math.nan
        ),
        "plain": plain,
        "speculative": speculative,
    }


class Prediction(NamedTuple):
    """What the cost model of notebook 07 predicts for one (alpha, gamma, c, f)."""

    expected_tokens: float  # tokens per target call, (1 - alpha**(gamma + 1)) / (1 - alpha)
    round_cost: float  # gamma * c + f(gamma + 1), in target steps
    speedup: float  # expected_tokens / round_cost, or for whole runs (predict's new_tokens)


def predict(alpha: float, gamma: int, c: float, f, prompt: float = 1.0, new_tokens: int | None = None) -> Prediction:
    """The cost model: E[tokens], the cost of a round in target steps, and the speedup.

    Without `new_tokens`: the speedup per token, E[tokens] / (gamma c + f(gamma + 1)). With it:
    the speedup of whole runs of `new_tokens` tokens after a prompt whose reading (and first
    draw) costs `prompt` target steps. Plain decoding pays prompt + (n - 1) steps. Speculative
    decoding needs R = n / E[tokens] rounds (at least one); its first round's target turn is
    the same prompt read, so it pays prompt + gamma c + (R - 1) round_cost.
    """
    speedup = predicted_speedup(alpha, gamma, c, f)  # checks every argument
    tokens = expected_tokens(alpha, gamma)
    round_cost = tokens / speedup
    if new_tokens is None:
        return Prediction(tokens, round_cost, speedup)
    new_tokens = check_count(new_tokens, "new_tokens")
    prompt = check_real(prompt, "prompt (target steps)", 0)
    rounds = max(new_tokens / tokens, 1.0)
    speculative = prompt + gamma * c + (rounds - 1) * round_cost  # target steps
    return Prediction(tokens, round_cost, (prompt + new_tokens - 1) / speculative)


def gap_factors(row: dict, prediction: Prediction, target_seconds: float) -> dict:
    """Why a measured speedup differs from its prediction: three measured factors whose product is the ratio.

    measured / predicted = tokens * plain * round, where
    tokens = measured tokens per target call / E[tokens]   (alpha varies by position and prompt; the end),
    plain  = measured seconds per plain token / target_seconds   (plain decoding's own sampling and loop),
    round  = predicted round cost * target_seconds / measured seconds per round   (everything a round
             does beyond gamma draft steps and one target call: verification, bookkeeping, the prompt).
    `row` is one dict of side_by_side, `target_seconds` the cost model's unit.
    """
    plain_token = 1 / row["plain_tokens_per_second"]  # seconds per plain token
    measured_round = row["speculative_seconds"] / row["target_calls"]  # seconds per round
    factors = {
        "tokens": row["tokens_per_call"] / prediction.expected_tokens,
        "plain": plain_token / target_seconds,
        "round": prediction.round_cost * target_seconds / measured_round,
    }
    factors["measured_over_predicted"] = row["speedup"] / prediction.speedup
    return factors


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


def measure_costs(
    target, draft, params: SamplingParams, prompt_tokens, max_n: int = 9, context: int = 64, repeats: int = 21
) -> dict:
    """The cost model's inputs measured as in notebook 07, one BLAS thread.

    f(n) for n = 1..max_n from `time_scoring(target, ...)` after `context` random tokens, in
    units of one target.score of one token (`target_seconds`); c = `draft_step_seconds(...)`
    in the same unit. Returns {"c", "f", "target_seconds", "draft_step_seconds"}.
    """
    max_n = check_count(max_n, "max_n")
    with blas_threads(1):
        times = time_scoring(target, list(range(1, max_n + 1)), repeats=repeats, context=context)
    step = draft_step_seconds(draft, params, prompt_tokens)
    return {"c": step / times[1], "f": cost_ratios(times), "target_seconds": times[1], "draft_step_seconds": step}


def round_breakdown(
    target,
    draft,
    prompts: Sequence,
    max_new_tokens: int,
    params: SamplingParams,
    gamma: int,
    seed: int = 0,
    verify: str = "token",
) -> dict:
    """Where the time goes, in seconds per generated token, for plain and for speculative decoding.

    Runs every prompt once each way (one BLAS thread) with models that time their `score`
    calls, and splits each run's time into: "prompt", the first target call (it reads the
    whole prompt); "target", the target's other calls; "draft", the draft's calls; and
    "rest", everything else: sampling and drawing tokens (the draft's too), the verification,
    and the Python bookkeeping of the loop. Also returns the tokens and the target calls.
    `verify` is passed on to speculative_generate.
    """
    parts = {kind: dict.fromkeys(("prompt", "target", "draft", "rest"), 0.0) for kind in ("plain", "speculative")}
    tokens = {"plain": 0, "speculative": 0}
    calls = {"plain": 0, "speculative": 0}
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
                target_seconds = [seconds for _, seconds in timed_target.calls]
                draft_seconds = sum(seconds for _, seconds in timed_draft.calls)
                parts[kind]["prompt"] += target_seconds[0]
                parts[kind]["target"] += sum(target_seconds[1:])
                parts[kind]["draft"] += draft_seconds
                parts[kind]["rest"] += result.seconds - sum(target_seconds) - draft_seconds
                tokens[kind] += result.tokens.size
                calls[kind] += result.target_calls
    per_token = {kind: {name: seconds / tokens[kind] for name, seconds in parts[kind].items()} for kind in parts}
    return {**per_token, "tokens": tokens, "target_calls": calls}


def heldout_quality(target, windows, params: SamplingParams = SamplingParams()) -> dict:
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
    return {
        "heldout_tokens": int(probs.size),
        "coverage": float(covered.mean()),
        "bits_per_token": float(-np.log2(probs[covered]).mean()) + 0.0 if covered.any() else math.nan,  # no -0.0
        "unfiltered_bits_per_token": float(-log_probs.mean() / math.log(2)),
    }


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


def sweep(
    target,
    draft,
    prompts: Sequence,
    settings: Sequence[SamplingParams],
    max_new_tokens: int,
    gamma: int | Mapping[str, int] = 4,
    windows=None,
    seed: int = 0,
) -> list[dict]:
    """Throughput and quality for each sampling setting: one dict per setting.

    Throughput: side_by_side at `gamma` (an int, or {label: gamma}). Quality: the unfiltered
    target's bits per token of the plain runs' text (`generated_bits`) and, if held-out
    `windows` are given, `heldout_quality` under the setting (coverage, bits_per_token).
    """
    rows = []
    for params in settings:
        name = label(params)
        g = gamma[name] if isinstance(gamma, Mapping) else gamma
        row = side_by_side(target, draft, prompts, max_new_tokens, params, [g], seed)[0]
        row = {"label": name, "params": params, **row}
        row["generated_bits"] = text_bits(target, prompts, [result.tokens for result in row["plain"]])
        if windows is not None:
            row.update(heldout_quality(target, windows, params))
        rows.append(row)
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
