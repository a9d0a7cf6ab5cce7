"""Appendix B's HTTP service on uvicorn, tried as real and as adversarial clients would.

Optional: needs starlette, pydantic, uvicorn, httpx, openai and prometheus_client
(requirements-extras.txt); CI (.ci/run) runs it in the extras environment:

    .venv-extras/bin/python -m pytest tests/optional/test_service_http.py

Every server listens on a free port of 127.0.0.1; every test sends a bounded number of requests.
"""

import asyncio
import contextlib
import json
import re
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest

import specdec
from specdec.serving.app import BackgroundServer, Limits, bind
from specdec.serving.cluster import SlowModel
from specdec.serving.faults import FlakyModel
from specdec.serving.loadtest import (
    buckets,
    difference,
    histogram_quantile,
    load_test,
    metric,
    post_json,
    read_metrics,
)
from specdec.serving.retry import RetryPolicy
from specdec.serving.service import MODEL, GenerationService
from specdec.tokenizer import END

TARGET, DRAFT, TOKENIZER = specdec.load_model("target"), specdec.load_model("draft"), specdec.load_tokenizer()
FAST = Limits(header_timeout=1.0, keep_alive=1.0, body_timeout=1.0)
QUICK_RETRIES = RetryPolicy(attempts=30, initial=0.0005, maximum=0.002, jitter=0.0005, deadline=10.0)


def body(prompt: str = "x", **fields) -> dict:
    return {"model": MODEL, "prompt": prompt, **fields}


def reference(prompt: str, max_tokens: int, seed: int, gamma: int = 4, verify: str = "token", **params):
    """The same request run in this process, with the library alone."""
    return specdec.speculative_generate(
        TARGET,
        DRAFT,
        TOKENIZER.encode(prompt),
        max_tokens,
        specdec.SamplingParams(**params),
        gamma,
        np.random.default_rng(seed),
        end_token=END,
        verify=verify,
    )


@pytest.fixture(scope="module")
def server():
    with BackgroundServer(GenerationService(TARGET, DRAFT, TOKENIZER), limits=FAST) as running:
        yield running


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def exchange(url: str, data: bytes, timeout: float = 5.0) -> tuple[bytes, float]:
    """Send raw bytes on a fresh connection; everything the server sends until it closes, and how long."""
    with socket.create_connection(address(url), timeout=timeout) as connection:
        connection.sendall(data)
        started, received = time.monotonic(), b""
        while chunk := connection.recv(65536):
            received += chunk
        return received, time.monotonic() - started


def parse(response: bytes) -> tuple[int, dict, dict]:
    """(status, headers, JSON body) of one raw HTTP/1.1 response with a JSON body."""
    head, _, payload = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(payload)


def assert_openai_error(answer: dict, code: str, param: str | None = None) -> str:
    error = answer["error"]
    assert set(error) == {"message", "type", "param", "code"}, answer
    assert error["code"] == code and error["param"] == param, answer
    assert error["type"] == ("server_error" if code in SERVER_CODES else "invalid_request_error")
    return error["message"]


SERVER_CODES = {"overloaded", "target_unavailable", "deadline_exceeded", "internal_error"}


# --- bad requests: each a JSON error in OpenAI's shape, with the right status ----------------------

INVALID_FIELDS = [
    (body(top_p=1.5), "top_p", "(0, 1]"),
    (body(top_p=0), "top_p", "(0, 1]"),
    (body(temperature=-1), "temperature", ">= 0"),
    (body(temperature="hot"), "temperature", ">= 0"),
    (body(top_k=0), "top_k", "[1, 2147483647]"),
    (body(top_k=2.5), "top_k", "[1, 2147483647]"),
    (body(top_k=True), "top_k", "[1, 2147483647]"),
    (body(top_k=int("9" * 4000)), "top_k", "[1, 2147483647]"),  # parses; out of range
    (body(max_tokens=int("9" * 4000)), "max_tokens", "[1, 256]"),
    (body(min_p=2), "min_p", "[0, 1]"),
    (body(gamma=0), "gamma", "[1, 16]"),
    (body(gamma=17), "gamma", "[1, 16]"),
    (body(verify="tree"), "verify", '"token"'),
    (body(verify=["block"]), "verify", '"block"'),
    (body(n=2), "n", "1 (one completion"),
    (body(stream="yes"), "stream", "true or false"),
    (body(stream_options={"include_usage": True}), "stream_options", "with stream true"),
    (body(max_tokens=0), "max_tokens", "[1, 256]"),
    (body(max_tokens="10"), "max_tokens", "[1, 256]"),
    (body("x" * 250, max_tokens=10), "max_tokens", "[1, 7]"),
    (body("x" * 300), "prompt", "more than max_context 256"),
    (body(""), "prompt", "non-empty"),
    (body(42), "prompt", "non-empty"),
    (body("caf\u00e9"), "prompt", "outside the vocabulary"),
    (body(seed=-1), "seed", "[0, 9223372036854775807]"),
    (body(seed=2**64), "seed", "[0, 9223372036854775807]"),
    ({"model": MODEL, "max_tokens": 5}, "prompt", "is required"),
    ({"prompt": "x"}, "model", "is required"),
    (body(temprature=0.5), "temprature", "unknown field"),
]


@pytest.mark.parametrize(("fields", "param", "says"), INVALID_FIELDS, ids=[str(f)[:50] for f, _, _ in INVALID_FIELDS])
def test_every_invalid_field_gets_a_422_naming_it_and_the_allowed_range(server, fields, param, says):
    status, answer = post_json(server.url, "/v1/completions", fields)
    assert status == 422
    message = assert_openai_error(answer, "invalid_field", param)
    assert param in message and says in message


MALFORMED = {
    "not JSON": b"{not json",
    "NaN": b'{"model": "specdec-bundled", "prompt": "x", "temperature": NaN}',
    "Infinity": b'{"model": "specdec-bundled", "prompt": "x", "temperature": -Infinity}',
    "stray bytes": b"\xff\xfe",
    "UTF-16": json.dumps(body()).encode("utf-16"),
    "duplicate keys": b'{"model": "specdec-bundled", "prompt": "x", "seed": 1, "seed": 2}',
    "5,001-digit integer": b'{"model": "specdec-bundled", "prompt": "x", "top_k": ' + b"7" * 5001 + b"}",
    "30,000 brackets": b"[" * 30_000,
    "empty": b"",
}


@pytest.mark.parametrize("raw", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_bodies_get_a_400_with_a_json_error(server, raw):
    status, answer = post_json(server.url, "/v1/completions", raw)
    assert status == 400
    assert "JSON" in assert_openai_error(answer, "invalid_json")


def test_a_body_that_is_not_an_object_gets_a_422_and_an_unknown_model_a_404(server):
    status, answer = post_json(server.url, "/v1/completions", [1, 2])
    assert status == 422 and "JSON object" in assert_openai_error(answer, "invalid_field")
    status, answer = post_json(server.url, "/v1/completions", {**body(), "model": "gpt-4"})
    assert status == 404 and "specdec-bundled" in assert_openai_error(answer, "model_not_found", "model")


def test_wrong_paths_get_404_and_wrong_methods_405_with_allow(server):
    with httpx.Client(base_url=server.url) as client:
        answer = client.get("/nowhere")
        assert answer.status_code == 404 and "/v1/completions" in assert_openai_error(answer.json(), "not_found")
        for method, path, allowed in [
            ("GET", "/v1/completions", "POST"),
            ("PUT", "/v1/completions", "POST"),
            ("DELETE", "/v1/completions", "POST"),
            ("POST", "/metrics", "GET, HEAD"),
            ("PATCH", "/health", "GET, HEAD"),
        ]:
            answer = client.request(method, path)
            assert answer.status_code == 405 and answer.headers["allow"] == allowed, (method, path)
            assert method in assert_openai_error(answer.json(), "method_not_allowed")
        head = client.head("/v1/completions")
        assert head.status_code == 405 and head.headers["allow"] == "POST" and head.content == b""


def test_openai_fields_the_service_does_not_offer_are_accepted_at_their_neutral_value_only(server):
    neutral = {"user": "u-1", "echo": False, "logprobs": None, "best_of": 1, "frequency_penalty": 0.0}
    neutral |= {"presence_penalty": 0, "logit_bias": {}, "stop": None, "suffix": None}
    status, answer = post_json(server.url, "/v1/completions", body(["def f("], max_tokens=20, seed=4, **neutral))
    assert status == 200 and answer["choices"][0]["text"] == TOKENIZER.decode(reference("def f(", 20, 4).tokens)
    for param, value, says in [
        ("stop", ["\n"], "no stop sequences"),
        ("echo", True, "false"),
        ("logprobs", 2, "null or 0"),
        ("best_of", 3, "1 (one completion"),
        ("frequency_penalty", 0.5, "0 (no penalties"),
        ("logit_bias", {"5": 2.0}, "null or {}"),
        ("suffix", "x", "null"),
        ("prompt", ["a", "b"], "non-empty string"),
    ]:
        status, answer = post_json(server.url, "/v1/completions", {**body(), param: value})
        assert status == 422 and says in assert_openai_error(answer, "invalid_field", param), param


def test_a_prompt_too_long_for_the_default_max_tokens_says_the_default(server):
    status, answer = post_json(server.url, "/v1/completions", body("x" * 250))
    assert status == 422 and "max_tokens (16, the default)" in assert_openai_error(
        answer, "invalid_field", "max_tokens"
    )


@pytest.mark.parametrize("content_type", ["application/json; charset=UTF-8", "Application/JSON; profile=x"])
def test_json_with_a_utf8_charset_or_other_parameters_is_accepted(server, content_type):
    raw = json.dumps(body(max_tokens=3, seed=0)).encode()
    answer = httpx.post(server.url + "/v1/completions", content=raw, headers={"Content-Type": content_type})
    assert answer.status_code == 200


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "application/json; charset=utf-16",
        "application/json; profile=x; charset=latin-1",
        "application/x-www-form-urlencoded",
    ],
)
def test_a_body_that_is_not_utf8_json_by_its_content_type_gets_a_415(server, content_type):
    headers = {} if content_type is None else {"Content-Type": content_type}
    answer = httpx.post(server.url + "/v1/completions", content=json.dumps(body()).encode(), headers=headers)
    assert answer.status_code == 415
    assert "application/json" in assert_openai_error(answer.json(), "unsupported_media_type")


def test_a_body_over_the_limit_gets_a_413_by_its_length_or_while_it_streams_in(server):
    status, answer = post_json(server.url, "/v1/completions", b" " * (FAST.max_body + 1))
    assert status == 413 and str(FAST.max_body) in assert_openai_error(answer, "body_too_large")

    def chunks():  # no Content-Length: chunked, and more than the limit in all
        for _ in range(FAST.max_body // 1024 + 2):
            yield b" " * 1024

    answer = httpx.post(server.url + "/v1/completions", content=chunks(), headers={"Content-Type": "application/json"})
    assert answer.status_code == 413 and answer.headers["connection"] == "close"


# --- framing, timeouts and connection limits, on raw sockets ---------------------------------------

GOOD = json.dumps(body(max_tokens=4, seed=1)).encode()
POST = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
SMUGGLED = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
# What h11 lets through and the app refuses itself, in JSON (what h11 refuses, uvicorn answers in plain
# text: in the deployment nginx refuses it first, tests/optional/test_service_adversarial.py).
FRAMING = {
    "Content-Length and Transfer-Encoding, a valid chunked body": (  # a proxy that reads the length sees one request
        POST
        + b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(b"0\r\n\r\n" + SMUGGLED)
        + b"0\r\n\r\n"
        + SMUGGLED,
        400,
        "invalid_framing",
    ),
    "HTTP/2.0": (b"GET /health HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n", 505, "http_version"),
}


@pytest.mark.parametrize(("raw", "status", "code"), FRAMING.values(), ids=FRAMING.keys())
def test_ambiguous_or_oversized_framing_is_refused_in_json_and_the_connection_closed(server, raw, status, code):
    before = read_metrics(server.url)
    response, seconds = exchange(server.url, raw)
    got, headers, answer = parse(response)
    assert got == status and headers["connection"] == "close" and seconds < 1.0
    assert_openai_error(answer, code)
    assert len(re.findall(rb"HTTP/1\.1 \d{3} ", response)) == 1  # a smuggled second request got no answer
    delta = difference(read_metrics(server.url), before)
    assert sum(value for (name, _), value in delta.items() if name == "specdec_requests_total") == 1


def test_answers_on_a_kept_alive_connection_do_not_wait_for_a_delayed_ack(server):
    """The listening socket says TCP, so asyncio sets TCP_NODELAY on every connection: an answer's body
    leaves with its headers. Without it, each request after the first on a connection waits for the
    client's delayed ACK, about 40 ms on Linux (the control: a socket made without the protocol)."""
    with bind("127.0.0.1", 0) as listening, socket.socket(socket.AF_INET, socket.SOCK_STREAM) as plain:
        assert listening.proto == socket.IPPROTO_TCP and plain.proto == 0  # asyncio would skip the plain one
    with socket.create_connection(address(server.url), timeout=5) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        seconds = []
        for _ in range(6):
            started = time.perf_counter()
            connection.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            reply = b""
            while not reply.endswith(b"}"):
                reply += connection.recv(4096)
            seconds.append(time.perf_counter() - started)
    assert sorted(seconds[1:])[2] < 0.02, seconds  # the median of the kept-alive requests: no 40 ms wait


def test_two_hundred_idle_connections_cost_no_thread_and_a_good_request_is_answered_at_once(server):
    threads = threading.active_count()
    idle = [socket.create_connection(address(server.url)) for _ in range(200)]
    try:
        time.sleep(0.2)
        started = time.monotonic()
        status, answer = post_json(server.url, "/v1/completions", body(max_tokens=8, seed=2))
        assert status == 200 and time.monotonic() - started < 1.0
        assert threading.active_count() <= threads + 2  # uvicorn holds them in its event loop
    finally:
        for connection in idle:
            connection.close()


@contextlib.contextmanager
def serving_process(*options: str):
    """`python -m specdec.serving` on a free port of 127.0.0.1: (url, process); stopped afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "specdec.serving", "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("serving on http://127.0.0.1:"), line
        yield line.split()[2], process
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_sixty_four_connections_while_eight_long_generations_run_are_all_answered_within_a_second():
    """The server in its own process (as deployed), the clients here: 64 connections at once."""

    def running(url: str) -> float:
        return metric(read_metrics(url), "specdec_requests_in_progress")

    async def sixty_four(url: str) -> list[tuple[int, int, float]]:
        host, port = address(url)

        async def one() -> tuple[int, int, float]:  # a bare connection: the client adds almost nothing
            started = time.monotonic()
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            status, _, answer = parse(await reader.read())
            writer.close()
            return status, answer["generations_running"], time.monotonic() - started

        return await asyncio.gather(*[one() for _ in range(64)])

    with serving_process("--max-generations", "8", "--slow-ms", "20") as (url, _), ThreadPoolExecutor(8) as pool:
        long = [  # each about 2 s: 240 tokens, 20 ms more per target call
            pool.submit(httpx.post, url + "/v1/completions", json=body("def f(", max_tokens=240, seed=i), timeout=60)
            for i in range(8)
        ]
        while running(url) < 8:
            time.sleep(0.005)
        answers = asyncio.run(sixty_four(url))
        assert [future.result().status_code for future in long] == [200] * 8
    assert [status for status, _, _ in answers] == [200] * 64
    assert {busy for _, busy, _ in answers} == {8}  # every one answered while the 8 generations ran
    assert max(seconds for _, _, seconds in answers) < 1.0


# --- generation limits: concurrency cap, deadline, disconnects --------------------------------------


def wait_until_idle(url: str, timeout: float = 10.0) -> dict:
    """The metrics once no generation is running (a stopped one ends at its next round)."""
    deadline = time.monotonic() + timeout
    while True:
        samples = read_metrics(url)
        if metric(samples, "specdec_requests_in_progress") == 0 or time.monotonic() > deadline:
            return samples
        time.sleep(0.02)


def test_beyond_the_generation_cap_a_503_with_retry_after_never_a_wait():
    slow = SlowModel(TARGET, 0.01)  # about 0.5 s a request
    with BackgroundServer(GenerationService(slow, DRAFT, TOKENIZER), limits=Limits(max_generations=2)) as capped:
        with ThreadPoolExecutor(5) as pool:
            futures = [
                pool.submit(httpx.post, capped.url + "/v1/completions", json=body(max_tokens=100, seed=i), timeout=30)
                for i in range(5)
            ]
            answers = [future.result() for future in futures]
        statuses = sorted(answer.status_code for answer in answers)
        rejected = [answer for answer in answers if answer.status_code == 503]
        assert statuses.count(200) >= 2 and len(rejected) >= 1 and set(statuses) == {200, 503}
        assert all(answer.headers["retry-after"] == "1" for answer in rejected)
        assert all(answer.elapsed.total_seconds() < 1.0 for answer in rejected)  # at once, not after a wait
        assert "2 generations" in assert_openai_error(rejected[0].json(), "overloaded")
        samples = read_metrics(capped.url)
    assert metric(samples, "specdec_requests_total", code="503", outcome="rejected") == len(rejected)
    assert metric(samples, "specdec_requests_total", code="200", outcome="ok") == statuses.count(200)


def test_the_request_deadline_covers_the_rounds_and_the_retries_and_gives_a_504():
    patient = RetryPolicy(attempts=100, initial=0.002, maximum=0.05, jitter=0.001, deadline=60.0)
    calls = {"n": 0}

    def down_after_five_calls(tokens) -> float:
        calls["n"] += 1
        return 1.0 if calls["n"] > 5 else 0.0

    for failing in (0.7, down_after_five_calls):  # many retried rounds; then one call retried until the deadline
        flaky = FlakyModel(TARGET, failing, np.random.default_rng(0), mid_forward=0.5)
        service = GenerationService(flaky, DRAFT, TOKENIZER, patient, timeout=0.5)
        with BackgroundServer(service) as deadline_server:
            started = time.monotonic()
            status, answer = post_json(deadline_server.url, "/v1/completions", body(max_tokens=250, seed=0))
            seconds = time.monotonic() - started
            samples = wait_until_idle(deadline_server.url)
        assert status == 504 and seconds < 0.5 + 0.3, failing  # the deadline, plus at most a round and a back-off
        message = assert_openai_error(answer, "deadline_exceeded")
        assert "0.5 s" in message and "of at most 250 tokens" in message
        assert metric(samples, "specdec_requests_total", code="504", outcome="deadline") == 1
        assert metric(samples, "specdec_generated_tokens_total") == 0  # nothing was sent
        assert metric(samples, "specdec_discarded_tokens_total", reason="deadline_exceeded") > 0
        assert metric(samples, "specdec_target_retries_total") > 0


def test_a_client_that_hangs_up_stops_its_generation_and_is_counted_as_aborted():
    slow = SlowModel(TARGET, 0.01)  # 250 tokens: about 1 s in full
    with BackgroundServer(GenerationService(slow, DRAFT, TOKENIZER)) as hangup_server:
        request = json.dumps(body(max_tokens=250, seed=3, temperature=0.0)).encode()
        for stream in (False, True):
            raw = json.dumps({**json.loads(request), "stream": stream}).encode()
            with socket.create_connection(address(hangup_server.url)) as connection:
                connection.sendall(POST + b"Content-Length: %d\r\n\r\n" % len(raw) + raw)
                if stream:
                    assert connection.recv(65536).startswith(b"HTTP/1.1 200")  # the first round arrived
                else:
                    time.sleep(0.15)
            samples = wait_until_idle(hangup_server.url)
        calls = metric(samples, "specdec_target_calls_total")
    # the client that waited for a whole answer saw none (499); the stream's client had its 200 and left
    assert metric(samples, "specdec_requests_total", code="499", outcome="aborted") == 1
    assert metric(samples, "specdec_requests_total", code="200", outcome="aborted") == 1
    assert metric(samples, "specdec_requests_total", code="200", outcome="ok") == 0
    full = reference("x", 250, 3, temperature=0.0)
    assert metric(samples, "specdec_discarded_tokens_total", reason="client_closed") < 2 * full.tokens.size
    assert calls == 0  # the work of a stopped generation is not counted as finished work


# --- the official openai client, and exactness ------------------------------------------------------


def test_the_openai_client_gets_the_in_process_text_streaming_and_not(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="any key", max_retries=0)
    prompt, fields = "def __init__(self", {"temperature": 0.8, "top_p": 0.95, "seed": 7, "max_tokens": 60}
    expected = reference(prompt, 60, 7, gamma=3, temperature=0.8, top_p=0.95)
    text = TOKENIZER.decode(expected.tokens)

    completion = client.completions.create(model=MODEL, prompt=prompt, extra_body={"gamma": 3}, **fields)
    assert completion.choices[0].text == text
    assert completion.choices[0].finish_reason == ("stop" if expected.tokens[-1] == END else "length")
    assert completion.usage.completion_tokens == expected.tokens.size
    assert completion.usage.prompt_tokens == len(prompt)
    stats = completion.model_extra["specdec"]
    assert (stats["target_calls"], stats["accepted"], stats["tested"]) == (
        expected.target_calls,
        expected.accepted,
        expected.tested,
    )
    assert stats["alpha"] == pytest.approx(expected.alpha) and stats["seed"] == 7

    chunks = list(
        client.completions.create(
            model=MODEL,
            prompt=prompt,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"gamma": 3},
            **fields,
        )
    )
    pieces = [chunk.choices[0].text for chunk in chunks if chunk.choices]
    assert "".join(pieces) == text
    assert len([piece for piece in pieces if piece]) == expected.target_calls  # one event per round
    assert chunks[-1].usage.completion_tokens == expected.tokens.size and not chunks[-1].choices
    assert chunks[-2].choices[0].finish_reason == completion.choices[0].finish_reason

    block = client.completions.create(model=MODEL, prompt=prompt, extra_body={"gamma": 3, "verify": "block"}, **fields)
    assert block.choices[0].text == TOKENIZER.decode(
        reference(prompt, 60, 7, gamma=3, verify="block", temperature=0.8, top_p=0.95).tokens
    )
    assert [model.id for model in client.models.list()] == [MODEL]
    with pytest.raises(openai.UnprocessableEntityError, match="n must be 1"):
        client.completions.create(model=MODEL, prompt=prompt, n=2)
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.completions.create(model="gpt-4", prompt=prompt)


def test_a_request_without_a_seed_says_which_seed_it_got_and_that_seed_repeats_it(server):
    status, first = post_json(server.url, "/v1/completions", body("import ", max_tokens=30))
    seed = first["specdec"]["seed"]
    status_again, again = post_json(server.url, "/v1/completions", body("import ", max_tokens=30, seed=seed))
    assert status == status_again == 200 and again["choices"] == first["choices"]


def test_metrics_add_up_to_the_answers_with_failures_injected():
    """A fresh service whose target fails 20% of its calls: every counter equals the sum over the answers."""
    flaky = FlakyModel(TARGET, 0.2, np.random.default_rng(3), mid_forward=0.5)
    with BackgroundServer(GenerationService(flaky, DRAFT, TOKENIZER, QUICK_RETRIES)) as flaky_server:
        answers = [
            post_json(flaky_server.url, "/v1/completions", body("import o", max_tokens=40, seed=seed, gamma=g))
            for seed, g in [(0, 2), (1, 4), (2, 6), (3, 4)]
        ]
        assert post_json(flaky_server.url, "/v1/completions", body(""))[0] == 422
        samples = read_metrics(flaky_server.url)  # prometheus_client's own parser
    assert all(status == 200 for status, _ in answers)
    stats = [answer["specdec"] for _, answer in answers]
    assert metric(samples, "specdec_generated_tokens_total") == sum(a["usage"]["completion_tokens"] for _, a in answers)
    for name, key in [
        ("specdec_drafted_tokens_total", "drafted"),
        ("specdec_accepted_tokens_total", "accepted"),
        ("specdec_tested_tokens_total", "tested"),
        ("specdec_target_calls_total", "target_calls"),
        ("specdec_target_failures_total", "target_failures"),
        ("specdec_target_retries_total", "retries"),
    ]:
        assert metric(samples, name) == sum(s[key] for s in stats), name
    assert metric(samples, "specdec_target_failures_total") > 0
    for (_, answer), (seed, gamma) in zip(answers, [(0, 2), (1, 4), (2, 6), (3, 4)], strict=True):
        assert answer["choices"][0]["text"] == TOKENIZER.decode(reference("import o", 40, seed, gamma).tokens)
    assert all(s["alpha"] == pytest.approx(s["accepted"] / s["tested"]) for s in stats)
    assert metric(samples, "specdec_requests_total", code="200", outcome="ok") == 4
    assert metric(samples, "specdec_requests_total", code="422", outcome="invalid_field") == 1
    assert metric(samples, "specdec_request_seconds_count") == 4
    assert metric(samples, "specdec_round_seconds_count") == sum(s["target_calls"] for s in stats)
    assert buckets(samples, "specdec_request_seconds")[-1] == (float("inf"), 4)


def test_after_giving_up_a_503_says_so_and_the_next_request_works():
    down = {"now": True}
    flaky = FlakyModel(TARGET, lambda tokens: 1.0 if down["now"] else 0.0, np.random.default_rng(0))
    service = GenerationService(flaky, DRAFT, TOKENIZER, RetryPolicy(attempts=3, initial=0.001, jitter=0.0))
    request = body("for i in ", max_tokens=30, seed=4)
    with BackgroundServer(service) as flaky_server:
        answer = httpx.post(flaky_server.url + "/v1/completions", json=request)
        assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
        assert "failed 3 time(s) in a row" in assert_openai_error(answer.json(), "target_unavailable")
        down["now"] = False
        status, answer = post_json(flaky_server.url, "/v1/completions", request)
        samples = read_metrics(flaky_server.url)
    assert status == 200 and answer["choices"][0]["text"] == TOKENIZER.decode(reference("for i in ", 30, 4).tokens)
    assert metric(samples, "specdec_target_gave_up_total") == 1
    assert metric(samples, "specdec_requests_total", code="503", outcome="unavailable") == 1


# --- a bounded load and fault test --------------------------------------------------------------------


def slow_client(url: str, raw: bytes, pause: float) -> dict:
    """Sends a request a few bytes at a time (within the body deadline); the JSON answer."""
    head = POST + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(raw)
    with socket.create_connection(address(url), timeout=30) as connection:
        connection.sendall(head)
        for start in range(0, len(raw), 16):
            connection.sendall(raw[start : start + 16])
            time.sleep(pause)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    status, _, answer = parse(received)
    assert status == 200, answer
    return answer


def hang_up_client(url: str, request: dict, stream: bool) -> None:
    raw = json.dumps({**request, "stream": stream}).encode()
    with socket.create_connection(address(url), timeout=30) as connection:
        connection.sendall(POST + b"Content-Length: %d\r\n\r\n" % len(raw) + raw)
        if stream:
            connection.recv(1024)  # the headers and the first round, then gone
        # else gone at once: whether the server had begun or not, nobody reads the answer


def test_load_with_slow_and_vanishing_clients_and_30_percent_target_faults():
    """Fixed counts, a time limit, 127.0.0.1 only. Nothing lost or duplicated, every answer exact,
    /metrics equal to what the clients received, and a good request answered within 1 s throughout."""
    flaky = FlakyModel(TARGET, 0.3, np.random.default_rng(30), mid_forward=0.5)
    service = GenerationService(flaky, DRAFT, TOKENIZER, QUICK_RETRIES)
    prompts = ["def __init__(self", "import o", "for i in ", "class Stack"]
    bodies = [body(prompts[i % 4], max_tokens=48, seed=i, temperature=1.0, gamma=2 + i % 4) for i in range(32)]
    clean = [TOKENIZER.decode(reference(b["prompt"], 48, b["seed"], b["gamma"]).tokens) for b in bodies]
    slow_bodies = [body("import o", max_tokens=24, seed=100 + i) for i in range(2)]
    probes, stop = [], threading.Event()

    with BackgroundServer(service, limits=Limits(max_generations=12, body_timeout=10.0)) as loaded:

        def probe() -> None:  # a good request, again and again, while the load runs
            with httpx.Client(base_url=loaded.url, timeout=10) as client:
                while not stop.is_set():
                    started = time.monotonic()
                    health = client.get("/health").status_code
                    small = client.post("/v1/completions", json=body("x", max_tokens=4, seed=len(probes)))
                    probes.append((health, small.status_code, small.json(), time.monotonic() - started))
                    time.sleep(0.05)

        before = read_metrics(loaded.url)
        started = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            prober = pool.submit(probe)
            slow = [pool.submit(slow_client, loaded.url, json.dumps(b).encode(), 0.02) for b in slow_bodies]
            endless = body("def __init__(self", max_tokens=200, seed=5)  # 200 tokens, no end token
            gone = [pool.submit(hang_up_client, loaded.url, endless, i % 2 == 0) for i in range(4)]
            result = load_test(loaded.url, bodies, concurrency=4, duration=60.0)
            slow_answers = [future.result() for future in slow]
            for future in gone:
                future.result()
            stop.set()
            prober.result()
        wall = time.monotonic() - started
        delta = difference(wait_until_idle(loaded.url), before)

    assert wall < 60.0
    assert (result.sent, result.not_sent, result.lost, result.failed) == (32, 0, 0, 0)
    assert sorted(result.texts) == list(range(32))  # each request answered once
    assert [result.texts[i] for i in range(32)] == clean  # token-identical to the clean run
    assert flaky.failures > 0.2 * flaky.calls
    for answer, request in zip(slow_answers, slow_bodies, strict=True):
        assert answer["choices"][0]["text"] == TOKENIZER.decode(reference("import o", 24, request["seed"]).tokens)
    assert probes and all(health == 200 and status == 200 for health, status, _, _ in probes)
    worst_probe = max(seconds for *_, seconds in probes)
    assert worst_probe < 1.0

    answered = 32 + len(slow_answers) + len(probes)
    received = result.tokens + sum(a["usage"]["completion_tokens"] for a in slow_answers)
    received += sum(answer["usage"]["completion_tokens"] for _, _, answer, _ in probes)
    outcomes = {labels: v for (name, labels), v in delta.items() if name == "specdec_requests_total" and v}
    assert metric(delta, "specdec_requests_total", code="200", outcome="ok") == answered, outcomes
    # the two streams whose clients left after the first round: their sent tokens count as generated
    streamed_then_gone = metric(delta, "specdec_generated_tokens_total") - received
    assert 2 <= streamed_then_gone <= 2 * 200
    assert metric(delta, "specdec_requests_total", code="499", outcome="aborted") == 2
    assert metric(delta, "specdec_requests_total", code="200", outcome="aborted") == 2
    others = sum(v for (name, labels), v in delta.items() if name == "specdec_requests_total") - answered - 4
    assert others == 0  # no request refused, none counted twice
    assert metric(delta, "specdec_target_failures_total") == metric(delta, "specdec_target_retries_total") > 0

    cumulative = buckets(delta, "specdec_request_seconds")
    print(
        f"\nload test: {result.sent} requests in {result.wall:.2f} s, {result.sent / result.wall:.1f} requests/s,"
        f" client latency p50 {result.percentile(50) * 1e3:.0f} ms, p95 {result.percentile(95) * 1e3:.0f} ms,"
        f" p99 {result.percentile(99) * 1e3:.0f} ms; server p50 {histogram_quantile(0.5, cumulative) * 1e3:.0f} ms;"
        f" {flaky.failures} of {flaky.calls} target calls failed;"
        f" {len(probes)} probes, slowest {worst_probe * 1e3:.0f} ms"
    )


# --- the command line -----------------------------------------------------------------------------------


H11_REFUSES = {  # framing h11 refuses: plain text from uvicorn alone, JSON from nginx in front
    "Content-Length and Transfer-Encoding, a body that is not chunked": (
        POST + b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(GOOD) + GOOD + SMUGGLED,
        400,
        "invalid_framing",
    ),
    "two Content-Length headers": (
        POST + b"Content-Length: %d\r\nContent-Length: 5\r\n\r\n" % len(GOOD) + GOOD + SMUGGLED,
        400,
        "invalid_framing",
    ),
    "a request line that is not HTTP": (b"HELLO\r\n\r\n", 400, "invalid_framing"),
    "a 70 KB URL": (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 431, "headers_too_large"),
    "a 70 KB header": (
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 70_000 + b"\r\n\r\n",
        431,
        "headers_too_large",
    ),
}
STATUS_LINE = re.compile(rb"HTTP/1\.1 (\d{3}) ")


@pytest.mark.parametrize("options", [(), ("--proxy",)], ids=["alone", "behind nginx"])
def test_python_m_specdec_serving_serves_on_127_0_0_1_and_bad_requests_leave_no_traceback(options):
    with serving_process(*options) as (url, process):
        status, good = post_json(url, "/v1/completions", body("import ", max_tokens=12, seed=1))
        assert status == 200 and good["usage"]["completion_tokens"] >= 1
        for raw in MALFORMED.values():
            assert post_json(url, "/v1/completions", raw)[0] == 400
        for raw, status, code in FRAMING.values():
            got, _, answer = parse(exchange(url, raw)[0])
            assert got == status and answer["error"]["code"] == code
        for raw, status, code in H11_REFUSES.values():
            try:
                response = exchange(url, raw)[0]
            except ConnectionResetError:  # uvicorn alone closes with the rest unread, and the kernel resets
                assert not options
                continue
            assert len(STATUS_LINE.findall(response)) == 1, response
            if options:  # nginx answers in JSON (uvicorn alone in plain text)
                assert STATUS_LINE.findall(response) == [b"%d" % status] and parse(response)[2]["error"]["code"] == code
        assert metric(read_metrics(url), "specdec_generated_tokens_total") == good["usage"]["completion_tokens"]
    errors = process.stderr.read()
    assert "Traceback" not in errors and "Exception" not in errors, errors


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: Limits(max_generations=0), "max_generations must be an integer in [1, 256], got 0"),
        (lambda: Limits(max_body=True), "max_body must be an integer"),
        (lambda: Limits(header_timeout=float("nan")), "header_timeout must be a number of seconds in (0, 3600)"),
        (lambda: Limits(body_timeout=0), "body_timeout must be a number of seconds in (0, 3600), got 0"),
        (lambda: GenerationService(TARGET, DRAFT, TOKENIZER, timeout=-1), "timeout must be a number of seconds > 0"),
    ],
)
def test_bad_limits_are_refused_with_their_name_and_range(make, says):
    with pytest.raises(ValueError) as refused:
        make()
    assert says in str(refused.value)


def test_the_socket_listens_before_the_address_is_printed():
    """So a client that connects as soon as it reads "serving on ..." waits in the backlog, not refused."""
    from specdec.serving.app import bind

    with bind("127.0.0.1", 0) as sock:
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
        with socket.create_connection(sock.getsockname()[:2], timeout=5):
            pass  # accepted into the backlog before any server runs


def test_the_cli_warns_when_told_to_listen_beyond_this_machine(monkeypatch, capsys):
    import uvicorn

    from specdec.serving import __main__ as cli
    from specdec.serving import app

    real_bind = app.bind
    monkeypatch.setattr(app, "bind", lambda host, port: real_bind("127.0.0.1", 0))  # never really bind 0.0.0.0
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: None)
    cli.main(["--host", "0.0.0.0", "--port", "0"])
    assert "warning: listening on" in capsys.readouterr().err
    cli.main(["--host", "127.0.0.1", "--port", "0"])
    assert "warning" not in capsys.readouterr().err


def test_the_limits_appendix_b_states_are_the_defaults():
    page = json.loads((Path(__file__).parents[2] / "notebooks" / "appendices" / "B_serving.ipynb").read_text())
    prose = " ".join("".join(cell["source"]) for cell in page["cells"] if cell["cell_type"] == "markdown")
    prose = " ".join(prose.split())  # line breaks read as spaces
    limits, service = Limits(), GenerationService(TARGET, DRAFT, TOKENIZER)
    assert f"header deadline** ({limits.header_timeout:g} s" in prose
    assert f"**body deadline** ({limits.body_timeout:g} s" in prose
    assert f"at most {limits.max_generations} **generations at once**" in prose
    assert f"at most {limits.max_connections} open **connections** per client address" in prose
    assert f"be at most {limits.max_body // 1024} KB (413)" in prose
    assert f"**deadline** ({service.timeout:g} s)" in prose


def test_the_load_test_refuses_other_hosts():
    with pytest.raises(ValueError, match="127.0.0.1"):
        load_test("http://example.com:80", [body()])


def test_import_specdec_imports_no_serving_dependency():
    optional = "('prometheus_client', 'tenacity', 'distributed', 'dask', 'starlette', 'uvicorn', 'pydantic', 'httpx')"
    code = f"import sys, specdec; print(sorted(m for m in {optional} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
