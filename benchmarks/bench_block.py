"""Benchmark: block verification (notebook 11) against token-level verification, side by side in one run.

For the bundled pair (target: the tiny GPT; draft: the distilled 5-gram) on held-out prompts
(`specdec.harness.heldout_prompts`), every prompt is generated three ways, back to back and in an
order that alternates from prompt to prompt: plainly (`specdec.generate`), and with
`specdec.speculative_generate(..., verify="token")` and `(..., verify="block")`, the same seed for
all three. Each run is repeated `--repeats` times and keeps its fastest time (noise only adds
time). A slow moment of a shared machine then hits all three alike, which two separate benchmark
runs cannot promise.

Reported per setting and gamma: tokens per target call of both rules (counts: the same on every
machine) and their ratio, and the speed-ups over plain decoding with both rules (wall clock: name
the machine). Greedy is run once as a check: the two rules must give plain greedy's text.

    python benchmarks/bench_block.py                  # about 5 minutes on a 2-core machine
    python benchmarks/bench_block.py --gammas 4 8 --prompts 8   # a quick look

Needs only the course's environment (numpy, threadpoolctl); run it on an otherwise quiet machine.
"""

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "training"))  # training/ is not a package
sys.path.insert(0, str(ROOT))  # run from anywhere without installing specdec

from corpus import load_corpus  # noqa: E402

import specdec  # noqa: E402
from specdec import SamplingParams  # noqa: E402
from specdec.harness import heldout_prompts, label, seed_for  # noqa: E402
from specdec.threads import describe_machine  # noqa: E402

SETTINGS = [
    SamplingParams(temperature=1.0),
    SamplingParams(temperature=1.0, top_p=0.9),
    SamplingParams(temperature=0.7, top_k=20),
]
KINDS = ("plain", "token", "block")


def gamma_argument(text: str) -> int | str:
    return text if text == "auto" else int(text)


def run(kind: str, target, draft, prompt, max_new_tokens: int, params, gamma, rng):
    if kind == "plain":
        return specdec.generate(target, prompt, max_new_tokens, params, rng)
    return specdec.speculative_generate(target, draft, prompt, max_new_tokens, params, gamma, rng, verify=kind)


def compare(target, draft, prompts, max_new_tokens: int, params, gamma, seed: int, repeats: int) -> dict:
    """Totals over the prompts for plain, token and block: tokens, target calls, fastest seconds."""
    totals = {kind: {"tokens": 0, "calls": 0, "seconds": 0.0} for kind in KINDS}
    for i, prompt in enumerate(prompts):
        order = KINDS if i % 2 == 0 else KINDS[::-1]
        best = dict.fromkeys(order, float("inf"))
        results = {}
        for _ in range(repeats):
            for kind in order:
                results[kind] = run(kind, target, draft, prompt, max_new_tokens, params, gamma, seed_for(seed, i))
                best[kind] = min(best[kind], results[kind].seconds)
        for kind in KINDS:
            totals[kind]["tokens"] += results[kind].tokens.size
            totals[kind]["calls"] += results[kind].target_calls
            totals[kind]["seconds"] += best[kind]
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gammas", type=gamma_argument, nargs="+", default=[2, 4, 6, 8, "auto"])
    parser.add_argument("--prompts", type=int, default=16, help="held-out prompts (default 16)")
    parser.add_argument("--max-new-tokens", type=int, default=160, help="tokens generated per run (default 160)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per prompt and kind, fastest kept (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="prompt choice and sampling seeds (default 0)")
    args = parser.parse_args()

    started = time.perf_counter()
    print(f"date: {datetime.date.today().isoformat()}; machine: {describe_machine()}")
    print("load average before (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    target, draft = specdec.load_model("target"), specdec.load_model("draft")
    prompts = heldout_prompts(load_corpus().heldout, args.prompts, 48, seed=args.seed)
    print(
        f"{len(prompts)} held-out prompts of 48 tokens (seed {args.seed}), {args.max_new_tokens} new tokens per run, "
        f"repeats {args.repeats}; plain, token and block interleaved prompt by prompt"
    )
    greedy = SamplingParams(0.0)
    for i, prompt in enumerate(prompts[:4]):  # the check: greedy is plain greedy's text with either rule
        plain = specdec.generate(target, prompt, 60, greedy).tokens
        for verify in ("token", "block"):
            fast = specdec.speculative_generate(target, draft, prompt, 60, greedy, 4, verify=verify).tokens
            assert np.array_equal(plain, fast), f"greedy with verify={verify} differs from generate on prompt {i}"
    print("greedy: token and block verification both give plain greedy's text (4 prompts, gamma 4)")
    print()
    header = (
        f"{'setting':16} {'gamma':>5} {'tok/call token':>14} {'block':>6} {'ratio':>6}"
        f" {'speed-up token':>14} {'block':>6} {'block time / token time':>23}"
    )
    print(header)
    print("-" * len(header))
    for params in SETTINGS:
        for gamma in args.gammas:
            totals = compare(target, draft, prompts, args.max_new_tokens, params, gamma, args.seed, args.repeats)
            per_call = {kind: totals[kind]["tokens"] / totals[kind]["calls"] for kind in ("token", "block")}
            speedup = {kind: totals["plain"]["seconds"] / totals[kind]["seconds"] for kind in ("token", "block")}
            print(
                f"{label(params):16} {gamma!s:>5} {per_call['token']:14.3f} {per_call['block']:6.3f}"
                f" {per_call['block'] / per_call['token']:6.3f} {speedup['token']:13.2f}x {speedup['block']:5.2f}x"
                f" {totals['block']['seconds'] / totals['token']['seconds']:23.3f}",
                flush=True,
            )
    print("load average after (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"total time: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
