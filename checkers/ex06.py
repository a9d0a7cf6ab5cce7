"""Checkers for the exercises of notebook 06 (language models as next-token distributions).

check_bits_and_perplexity(fn):  fn(log_probs) -> (bits per token, perplexity)
check_generate_tokens(fn):      fn(model, prompt_tokens, max_new_tokens, params, rng) -> the new token ids
                                (calling specdec's `generate` is refused: the exercise writes that loop)
check_bigram_probs(fn):         fn(tokens, vocab_size) -> (V, V) add-one smoothed bigram probabilities, float64
check_cached_score(fn):         fn(w, cache, tokens) -> (n, V) logits of a one-layer attention model with a KV cache
                                (the new keys and values must be in the cache; calling full_recompute is refused)

The tiny attention model of exercise 4 (its weights, a cache-free forward pass, and the buggy
cached step the learner has to fix) lives here too, so the notebook cannot change it by accident.
"""

import math

import numpy as np

from checkers import NOT_ATTEMPTED, attempt, located, namesakes, result_problem, show, verdict
from specdec.protocol import TokenHistory


def attempt_on(
    fn, args: tuple, where: str, refused: dict | None = None, why: str = "", in_place: str = "", must_draw=False
) -> tuple:
    """Call the learner's function under the course's policy: (result, None), or (None, a message naming the case).

    The message names the case in words (`where`), not the raw arguments (a model object prints badly).
    """
    policy = {"in_place": in_place} if in_place else {}
    outcome = attempt(fn, args, refused=refused, why=why, must_draw=must_draw, **policy)
    if outcome.failure is None:
        return outcome.result, None
    if outcome.failure == NOT_ATTEMPTED:
        return None, NOT_ATTEMPTED
    return None, located(outcome.failure.split(" for input ")[0], where)


def dtype_name(value) -> str | None:
    """The dtype of a result (a list of Python floats counts as float64), or None if it is not numeric."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    return array.dtype.name if array.dtype.kind in "biufc" else None


def described(tokens) -> str:
    """Tokens as a counterexample shows them: their values, and their dtype when it is not a plain int64."""
    array = np.asarray(tokens)
    kind = "a list" if isinstance(tokens, list) else array.dtype.name
    return show(array) + ("" if kind == "int64" else f" ({kind})")


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
        (np.log(np.array([[[0.5], [0.25]], [[0.5], [0.125]]])),),  # (2, 2, 1): any shape
        (np.array(math.log(0.25)),),  # one token, as a 0-d array: 2 bits
        (np.log(np.array([0.5, 0.25], dtype=np.float32)),),  # float32 log-probabilities
        (np.array([-800.0, -1.0]),),  # a probability of e^-800 underflows to 0 if you exponentiate first
        (np.array([-100.0, -100.0], dtype=np.float32),),  # float32 in: 2 ** 144.3 overflows unless computed in float64
        (heldout_like,),
        (np.array([math.log(0.5), -math.inf]),),  # a token the model called impossible: infinitely surprised
    ]


def number(value) -> str:
    """A number as a message shows it: 7 significant digits (exponent notation when huge), or the object itself."""
    try:
        text = f"{float(value):.7g}"
    except (TypeError, ValueError):
        return show(value)
    return text if any(char in text for char in ".en") else text + ".0"  # 1.0, not 1; inf and nan as they are


def unchanged(given, original) -> bool:
    """Whether the learner's function left the argument it was given as it was (NaN equal to NaN)."""
    if isinstance(original, np.ndarray):
        return isinstance(given, np.ndarray) and np.array_equal(given, original, equal_nan=True)
    return list(given) == list(original)


def same_number(got, expected: float) -> bool:
    try:
        got = float(got)
    except (TypeError, ValueError):
        return False
    if math.isinf(expected):
        return got == expected
    return math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-9)


def bits_diagnosis(got, log_probs) -> str:
    """What a wrong number of bits is, when it is a well-known slip."""
    log_probs = np.asarray(log_probs, dtype=np.float64)
    nats = float(-log_probs.mean())
    slips = [
        (nats, "the mean of -ln p, in nats: divide by ln 2 for bits"),
        (nats * math.log(2), "the nats multiplied by ln 2: divide by it instead"),
        (nats / math.log(10), "the mean of -log10 p: bits are base-2 logarithms"),
        (float(-log_probs.sum() / math.log(2)), "the total over every token: the bits per token are a mean"),
    ]
    mean_probability = float(np.exp(log_probs).mean())
    if mean_probability > 0:
        slips.append((-math.log2(mean_probability), "-log2 of the mean probability: average the log-probabilities"))
    for value, what in slips:
        if same_number(got, value) and not math.isinf(value):
            return f" (that is {what})"
    return ""


def check_bits_and_perplexity(fn) -> bool:
    """fn(log_probs) must return (mean -log2 p, 2 ** that) for natural-log probabilities of any shape."""
    name = "bits_and_perplexity"
    cases = bits_cases()
    for (log_probs,) in cases:
        array = np.asarray(log_probs)
        plain = array.ndim == 1 and array.dtype == np.float64
        where = f"for log_probs {show(log_probs)}" + ("" if plain else f" ({array.dtype}, shape {array.shape})")
        given = np.copy(log_probs) if isinstance(log_probs, np.ndarray) else list(log_probs)
        in_place = "compute on a copy (log_probs / ... makes a new array, /= does not)"
        got, error = attempt_on(fn, (given,), where, in_place=in_place)
        if error is None and not (isinstance(got, tuple | list) and len(got) == 2):
            error = f"{where} expected a pair (bits, perplexity), got {show(got)}"
        if error is None:
            bits, perplexity = reference_bits_and_perplexity(log_probs)
            if not same_number(got[0], bits):
                slip = bits_diagnosis(got[0], log_probs)
                low = dtype_name(got[0])
                if not slip and low in ("float32", "float16") and math.isclose(float(got[0]), bits, rel_tol=2e-3):
                    slip = f" (right only to {low} precision: float64 is asked; convert the input first)"
                error = f"{where} expected {number(bits)} bits per token, got {number(got[0])}{slip}"
            elif not same_number(got[1], perplexity):
                overflow = ""
                low = dtype_name(got[1])
                if low in ("float32", "float16") and perplexity > float(np.finfo(low).max):
                    overflow = (
                        f" ({low} overflows above {float(np.finfo(low).max):.2g}: compute in float64, as asked;"
                        " np.asarray(log_probs, dtype=np.float64) converts the input)"
                    )
                error = (
                    f"{where} the bits are right ({number(bits)}), but expected perplexity {number(perplexity)} "
                    f"= 2 ** bits, got {number(got[1])}{overflow}"
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

    def __repr__(self) -> str:
        return f"CountingModel(vocab_size={self.vocab_size}, max_context={self.max_context})"

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
        ([1, 2, 3], 5, SamplingParams(temperature=0.0), None),  # greedy: no generator; token 0 comes first
        ([4], 6, SamplingParams(temperature=1.0), 0),
        ([0, 5, 2], 4, SamplingParams(temperature=0.7, top_p=0.9), 1),
        ([3, 3], 1, SamplingParams(temperature=1.0), 2),  # one new token: one call, the prompt's
        ([2], 0, SamplingParams(temperature=1.0), 3),  # nothing to generate: no call at all
        ([1, 2, 3, 4, 5, 6], 7, SamplingParams(temperature=1.5, top_k=3), 4),  # fills the context exactly
        ([6, 1], 8, SamplingParams(temperature=1.0, min_p=0.1), 5),
        (np.array([5, 3]), 6, SamplingParams(temperature=1.0), 6),  # a prompt as an array, as the corpus gives
    ]


def token_list(got) -> list[int] | None:
    """The learner's tokens as plain ints, or None when they are not a flat sequence of integers."""
    if got is None:
        return None
    try:
        array = np.asarray(got)
    except (TypeError, ValueError):
        return None
    if array.ndim > 1 or (array.dtype.kind not in "iu" and not (array.size == 0 and array.dtype.kind == "f")):
        return None
    return [int(t) for t in array.reshape(-1)]


def check_generate_tokens(fn) -> bool:
    """fn(model, prompt_tokens, max_new_tokens, params, rng) must return the tokens `generate` would,
    with one call for the prompt and one per new token but the last, scoring each position once.
    Calling `generate` itself (specdec's, or the notebook's) is refused."""
    from specdec.generation import generate

    name = "generate_tokens"
    cases = generate_cases()
    for prompt, n_new, params, seed in cases:
        shown = f"np.array({prompt.tolist()})" if isinstance(prompt, np.ndarray) else str(prompt)
        rng_text = "rng None" if seed is None else f"rng np.random.default_rng({seed})"
        where = f"prompt_tokens {shown}, max_new_tokens {n_new}, {params}, {rng_text}"
        model = CountingModel()
        rng = None if seed is None else np.random.default_rng(seed)
        given = prompt.copy() if isinstance(prompt, np.ndarray) else list(prompt)
        refused = namesakes(fn, ("generate",))  # the notebook's own generate, and any alias of it
        refused["generate"].append(generate)
        why = "the loop this exercise asks you to write yourself"
        in_place = "the prompt is the caller's; collect the new tokens in a list of your own"
        must_draw = rng is not None and params.temperature > 0 and n_new > 0
        got, error = attempt_on(
            fn, (model, given, n_new, params, rng), f"for {where}", refused, why, in_place, must_draw
        )
        if error is not None:
            return verdict(name, error, len(cases))
        reference_model = CountingModel()
        reference = generate(
            reference_model, prompt, n_new, params, None if seed is None else np.random.default_rng(seed)
        )
        expected = reference.tokens.tolist()
        got_list = token_list(got)
        if got_list != expected:
            draw = "" if seed is None else " (each drawn with sample_token(logits, params, rng))"
            note = ""
            if got_list is None and got is not None:
                note = ": return a list of integer token ids"
            elif got_list is not None and len(got_list) < len(expected) and got_list and got_list[-1] == 0:
                note = ": it stops after token 0, but this exercise has no end token; return max_new_tokens tokens"
            elif got_list is not None and len(got_list) != len(expected):
                note = f": {len(got_list)} token{'' if len(got_list) == 1 else 's'} where max_new_tokens is {n_new}"
            return verdict(
                name, f"for {where}: expected the tokens {expected}{draw}, got {show(got)}{note}", len(cases)
            )
        if model.calls != reference_model.calls:
            return verdict(
                name,
                f"for {where}: the right tokens, but {model.calls} model call{'' if model.calls == 1 else 's'} where "
                f"{reference_model.calls} suffice: "
                "the prompt in one call, then one call per new token except the last (nothing comes after it)",
                len(cases),
            )
        if model.positions != reference_model.positions or model.states > 1:
            return verdict(
                name,
                f"for {where}: the right tokens, but the model scored {model.positions} positions with "
                f"{model.states} state(s) where {reference_model.positions} with one state suffice: keep one "
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
        (np.array([4, 0, 4, 0]), 5),  # the last id followed by the first: both ends of the vocabulary
        ([3, 1, 3, 1, 3], 4),  # a plain list
        (np.array([2, 0, 1, 2], dtype=np.uint8), 3),  # small unsigned ids (uint8, as in the corpus)
        (rng.integers(0, 40, 300).astype(np.uint8), 40),  # uint8 ids: a * V + b overflows uint8
        (rng.integers(0, 6, 200), 6),
        (rng.integers(0, 30, 50), 40),  # more states than data: smoothing dominates
    ]


def wraps_around(fn, tokens, vocab_size: int, expected: np.ndarray) -> str | None:
    """Whether fn is wrong on small integer tokens only because their dtype overflows: then say so."""
    if not isinstance(tokens, np.ndarray) or tokens.dtype.itemsize >= 8:
        return None
    largest = int(tokens.max()) * vocab_size + int(tokens.max())
    if largest <= np.iinfo(tokens.dtype).max:
        return None
    again, error = attempt_on(fn, (tokens.astype(np.int64), vocab_size), "")
    try:
        right = error is None and np.allclose(np.asarray(again, dtype=np.float64), expected, rtol=1e-9, atol=1e-12)
    except (TypeError, ValueError):
        return None
    if not right:
        return None
    dtype = tokens.dtype.name
    return (
        f"wrong for these {dtype} tokens, but right for the same tokens as int64: tokens[:-1] * vocab_size "
        f"overflows {dtype}, whose largest value is {np.iinfo(tokens.dtype).max} (here a * V + b reaches "
        f"{largest}) and wraps around silently; convert the tokens to int64 first (np.asarray(tokens, dtype=np.int64))"
    )


def check_bigram_probs(fn) -> bool:
    """fn(tokens, vocab_size) must return the add-one smoothed table P[a, b] = P(next b | previous a), in float64."""
    name = "bigram_probs"
    cases = bigram_cases()
    for tokens, vocab_size in cases:
        where = f"for tokens {described(tokens)}, vocab_size {vocab_size}"
        got, error = attempt_on(fn, (tokens, vocab_size), where)
        if error is None:
            error = bigram_problem(fn, got, tokens, vocab_size)
            error = None if error is None else located(error, where)
        if error is not None:
            return verdict(name, error, len(cases))
    return verdict(name, None, len(cases))


def bigram_problem(fn, got, tokens, vocab_size: int) -> str | None:
    """What is wrong with one answer of bigram_probs, in words (None when it is right)."""
    expected = reference_bigram_probs(tokens, vocab_size)
    kind = result_problem(got, expected, "probabilities", shape=False)
    got_array = np.asarray(got) if kind is None or "returned float" in kind else None
    if got_array is not None and got_array.shape != expected.shape:
        return kind or f"your function returned shape {got_array.shape} where {expected.shape} is asked"
    if got_array is None:
        return kind
    close = np.isclose(got_array.astype(np.float64), expected, rtol=1e-9, atol=1e-12)
    near = np.allclose(got_array.astype(np.float64), expected, rtol=1e-5, atol=1e-7)
    if kind is not None:  # another float dtype: say whether the values are right too
        return kind + (
            " (the values are right)"
            if close.all()
            else " (right only to that precision: count and divide in float64)"
            if near
            else ""
        )
    if close.all():
        return None
    overflow = wraps_around(fn, tokens, vocab_size, expected)
    if overflow:
        return overflow
    a = int(np.flatnonzero(~close.all(axis=1))[0])
    b = int(np.flatnonzero(~close[a])[0])
    return (
        f"P[{a}, {b}] (token {b} after token {a}) expected {expected[a, b]:.6g}, got {float(got_array[a, b]):.6g};"
        f" row {a} expected {show(expected[a])}, got {show(got_array[a])}"
        f" (row sum {float(np.sum(got_array[a], dtype=np.float64)):.6g})"
    )


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
    n, past = tokens.size, cache["length"]  # past: the tokens already cached
    end = past + n
    x = w["wte"][tokens] + w["wpe"][past:end]  # (n, d) token + position
    q, k, v = x @ w["w_q"], x @ w["w_k"], x @ w["w_v"]  # (n, d) each
    cache["keys"][past:end] = k  # the new positions' keys and values join the cache
    cache["values"][past:end] = v
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


def cached_keys_and_values(w: dict, tokens) -> tuple[np.ndarray, np.ndarray]:
    """The key and value of every position of `tokens`, (n, d) each: what a correct cache holds for them."""
    tokens = np.asarray(tokens, dtype=np.int64)
    x = w["wte"][tokens] + w["wpe"][: tokens.size]  # (n, d)
    return x @ w["w_k"], x @ w["w_v"]


def cache_step_problem(got, expected: np.ndarray, cache: dict, w: dict, seen: list[int], before: int) -> str | None:
    """What is wrong with one call's result (logits for positions before..len(seen)-1) and the cache after it."""
    step = len(seen) - before
    scored = f"position {before}" if step == 1 else f"positions {before}..{before + step - 1}"
    cached = f"{before} token{'' if before == 1 else 's'} already cached"
    call_text = f"in the call that scored {scored} ({cached})"
    kind = result_problem(got, expected, "logits", shape=False)
    if kind is not None:
        return f"{kind} ({call_text})"
    dtype = dtype_name(got)
    got = np.asarray(got)
    if got.shape != expected.shape:
        return f"{call_text}, expected logits of shape {expected.shape} (one row per new token), got shape {got.shape}"
    close = np.isclose(got.astype(np.float64), expected, rtol=1e-9, atol=1e-9).all(axis=1)  # (step,)
    if not close.all():
        row = int(np.argmin(close))
        if np.isnan(got[row]).any():
            what = "contains NaN (was every score of that row -inf? a position may always see itself)"
        else:
            what = f"differs from a full recompute by up to {float(np.abs(got[row] - expected[row]).max()):.3g}"
        precision = f" (and it returned {dtype} logits; the model computes in float64)" if dtype != "float64" else ""
        return f"{call_text}, row {row} (position {before + row}) {what}{precision}"
    if dtype != "float64":
        return f"{call_text}, the values are right, but it returned {dtype} logits; float64 is asked"
    if cache.get("length") != len(seen):
        return f"after scoring {len(seen)} tokens, cache['length'] is {show(cache.get('length'))}, not {len(seen)}"
    keys, values = cached_keys_and_values(w, seen)  # (len(seen), d) each
    for name, want in (("keys", keys), ("values", values)):
        held = np.asarray(cache[name])[: len(seen)]
        wrong = ~np.isclose(held, want, rtol=1e-9, atol=1e-9).all(axis=1)
        if wrong.any():
            return (
                f"{call_text}, the logits are right, but afterwards cache['{name}'][{int(np.argmax(wrong))}] is not "
                "that position's "
                f"{name[:-1]}: a step must store the key and value of every new position in the cache"
            )
    return None


def check_cached_score(fn) -> bool:
    """fn(w, cache, tokens) must give, for every way of feeding tokens, the logits of a full recompute,
    and leave the keys and values of every position seen in the cache. Calling full_recompute is refused."""
    name = "cached_score"
    reference = full_recompute  # captured: the module's name is refused while fn runs
    w = tiny_weights()
    cases = cache_cases()
    for tokens, schedule in cases:
        cache = new_cache(w)
        seen: list[int] = []  # the tokens the cache should hold now
        position = 0
        where = f"feeding {show(np.asarray(tokens))} as: {describe_feeding(schedule)}"
        for step in schedule:
            if isinstance(step, tuple):  # rollback: keep only the first `length` tokens
                cache["length"] = step[1]
                del seen[step[1] :]
                continue
            new = tokens[position : position + step]  # (step,)
            position += step
            before = len(seen)
            scored = f"position {before}" if step == 1 else f"positions {before}..{before + step - 1}"
            got, error = attempt_on(
                fn,
                (w, cache, new.copy()),
                f"{where}: in the call that scored {scored}",
                {"full_recompute": [full_recompute]},
                "the checker's cache-free reference: a cached step computes only the new positions, from the cache",
            )
            if error is not None:
                return verdict(name, error, len(cases))
            seen.extend(int(t) for t in new)
            expected = reference(w, seen)[before:]  # (step, V) the rows for the new positions
            problem = cache_step_problem(got, expected, cache, w, seen, before)
            if problem is not None:
                return verdict(name, located(problem, where), len(cases))
    return verdict(name, None, len(cases))
