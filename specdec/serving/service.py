"""The service without HTTP: validate a request, generate with retries, count it in the metrics.

`GenerationService.handle(body)` takes the raw request body (bytes) and returns (HTTP status,
JSON-able dict); the HTTP server only moves bytes. Every bad request is refused before any
generation, with status 400 and a JSON error naming the field and what is allowed.
"""

import json
import math
import threading
import time
from dataclasses import dataclass

import numpy as np

import specdec
from specdec.serving.metrics import RoundClock, ServiceMetrics
from specdec.serving.retry import RetryingModel, RetryPolicy, TargetUnavailable
from specdec.tokenizer import CHARACTERS, END

MAX_GAMMA = 16
MAX_SEED = 2**63 - 1
ALLOWED = {
    "prompt": "a non-empty string of newlines and printable ASCII characters",
    "max_new_tokens": "an integer in [1, {max_context}], with prompt + max_new_tokens - 1 <= {max_context}",
    "temperature": "a number >= 0 (0 means greedy)",
    "top_k": "an integer >= 1, or null (no top-k)",
    "top_p": "a number in (0, 1] (1 means no top-p)",
    "min_p": "a number in [0, 1] (0 means no min-p)",
    "gamma": f"an integer in [1, {MAX_GAMMA}]",
    "verify": '"token" (one draft at a time, notebook 09) or "block" (the drafts judged together, notebook 11)',
    "seed": f"an integer in [0, {MAX_SEED}], or null for a fresh seed (the response says which)",
}
DEFAULTS = {
    "max_new_tokens": 64,
    "temperature": 1.0,
    "top_k": None,
    "top_p": 1.0,
    "min_p": 0.0,
    "gamma": 4,
    "verify": "token",
    "seed": None,
}


class BadRequest(ValueError):
    """A request the service refuses: status 4xx, a message, and the field at fault (if any)."""

    def __init__(self, message: str, field: str | None = None, allowed: str | None = None, status: int = 400):
        super().__init__(message)
        self.message, self.field, self.allowed, self.status = message, field, allowed, status

    def body(self) -> dict:
        body = {"error": self.message}
        if self.field is not None:
            body["field"] = self.field
        if self.allowed is not None:
            body["allowed"] = self.allowed
        return body


@dataclass(frozen=True)
class Request:
    prompt: list[int]
    max_new_tokens: int
    params: specdec.SamplingParams
    gamma: int
    seed: int
    verify: str = "token"


def _refuse_constant(name: str):
    raise BadRequest(f"the body is not valid JSON: {name} is not a JSON number")


def _integer(body: dict, field: str, low: int, high: int | None, allowed: str) -> int:
    value = body[field]
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        raise BadRequest(f"{field} must be {allowed}, got {json.dumps(value)}", field, allowed)
    return value


class GenerationService:
    """Speculative generation behind a request/response interface, with retries and metrics.

    target, draft: the models (shared by all requests; each request gets its own decoding
    states). target failures that are transient are retried under `policy`.
    """

    def __init__(self, target=None, draft=None, tokenizer=None, policy: RetryPolicy | None = None, metrics=None):
        self.target = specdec.load_model("target") if target is None else target
        self.draft = specdec.load_model("draft") if draft is None else draft
        self.tokenizer = specdec.load_tokenizer() if tokenizer is None else tokenizer
        self.policy = RetryPolicy() if policy is None else policy
        self.metrics = ServiceMetrics() if metrics is None else metrics
        self.max_context = min(self.target.max_context, self.draft.max_context)
        self.allowed = {field: text.format(max_context=self.max_context) for field, text in ALLOWED.items()}
        self._seeds = np.random.default_rng()  # fresh seeds for requests that bring none
        self._lock = threading.Lock()

    def parse(self, raw: bytes) -> Request:
        """The request in `raw` (a JSON object), or BadRequest naming the field at fault."""
        try:
            body = json.loads(raw, parse_constant=_refuse_constant)
        except UnicodeDecodeError:
            raise BadRequest("the body must be UTF-8 encoded JSON") from None
        except json.JSONDecodeError as error:
            raise BadRequest(f"the body is not valid JSON: {error}") from None
        if not isinstance(body, dict):
            raise BadRequest(f"the body must be a JSON object with the fields {sorted(ALLOWED)}")
        unknown = sorted(set(body) - set(ALLOWED))
        if unknown:
            raise BadRequest(f"unknown field(s) {unknown}; allowed fields: {sorted(ALLOWED)}", unknown[0])
        if "prompt" not in body:
            raise BadRequest("the field 'prompt' is required", "prompt", self.allowed["prompt"])
        body = {**DEFAULTS, **body}
        prompt = body["prompt"]
        if not isinstance(prompt, str) or not prompt:
            raise BadRequest(
                f"prompt must be {self.allowed['prompt']}, got {json.dumps(prompt)[:40]}",
                "prompt",
                self.allowed["prompt"],
            )
        outside = sorted({char for char in prompt if char not in CHARACTERS})
        if outside:
            raise BadRequest(
                f"prompt holds characters outside the vocabulary: {''.join(outside)[:20]!r}",
                "prompt",
                self.allowed["prompt"],
            )
        tokens = self.tokenizer.encode(prompt)
        if len(tokens) > self.max_context:
            raise BadRequest(
                f"prompt is {len(tokens)} tokens long, more than max_context {self.max_context}",
                "prompt",
                self.allowed["prompt"] + f" of at most {self.max_context} characters",
            )
        max_new = _integer(body, "max_new_tokens", 1, self.max_context, self.allowed["max_new_tokens"])
        if len(tokens) + max_new - 1 > self.max_context:
            raise BadRequest(
                f"prompt ({len(tokens)} tokens) + max_new_tokens ({max_new}) needs {len(tokens) + max_new - 1}"
                f" positions, more than max_context {self.max_context}",
                "max_new_tokens",
                f"an integer in [1, {self.max_context - len(tokens) + 1}] for this prompt",
            )
        gamma = _integer(body, "gamma", 1, MAX_GAMMA, self.allowed["gamma"])
        if body["verify"] not in ("token", "block"):  # JSON strings only: a list or number is not a rule either
            raise BadRequest(
                f"verify must be {self.allowed['verify']}, got {json.dumps(body['verify'])[:40]}",
                "verify",
                self.allowed["verify"],
            )
        seed = body["seed"]
        if seed is None:
            with self._lock:
                seed = int(self._seeds.integers(MAX_SEED))
        seed = _integer({"seed": seed}, "seed", 0, MAX_SEED, self.allowed["seed"])
        for field in ("temperature", "top_p", "min_p"):
            value = body[field]
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise BadRequest(
                    f"{field} must be {self.allowed[field]}, got {json.dumps(value)}", field, self.allowed[field]
                )
        if body["top_k"] is not None:
            _integer(body, "top_k", 1, None, self.allowed["top_k"])
        for field in (
            "temperature",
            "top_k",
            "top_p",
            "min_p",
        ):  # ranges: the library's own checks, one field at a time
            try:
                specdec.SamplingParams(**{field: body[field]})
            except (TypeError, ValueError) as error:
                raise BadRequest(str(error), field, self.allowed[field]) from None
        params = specdec.SamplingParams(body["temperature"], body["top_k"], body["top_p"], body["min_p"])
        return Request(tokens, max_new, params, gamma, seed, body["verify"])

    def generate(self, request: Request) -> dict:
        """Run one request (TargetUnavailable if the target kept failing); the response body."""
        metrics = self.metrics
        retrying = RetryingModel(
            self.target,
            self.policy,
            on_failure=lambda error: metrics.failures.inc(),
            on_retry=lambda seconds: metrics.retries.inc(),
        )
        clock = RoundClock(retrying, time.perf_counter)
        clock.reset()
        result = specdec.speculative_generate(
            clock,
            self.draft,
            request.prompt,
            request.max_new_tokens,
            request.params,
            request.gamma,
            np.random.default_rng(request.seed),
            end_token=END,
            verify=request.verify,
        )
        metrics.record_generation(result, clock.rounds)
        return {
            "text": self.tokenizer.decode(result.tokens),
            "tokens": result.tokens.tolist(),
            "seed": request.seed,
            "verify": request.verify,
            "new_tokens": int(result.tokens.size),
            "target_calls": result.target_calls,
            "draft_calls": result.draft_calls,
            "drafted": result.drafted,
            "accepted": result.accepted,
            "tested": result.tested,
            "acceptance_rate": result.acceptance_rate,
            "alpha": result.alpha,
            "tokens_per_call": result.tokens_per_call,
            "seconds": result.seconds,
            "target_failures": retrying.failures,
            "retries": retrying.retries,
        }

    def handle(self, raw: bytes) -> tuple[int, dict]:
        """One POST /generate: (status, body). 400 for bad input, 503 when the target kept failing."""
        try:
            request = self.parse(raw)
        except BadRequest as error:
            self.metrics.requests.labels("bad_request").inc()
            return error.status, error.body()
        self.metrics.in_progress.inc()
        try:
            return 200, self.generate(request)
        except TargetUnavailable as error:
            self.metrics.requests.labels("unavailable").inc()
            self.metrics.gave_up.inc()
            return 503, {"error": str(error), "retry": "the request may be sent again; it will give the same text"}
        except Exception as error:  # a bug, not the client's fault: say so, keep serving
            self.metrics.requests.labels("error").inc()
            return 500, {"error": f"internal error: {type(error).__name__}: {error}"}
        finally:
            self.metrics.in_progress.dec()
