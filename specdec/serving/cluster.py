"""Scale-out on dask.distributed: many requests over many workers, and a target on another worker.

Many requests (`generate_many`): each request is one task; the models are loaded once per worker
process (`worker_models` caches them) and every request's generator comes from its own child of
one `np.random.SeedSequence` (`request_seeds`), so the texts do not depend on which worker runs
which request, or in what order: a dask run equals the sequential run token for token.

A remote target (`RemoteModel`): the blog post's proposal of draft and target on separate
workers. The target lives in a dask actor on one worker, holding its decoding states; the
generation loop (and the draft) run elsewhere, and every target call is one round trip. A
rollback is not sent on its own: it rides along with the next score call, so a round costs one
round trip, whatever it accepts.
"""

import functools
import itertools
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from distributed import Client, LocalCluster, get_worker

import specdec
from specdec.timing import blas_threads
from specdec.tokenizer import END


@dataclass(frozen=True)
class Job:
    """One generation request: a prompt (text), its length and sampling parameters, and gamma."""

    prompt: str
    max_new_tokens: int = 64
    params: specdec.SamplingParams = specdec.SamplingParams()
    gamma: int = 4


@functools.cache
def worker_models():
    """(target, draft, tokenizer), loaded once per process and shared by all its tasks."""
    return specdec.load_model("target"), specdec.load_model("draft"), specdec.load_tokenizer()


def request_seeds(root: int, n: int) -> list[np.random.SeedSequence]:
    """One independent SeedSequence per request, spawned from the root: request i always gets child i."""
    return np.random.SeedSequence(root).spawn(n)


def run_job(job: Job, seed: np.random.SeedSequence) -> dict:
    """Generate one request (in whatever process runs it); the tokens, text and statistics."""
    target, draft, tokenizer = worker_models()
    with blas_threads(1):
        result = specdec.speculative_generate(
            target,
            draft,
            tokenizer.encode(job.prompt),
            job.max_new_tokens,
            job.params,
            job.gamma,
            np.random.default_rng(seed),
            end_token=END,
        )
    return {
        "tokens": result.tokens.tolist(),
        "text": tokenizer.decode(result.tokens),
        "target_calls": result.target_calls,
        "drafted": result.drafted,
        "accepted": result.accepted,
        "seconds": result.seconds,
    }


def generate_sequential(jobs: list[Job], root_seed: int) -> list[dict]:
    """The reference: every job in this process, one after another."""
    return [run_job(job, seed) for job, seed in zip(jobs, request_seeds(root_seed, len(jobs)), strict=True)]


def generate_many(client: Client, jobs: list[Job], root_seed: int, workers: list[str] | None = None) -> list[dict]:
    """The same results as generate_sequential, with the jobs spread over the cluster's workers.

    workers: the addresses allowed to run them (default: any worker of the cluster).
    """
    seeds = request_seeds(root_seed, len(jobs))
    futures = [
        client.submit(run_job, job, seed, pure=False, workers=workers, allow_other_workers=False)
        for job, seed in zip(jobs, seeds, strict=True)
    ]
    return client.gather(futures)


def local_cluster(n_workers: int) -> LocalCluster:
    """A LocalCluster on 127.0.0.1: n worker processes with one thread each, no dashboard, quiet logs."""
    return LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",  # a free port on loopback (None still serves 8787)
        silence_logs=logging.ERROR,
    )


def quiet_dask_logging() -> None:
    """Only errors from distributed's loggers in this process (start-up and shutdown chatter otherwise)."""
    for name in ("distributed", "distributed.scheduler", "distributed.nanny", "distributed.worker", "tornado"):
        logging.getLogger(name).setLevel(logging.ERROR)


# --- the target on another worker ------------------------------------------------------------------


class SlowModel:
    """A LanguageModel that waits `step_seconds` in every score call: a stand-in for a big target.

    A large model on an accelerator is memory-bound: a call costs about the same for 1 or 5
    positions (f(n) close to 1), and that is what a fixed wait per call imitates. Same logits,
    same tokens as the wrapped model.
    """

    def __init__(self, model, step_seconds: float):
        self.model, self.step_seconds = model, step_seconds
        self.name, self.vocab_size, self.max_context = model.name, model.vocab_size, model.max_context

    def start(self):
        return self.model.start()

    def score(self, tokens, state):
        time.sleep(self.step_seconds)
        return self.model.score(tokens, state)


class TargetActor:
    """Lives on one worker (a dask actor): the target model and the decoding states of remote callers.

    step_seconds > 0 makes it a SlowModel (a bigger target's step, imitated).
    """

    def __init__(self, name: str = "target", step_seconds: float = 0.0):
        self.model = specdec.load_model(name)
        if step_seconds > 0:
            self.model = SlowModel(self.model, step_seconds)
        self.states: dict[int, object] = {}
        self.ids = itertools.count()

    def describe(self) -> tuple[str, int, int]:
        return self.model.name, self.model.vocab_size, self.model.max_context

    def start(self) -> int:
        key = next(self.ids)
        self.states[key] = self.model.start()
        return key

    def close(self, key: int) -> None:
        self.states.pop(key, None)

    def open_states(self) -> int:
        """How many decoding states are held: 0 when every caller closed what it started."""
        return len(self.states)

    def score(self, key: int, rollback_to: int, tokens: list[int]) -> tuple[np.ndarray, float]:
        """Roll state `key` back to `rollback_to`, score `tokens`; the logits and the seconds it took here."""
        state = self.states[key]
        start = time.perf_counter()
        with blas_threads(1):
            state.rollback(rollback_to)
            logits = self.model.score(tokens, state)
        return logits, time.perf_counter() - start

    def ping(self) -> int:
        return 0

    def where(self) -> str:
        return get_worker().address


class RemoteState:
    """The caller's view of a state that lives in the actor: its length, and a pending rollback."""

    def __init__(self, key: int):
        self.key, self._length, self._confirmed = key, 0, 0

    @property
    def length(self) -> int:
        return self._length

    def rollback(self, length: int) -> None:
        if not 0 <= length <= self._length:
            raise ValueError(f"rollback length must be in [0, {self._length}], got {length}")
        self._length = length  # sent with the next score call: no round trip of its own


class RemoteModel:
    """A LanguageModel whose forward pass runs in a TargetActor on another worker: one round trip per call.

    `seconds_remote` and `seconds_total` add up the time spent computing in the actor and the time
    the caller waited, so their difference is what the round trips cost.
    """

    def __init__(self, actor):
        self.actor = actor
        self.name, self.vocab_size, self.max_context = actor.describe().result()
        self.name = f"remote {self.name}"
        self.calls, self.seconds_remote, self.seconds_total = 0, 0.0, 0.0
        self.started: list[int] = []  # keys of the actor's states this model started and has not closed

    def start(self) -> RemoteState:
        state = RemoteState(self.actor.start().result())
        self.started.append(state.key)
        return state

    @contextmanager
    def closing(self) -> Iterator["RemoteModel"]:
        """Inside the `with` block, generate as usual; on leaving it, even by an error, the actor frees
        every decoding state started inside (one KV cache each), in a `finally`.

            with remote.closing():
                result = specdec.speculative_generate(remote, draft, prompt, 80, params, 4, rng)
        """
        before = len(self.started)
        try:
            yield self
        finally:
            opened, self.started = self.started[before:], self.started[:before]
            for key in opened:
                self.actor.close(key).result()

    def score(self, tokens, state: RemoteState) -> np.ndarray:
        tokens = [int(t) for t in np.asarray(tokens).reshape(-1)]
        start = time.perf_counter()
        logits, seconds = self.actor.score(state.key, state.length, tokens).result()
        self.seconds_total += time.perf_counter() - start
        self.seconds_remote += seconds
        self.calls += 1
        state._length += len(tokens)
        return logits
