# Generated from notebooks/06_language_models.ipynb by tools/export.py: edit the notebook, not this file.
"""Autoregressive generation: one model call per new token."""

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specdec.pipeline import SamplingParams, sample_token
from specdec.protocol import LanguageModel
from specdec.threads import generation_threads
from specdec.validation import check_generate, check_scores


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

    Stops early after `end_token`, if given; temperature 0 is greedy and needs no rng. `on_round`, if given, gets
    each new token as soon as it is drawn (an int64 array of one token); an exception it raises stops the generation.
    """
    model, prompt, max_new_tokens, params, rng, end_token, on_round = check_generate(
        model, prompt_tokens, max_new_tokens, params, rng, end_token, on_round
    )
    start, new_tokens, calls = time.perf_counter(), [], 0
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
