# Generated from notebooks/08_greedy_speculative_decoding.ipynb by tools/export.py: edit the notebook, not this file.
"""Speculative decoding: draft gamma tokens cheaply, verify them with one target call, keep the target's law."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from specdec.block import block_verify_drawn
from specdec.drawing import draw
from specdec.pipeline import SamplingParams, sampling_probs
from specdec.protocol import DecodingState, LanguageModel
from specdec.threads import generation_threads
from specdec.validation import (
    check_gamma,
    check_max_new_tokens,
    check_model,
    check_on_round,
    check_optional_token,
    check_params,
    check_prompt,
    check_room,
    check_sampling_rng,
    check_scores,
    check_verify,
)
from specdec.verify import verify_drawn


def propose(
    draft: LanguageModel,
    state: DecodingState,
    sequence: list[int],
    gamma: int,
    params: SamplingParams,
    rng: np.random.Generator | None,
    min_confidence: float = 0.0,
) -> tuple[list[int], np.ndarray | None]:
    """The draft's turn: catch up on the unread end of `sequence`, then propose up to gamma tokens.

    Returns the drafts and, when sampling, the rows q (g, V) they were drawn from:
    sampling_probs(draft logits, params), the filtered distribution. Greedy drafts are the
    draft's argmax (q is then not needed, None). The last draft is never read by the draft.
    It stops early once the draft's own probability of its whole block (the product of q(x),
    or of its softmax's top probability when greedy) falls below `min_confidence`.
    """
    unread = sequence[state.length :]  # what the draft has not read yet: one token, or two
    logits = check_scores(draft.score(unread, state), draft, len(unread), "draft")[-1]  # (V,)
    drafts, q_rows, block = [], [], 1.0  # block: the draft's probability of all its drafts so far
    for i in range(gamma):
        if params.greedy:
            token = int(np.argmax(logits))
            if min_confidence > 0:  # softmax(logits)[token], without the whole softmax
                block /= np.exp(logits - logits[token]).sum()
        else:
            q = sampling_probs(logits, params)  # (V,) the distribution this draft token comes from
            token = int(draw(q, rng))
            q_rows.append(q)
            block *= q[token]
        drafts.append(token)
        if i == gamma - 1 or block < min_confidence:  # nobody needs the token after the last draft
            break
        logits = check_scores(draft.score([token], state), draft, 1, "draft")[0]  # (V,)
    return drafts, (np.array(q_rows) if q_rows else None)


def verify_round(
    target: LanguageModel,
    state: DecodingState,
    sequence: list[int],
    drafts: list[int],
    q: np.ndarray | None,
    params: SamplingParams,
    rng: np.random.Generator | None,
    rule: str = "token",
) -> tuple[list[int], int]:
    """The target's turn: score the unread end of `sequence` and all drafts in ONE call, then accept.

    Returns (emitted tokens, n accepted): the accepted drafts and one token of the target's, the
    correction at the first rejection or the bonus token after a full accept. A sampled round is
    verified by `rule`: "token" (notebook 09, one draft at a time) or "block" (notebook 11, the
    drafts judged together); a greedy round keeps the matching drafts either way.
    """
    g = len(drafts)
    unread = sequence[state.length :] + drafts  # the pending token and every draft
    logits = check_scores(target.score(unread, state), target, len(unread), "target")[-(g + 1) :]  # (g + 1, V)
    if params.greedy:
        best = np.argmax(logits, axis=-1)  # (g + 1,) the target's choices
        n = next((i for i in range(g) if drafts[i] != best[i]), g)
        return drafts[:n] + [int(best[n])], n
    p = sampling_probs(logits, params)  # (g + 1, V)
    if g == 0:  # an ordinary decoding step
        return [int(draw(p[0], rng))], 0
    verifier = block_verify_drawn if rule == "block" else verify_drawn
    emitted, n = verifier(np.array(drafts), q, p, rng)
    return emitted.tolist(), n


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
        return self.accepted / self.tested if self.tested else 0.0

    @property
    def tested(self) -> int:
        """Draft tokens the target tested: the accepted ones, and the first rejected one of each round."""
        return self.accepted + sum(n < g for n, g in zip(self.accepted_per_round, self.drafted_per_round, strict=True))

    @property
    def tokens_per_call(self) -> float:
        return self.tokens.size / self.target_calls if self.target_calls else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.tokens.size / self.seconds if self.seconds > 0 else float("inf")

    def record_round(self, drafted: int, accepted: int) -> None:
        """Count one round: one target call, and `drafted` draft calls of which `accepted` were kept."""
        self.target_calls += 1
        if drafted > 0:
            self.draft_calls += drafted  # the catch-up call (which yields the first draft) + one per later draft
            self.drafted += drafted
            self.accepted += accepted
            self.accepted_per_round.append(accepted)
            self.drafted_per_round.append(drafted)


AUTO_MAX_GAMMA = 8  # gamma="auto" never drafts more than this in one round
AUTO_MIN_CONFIDENCE = 0.15  # ... and stops once the draft gives its block less than this probability


def speculative_generate(
    target: LanguageModel,
    draft: LanguageModel,
    prompt_tokens,
    max_new_tokens: int,
    params: SamplingParams = SamplingParams(),
    gamma: int | str = "auto",
    rng: np.random.Generator | None = None,
    end_token: int | None = None,
    verify: str = "token",
    on_round: Callable[[np.ndarray], object] | None = None,
) -> SpeculativeResult:
    """Generate like `generate(target, ...)` does, in law (and token for token when greedy), faster.

    Each round: `propose` draws gamma drafts from the draft's filtered distribution q;
    `verify_round` has the target score the token it has not read plus all drafts in ONE call and
    keeps an accepted prefix and one more token; both decoding states roll back to what was
    kept. The models are never changed (target and draft may be the same object). With an
    end token, the statistics still count drafts accepted after it in its round (the tokens
    do not). Temperature 0 accepts a draft token iff it is the target's argmax and needs no rng.
    gamma="auto" drafts up to AUTO_MAX_GAMMA tokens and stops when the draft is unsure (`propose`).
    verify="block" verifies each sampled round as a whole (notebook 11): exact too, and never fewer
    tokens per call on average; greedy rounds are the same either way. `on_round`, if given, is
    called after every round with the tokens it added (an int64 array, the end token last if it
    came), as soon as they are verified; an exception it raises stops the generation and propagates.
    """
    target, draft = check_model(target, "target"), check_model(draft, "draft")
    if target.vocab_size != draft.vocab_size:
        raise ValueError(
            f"target and draft must share a vocabulary: vocab_size {target.vocab_size} vs {draft.vocab_size}"
        )
    prompt = check_prompt(prompt_tokens, target)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    params = check_params(params)
    gamma = check_gamma(gamma)
    rng = check_sampling_rng(rng, params)
    end_token = check_optional_token(end_token, "end_token", target.vocab_size)
    rule = check_verify(verify)
    on_round = check_on_round(on_round)
    check_room(target, prompt.size, max_new_tokens)
    check_room(draft, prompt.size, max_new_tokens)
    most, confidence = (AUTO_MAX_GAMMA, AUTO_MIN_CONFIDENCE) if gamma == "auto" else (gamma, 0.0)
    start = time.perf_counter()
    sequence = prompt.tolist()  # prompt + everything emitted so far
    target_state, draft_state = target.start(), draft.start()  # this generation's memory, one per role
    stats = SpeculativeResult(np.zeros(0, dtype=np.int64), 0, 0, 0, 0, 0.0)
    with generation_threads():  # the BLAS setting for generation, as in plain `generate`
        while len(sequence) - prompt.size < max_new_tokens:
            g = min(most, max_new_tokens - (len(sequence) - prompt.size) - 1)  # never draft past the end
            drafts, q = propose(draft, draft_state, sequence, g, params, rng, confidence) if g > 0 else ([], None)
            emitted, n = verify_round(target, target_state, sequence, drafts, q, params, rng, rule)
            stats.record_round(len(drafts), n)
            kept = len(sequence) + n  # tokens both states may keep: the sequence and the accepted drafts
            target_state.rollback(kept)
            draft_state.rollback(min(draft_state.length, kept))  # the draft never read its last draft
            before = len(sequence)
            sequence += emitted
            ended = end_token is not None and end_token in emitted
            if ended:
                del sequence[sequence.index(end_token, before) + 1 :]
            if on_round is not None:
                on_round(np.array(sequence[before:], dtype=np.int64))  # this round's tokens, verified
            if ended:
                break
    stats.tokens = np.array(sequence[prompt.size :], dtype=np.int64)
    stats.seconds = time.perf_counter() - start
    return stats
