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

from checkers import attempt, located, namesakes, narrower_float, result_problem, show, verdict
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
    return None, located(outcome.failure, where)  # `where` replaces an exception's raw input


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
    # Many float32 entries: their mean taken in float32 (the input's dtype) is off by 7e-8, relatively.
    rng_many = np.random.default_rng(65)
    many = np.log(rng_many.dirichlet(np.ones(98), size=4096)[np.arange(4096), rng_many.integers(0, 98, 4096)])
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
        (np.array([-800.0, -1.0]),),  # a probability of e^-800 underflows to 0 if you exponentiate first
        (np.array([-100.0, -100.0], dtype=np.float32),),  # float32 in: 2 ** 144.3 overflows unless computed in float64
        (np.log(np.array([0.5, 0.25], dtype=np.float32)),),  # float32 log-probabilities
        (many.astype(np.float32),),  # (4096,) float32: a mean taken in float32 shows here
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


def same_number(got, expected: float, rel_tol: float = 1e-6) -> bool:
    try:
        got = float(got)
    except (TypeError, ValueError):
        return False
    if math.isinf(expected):
        return got == expected
    return math.isclose(got, expected, rel_tol=rel_tol, abs_tol=1e-9)


def float32_rounding(got, exact: float) -> float | None:
    """The relative error of a number that is right only to about float32's 7 digits, else None.

    float64 arithmetic errs by about 1e-16 here; float32 arithmetic (a float32 input kept as float32, or
    np.asarray(..., dtype=np.float32)) by about 1e-7, however the result is returned.
    """
    try:
        got = float(got)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(got) and math.isfinite(exact)) or exact == 0:
        return None
    error = abs(got - exact) / abs(exact)
    return error if 1e-12 < error <= 1e-5 else None


def bits_diagnosis(got, log_probs) -> str | None:
    """What a wrong number of bits is, when it is a well-known slip."""
    log_probs = np.asarray(log_probs, dtype=np.float64)
    nats = float(-log_probs.mean())
    slips = [
        (nats, "your bits are the mean of -ln p, in nats: divide by ln 2 for bits"),
        (nats * math.log(2), "your bits are the nats multiplied by ln 2: divide by it instead"),
        (nats / math.log(10), "your bits are the mean of -log10 p: bits are base-2 logarithms"),
        (
            float(-log_probs.sum() / math.log(2)),
            "your bits are the total over every token: the bits per token are a mean",
        ),
    ]
    mean_probability = float(np.exp(log_probs).mean())
    if mean_probability > 0:
        slips.append(
            (-math.log2(mean_probability), "your bits are -log2 of the mean probability: average the log-probabilities")
        )
    for value, what in slips:
        if same_number(got, value) and not math.isinf(value):
            return what
    return None


def power(base: float, exponent: float) -> float:
    """base ** exponent as a float, inf where Python's float power would raise OverflowError."""
    try:
        return base**exponent
    except OverflowError:
        return math.inf


CONVERT = "compute in float64, as asked: np.asarray(log_probs, dtype=np.float64) converts the input"


def perplexity_overflow(got_perplexity, perplexity: float, expected: str) -> str | None:
    """The message for a float32 (or float16) perplexity that overflowed where float64's does not, else None."""
    low = narrower_float(got_perplexity)
    if low and perplexity > float(np.finfo(low).max):
        largest = float(np.finfo(low).max)
        return f"your function computes in {low}, which overflows above {largest:.2g}: {expected}; {CONVERT}"
    return None


def float32_message(got_bits, bits: float, rounding: float, consequence: str) -> str:
    """Bits right to float32's 7 digits only: the cause, then what it did (`consequence`)."""
    low = narrower_float(got_bits)
    returned = f" (returned as {low})" if low else ""
    return (
        f"your function computes in float32 arithmetic: its bits per token{returned}, {float(got_bits)!r},"
        f" match {bits!r} to float32's 7 digits only (a relative error of {rounding:.0e}; float64 arithmetic"
        f" errs by about 1e-16){consequence}; {CONVERT}"
    )


def bits_problem(got, log_probs) -> str | None:
    """What is wrong with a pair (bits, perplexity), the cause first: float32 arithmetic, a known slip, or the value."""
    bits, perplexity = reference_bits_and_perplexity(log_probs)
    got_bits, got_perplexity = got
    if np.ndim(got_bits) > 0:  # mean(axis=-1) and the like: one figure per row
        return (
            f"your function returned bits of shape {np.shape(got_bits)} where one number is asked: average over every"
            f" entry (np.mean with no axis): expected {number(bits)} bits per token, got {show(got_bits)}"
        )
    expected_bits = f"expected {number(bits)} bits per token, got {number(got_bits)}"
    # A float32 input averaged in float32 is right to about 1e-8 only: float64, as asked, errs by about 1e-16.
    float32_input = isinstance(log_probs, np.ndarray) and log_probs.dtype != np.float64
    if not same_number(got_bits, bits, rel_tol=1e-9 if float32_input else 1e-6):
        expected = f"expected perplexity {number(perplexity)} = 2 ** bits, got {number(got_perplexity)}"
        overflowed = perplexity_overflow(got_perplexity, perplexity, expected)
        if overflowed:
            return overflowed
        rounding = float32_rounding(got_bits, bits)
        if rounding is not None:  # the two values are in the message, to their last digit
            averages = " (np.mean of a float32 array averages in float32)" if float32_input else ""
            return float32_message(got_bits, bits, rounding, averages)
        low = narrower_float(got_bits)
        if low and math.isclose(float(got_bits), bits, rel_tol=2e-3):
            return (
                f"your function returned {low} bits, right only to {low} precision: {expected_bits}; float64 is"
                " asked, and np.asarray(log_probs, dtype=np.float64) converts the input"
            )
        slip = bits_diagnosis(got_bits, log_probs)
        return f"{slip}: {expected_bits}" if slip else f"wrong bits per token: {expected_bits}"
    if same_number(got_perplexity, perplexity):
        return None
    expected = f"expected perplexity {number(perplexity)} = 2 ** bits, got {number(got_perplexity)}"
    overflowed = perplexity_overflow(
        got_perplexity, perplexity, expected
    )  # a float32 perplexity overflows where float64's does not
    if overflowed:
        return overflowed
    rounding = float32_rounding(got_bits, bits)
    if rounding is not None and same_number(got_perplexity, power(2.0, float(got_bits))):
        return float32_message(got_bits, bits, rounding, f", and 2 ** bits magnifies that rounding error: {expected}")
    slips = [
        (power(math.e, float(got_bits)), "your perplexity is e ** bits: it is 2 ** bits"),
        (
            power(2.0, float(got_bits) * math.log(2)),
            "your perplexity is 2 to the nats (the mean of -ln p): raise 2 to the bits",
        ),
    ]
    slip = next((what for value, what in slips if same_number(got_perplexity, value)), None)
    return (
        f"{slip}: {expected}" if slip else f"the bits are right ({number(bits)}), but the perplexity is not: {expected}"
    )


def check_bits_and_perplexity(fn) -> bool:
    """fn(log_probs) must return (mean -log2 p, 2 ** that) for natural-log probabilities of any shape."""
    name = "bits_and_perplexity"
    cases = bits_cases()
    for (log_probs,) in cases:
        array = np.asarray(log_probs)
        plain = array.ndim == 1 and array.dtype == np.float64
        where = f"log_probs {show(log_probs)}" + ("" if plain else f", {array.dtype}, shape {array.shape}")
        in_place = "compute on a copy (log_probs / ... makes a new array, /= does not)"
        got, error = attempt_on(fn, (log_probs,), where, in_place=in_place)
        if error is None and not (isinstance(got, tuple | list) and len(got) == 2):
            error = located(f"your function returned {show(got)} where a pair (bits, perplexity) is asked", where)
        if error is None:
            problem = bits_problem(got, log_probs)
            error = None if problem is None else located(problem, where)
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


def tokens_problem(got, expected: list[int], n_new: int, drawn: bool) -> str | None:
    """What is wrong with the learner's tokens, said first (None when they are generate's)."""
    got_list = token_list(got)
    if got_list == expected:
        return None
    values = f"expected the tokens {expected}, got {show(got)}"
    if got_list is None:
        return f"your function returned {show(got)} where a list of integer token ids is asked: expected {expected}"
    if len(got_list) < len(expected) and got_list and got_list[-1] == 0:
        return f"your tokens stop after token 0, but this exercise has no end token: return max_new_tokens; {values}"
    if len(got_list) != len(expected):
        count = f"{len(got_list)} token{'' if len(got_list) == 1 else 's'}"
        return f"your function returned {count} where max_new_tokens is {n_new}: {values}"
    how = " (each drawn with sample_token(logits, params, rng), from the last row of logits)" if drawn else ""
    return f"wrong tokens{how}: {values}"


def first_token_from_row_zero(prompt, n_new: int, params, seed: int | None) -> list[int]:
    """The tokens of a loop that draws the first new token from row 0 of the prompt's logits, not row -1."""
    from specdec.pipeline import sample_token  # here: importing ex06 must not need the pipeline

    model, rng = CountingModel(), None if seed is None else np.random.default_rng(seed)
    state, tokens = model.start(), []
    logits = model.score(np.asarray(prompt, dtype=np.int64), state)[0]  # (V,) after the prompt's first token
    while len(tokens) < n_new:
        tokens.append(int(sample_token(logits, params, rng)))
        if len(tokens) < n_new:
            logits = model.score([tokens[-1]], state)[0]  # (V,)
    return tokens


ROW_ZERO = (
    "the first new token must come from the last row of the prompt's logits ([-1]): row 0 is the distribution"
    " after the prompt's first token"
)


def check_generate_tokens(fn) -> bool:
    """fn(model, prompt_tokens, max_new_tokens, params, rng) must return the tokens `generate` would,
    with one call for the prompt and one per new token but the last, scoring each position once.
    Calling `generate` itself (specdec's, or the notebook's) is refused."""
    from specdec import generation  # here: importing ex06 must not need the pipeline

    name = "generate_tokens"
    cases = generate_cases()
    refused = namesakes(fn, ("generate",), generation)  # the package's, the notebook's, any alias
    why = "the loop this exercise asks you to write yourself"
    in_place = "the prompt is the caller's; collect the new tokens in a list of your own"
    for prompt, n_new, params, seed in cases:
        shown = f"np.array({prompt.tolist()})" if isinstance(prompt, np.ndarray) else str(prompt)
        rng_text = "rng None" if seed is None else f"rng np.random.default_rng({seed})"
        where = f"prompt_tokens {shown}, max_new_tokens {n_new}, {params}, {rng_text}"
        model = CountingModel()
        rng = None if seed is None else np.random.default_rng(seed)
        must_draw = rng is not None and params.temperature > 0 and n_new > 0
        got, error = attempt_on(fn, (model, prompt, n_new, params, rng), where, refused, why, in_place, must_draw)
        if error is not None:
            return verdict(name, error, len(cases))
        reference_model = CountingModel()
        reference = generation.generate(
            reference_model, prompt, n_new, params, None if seed is None else np.random.default_rng(seed)
        )
        expected = reference.tokens.tolist()
        problem = tokens_problem(got, expected, n_new, drawn=seed is not None)
        if (
            problem is not None
            and len(prompt) > 1
            and token_list(got) == first_token_from_row_zero(prompt, n_new, params, seed)
        ):
            problem = f"{ROW_ZERO}; expected the tokens {expected}, got {show(got)}"
        if problem is None and model.calls != reference_model.calls:
            problem = (
                f"the right tokens, but {model.calls} model call{'' if model.calls == 1 else 's'} where"
                f" {reference_model.calls} suffice: the prompt in one call, then one call per new token except the"
                " last (nothing comes after it)"
            )
        if problem is None and (model.positions != reference_model.positions or model.states > 1):
            problem = (
                f"the right tokens, but the model scored {model.positions} positions with {model.states} state(s)"
                f" where {reference_model.positions} with one state suffice: keep one decoding state and feed it"
                " only the new token"
            )
        if problem is not None:
            return verdict(name, located(problem, where), len(cases))
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
        where = f"tokens {described(tokens)}, vocab_size {vocab_size}"
        got, error = attempt_on(fn, (tokens, vocab_size), where)
        if error is None:
            error = bigram_problem(fn, got, tokens, vocab_size)
            error = None if error is None else located(error, where)
        if error is not None:
            return verdict(name, error, len(cases))
    return verdict(name, None, len(cases))


def distinct_pairs_table(tokens, vocab_size: int) -> np.ndarray:
    """The table of counts[a, b] += 1 with fancy indexing: each distinct pair counted once, add-one smoothed."""
    tokens = np.asarray(tokens, dtype=np.int64)  # (n,)
    seen = np.zeros((vocab_size, vocab_size))  # (V, V)
    seen[tokens[:-1], tokens[1:]] = 1
    return (seen + 1) / (seen + 1).sum(axis=1, keepdims=True)


def named_slip(got: np.ndarray, expected: np.ndarray, tokens, vocab_size: int) -> str | None:
    """The cause of a wrong table, when it is one of the slips learners were seen to make (else None)."""

    def same(table) -> bool:
        return table.shape == got.shape and bool(np.allclose(got, table, rtol=1e-9, atol=1e-12))

    if same(distinct_pairs_table(tokens, vocab_size)):
        return (
            "a pair that occurs more than once was counted once: fancy-indexed += adds 1 per distinct index;"
            " use np.add.at or np.bincount"
        )
    if same(expected.T):
        return "your table is transposed: row a is the token before (P[a, b] = P(next b | previous a))"
    if np.allclose(got.sum(axis=0), 1) and not np.allclose(got.sum(axis=1), 1):
        return "your columns sum to 1, not your rows: row a is the distribution of the token after a (axis=1)"
    return None


def bigram_problem(fn, got, tokens, vocab_size: int) -> str | None:
    """What is wrong with one answer of bigram_probs, in words, the cause first (None when it is right)."""
    expected = reference_bigram_probs(tokens, vocab_size)
    kind = result_problem(got, expected, "probabilities", shape=False)  # a list, a dtype: said first
    if kind is not None:
        return kind
    got_array = np.asarray(got)
    if got_array.shape != expected.shape:
        return f"your function returned shape {got_array.shape} where {expected.shape} is asked"
    close = np.isclose(got_array, expected, rtol=1e-9, atol=1e-12)  # (V, V)
    if close.all():
        return None
    overflow = wraps_around(fn, tokens, vocab_size, expected)
    if overflow:
        return overflow
    a = int(np.flatnonzero(~close.all(axis=1))[0])
    b = int(np.flatnonzero(~close[a])[0])
    total = float(np.sum(got_array[a]))
    what = named_slip(got_array, expected, tokens, vocab_size)
    if what is None and abs(total - 1) > 1e-9:
        what = f"row {a} of your table sums to {total:.6g}, not 1"
        if a == int(np.asarray(tokens)[-1]):
            what += f" (token {a} is the last token: its row counts only tokens that have a follower, tokens[:-1])"
    what = what or "a wrong probability"
    return (
        f"{what}: P[{a}, {b}] (token {b} after token {a}) expected {expected[a, b]:.6g}, got"
        f" {float(got_array[a, b]):.6g}; row {a} expected {show(expected[a])}, got {show(got_array[a])}"
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
    """What is wrong with one call's result (logits for positions before..len(seen)-1) and the cache after it,
    the diagnosis first and the call it happened in after."""
    step = len(seen) - before
    scored = f"position {before}" if step == 1 else f"positions {before}..{before + step - 1}"
    cached = f"{before} token{'' if before == 1 else 's'} already cached"
    call_text = f"in the call that scored {scored} ({cached})"
    kind = result_problem(got, expected, "logits", shape=False)  # a list, a dtype: said first
    if kind is not None:
        return f"{kind}, {call_text}"
    got = np.asarray(got)
    if got.shape != expected.shape:
        return (
            f"your function returned logits of shape {got.shape} where {expected.shape} is asked (one row per new"
            f" token), {call_text}"
        )
    close = np.isclose(got, expected, rtol=1e-9, atol=1e-9).all(axis=1)  # (step,)
    if not close.all():
        row = int(np.argmin(close))
        if np.isnan(got[row]).any():
            what = "contains NaN (was every score of that row -inf? a position may always see itself)"
        else:
            what = f"differs from a full recompute by up to {float(np.abs(got[row] - expected[row]).max()):.3g}"
        return f"row {row} (position {before + row}) {what}, {call_text}"
    if cache.get("length") != len(seen):
        return f"cache['length'] is {show(cache.get('length'))} after scoring {len(seen)} tokens, not {len(seen)}"
    keys, values = cached_keys_and_values(w, seen)  # (len(seen), d) each
    for name, want in (("keys", keys), ("values", values)):
        held = np.asarray(cache[name])[: len(seen)]
        wrong = ~np.isclose(held, want, rtol=1e-9, atol=1e-9).all(axis=1)
        if wrong.any():
            return (
                f"the logits are right, but afterwards cache['{name}'][{int(np.argmax(wrong))}] is not that"
                f" position's {name[:-1]}: a step must store the key and value of every new position in the cache,"
                f" {call_text}"
            )
    return None


def check_cached_score(fn) -> bool:
    """fn(w, cache, tokens) must give, for every way of feeding tokens, the logits of a full recompute,
    and leave the keys and values of every position seen in the cache. Calling full_recompute is refused."""
    name = "cached_score"
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
                (w, cache, new),
                f"{where}: in the call that scored {scored}",
                {"full_recompute": [full_recompute]},
                "the checker's cache-free reference: a cached step computes only the new positions, from the cache",
            )
            if error is not None:
                return verdict(name, error, len(cases))
            seen.extend(int(t) for t in new)
            expected = full_recompute(w, seen)[before:]  # (step, V) the rows for the new positions
            problem = cache_step_problem(got, expected, cache, w, seen, before)
            if problem is not None:
                return verdict(name, located(problem, where), len(cases))
    return verdict(name, None, len(cases))
