"""Appendix B's batcher: requests in flight share the target's calls, and every text is the text alone.

Optional: needs prometheus_client and tenacity (requirements-extras.txt); CI (.ci/run) runs it in the
extras environment:

    .venv-extras/bin/python -m pytest tests/optional/test_batcher.py

"Alone" is the same service with one request at a time: the batcher with a batch of one.
"""

import json
import threading
import time

import numpy as np
import pytest

import specdec
from specdec.batch import score_batch, start_rows
from specdec.serving.batcher import BatchedTarget, Batcher, Rows
from specdec.serving.cluster import SlowModel
from specdec.serving.faults import TransientError
from specdec.serving.metrics import ServiceMetrics
from specdec.serving.retry import RetryPolicy
from specdec.serving.service import MODEL, GenerationService, ServiceError
from specdec.speculative import SpeculativeResult

TARGET, DRAFT, TOKENIZER = specdec.load_model("target"), specdec.load_model("draft"), specdec.load_tokenizer()
QUICK_RETRIES = RetryPolicy(attempts=40, initial=0.0, maximum=0.0, jitter=0.0, deadline=30.0)
PROMPTS = ["def __init__(self", "import o", "for i in range(", "class Stack:\n    ", "x", "return self."]


OPEN: list = []  # the services a test made: their batchers' threads are stopped after it


def service_of(*args, **kwargs) -> GenerationService:
    service = GenerationService(*args, **kwargs)
    OPEN.append(service)
    return service


@pytest.fixture(autouse=True)
def close_services():
    yield
    while OPEN:
        OPEN.pop().close()


def bodies(count: int) -> list[dict]:
    """Requests of every kind: sampled and greedy, filters, token and block verification, gammas, lengths."""
    out = []
    for i in range(count):
        fields = {"model": MODEL, "prompt": PROMPTS[i % len(PROMPTS)], "max_tokens": 12 + 7 * (i % 7), "seed": i}
        fields |= [
            {"temperature": 1.0},
            {"temperature": 0.0},
            {"temperature": 0.8, "top_p": 0.9},
            {"temperature": 1.2, "top_k": 20, "verify": "block"},
            {"temperature": 0.6, "min_p": 0.05},
        ][i % 5]
        out.append(fields | {"gamma": 1 + i % 6})
    return out


def parsed(service: GenerationService, count: int) -> list:
    return [service.parse(json.dumps(body).encode()) for body in bodies(count)]


def together(service: GenerationService, requests: list, stagger: float = 0.002) -> list:
    """Every request at once from its own thread, started a little apart: rows join and leave between rounds."""
    answers: list = [None] * len(requests)

    def run(i: int) -> None:
        try:
            answers[i] = service.complete(requests[i])
        except ServiceError as error:
            answers[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
        time.sleep(stagger)
    for thread in threads:
        thread.join(120)
    return answers


def calls_with_company(metrics: ServiceMetrics) -> float:
    """Target calls that scored more than one request, read from the batch-size histogram."""
    samples = {s.name + str(s.labels): s.value for family in metrics.registry.collect() for s in family.samples}
    return samples["specdec_batch_rows_count{}"] - samples["specdec_batch_rows_bucket{'le': '1.0'}"]


# --- texts under load are the texts alone ------------------------------------------------------------


def test_every_text_under_load_is_bit_for_bit_its_text_alone():
    service = service_of(TARGET, DRAFT, TOKENIZER)
    requests = parsed(service, 30)
    alone = [service.complete(request) for request in requests]
    assert calls_with_company(service.metrics) == 0  # one at a time: every call scored one request
    crowded = together(service, requests)
    assert calls_with_company(service.metrics) > 10  # the load shared calls
    for request, one, many in zip(requests, alone, crowded, strict=True):
        assert np.array_equal(one.tokens, many.tokens), request
        if not request.params.greedy:  # a sampled row decodes the same way whatever the load
            assert (one.specdec.target_calls, one.specdec.accepted) == (
                many.specdec.target_calls,
                many.specdec.accepted,
            )


class Recorder:
    """A batched call that remembers the logits of every position it scores, by the text up to it."""

    def __init__(self, call):
        self.call, self.texts, self.logits = call, {}, {}

    def __call__(self, model, tokens, states):
        out = self.call(model, tokens, states)
        for state, new, logits in zip(states, tokens, out, strict=True):
            past = state.length - len(new)  # the call moved the length past the new tokens
            text = self.texts.get(id(state), [])[:past] + list(new)
            self.texts[id(state)] = text
            for j, row in enumerate(logits):  # (V,) after text[: past + j + 1]
                self.logits[tuple(text[: past + j + 1])] = row.copy()
        return out


def logits_alone_and_crowded(batch_call: str) -> tuple[dict, dict]:
    service = service_of(TARGET, DRAFT, TOKENIZER, batch_call=batch_call)
    requests = parsed(service, 12)
    recorders = []
    for run in (lambda: [service.complete(r) for r in requests], lambda: together(service, requests, 0.0)):
        recorder = Recorder(service.batcher.call)
        service.batcher.batched = BatchedTarget(TARGET, recorder)
        run()
        recorders.append(recorder.logits)
    return recorders[0], recorders[1]


def test_a_row_gets_the_same_logits_in_any_company():
    alone, crowded = logits_alone_and_crowded("invariant")
    shared = set(alone) & set(crowded)
    assert len(shared) > 500
    assert all(np.array_equal(alone[text], crowded[text]) for text in shared)


def test_the_padded_call_moves_with_the_company_the_control():
    alone, crowded = logits_alone_and_crowded("padded")
    shared = set(alone) & set(crowded)
    assert len(shared) > 500
    assert not all(np.array_equal(alone[text], crowded[text]) for text in shared)  # the test above can fail


def test_a_greedy_row_gives_the_same_text_drafting_or_not():
    drafting = service_of(TARGET, DRAFT, TOKENIZER, plain_from=10**6)  # greedy rows always draft
    plain = service_of(TARGET, DRAFT, TOKENIZER, plain_from=1)  # greedy rows never draft
    requests = [r for r in parsed(drafting, 20) if r.params.greedy]
    drafted, one_by_one = together(drafting, requests), together(plain, requests)
    for a, b in zip(drafted, one_by_one, strict=True):
        assert np.array_equal(a.tokens, b.tokens)
        assert b.specdec.drafted == 0 and b.specdec.target_calls == b.tokens.size
    assert sum(a.specdec.target_calls for a in drafted) < sum(b.specdec.target_calls for b in one_by_one)


def test_greedy_rows_stop_drafting_where_the_cost_model_says_it_does_not_pay():
    batcher = Batcher(TARGET, DRAFT, QUICK_RETRIES, ServiceMetrics())
    batcher.close()
    shared = {(b, n): 1e-3 for b in (1, 16) for n in (1, 17)}  # a call costs the same for 1 or 17 tokens
    apart = {(b, n): 1e-3 * b * n for b in (1, 16) for n in (1, 17)}  # no sharing at all: drafting never pays
    state = type("Row", (), {"stats": SpeculativeResult(np.zeros(0, np.int64), 0, 0, 0, 0, 0.0)})()  # a = 1/2
    batcher.times = shared
    assert batcher._drafting_pays(state, 4, 16)
    batcher.times = apart
    assert not batcher._drafting_pays(state, 4, 16)


# --- retries, deadlines, cancellation, in a batch -----------------------------------------------------


class FlakyCall:
    """The batched call, failing on a seeded share of calls after writing every row's keys (the worst case)."""

    def __init__(self, call, rate: float, seed: int):
        self.call, self.rate, self.rng = call, rate, np.random.default_rng(seed)
        self.failures = self.calls = 0

    def __call__(self, model, tokens, states):
        self.calls += 1
        out = self.call(model, tokens, states)  # every row's cache written, every length moved on
        if self.rng.random() < self.rate:
            self.failures += 1
            raise TransientError("injected after the forward pass")
        return out


def test_a_failed_batched_call_is_retried_whole_and_every_text_stays_exact():
    clean = service_of(TARGET, DRAFT, TOKENIZER)
    requests = parsed(clean, 16)
    expected = together(clean, requests)
    flaky_service = service_of(TARGET, DRAFT, TOKENIZER, QUICK_RETRIES)
    flaky = FlakyCall(flaky_service.batcher.call, 0.3, seed=3)
    flaky_service.batcher.batched = BatchedTarget(TARGET, flaky)
    answers = together(flaky_service, requests)
    assert flaky.failures > 10
    for one, two in zip(expected, answers, strict=True):
        assert np.array_equal(one.tokens, two.tokens)
    assert sum(a.specdec.retries for a in answers) >= flaky.failures  # each failure seen by every row in it


def test_a_target_that_stays_down_fails_its_rows_with_503_and_the_batcher_goes_on():
    service = service_of(TARGET, DRAFT, TOKENIZER, RetryPolicy(attempts=3, initial=0.0, jitter=0.0))
    working = service.batcher.batched
    service.batcher.batched = BatchedTarget(TARGET, FlakyCall(service.batcher.call, 1.0, seed=0))
    answers = together(service, parsed(service, 4))
    assert all(isinstance(a, ServiceError) and a.status == 503 for a in answers)
    service.batcher.batched = working
    assert service.complete(parsed(service, 1)[0]).tokens.size > 0


def test_a_row_past_its_deadline_or_left_by_its_client_ends_alone():
    service = service_of(TARGET, DRAFT, TOKENIZER)
    requests = parsed(service, 8)
    alone = [service.complete(r) for r in requests]
    cancelled = threading.Event()
    results: dict = {}

    def run(i: int) -> None:
        try:
            if i == 0:  # its client leaves after the first round
                results[i] = service.complete(
                    requests[i], on_tokens=lambda tokens: cancelled.set(), cancelled=cancelled
                )
            elif i == 1:  # already past its deadline
                results[i] = service.complete(requests[i], deadline=time.monotonic() - 1)
            else:
                results[i] = service.complete(requests[i])
        except ServiceError as error:
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert isinstance(results[0], ServiceError) and results[0].status == 499
    assert isinstance(results[1], ServiceError) and results[1].status == 504
    for i in range(2, 8):
        assert np.array_equal(results[i].tokens, alone[i].tokens)


def test_a_target_that_is_not_a_gpt_is_generated_one_request_at_a_time():
    """A wrapper (slowed, fault-injecting) has no batched call: no batcher, each request alone as before."""
    service = service_of(SlowModel(TARGET, 0.0), DRAFT, TOKENIZER)
    assert service.batcher is None
    requests = parsed(service, 6)
    alone = [service.complete(r) for r in requests]
    for one, many in zip(alone, together(service, requests), strict=True):
        assert np.array_equal(one.tokens, many.tokens)
    with pytest.raises(TypeError, match="target must be a GPT"):
        Batcher(SlowModel(TARGET, 0.0), DRAFT, QUICK_RETRIES, ServiceMetrics())


# --- the batcher's own contract -----------------------------------------------------------------------


def test_rows_state_rolls_every_row_back():
    batch = start_rows(TARGET, 2)
    score_batch(TARGET, [[1, 2, 3], [4]], batch)
    rows = Rows(batch)
    assert rows.length == (3, 1)
    score_batch(TARGET, [[5], [6, 7]], batch)
    rows.rollback((3, 1))
    assert rows.length == (3, 1)


def test_close_fails_what_is_left_and_refuses_new_requests():
    batcher = Batcher(TARGET, DRAFT, QUICK_RETRIES, ServiceMetrics())
    batcher.close()
    with pytest.raises(RuntimeError, match="closed"):
        batcher.submit([1], 4, specdec.SamplingParams(), 2, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rows": 0}, "rows must be an integer in \\[1, 256\\], got 0"),
        ({"rows": True}, "rows must be an integer in \\[1, 256\\], got True"),
        ({"call": "fast"}, 'call must be "invariant" or "padded", got \'fast\''),
        ({"plain_from": 0}, "plain_from must be None or an integer >= 1, got 0"),
    ],
)
def test_bad_settings_are_refused_with_their_range(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Batcher(TARGET, DRAFT, QUICK_RETRIES, ServiceMetrics(), **kwargs)
