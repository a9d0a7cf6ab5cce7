"""The service without HTTP: parse an OpenAI-style completion request, generate it, count it.

`GenerationService.parse(raw)` turns a request body (bytes) into a `Request`, or raises
`ServiceError` (an HTTP status and an error in the OpenAI shape) naming the field at fault: the
JSON is decoded strictly (UTF-8 only, no duplicate keys, no NaN), the fields are checked by a
pydantic model in strict mode (no "1" for 1, no true for 1, no unknown fields), and what depends
on the models (the prompt's characters, the context length) is checked after that. Every bad
request is refused before any generation.

`GenerationService.complete(request, ...)` generates one request with the exact retries of
`specdec.serving.retry`, and stops early (raising `ServiceError`) when the request's deadline
passes or when `cancelled` is set (the client went away). `on_tokens` receives each round's
tokens as soon as they are verified (streaming). The requests in flight share the target's calls
(`specdec.serving.batcher`: one call per round for all of them, each text bit for bit what it is
alone); `batch_rows=None`, or a target that is not a GPT, generates each request alone in its
caller's thread instead, as the service did before batching. The HTTP layer, `specdec.serving.app`,
only moves bytes and counts what it sent.
"""

import json
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

import specdec
from specdec.gpt import GPT
from specdec.serving.batcher import BatchedResult, Batcher
from specdec.serving.metrics import RoundClock, ServiceMetrics
from specdec.serving.retry import DeadlineReached, RetryPolicy, TargetUnavailable
from specdec.tokenizer import CHARACTERS, END

MAX_GAMMA = 16
MAX_SEED = 2**63 - 1
MAX_TOP_K = 2**31 - 1
MODEL = "specdec-bundled"  # the name clients put in "model": the bundled target with its draft
ALLOWED = {
    "model": f'"{MODEL}" (GET /v1/models lists it)',
    "prompt": "a non-empty string of newlines and printable ASCII characters",
    "max_tokens": "an integer in [1, {max_context}], with prompt + max_tokens - 1 <= {max_context}",
    "temperature": "a number >= 0 (0 means greedy)",
    "top_p": "a number in (0, 1] (1 means no top-p)",
    "n": "1 (one completion per request)",
    "stream": "true or false",
    "stream_options": '{{"include_usage": true or false}}, with stream true',
    "seed": f"an integer in [0, {MAX_SEED}], or null for a fresh seed (the response says which)",
    "top_k": f"an integer in [1, {MAX_TOP_K}], or null (no top-k)",
    "min_p": "a number in [0, 1] (0 means no min-p)",
    "gamma": f"an integer in [1, {MAX_GAMMA}]",
    "verify": '"token" (one draft at a time, notebook 09) or "block" (the drafts judged together, notebook 11)',
    # OpenAI's fields this service understands but does not offer: accepted at their neutral value only
    "user": "a string (an end user's id; accepted and not used)",
    "echo": "false (this server does not echo the prompt)",
    "logprobs": "null or 0 (this server returns no log-probabilities)",
    "best_of": "1 (one completion per request)",
    "frequency_penalty": "0 (no penalties: they would change the target's law)",
    "presence_penalty": "0 (no penalties: they would change the target's law)",
    "logit_bias": "null or {{}} (no bias: it would change the target's law)",
    "stop": "null (no stop sequences; a generation stops at the end token or at max_tokens)",
    "suffix": "null (no insertion)",
}


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    include_usage: bool = False


class CompletionRequest(BaseModel):
    """The body of POST /v1/completions: OpenAI's fields this service supports, and its own four.

    OpenAI's: model, prompt (one string, or a list of one), max_tokens, temperature, top_p, n (1
    only), stream, stream_options, seed; and, at their neutral values only, user, echo, logprobs,
    best_of, the penalties, logit_bias, stop and suffix (so that clients which send them by
    default work). This service's: top_k, min_p, gamma and verify. Strict: a field of the wrong
    JSON type is refused, never converted.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    model: str
    prompt: str | Annotated[list[str], Field(min_length=1, max_length=1)]  # one prompt, alone or in a list
    max_tokens: int = Field(16, ge=1)  # OpenAI's default
    temperature: float = Field(1.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    n: int = Field(1, ge=1, le=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    top_k: int | None = Field(None, ge=1, le=MAX_TOP_K)
    min_p: float = Field(0.0, ge=0.0, le=1.0)
    gamma: int = Field(4, ge=1, le=MAX_GAMMA)
    verify: Literal["token", "block"] = "token"
    user: str | None = None
    echo: Literal[False] = False
    logprobs: Literal[0] | None = None
    best_of: int = Field(1, ge=1, le=1)
    frequency_penalty: float = Field(0.0, ge=0.0, le=0.0)
    presence_penalty: float = Field(0.0, ge=0.0, le=0.0)
    logit_bias: dict[str, float] | None = Field(None, max_length=0)
    stop: None = None
    suffix: None = None


class ServiceError(Exception):
    """A request the service does not complete: an HTTP status and an error in OpenAI's shape.

    kind: OpenAI's error "type" (invalid_request_error for the client's mistakes, server_error
    for ours); code: a short machine-readable reason; param: the field at fault, if any.
    """

    def __init__(
        self,
        status: int,
        message: str,
        code: str,
        param: str | None = None,
        kind: str | None = None,
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param
        self.kind = kind or ("invalid_request_error" if status < 500 or status == 505 else "server_error")
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


@dataclass(frozen=True)
class Request:
    prompt: list[int]
    max_tokens: int
    params: specdec.SamplingParams
    gamma: int
    seed: int
    verify: str = "token"
    stream: bool = False
    include_usage: bool = False


def _refuse_duplicates(pairs: list) -> dict:
    seen: set = set()
    repeated = sorted({key for key, _ in pairs if key in seen or seen.add(key)})  # one pass: linear in the keys
    if repeated:
        raise ServiceError(400, f"the body's JSON repeats the key(s) {repeated}: give each field once", "invalid_json")
    return dict(pairs)


def _refuse_constant(name: str):
    raise ServiceError(400, f"the body is not valid JSON: {name} is not a JSON number", "invalid_json")


def decode_json(raw: bytes):
    """The JSON value in `raw`, decoded strictly, or ServiceError 400 saying what is wrong."""
    try:
        text = raw.decode("utf-8")  # strict: UTF-16, Latin-1 or stray bytes are refused here
    except UnicodeDecodeError:
        raise ServiceError(400, "the body must be UTF-8 encoded JSON", "invalid_json") from None
    try:
        return json.loads(text, object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise ServiceError(400, f"the body is not valid JSON: {error}", "invalid_json") from None
    except RecursionError:
        raise ServiceError(400, "the body is not valid JSON here: nested too deeply", "invalid_json") from None
    except ValueError:  # an integer of more than 4,300 digits (Python's int_max_str_digits)
        raise ServiceError(
            400, "the body is not valid JSON here: an integer has more than 4300 digits", "invalid_json"
        ) from None


def _shown(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class GenerationStats:
    """What one completed request cost: the answer's `specdec` block (as JSON: dataclasses.asdict)."""

    seed: int  # the request's seed (drawn by the service if the request brought none)
    gamma: int | str  # drafts per round, or "auto"
    verify: str  # "token" or "block"
    target_calls: int
    draft_calls: int
    drafted: int  # tokens the draft proposed
    accepted: int  # drafts the target kept
    tested: int  # drafts the target tested (alpha = accepted / tested)
    alpha: float
    tokens_per_call: float  # new tokens per target call
    target_failures: int  # target calls that failed and were retried
    retries: int
    seconds: float  # the generation's wall-clock time


@dataclass(frozen=True)
class Completion:
    """A finished generation: the new tokens (int64), their text, why it stopped, and what it cost."""

    tokens: np.ndarray  # (n,) int64, the new tokens only
    text: str
    finish_reason: str  # "stop" (the end token) or "length" (max_tokens)
    specdec: GenerationStats


class GenerationService:
    """Speculative generation behind a request interface, with retries, a deadline and metrics.

    target, draft: the models (shared by all requests; each request gets its own decoding
    states). Transient target failures are retried under `policy`; `timeout` is each request's
    deadline in seconds, retries included. batch_rows: the most requests decoded together, in one
    target call per round (`Batcher`), for a GPT target (the bundled one); None, or any other target
    (the fault-injecting and slowed wrappers), each request alone, in the thread that calls `complete`.
    batch_call and plain_from: the Batcher's `call` and `plain_from`.
    """

    def __init__(
        self,
        target=None,
        draft=None,
        tokenizer=None,
        policy: RetryPolicy | None = None,
        metrics: ServiceMetrics | None = None,
        timeout: float = 30.0,
        batch_rows: int | None = 16,
        batch_call: str = "invariant",
        plain_from: int | None = None,
    ):
        if not (isinstance(timeout, int | float) and 0 < timeout < math.inf):
            raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        self.target = specdec.load_model("target") if target is None else target
        self.draft = specdec.load_model("draft") if draft is None else draft
        self.tokenizer = specdec.load_tokenizer() if tokenizer is None else tokenizer
        self.policy = RetryPolicy() if policy is None else policy
        self.metrics = ServiceMetrics() if metrics is None else metrics
        self.timeout = float(timeout)
        self.max_context = min(self.target.max_context, self.draft.max_context)
        self.allowed = {field: text.format(max_context=self.max_context) for field, text in ALLOWED.items()}
        self._seeds = np.random.default_rng()  # fresh seeds for requests that bring none
        self._lock = threading.Lock()
        self.batcher = None
        if batch_rows is not None and isinstance(self.target, GPT):
            self.batcher = Batcher(
                self.target, self.draft, self.policy, self.metrics, batch_rows, batch_call, plain_from
            )

    def close(self) -> None:
        """Stop the batcher's thread (requests still in it fail); a service without a batcher has nothing to stop."""
        if self.batcher is not None:
            self.batcher.close()

    def parse(self, raw: bytes) -> Request:
        """The request in `raw`, or ServiceError (400 bad JSON, 404 unknown model, 422 a bad field)."""
        body = decode_json(raw)
        try:
            fields = CompletionRequest.model_validate(body)
        except ValidationError as error:
            first = error.errors()[0]
            param = str(first["loc"][0]) if first["loc"] else None
            if param is None:
                message = f"the body must be a JSON object with the fields {sorted(ALLOWED)}"
            elif first["type"] == "extra_forbidden":
                top, param = param, ".".join(str(part) for part in first["loc"])  # a nested field by its path
                message = f"unknown field {param!r}; allowed fields: {sorted(ALLOWED)}"
                if param != top:
                    message = f"unknown field {param!r}; {top} must be {self.allowed[top]}"
            elif first["type"] == "missing":
                message = f"the field {param!r} is required: {self.allowed[param]}"
            else:
                got = _shown(first["input"])
                message = (
                    f"{param} must be {self.allowed[param]}, got {got} ({first['msg'][0].lower()}{first['msg'][1:]})"
                )
            raise ServiceError(422, message, "invalid_field", param) from None
        if fields.model != MODEL:
            raise ServiceError(
                404,
                f"the model {_shown(fields.model)} does not exist; this server serves {MODEL!r}",
                "model_not_found",
                "model",
            )
        return self._check(fields)

    def _refuse(self, param: str, message: str) -> ServiceError:
        return ServiceError(422, message, "invalid_field", param)

    def _check(self, fields: CompletionRequest) -> Request:
        """The checks that depend on the models: the prompt's characters and length, and the context."""
        prompt = fields.prompt if isinstance(fields.prompt, str) else fields.prompt[0]
        if not prompt:
            raise self._refuse("prompt", f'prompt must be {self.allowed["prompt"]}, got ""')
        outside = sorted({char for char in prompt if char not in CHARACTERS})
        if outside:
            raise self._refuse("prompt", f"prompt holds characters outside the vocabulary: {''.join(outside)[:20]!r}")
        tokens = self.tokenizer.encode(prompt)
        if len(tokens) > self.max_context:
            raise self._refuse(
                "prompt", f"prompt is {len(tokens)} tokens long, more than max_context {self.max_context}"
            )
        given = "" if "max_tokens" in fields.model_fields_set else ", the default"
        if fields.max_tokens > self.max_context or len(tokens) + fields.max_tokens - 1 > self.max_context:
            raise self._refuse(
                "max_tokens",
                f"prompt ({len(tokens)} tokens) + max_tokens ({_shown(fields.max_tokens)}{given}) - 1 positions are"
                f" more than max_context {self.max_context}: max_tokens must be in"
                f" [1, {self.max_context - len(tokens) + 1}] here (the last token is never read, so needs no position)",
            )
        if fields.stream_options is not None and not fields.stream:
            raise self._refuse("stream_options", f"stream_options must be {self.allowed['stream_options']}")
        params = specdec.SamplingParams(fields.temperature, fields.top_k, fields.top_p, fields.min_p)  # in range
        seed = fields.seed
        if seed is None:
            with self._lock:
                seed = int(self._seeds.integers(MAX_SEED))
        include_usage = fields.stream_options is not None and fields.stream_options.include_usage
        return Request(
            tokens, fields.max_tokens, params, fields.gamma, seed, fields.verify, fields.stream, include_usage
        )

    def complete(
        self,
        request: Request,
        on_tokens: Callable[[np.ndarray], None] | None = None,
        cancelled: threading.Event | None = None,
        deadline: float | None = None,
    ) -> Completion:
        """Generate `request`: its tokens, text and statistics, with the work counted in the metrics.

        on_tokens(tokens): each round's new tokens, once verified; the caller sends them (or counts
        them as discarded), and only tokens never handed over are counted as discarded here. cancelled: when set, the
        generation stops at the end of the round (ServiceError 499: the client went away).
        deadline: a time.monotonic() after which it stops (ServiceError 504; default now +
        timeout); the retries stop at it too. Each request has its own decoding states, so a
        stopped generation leaves nothing behind. Raises ServiceError 503 if the target kept failing.
        """
        deadline = time.monotonic() + self.timeout if deadline is None else deadline
        metrics = self.metrics
        generated = [0]  # tokens verified so far, delivered or not
        delivered = [0]  # tokens handed to on_tokens: the caller sends them, or counts them as discarded

        def each_round(tokens: np.ndarray) -> None:
            generated[0] += tokens.size
            if cancelled is not None and cancelled.is_set():
                raise ServiceError(499, "the client closed the connection", "client_closed")
            if time.monotonic() > deadline:
                raise _deadline(self.timeout, generated[0], request.max_tokens)
            if on_tokens is not None:
                on_tokens(tokens)
                delivered[0] += tokens.size

        try:
            if self.batcher is None:
                done = self._alone(request, each_round, deadline)
            else:
                rng = np.random.default_rng(request.seed)
                args = (request.max_tokens, request.params, request.gamma, rng, request.verify, END, each_round)
                done = self.batcher.submit(request.prompt, *args, deadline=deadline).result()
        except ServiceError as error:
            metrics.discarded.labels(error.code).inc(generated[0] - delivered[0])
            raise
        except DeadlineReached:
            metrics.discarded.labels("deadline_exceeded").inc(generated[0] - delivered[0])
            raise _deadline(self.timeout, generated[0], request.max_tokens) from None
        except TargetUnavailable as error:
            metrics.gave_up.inc()
            metrics.discarded.labels("target_unavailable").inc(generated[0] - delivered[0])
            raise ServiceError(
                503,
                f"{error}. The request may be sent again: with the same seed it gives the same text.",
                "target_unavailable",
                headers={"Retry-After": "1"},
            ) from None
        result = done.result
        metrics.record_work(result)
        finish = "stop" if result.tokens.size and result.tokens[-1] == END else "length"
        stats = GenerationStats(
            seed=request.seed,
            gamma=request.gamma,
            verify=request.verify,
            target_calls=result.target_calls,
            draft_calls=result.draft_calls,
            drafted=result.drafted,
            accepted=result.accepted,
            tested=result.tested,
            alpha=result.alpha,
            tokens_per_call=result.tokens_per_call,
            target_failures=done.failures,
            retries=done.retries,
            seconds=result.seconds,
        )
        return Completion(result.tokens, self.tokenizer.decode(result.tokens), finish, stats)

    def _alone(self, request: Request, each_round: Callable, deadline: float) -> BatchedResult:
        """The request generated by itself in this thread: speculative_generate with exact retries."""
        metrics = self.metrics
        retrying = metrics.retrying(self.target, self.policy, deadline)
        clock = RoundClock(retrying, time.perf_counter)
        result = specdec.speculative_generate(
            clock,
            self.draft,
            request.prompt,
            request.max_tokens,
            request.params,
            request.gamma,
            np.random.default_rng(request.seed),
            end_token=END,
            verify=request.verify,
            on_round=each_round,
        )
        for seconds in clock.rounds:  # each round a call of one request
            metrics.round_seconds.observe(seconds)
            metrics.batch_rows.observe(1)
        return BatchedResult(result, retrying.failures, retrying.retries)


def _deadline(timeout: float, generated: int, max_tokens: int) -> ServiceError:
    return ServiceError(
        504,
        f"the request's deadline of {timeout:g} s passed after {generated} of at most {max_tokens} tokens, and the"
        " generation stopped there (an answer that was not streamed has none of them). Ask for fewer tokens, or"
        " send it again: with the same seed it gives the same text.",
        "deadline_exceeded",
    )


def completion_id() -> str:
    return f"cmpl-{uuid.uuid4().hex}"


def completion_body(identity: str, created: int, request: Request, done: Completion) -> dict:
    """A finished completion in OpenAI's shape (the JSON body), with `usage` and this service's `specdec` block."""
    return {
        "id": identity,
        "object": "text_completion",
        "created": created,
        "model": MODEL,
        "choices": [{"text": done.text, "index": 0, "logprobs": None, "finish_reason": done.finish_reason}],
        "usage": usage(request, done.tokens.size),
        "specdec": asdict(done.specdec),
    }


def usage(request: Request, completion_tokens: int) -> dict:
    prompt_tokens = len(request.prompt)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
