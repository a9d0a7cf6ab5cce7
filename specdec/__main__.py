"""The one-command demo: plain vs speculative decoding with the bundled models.

python -m specdec
python -m specdec --prompt "def parse(self, text):" --temperature 0 --gamma 5
"""

import argparse
import statistics
import sys

import numpy as np

from specdec.generation import generate
from specdec.models import load_model, load_tokenizer
from specdec.pipeline import SamplingParams
from specdec.speculative import speculative_generate

DEFAULT_PROMPT = "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n"


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m specdec",
        description=(
            "Generate text with the bundled character-level GPT (the target), once one token per "
            "target call and once with speculative decoding (a 5-gram draft proposes, the target "
            "verifies several tokens per call), and compare. The two outputs follow exactly the same "
            "distribution; at temperature 0 they are the same text."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--prompt", default=DEFAULT_PROMPT, help="text to continue (Python code works best)")
    parser.add_argument("--max-new-tokens", type=int, default=160, help="characters to generate")
    parser.add_argument("--gamma", type=int, default=4, help="tokens the draft proposes per target call")
    parser.add_argument("--temperature", type=float, default=1.0, help="0 means greedy")
    parser.add_argument("--top-k", type=int, default=None, help="keep the k most likely tokens (default: off)")
    parser.add_argument("--top-p", type=float, default=1.0, help="nucleus mass to keep (1 means off)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (the same seed gives the same output)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each method; the median is reported")
    return parser.parse_args(argv)


def timed_runs(run, repeats: int) -> tuple:
    """The first run's result and the median seconds over `repeats` runs."""
    results = [run() for _ in range(repeats)]
    return results[0], statistics.median(result.seconds for result in results)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    try:
        params = SamplingParams(args.temperature, args.top_k, args.top_p)
    except (TypeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    tokenizer = load_tokenizer()
    target, draft = load_model("target"), load_model("draft")
    prompt = tokenizer.encode(args.prompt)
    if args.repeats < 1:
        print("error: --repeats must be >= 1", file=sys.stderr)
        return 2
    try:
        from threadpoolctl import threadpool_limits

        pinned = threadpool_limits(1)  # two BLAS threads make small products erratic on small machines
    except ImportError:
        pinned = None
    try:
        plain, plain_seconds = timed_runs(
            lambda: generate(target, prompt, args.max_new_tokens, params, np.random.default_rng(args.seed)),
            args.repeats,
        )
        fast, fast_seconds = timed_runs(
            lambda: speculative_generate(
                target, draft, prompt, args.max_new_tokens, params, args.gamma, np.random.default_rng(args.seed)
            ),
            args.repeats,
        )
    except (TypeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        if pinned is not None:
            pinned.restore_original_limits()

    rule = "-" * 72
    print(f"prompt ({len(prompt)} characters):\n{rule}\n{args.prompt}\n{rule}")
    print(f"plain decoding, {plain.tokens.size} tokens in {plain.target_calls} target calls:")
    print(f"{rule}\n{tokenizer.decode(plain.tokens)}\n{rule}")
    print(
        f"speculative decoding (gamma = {args.gamma}), {fast.tokens.size} tokens in {fast.target_calls} target calls:"
    )
    print(f"{rule}\n{tokenizer.decode(fast.tokens)}\n{rule}")
    if params.greedy:
        same = np.array_equal(plain.tokens, fast.tokens)
        print(f"greedy: the two texts are {'identical' if same else 'DIFFERENT (this is a bug)'}")
    else:
        print("sampling: the texts differ as two draws do; their distribution is the same (notebook 09)")
    print(
        f"draft tokens accepted:   {fast.accepted} of {fast.drafted} ({fast.acceptance_rate:.0%}); "
        f"per-token acceptance alpha = {fast.alpha:.2f}"
    )
    print(f"tokens per target call:  plain {plain.tokens_per_call:.2f}, speculative {fast.tokens_per_call:.2f}")
    print(
        f"time (median of {args.repeats}):  plain {plain_seconds * 1e3:.0f} ms, "
        f"speculative {fast_seconds * 1e3:.0f} ms: speedup {plain_seconds / fast_seconds:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
