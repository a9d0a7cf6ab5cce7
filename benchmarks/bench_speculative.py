"""Benchmark: speculative decoding against plain decoding with the same engine, and the cost model's prediction.

What is compared, for the bundled pair (target: the tiny GPT; draft: the distilled 5-gram):

* plain: `specdec.generate(target, prompt, max_new_tokens, params, rng)`, one target call per token;
* speculative: `specdec.speculative_generate(target, draft, prompt, max_new_tokens, params, gamma, rng)`,

on the same held-out prompts (`specdec.harness.heldout_prompts`: random line starts of the held-out
files, fixed seed), with the library's defaults (its own BLAS thread setting; gamma="auto" is the
default), interleaved prompt by prompt (plain first for even prompts, speculative first for odd
ones), each pair repeated `--repeats` times keeping each run's fastest time
(`specdec.harness.side_by_side`). Settings: greedy, T=1, and two filtered ones; gammas: fixed
values and "auto".

The prediction is notebook 07's cost model, E[tokens] / (gamma * c + f(gamma + 1)), for whole runs
with the prompt counted once (`predict` with `prompt` and `new_tokens`; for "auto", whose rounds
differ, the same model summed over the rounds as they happened: `predict_from_rounds`). Every input
is measured inside the runs it predicts (notebook 10, section 3): alpha; the unit, one plain step;
c, the draft's turn per drafted token; f(n), the target's turn of n tokens (its call, sampling its
n rows, the verification); the prompt's first step. Each row prints its own.

Each row also prints its own "calls only" bound (`specdec.harness.calls_only`, notebook 10) and the
share of it measured.
Then, for each setting at its best gamma, where the time goes (`round_breakdown`) and the three
factors that make up measured / predicted (`gap_factors`). Last, the course's targets at the
defaults, and beside each the "calls only" bound (`calls_only`): the best row's speed-up had nothing
but the target's calls and the draft's turns taken time (whole runs, the prompt read on both sides, as
in the measured runs). When even that is below a target, no choice of gamma or leaner bookkeeping of the
round reaches it with this pair on this machine (only a cheaper draft turn, a cheaper target call or a
higher alpha moves it). `--profile` adds a cProfile of the speculative runs at T=1.

    python benchmarks/bench_speculative.py                     # about 4 minutes on a 2-core machine
    python benchmarks/bench_speculative.py --gammas 3 4 5 --prompts 8 --repeats 1   # a quick look
    python benchmarks/bench_speculative.py --verify block      # sampled rounds verified as a block (notebook 11)

Needs only the course's environment (numpy, threadpoolctl); run it on an otherwise quiet machine.
"""

import argparse
import cProfile
import datetime
import os
import platform
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "training"))  # training/ is not a package
sys.path.insert(0, str(ROOT))  # run from anywhere without installing specdec

import numpy as np  # noqa: E402
from corpus import load_corpus  # noqa: E402

import specdec  # noqa: E402
from specdec import SamplingParams  # noqa: E402
from specdec.harness import (  # noqa: E402
    LOOP_FRACTION,
    PARTS,
    calls_only,
    gap_factors,
    heldout_prompts,
    label,
    predict,
    predict_from_rounds,
    repetition,
    round_breakdown,
    seed_for,
    side_by_side,
)
from specdec.threads import describe_machine, generation_blas_threads, generation_threads, kernel_note  # noqa: E402
from specdec.timing import f_dips  # noqa: E402
from specdec.validation import VERIFY_RULES  # noqa: E402

SETTINGS = [
    SamplingParams(temperature=0.0),
    SamplingParams(temperature=1.0),
    SamplingParams(temperature=1.0, top_p=0.9),
    SamplingParams(temperature=0.7, top_k=20),
]
TARGETS = {"greedy": (5.0, 2.5), "T=1": (3.1, 1.75)}  # at the library's defaults: tokens per target call, speed-up


def gamma_argument(text: str) -> int | str:
    return text if text == "auto" else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--gammas", type=gamma_argument, nargs="+", default=[2, 3, 4, 5, 6, 8, "auto"], help="default: 2 3 4 5 6 8 auto"
    )
    parser.add_argument("--prompts", type=int, default=16, help="held-out prompts (default 16)")
    parser.add_argument("--prompt-length", type=int, default=48, help="tokens per prompt (default 48)")
    parser.add_argument("--max-new-tokens", type=int, default=160, help="tokens generated per run (default 160)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per prompt and side, fastest kept (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="prompt choice and sampling seeds (default 0)")
    parser.add_argument("--profile", action="store_true", help="also cProfile the speculative runs at T=1")
    parser.add_argument(
        "--verify",
        choices=VERIFY_RULES,
        default="token",
        help='how sampled rounds are verified: "token" (default) or "block" (notebook 11); greedy is the same',
    )
    args = parser.parse_args()
    if args.max_new_tokens < 32:
        parser.error("max new tokens must be at least 32, so that every gamma has full rounds to time")
    if args.prompt_length + args.max_new_tokens > 256:
        parser.error("prompt length + max new tokens must fit the target's context of 256")

    started = time.perf_counter()
    print(f"date: {datetime.date.today().isoformat()}; machine: {describe_machine()}")
    if note := kernel_note():
        print(note)
    threads = generation_blas_threads()
    setting = (
        "BLAS threads: numpy's own setting"
        if threads is None
        else f"BLAS threads while generating: {threads} (the library's default)"
    )
    print(f"Python {platform.python_version()}; {setting}")
    print("load average before (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    target, draft = specdec.load_model("target"), specdec.load_model("draft")
    corpus = load_corpus()
    prompts = heldout_prompts(corpus.heldout, args.prompts, args.prompt_length, seed=args.seed)
    print(
        f"{len(prompts)} held-out prompts of {args.prompt_length} tokens (seed {args.seed}), "
        f"{args.max_new_tokens} new tokens per run, repeats {args.repeats}, gammas {args.gammas}, "
        f"{args.verify} verification"
    )
    results = {}
    for params in SETTINGS:
        results[label(params)] = side_by_side(
            target,
            draft,
            prompts,
            args.max_new_tokens,
            params,
            args.gammas,
            seed=args.seed,
            repeats=args.repeats,
            verify=args.verify,
        )
        print(f"  measured {label(params)} ({time.perf_counter() - started:.0f} s)", flush=True)

    print()
    print(
        "Cost model inputs, measured inside each row's runs (in plain steps; f(n): the target's whole turn"
        " of n tokens, for the sizes of 5 rounds or more):"
    )
    for name, rows in results.items():
        for row in rows:
            costs = row.costs
            f = " ".join(f"f({n}) {value:.2f}" for n, value in costs.f.items() if costs.rounds[n] >= 5)
            print(
                f"  {name:16} {row.gamma!s:>5}: unit {1e6 * costs.unit:.0f} µs, c {costs.c:.3f}, "
                f"prompt {costs.prompt:.1f}; {f}"
            )
        fixed = {row.gamma + 1: row.costs.f[row.gamma + 1] for row in rows if row.gamma != "auto"}
        if f_dips(fixed):
            print(f"  {name:16} f(gamma + 1) across the rows falls at n = {f_dips(fixed)} (kernel switch, or load)")
    print()
    header = (
        f"{'setting':16} {'gamma':>5} {'plain tok/s':>11} {'spec tok/s':>10} {'speedup':>8} {'tok/call':>8}"
        f" {'alpha':>6} {'c':>6} {'f(g+1)':>6} {'predicted':>9} {'(meas-pred)/pred':>16} {'calls only':>10}"
        f" {'meas/bound':>10}"
    )
    print(header)
    print("-" * len(header))
    best, gaps = {}, {}  # gaps: {setting: (measured - predicted) / predicted of each row}
    for name, rows in results.items():
        predictions, gaps[name] = [], []
        for row in rows:
            costs = row.costs
            c = costs.c
            if row.gamma == "auto":
                prediction = predict_from_rounds(row.speculative, c, costs.f, costs.prompt)
                f_column = "-"
            else:
                gamma = row.gamma
                prediction = predict(row.alpha, gamma, c, costs.f, costs.prompt, args.max_new_tokens)
                f_column = f"{costs.f[gamma + 1]:.2f}"
            predictions.append(prediction)
            gap = (row.speedup - prediction.speedup) / prediction.speedup
            gaps[name].append(gap)  # kept for the targets and the within-10% count below
            row_bound = calls_only(row)
            print(
                f"{name:16} {row.gamma!s:>5} {row.plain_tokens_per_second:11.0f} "
                f"{row.speculative_tokens_per_second:10.0f} {row.speedup:7.2f}x {row.tokens_per_call:8.2f}"
                f" {row.alpha:6.3f} {c:6.3f} {f_column:>6} {prediction.speedup:8.2f}x"
                f" {gap:+15.1%} {row_bound:9.2f}x {row.speedup / row_bound:10.1%}"
            )
        best[name] = max(rows, key=lambda row: row.speedup)
        predicted_best, prediction = max(zip(rows, predictions, strict=True), key=lambda pair: pair[1].speedup)
        print(
            f"{'':16} best gamma: measured {best[name].gamma} ({best[name].speedup:.2f}x), "
            f"predicted {predicted_best.gamma} ({prediction.speedup:.2f}x)"
        )
        if name == "greedy":
            print(f"{'':16} greedy outputs identical to plain decoding: {all(r.identical_outputs for r in rows)}")
        row = best[name]  # how much of it is repetition: outputs with most of their 9-token windows seen before
        loops = repetition(row)
        print(
            f"{'':16} at gamma {row.gamma}: {loops.looping} of {len(loops.repeated)} outputs loop "
            f"(repeated fraction > {LOOP_FRACTION}; median {np.median(loops.repeated):.2f}); the others: "
            f"tokens per call {loops.tokens_per_call_not_looping:.2f}, speed-up {loops.speedup_not_looping:.2f}x"
        )

    print()
    print("Where the time goes at the best gamma (µs per generated token; one run per prompt):")
    print("  measured/predicted per token = tokens x plain x round (see specdec.harness.gap_factors)")
    for params in SETTINGS:
        name = label(params)
        row = best[name]
        split = round_breakdown(
            target, draft, prompts, args.max_new_tokens, params, row.gamma, seed=args.seed, verify=args.verify
        )
        costs = row.costs
        if row.gamma == "auto":
            per_token = predict_from_rounds(row.speculative, costs.c, costs.f)  # prompt as one step
        else:
            per_token = predict(row.alpha, row.gamma, costs.c, costs.f)
        factors = gap_factors(row, per_token, costs.unit)
        spec = split.speculative
        per_round = spec.tokens / spec.target_calls
        plain = ", ".join(f"{part} {1e6 * getattr(split.plain, part):.0f}" for part in PARTS if part != "draft")
        rounds = ", ".join(f"{part} {1e6 * per_round * getattr(spec, part):.0f}" for part in PARTS)
        print(
            f"  {name:16} gamma {row.gamma}: plain {1e6 * split.plain.total:.0f} per token ({plain});"
            f" speculative {1e6 * spec.total:.0f} per token, {1e6 * per_round * spec.total:.0f}"
            f" per round ({rounds})"
        )
        print(
            f"  {'':16} factors: tokens {factors.tokens:.3f} x plain {factors.plain:.3f} x round "
            f"{factors.round:.3f} = {factors.measured_over_predicted:.3f}"
        )

    print()
    print('Targets (course design: bundled pair, same engine, library defaults, i.e. gamma="auto"):')
    for name, (calls_target, speed_target) in TARGETS.items():
        auto = [i for i, r in enumerate(results[name]) if r.gamma == "auto"]
        if not auto:
            print(f"  {name}: not measured (add auto to --gammas)")
            continue
        row, gap = results[name][auto[0]], gaps[name][auto[0]]
        print(
            f"  {name:6} tokens per call {row.tokens_per_call:.2f} (target {calls_target}: "
            f"{'met' if row.tokens_per_call >= calls_target else 'MISSED'}); speed-up {row.speedup:.2f}x "
            f"(target {speed_target}x: {'met' if row.speedup >= speed_target else 'MISSED'}); "
            f"{gap:+.1%} from the prediction ({'within' if abs(gap) <= 0.10 else 'NOT within'} 10%); "
            f"plain decoding {row.plain_tokens_per_second:.0f} tokens/s"
        )
        loops = repetition(row)
        print(
            f"  {'':6} without the {loops.looping} of {len(loops.repeated)} outputs that loop: tokens per call "
            f"{loops.tokens_per_call_not_looping:.2f}, speed-up {loops.speedup_not_looping:.2f}x"
        )
        bound = max(results[name], key=calls_only)
        at_most = calls_only(bound)
        print(
            f"  {'':6} calls only: at most {at_most:.2f}x (gamma {bound.gamma}, the best row; "
            f"target {speed_target}x: {'within reach' if at_most >= speed_target else 'OUT OF REACH'})"
            " if the target's sampling, verification and the loop cost nothing"
        )
        row_bound = calls_only(row)  # the defaults' row's own bound
        share = row.speedup / row_bound
        print(
            f"  {'':6} at the defaults: {share:.1%} of its own calls-only bound ({row_bound:.2f}x; target 95%: "
            f"{'met' if share >= 0.95 else 'MISSED'})"
        )
    within = [abs(gap) <= 0.10 for setting in gaps.values() for gap in setting]
    print(f"  measured within 10% of predicted: {sum(within)} of {len(within)} rows")
    print("load average after (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"total time: {time.perf_counter() - started:.0f} s")

    if args.profile:
        params, gamma = SETTINGS[1], best["T=1"].gamma
        profiler = cProfile.Profile()
        with generation_threads():
            profiler.enable()
            for i, prompt in enumerate(prompts):
                rng = seed_for(args.seed, i)
                specdec.speculative_generate(
                    target, draft, prompt, args.max_new_tokens, params, gamma, rng, verify=args.verify
                )
            profiler.disable()
        print(f"\ncProfile of the speculative runs at T=1, gamma {gamma} (profiling slows small calls down):")
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
