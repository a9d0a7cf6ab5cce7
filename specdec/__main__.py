"""The one-command demo: plain vs speculative decoding with the bundled models, measured as notebook 10 does.

python -m specdec
python -m specdec --prompt "def parse(self, text):" --temperature 0 --gamma 5

It leads with what does not depend on the machine (tokens per target call, acceptance), then
times interleaved pairs of runs after a warm-up and sets the measured speed-up beside the cost
model's prediction for this machine, with its inputs timed inside those same runs (notebooks 07
and 10), and a verdict that says so when the machine is too noisy to tell.

The default prompt shows the model at its best, chosen by measurement (tools/demo_prompt.py: of
the candidates whose seed-0 texts parse as Python, the one whose texts parse most often); the
benchmark, benchmarks/bench_speculative.py, measures typical prompts (held-out code).
"""

import argparse
import math
import statistics
import sys
import time

import numpy as np

from specdec.generation import generate
from specdec.harness import TimedModel, TurnCosts, predict_from_rounds, run_turns, turn_costs
from specdec.models import load_model, load_tokenizer
from specdec.pipeline import SamplingParams
from specdec.speculative import AUTO_MAX_GAMMA, speculative_generate
from specdec.threads import describe_machine
from specdec.timing import f_dips
from specdec.validation import VERIFY_RULES

DEFAULT_PROMPT = "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n"
MIN_PAIRS = 5
MIN_ROUNDS = 5  # f(n) from fewer rounds of that size is too noisy to call a dip


def gamma_argument(text: str) -> int | str:
    """--gamma: "auto" or a whole number >= 1."""
    if text == "auto":
        return text
    try:
        gamma = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'must be "auto" or a whole number >= 1, got {text!r}') from None
    if gamma < 1:
        raise argparse.ArgumentTypeError(f'must be "auto" or a whole number >= 1, got {gamma}')
    return gamma


def parse_arguments(argv: list[str] | None) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    parser = argparse.ArgumentParser(
        prog="python -m specdec",
        description=(
            "Generate text with the bundled character-level GPT (the target), once one token per "
            "target call and once with speculative decoding (an n-gram draft proposes, the target "
            "verifies several tokens per call), and compare. The two outputs follow exactly the same "
            "distribution; at temperature 0 they are the same text."
        ),
    )
    parser.add_argument(
        "--prompt",
        default=DEFAULT_PROMPT,
        help="text to continue (Python code works best); the default shows the model at its best, "
        "benchmarks/bench_speculative.py measures typical prompts",
    )
    parser.add_argument("--max-new-tokens", type=int, default=160, help="characters to generate (default: 160)")
    parser.add_argument(
        "--gamma",
        type=gamma_argument,
        default="auto",
        help=f'tokens the draft proposes per target call: a number, or "auto" (default): up to {AUTO_MAX_GAMMA}, '
        "fewer when the draft is unsure",
    )
    parser.add_argument(
        "--verify",
        choices=VERIFY_RULES,
        default="token",
        help='how sampled rounds are verified: "token" (default), one draft at a time (notebook 09), or "block", '
        "the drafts judged together (notebook 11); both are exact, and greedy is the same either way",
    )
    parser.add_argument("--temperature", type=float, default=1.0, help="0 means greedy (default: 1)")
    parser.add_argument("--top-k", type=int, help="keep only the k most likely tokens (off unless given)")
    parser.add_argument("--top-p", type=float, default=1.0, help="nucleus mass to keep, in (0, 1] (default: 1, off)")
    parser.add_argument("--seed", type=int, default=0, help="random seed; the same seed gives the same texts")
    parser.add_argument("--pairs", type=int, default=9, help=f"timed pairs of runs, at least {MIN_PAIRS} (default: 9)")
    return parser.parse_args(argv), parser


def check_arguments(args: argparse.Namespace, parser: argparse.ArgumentParser, prompt_length: int, room: int) -> None:
    """Refuse bad options in the command line's own terms (parser.error exits with status 2)."""
    if not (math.isfinite(args.temperature) and args.temperature >= 0):
        parser.error(f"--temperature must be a finite number >= 0 (0 means greedy), got {args.temperature}")
    if args.top_k is not None and args.top_k < 1:
        parser.error(f"--top-k must be a whole number >= 1, got {args.top_k}")
    if not 0 < args.top_p <= 1:  # NaN fails too
        parser.error(f"--top-p must be in (0, 1], got {args.top_p}")
    if args.pairs < MIN_PAIRS:
        parser.error(f"--pairs must be at least {MIN_PAIRS}: fewer cannot tell a speed-up from noise")
    if prompt_length == 0:
        parser.error("--prompt must not be empty")
    if prompt_length > room:
        parser.error(f"--prompt is {prompt_length} characters; the target reads at most {room}")
    largest = room + 1 - prompt_length  # the last new token is never read back
    if not 1 <= args.max_new_tokens <= largest:
        parser.error(
            f"--max-new-tokens must be between 1 and {largest} for this prompt "
            f"({prompt_length} characters; the target reads at most {room}), got {args.max_new_tokens}"
        )


def timed_pairs(plain_run, fast_run, pairs: int) -> tuple[list[tuple], list[tuple]]:
    """`pairs` interleaved runs of each, after one warm-up of each; the order alternates.

    Each run is a (result, turns) pair: its models' calls timed as it ran (harness.run_turns).
    """
    plain_run(), fast_run()  # warm-up: caches, memos, first-call costs
    plain, fast = [], []
    for i in range(pairs):
        if i % 2 == 0:
            plain.append(plain_run())
            fast.append(fast_run())
        else:
            fast.append(fast_run())
            plain.append(plain_run())
    return plain, fast


def predicted_speedup(plain: list[tuple], fast: list[tuple]) -> tuple[float | None, TurnCosts]:
    """The cost model for the rounds these runs made, with its inputs measured inside the same runs.

    harness.turn_costs turns the timed calls of the interleaved pairs into the unit (one plain
    step), c (the draft's turn per drafted token), f(n) (the target's turn of n tokens: its call,
    sampling its n rows, the verification) and the prompt; predict_from_rounds charges the rounds
    the speculative runs made. Returns (predicted speed-up, the inputs); the speed-up is None
    when the runs are too short to time a plain step and a round after the prompt.
    """
    costs = turn_costs([turns for _, turns in plain], [turns for _, turns in fast])
    if not (costs.f and math.isfinite(costs.unit) and math.isfinite(costs.c)):
        return None, costs
    prediction = predict_from_rounds([result for result, _ in fast], costs.c, costs.f, costs.prompt)
    return prediction.speedup, costs


def times(ratio: float) -> str:
    """A speed ratio to two decimals, or three where two would print 1.00x for a ratio that is not 1."""
    return f"{ratio:.3f}x" if f"{ratio:.2f}" == "1.00" and ratio != 1 else f"{ratio:.2f}x"


def verdict(ratios: list[float], predicted: float | None) -> str:
    """One honest line: faster, slower, or too noisy to tell, and how it compares with the prediction (if any)."""
    low, high, middle = min(ratios), max(ratios), statistics.median(ratios)
    if low > 1:
        if predicted is None:
            comparison = "with no prediction to compare"
        else:
            gap = (middle - predicted) / predicted
            comparison = (
                "as the cost model predicted for this machine"
                if abs(gap) < 0.005
                else f"{abs(gap):.0%} {'above' if gap > 0 else 'below'} the cost model's prediction for this machine"
            )
        return (
            f"speculative decoding was faster in all {len(ratios)} pairs ({times(low)} to {times(high)}), {comparison}"
        )
    if high < 1:
        return f"speculative decoding was slower in all {len(ratios)} pairs: this machine does not reward it"
    return (
        f"too noisy to tell: the pairs range from {times(low)} to {times(high)}; "
        "close other programs and run again, or add --pairs"
    )


def main(argv: list[str] | None = None) -> int:
    args, parser = parse_arguments(argv)
    tokenizer = load_tokenizer()
    target, draft = load_model("target"), load_model("draft")
    prompt = np.array(tokenizer.encode(args.prompt), dtype=np.int64)
    check_arguments(args, parser, prompt.size, target.max_context)
    params = SamplingParams(args.temperature, args.top_k, args.top_p)  # every value checked above

    def plain_run(model):
        return generate(model, prompt, args.max_new_tokens, params, np.random.default_rng(args.seed))

    def fast_run(model, proposer):
        rng = np.random.default_rng(args.seed)
        return speculative_generate(
            model, proposer, prompt, args.max_new_tokens, params, args.gamma, rng, verify=args.verify
        )

    plain, fast = plain_run(target), fast_run(target, draft)
    rule = "-" * 72
    print(f"prompt ({prompt.size} characters):\n{rule}\n{args.prompt}\n{rule}")
    print(f"plain decoding: {plain.tokens.size} tokens in {plain.target_calls} target calls")
    print(f"{rule}\n{tokenizer.decode(plain.tokens)}\n{rule}")
    print(
        f"speculative decoding (gamma = {args.gamma}, {args.verify} verification): "
        f"{fast.tokens.size} tokens in {fast.target_calls} target calls"
    )
    print(f"{rule}\n{tokenizer.decode(fast.tokens)}\n{rule}")
    if params.greedy:
        same = np.array_equal(plain.tokens, fast.tokens)
        print(f"greedy: the two texts are {'identical' if same else 'DIFFERENT (this is a bug)'}")
    else:
        print("sampling: the texts differ as two draws do; their distribution is the same (notebook 09)")

    print("\nWhat does not depend on the machine (counts):")
    print(f"  tokens per target call: plain {plain.tokens_per_call:.2f}, speculative {fast.tokens_per_call:.2f}")
    print(
        f"  draft tokens accepted: {fast.accepted} of {fast.drafted} ({fast.acceptance_rate:.0%}); "
        f"per-token acceptance alpha = {fast.alpha:.2f}"
    )

    print(f"\nWhat does (measured on {describe_machine()}):")

    def timed_plain():  # the same run, its target's calls timed (harness.run_turns)
        model = TimedModel(target)
        result = plain_run(model)
        return result, run_turns(result, model, None, time.perf_counter())

    def timed_fast():
        models = TimedModel(target), TimedModel(draft)
        result = fast_run(*models)
        return result, run_turns(result, *models, time.perf_counter())

    plain_runs, fast_runs = timed_pairs(timed_plain, timed_fast, args.pairs)
    plain_seconds = [result.seconds for result, _ in plain_runs]
    fast_seconds = [result.seconds for result, _ in fast_runs]
    ratios = [p / s for p, s in zip(plain_seconds, fast_seconds, strict=True)]
    predicted, costs = predicted_speedup(plain_runs, fast_runs)
    drafts_per_round = fast.drafted / max(len(fast.drafted_per_round), 1)
    f = costs.f
    for name, seconds in (("plain", plain_seconds), ("speculative", fast_seconds)):
        print(
            f"  {name:11} {1e3 * statistics.median(seconds):6.1f} ms per run "
            f"(median of {args.pairs} interleaved runs; {1e3 * min(seconds):.1f} to {1e3 * max(seconds):.1f})"
        )
    if predicted is not None:
        n = min(f, key=lambda k: abs(k - 1 - drafts_per_round))  # the f(n) of a typical round
        print(
            f"  cost model inputs, timed inside these runs: a plain step takes {1e3 * costs.unit:.2f} ms; "
            f"a draft step c = {costs.c:.3f} of it; a round scoring {n} positions f({n}) = {f[n]:.2f} steps "
            f"(its call {costs.f_call[n]:.2f}, the rest sampling and verifying); reading the prompt "
            f"{costs.prompt:.1f} steps; rounds drafted {drafts_per_round:.1f} on average"
        )
    else:
        print("  cost model inputs: too few tokens to time a plain step and a round after the prompt")
    dips = f_dips({k: value for k, value in f.items() if costs.rounds[k] >= MIN_ROUNDS})
    if dips:
        print(
            f"  note: f(n) falls at n = {dips} (a BLAS kernel switch, or the machine busier while those rounds ran); "
            "the prediction charges each round what its size cost"
        )
    prediction = (
        f"predicted {predicted:.2f}x by the cost model for this machine and these rounds"
        if predicted is not None
        else "no prediction (generate more tokens)"
    )
    print(f"  speed-up: measured {statistics.median(ratios):.2f}x (median of the pairs), {prediction}")
    print(f"verdict: {verdict(ratios, predicted)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
