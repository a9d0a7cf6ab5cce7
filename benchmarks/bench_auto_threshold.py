"""Benchmark: what gamma="auto"'s stopping threshold trades, tokens per target call against wall-clock.

gamma="auto" drafts up to AUTO_MAX_GAMMA tokens per round and stops once the draft gives its block
less than AUTO_MIN_CONFIDENCE of probability (`specdec.speculative.propose`). A lower threshold
drafts longer blocks: more tokens per target call, but longer target calls (f(n) grows with n on a
CPU) and more draft steps. Threshold 0 drafts AUTO_MAX_GAMMA tokens every round (as far as the
end of the run allows): the most tokens per call these drafts can give.

For each setting (greedy, T=1) and each threshold this runs `specdec.harness.side_by_side`: plain
`generate` against `speculative_generate(gamma="auto")` on the same held-out prompts, interleaved
prompt by prompt, with the library's defaults apart from the threshold. Fixed gammas run beside
them for comparison. It prints tokens per target call (a count: the same on every machine) and the
measured speed-up (this machine's: the CPU and BLAS kernel are printed first).

    python benchmarks/bench_auto_threshold.py                      # about 2 minutes on a 2-core machine
    python benchmarks/bench_auto_threshold.py --thresholds 0.15 0.03 --prompts 8   # a quick look
    python benchmarks/bench_auto_threshold.py --verify block    # sampled rounds verified as a block (notebook 11)

Needs only the course's environment; run it on an otherwise quiet machine. Differences of a few
percent between rows are within the noise of one run: run it twice, or with another --seed.
"""

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "training"))  # training/ is not a package
sys.path.insert(0, str(ROOT))  # run from anywhere without installing specdec

from corpus import load_corpus  # noqa: E402

import specdec  # noqa: E402
import specdec.speculative  # noqa: E402
from specdec import SamplingParams  # noqa: E402
from specdec.harness import heldout_prompts, label, side_by_side  # noqa: E402
from specdec.speculative import AUTO_MAX_GAMMA, AUTO_MIN_CONFIDENCE  # noqa: E402
from specdec.threads import describe_machine  # noqa: E402
from specdec.validation import VERIFY_RULES  # noqa: E402

SETTINGS = [SamplingParams(temperature=0.0), SamplingParams(temperature=1.0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--thresholds",
        type=float,
        nargs="+",
        default=[0.3, 0.15, 0.05, 0.02, 0.0],
        help="default: 0.3 0.15 0.05 0.02 0",
    )
    parser.add_argument("--gammas", type=int, nargs="*", default=[4, 5], help="fixed gammas beside them (default 4 5)")
    parser.add_argument("--prompts", type=int, default=32, help="held-out prompts (default 32)")
    parser.add_argument("--max-new-tokens", type=int, default=160, help="tokens generated per run (default 160)")
    parser.add_argument("--seed", type=int, default=1, help="prompt choice and sampling seeds (default 1)")
    parser.add_argument(
        "--verify", choices=VERIFY_RULES, default="token", help='verification of sampled rounds (default "token")'
    )
    args = parser.parse_args()
    if any(not 0 <= threshold < 1 for threshold in args.thresholds):
        parser.error(f"--thresholds must be in [0, 1), got {args.thresholds}")
    if 48 + args.max_new_tokens > 256:
        parser.error("--max-new-tokens must be at most 208: 48 prompt tokens + the run fit the target's 256")

    started = time.perf_counter()
    print(
        f"date: {datetime.date.today().isoformat()}; machine: {describe_machine()}; Python {platform.python_version()}"
    )
    print("load average before (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    target, draft = specdec.load_model("target"), specdec.load_model("draft")
    prompts = heldout_prompts(load_corpus().heldout, args.prompts, 48, seed=args.seed)
    print(
        f"{len(prompts)} held-out prompts of 48 tokens (seed {args.seed}), {args.max_new_tokens} new tokens per run;"
        f" AUTO_MAX_GAMMA {AUTO_MAX_GAMMA}, the library's threshold {AUTO_MIN_CONFIDENCE}; {args.verify} verification"
    )
    print()
    header = f"{'setting':8} {'rounds':>18} {'tok/call':>8} {'alpha':>6} {'drafts/round':>12} {'speed-up':>8}"
    print(header)
    print("-" * len(header))
    for params in SETTINGS:
        rows = []
        for threshold in args.thresholds:
            with mock.patch.object(specdec.speculative, "AUTO_MIN_CONFIDENCE", threshold):
                [row] = side_by_side(
                    target, draft, prompts, args.max_new_tokens, params, ["auto"], seed=args.seed, verify=args.verify
                )
            rows.append((f"auto, stop < {threshold:g}", row))
        for gamma in args.gammas:
            [row] = side_by_side(
                target, draft, prompts, args.max_new_tokens, params, [gamma], seed=args.seed, verify=args.verify
            )
            rows.append((f"gamma = {gamma}", row))
        for name, row in rows:
            print(
                f"{label(params):8} {name:>18} {row.tokens_per_call:8.2f} {row.alpha:6.3f}"
                f" {row.drafted / row.target_calls:12.2f} {row.speedup:7.2f}x"
            )
    print()
    print("load average after (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
