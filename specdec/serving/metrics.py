"""Prometheus metrics for the service (prometheus_client), in a registry of their own.

Counters only ever grow, so Prometheus derives rates from them: tokens per second is
`rate(specdec_generated_tokens_total[1m])`, the acceptance rate α as notebook 10 defines it
`rate(specdec_accepted_tokens_total[5m]) / rate(specdec_tested_tokens_total[5m])` (accepted over
tested: the drafts after a round's first rejection are never tested, so accepted over drafted
underestimates α). Latencies are
histograms (cumulative bucket counters), so any percentile comes from the server side's buckets:
`histogram_quantile(0.99, rate(specdec_request_seconds_bucket[5m]))`. A summary's quantiles could
not be aggregated over several servers; a histogram's buckets can.
"""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from specdec.serving.retry import RetryingModel

# Bucket edges in seconds: a round of one request takes about a millisecond here, a round of 16 several,
# a request up to a second or so.
ROUND_BUCKETS = (0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.006, 0.008, 0.012, 0.02, 0.05, 0.1, 0.5)
REQUEST_BUCKETS = (0.01, 0.02, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256)  # requests per target call


# Every request is counted once, by the status it got and why (code "499": the client closed the
# connection before an answer, nginx's convention; the answer was never sent).
OUTCOMES = {
    "ok": "200",
    "bad_request": "400",  # not JSON, or not HTTP (uvicorn's parser refused the framing)
    "not_found": "404",
    "method_not_allowed": "405",
    "timeout": "408",  # the headers or the body came too slowly
    "too_large": "413",
    "unsupported_media_type": "415",
    "invalid_field": "422",
    "headers_too_large": "431",
    "aborted": "499",
    "error": "500",
    "rejected": "503",  # too many generations at once, or too many connections
    "unavailable": "503",  # the target kept failing
    "deadline": "504",
    "version_not_supported": "505",
}


class ServiceMetrics:
    """The service's counters and histograms, registered in `registry` (a fresh one by default)."""

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = CollectorRegistry() if registry is None else registry
        r = self.registry
        self.requests = Counter(
            "specdec_requests", "HTTP requests, by status and outcome", ["code", "outcome"], registry=r
        )
        self.generated = Counter("specdec_generated_tokens", "New tokens sent to clients", registry=r)
        self.discarded = Counter(
            "specdec_discarded_tokens", "Tokens generated but not sent (deadline, client gone)", ["reason"], registry=r
        )
        self.drafted = Counter("specdec_drafted_tokens", "Draft tokens proposed (finished generations)", registry=r)
        self.accepted = Counter("specdec_accepted_tokens", "Draft tokens accepted by the target", registry=r)
        self.tested = Counter(
            "specdec_tested_tokens", "Draft tokens tested (the accepted, and each round's first rejected)", registry=r
        )
        self.rounds = Counter(
            "specdec_target_calls", "Rounds: a request's share of a target call (calls: specdec_batch_rows)", registry=r
        )
        self.failures = Counter("specdec_target_failures", "Target calls that raised a transient error", registry=r)
        self.retries = Counter("specdec_target_retries", "Target calls retried after a transient error", registry=r)
        self.gave_up = Counter("specdec_target_gave_up", "Generations abandoned after the retries ran out", registry=r)
        self.in_progress = Gauge("specdec_requests_in_progress", "Generations running now", registry=r)
        self.batch_rows = Histogram(
            "specdec_batch_rows", "Requests scored by each target call", buckets=BATCH_BUCKETS, registry=r
        )
        self.batch_rows_now = Gauge("specdec_batch_rows_now", "Requests in the batch after the last round", registry=r)
        self.request_seconds = Histogram(
            "specdec_request_seconds", "Generation time per answered request", buckets=REQUEST_BUCKETS, registry=r
        )
        self.round_seconds = Histogram(
            "specdec_round_seconds",
            "Time per round (drafts, one target call, verification)",
            buckets=ROUND_BUCKETS,
            registry=r,
        )
        for outcome, code in OUTCOMES.items():
            self.requests.labels(code, outcome)  # every series exists from the start, at 0

    def record_request(
        self, outcome: str, tokens: int = 0, seconds: float | None = None, code: str | None = None
    ) -> None:
        """Count one request by its outcome (a key of OUTCOMES), the tokens sent and, if answered, its time.

        code: the status the client saw, when it is not the outcome's own: a stream cut short by the
        deadline or by its client had already been sent "200", so it is counted as ("200", "deadline").
        """
        self.requests.labels(OUTCOMES[outcome] if code is None else code, outcome).inc()
        self.generated.inc(tokens)
        if seconds is not None:
            self.request_seconds.observe(seconds)

    def record_work(self, result, round_seconds: list[float] = ()) -> None:
        """Count one finished generation's work (a SpeculativeResult) and its rounds' durations (if timed alone)."""
        self.drafted.inc(result.drafted)
        self.accepted.inc(result.accepted)
        self.tested.inc(result.tested)
        self.rounds.inc(result.target_calls)
        for seconds in round_seconds:
            self.round_seconds.observe(seconds)

    def retrying(self, model, policy, until: float) -> RetryingModel:
        """`model` retried exactly under `policy` until `until` (a time.monotonic()), failures and retries counted."""
        return RetryingModel(
            model,
            policy,
            on_failure=lambda error: self.failures.inc(),
            on_retry=lambda seconds: self.retries.inc(),
            until=until,
        )

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format (what GET /metrics returns)."""
        return generate_latest(self.registry)


class RoundClock:
    """A LanguageModel wrapper that times rounds: the interval between the ends of two target calls.

    In speculative decoding each round ends with one target call, so these intervals (the first
    measured from `reset()`) are the rounds' durations: drafting plus verifying.
    """

    def __init__(self, model, clock):
        self.model, self.clock = model, clock
        self.name, self.vocab_size, self.max_context = model.name, model.vocab_size, model.max_context
        self.rounds: list[float] = []
        self.last = clock()

    def reset(self) -> None:
        self.rounds, self.last = [], self.clock()

    def start(self):
        return self.model.start()

    def score(self, tokens, state):
        logits = self.model.score(tokens, state)
        now = self.clock()
        self.rounds.append(now - self.last)
        self.last = now
        return logits
