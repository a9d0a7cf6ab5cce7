"""Retries that keep speculative decoding exact.

In `speculative_generate` every random draw happens after the target's `score` call has
returned (the drafts in `propose`, the uniforms and the residual or bonus draw in `verify_round`).
So a `score` call that raises has consumed no randomness, and retrying *that call* with the
same tokens cannot change the output, provided the retry starts from the state the failed
call started from: a call may fail after writing part of the cache, so every attempt first
rolls the state back to the length it had before the first attempt.

`RetryingModel` does exactly that, with tenacity: exponential back-off with jitter, a bounded
number of attempts, a deadline, and only transient errors retried. It is a LanguageModel, so
`speculative_generate(RetryingModel(target, policy), draft, ...)` needs no change to the library.

`redrawing_speculative_generate` is the naive alternative, kept as a negative control: after a
failed target call it throws the round away and drafts again, which consumes fresh draws and,
when the chance of failure depends on the drafted tokens, changes the output law.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt, stop_before_delay
from tenacity.stop import stop_base
from tenacity.wait import wait_base

from specdec.pipeline import SamplingParams
from specdec.protocol import LanguageModel
from specdec.serving.faults import TransientError
from specdec.speculative import SpeculativeResult, propose, verify_round

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (TransientError, TimeoutError, ConnectionError, MemoryError)


class TargetUnavailable(RuntimeError):
    """The target kept failing: retries exhausted or deadline reached. The generation is abandoned."""


class DeadlineReached(TargetUnavailable):
    """The target kept failing until the caller's deadline (`RetryingModel(until=...)`) left no time to retry."""


@dataclass(frozen=True)
class RetryPolicy:
    """How to retry a failing `score` call.

    attempts: at most this many calls in all (the first one included). deadline: seconds from
    the first failure after which no new attempt starts (no back-off sleep runs past it).
    Back-off before attempt k+1: min(maximum, initial * 2**(k-1)) plus a uniform jitter in
    [0, jitter) seconds. transient: the exception types worth retrying; anything else is raised
    at once.
    """

    attempts: int = 5
    initial: float = 0.005
    maximum: float = 0.2
    jitter: float = 0.005
    deadline: float = 2.0
    transient: tuple[type[BaseException], ...] = TRANSIENT_ERRORS

    def __post_init__(self):
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int) or self.attempts < 1:
            raise ValueError(f"attempts must be an integer >= 1, got {self.attempts!r}")
        for name in ("initial", "maximum", "jitter", "deadline"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 <= value < float("inf")):
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")


class ExponentialJitter(wait_base):
    """tenacity wait: min(maximum, initial * 2**(attempt - 1)) + uniform [0, jitter), from a numpy generator.

    The jitter comes from its own generator, never from the generation's: back-off must not
    consume the sampler's draws.
    """

    def __init__(self, initial: float, maximum: float, jitter: float, rng: np.random.Generator):
        self.initial, self.maximum, self.jitter, self.rng = initial, maximum, jitter, rng

    def __call__(self, retry_state) -> float:
        backoff = min(self.maximum, self.initial * 2.0 ** (retry_state.attempt_number - 1))
        return backoff + self.jitter * float(self.rng.random())


class stop_when(stop_base):  # noqa: N801 (tenacity's naming)
    """tenacity stop: stop when `condition(retry_state)` holds."""

    def __init__(self, condition: Callable[[object], bool]):
        self.condition = condition

    def __call__(self, retry_state) -> bool:
        return self.condition(retry_state)


def _restore(state, length) -> None:
    """Roll `state` back to `length` if a call moved it (a batched call's state: every row to its own length)."""
    if state.length != length:
        state.rollback(length)


def _raise(error: BaseException):
    raise error


class RetryingModel:
    """A LanguageModel that retries the wrapped model's `score` on transient errors, exactly.

    Before every attempt the decoding state is rolled back to its length before the first
    attempt, so nothing a failed attempt wrote survives. `retries` and `failures` count what
    happened (over this wrapper's life); `on_failure(error)` and `on_retry(seconds)` are
    optional hooks (metrics). `sleep` is what waits (tests pass a recorder instead of sleeping).
    `until`: a time.monotonic() after which no attempt starts and no back-off sleeps past it (a
    request's deadline, which covers all its calls; the policy's deadline is per call).
    The state only needs `length` and `rollback(length)`: the service's batcher passes all the rows of
    one batched call as one state (`specdec.serving.batcher.Rows`), so a retry rolls every row back.
    """

    def __init__(
        self,
        model: LanguageModel,
        policy: RetryPolicy = RetryPolicy(),
        jitter_rng: np.random.Generator | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
        on_retry: Callable[[float], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        until: float | None = None,
    ):
        self.model, self.policy = model, policy
        self.name, self.vocab_size, self.max_context = model.name, model.vocab_size, model.max_context
        jitter_rng = np.random.default_rng() if jitter_rng is None else jitter_rng
        self.on_failure, self.on_retry = on_failure, on_retry
        self.failures = self.retries = 0
        stop = stop_after_attempt(policy.attempts) | stop_before_delay(policy.deadline)
        self.until, self.out_of_time = until, False
        if until is not None:
            stop = stop | stop_when(self._no_time_left)
        self.retrying = Retrying(  # built once, used only after a failure
            stop=stop,
            wait=ExponentialJitter(policy.initial, policy.maximum, policy.jitter, jitter_rng),
            retry=retry_if_exception_type(policy.transient),
            before_sleep=self._before_sleep,
            sleep=sleep,
        )

    def start(self):
        return self.model.start()

    def score(self, tokens, state) -> np.ndarray:
        length = state.length  # where every attempt starts from
        started = time.monotonic()
        try:  # the common case: one attempt, without tenacity's machinery (tens of microseconds a call)
            return self._attempt(tokens, state, length)
        except self.policy.transient as error:
            failed = [error]
        except BaseException:  # not transient: raised at once, and the state is as the call found it
            _restore(state, length)
            raise

        def attempt():  # tenacity's attempt 1 is the one that just failed; it re-raises its error
            return self._attempt(tokens, state, length) if not failed else _raise(failed.pop())

        try:
            return self.retrying(attempt)
        except RetryError as gave_up:
            state.rollback(length)  # leave the state as the failed call found it
            last = gave_up.last_attempt.exception()
            if self.out_of_time:
                raise DeadlineReached(
                    f"target {self.name!r} failed {gave_up.last_attempt.attempt_number} time(s) in a row and the"
                    f" caller's deadline left no time for another attempt. Last error: {last}"
                ) from last
            raise TargetUnavailable(
                f"target {self.name!r} failed {gave_up.last_attempt.attempt_number} time(s) in a row"
                f" ({time.monotonic() - started:.3f} s, at most {self.policy.attempts} attempts within"
                f" {self.policy.deadline} s); giving up. Last error: {last}"
            ) from last
        except BaseException:  # not transient: raised at once, without a retry
            _restore(state, length)
            raise

    def _no_time_left(self, retry_state) -> bool:
        self.out_of_time = time.monotonic() + (retry_state.upcoming_sleep or 0.0) >= self.until
        return self.out_of_time

    def _attempt(self, tokens, state, length: int) -> np.ndarray:
        _restore(state, length)  # forget whatever a failed attempt wrote
        try:
            return self.model.score(tokens, state)
        except self.policy.transient as error:
            self.failures += 1
            if self.on_failure is not None:
                self.on_failure(error)
            raise

    def _before_sleep(self, retry_state) -> None:
        self.retries += 1
        if self.on_retry is not None:
            self.on_retry(retry_state.upcoming_sleep)


def redrawing_speculative_generate(
    target: LanguageModel,
    draft: LanguageModel,
    prompt_tokens,
    max_new_tokens: int,
    params: SamplingParams,
    gamma: int,
    rng: np.random.Generator,
    attempts: int = 100,
) -> SpeculativeResult:
    """THE WRONG WAY, kept as a negative control: on a failed target call, draft the round again.

    The same loop as `speculative_generate` (no end token), but a transient failure of the
    target's call throws the round away (both states roll back) and `propose` draws new drafts.
    A round that survives is then one whose drafts did not make the target fail: if that chance
    depends on the drafts, the drafts kept are no longer distributed as q, verification still
    divides by q, and the output law is no longer the target's.
    """
    prompt = [int(t) for t in prompt_tokens]
    sequence = list(prompt)
    target_state, draft_state = target.start(), draft.start()
    stats = SpeculativeResult(np.zeros(0, dtype=np.int64), 0, 0, 0, 0, 0.0)
    start = time.perf_counter()
    while len(sequence) - len(prompt) < max_new_tokens:
        g = min(gamma, max_new_tokens - (len(sequence) - len(prompt)) - 1)
        t_length, d_length = target_state.length, draft_state.length
        for _ in range(attempts):
            drafts, q = propose(draft, draft_state, sequence, g, params, rng) if g > 0 else ([], None)
            try:
                emitted, n = verify_round(target, target_state, sequence, drafts, q, params, rng)
                break
            except TRANSIENT_ERRORS:
                target_state.rollback(min(t_length, target_state.length))
                draft_state.rollback(min(d_length, draft_state.length))
        else:
            raise TargetUnavailable(f"target failed {attempts} rounds in a row")
        stats.record_round(g, n)
        kept = len(sequence) + n
        target_state.rollback(kept)
        draft_state.rollback(min(draft_state.length, kept))
        sequence += emitted
    stats.tokens = np.array(sequence[len(prompt) :], dtype=np.int64)
    stats.seconds = time.perf_counter() - start
    return stats
