"""Requests in flight share the target's calls: the service's batcher (notebook 12, served).

A `Batcher` is one thread that owns the target's memory for every request in flight, rows of one
`BatchCache` (notebook 12). Between rounds, waiting requests join (each takes a free row) and rows
that are done leave; the rows left move down (`pack_rows`), so a call spans only rows in use. In a
round each row drafts its own block with its own generator, ONE target call scores every row's
block, and each row accepts, rolls back and hands its round's tokens to `on_round` by itself, as
`speculative_generate` does for one request.

A text does not depend on its batch-mates: the call is notebook 12's `invariant_score_batch`, where
every number of a row comes from operations shaped by that row alone, so a request gets bit for bit
the text it gets alone, whatever else is in flight (and, since each position's logits do not depend
on the block either, a greedy row gets the same text whether it drafts or decodes one token per
call). The target must be a GPT (rows of one BatchCache); the service generates any other target
(the fault-injecting and slowed wrappers) one request at a time instead.

Plain or speculative, per the load: a sampled request's text is a draw, and the speculative draw and
the plain one differ; so a sampled row always decodes as it asked (its gamma), whatever the load. A
greedy row's text is the same either way, so it drafts only while drafting pays at the current batch
size: the cost model of notebook 12 with the service's own call timed (`time_batch`) and the row's
acceptance so far. Every row keeps its deadline and its cancellation (checked by `on_round`, after
each round), and a failed call is retried whole (RetryingModel over `Rows`: every row rolls back).
"""

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from specdec.batch import (
    BatchCache,
    RowCache,
    call_cost,
    invariant_score_batch,
    keep_round,
    pack_rows,
    score_batch,
    time_batch,
)
from specdec.gpt import GPT
from specdec.pipeline import SamplingParams
from specdec.protocol import LanguageModel
from specdec.serving.metrics import ServiceMetrics
from specdec.serving.retry import RetryPolicy
from specdec.speculative import SpeculativeResult, accept, propose
from specdec.threads import generation_threads

PRIOR_TOKENS = 8  # a greedy row's acceptance starts from the service's, weighted as this many tested drafts


class Rows:
    """The decoding states of one batched call as one state: `length` is every row's, `rollback` rolls each back."""

    def __init__(self, states: list):
        self.states = states

    @property
    def length(self) -> tuple[int, ...]:
        return tuple(state.length for state in self.states)

    def rollback(self, lengths: tuple[int, ...]) -> None:
        for state, length in zip(self.states, lengths, strict=True):
            if state.length != length:
                state.rollback(length)


class BatchedTarget:
    """The target as one call over many rows, for RetryingModel: score(tokens per row, Rows) -> logits per row."""

    def __init__(self, model: LanguageModel, call: Callable):
        self.model, self.call = model, call
        self.name, self.vocab_size, self.max_context = model.name, model.vocab_size, model.max_context

    def score(self, tokens: list, rows: Rows) -> list[np.ndarray]:
        return self.call(self.model, tokens, rows.states)


@dataclass(eq=False)
class Generation:
    """One request in the batcher: its settings, its memory and what it has produced so far."""

    prompt: list[int]
    max_tokens: int
    params: SamplingParams
    gamma: int
    rng: np.random.Generator
    verify: str
    end_token: int | None
    on_round: Callable[[np.ndarray], object] | None
    deadline: float  # time.monotonic(): retries of a call this row is in stop at the latest row's
    future: Future
    sequence: list[int] = field(default_factory=list)  # prompt + everything emitted so far
    target_state: object = None
    draft_state: object = None
    stats: SpeculativeResult = field(default_factory=lambda: SpeculativeResult(np.zeros(0, np.int64), 0, 0, 0, 0, 0.0))
    failures: int = 0  # failed attempts of the calls this row was in
    retries: int = 0
    started: float = 0.0
    done: bool = False  # finished or failed: it leaves at the end of the round

    @property
    def produced(self) -> int:
        return len(self.sequence) - len(self.prompt)


@dataclass(frozen=True)
class BatchedResult:
    """A finished request: its generation, and the failed attempts and retries of the calls it was in."""

    result: SpeculativeResult
    failures: int
    retries: int


class Batcher:
    """A thread that decodes every submitted request in one batch: one target call per round.

    target: a GPT. rows: the most requests decoded together (more wait for a row). call: "invariant"
    (default: a text never depends on its batch-mates) or "padded" (notebook 12's score_batch: faster
    calls, texts equal to alone up to float32 rounding, so a draw that lands within rounding of a
    boundary can differ). plain_from: None (a greedy row drafts while the cost model says it pays) or a
    batch size from which greedy rows never draft.
    """

    def __init__(
        self,
        target: LanguageModel,
        draft: LanguageModel,
        policy: RetryPolicy,
        metrics: ServiceMetrics,
        rows: int = 16,
        call: str = "invariant",
        plain_from: int | None = None,
    ):
        if not isinstance(target, GPT):
            raise TypeError(f"target must be a GPT (rows one call can score), got {type(target).__name__}")
        if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= 256:
            raise ValueError(f"rows must be an integer in [1, 256], got {rows!r}")
        if call not in ("invariant", "padded"):
            raise ValueError(f'call must be "invariant" or "padded", got {call!r}')
        if plain_from is not None and (
            isinstance(plain_from, bool) or not isinstance(plain_from, int) or plain_from < 1
        ):
            raise ValueError(f"plain_from must be None or an integer >= 1, got {plain_from!r}")
        self.target, self.draft, self.policy, self.metrics = target, draft, policy, metrics
        self.rows, self.plain_from = rows, plain_from
        self.cache = BatchCache(target, rows)  # every request's keys and values: one row each
        self.call = invariant_score_batch if call == "invariant" else score_batch
        self.batched = BatchedTarget(target, self.call)
        self.times: dict | None = None  # the call's cost grid, timed when a greedy row first needs it
        self.accepted = self.tested = 0  # over every row verified so far: the prior of a greedy row's acceptance
        self.waiting: deque[Generation] = deque()
        self.active: list[Generation] = []
        self.wake = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._run, name="specdec-batcher", daemon=True)
        self.thread.start()

    def submit(
        self,
        prompt: list[int],
        max_tokens: int,
        params: SamplingParams,
        gamma: int,
        rng: np.random.Generator,
        verify: str = "token",
        end_token: int | None = None,
        on_round: Callable[[np.ndarray], object] | None = None,
        deadline: float = math.inf,
    ) -> Future:
        """Queue one generation; the future gets a BatchedResult, or the exception that ended it.

        on_round(tokens) gets each round's verified tokens from the batcher's thread; an exception it raises
        ends that request alone (the service's deadline and cancellation checks raise there).
        """
        future: Future = Future()
        future.set_running_or_notify_cancel()
        row = Generation(list(prompt), max_tokens, params, gamma, rng, verify, end_token, on_round, deadline, future)
        with self.wake:
            if self.closed:
                raise RuntimeError("the batcher is closed")
            self.waiting.append(row)
            self.wake.notify()
        return future

    def close(self) -> None:
        """Stop after the current round; requests still waiting or running get a RuntimeError."""
        with self.wake:
            self.closed = True
            self.wake.notify()
        if threading.current_thread() is not self.thread:
            self.thread.join(30)

    # --- the batcher's thread --------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self.wake:
                while not self.closed and not self.waiting and not self.active:
                    self.wake.wait()
                if self.closed:
                    break
                free = self.rows - len(self.active)
                joining = [self.waiting.popleft() for _ in range(min(len(self.waiting), free))]
            for row in joining:
                self._join(row)
            try:
                with generation_threads():  # the BLAS setting for generation, round by round
                    self._round()
            except BaseException as error:  # a bug outside any one row: the rows in flight fail, serving goes on
                for row in self.active:
                    if not row.done:
                        self._end(row, error)
                self._leave()
        stopped = RuntimeError("the batcher was closed")
        for row in [*self.active, *self.waiting]:
            row.future.set_exception(stopped)

    def _join(self, row: Generation) -> None:
        """Give a new request its row: the next free slot of the batch (the rows in use hold the lowest)."""
        row.sequence = list(row.prompt)
        row.target_state = RowCache(self.cache, len(self.active))  # the rows in use hold slots 0 .. A - 1
        row.draft_state = self.draft.start()
        row.started = time.perf_counter()
        self.active.append(row)

    def _round(self) -> None:
        """One round for every active row: each drafts, ONE target call, each accepts and goes on."""
        started = time.perf_counter()
        rows, blocks = [], []
        for row in self.active:
            try:
                g = self._block(row)
                blocks.append(
                    propose(self.draft, row.draft_state, row.sequence, g, row.params, row.rng) if g else ([], None)
                )
                rows.append(row)
            except BaseException as error:  # a bug in this row's drafting: this request fails, the others go on
                self._end(row, error)
        if not rows:
            self._leave()
            return
        unread = [
            row.sequence[row.target_state.length :] + drafts for row, (drafts, _) in zip(rows, blocks, strict=True)
        ]
        scored = self._score(rows, unread)
        for row, (drafts, q), logits in zip(rows, blocks, scored, strict=True):
            try:
                if isinstance(logits, BaseException):  # the call failed for good: the row ends with its error
                    raise logits
                self._verify(row, drafts, q, logits)
            except BaseException as error:  # on_round refused (deadline, client gone), the target, or a bug
                self._end(row, error)
        self.metrics.batch_rows.observe(len(rows))
        self.metrics.round_seconds.observe(time.perf_counter() - started)
        self._leave()

    def _score(self, rows: list[Generation], unread: list[list[int]]) -> list:
        """Each row's logits for its unread tokens from ONE call, or for every row the error that ended it.

        The call is retried whole: before each attempt every row rolls back to its length before the first,
        until the latest deadline among the rows (RetryingModel over Rows).
        """
        retrying = self.metrics.retrying(self.batched, self.policy, max(row.deadline for row in rows))
        try:
            scored = retrying.score(unread, Rows([row.target_state for row in rows]))  # ONE call for every row
        except BaseException as error:
            scored = [error] * len(rows)
        for row in rows:
            row.failures, row.retries = row.failures + retrying.failures, row.retries + retrying.retries
        return scored

    def _block(self, row: Generation) -> int:
        """Drafts this row proposes this round: its gamma, never past its end; 0 for a greedy row at a load
        where drafting does not pay."""
        g = min(row.gamma, row.max_tokens - row.produced - 1)
        if g > 0 and row.params.greedy and not self._drafting_pays(row, g, len(self.active)):
            return 0
        return g

    def _drafting_pays(self, row: Generation, g: int, batch: int) -> bool:
        """For a greedy row: are its expected tokens per round worth a call of g + 1 tokens, at this batch size?

        Notebook 12's cost model with this service's own call timed: drafting pays when the tokens a round
        is expected to give, E = (1 - a^(g+1)) / (1 - a), are more than what the same call time buys plainly,
        t(B, g + 1) / t(B, 1). a: the row's acceptance so far, starting from the service's.
        """
        if self.plain_from is not None:
            return batch < self.plain_from
        if self.times is None:
            grid = [b for b in (1, 2, 4, 8, 16, 32, 64) if b <= self.rows]  # the largest batches priced as 64
            sizes = sorted({*grid, self.rows} if self.rows <= 64 else set(grid))
            self.times = time_batch(self.target, sizes, [1, 2, 3, 5, 9, 17], context=32, repeats=3, call=self.call)
        prior = (self.accepted + 1) / (self.tested + 2)
        a = (row.stats.accepted + PRIOR_TOKENS * prior) / (row.stats.tested + PRIOR_TOKENS)
        expected = (g + 1) if a >= 1 else (1 - a ** (g + 1)) / (1 - a)
        return expected * call_cost(self.times, batch, 1) > call_cost(self.times, batch, g + 1)

    def _verify(self, row: Generation, drafts: list, q, logits: np.ndarray) -> None:
        """Row `row`'s part of the round, after the call: as speculative_generate's round for one request."""
        emitted, n = accept(logits[-(len(drafts) + 1) :], drafts, q, row.params, row.rng, row.verify)
        row.stats.record_round(len(drafts), n)
        if drafts:
            self.accepted += n
            self.tested += n + (n < len(drafts))
        emitted = keep_round(row.sequence, emitted, n, row.target_state, row.draft_state, row.end_token)
        if row.on_round is not None:
            row.on_round(np.array(emitted, dtype=np.int64))  # this round's tokens, verified
        if row.end_token in emitted or row.produced >= row.max_tokens:
            row.stats.tokens = np.array(row.sequence[len(row.prompt) :], dtype=np.int64)
            row.stats.seconds = time.perf_counter() - row.started
            self._end(row, None)

    def _end(self, row: Generation, error: BaseException | None) -> None:
        """The row is done: its future gets its result (or the error), and it leaves at the round's end."""
        row.done = True
        if error is None:
            row.future.set_result(BatchedResult(row.stats, row.failures, row.retries))
        else:
            row.future.set_exception(error)

    def _leave(self) -> None:
        """Rows that are done leave; the others move down to the lowest slots, in order."""
        going = [row for row in self.active if not row.done]
        if len(going) < len(self.active):
            pack_rows([row.target_state for row in going])
            self.active = sorted(going, key=lambda row: row.target_state.slot)
        self.metrics.batch_rows_now.set(len(self.active))
