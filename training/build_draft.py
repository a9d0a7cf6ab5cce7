"""Build the bundled draft model: a character n-gram, counted on the corpus and/or distilled from the target.

A draft is only useful if the target accepts what it proposes, so candidates are judged by
the acceptance rate they get with the bundled target (speculative decoding at temperature 1
and greedy, on prompts from the held-out split), not by their own held-out loss. "Distilled"
means counted on a stream of target runs: each run is a 48-token prompt from the training split
followed by the tokens the target sampled after it, and the prompts are counted too (48 of every
256 tokens, about 19% of the stream), so a distilled draft imitates mostly the target and a
little the corpus. "Soft" candidates count the same runs with the target's whole distribution at
each position it wrote instead of the one character it drew (`soft_count_model`). The draft is
selected on held-out prompts, and notebook 10 benchmarks on prompts from the same held-out files:
a mild optimistic bias there (see specdec/weights/DRAFT_CARD.md).

    python training/build_draft.py            # compare the candidates, save the chosen one
    python training/build_draft.py --runs 640 --greedy-runs 128 --orders 5 --soft-orders 6 --no-save
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "training"))  # run as a script from anywhere: `corpus` importable

from corpus import load_corpus  # noqa: E402

from specdec import SamplingParams  # noqa: E402
from specdec.drawing import draw  # noqa: E402
from specdec.generation import generate  # noqa: E402
from specdec.gpt import gelu, layer_norm  # noqa: E402
from specdec.logits import softmax  # noqa: E402
from specdec.models import load_model  # noqa: E402
from specdec.ngram import NGramModel  # noqa: E402
from specdec.speculative import speculative_generate  # noqa: E402

BATCH = 128  # runs sampled together


def batched_logits(target, tokens: np.ndarray, keys: np.ndarray, values: np.ndarray, start: int) -> np.ndarray:
    """GPT.score for B texts at once: tokens (B, n) at positions start..start+n-1 -> logits of the last, (B, V).

    The same arithmetic as specdec.gpt.GPT.score with a batch axis in front, so that one forward
    pass advances B runs: B rows per matrix product instead of one, many times the tokens per
    second. keys and values (L, B, H, T, dh) are the B runs' caches.
    """
    w, (b, n) = target.w, tokens.shape
    h, dh, d = target.n_head, target.head_dim, target.d_model
    end = start + n
    x = w["wte"][tokens] + w["wpe"][start:end]  # (B, n, d)
    future = np.arange(end)[None, :] > np.arange(start, end)[:, None]  # (n, end)
    for layer, (g1, b1, w_qkv, b_qkv, w_o, b_o, g2, b2, w_in, b_in, w_out, b_out) in enumerate(target.layers):
        qkv = layer_norm(x, g1, b1) @ w_qkv + b_qkv  # (B, n, 3d)
        q, k, v = qkv.reshape(b, n, 3, h, dh).transpose(2, 0, 3, 1, 4)  # 3 x (B, h, n, dh)
        keys[layer, :, :, start:end] = k
        values[layer, :, :, start:end] = v
        scores = q @ keys[layer, :, :, :end].transpose(0, 1, 3, 2) * (1 / math.sqrt(dh))  # (B, h, n, end)
        if n > 1:
            scores[:, :, future] = -np.inf
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (B, h, n, end)
        attention = scores / scores.sum(axis=-1, keepdims=True)
        mixed = (attention @ values[layer, :, :, :end]).transpose(0, 2, 1, 3).reshape(b, n, d)  # (B, n, d)
        x = x + mixed @ w_o + b_o
        x = x + gelu(layer_norm(x, g2, b2) @ w_in + b_in) @ w_out + b_out
    return layer_norm(x[:, -1], w["ln_f.gain"], w["ln_f.bias"]) @ w["wte"].T  # (B, V)


def target_runs(
    target, prompts: np.ndarray, temperature: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """B runs of the target in lockstep: prompts (B, P) -> runs (B, max_context), each prompt and what followed it,
    and the target's temperature-1 distribution at every position it wrote, (B, max_context - P, V) float32.

    Temperature 1 draws from softmax(logits) with `rng` (float64, as the course samples);
    temperature 0 takes the argmax (ties to the lowest id, as generate does).
    """
    b, p = prompts.shape
    total = target.max_context
    shape = (target.n_layer, b, target.n_head, total, target.head_dim)
    keys, values = np.zeros(shape, np.float32), np.zeros(shape, np.float32)  # (L, B, h, T, dh)
    runs = np.zeros((b, total), np.int64)  # (B, T)
    runs[:, :p] = prompts
    probs = np.zeros((b, total - p, target.vocab_size), np.float32)  # (B, T - P, V)
    start, chunk = 0, prompts
    while start + chunk.shape[1] < total:
        logits = batched_logits(target, chunk, keys, values, start).astype(np.float64)  # (B, V)
        p_rows = softmax(logits, 1.0)  # (B, V) the target's distribution for the next position
        if temperature == 0:
            tokens = np.argmax(logits, axis=-1)  # (B,)
        else:  # at temperature 1 the rows just computed are the ones to draw from
            tokens = draw(p_rows if temperature == 1 else softmax(logits, temperature), rng)  # (B,)
        start += chunk.shape[1]
        runs[:, start] = tokens
        probs[:, start - p] = p_rows
        chunk = tokens[:, None]  # (B, 1)
    return runs, probs


def target_samples(
    target, corpus: np.ndarray, n_runs: int, prompt_len: int, temperature: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """n_runs target runs, each a random prompt_len window of the corpus and what the target wrote after it.

    Returns the runs (n_runs, max_context), prompts included, and the target's distributions at
    the positions it wrote (n_runs, max_context - prompt_len, V): `target_runs` for every batch.
    """
    runs, probs = [], []
    for first in range(0, n_runs, BATCH):
        starts = rng.integers(0, corpus.size - prompt_len, size=min(BATCH, n_runs - first))
        prompts = np.stack([corpus[s : s + prompt_len] for s in starts]).astype(np.int64)  # (B, P)
        batch_runs, batch_probs = target_runs(target, prompts, temperature, rng)
        runs.append(batch_runs)
        probs.append(batch_probs)
    return np.concatenate(runs), np.concatenate(probs)


def soft_count_model(runs: np.ndarray, probs: np.ndarray, prompt_len: int, order: int, scale: float) -> NGramModel:
    """An n-gram counted with the target's probabilities instead of its samples ("soft counts").

    A sampled run tells the n-gram one character per position; the target's distribution at that
    position tells it all of them at once, without the sampling noise. So every position the
    target wrote adds `scale` x p(w | the target's whole context) to count(context, w) for each w,
    and a prompt position (corpus text) adds `scale` to the character that is there. Rounded to
    whole counts, the tables have the layout of `NGramModel.build`: Witten-Bell reads them alike
    (scale sets how many "samples" one position is worth, and so how much the model trusts a
    rarely seen context against its shorter ones). Every context keeps at least its top follower.
    """
    n_runs, total = runs.shape
    vocab = probs.shape[-1]
    written = probs.reshape(-1, vocab)  # (N * (T - P), V)
    totals = written.sum(axis=0, dtype=np.float64) + np.bincount(runs[:, :prompt_len].ravel(), minlength=vocab)
    tables = {"unigram": (scale * totals + 1) / (scale * totals.sum() + vocab)}  # add-one, as build does
    for k in range(1, order):
        ids_written = np.zeros((n_runs, total - prompt_len), np.int64)  # (N, T - P) the k tokens before each
        ids_prompt = np.zeros((n_runs, prompt_len - k), np.int64)  # (N, P - k)
        for j in range(k):  # oldest first, as context_ids
            ids_written = ids_written * vocab + runs[:, prompt_len - k + j : total - k + j]
            ids_prompt = ids_prompt * vocab + runs[:, j : prompt_len - k + j]
        ids_written = ids_written.ravel()
        order_w = np.argsort(ids_written, kind="stable")
        contexts_w, starts = np.unique(ids_written[order_w], return_index=True)
        sums_w = np.add.reduceat(written[order_w], starts, axis=0, dtype=np.float64)  # (Cw, V)
        contexts = np.union1d(contexts_w, ids_prompt.ravel())  # (C,) sorted
        sums = np.zeros((contexts.size, vocab))  # (C, V)
        sums[np.searchsorted(contexts, contexts_w)] = sums_w
        np.add.at(sums, (np.searchsorted(contexts, ids_prompt.ravel()), runs[:, k:prompt_len].ravel()), 1.0)
        counts = np.rint(scale * sums).astype(np.int64)  # (C, V)
        empty = np.flatnonzero(counts.max(axis=1) == 0)
        counts[empty, sums[empty].argmax(axis=1)] = 1  # every context keeps its top follower
        rows, nexts = np.nonzero(counts)  # row-major: sorted by context, then next
        tables[f"contexts{k}"] = contexts
        tables[f"offsets{k}"] = np.searchsorted(rows, np.arange(contexts.size + 1))
        tables[f"next{k}"] = nexts.astype(np.uint8)
        tables[f"counts{k}"] = counts[rows, nexts].astype(np.uint32)
    return NGramModel(order, vocab, tables, name="draft")


def check_batched_runs(target, text: np.ndarray, prompt_len: int) -> None:
    """The batched sampler must be the target: its greedy run equals specdec.generate's, token for token."""
    prompt = text[:prompt_len].astype(np.int64)
    batched = target_runs(target, prompt[None, :], 0.0, np.random.default_rng(0))[0][0, prompt_len:]
    plain = generate(target, prompt, target.max_context - prompt_len, SamplingParams(0.0)).tokens
    if not np.array_equal(batched, plain):
        raise RuntimeError("the batched sampler disagrees with specdec.generate: fix batched_logits")


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
    parser.add_argument("--orders", type=int, nargs="+", default=[5, 6, 7, 8], help="orders of the counted candidates")
    parser.add_argument("--soft-orders", type=int, nargs="+", default=[5, 6, 7], help="orders of the soft-count ones")
    parser.add_argument("--scales", type=float, nargs="+", default=[2.0, 4.0], help="soft counts per position")
    parser.add_argument("--runs", type=int, default=12_800, help="target runs at temperature 1 to distil from")
    parser.add_argument("--greedy-runs", type=int, default=1_280, help="greedy target runs to distil from")
    parser.add_argument("--prompt-len", type=int, default=48)
    parser.add_argument("--eval-prompts", type=int, default=24)
    parser.add_argument("--eval-new", type=int, default=160)
    parser.add_argument("--gamma", type=int, default=4)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--choose",
        default="distilled:5",
        help="candidate to save: a name such as distilled:5 (the bundled draft) or soft:6:x4, or 'best' "
        "(the highest sum of the two acceptance rates, whatever its size)",
    )
    parser.add_argument("--target", default="target", help="the target model: a bundled name or an .npz path")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "specdec" / "weights" / "draft.npz")
    args = parser.parse_args()
    names = [f"{source}:{o}" for source in ("corpus", "distilled") for o in args.orders]
    names += [f"soft:{o}:x{scale:g}" for o in args.soft_orders for scale in args.scales]
    if args.choose not in names + ["best"]:
        parser.error(f"--choose {args.choose!r} is not 'best' or one of the candidates: {', '.join(names)}")

    rng = np.random.default_rng(args.seed)
    corpus = load_corpus()
    target = load_model(args.target)
    vocab = target.vocab_size
    heldout = corpus.heldout.astype(np.int64)
    starts = rng.integers(0, heldout.size - args.prompt_len, size=args.eval_prompts)
    prompts = [heldout[s : s + args.prompt_len] for s in starts]  # selection prompts: held-out text

    with threadpool_limits(1):
        check_batched_runs(target, corpus.heldout, args.prompt_len)
        began = time.perf_counter()
        train = corpus.train
        sampled_runs, sampled_probs = target_samples(target, train, args.runs, args.prompt_len, 1.0, rng)
        greedy_runs, greedy_probs = target_samples(target, train, args.greedy_runs, args.prompt_len, 0.0, rng)
        runs = np.concatenate([sampled_runs, greedy_runs])  # (N, T)
        probs = np.concatenate([sampled_probs, greedy_probs])  # (N, T - P, V)
        del sampled_probs, greedy_probs
        samples = runs.ravel()
        written = (args.runs + args.greedy_runs) * (target.max_context - args.prompt_len)
        print(
            f"{args.runs:,} runs at T=1 and {args.greedy_runs:,} greedy runs: {samples.size:,} tokens, "
            f"{written:,} of them written by the target ({written / samples.size:.1%}), "
            f"in {time.perf_counter() - began:.0f} s"
        )
        builders = {  # candidate name -> how to build it
            **{f"corpus:{o}": lambda o=o: NGramModel.build(corpus.train, o, vocab, "draft") for o in args.orders},
            **{f"distilled:{o}": lambda o=o: NGramModel.build(samples, o, vocab, "draft") for o in args.orders},
            **{
                f"soft:{o}:x{scale:g}": lambda o=o, scale=scale: soft_count_model(
                    runs, probs, args.prompt_len, o, scale
                )
                for o in args.soft_orders
                for scale in args.scales
            },
        }
        results = {}
        for name, build in builders.items():
            began = time.perf_counter()
            draft = build()
            built = time.perf_counter() - began
            size = sum(array.nbytes for array in draft.arrays().values()) / 1e6
            sampled = acceptance(target, draft, prompts, args.eval_new, args.gamma, 1.0)
            greedy = acceptance(target, draft, prompts, args.eval_new, args.gamma, 0.0)
            results[name] = (draft, sampled, greedy)
            print(
                f"{name:>12}: built in {built:5.1f} s, {size:5.1f} MB raw | "
                f"T=1 alpha {sampled['alpha']:.3f}, {sampled['tokens_per_call']:.2f} tokens/call | "
                f"greedy alpha {greedy['alpha']:.3f}, {greedy['tokens_per_call']:.2f} tokens/call",
                flush=True,
            )
    best = max(results, key=lambda key: results[key][1]["alpha"] + results[key][2]["alpha"])
    print(f"highest sum of the acceptance rates: {best}")
    choice = best if args.choose == "best" else args.choose
    print(f"chosen: {choice}")
    if not args.no_save:
        np.savez_compressed(args.out, **results[choice][0].arrays())
        print(f"saved {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
