"""Build the bundled draft model: a character n-gram, counted on the corpus and/or distilled from the target.

A draft is only useful if the target accepts what it proposes, so candidates are judged by
the acceptance rate they get with the bundled target (speculative decoding at temperature 1
and greedy, on prompts from the held-out split), not by their own held-out loss. "Distilled"
means counted on a stream of target runs: each run is a 48-token prompt from the training split
followed by the tokens the target sampled after it, and the prompts are counted too (48 of every
256 tokens, about 19% of the stream), so a distilled draft imitates mostly the target and a
little the corpus. The draft is selected on held-out prompts, and notebook 10 benchmarks on
prompts from the same held-out files: a mild optimistic bias there (see specdec/weights/DRAFT_CARD.md).

    python training/build_draft.py                       # compare the candidates, save the chosen one
    python training/build_draft.py --sample-tokens 200000 --orders 4 6 --no-save
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "training"))  # run as a script from anywhere: `corpus` importable

from corpus import load_corpus  # noqa: E402

from specdec import SamplingParams  # noqa: E402
from specdec.generation import generate  # noqa: E402
from specdec.models import load_model  # noqa: E402
from specdec.ngram import NGramModel  # noqa: E402
from specdec.speculative import speculative_generate  # noqa: E402


def target_samples(target, corpus: np.ndarray, n_tokens: int, prompt_len: int, rng: np.random.Generator) -> np.ndarray:
    """n_tokens sampled from the target at temperature 1, each run prompted by a corpus window."""
    pieces, total = [], 0
    new = target.max_context - prompt_len
    while total < n_tokens:
        start = int(rng.integers(0, corpus.size - prompt_len))
        prompt = corpus[start : start + prompt_len].astype(np.int64)
        tokens = generate(target, prompt, new, SamplingParams(1.0), rng).tokens  # (new,)
        pieces.append(np.concatenate([prompt, tokens]))  # the corpus prompt is counted as well
        total += tokens.size
    return np.concatenate(pieces)


def acceptance(target, draft, prompts: list[np.ndarray], new_tokens: int, gamma: int, temperature: float) -> dict:
    """Acceptance rate and tokens per target call of speculative decoding with this draft."""
    accepted = tested = tokens = calls = 0
    params = SamplingParams(temperature)
    for i, prompt in enumerate(prompts):
        rng = np.random.default_rng(i)
        result = speculative_generate(target, draft, prompt, new_tokens, params, gamma, rng)
        rejected = sum(n < g for n, g in zip(result.accepted_per_round, result.drafted_per_round, strict=True))
        accepted, tested = accepted + result.accepted, tested + result.accepted + rejected
        tokens, calls = tokens + result.tokens.size, calls + result.target_calls
    return {"alpha": accepted / tested, "tokens_per_call": tokens / calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, nargs="+", default=[5, 6, 7])
    parser.add_argument("--sample-tokens", type=int, default=600_000, help="target tokens to distil from")
    parser.add_argument("--prompt-len", type=int, default=48)
    parser.add_argument("--eval-prompts", type=int, default=24)
    parser.add_argument("--eval-new", type=int, default=160)
    parser.add_argument("--gamma", type=int, default=4)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--choose", default=None, help="source:order to save, e.g. distilled:6 (default: best)")
    parser.add_argument("--target", default="target", help="the target model: a bundled name or an .npz path")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "specdec" / "weights" / "draft.npz")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    corpus = load_corpus()
    target = load_model(args.target)
    vocab = target.vocab_size
    heldout = corpus.heldout.astype(np.int64)
    starts = rng.integers(0, heldout.size - args.prompt_len, size=args.eval_prompts)
    prompts = [heldout[s : s + args.prompt_len] for s in starts]  # selection prompts: held-out text

    with threadpool_limits(1):
        began = time.perf_counter()
        samples = target_samples(target, corpus.train, args.sample_tokens, args.prompt_len, rng)
        print(f"sampled {samples.size:,} tokens from the target in {time.perf_counter() - began:.0f} s")
        sources = {"corpus": corpus.train.astype(np.int64), "distilled": samples}
        results = {}
        for source, tokens in sources.items():
            for order in args.orders:
                began = time.perf_counter()
                draft = NGramModel.build(tokens, order, vocab, name="draft")
                built = time.perf_counter() - began
                size = sum(array.nbytes for array in draft.arrays().values()) / 1e6
                sampled = acceptance(target, draft, prompts, args.eval_new, args.gamma, 1.0)
                greedy = acceptance(target, draft, prompts, args.eval_new, args.gamma, 0.0)
                results[f"{source}:{order}"] = (draft, sampled, greedy)
                print(
                    f"{source:>9} order {order}: built in {built:.1f} s, {size:5.1f} MB raw | "
                    f"T=1 alpha {sampled['alpha']:.3f}, {sampled['tokens_per_call']:.2f} tokens/call | "
                    f"greedy alpha {greedy['alpha']:.3f}, {greedy['tokens_per_call']:.2f} tokens/call"
                )
    choice = args.choose or max(results, key=lambda key: results[key][1]["alpha"] + results[key][2]["alpha"])
    print(f"chosen: {choice}")
    if not args.no_save:
        np.savez_compressed(args.out, **results[choice][0].arrays())
        print(f"saved {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
