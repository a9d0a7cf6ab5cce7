# Generated from notebooks/06_language_models.ipynb by tools/export.py: edit the notebook, not this file.
"""Autoregressive generation: one model call per new token."""

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specdec.drawing import check_rng
from specdec.logits import check_logits
from specdec.pipeline import SamplingParams, check_params, sample_token
from specdec.protocol import LanguageModel
from specdec.threads import generation_threads
from specdec.validation import as_array, check_integer, check_optional_token


@dataclass
class GenerationResult:
    """What `generate` returns: the new tokens and what producing them cost."""

    tokens: np.ndarray  # (n,) int64, the new tokens only
    target_calls: int  # model calls (the prompt counts as one)
    seconds: float  # wall-clock time of the whole generation

    @property
    def tokens_per_second(self) -> float:
        return self.tokens.size / self.seconds if self.seconds > 0 else float("inf")

    @property
    def tokens_per_call(self) -> float:
        return self.tokens.size / self.target_calls if self.target_calls else 0.0


def generate(
    model: LanguageModel,
    prompt_tokens,
    max_new_tokens: int,
    params: SamplingParams = SamplingParams(),
    rng: np.random.Generator | None = None,
    end_token: int | None = None,
    on_round: Callable[[np.ndarray], object] | None = None,
) -> GenerationResult:
    """Sample up to `max_new_tokens` tokens after the prompt, one model call per token.

    Stops early after `end_token`, if given. Temperature 0 is greedy and needs no rng.
    `on_round`, if given, is called with each new token as soon as it is drawn (an int64 array of
    one token); an exception it raises stops the generation and propagates (a server that streams
    the tokens stops this way when its client hangs up).
    """
    model = check_model(model)
    prompt = check_prompt(prompt_tokens, model)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    params = check_params(params)
    rng = check_sampling_rng(rng, params)
    end_token = check_optional_token(end_token, "end_token", model.vocab_size)
    on_round = check_on_round(on_round)
    check_room(model, prompt.size, max_new_tokens)
    start = time.perf_counter()
    new_tokens: list[int] = []
    calls = 0
    if max_new_tokens > 0:
        state = model.start()  # this generation's memory; the model itself never changes
        with generation_threads():  # the BLAS thread setting for generation (specdec.threads)
            logits, calls = check_scores(model.score(prompt, state), model, prompt.size)[-1], 1  # (V,) next token
            while True:
                token = int(sample_token(logits, params, rng))
                new_tokens.append(token)
                if on_round is not None:
                    on_round(np.array([token], dtype=np.int64))
                if len(new_tokens) == max_new_tokens or token == end_token:
                    break
                logits = check_scores(model.score([token], state), model, 1)[0]  # (V,)
                calls += 1
    return GenerationResult(np.array(new_tokens, dtype=np.int64), calls, time.perf_counter() - start)


def check_scores(logits, model, n_tokens: int, name: str = "model") -> np.ndarray:
    """What `model.score` returned for `n_tokens` tokens, checked before anything reads it.

    Logits of shape (n_tokens, vocab_size), one row per token scored and one column per token of
    the vocabulary, with no NaN or +inf and no row entirely -inf (check_logits). A model that
    returns one column too many would otherwise let a generator emit a token outside the
    vocabulary, and a NaN would make greedy decoding's argmax silently pick token 0.
    """
    arr = logits if isinstance(logits, np.ndarray) else as_array(logits, f"{name}.score's logits")
    if arr.shape != (n_tokens, model.vocab_size):
        raise ValueError(
            f"{name}.score must return logits of shape (tokens scored, vocab_size) = "
            f"({n_tokens}, {model.vocab_size}) for {model.name}, got {arr.shape}"
        )
    if arr.dtype.kind == "f":  # the hot path: one pass, then explain only if something is wrong
        # a row's max is NaN or +inf if the row holds one, -inf if it is all -inf, so the sum of the
        # rows' maxima is finite when every row is fine (a sum that overflows takes the slow path)
        if math.isfinite(arr.max(axis=-1).sum()):
            return arr
    return check_logits(arr, f"{name}.score's logits")  # integers, or a bad row: it says which


def check_on_round(on_round) -> Callable[[np.ndarray], object] | None:
    """on_round is None or a function of one argument, the new tokens of a round."""
    if on_round is not None and not callable(on_round):
        raise TypeError(f"on_round must be a function of the new tokens (an array), or None, got {on_round!r}")
    return on_round


def check_model(model, name: str = "model") -> LanguageModel:
    """Refuse anything that does not follow the LanguageModel protocol (start, score, vocab_size, max_context, name)."""
    if not isinstance(model, LanguageModel):
        raise TypeError(
            f"{name} must be a language model (start(), score(tokens, state), vocab_size, max_context, name),"
            f" got {type(model).__name__}: load one with specdec.load_model()"
        )
    return model


def check_prompt(prompt_tokens, model, name: str = "prompt_tokens") -> np.ndarray:
    """Return the prompt as an int64 array after checking it is a non-empty list of valid token ids."""
    if isinstance(prompt_tokens, str):
        raise TypeError(
            f"{name} must be token ids, got the text {prompt_tokens[:30]!r}: encode it first,"
            " for example specdec.load_tokenizer().encode(text)"
        )
    prompt = as_array(prompt_tokens, name)
    if prompt.ndim != 1 or prompt.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of token ids, got shape {prompt.shape}")
    if prompt.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer token ids, got dtype {prompt.dtype}")
    if prompt.min() < 0 or prompt.max() >= model.vocab_size:
        raise ValueError(
            f"{name} must be token ids in [0, {model.vocab_size}) for {model.name}, got {prompt.min()}..{prompt.max()}"
        )
    return prompt.astype(np.int64)


def check_max_new_tokens(max_new_tokens) -> int:
    return check_integer(max_new_tokens, "max_new_tokens", minimum=0)


def check_sampling_rng(rng, params: SamplingParams) -> np.random.Generator | None:
    """Greedy decoding draws nothing, so rng may be None; otherwise it must be a np.random.Generator."""
    if rng is None and not params.greedy:
        raise TypeError("rng must be a np.random.Generator when temperature > 0, got None")
    return None if rng is None else check_rng(rng)


def check_room(model, prompt_size: int, max_new_tokens: int) -> None:
    """Every token but the last generated one passes through the model: it must fit its context."""
    needed = prompt_size + max(0, max_new_tokens - 1)
    if needed > model.max_context:
        raise ValueError(
            f"prompt ({prompt_size} tokens) + max_new_tokens ({max_new_tokens}) needs {needed} positions, "
            f"more than {model.name}'s max_context {model.max_context}"
        )
