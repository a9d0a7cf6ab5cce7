"""Checkers for the exercises of notebook 06 (language models as next-token distributions).

check_bits_and_perplexity(fn):  fn(log_probs) -> (bits per token, perplexity)
check_generate_tokens(fn):      fn(model, prompt_tokens, max_new_tokens, params, rng) -> the new token ids
check_bigram_probs(fn):         fn(tokens, vocab_size) -> (V, V) add-one smoothed bigram probabilities
check_cached_score(fn):         fn(w, cache, tokens) -> (n, V) logits of a one-layer attention model with a KV cache

The tiny attention model of exercise 4 (its weights, a cache-free forward pass, and the buggy
cached step the learner has to fix) lives here too, so the notebook cannot change it by accident.
"""

import math

import numpy as np

from specdec.exercises import call, show, verdict
from specdec.protocol import TokenHistory

# --- Exercise 1: bits per token and perplexity --------------------------------------------------


def reference_bits_and_perplexity(log_probs) -> tuple[float, float]:
    """Mean of -log2 p over the tokens, and 2 to that power. log_probs are natural logarithms."""
    log_probs = np.asarray(log_probs, dtype=np.float64)  # (...,) one entry per scored token
    bits = float(-log_probs.mean() / math.log(2))
    return bits, float(2.0**bits)


def bits_cases() -> list[tuple]:
    rng = np.random.default_rng(60)
    heldout_like = np.log(rng.dirichlet(np.ones(98), size=200)[np.arange(200), rng.integers(0, 98, 200)])  # (200,)
    return [
        (np.log(np.full(4, 0.5)),),  # a fair coin per token: 1 bit, perplexity 2
        (np.log(np.full(3, 0.25)),),  # 2 bits, perplexity 4
        (np.log(np.array([0.5, 0.25])),),  # 1.5 bits: average the log-probabilities, not the probabilities
        (np.array([0.0]),),  # a certain token: 0 bits, perplexity 1
        (np.log(np.full(10, 1 / 98)),),  # uniform over 98 characters: log2(98) bits, perplexity 98
        (np.log(np.array([0.9, 0.1, 0.9, 0.9])),),
        ([math.log(0.5), math.log(0.125)],),  # a plain list
        (np.log(np.array([[0.5, 0.25], [0.125, 0.125]])),),  # a (W, T) batch: average over every token
        (np.log(np.array([0.5, 0.25], dtype=np.float32)),),  # float32 log-probabilities
        (heldout_like,),
        (np.array([math.log(0.5), -math.inf]),),  # a token the model called impossible: infinitely surprised
    ]


def number(value) -> str:
    """A learner's number, printed plainly (6 decimals) when it is one."""
    try:
        return f"{float(value):.6f}"
    except (TypeError, ValueError):
        return show(value)


def same_number(got, expected: float) -> bool:
    try:
        got = float(got)
    except (TypeError, ValueError):
        return False
    if math.isinf(expected):
        return got == expected
    return math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-9)


def check_bits_and_perplexity(fn) -> bool:
    """fn(log_probs) must return (mean -log2 p, 2 ** that) for natural-log probabilities of any shape."""
    name = "bits_and_perplexity"
    cases = bits_cases()
    for args in cases:
        got, error = call(fn, args)
        if error is None and not (isinstance(got, tuple | list) and len(got) == 2):
            error = f"for input {show(args)} expected a pair (bits, perplexity), got {show(got)}"
        if error is None:
            bits, perplexity = reference_bits_and_perplexity(*args)
            if not same_number(got[0], bits):
                error = f"for log_probs {show(args[0])} expected {bits:.6f} bits per token, got {number(got[0])}"
            elif not same_number(got[1], perplexity):
                error = (
                    f"for log_probs {show(args[0])} the bits are right ({bits:.6f}), but expected perplexity "
                    f"{perplexity:.6f}, got {number(got[1])}"
                )
        if error is not None:
            return verdict(name, error, len(cases))
    return verdict(name, None, len(cases))


# --- Exercise 2: the generation loop -----------------------------------------------------------


class ToyState(TokenHistory):
    """The decoding state of CountingModel: the tokens seen."""


class CountingModel:
    """A small LanguageModel (logits from a random table of the last two tokens) that counts its work.

    It counts the score calls, the positions they score and the states it starts, so the checker
    can tell a loop that gets the right tokens the wasteful way from one that does not.
    """

    name, vocab_size, max_context = "counting toy", 7, 12

    def __init__(self, seed: int = 64):
        self.table = np.random.default_rng(seed).normal(0, 1.5, (7, 7, 7))  # (V, V, V) logits after (a, b)
        self.calls = self.positions = self.states = 0

    def start(self) -> ToyState:
        self.states += 1
        return ToyState()

    def score(self, tokens, state) -> np.ndarray:
        if not isinstance(state, ToyState):
            raise TypeError(f"state must come from this model's start(), got {type(state).__name__}")
        tokens = np.asarray(tokens)
        if tokens.ndim != 1 or tokens.size == 0 or tokens.dtype.kind not in "iu":
            raise ValueError(f"score needs a non-empty 1-D sequence of token ids, got {show(tokens)}")
        if state.length + tokens.size > self.max_context:
            raise ValueError(f"context overflow: {state.length} + {tokens.size} > max_context {self.max_context}")
        self.calls += 1
        self.positions += tokens.size
        rows = []
        for token in tokens.tolist():
            previous = state.tokens[-1] if state.tokens else 0
            state.tokens.append(int(token))
            rows.append(self.table[previous, token])
        return np.array(rows)  # (n, V)


def generate_cases() -> list[tuple]:
    """(prompt, max_new_tokens, params, seed or None for greedy)."""
    from specdec.pipeline import SamplingParams  # here: importing ex06 must not need the pipeline

    return [
        ([1, 2, 3], 5, SamplingParams(temperature=0.0), None),  # greedy: no generator needed
        ([4], 6, SamplingParams(temperature=1.0), 0),
        ([0, 5, 2], 4, SamplingParams(temperature=0.7, top_p=0.9), 1),
        ([3, 3], 1, SamplingParams(temperature=1.0), 2),  # one new token: one call, the prompt's
        ([2], 0, SamplingParams(temperature=1.0), 3),  # nothing to generate: no call at all
        ([1, 2, 3, 4, 5, 6], 7, SamplingParams(temperature=1.5, top_k=3), 4),  # fills the context exactly
        ([6, 1], 8, SamplingParams(temperature=1.0, min_p=0.1), 5),
    ]


def check_generate_tokens(fn) -> bool:
    """fn(model, prompt_tokens, max_new_tokens, params, rng) must return the tokens `generate` would,
    with one call for the prompt and one per new token but the last, scoring each position once."""
    from specdec.generation import generate

    name = "generate_tokens"
    cases = generate_cases()
    for prompt, n_new, params, seed in cases:
        model = CountingModel()
        rng = None if seed is None else np.random.default_rng(seed)
        got, error = call(fn, (model, list(prompt), n_new, params, rng))
        where = f"prompt {prompt}, max_new_tokens {n_new}, {params}"
        if error is not None:
            return verdict(name, error if error.startswith("not attempted") else f"{error} ({where})", len(cases))
        reference_model = CountingModel()
        reference = generate(
            reference_model, prompt, n_new, params, None if seed is None else np.random.default_rng(seed)
        )
        expected = reference.tokens.tolist()
        try:
            got_list = [int(t) for t in np.asarray(got).reshape(-1)] if got is not None else None
        except (TypeError, ValueError):
            got_list = None
        if got_list != expected:
            draw = "" if seed is None else f" (drawn with sample_token and np.random.default_rng({seed}))"
            return verdict(name, f"{where}: expected the tokens {expected}{draw}, got {show(got)}", len(cases))
        if model.calls != reference_model.calls:
            return verdict(
                name,
                f"{where}: the right tokens, but {model.calls} model calls where {reference_model.calls} suffice: "
                "the prompt in one call, then one call per new token except the last (nothing comes after it)",
                len(cases),
            )
        if model.positions != reference_model.positions or model.states > 1:
            return verdict(
                name,
                f"{where}: the right tokens, but the model scored {model.positions} positions with {model.states} "
                f"state(s) where {reference_model.positions} with one state suffice: keep one "
                "decoding state and feed it only the new token",
                len(cases),
            )
    return verdict(name, None, len(cases))


# --- Exercise 3: a bigram model by hand --------------------------------------------------------


def reference_bigram_probs(tokens, vocab_size: int) -> np.ndarray:
    """P(b | a) = (count(a then b) + 1) / (count(a followed by anything) + V), shape (V, V), float64."""
    tokens = np.asarray(tokens, dtype=np.int64)  # (n,)
    pairs = np.zeros((vocab_size, vocab_size))  # (V, V) [a, b] = times a is followed by b
    np.add.at(pairs, (tokens[:-1], tokens[1:]), 1)
    return (pairs + 1) / (pairs.sum(axis=1, keepdims=True) + vocab_size)


def bigram_cases() -> list[tuple]:
    rng = np.random.default_rng(61)
    return [
        (np.array([0, 1, 0, 1, 1]), 2),
        (np.array([0, 1, 2, 3]), 4),  # every token once: the last one, 3, is never followed by anything
        (np.array([2]), 3),  # a single token: no pairs at all, every row uniform
        (np.array([0, 0, 0]), 2),  # a token followed by itself
        (np.array([1, 2, 1]), 5),  # tokens 0, 3, 4 never seen: their rows are uniform
        ([3, 1, 3, 1, 3], 4),  # a plain list
        (np.array([2, 0, 1, 2], dtype=np.uint8), 3),  # small unsigned ids (uint8, as in the corpus)
        (rng.integers(0, 6, 200), 6),
        (rng.integers(0, 30, 50), 40),  # more states than data: smoothing dominates
    ]


def check_bigram_probs(fn) -> bool:
    """fn(tokens, vocab_size) must return the add-one smoothed bigram table P[a, b] = P(next b | previous a)."""
    name = "bigram_probs"
    cases = bigram_cases()
    for args in cases:
        got, error = call(fn, args)
        if error is None:
            expected = reference_bigram_probs(*args)
            got = np.asarray(got)
            tokens = show(np.asarray(args[0]))
            if got.shape != expected.shape:
                error = f"for tokens {tokens}, vocab_size {args[1]}: expected shape {expected.shape}, got {got.shape}"
            elif not np.allclose(got, expected, rtol=1e-9, atol=1e-12, equal_nan=False):
                bad = np.flatnonzero(~np.isclose(got, expected, rtol=1e-9, atol=1e-12).all(axis=1))
                a = int(bad[0])
                error = (
                    f"for tokens {tokens}, vocab_size {args[1]}: row {a} (what follows token {a}) "
                    f"expected {show(expected[a])}, got {show(got[a])} (row sum {got[a].sum():.6g})"
                )
        if error is not None:
            return verdict(name, error, len(cases))
    return verdict(name, None, len(cases))


# --- Exercise 4: spot the bug in a KV-cache step ----------------------------------------------

VOCAB, CONTEXT, WIDTH = 12, 16, 8  # a toy model: 12 tokens, 16 positions, 8-dimensional vectors


def tiny_weights(seed: int = 62) -> dict[str, np.ndarray]:
    """Weights of a one-layer, one-head attention model (no layer norm, no MLP), float64."""
    rng = np.random.default_rng(seed)
    shapes = {"wte": (VOCAB, WIDTH), "wpe": (CONTEXT, WIDTH)}
    shapes.update({name: (WIDTH, WIDTH) for name in ("w_q", "w_k", "w_v", "w_o")})
    return {name: rng.normal(0, 0.5, shape) for name, shape in shapes.items()}


def new_cache(w: dict) -> dict:
    """An empty KV cache for the tiny model: keys and values preallocated for every position."""
    context, width = w["wpe"].shape
    return {"keys": np.zeros((context, width)), "values": np.zeros((context, width)), "length": 0}


def full_recompute(w: dict, tokens) -> np.ndarray:
    """The tiny model on a whole sequence at once, no cache: the logits after each token, shape (n, V)."""
    tokens = np.asarray(tokens, dtype=np.int64)  # (n,)
    n = tokens.size
    x = w["wte"][tokens] + w["wpe"][:n]  # (n, d)
    q, k, v = x @ w["w_q"], x @ w["w_k"], x @ w["w_v"]  # (n, d) each
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), q @ k.T / math.sqrt(WIDTH), -np.inf)  # (n, n)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))  # (n, n)
    weights /= weights.sum(axis=1, keepdims=True)
    x = x + weights @ v @ w["w_o"]  # (n, d)
    return x @ w["wte"].T  # (n, V)


def buggy_score(w: dict, cache: dict, tokens) -> np.ndarray:
    """Feed new tokens; return the logits after each, shape (n, V). One layer, one head, a KV cache."""
    tokens = np.asarray(tokens, dtype=np.int64)  # (n,)
    n, start = tokens.size, cache["length"]
    end = start + n
    x = w["wte"][tokens] + w["wpe"][start:end]  # (n, d) token + position
    q, k, v = x @ w["w_q"], x @ w["w_k"], x @ w["w_v"]  # (n, d) each
    cache["keys"][start:end] = k  # the new positions' keys and values join the cache
    cache["values"][start:end] = v
    scores = q @ cache["keys"][:end].T / math.sqrt(k.shape[1])  # (n, end) every new token vs every cached one
    if n > 1:  # a single new token may see everything in the cache
        future = np.arange(end)[None, :] > np.arange(n)[:, None]  # (n, end) True where the key comes later
        scores[future] = -np.inf
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))  # (n, end)
    weights /= weights.sum(axis=1, keepdims=True)
    x = x + weights @ cache["values"][:end] @ w["w_o"]  # (n, d)
    cache["length"] = end
    return x @ w["wte"].T  # (n, V)


def cache_cases() -> list[tuple]:
    """(tokens, how to feed them): chunk sizes, and ("rollback", length) steps that forget tokens."""
    rng = np.random.default_rng(63)
    tokens = rng.integers(0, VOCAB, 15)  # (15,)
    return [
        (tokens[:8], [8]),  # the whole prompt in one call from an empty cache
        (tokens[:8], [1] * 8),  # generation: one token per call
        (tokens[:8], [5, 1, 1, 1]),  # a prompt, then one token at a time
        (tokens[:7], [3, 4]),  # a prompt, then a block of 4 in one call (a verification)
        (tokens[:12], [4, 3, 1, 4]),
        (tokens[:12], [4, 3, ("rollback", 5), 5]),  # score 7, forget the last 2, score 5 new ones
        (tokens[:15], [2, 2, 2, ("rollback", 0), 9]),  # forget everything, start again with 9 new ones
        (np.arange(16) % VOCAB, [6, 5, 5]),  # up to the last position of the context
    ]


def describe_feeding(schedule) -> str:
    """'score 5, then score 1 (3 times), then rollback(4), ...'"""
    parts: list[list] = []  # [text, repeats]
    for step in schedule:
        text = f"rollback({step[1]})" if isinstance(step, tuple) else f"score {step}"
        if parts and parts[-1][0] == text:
            parts[-1][1] += 1
        else:
            parts.append([text, 1])
    return ", then ".join(text if repeats == 1 else f"{text} ({repeats} times)" for text, repeats in parts)


def check_cached_score(fn) -> bool:
    """fn(w, cache, tokens) must give, for every way of feeding tokens, the logits of a full recompute."""
    name = "cached_score"
    w = tiny_weights()
    cases = cache_cases()
    for tokens, schedule in cases:
        cache = new_cache(w)
        seen: list[int] = []  # the tokens the cache should hold now
        position = 0
        for step in schedule:
            if isinstance(step, tuple):  # rollback: keep only the first `length` tokens
                cache["length"] = step[1]
                del seen[step[1] :]
                continue
            new = tokens[position : position + step]  # (step,)
            position += step
            before = len(seen)
            got, error = call(fn, (w, cache, new))
            where = f"feeding {show(np.asarray(tokens))} as: {describe_feeding(schedule)}"
            if error is not None:
                return verdict(name, error if error.startswith("not attempted") else f"{error} ({where})", len(cases))
            seen.extend(int(t) for t in new)
            expected = full_recompute(w, seen)[before:]  # (step, V) the rows for the new positions
            got = np.asarray(got)
            if got.shape != expected.shape:
                return verdict(name, f"{where}: a call with {step} tokens returned shape {got.shape}", len(cases))
            close = np.isclose(got, expected, rtol=1e-9, atol=1e-9).all(axis=1)  # (step,)
            if not close.all():
                row = int(np.argmin(close))
                gap = float(np.abs(got[row] - expected[row]).max())
                scored = f"position {before}" if step == 1 else f"positions {before}..{before + step - 1}"
                cached = f"{before} token{'' if before == 1 else 's'} already cached"
                return verdict(
                    name,
                    f"{where}: in the call that scored {scored} ({cached}), row {row} (position {before + row}) "
                    f"differs from a full recompute by up to {gap:.3g}",
                    len(cases),
                )
            if cache["length"] != len(seen):
                return verdict(
                    name, f"{where}: after scoring {len(seen)} tokens, cache['length'] is {cache['length']}", len(cases)
                )
    return verdict(name, None, len(cases))
