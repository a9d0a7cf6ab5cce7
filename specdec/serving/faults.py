"""Fault injection: a language model whose forward pass fails now and then, as a real one may.

`FlakyModel` wraps a model and raises `TransientError` on a seeded fraction of `score` calls.
A failure "mid-forward" first scores part of the tokens (so part of the decoding state has
been written, as when a KV cache is half filled) and then raises. Whether a call fails comes
from the wrapper's own generator, never from the generation's: fault injection must not
change what the sampler draws. numpy only.
"""

from collections.abc import Callable

import numpy as np

from specdec.protocol import LanguageModel


class TransientError(RuntimeError):
    """A failure worth retrying: the same call may well succeed a moment later."""


class FlakyModel:
    """A LanguageModel that fails on a fraction of its `score` calls.

    failure_rate: probability that a call fails, or a function `failure_rate(tokens) -> float` of
    the tokens being scored (a failure whose chance depends on the drafted tokens).
    mid_forward: probability that a failing call first scores a non-empty prefix of its tokens
    (writing part of the state) before raising. rng: the generator deciding failures.
    The model itself holds no decoding state; `calls` and `failures` count what happened.
    """

    def __init__(
        self,
        model: LanguageModel,
        failure_rate: float | Callable[[np.ndarray], float],
        rng: np.random.Generator,
        mid_forward: float = 0.5,
    ):
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a np.random.Generator, got {type(rng).__name__}")
        if not callable(failure_rate) and not 0 <= failure_rate <= 1:
            raise ValueError(f"failure_rate must be in [0, 1] or a function of the tokens, got {failure_rate!r}")
        if not 0 <= mid_forward <= 1:
            raise ValueError(f"mid_forward must be in [0, 1], got {mid_forward!r}")
        self.model, self.failure_rate, self.rng, self.mid_forward = model, failure_rate, rng, mid_forward
        self.name, self.vocab_size, self.max_context = f"flaky {model.name}", model.vocab_size, model.max_context
        self.calls = self.failures = self.partial_writes = 0

    def start(self):
        return self.model.start()

    def score(self, tokens, state) -> np.ndarray:
        self.calls += 1
        tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)  # (n,)
        rate = self.failure_rate(tokens) if callable(self.failure_rate) else self.failure_rate
        if self.rng.random() < rate:
            self.failures += 1
            if self.rng.random() < self.mid_forward:  # write part of the state, then fail
                self.partial_writes += 1
                self.model.score(tokens[: int(self.rng.integers(1, tokens.size + 1))], state)
            raise TransientError(f"{self.model.name}: transient failure in forward pass (injected, call {self.calls})")
        return self.model.score(tokens, state)


class BrokenModel:
    """A LanguageModel whose every `score` raises `error` (a non-transient failure, for tests)."""

    def __init__(self, model: LanguageModel, error: Exception):
        self.model, self.error = model, error
        self.name, self.vocab_size, self.max_context = f"broken {model.name}", model.vocab_size, model.max_context
        self.calls = 0

    def start(self):
        return self.model.start()

    def score(self, tokens, state) -> np.ndarray:
        self.calls += 1
        raise self.error
