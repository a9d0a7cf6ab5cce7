"""The course's models in Hugging Face Transformers, and Transformers models in the course (appendix A).

Two bridges, one in each direction:

* `to_transformers(gpt)` converts the bundled numpy GPT (`specdec.load_model("target")`) into a
  `transformers.GPT2LMHeadModel` with the same weights. GPT-2 is the same architecture (pre-LN
  blocks, learned absolute positions, GELU with the tanh approximation, tied input and output
  embeddings, layer norm eps 1e-5, biases everywhere), so every array has a place, most of them
  unchanged: Transformers' GPT-2 stores its projections as `Conv1D` weights of shape (in, out), the
  layout `x @ W` of specdec.gpt, and splits `c_attn`'s output as q | k | v, each into heads of
  consecutive columns, as `reshape(n, 3, h, dh)` does. What does not map: the tokenizer (the course's
  is one token per character, with no Transformers tokenizer class; pass token ids), the END token
  (id 0 here; GPT-2's `<|endoftext|>` is the last id), dropout (the numpy model has none: all rates 0)
  and the n-gram draft (no Transformers architecture is an n-gram table).
* `TransformersLM(hf_model)` wraps any local causal language model of Transformers so that it
  follows specdec's `LanguageModel` protocol: `generate` and `speculative_generate` (with specdec's
  own filtering pipeline) run on it unchanged. Each decoding state owns a Transformers KV cache
  (`DynamicCache`, the `past_key_values` of older Transformers releases, now passed as `cache=`) and
  crops it on rollback; the wrapped model itself is never changed.

Also here: `LogitsMemo` (any model, asked once per distinct context: for statistical tests that draw
from one prompt thousands of times) and `side_by_side` / `format_table` / `machine`, which time specdec's
decoding against Transformers' own `generate` and prompt-lookup decoding on the same prompts;
`python -m specdec.huggingface --help` prints that table from the command line.

This module imports torch and transformers (requirements-extras.txt); `import specdec` does not.
"""

import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import transformers
from transformers import DynamicCache, GenerationConfig, GPT2Config, GPT2LMHeadModel

from specdec.generation import generate
from specdec.gpt import GPT, layer_names
from specdec.pipeline import SamplingParams
from specdec.protocol import TokenHistory
from specdec.speculative import speculative_generate
from specdec.threads import cpu_name
from specdec.validation import check_new_tokens, check_rollback, check_score

# specdec.gpt array name -> GPT-2 parameter name, for layer i (Conv1D weights are (in, out): no transpose).
LAYER_MAP = {
    "ln1.gain": "ln_1.weight",
    "ln1.bias": "ln_1.bias",
    "attn.w_qkv": "attn.c_attn.weight",
    "attn.b_qkv": "attn.c_attn.bias",
    "attn.w_out": "attn.c_proj.weight",
    "attn.b_out": "attn.c_proj.bias",
    "ln2.gain": "ln_2.weight",
    "ln2.bias": "ln_2.bias",
    "mlp.w_in": "mlp.c_fc.weight",
    "mlp.b_in": "mlp.c_fc.bias",
    "mlp.w_out": "mlp.c_proj.weight",
    "mlp.b_out": "mlp.c_proj.bias",
}
GLOBAL_MAP = {"wte": "transformer.wte.weight", "wpe": "transformer.wpe.weight"}
GLOBAL_MAP |= {"ln_f.gain": "transformer.ln_f.weight", "ln_f.bias": "transformer.ln_f.bias"}


def parameter_names(n_layer: int) -> dict[str, str]:
    """Every specdec.gpt array name and the GPT2LMHeadModel parameter it becomes."""
    names = dict(GLOBAL_MAP)
    for i in range(n_layer):
        for ours in layer_names(i):
            names[ours] = f"transformer.h.{i}." + LAYER_MAP[ours.split(".", 1)[1]]
    return names


def gpt2_config(model: GPT, end_token: int = 0) -> GPT2Config:
    """The GPT2Config of a specdec.gpt.GPT: its sizes, GELU-tanh, no dropout, eps 1e-5, tied embeddings.

    `end_token` (the course's END, id 0) serves as GPT-2's bos, eos and pad ids: `generate` then
    stops after it, as specdec.generate(..., end_token=0) does, and never needs to pad (one text).
    """
    return GPT2Config(
        vocab_size=model.vocab_size,
        n_positions=model.max_context,
        n_embd=model.d_model,
        n_layer=model.n_layer,
        n_head=model.n_head,
        n_inner=model.layers[0][8].shape[1],  # mlp.w_in: (d, 4d)
        activation_function="gelu_new",  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), specdec.gpt.gelu
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=1e-5,
        scale_attn_weights=True,  # scores / sqrt(head_dim)
        scale_attn_by_inverse_layer_idx=False,
        reorder_and_upcast_attn=False,
        tie_word_embeddings=True,
        bos_token_id=end_token,
        eos_token_id=end_token,
        pad_token_id=end_token,
    )


def greedy_generation_config(end_token: int = 0) -> GenerationConfig:
    """Every setting `generate` reads, written out: greedy, stop after `end_token`, nothing else."""
    return GenerationConfig(
        do_sample=False,
        num_beams=1,
        temperature=1.0,
        top_k=None,  # not Transformers' default 50
        top_p=1.0,
        min_p=None,
        repetition_penalty=1.0,
        bos_token_id=end_token,
        eos_token_id=end_token,
        pad_token_id=end_token,
    )


def to_transformers(model: GPT, attn_implementation: str = "sdpa") -> GPT2LMHeadModel:
    """The numpy GPT as a Transformers GPT2LMHeadModel with the same weights (float32, eval mode).

    Logits agree with `model.score` within float32 rounding (appendix A and
    tests/optional/test_huggingface.py measure the bound). `attn_implementation` is Transformers'
    attention kernel: "eager" (plain matrix products, like specdec.gpt) or "sdpa" (PyTorch's
    fused scaled_dot_product_attention).
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a specdec.gpt.GPT (load_model('target')), got {type(model).__name__}")
    config = gpt2_config(model)
    config.name_or_path = f"specdec:{model.name}"  # a local model: no hub name
    hf = GPT2LMHeadModel(config)
    hf.set_attn_implementation(attn_implementation)
    state = {
        theirs: torch.from_numpy(np.array(model.w[ours], dtype=np.float32))
        for ours, theirs in parameter_names(model.n_layer).items()
    }
    missing, unexpected = hf.load_state_dict(state, strict=False)
    missing = [name for name in missing if name != "lm_head.weight" and not name.endswith(".attn.bias")]
    if missing or unexpected:
        raise ValueError(f"weights did not map: missing {missing}, unexpected {unexpected}")
    hf.tie_weights()
    if hf.lm_head.weight.data_ptr() != hf.transformer.wte.weight.data_ptr():
        raise ValueError("lm_head is not tied to the token embeddings")
    hf.generation_config = greedy_generation_config()
    hf.requires_grad_(False)
    return hf.eval()


class TransformersState:
    """One generation's memory of a TransformersLM: a Transformers KV cache and how many tokens it holds."""

    def __init__(self, model: "TransformersLM"):
        self.model = model  # the TransformersLM whose keys these are
        self.cache = DynamicCache(config=model.hf_model.config)
        self.length = 0

    def rollback(self, length: int) -> None:
        """Keep only the first `length` tokens: crop the cache's keys and values to `length` positions."""
        length = check_rollback(length, self.length)
        if length < self.length:
            self.cache.crop(length - self.length)  # a negative count: remove that many tokens from the end
            self.length = length


class TransformersLM:
    """A Transformers causal LM behind specdec's LanguageModel protocol (start, score, name, sizes).

    `score(tokens, state)` runs the model on the new tokens only, with the state's KV cache, and
    returns their logits as a float32 numpy array (n, V); `state.rollback(length)` crops the cache.
    The model runs under torch.inference_mode and is never changed (it must be in eval mode).
    """

    def __init__(self, hf_model: transformers.PreTrainedModel, name: str | None = None):
        if not isinstance(hf_model, transformers.PreTrainedModel):
            raise TypeError(f"hf_model must be a Transformers model, got {type(hf_model).__name__}")
        if hf_model.training:
            raise ValueError("hf_model is in training mode (dropout on): call hf_model.eval() first")
        config = hf_model.config.get_text_config(decoder=True)
        self.hf_model = hf_model
        self.name = name or getattr(config, "name_or_path", "") or config.model_type
        self.vocab_size = int(hf_model.get_output_embeddings().weight.shape[0])
        context = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
        if context is None:
            raise ValueError(f"{type(hf_model).__name__}'s config states no context length")
        self.max_context = int(context)

    def start(self) -> TransformersState:
        """A fresh decoding state with an empty KV cache."""
        return TransformersState(self)

    def score(self, tokens, state: TransformersState) -> np.ndarray:
        """Logits (n, V) for the token after each new token; the tokens are appended to `state`'s cache."""
        tokens = check_score(tokens, state, TransformersState, self)  # (n,) and room for them
        end = state.length + tokens.size
        with torch.inference_mode():
            device = self.hf_model.device  # the CPU here; a GPU model gets its inputs there
            input_ids = torch.from_numpy(tokens)[None].to(device)  # (1, n)
            mask = torch.ones((1, end), dtype=torch.long, device=device)  # (1, length + n) all real tokens
            output = self.hf_model(input_ids=input_ids, attention_mask=mask, cache=state.cache, use_cache=True)
        state.length = end
        return output.logits[0].float().cpu().numpy()  # (n, V)

    def __repr__(self) -> str:
        return f"TransformersLM({type(self.hf_model).__name__} {self.name!r}, V={self.vocab_size})"


class MemoState(TokenHistory):
    """A LogitsMemo's decoding state: just the tokens read so far."""


class LogitsMemo:
    """Any LanguageModel, asked once per distinct context: its logits are remembered, keyed by the context.

    For statistical tests that draw the first few tokens after one prompt thousands of times: there
    are only a few dozen distinct contexts, so a few dozen model calls serve 10^4 draws. Each miss
    scores the whole context in one call of the wrapped model (a fresh state), which fills in the
    logits of every prefix at once. The law of the draws is unchanged: same logits, same pipeline.
    """

    def __init__(self, lm):
        self.lm, self.rows = lm, {}
        self.name, self.vocab_size, self.max_context = f"memo({lm.name})", lm.vocab_size, lm.max_context

    def start(self) -> MemoState:
        return MemoState()

    def score(self, tokens, state: MemoState) -> np.ndarray:
        start = state.length
        state.tokens += check_new_tokens(tokens, self.vocab_size).tolist()
        if tuple(state.tokens) not in self.rows:
            logits = self.lm.score(state.tokens, self.lm.start())  # (length, V): every prefix at once
            self.rows.update({tuple(state.tokens[: i + 1]): row for i, row in enumerate(logits)})
        return np.stack([self.rows[tuple(state.tokens[: i + 1])] for i in range(start, state.length)])  # (n, V)


# --- Side by side with Transformers' own decoding (appendix A, section 3; `python -m specdec.huggingface`) ----


def generation_config(params: SamplingParams, end_token: int = 0, **assist) -> GenerationConfig:
    """Transformers' GenerationConfig for specdec's SamplingParams, every sampling setting written out.

    Temperature 0 is greedy (do_sample=False). Otherwise temperature -> top-k -> top-p -> min-p, the
    order specdec applies them in; top_k=None is stated explicitly, or Transformers would apply its
    default top_k=50. `assist` passes prompt_lookup_num_tokens, num_assistant_tokens, and so on.
    """
    sampling = {} if params.greedy else {"temperature": float(params.temperature), "top_p": float(params.top_p)}
    if not params.greedy:
        sampling["min_p"] = float(params.min_p) if params.min_p > 0 else None
    return GenerationConfig(
        do_sample=not params.greedy,
        num_beams=1,
        top_k=None if params.greedy else params.top_k,
        repetition_penalty=1.0,
        bos_token_id=end_token,
        eos_token_id=end_token,
        pad_token_id=end_token,
        **sampling,
        **assist,
    )


@contextmanager
def counting(hf_model: torch.nn.Module) -> Iterator[dict]:
    """Count the model's forward calls and the candidates prompt-lookup decoding proposes inside the block.

    Instrumentation for the benchmark only: a forward pre-hook on the model, and a wrapper around
    PromptLookupCandidateGenerator.get_candidates (both removed on leaving the block).
    """
    counts = {"calls": 0, "drafted": 0}
    generator = transformers.generation.candidate_generator.PromptLookupCandidateGenerator
    original = generator.get_candidates

    def get_candidates(self, input_ids, **kwargs):
        candidates, logits = original(self, input_ids, **kwargs)
        counts["drafted"] += candidates.shape[1] - input_ids.shape[1]
        return candidates, logits

    def count_call(module, args):
        counts["calls"] += 1

    hook = hf_model.register_forward_pre_hook(count_call)
    generator.get_candidates = get_candidates
    try:
        yield counts
    finally:
        hook.remove()
        generator.get_candidates = original


@dataclass
class Run:
    """One generation of any engine, in the units of the table."""

    tokens: np.ndarray  # (n,) the new tokens
    seconds: float
    target_calls: int
    drafted: int = 0
    accepted: int = 0


def hf_generate(hf_model, prompt, max_new_tokens: int, params: SamplingParams, seed: int = 0, **assist) -> Run:
    """Transformers' own generate (plain, or assisted with `assist`), timed and counted like specdec's."""
    input_ids = torch.as_tensor(np.asarray(prompt, dtype=np.int64))[None]  # (1, n)
    config = generation_config(params, max_new_tokens=max_new_tokens, **assist)
    torch.manual_seed(seed)  # generate draws from torch's global generator
    with counting(hf_model) as counts, torch.inference_mode():
        start = time.perf_counter()
        out = hf_model.generate(input_ids, attention_mask=torch.ones_like(input_ids), generation_config=config)
        seconds = time.perf_counter() - start
    tokens = out[0, input_ids.shape[1] :].numpy()
    accepted = tokens.size - counts["calls"] if assist else 0  # each call gives its accepted drafts + 1 token
    return Run(tokens, seconds, counts["calls"], counts["drafted"], max(accepted, 0))


def specdec_run(result) -> Run:
    return Run(
        result.tokens,
        result.seconds,
        result.target_calls,
        getattr(result, "drafted", 0),
        getattr(result, "accepted", 0),
    )


def engines(target: GPT, draft, hf_model, params: SamplingParams, gamma: int) -> dict[str, Callable]:
    """The rows of the table: name -> run(prompt, max_new_tokens, seed) -> Run."""
    lm = TransformersLM(hf_model)

    def rng(seed):
        return np.random.default_rng(seed)

    return {
        "specdec generate, numpy GPT": lambda p, n, s: specdec_run(generate(target, p, n, params, rng(s), 0)),
        "specdec generate, TransformersLM": lambda p, n, s: specdec_run(generate(lm, p, n, params, rng(s), 0)),
        "HF generate": lambda p, n, s: hf_generate(hf_model, p, n, params, s),
        f"specdec speculative (n-gram draft, gamma {gamma}), numpy GPT": lambda p, n, s: specdec_run(
            speculative_generate(target, draft, p, n, params, gamma, rng(s), 0)
        ),
        f"specdec speculative (n-gram draft, gamma {gamma}), TransformersLM": lambda p, n, s: specdec_run(
            speculative_generate(lm, draft, p, n, params, gamma, rng(s), 0)
        ),
        f"HF prompt lookup ({gamma} tokens)": lambda p, n, s: hf_generate(
            hf_model, p, n, params, s, prompt_lookup_num_tokens=gamma
        ),
    }


@dataclass(frozen=True)
class EngineRow:
    """One engine's totals over the prompts (`side_by_side`)."""

    engine: str  # what ran: the library, the model class, the decoding
    tokens: int  # tokens generated over all prompts
    seconds: float  # their time: per prompt the median over repeats, summed
    tokens_per_second: float
    tokens_per_call: float  # tokens per target call (the prompt's call counts)
    acceptance: float  # accepted / drafted draft tokens; NaN for an engine without a draft
    same_tokens: bool  # the same tokens as the first engine for every prompt (greedy: they must be)


def side_by_side(
    target: GPT,
    draft,
    hf_model,
    prompts,
    max_new_tokens: int,
    params: SamplingParams = SamplingParams(temperature=0),
    gamma: int = 4,
    repeats: int = 1,
    seed: int = 0,
) -> list[EngineRow]:
    """Every engine on the same prompts, interleaved, one BLAS and one torch thread; one EngineRow per engine.

    For each prompt and repeat, the engines run back to back in a shuffled order (so a slow moment of
    a shared machine hits them all alike), after one untimed warm-up run each. A prompt's time is
    the median over repeats; rows report totals over the prompts: tokens/s, tokens per target call
    (the prompt's call counts), accepted / drafted, and whether the tokens equal the first engine's
    (greedy: they must).
    """
    from threadpoolctl import threadpool_limits

    runs_by_engine: dict[str, list[list[Run]]] = {}
    order_rng = np.random.default_rng(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            table = engines(target, draft, hf_model, params, gamma)
            for run in table.values():
                run(prompts[0], max_new_tokens, seed)  # warm-up
            runs_by_engine = {name: [[] for _ in prompts] for name in table}
            for i, prompt in enumerate(prompts):
                for _ in range(repeats):
                    for k in order_rng.permutation(len(table)):
                        name = list(table)[k]
                        runs_by_engine[name][i].append(table[name](prompt, max_new_tokens, seed + i))
    finally:
        torch.set_num_threads(threads)
    rows, reference = [], None
    for name, per_prompt in runs_by_engine.items():
        firsts = [runs[0] for runs in per_prompt]
        seconds = sum(float(np.median([run.seconds for run in runs])) for runs in per_prompt)
        tokens = sum(run.tokens.size for run in firsts)
        calls = sum(run.target_calls for run in firsts)
        drafted, accepted = sum(run.drafted for run in firsts), sum(run.accepted for run in firsts)
        texts = [run.tokens for run in firsts]
        reference = texts if reference is None else reference
        rows.append(
            EngineRow(
                engine=name,
                tokens=tokens,
                seconds=seconds,
                tokens_per_second=tokens / seconds,
                tokens_per_call=tokens / calls,
                acceptance=accepted / drafted if drafted else float("nan"),
                same_tokens=all(np.array_equal(a, b) for a, b in zip(texts, reference, strict=True)),
            )
        )
    return rows


def format_table(rows: list[EngineRow]) -> str:
    """The side-by-side rows as a markdown table, speed relative to the first row."""
    lines = [
        "| engine | tokens/s | × row 1 | tokens per target call | accepted / drafted | same tokens as row 1 |",
        "|---|---:|---:|---:|---:|:---:|",
    ]
    for row in rows:
        acceptance = "–" if math.isnan(row.acceptance) else f"{row.acceptance:.2f}"
        ratio = row.tokens_per_second / rows[0].tokens_per_second
        lines.append(
            f"| {row.engine} | {row.tokens_per_second:.0f} | {ratio:.2f}"
            f" | {row.tokens_per_call:.2f} | {acceptance} | {'yes' if row.same_tokens else 'no'} |"
        )
    return "\n".join(lines)


def machine() -> str:
    """The CPU, numpy's BLAS and torch's math library: what the speed figures were measured on."""
    from threadpoolctl import threadpool_info

    cpu = cpu_name()
    blas = [
        f"{i['internal_api']} {i.get('version')} ({i.get('architecture')})"
        for i in threadpool_info()
        if i["user_api"] == "blas"
    ]
    parallel = torch.__config__.parallel_info().splitlines()
    backend = next((line.strip() for line in parallel if "ATen parallel backend" in line), "")
    return (
        f"CPU: {cpu}, {os.cpu_count()} cores; numpy {np.__version__} with {', '.join(blas) or 'unknown BLAS'};"
        f" torch {torch.__version__} ({backend}; MKL {'yes' if torch.backends.mkl.is_available() else 'no'},"
        f" oneDNN {'yes' if torch.backends.mkldnn.is_available() else 'no'}), transformers {transformers.__version__}"
    )


def main(argv=None) -> None:
    """`python -m specdec.huggingface`: the side-by-side table on held-out prompts (needs the repository)."""
    import argparse
    import sys
    from pathlib import Path

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--max-new", type=int, default=100)
    parser.add_argument("--gamma", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))
    from corpus import load_corpus

    from specdec.harness import heldout_prompts
    from specdec.models import load_model

    prompts = heldout_prompts(load_corpus().heldout, args.prompts, 48, seed=0)
    target = load_model("target")
    params = SamplingParams(temperature=args.temperature)
    rows = side_by_side(
        target, load_model("draft"), to_transformers(target), prompts, args.max_new, params, args.gamma, args.repeats
    )
    print(machine())
    print(
        f"{args.prompts} held-out prompts of 48 tokens, {args.max_new} new tokens, {params},"
        f" {args.repeats} repeats (median)"
    )
    print(format_table(rows))


if __name__ == "__main__":
    main()
