# Generated from notebooks/06_language_models.ipynb by tools/export.py: edit the notebook, not this file.
"""The interface every language model in the course follows: weights in the model, memory in a state."""

from typing import Protocol, runtime_checkable

import numpy as np

from specdec.validation import as_array, check_integer


@runtime_checkable
class DecodingState(Protocol):
    """What a model remembers while it reads one text; made by model.start(), owned by the caller."""

    @property
    def length(self) -> int:
        """How many tokens this state has seen."""
        ...

    def rollback(self, length: int) -> None:
        """Keep only the first `length` tokens seen (0 <= length <= self.length)."""
        ...


@runtime_checkable
class LanguageModel(Protocol):
    """A next-token distribution: weights only, immutable after loading, shareable by any number of generations."""

    name: str
    vocab_size: int
    max_context: int

    def start(self) -> DecodingState:
        """A fresh decoding state that has seen nothing."""
        ...

    def score(self, tokens, state) -> np.ndarray:
        """Logits (n, V): row i is for the token after tokens[i]; the n tokens are appended to `state`."""
        ...


def check_new_tokens(tokens, vocab_size: int) -> np.ndarray:
    """The tokens to score as a 1-D int64 array, after checking there is at least one and each is in [0, V)."""
    array = as_array(tokens, "tokens")
    if array.size == 0:
        raise ValueError("score needs at least one token")
    if array.dtype.kind not in "iu":
        raise TypeError(f"tokens must be integer token ids, got dtype {array.dtype}")
    array = array.astype(np.int64, copy=False).reshape(-1)  # (n,)
    if array.min() < 0 or array.max() >= vocab_size:
        raise ValueError(f"token ids must be in [0, {vocab_size}), got {array.min()}..{array.max()}")
    return array


def check_rollback(length, seen: int) -> int:
    """The length to roll back to, after checking 0 <= length <= seen: a rollback can only forget."""
    return check_integer(length, f"rollback length (tokens seen: {seen})", 0, seen)


class TokenHistory:
    """The simplest decoding state: the list of tokens seen (all an n-gram or a small test model needs)."""

    def __init__(self):
        self.tokens: list[int] = []

    @property
    def length(self) -> int:
        return len(self.tokens)

    def rollback(self, length: int) -> None:
        """Keep only the first `length` tokens seen."""
        del self.tokens[check_rollback(length, len(self.tokens)) :]
