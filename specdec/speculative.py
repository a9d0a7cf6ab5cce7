# Generated from notebooks/08_greedy_speculative_decoding.ipynb by tools/export.py: edit the notebook, not this file.
"""Speculative decoding: draft gamma tokens cheaply, verify them with one target call, keep the target's law."""

import operator
import time
from dataclasses import dataclass, field

import numpy as np

from specdec.drawing import check_rng, draw
from specdec.generation import check_max_new_tokens, check_prompt, check_room
from specdec.pipeline import SamplingParams, check_params, sampling_probs
from specdec.verify import verify_drawn


@dataclass
class SpeculativeResult:
    """What `speculative_generate` returns: the new tokens and what producing them cost."""

    tokens: np.ndarray  # (n,) int64, the new tokens only
    target_calls: int  # rounds: each scores the pending token and the drafts in one call
    draft_calls: int
    drafted: int  # draft tokens proposed
    accepted: int  # draft tokens accepted
    seconds: float
    accepted_per_round: list = field(default_factory=list)  # n_accepted of each round with gamma > 0
    drafted_per_round: list = field(default_factory=list)  # gamma of each round (smaller near the end)

    @property
    def acceptance_rate(self) -> float:
        """Fraction of drafted tokens kept (tokens after a rejection count as not kept)."""
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def alpha(self) -> float:
        """Estimated probability that a draft token is accepted, given the ones before it were.

        Only tokens that were actually tested count: every accepted one, and one rejected
        token in each round that did not accept all of its drafts.
        """
        rejected = sum(n < g for n, g in zip(self.accepted_per_round, self.drafted_per_round, strict=True))
        tested = self.accepted + rejected
        return self.accepted / tested if tested else 0.0

    @property
    def tokens_per_call(self) -> float:
        return self.tokens.size / self.target_calls if self.target_calls else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.tokens.size / self.seconds if self.seconds > 0 else float("inf")


def check_gamma(gamma) -> int:
    if isinstance(gamma, (bool, np.bool_)):
        raise TypeError(f"gamma must be an integer >= 1, got {gamma!r}")
    try:
        gamma = operator.index(gamma)
    except TypeError:
        raise TypeError(f"gamma must be an integer >= 1, got {gamma!r}") from None
    if gamma < 1:
        raise ValueError(f"gamma must be an integer >= 1, got {gamma}")
    return gamma


def speculative_generate(
    target,
    draft,
    prompt_tokens,
    max_new_tokens: int,
    params: SamplingParams = SamplingParams(),
    gamma: int = 4,
    rng: np.random.Generator | None = None,
    end_token: int | None = None,
) -> SpeculativeResult:
    """Generate like `generate(target, ...)` does, in law (and token for token when greedy), faster.

    Each round: the draft proposes gamma tokens, each drawn from sampling_probs(draft logits,
    params); the target scores the token it has not seen yet plus all drafts in ONE call,
    giving gamma + 1 distributions p; verify_drawn (speculative_verify without its checks) keeps
    an accepted prefix and one more token; both models roll back to what was kept. With an
    end token, the statistics still count drafts accepted after it in its round (the tokens
    do not). Temperature 0 accepts a draft token
    iff it is the target's argmax and needs no rng.
    """
    if target.vocab_size != draft.vocab_size:
        raise ValueError(
            f"target and draft must share a vocabulary: vocab_size {target.vocab_size} vs {draft.vocab_size}"
        )
    prompt = check_prompt(prompt_tokens, target)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    params = check_params(params)
    gamma = check_gamma(gamma)
    if rng is None and not params.greedy:
        raise TypeError("rng must be a np.random.Generator when temperature > 0, got None")
    if rng is not None:
        check_rng(rng)
    check_room(target, prompt.size, max_new_tokens)
    check_room(draft, prompt.size, max_new_tokens)
    start = time.perf_counter()
    sequence = prompt.tolist()  # prompt + everything emitted so far
    target.reset()
    draft.reset()
    stats = SpeculativeResult(np.zeros(0, dtype=np.int64), 0, 0, 0, 0, 0.0)
    while len(sequence) - prompt.size < max_new_tokens:
        remaining = max_new_tokens - (len(sequence) - prompt.size)
        g = min(gamma, remaining - 1)  # never draft past max_new_tokens
        drafts, q_rows = [], []
        if g > 0:  # the draft catches up on what it has not seen, then proposes g tokens
            logits = draft.score(sequence[draft.length :])[-1]  # (V,)
            stats.draft_calls += 1
            for i in range(g):
                if params.greedy:
                    token = int(np.argmax(logits))
                else:
                    q = sampling_probs(logits, params)  # (V,) the distribution the draft token comes from
                    token = int(draw(q, rng))
                    q_rows.append(q)
                drafts.append(token)
                if i < g - 1:
                    logits = draft.score([token])[0]
                    stats.draft_calls += 1
        base = target.length
        target_logits = target.score(sequence[base:] + drafts)[-(g + 1) :]  # (g + 1, V) one call
        stats.target_calls += 1
        if params.greedy:
            best = np.argmax(target_logits, axis=-1)  # (g + 1,) the target's choices
            n = next((i for i in range(g) if drafts[i] != best[i]), g)
            emitted = drafts[:n] + [int(best[n])]
        else:
            p = sampling_probs(target_logits, params)  # (g + 1, V)
            if g == 0:
                emitted, n = [int(draw(p[0], rng))], 0
            else:
                emitted, n = verify_drawn(np.array(drafts), np.array(q_rows), p, rng)
                emitted = emitted.tolist()
        if g > 0:
            stats.drafted += g
            stats.accepted += n
            stats.accepted_per_round.append(n)
            stats.drafted_per_round.append(g)
        kept = len(sequence) + n  # tokens both models may keep: the sequence and the accepted drafts
        target.rollback(kept)
        draft.rollback(min(draft.length, kept))
        sequence += emitted
        if end_token is not None and end_token in emitted:
            del sequence[sequence.index(end_token, len(sequence) - len(emitted)) + 1 :]
            break
    stats.tokens = np.array(sequence[prompt.size :], dtype=np.int64)
    stats.seconds = time.perf_counter() - start
    return stats
