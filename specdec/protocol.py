# Generated from notebooks/06_language_models.ipynb by tools/export.py: edit the notebook, not this file.
"""The interface every language model in the course follows: weights in the model, memory in a state."""

from typing import Protocol, runtime_checkable

import numpy as np

from specdec.validation import check_rollback


@runtime_checkable
class DecodingState(Protocol):
    """What a model remembers while it reads one text; made by model.start(), owned by the caller."""

    @property
    def length(self) -> int:
        """How many tokens this state has seen."""

    def rollback(self, length: int) -> None:
        """Keep only the first `length` tokens seen (0 <= length <= self.length)."""


@runtime_checkable
class LanguageModel(Protocol):
    """A next-token distribution: weights only, immutable after loading, shareable by any number of generations."""

    name: str
    vocab_size: int
    max_context: int

    def start(self) -> DecodingState:
        """A fresh decoding state that has seen nothing."""

    def score(self, tokens, state) -> np.ndarray:
        """Logits (n, V): row i is for the token after tokens[i]; the n tokens are appended to `state`."""


class TokenHistory:
    """The simplest decoding state: the list of tokens seen (all an n-gram or a small test model needs)."""

    def __init__(self):
        self.tokens: list[int] = []

    @property
    def length(self) -> int:
        return len(self.tokens)

    def rollback(self, length: int) -> None:  # keep only the first `length` tokens seen
        del self.tokens[check_rollback(length, len(self.tokens)) :]
