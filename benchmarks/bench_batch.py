"""Benchmark: many texts at once. Batched plain and batched speculative decoding against one text at a time.

For each batch size B (default 1 2 4 8 16) and setting (greedy, T=1), on the first B of 16 held-out prompts:

* one at a time: `specdec.generate` on each prompt in turn (the engine's plain loop, one text);
* batched plain: `specdec.generate_batch` on the B prompts (one target call per step for every row);
* batched speculative: `specdec.speculative_generate_batch` (each row drafts its own block, one target
  call verifies every row's block), gamma="auto" per row, the library's default;

interleaved (the three kinds in a rotating order, each repeated `--repeats` times, fastest kept), each
printing tokens per second, tokens per target call, whether every row's text equals the one-at-a-time
text, and how much the speculative calls padded. Then the cost model (notebook 12, section 5): the
batched calls timed apart (`time_batch`), each call of the runs priced at its own shape
(`predicted_seconds`), the predicted speculative / plain ratio beside the measured one, and the crossover
batch size, predicted and measured: the smallest B at which batched speculative decoding is no faster
than batched plain decoding.

    python benchmarks/bench_batch.py                  # about a minute on a 2-core machine
    python benchmarks/bench_batch.py --batch-sizes 1 4 --repeats 1   # a quick look

Needs only the course's environment (numpy, threadpoolctl); run it on an otherwise quiet machine.
"""

import argparse
import datetime
import os
import platform
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
from specdec.batch import batch_speedup, generate_batch, speculative_generate_batch, time_batch  # noqa: E402
from specdec.harness import heldout_prompts, label, seed_for  # noqa: E402
from specdec.threads import describe_machine, generation_threads, kernel_note  # noqa: E402

SETTINGS = [SamplingParams(temperature=1.0), SamplingParams(temperature=0.0)]
KINDS = ("one at a time", "batched plain", "batched speculative")
TARGET_B8 = 3.0  # batched plain decoding at B = 8 against one text at a time (course design)


def run(kind: str, target, draft, prompts, max_new_tokens: int, params: SamplingParams, seed: int):
    """One run of `kind` on the prompts: (seconds, each row's tokens, the BatchResult or None)."""
    rngs = None if params.greedy else [seed_for(seed, i) for i in range(len(prompts))]
    start = time.perf_counter()
    if kind == "one at a time":
        rows = [
            specdec.generate(target, prompt, max_new_tokens, params, None if rngs is None else rngs[i])
            for i, prompt in enumerate(prompts)
        ]
        return time.perf_counter() - start, [row.tokens for row in rows], None
    if kind == "batched plain":
        batch = generate_batch(target, prompts, max_new_tokens, params, rngs)
    else:
        batch = speculative_generate_batch(target, draft, prompts, max_new_tokens, params, "auto", rngs)
    return time.perf_counter() - start, [row.tokens for row in batch.rows], batch


def crossover(ratios: dict[int, float]) -> int | None:
    """The smallest batch size at which speculative / plain is at most 1 (None: speculation pays at every B)."""
    return next((b for b in sorted(ratios) if ratios[b] <= 1), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--prompt-length", type=int, default=48, help="tokens per prompt (default 48)")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="tokens generated per row (default 128)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per kind and B, fastest kept (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="prompt choice and sampling seeds (default 0)")
    args = parser.parse_args()
    if args.prompt_length + args.max_new_tokens > 256:
        parser.error("prompt length + max new tokens must fit the target's context of 256")
    started = time.perf_counter()
    print(f"date: {datetime.date.today().isoformat()}; machine: {describe_machine()}")
    if note := kernel_note():
        print(note)
    print(f"Python {platform.python_version()}; one BLAS thread while generating (the library's default)")
    print("load average before (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    target, draft = specdec.load_model("target"), specdec.load_model("draft")
    prompts = heldout_prompts(load_corpus().heldout, max(args.batch_sizes), args.prompt_length, seed=args.seed)
    context = args.prompt_length + args.max_new_tokens // 2  # the middle of a run
    with generation_threads():
        times = time_batch(target, args.batch_sizes, range(1, 10), context=context)
    print(f"{len(prompts)} held-out prompts of {args.prompt_length} tokens (seed {args.seed}), B texts: the first B;")
    print(f"{args.max_new_tokens} new tokens per row; repeats {args.repeats}, fastest kept; gamma auto")
    print(f"one batched call of one token per text (time_batch, context {context}):")
    for b in args.batch_sizes:
        print(f"  B = {b:2d}: {times[(b, 1)] * 1e6:6.0f} us, {b * times[(1, 1)] / times[(b, 1)]:.2f}x one text's")
    b8 = None
    for params in SETTINGS:
        print(f"\n{label(params)}")
        print("    B  one at a time   batched plain        batched speculative  tok/call  spec/plain  predicted")
        measured, predicted = {}, {}
        for b in args.batch_sizes:
            best = {}
            for r in range(args.repeats):
                for kind in KINDS[r % 3 :] + KINDS[: r % 3]:
                    out = run(kind, target, draft, prompts[:b], args.max_new_tokens, params, args.seed)
                    if kind not in best or out[0] < best[kind][0]:
                        best[kind] = out
            tokens = sum(row.size for row in best["one at a time"][1])
            rate = {kind: tokens / best[kind][0] for kind in KINDS}
            spec, plain = best["batched speculative"][2], best["batched plain"][2]
            measured[b] = rate["batched speculative"] / rate["batched plain"]
            predicted[b] = batch_speedup(plain, spec, times)
            same = [
                sum(np.array_equal(x, y) for x, y in zip(best["one at a time"][1], best[kind][1], strict=True))
                for kind in ("batched plain",)
            ][0]
            if b == 8 and params.temperature == 1.0:
                b8 = rate["batched plain"] / rate["one at a time"]
            alone = rate["one at a time"]
            print(
                f"  {b:3d}  {alone:7.0f} tok/s  {rate['batched plain']:7.0f} ({rate['batched plain'] / alone:.2f}x)"
                f"  {rate['batched speculative']:7.0f} ({rate['batched speculative'] / alone:.2f}x)"
                f"  {spec.tokens / len(spec.calls):7.2f}  {measured[b]:8.2f}x  {predicted[b]:7.2f}x"
                f" ({predicted[b] / measured[b] - 1:+.0%});  rows equal to one at a time: {same} of {b};"
                f" padded {spec.padding:.2f}"
            )
        print(
            f"  crossover (the smallest B where speculation does not pay): measured {crossover(measured)},"
            f" predicted {crossover(predicted)}"
        )
    if b8 is not None:
        verdict = "met" if b8 >= TARGET_B8 else "MISSED"
        print(
            f"\ntarget: batched plain decoding at B = 8, T = 1: {b8:.2f}x one text at a time"
            f" (target {TARGET_B8}x: {verdict})"
        )
    print("load average after (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"total time: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
