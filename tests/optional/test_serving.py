"""Appendix B, speculative decoding as a service: exact retries, metrics, the HTTP API, dask.

Optional: needs prometheus_client, tenacity and dask[distributed] (requirements-extras.txt); CI
(.ci/run) runs it in the extras environment:

    .venv-extras/bin/python -m pytest tests/optional/test_serving.py

All network traffic goes to 127.0.0.1 (a server on a free port, a LocalCluster), bounded in count.
"""

import http.client
import json
import subprocess
import sys
import urllib.parse

import numpy as np
import pytest

import specdec
from specdec.serving.faults import BrokenModel, FlakyModel, TransientError
from specdec.serving.lawcheck import TableModel, law_test
from specdec.serving.loadtest import (
    buckets,
    get_text,
    histogram_quantile,
    load_test,
    metric,
    post_json,
    read_metrics,
)
from specdec.serving.retry import RetryingModel, RetryPolicy, TargetUnavailable, redrawing_speculative_generate
from specdec.serving.server import BackgroundServer
from specdec.serving.service import GenerationService

TARGET, DRAFT, TOKENIZER = specdec.load_model("target"), specdec.load_model("draft"), specdec.load_tokenizer()
PROMPT = TOKENIZER.encode("def __init__(self")
NO_SLEEP = RetryPolicy(attempts=12, initial=0.0, maximum=0.0, jitter=0.0, deadline=60.0)

# Tiny Markov-chain models whose law is known exactly (V = 3), with a draft far from the target.
TABLE_TARGET = TableModel([[2.0, 0.5, 0.0], [0.0, 1.5, 1.0], [1.0, 0.0, 2.0]], "table target")
TABLE_DRAFT = TableModel([[0.5, 0.5, 0.5], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], "table draft")


def fails_when_last_draft_is_0(tokens) -> float:
    """A failure whose chance depends on the drafted tokens (the last token scored is the last draft)."""
    return 0.6 if tokens[-1] == 0 else 0.0


# --- retries that keep the output exact -----------------------------------------------------------


@pytest.mark.parametrize(
    ("temperature", "failure_rate", "mid_forward"),
    [(1.0, 0.3, 1.0), (1.0, 0.1, 0.5), (1.0, 0.3, 0.5), (0.0, 0.3, 0.5)],
    ids=["T=1-30%-all-mid-forward", "T=1-10%", "T=1-30%", "greedy-30%"],
)
def test_fault_injected_run_equals_the_clean_run_token_for_token(temperature, failure_rate, mid_forward):
    """Several seeds, failure rates up to 30%, failures after part of the cache was written."""
    params = specdec.SamplingParams(temperature=temperature, top_k=40, top_p=0.95)
    for seed in range(3):
        clean = specdec.speculative_generate(TARGET, DRAFT, PROMPT, 64, params, 4, np.random.default_rng(seed))
        flaky = FlakyModel(TARGET, failure_rate, np.random.default_rng([seed, 99]), mid_forward=mid_forward)
        retrying = RetryingModel(flaky, NO_SLEEP, np.random.default_rng(0), sleep=lambda seconds: None)
        faulty = specdec.speculative_generate(retrying, DRAFT, PROMPT, 64, params, 4, np.random.default_rng(seed))
        assert flaky.failures > 0 and flaky.partial_writes > 0, "the fault injection must actually fail mid-forward"
        assert retrying.retries == flaky.failures
        np.testing.assert_array_equal(faulty.tokens, clean.tokens)
        assert (faulty.target_calls, faulty.accepted, faulty.drafted) == (
            clean.target_calls,
            clean.accepted,
            clean.drafted,
        )


def test_backoff_is_exponential_with_jitter_bounded_and_the_error_is_clear():
    sleeps = []
    policy = RetryPolicy(attempts=5, initial=0.01, maximum=0.03, jitter=0.002, deadline=60.0)
    down = FlakyModel(TARGET, 1.0, np.random.default_rng(0), mid_forward=1.0)  # writes part of the cache, then fails
    retrying = RetryingModel(down, policy, np.random.default_rng(0), sleep=sleeps.append)
    state = TARGET.start()
    TARGET.score(PROMPT, state)
    with pytest.raises(TargetUnavailable, match=r"failed 5 time\(s\) in a row.*Last error: .*transient failure"):
        retrying.score([5, 6, 7], state)
    assert down.calls == 5 and down.partial_writes == 5 and retrying.retries == 4
    assert state.length == len(PROMPT), "after giving up, the state is as the failed call found it"
    backoff = np.array([0.01, 0.02, 0.03, 0.03])  # doubling, capped at `maximum`
    assert np.all(np.array(sleeps) >= backoff) and np.all(np.array(sleeps) < backoff + 0.002)
    assert len(set(np.array(sleeps) - backoff)) == 4, "jitter: the waits are not the bare schedule"


def test_the_deadline_stops_retrying_before_the_attempts_run_out():
    policy = RetryPolicy(attempts=1000, initial=0.02, maximum=0.02, jitter=0.0, deadline=0.1)
    broken = BrokenModel(TARGET, TransientError("injected"))
    with pytest.raises(TargetUnavailable):
        RetryingModel(broken, policy).score(PROMPT, TARGET.start())
    assert 2 <= broken.calls <= 7


def test_non_transient_errors_are_not_retried():
    broken = BrokenModel(TARGET, KeyError("a bug, not a hiccup"))
    retrying = RetryingModel(broken, NO_SLEEP)
    with pytest.raises(KeyError, match="a bug"):
        specdec.speculative_generate(retrying, DRAFT, PROMPT, 10, rng=np.random.default_rng(0))
    assert broken.calls == 1 and retrying.retries == 0


def test_the_exact_retry_keeps_the_law_and_the_redrawing_retry_does_not():
    """Chi-square against the exact law of 3 tokens (27 outcomes); failures depend on the last draft."""
    n, params = 4000, specdec.SamplingParams()
    rng = np.random.default_rng(20)
    flaky = FlakyModel(TABLE_TARGET, fails_when_last_draft_is_0, np.random.default_rng(21), mid_forward=0.5)
    patient = RetryPolicy(attempts=60, initial=0.0, maximum=0.0, jitter=0.0, deadline=60.0)  # 0.6**60: never gives up
    exact = RetryingModel(flaky, patient, np.random.default_rng(0), sleep=lambda seconds: None)
    kept, _, _ = law_test(
        lambda: specdec.speculative_generate(exact, TABLE_DRAFT, [1], 3, params, 2, rng).tokens, TABLE_TARGET, 1, 3, n
    )
    assert flaky.failures > n / 10, "failures must be frequent for the control to mean anything"
    assert kept.p_value > 1e-3, kept
    flaky = FlakyModel(TABLE_TARGET, fails_when_last_draft_is_0, np.random.default_rng(21), mid_forward=0.5)
    redrawn, _, _ = law_test(
        lambda: redrawing_speculative_generate(flaky, TABLE_DRAFT, [1], 3, params, 2, rng).tokens, TABLE_TARGET, 1, 3, n
    )
    assert redrawn.p_value < 1e-9, redrawn


# --- the HTTP service ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server():
    with BackgroundServer(GenerationService(TARGET, DRAFT, TOKENIZER)) as running:
        yield running


BAD_REQUESTS = [
    ({"prompt": "x", "top_p": 1.5}, "top_p", "(0, 1]"),
    ({"prompt": "x", "top_p": 0}, "top_p", "(0, 1]"),
    ({"prompt": "x", "temperature": -1}, "temperature", ">= 0"),
    ({"prompt": "x", "temperature": "hot"}, "temperature", ">= 0"),
    ({"prompt": "x", "top_k": 0}, "top_k", ">= 1"),
    ({"prompt": "x", "top_k": 2.5}, "top_k", ">= 1"),
    ({"prompt": "x", "top_k": True}, "top_k", ">= 1"),
    ({"prompt": "x", "min_p": 2}, "min_p", "[0, 1]"),
    ({"prompt": "x", "gamma": 0}, "gamma", "[1, 16]"),
    ({"prompt": "x", "gamma": 17}, "gamma", "[1, 16]"),
    ({"prompt": "x", "verify": "tree"}, "verify", '"token"'),
    ({"prompt": "x", "verify": ["block"]}, "verify", '"block"'),
    ({"prompt": "x", "max_new_tokens": 0}, "max_new_tokens", "[1, 256]"),
    ({"prompt": "x", "max_new_tokens": "10"}, "max_new_tokens", "[1, 256]"),
    ({"prompt": "x" * 250, "max_new_tokens": 10}, "max_new_tokens", "[1, 7]"),
    ({"prompt": "x" * 300}, "prompt", "at most 256"),
    ({"prompt": ""}, "prompt", "non-empty"),
    ({"prompt": 42}, "prompt", "non-empty"),
    ({"prompt": "caf\u00e9"}, "prompt", "printable ASCII"),
    ({"prompt": "x", "seed": -1}, "seed", "[0, 9223372036854775807]"),
    ({"prompt": "x", "seed": 2**64}, "seed", "[0, 9223372036854775807]"),
    ({"max_new_tokens": 5}, "prompt", "non-empty"),
    ({"prompt": "x", "temprature": 0.5}, "temprature", None),
]


@pytest.mark.parametrize(("body", "field", "allowed"), BAD_REQUESTS, ids=[str(b)[:40] for b, _, _ in BAD_REQUESTS])
def test_every_bad_request_gets_a_400_naming_the_field_and_the_allowed_range(server, body, field, allowed):
    status, answer = post_json(server.url, "/generate", body)
    assert status == 400, answer
    assert answer["field"] == field and field in answer["error"]
    if allowed is not None:
        assert allowed in answer["allowed"]


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'{"prompt": "x", "temperature": NaN}', b"\xff\xfe"], ids=str)
def test_malformed_bodies_get_a_400_with_a_json_error(server, raw):
    status, answer = post_json(server.url, "/generate", raw)
    assert status == 400 and answer["error"].startswith("the body")


def test_wrong_paths_and_methods_get_404_and_405(server):
    assert post_json(server.url, "/nowhere", {"prompt": "x"})[0] == 404
    assert post_json(server.url, "/metrics", {"prompt": "x"})[0] == 405
    assert get_text(server.url, "/generate")[0] == 405
    assert get_text(server.url, "/")[0] == 404


def raw_post(url: str, headers: dict, body: bytes = b"") -> tuple[int, dict]:
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.putrequest("POST", "/generate")
        for key, value in headers.items():
            connection.putheader(key, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_missing_length_oversized_body_and_wrong_content_type_get_4xx(server):
    assert raw_post(server.url, {})[0] == 411
    status, answer = raw_post(server.url, {"Content-Length": str(10**7)})
    assert status == 413 and "more than" in answer["error"]
    body = b'{"prompt": "x"}'
    status, answer = raw_post(server.url, {"Content-Length": str(len(body)), "Content-Type": "text/plain"}, body)
    assert status == 415 and "application/json" in answer["error"]


def test_python_m_specdec_serving_serves_on_127_0_0_1():
    process = subprocess.Popen(
        [sys.executable, "-m", "specdec.serving", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("serving on http://127.0.0.1:"), line
        url = line.split()[2]
        status, answer = post_json(url, "/generate", {"prompt": "import ", "max_new_tokens": 12, "seed": 1})
        assert status == 200 and answer["new_tokens"] == len(answer["tokens"]) >= 1
        assert metric(read_metrics(url), "specdec_generated_tokens_total") == answer["new_tokens"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_same_seed_gives_the_same_text_as_the_library(server):
    body = {"prompt": "def __init__(self", "max_new_tokens": 60, "temperature": 0.8, "top_p": 0.9, "gamma": 3}
    status, answer = post_json(server.url, "/generate", {**body, "seed": 11})
    assert status == 200
    params = specdec.SamplingParams(temperature=0.8, top_p=0.9)
    reference = specdec.speculative_generate(
        TARGET, DRAFT, PROMPT, 60, params, 3, np.random.default_rng(11), end_token=0
    )
    assert answer["tokens"] == reference.tokens.tolist() and answer["text"] == TOKENIZER.decode(reference.tokens)
    _, unseeded = post_json(server.url, "/generate", body)
    assert post_json(server.url, "/generate", {**body, "seed": unseeded["seed"]})[1]["tokens"] == unseeded["tokens"]
    status, answer = post_json(server.url, "/generate", {**body, "seed": 11, "verify": "block"})
    block = specdec.speculative_generate(
        TARGET, DRAFT, PROMPT, 60, params, 3, np.random.default_rng(11), end_token=0, verify="block"
    )
    assert status == 200 and answer["verify"] == "block" and answer["tokens"] == block.tokens.tolist()


def test_metrics_parse_and_the_counters_equal_the_generated_statistics():
    """A fresh service with failures injected: every counter equals the sum over the responses."""
    flaky = FlakyModel(TARGET, 0.2, np.random.default_rng(3), mid_forward=0.5)
    service = GenerationService(flaky, DRAFT, TOKENIZER, RetryPolicy(attempts=20, initial=0.0, jitter=0.0))
    with BackgroundServer(service) as server:
        answers = [
            post_json(server.url, "/generate", {"prompt": "import o", "max_new_tokens": 40, "seed": seed, "gamma": g})
            for seed, g in [(0, 2), (1, 4), (2, 6), (3, 4)]
        ]
        assert post_json(server.url, "/generate", {"prompt": ""})[0] == 400
        samples = read_metrics(server.url)  # prometheus_client's own parser
    assert all(status == 200 for status, _ in answers)
    answers = [answer for _, answer in answers]
    for name, key in [
        ("specdec_generated_tokens_total", "new_tokens"),
        ("specdec_drafted_tokens_total", "drafted"),
        ("specdec_accepted_tokens_total", "accepted"),
        ("specdec_tested_tokens_total", "tested"),
        ("specdec_target_calls_total", "target_calls"),
        ("specdec_target_failures_total", "target_failures"),
        ("specdec_target_retries_total", "retries"),
    ]:
        assert metric(samples, name) == sum(answer[key] for answer in answers), name
    assert metric(samples, "specdec_target_failures_total") > 0
    local = specdec.speculative_generate(  # the first request in-process: its alpha, notebook 10's
        TARGET, DRAFT, TOKENIZER.encode("import o"), 40, specdec.SamplingParams(), 2, np.random.default_rng(0), 0
    )
    assert answers[0]["alpha"] == pytest.approx(local.alpha) and answers[0]["tested"] == local.tested
    assert local.alpha > local.acceptance_rate  # accepted / drafted would understate it
    assert all(answer["alpha"] == pytest.approx(answer["accepted"] / answer["tested"]) for answer in answers)
    assert metric(samples, "specdec_requests_total", outcome="ok") == 4
    assert metric(samples, "specdec_requests_total", outcome="bad_request") == 1
    assert metric(samples, "specdec_request_seconds_count") == 4
    assert metric(samples, "specdec_round_seconds_count") == sum(answer["target_calls"] for answer in answers)
    assert metric(samples, "specdec_request_seconds_sum") == pytest.approx(sum(a["seconds"] for a in answers))
    assert buckets(samples, "specdec_request_seconds")[-1] == (float("inf"), 4)


def test_after_giving_up_the_error_is_clear_and_the_next_request_works():
    down = {"now": True}
    flaky = FlakyModel(TARGET, lambda tokens: 1.0 if down["now"] else 0.0, np.random.default_rng(0))
    service = GenerationService(flaky, DRAFT, TOKENIZER, RetryPolicy(attempts=3, initial=0.001, jitter=0.0))
    body = {"prompt": "for i in ", "max_new_tokens": 30, "seed": 4}
    with BackgroundServer(service) as server:
        status, answer = post_json(server.url, "/generate", body)
        assert status == 503 and "failed 3 time(s) in a row" in answer["error"]
        down["now"] = False
        status, answer = post_json(server.url, "/generate", body)
        samples = read_metrics(server.url)
    assert status == 200
    clean = specdec.speculative_generate(  # the service's default gamma is 4
        TARGET, DRAFT, TOKENIZER.encode("for i in "), 30, gamma=4, rng=np.random.default_rng(4), end_token=0
    )
    assert answer["tokens"] == clean.tokens.tolist()
    assert metric(samples, "specdec_target_gave_up_total") == 1
    assert metric(samples, "specdec_requests_total", outcome="unavailable") == 1


def test_a_bounded_load_test_loses_nothing_and_metrics_agree(server):
    before = read_metrics(server.url)
    bodies = [{"prompt": "def f(x", "max_new_tokens": 24, "seed": i} for i in range(12)]
    result = load_test(server.url, bodies, concurrency=3, duration=60.0)
    after = read_metrics(server.url)
    assert (result.sent, result.failed, result.lost, result.not_sent) == (12, 0, 0, 0)
    delta = {key: after[key] - before.get(key, 0.0) for key in after}
    assert metric(delta, "specdec_requests_total", outcome="ok") == 12
    assert metric(delta, "specdec_generated_tokens_total") == result.tokens
    cumulative = [
        (bound, count - dict(buckets(before, "specdec_request_seconds")).get(bound, 0.0))
        for bound, count in buckets(after, "specdec_request_seconds")
    ]
    assert cumulative[-1][1] == 12 and histogram_quantile(0.5, cumulative) > 0


def test_histogram_quantile_interpolates_like_prometheus():
    cumulative = [(0.1, 10.0), (0.2, 30.0), (0.5, 40.0), (float("inf"), 40.0)]
    assert histogram_quantile(0.25, cumulative) == pytest.approx(0.1)
    assert histogram_quantile(0.5, cumulative) == pytest.approx(0.15)
    assert histogram_quantile(1.0, cumulative) == pytest.approx(0.5)


def test_the_load_test_refuses_other_hosts():
    with pytest.raises(ValueError, match="127.0.0.1"):
        load_test("http://example.com:80", [{"prompt": "x"}])


def test_import_specdec_imports_no_serving_dependency():
    optional = "('prometheus_client', 'tenacity', 'distributed', 'dask')"
    code = f"import sys, specdec; print(sorted(m for m in {optional} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# --- dask ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    from distributed import Client

    from specdec.serving.cluster import local_cluster, quiet_dask_logging

    quiet_dask_logging()
    with local_cluster(2) as cluster, Client(cluster) as dask_client:
        yield dask_client


def test_the_dask_run_equals_the_sequential_run(client):
    from specdec.serving.cluster import Job, generate_many, generate_sequential

    jobs = [
        Job("def __init__(self", 30, specdec.SamplingParams(temperature=t), gamma)
        for t, gamma in [(1.0, 4), (0.7, 2), (0.0, 5), (1.0, 3), (1.2, 4), (0.9, 6)]
    ]
    results = generate_many(client, jobs, root_seed=2024)
    workers = {record for record in client.run(lambda: 1)}
    assert len(workers) == 2
    assert [r["tokens"] for r in results] == [r["tokens"] for r in generate_sequential(jobs, root_seed=2024)]
    assert [r["tokens"] for r in results] != [r["tokens"] for r in generate_sequential(jobs, root_seed=2025)]


class NaNDraft:
    """A draft whose logits are NaN: generation fails after the target's state was started."""

    name, vocab_size, max_context = "nan draft", DRAFT.vocab_size, DRAFT.max_context

    def start(self):
        return DRAFT.start()

    def score(self, tokens, state):
        return DRAFT.score(tokens, state) * np.nan


def test_a_target_on_another_worker_gives_the_same_tokens(client):
    from specdec.serving.cluster import RemoteModel, TargetActor

    worker = sorted(client.scheduler_info()["workers"])[-1]
    actor = client.submit(TargetActor, actor=True, workers=[worker]).result()
    remote = RemoteModel(actor)
    params = specdec.SamplingParams(temperature=0.9)
    calls = 0
    for seed in range(2):
        local = specdec.speculative_generate(TARGET, DRAFT, PROMPT, 50, params, 4, np.random.default_rng(seed))
        with remote.closing():
            far = specdec.speculative_generate(remote, DRAFT, PROMPT, 50, params, 4, np.random.default_rng(seed))
        np.testing.assert_array_equal(far.tokens, local.tokens)
        calls += far.target_calls
    assert remote.calls == calls, "one round trip per round: rollbacks ride along with the next call"
    assert actor.where().result() == worker
    assert actor.open_states().result() == 0  # every run's KV cache freed
    with pytest.raises(ValueError, match="NaN"), remote.closing():  # an error inside: the state is freed all the same
        specdec.speculative_generate(remote, NaNDraft(), PROMPT, 50, params, 4, np.random.default_rng(0))
    assert actor.open_states().result() == 0
    remote.start()  # without closing(): the leak the context manager prevents
    assert actor.open_states().result() == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "70000"], "--port: must be a port number in [0, 65535], got '70000'"),
        (["--port", "-1"], "--port: must be a port number in [0, 65535]"),
        (["--attempts", "0"], "--attempts: must be a whole number in [1, 100], got '0'"),
        (["--fail-rate", "1.5"], "--fail-rate: must be a fraction in [0, 0.99], got '1.5'"),
        (["--fail-rate", "nan"], "--fail-rate: must be a fraction in [0, 0.99], got 'nan'"),
        (["--fail-rate", "1"], "--fail-rate: must be a fraction in [0, 0.99]"),
    ],
)
def test_the_serving_cli_refuses_bad_options_before_loading_any_model(monkeypatch, capsys, argv, message):
    from specdec.serving import __main__ as cli

    monkeypatch.setattr(cli.specdec, "load_model", lambda *args: pytest.fail("a model was loaded"))
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2  # argparse's usage error, no traceback
    assert message in capsys.readouterr().err
