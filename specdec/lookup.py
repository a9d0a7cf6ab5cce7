# Generated from notebooks/10_how_much_faster.ipynb by tools/export.py: edit the notebook, not this file.
"""Prompt-lookup drafting: propose what followed the end of the text the last time it appeared (notebook 10)."""

import numpy as np

from specdec.logits import log_softmax
from specdec.protocol import DecodingState, LanguageModel
from specdec.validation import check_integer, check_new_tokens, check_real, check_rollback


class LookupState:
    """A PromptLookupDraft's decoding state: the tokens seen, where each short run ended, the fallback's state."""

    def __init__(self, fallback_state: DecodingState, min_match: int):
        self.tokens: list[int] = []
        self.ends: dict[tuple, list[int]] = {}  # the last min_match tokens -> positions where that run ended
        self.fallback = fallback_state
        self.min_match = min_match

    @property
    def length(self) -> int:
        return len(self.tokens)

    def rollback(self, length: int) -> None:
        """Keep the first `length` tokens: forget them from the index too (newest first), and roll the fallback back."""
        length = check_rollback(length, self.length)
        m = self.min_match
        # Indexed are the runs ending at m - 1 .. length - 2 (each has a follower); those whose follower goes must go.
        for end in range(len(self.tokens) - 2, max(length - 1, m - 1) - 1, -1):
            self.ends[tuple(self.tokens[end - m + 1 : end + 1])].pop()  # it is the newest entry of its list
        del self.tokens[length:]
        self.fallback.rollback(min(length, self.fallback.length))


class PromptLookupDraft:
    """A draft that copies from the text itself, mixed with a fallback model.

    After each token it looks for the most recent earlier place where the last `min_match` or
    more tokens appeared (preferring the longest match, up to `max_match`) and proposes the
    token that followed there. Its distribution is copy_weight on that token plus
    (1 - copy_weight) times the fallback's distribution; with no match, the fallback's alone.
    A draft is only a proposal: whatever it proposes, verification keeps the target's law, as
    long as q is the distribution the draft token was drawn from, which it is here.
    """

    def __init__(
        self,
        fallback: LanguageModel,
        min_match: int = 3,
        max_match: int = 8,
        copy_weight: float = 0.5,
        candidates: int = 8,
        name: str = "lookup",
    ):
        self.fallback = fallback
        self.min_match = check_integer(min_match, "min_match", minimum=1)
        self.max_match = check_integer(max_match, "max_match", minimum=self.min_match)
        self.copy_weight = check_real(copy_weight, "copy_weight", 0, 1)
        self.candidates = check_integer(candidates, "candidates", minimum=1)
        self.vocab_size, self.max_context, self.name = fallback.vocab_size, fallback.max_context, name

    def start(self) -> LookupState:
        return LookupState(self.fallback.start(), self.min_match)

    def continuation(self, state: LookupState) -> int | None:
        """The token that followed the best earlier match of the text's end, or None."""
        tokens, m = state.tokens, self.min_match
        if len(tokens) < m + 1:
            return None
        ends = state.ends.get(tuple(tokens[-m:]))
        if not ends:
            return None
        now = len(tokens) - 1
        best, best_length = None, 0
        for end in reversed(ends[-self.candidates :]):  # the most recent first
            length = m
            while length < self.max_match and end - length >= 0 and tokens[end - length] == tokens[now - length]:
                length += 1
            if length > best_length:
                best, best_length = end, length
        return tokens[best + 1]

    def score(self, tokens, state: LookupState) -> np.ndarray:
        """Feed new tokens; return log q(next) after each, (n, V)."""
        if not isinstance(state, LookupState):
            raise TypeError(f"state must be a LookupState from this model's start(), got {type(state).__name__}")
        tokens = check_new_tokens(tokens, self.vocab_size)  # (n,)
        fallback = log_softmax(self.fallback.score(tokens, state.fallback))  # (n, V) normalised
        rows = []
        m = self.min_match
        for i, token in enumerate(tokens.tolist()):
            seen = state.tokens
            if len(seen) >= m:  # index the run that ends at the previous token, now that it has a follower
                state.ends.setdefault(tuple(seen[-m:]), []).append(len(seen) - 1)
            seen.append(token)
            copy = self.continuation(state)
            if copy is None:
                rows.append(fallback[i])
            else:
                probs = (1 - self.copy_weight) * np.exp(fallback[i])  # (V,)
                probs[copy] += self.copy_weight
                with np.errstate(divide="ignore"):
                    rows.append(np.log(probs))
        return np.array(rows)  # (n, V)
