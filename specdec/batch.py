# Generated from notebooks/12_many_requests.ipynb by tools/export.py: edit the notebook, not this file.
"""Many texts at once: one model call scores every row's new tokens; batched plain and speculative decoding."""

import math
import time
from dataclasses import dataclass, field

import numpy as np

from specdec import validation
from specdec.drawing import inverse_cdf
from specdec.generation import GenerationResult
from specdec.gpt import GPT, KVCache, gelu, layer_norm, linear
from specdec.pipeline import SamplingParams, sampling_probs
from specdec.protocol import DecodingState, LanguageModel
from specdec.speculative import (
    AUTO_MAX_GAMMA,
    AUTO_MIN_CONFIDENCE,
    SpeculativeResult,
    accept,
    propose,
)
from specdec.threads import generation_threads


class BatchCache:
    """The keys and values of `rows` texts in one array (L, rows, 2, H, T, dh): one call attends for all of them."""

    def __init__(self, model: GPT, rows: int):
        self.model = model
        shape = (model.n_layer, rows, 2, model.n_head, model.max_context, model.head_dim)
        self.kv = np.zeros(shape, np.float32)  # (L, rows, 2, H, T, dh): [:, row, 0] keys, [:, row, 1] values

    def move(self, row: "RowCache", slot: int) -> None:
        """Copy a text's keys and values to another slot and point its RowCache there (the slot's text is lost)."""
        self.kv[:, slot, :, :, : row.length] = self.kv[:, row.slot, :, :, : row.length]  # (L, 2, H, length, dh)
        row.slot, row.keys, row.values = slot, self.kv[:, slot, 0], self.kv[:, slot, 1]


class RowCache(KVCache):
    """One text of a BatchCache: a KVCache whose keys and values are the batch's slot `slot` (views, not copies)."""

    def __init__(self, batch: BatchCache, slot: int):  # no KVCache.__init__: the arrays belong to the batch
        self.model, self.batch, self.slot = batch.model, batch, slot
        self.keys, self.values = batch.kv[:, slot, 0], batch.kv[:, slot, 1]  # (L, H, T, dh) each
        self.length = 0


def start_rows(model: LanguageModel, rows: int) -> list[DecodingState]:
    """`rows` fresh decoding states that score_batch can score together: one BatchCache for a GPT."""
    if isinstance(model, GPT):  # the rows point to their batch, not back: dropping them frees its array at once
        batch = BatchCache(model, rows)
        return [RowCache(batch, slot) for slot in range(rows)]
    return [model.start() for _ in range(rows)]


def pack_rows(states: list) -> None:
    """Move the rows still in use to the lowest slots of their batch, in order: one call then spans only them.

    Rows that finished leave gaps; without packing, attention would still run over the whole span of
    slots. Each move copies one text's keys once (the finished rows' slots are given up); a row moves only
    down, to a slot no row still in use holds. States that are not rows of one batch need nothing.
    """
    if validation.one_batch(states, RowCache):  # a single row too: its slot may be the one a newcomer takes
        for slot, row in enumerate(sorted(states, key=lambda state: state.slot)):
            if row.slot != slot:
                row.batch.move(row, slot)


def attention_mask(past: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Which keys each padded query may see: (B, n_max, end) bool, end = max(past + n), n_max = max(n).

    Text b holds past[b] tokens and sends n[b] new ones. Its query i sits at position past[b] + i and
    sees positions 0 .. past[b] + i of its own text, as model.score does for it alone; keys past its own
    text are someone else's length (or stale). Padding queries (i >= n[b]) follow the same rule: their
    outputs are dropped, and every query sees position 0, so no softmax row is all -inf.
    """
    end, n_max = int((past + n).max()), int(n.max())
    return np.arange(end) <= (past[:, None] + np.arange(n_max))[:, :, None]  # (B, n_max, end) causal, per text


def score_batch(model: LanguageModel, tokens: list, states: list) -> list[np.ndarray]:
    """Row i's logits (n_i, V), as model.score(tokens[i], states[i]) gives them, in one call where the model can.

    A GPT whose states are rows of one BatchCache scores all rows in one forward pass (gpt_score_batch);
    any other model (the n-gram, prompt lookup: table lookups, nothing to share) scores row by row, and so
    does a single row (a RowCache is a KVCache: the GPT's own call).
    """
    if len(states) > 1 and isinstance(model, GPT) and validation.one_batch(states, RowCache):
        return gpt_score_batch(model, tokens, states)
    return [model.score(row, state) for row, state in zip(tokens, states, strict=True)]


def gpt_score_batch(model: GPT, tokens: list, rows: list[RowCache]) -> list[np.ndarray]:
    """model.score for several texts in one forward pass: one product per weight, attention per text.

    The new tokens of all rows are stacked (N, d) for the products. Attention runs over the span of
    slots the rows occupy (B of them): queries padded to (B, n_max), the batch's keys (B, H, T, dh), and
    a mask that lets row b's query i see only that row's positions 0 .. past_b + i: what model.score
    does for each text alone, up to float32 rounding.
    """
    tokens = [
        validation.check_score(row, state, KVCache, model, "rows") for row, state in zip(tokens, rows, strict=True)
    ]
    h, dh, kv = model.n_head, model.head_dim, rows[0].batch.kv
    first = min(state.slot for state in rows)
    width = max(state.slot for state in rows) - first + 1  # B: the slots first .. first + B - 1
    past, n = np.zeros(width, np.int64), np.zeros(width, np.int64)  # (B,) each: tokens cached, new tokens
    slot = np.array([state.slot - first for state in rows])  # (R,) each row's place in the span
    past[slot], n[slot] = [state.length for state in rows], [row.size for row in tokens]
    n_max = int(n.max())  # queries per row, padded
    dense = n_max == 1 and slot.size == width and bool((slot == np.arange(width)).all())  # in slot order, no gaps
    row_of = slot if n_max == 1 else np.repeat(slot, n[slot])  # (N,) the slot of each new token
    index = np.zeros(len(row_of), np.int64) if n_max == 1 else np.concatenate([np.arange(k) for k in n[slot]])
    position = past[row_of] + index  # (N,) each new token's position in its text
    mask = np.where(attention_mask(past, n), 0, -np.inf).astype(np.float32)[:, None]  # (B, 1, n_max, end)
    x = model.w["wte"][np.concatenate(tokens)] + model.w["wpe"][position]  # (N, d)
    for layer, (g1, b1, w_qkv, b_qkv, w_o, b_o, g2, b2, w_in, b_in, w_out, b_out) in enumerate(model.layers):
        qkv = linear(layer_norm(x, g1, b1), w_qkv, b_qkv).reshape(-1, 3, h, dh)  # (N, 3, h, dh)
        cache = kv[layer, first : first + width]  # (B, 2, h, T, dh) a view
        cache[row_of, :, :, position] = qkv[:, 1:]  # each new token's key and value, at its text and position
        if dense:
            q = qkv[:, 0, :, None]  # (B, h, 1, dh) a view
        else:
            q = np.zeros((width, n_max, h, dh), np.float32)  # (B, n_max, h, dh) padded queries
            q[row_of, index] = qkv[:, 0]
            q = q.transpose(0, 2, 1, 3)  # (B, h, n_max, dh)
        end = mask.shape[-1]  # keys to attend over: the longest text's
        scores = q @ cache[:, 0, :, :end].transpose(0, 1, 3, 2)  # (B, h, n_max, end)
        scores *= 1 / math.sqrt(dh)
        scores += mask
        scores -= scores.max(axis=-1, keepdims=True)
        attention = np.exp(scores, out=scores)  # (B, h, n_max, end)
        attention /= attention.sum(axis=-1, keepdims=True)
        mixed = (attention @ cache[:, 1, :, :end]).transpose(0, 2, 1, 3)  # (B, n_max, h, dh)
        mixed = (mixed if dense else mixed[row_of, index]).reshape(-1, h * dh)  # (N, d)
        x = x + linear(mixed, w_o, b_o)  # (N, d)
        x = x + linear(gelu(linear(layer_norm(x, g2, b2), w_in, b_in)), w_out, b_out)  # (N, d)
    logits = layer_norm(x, model.w["ln_f.gain"], model.w["ln_f.bias"]) @ model.w["wte"].T  # (N, V)
    return cut_rows(logits, tokens, rows)


def cut_rows(logits: np.ndarray, tokens: list, rows: list) -> list[np.ndarray]:
    """The stacked logits (N, V) cut into each row's (n_i, V), and each row's length moved past its new tokens."""
    out, start = [], 0
    for state, row in zip(rows, tokens, strict=True):
        state.length += row.size
        out.append(logits[start : start + row.size])  # (n_i, V) this row's logits
        start += row.size
    return out


def time_batch(
    model: LanguageModel, batch_sizes, n_values, context: int = 64, repeats: int = 15, rng=None, call=None
) -> dict[tuple[int, int], float]:
    """{(B, n): median seconds of one score_batch call that scores n new tokens in each of B texts}.

    As a run makes its calls: one batch size at a time, B texts of `context` random tokens, then for each
    n (in a shuffled order) calls of that shape in a row: two to warm up, then `repeats` timed, each
    rolled back to `context` after it. `call`: another batched call with score_batch's arguments to time
    instead (appendix B's service times the one it serves with).
    """
    batch_sizes, n_values, context, repeats = validation.check_time_batch(
        model, batch_sizes, n_values, context, repeats
    )
    rng = np.random.default_rng(0) if rng is None else rng
    call = score_batch if call is None else call
    times = {}
    for b in batch_sizes:
        states = start_rows(model, b)
        call(model, rng.integers(0, model.vocab_size, (b, context)).tolist(), states)  # (b, context)
        for n in rng.permutation(n_values).tolist():
            seconds = []
            for tokens in rng.integers(0, model.vocab_size, (repeats + 2, b, n)).tolist():  # (b, n) per call
                start = time.perf_counter()
                call(model, tokens, states)
                seconds.append(time.perf_counter() - start)
                for state in states:
                    state.rollback(context)
            times[(b, n)] = float(np.median(seconds[2:]))  # the two warm-up calls left out
    return times


def draw_rows(probs: np.ndarray, rngs: list) -> np.ndarray:
    """One token per row of probs (R, V), row i drawn with rngs[i]: draw(probs[i], rngs[i]) for every row, at once.

    One uniform from each row's own generator, then notebook 02's inverse CDF over all rows and its
    rounding repair; the same uniforms and the same comparisons, so the same tokens as row-by-row draws.
    """
    total = probs.sum(axis=-1)  # (R,) 1 up to rounding
    u = np.array([rng.random() for rng in rngs]) * total  # (R,) uniform on [0, total), each row's own generator
    token = inverse_cdf(probs, u)  # (R,) clipped to V - 1
    landed_on_zero = probs[np.arange(len(probs)), token] == 0  # (R,) only past the end, by rounding
    if landed_on_zero.any():
        last_with_mass = probs.shape[-1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=-1)  # (R,)
        token = np.where(landed_on_zero, last_with_mass, token)
    return token.astype(np.int64)


@dataclass(frozen=True)
class TargetCall:
    """One target call of a batched run: how many rows it scored, its shape and its time."""

    rows: int  # texts scored together
    longest: int  # the most tokens one row sent: every row's queries are padded to this many
    scored: int  # tokens scored, all rows together
    seconds: float


@dataclass
class BatchResult:
    """What the batched generators return: each row's own result, and the batch's target calls."""

    rows: list  # one GenerationResult (generate_batch) or SpeculativeResult per prompt, in the prompts' order
    seconds: float = 0.0  # the whole batch, wall clock
    calls: list[TargetCall] = field(default_factory=list)  # in order; the first reads the prompts

    @property
    def tokens(self) -> int:
        """New tokens, all rows together."""
        return sum(row.tokens.size for row in self.rows)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("inf")

    @property
    def call_seconds(self) -> float:
        """Seconds inside the target's calls."""
        return sum(call.seconds for call in self.calls)

    @property
    def padding(self) -> float:
        """Query slots computed per token scored, in the calls after the prompts' (1: nothing padded)."""
        later = self.calls[1:]
        return sum(call.rows * call.longest for call in later) / max(1, sum(call.scored for call in later))

    def finish(self, i: int, tokens: list, start: float) -> None:
        """Row i is done: its new tokens, and its seconds since `start` (the batch's start)."""
        self.rows[i].tokens = np.array(tokens, dtype=np.int64)
        self.rows[i].seconds = time.perf_counter() - start

    def timed_call(self, model: LanguageModel, tokens: list, states: list) -> list[np.ndarray]:
        """score_batch(model, tokens, states), timed and noted in `calls`."""
        start = time.perf_counter()
        logits = score_batch(model, tokens, states)
        seconds = time.perf_counter() - start
        self.calls.append(TargetCall(len(tokens), max(len(row) for row in tokens), sum(map(len, tokens)), seconds))
        return logits


def generate_batch(
    model: LanguageModel,
    prompts: list,
    max_new_tokens: int,
    params: SamplingParams = SamplingParams(),
    rngs: list | None = None,
    end_token: int | None = None,
) -> BatchResult:
    """`generate` for several prompts at once: one model call per step scores every unfinished row.

    Row i draws with rngs[i] as generate(model, prompts[i], ..., rngs[i]) would, so each row is the text it
    would be alone, up to the float32 rounding of the batched call (a draw that lands within rounding of
    a boundary can differ). A row finishes at max_new_tokens or after end_token; the others go on. Each
    row's seconds run from the start to its last token.
    """
    model, prompts, max_new_tokens, params, rngs, end_token = validation.check_generate_batch(
        model, prompts, max_new_tokens, params, rngs, end_token
    )
    start, count = time.perf_counter(), len(prompts)
    new = [[] for _ in range(count)]  # each row's new tokens
    batch = BatchResult([GenerationResult(np.zeros(0, np.int64), 0, 0.0) for _ in range(count)])
    states = start_rows(model, count) if max_new_tokens > 0 else []
    active = list(range(len(states)))  # rows still generating
    with generation_threads():
        if active:
            scored = batch.timed_call(model, [prompt.tolist() for prompt in prompts], states)  # (size_i, V) each
        while active:
            logits = validation.check_scores(np.stack([rows[-1] for rows in scored]), model, len(active))  # (A, V)
            if params.greedy:
                tokens = np.argmax(logits, axis=-1).tolist()  # (A,) as sample_token's argmax
            else:
                tokens = draw_rows(sampling_probs(logits, params), [rngs[i] for i in active]).tolist()  # (A,)
            going = []
            for i, token in zip(active, tokens, strict=True):
                new[i].append(token)
                batch.rows[i].target_calls += 1
                if len(new[i]) == max_new_tokens or token == end_token:
                    batch.finish(i, new[i], start)
                else:
                    going.append(i)
            if len(going) < len(active):  # rows finished: the others move down, so that the call spans only them
                pack_rows([states[i] for i in going])
            active = going
            if active:
                scored = batch.timed_call(model, [[new[i][-1]] for i in active], [states[i] for i in active])
    batch.seconds = time.perf_counter() - start
    return batch


def keep_round(sequence: list, emitted: list, n: int, target_state, draft_state, end_token) -> list[int]:
    """After `accept`: both states keep the text and n accepted drafts; the round's tokens join `sequence`."""
    kept = len(sequence) + n  # tokens both states may keep: the row's text and its accepted drafts
    target_state.rollback(kept)
    draft_state.rollback(min(draft_state.length, kept))  # the draft never read its last draft
    if end_token in emitted:  # stop after the end token: drop what the round emitted after it
        emitted = emitted[: emitted.index(end_token) + 1]
    sequence += emitted
    return emitted


def speculative_generate_batch(
    target: LanguageModel,
    draft: LanguageModel,
    prompts: list,
    max_new_tokens: int,
    params: SamplingParams = SamplingParams(),
    gamma: int | str = "auto",
    rngs: list | None = None,
    end_token: int | None = None,
    verify: str = "token",
) -> BatchResult:
    """`speculative_generate` for several prompts at once: each row drafts its own block, ONE target call
    scores every row's block, and each row accepts, rolls back and goes on by itself.

    Row i draws with rngs[i] in the order speculative_generate(target, draft, prompts[i], ..., rngs[i])
    would (its drafts, then its verification), so each row follows the target's law exactly, and is the
    text it would be alone up to the float32 rounding of the batched call. Rows accept different numbers
    of drafts (ragged): nothing is padded into anyone's text; a row that accepts less sends less next round.
    """
    target, draft, prompts, max_new_tokens, params, gamma, rngs, end_token, rule = validation.check_speculative_batch(
        target, draft, prompts, max_new_tokens, params, gamma, rngs, end_token, verify
    )
    most, confidence = (AUTO_MAX_GAMMA, AUTO_MIN_CONFIDENCE) if gamma == "auto" else (gamma, 0.0)
    start, count = time.perf_counter(), len(prompts)
    sequences = [prompt.tolist() for prompt in prompts]  # each row: prompt + everything emitted so far
    batch = BatchResult([SpeculativeResult(np.zeros(0, dtype=np.int64), 0, 0, 0, 0, 0.0) for _ in range(count)])
    target_states, draft_states = start_rows(target, count), start_rows(draft, count)
    active = list(range(count)) if max_new_tokens > 0 else []  # rows still generating
    with generation_threads():
        while active:
            blocks = []  # each active row's (drafts, their q rows), drafted with its own generator
            for i in active:
                g = min(most, max_new_tokens - (len(sequences[i]) - prompts[i].size) - 1)  # never past the end
                args = (draft, draft_states[i], sequences[i], g, params, rngs[i], confidence)
                blocks.append(propose(*args) if g > 0 else ([], None))
            unread = [
                sequences[i][target_states[i].length :] + drafts for i, (drafts, _) in zip(active, blocks, strict=True)
            ]
            scored = batch.timed_call(target, unread, [target_states[i] for i in active])  # ONE target call
            going = []
            for i, (drafts, q), tokens, logits in zip(active, blocks, unread, scored, strict=True):
                logits = validation.check_scores(logits, target, len(tokens), "target")  # (len(tokens), V)
                emitted, n = accept(logits[-(len(drafts) + 1) :], drafts, q, params, rngs[i], rule)
                batch.rows[i].record_round(len(drafts), n)
                emitted = keep_round(sequences[i], emitted, n, target_states[i], draft_states[i], end_token)
                if end_token in emitted or len(sequences[i]) - prompts[i].size >= max_new_tokens:
                    batch.finish(i, sequences[i][prompts[i].size :], start)
                else:
                    going.append(i)
            if len(going) < len(active):  # rows finished: the others move down, so that the call spans only them
                pack_rows([target_states[i] for i in going])
            active = going
    batch.seconds = time.perf_counter() - start
    return batch


def call_cost(times: dict, rows: int, n: float) -> float:
    """Seconds of a call of `rows` texts x n tokens each, read off time_batch's grid: linear in n, then in B."""
    sizes, ns = sorted({b for b, _ in times}), sorted({m for _, m in times})
    along_n = [np.interp(n, ns, [times[(b, m)] for m in ns]) for b in sizes]  # t(b, n) for each measured b
    return float(np.interp(rows, sizes, along_n))


def priced_call(times: dict, call: TargetCall) -> float:
    """A ragged call's seconds from time_batch's grid: between t(B, mean tokens) and t(B, longest block).

    The products cost what the tokens scored cost: as if every row sent the mean. Attention and its
    softmax run on the padded queries: as if every row sent the longest block. On the bundled GPT the
    two parts weigh about the same, so the price is the middle of the two; a uniform call is priced exactly.
    """
    mean = call_cost(times, call.rows, call.scored / call.rows)  # no padding cost: a lower bound
    longest = call_cost(times, call.rows, call.longest)  # every row padded and computed: an upper bound
    return (mean + longest) / 2


def predicted_seconds(run: BatchResult, times: dict) -> float:
    """The cost model's seconds for a batched run: its target calls priced from time_batch's grid.

    The prompts' call is taken as timed (the same work plain or speculative); every later call is priced
    at its own shape (priced_call); the run's time outside its calls (each row's draft turns, sampling,
    verification, the loop) is taken as measured in the run.
    """
    outside = run.seconds - run.call_seconds  # all rows' own work
    return run.calls[0].seconds + sum(priced_call(times, call) for call in run.calls[1:]) + outside


def batch_speedup(plain: BatchResult, speculative: BatchResult, times: dict) -> float:
    """Speculative over plain tokens per second, as the cost model prices the two runs (predicted_seconds)."""
    plain_rate = plain.tokens / predicted_seconds(plain, times)
    return speculative.tokens / predicted_seconds(speculative, times) / plain_rate


def gemv_rows(x: np.ndarray, w: np.ndarray, b) -> np.ndarray:
    """x @ w + b as one matrix-vector product per row of x (N, d_in): each row's numbers, whatever N is."""
    return (x[:, None, :] @ w)[:, 0] + b  # (N, d_out)


KEY_BLOCK = 64  # a query attends over its position rounded up to a multiple of this: a shape set by the query alone


def invariant_score_batch(model: GPT, tokens: list, rows: list[RowCache]) -> list[np.ndarray]:
    """score_batch for a GPT, with each row's logits bit for bit independent of the other rows of the call.

    Every number a row gets is computed by an operation whose shape depends on that row alone: each
    token's product with each weight matrix is its own matrix-vector product (one gemv per token, as in
    notebook 06's `linear` for a few rows), and each query attends over its own position rounded up to a
    multiple of KEY_BLOCK positions (those past it masked), one product per query and head. So a text gets
    the same logits alone, in a batch of 16, or with any other texts, and a position gets the same logits
    whether its row sent one token or a block; gpt_score_batch pads to the batch's longest text and
    multiplies all rows at once, which changes the rounding with the batch-mates.
    """
    tokens = [
        validation.check_score(row, state, KVCache, model, "rows") for row, state in zip(tokens, rows, strict=True)
    ]
    h, dh, kv = model.n_head, model.head_dim, rows[0].batch.kv
    first = min(state.slot for state in rows)
    width = max(state.slot for state in rows) - first + 1  # W: the span of slots the rows occupy
    slot = np.array([state.slot - first for state in rows])  # (R,) each row's place in the span
    n = np.array([row.size for row in tokens])  # (R,)
    past = np.zeros(width, np.int64)  # (W,) tokens cached; 0 for a slot outside the call
    past[slot] = [state.length for state in rows]
    n_max = int(n.max())
    row_of = np.repeat(slot, n)  # (N,) the slot of each new token
    index = np.concatenate([np.arange(k) for k in n])  # (N,) its place among its row's new tokens
    position = past[row_of] + index  # (N,)
    keys = np.minimum(-(-(position + 1) // KEY_BLOCK) * KEY_BLOCK, model.max_context)  # (N,) each query's own
    groups = []  # the queries that attend over the same number of keys, and what their attention needs
    for end in np.unique(keys).tolist():
        mine = np.flatnonzero(keys == end)  # (N_g,) these queries
        low, high = int(row_of[mine].min()), int(row_of[mine].max()) + 1  # their slots: low .. high - 1
        sees = np.arange(end) <= (past[low:high, None] + np.arange(n_max))[:, :, None]  # (S, n_max, end) causal
        mask = np.where(sees, 0, -np.inf).astype(np.float32)[:, :, None, None]  # (S, n_max, 1, 1, end)
        groups.append((end, low, high, mine, row_of[mine] - low, index[mine], mask))
    x = model.w["wte"][np.concatenate(tokens)] + model.w["wpe"][position]  # (N, d)
    for layer, (g1, b1, w_qkv, b_qkv, w_o, b_o, g2, b2, w_in, b_in, w_out, b_out) in enumerate(model.layers):
        qkv = gemv_rows(layer_norm(x, g1, b1), w_qkv, b_qkv).reshape(-1, 3, h, dh)  # (N, 3, h, dh)
        cache = kv[layer, first : first + width]  # (W, 2, h, T, dh) a view: no copy of anyone's text
        cache.transpose(0, 3, 1, 2, 4)[row_of, position] = qkv[:, 1:]  # each token's key and value, in its slot
        mixed = np.empty((len(row_of), h, 1, dh), np.float32)  # (N, h, 1, dh)
        for end, low, high, mine, at, place, mask in groups:
            q = np.zeros((high - low, n_max, h, 1, dh), np.float32)  # (S, n_max, h, 1, dh) one query per product
            q[at, place] = qkv[mine, 0, :, None]
            texts = cache[low:high, None, :, :, :end]  # (S, 1, 2, h, end, dh) a view
            scores = q @ texts[:, :, 0].transpose(0, 1, 2, 4, 3)  # (S, n_max, h, 1, end) a gemv per query, head
            scores *= 1 / math.sqrt(dh)
            scores += mask
            scores -= scores.max(axis=-1, keepdims=True)
            attention = np.exp(scores, out=scores)  # (S, n_max, h, 1, end)
            attention /= attention.sum(axis=-1, keepdims=True)  # over `end` positions: set by the row alone
            mixed[mine] = (attention @ texts[:, :, 1])[at, place]  # (N_g, h, 1, dh)
        x = x + gemv_rows(mixed.reshape(-1, h * dh), w_o, b_o)  # (N, d)
        x = x + gemv_rows(gelu(gemv_rows(layer_norm(x, g2, b2), w_in, b_in)), w_out, b_out)  # (N, d)
    logits = gemv_rows(layer_norm(x, model.w["ln_f.gain"], model.w["ln_f.bias"]), model.w["wte"].T, 0.0)  # (N, V)
    return cut_rows(logits, tokens, rows)
