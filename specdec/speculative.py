# Generated from notebooks/08_greedy_speculative_decoding.ipynb by tools/export.py: edit the notebook, not this file.
"""Speculative decoding: draft gamma tokens cheaply, verify them in one target call, keep the target's distribution."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from specdec import validation
from specdec.block import block_verify_drawn
from specdec.drawing import BLOCK, draw, draw_row
from specdec.pipeline import SamplingParams, sampling_probs
from specdec.protocol import DecodingState, LanguageModel
from specdec.threads import generation_threads
from specdec.verify import verify_drawn


def draft_token(logits: np.ndarray, params: SamplingParams, rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """One sampled draft token, and the row q = sampling_probs(logits, params) it was drawn from."""
    q = sampling_probs(logits, params)  # (V,) the distribution this draft token comes from
    return int(draw(q, rng)), q


def propose(
    draft: LanguageModel, state: DecodingState, sequence: list[int], gamma: int, params, rng, min_confidence=0.0
) -> tuple[list[int], np.ndarray | None]:
    """The draft's turn: catch up on the unread end of `sequence`, then propose up to gamma (never reading the last).

    Returns the drafts and, when sampling, the rows q (g, V) of sampling_probs they were drawn from (greedy: None);
    stops early once its probability of the whole block falls below `min_confidence`.
    """
    unread = sequence[state.length :]  # what the draft has not read yet: one token, or two
    logits = validation.check_scores(draft.score(unread, state), draft, len(unread), "draft")[-1]  # (V,)
    drafts, q_rows, block = [], [], 1.0  # block: the draft's probability of all its drafts so far
    for i in range(gamma):
        if params.greedy:
            token = int(np.argmax(logits))
            if min_confidence > 0:  # softmax(logits)[token], without the whole softmax
                block /= np.exp(logits - logits[token]).sum()
        else:
            token, q = draft_token(logits, params, rng)  # q: (V,) the distribution the token comes from
            q_rows.append(q)
            block *= q[token]
        drafts.append(token)
        if i == gamma - 1 or block < min_confidence:  # nobody needs the token after the last draft
            break
        logits = validation.check_scores(draft.score([token], state), draft, 1, "draft")[0]  # (V,)
    return drafts, (np.array(q_rows) if q_rows else None)


def verify_round(
    target: LanguageModel, state: DecodingState, sequence: list[int], drafts: list[int], q, params, rng, rule="token"
) -> tuple[list[int], int]:
    """The target's turn: score the unread end of `sequence` and all drafts in ONE call, then `accept`."""
    unread = sequence[state.length :] + drafts  # the pending token and every draft
    logits = validation.check_scores(target.score(unread, state), target, len(unread), "target")  # (len(unread), V)
    return accept(logits[-(len(drafts) + 1) :], drafts, q, params, rng, rule)  # the rows after the text and drafts


def accept(logits: np.ndarray, drafts: list[int], q, params, rng, rule="token") -> tuple[list[int], int]:
    """Which drafts the target keeps, from its logits (g + 1, V) after the text and after each draft.

    Returns (the accepted drafts, then the target's correction or bonus token; n accepted). Sampled rounds are
    verified by `rule`, "token" (notebook 09) or "block" (notebook 11).
    """
    g = len(drafts)
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
    def tested(self) -> int:
        """Drafts the target tested: the accepted ones, and the first rejected one of each round."""
        return self.accepted + sum(n < g for n, g in zip(self.accepted_per_round, self.drafted_per_round, strict=True))

    @property
    def alpha(self) -> float:
        """Estimated probability that a draft is accepted, given that the drafts before it were."""
        return self.accepted / self.tested if self.tested else 0.0

    @property
    def acceptance_rate(self) -> float:
        """Fraction of drafted tokens kept (tokens after a rejection count as not kept)."""
        return self.accepted / self.drafted if self.drafted else 0.0

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


AUTO_MAX_GAMMA = 8  # gamma="auto" drafts at most this many tokens in one round ...
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
    """Generate like `generate(target, ...)`, in distribution (token for token when greedy), with fewer target calls.

    The models never change: target and draft may be the same object. The statistics count the whole last
    round, drafts after an end token included. `on_round(tokens)`, if given, gets each round's tokens (int64)
    once verified; an exception it raises stops the generation.
    """
    target, draft, prompt, max_new_tokens, params, gamma, rng, end_token, rule, on_round = validation.check_speculative(
        target, draft, prompt_tokens, max_new_tokens, params, gamma, rng, end_token, verify, on_round
    )
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
            if end_token in emitted:  # stop after the end token: drop what the round emitted after it
                emitted = emitted[: emitted.index(end_token) + 1]
            sequence += emitted
            if on_round is not None:
                on_round(np.array(emitted, dtype=np.int64))  # this round's tokens, verified
            if end_token in emitted:
                break
    stats.tokens = np.array(sequence[prompt.size :], dtype=np.int64)
    stats.seconds = time.perf_counter() - start
    return stats


draft_token_afresh = draft_token  # section 4's draft_token, kept to compare: this cell replaces `draft_token`
DRAFT_ROWS_MAX = 16_384  # distinct (settings, row) pairs remembered before the memo starts afresh
draft_rows: dict = {}  # (params, dtype, row bytes) -> (q, its running sums, q's sum): a cache


def draft_token(logits: np.ndarray, params: SamplingParams, rng: np.random.Generator) -> tuple[int, np.ndarray]:  # noqa: F811 (replaces section 4's draft_token: the same token and q, bit for bit; a test checks it)
    """Section 4's draft_token, remembered: int(draw(q, rng)) and q = sampling_probs(logits, params), bit for bit.

    Rows of at most BLOCK tokens are remembered by their bytes: q, its running sums and its sum are
    computed once per distinct row and setting, and a draw is then one uniform and a binary search.
    """
    if logits.size > BLOCK:  # wide rows: nothing remembered, draw's two-level search
        return draft_token_afresh(logits, params, rng)
    key = (params, logits.dtype.char, logits.tobytes())
    remembered = draft_rows.get(key)  # one lookup: safe while another thread clears the memo
    if remembered is None:
        q = sampling_probs(logits, params)  # (V,) float64
        q.flags.writeable = False  # shared by every round that meets this row again
        remembered = (q, np.cumsum(q), q.sum())  # what draw computes from q for one row
        if len(draft_rows) >= DRAFT_ROWS_MAX:  # bound the memory: start afresh rather than grow
            draft_rows.clear()
        draft_rows[key] = remembered
    q, cdf, total = remembered
    return int(draw_row(cdf, total, q, rng)), q
