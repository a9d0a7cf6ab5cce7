"""The service as an adversarial client finds it: raw sockets, 127.0.0.1 only, every wait bounded.

The deployment is the app behind nginx (`specdec.serving.proxy`), and that is what CI tries:

    .venv-extras/bin/python -m pytest tests/optional/test_service_adversarial.py

A test fails on a lockout (a good client refused while others hold connections), a hang past a
stated deadline, a second response to one request, an error page that is not JSON in OpenAI's
shape, a 500 or 502, or a traceback in the server's log. The same tests against the app alone on
uvicorn (SPECDEC_FRONTS=proxy,app) are how the proxy was chosen: there the header deadline, the
per-address limit, JSON for what h11 refuses and HTTP/0.9 fail (appendix B, "Behind a reverse
proxy"). What the app itself must get right runs against both set-ups always (the `both` fixture).
"""

import contextlib
import itertools
import json
import logging
import os
import re
import socket
import string
import threading
import time
from dataclasses import dataclass

import pytest

import specdec
from specdec.serving.app import BackgroundServer, Limits
from specdec.serving.cluster import SlowModel
from specdec.serving.loadtest import difference, metric, read_metrics
from specdec.serving.proxy import Proxy
from specdec.serving.service import GenerationService

TARGET, DRAFT, TOKENIZER = specdec.load_model("target"), specdec.load_model("draft"), specdec.load_tokenizer()
FAST = Limits(header_timeout=1.0, keep_alive=1.0, body_timeout=1.0)
DEADLINE = max(FAST.header_timeout, FAST.body_timeout, FAST.keep_alive) + 1.5  # stated deadline + scheduling slack
FRONTS = os.environ.get("SPECDEC_FRONTS", "proxy").split(",")
GOOD_CLIENT = "127.0.0.2"  # another address on the loopback network: a different client to nginx
STATUS_LINE = re.compile(rb"HTTP/1\.[01] (\d{3}) ")


@dataclass
class Front:
    """Where clients connect: nginx in front of the app ("proxy") or the app alone ("app")."""

    name: str
    url: str
    server: BackgroundServer
    proxy: Proxy | None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        return host, int(port)

    @property
    def app_url(self) -> str:
        return self.server.url


class Tracebacks(logging.Handler):
    """Every log record that carries a traceback (uvicorn logs an app's exception with one)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.records.append(record)


@contextlib.contextmanager
def serving(service: GenerationService, front: str, limits: Limits = FAST):
    """A Front: the app on uvicorn, with nginx in front of it for "proxy"."""
    with BackgroundServer(service, limits=limits) as server:
        if front == "app":
            yield Front(front, server.url, server, None)
            return
        with Proxy(server.url, limits) as proxy:
            yield Front(front, proxy.url, server, proxy)


@pytest.fixture(scope="module", params=FRONTS)
def front(request):
    """The deployment for the transport's tests: nginx in front (and the app alone when measuring)."""
    with serving(GenerationService(TARGET, DRAFT, TOKENIZER), request.param) as served:
        yield served


@pytest.fixture(scope="module", params=["proxy", "app"])
def both(request):
    """For what the app itself must get right: behind nginx, and alone (where nothing covers for it)."""
    with serving(GenerationService(TARGET, DRAFT, TOKENIZER), request.param) as served:
        yield served


@pytest.fixture(autouse=True)
def no_tracebacks(request):
    """No test may leave a traceback in the server's log, nor an alert in nginx's."""
    served = next((request.getfixturevalue(name) for name in ("front", "both") if name in request.fixturenames), None)
    proxy = served.proxy if served else None
    handler, loggers = Tracebacks(), [logging.getLogger(), logging.getLogger("uvicorn")]  # uvicorn's: no propagation
    for logger in loggers:
        logger.addHandler(handler)
    before = proxy.errors() if proxy else ""
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    assert not handler.records, [handler.format(record) for record in handler.records]
    if proxy:
        new = proxy.errors()[len(before) :]
        assert not re.search(r"\[(alert|crit|emerg)\]", new), new


@dataclass
class Exchange:
    statuses: list[int]  # the status of every response on the connection, in order
    raw: bytes
    seconds: float  # until the server closed the connection (or the wait was given up)
    closed: bool  # the server closed the connection before the wait was given up

    def json(self) -> dict:
        return json.loads(self.raw.partition(b"\r\n\r\n")[2].split(b"\r\n\r\n")[0])

    def headers(self) -> dict:
        head = self.raw.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
        return dict(line.lower().split(": ", 1) for line in head)


def read_until_closed(connection: socket.socket, started: float, wait: float) -> tuple[bytes, bool]:
    """Everything the server sends until it closes, within `wait` seconds of `started`."""
    received = b""
    while (left := started + wait - time.monotonic()) > 0:
        connection.settimeout(left)
        try:
            chunk = connection.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            return received, True
        if not chunk:
            return received, True
        received += chunk
    return received, False


def exchange(front: Front, data: bytes, wait: float = DEADLINE, source: str = "127.0.0.1") -> Exchange:
    """Send raw bytes on a fresh connection; what comes back until the server closes it (or `wait` s)."""
    with socket.create_connection(front.address, timeout=wait, source_address=(source, 0)) as connection:
        started = time.monotonic()
        connection.sendall(data)
        raw, closed = read_until_closed(connection, started, wait)
    return Exchange([int(code) for code in STATUS_LINE.findall(raw)], raw, time.monotonic() - started, closed)


def assert_json_error(answer: Exchange, code: str | None = None) -> None:
    """An error answer is JSON in OpenAI's shape, whoever gave it (nginx or the app)."""
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, answer.raw
    assert code is None or error["code"] == code, answer.raw


# --- 1. the protocol: each probe answered once (or closed) within its deadline, never a 500 --------------

HOST = b"Host: 127.0.0.1\r\n"
POST = b"POST /v1/completions HTTP/1.1\r\n" + HOST + b"Content-Type: application/json\r\n"
SMUGGLED = b"GET /health HTTP/1.1\r\n" + HOST + b"\r\n"
# name -> (raw request, the statuses a correct server may answer; None: no status line (HTTP/0.9))
PROBES = {
    "Content-Length with Transfer-Encoding, a second request inside": (
        POST + b"Content-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
        {400},
    ),
    "Transfer-Encoding: xchunked": (POST + b"Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", {400, 501}),
    "Transfer-Encoding: chunked, identity": (
        POST + b"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
        {400, 501},
    ),
    "Transfer-Encoding with a space before the colon": (POST + b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", {400}),
    "two Content-Length headers": (POST + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef", {400}),
    "Content-Length: +5": (POST + b"Content-Length: +5\r\n\r\nabcde", {400}),
    "Content-Length: -1": (POST + b"Content-Length: -1\r\n\r\n", {400}),
    "Content-Length of 5,001 digits": (POST + b"Content-Length: " + b"9" * 5001 + b"\r\n\r\n", {400, 413, 431}),
    "a header folded onto the next line": (b"GET /health HTTP/1.1\r\n" + HOST + b"X: a\r\n b\r\n\r\n", {400}),
    "a NUL in a header": (b"GET /health HTTP/1.1\r\n" + HOST + b"X: a\x00b\r\n\r\n", {400}),
    "HTTP/1.1 without Host": (b"GET /health HTTP/1.1\r\n\r\n", {400}),
    "HTTP/2's preface": (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", {400, 505}),
    "HTTP/2.0 in the request line": (b"GET /health HTTP/2.0\r\n" + HOST + b"\r\n", {505}),
    "HTTP/0.9": (b"GET /health\r\n", {None, 400, 505}),
    "a request line that is not HTTP": (b"HELLO\r\n\r\n", {400}),
    "10,000 headers": (
        b"GET /health HTTP/1.1\r\n" + HOST + b"".join(b"X-%d: a\r\n" % i for i in range(10_000)) + b"\r\n",
        {431},
    ),
    "a 70 KB target": (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n" + HOST + b"\r\n", {431}),
    "a 70 KB header": (b"GET /health HTTP/1.1\r\n" + HOST + b"X: " + b"a" * 70_000 + b"\r\n\r\n", {431}),
    "an absolute-form target": (
        b"GET http://127.0.0.1/health HTTP/1.1\r\n" + HOST + b"Connection: close\r\n\r\n",
        {200},
    ),
    "HTTP/1.0 without Host": (b"GET /health HTTP/1.0\r\n\r\n", {200}),
}


@pytest.mark.parametrize(("raw", "allowed"), PROBES.values(), ids=PROBES.keys())
def test_every_probe_gets_one_answer_or_a_close_within_its_deadline(front, raw, allowed):
    answer = exchange(front, raw)
    assert answer.closed and answer.seconds < DEADLINE, f"still open after {answer.seconds:.1f} s: {answer.raw[:200]!r}"
    assert len(answer.statuses) <= 1, answer.raw[:400]  # a smuggled request got no answer of its own
    status = answer.statuses[0] if answer.statuses else None
    assert status in allowed, answer.raw[:400]
    if status is not None and status >= 400:
        assert_json_error(answer)


# --- 2. deadlines: headers, bodies, and bodies nobody reads, on every route ----------------------------


def test_headers_that_never_end_are_cut_off_at_the_header_deadline(front):
    answer = exchange(front, b"GET /health HTTP/1.1\r\n" + HOST + b"X-Slow: 1")  # one line, then nothing
    assert answer.closed and FAST.header_timeout - 0.05 < answer.seconds < FAST.header_timeout + 1.0
    assert answer.statuses in ([], [408])


def test_a_keep_alive_connection_gets_the_header_deadline_for_each_request(front):
    with socket.create_connection(front.address, timeout=DEADLINE) as connection:
        connection.sendall(b"GET /health HTTP/1.1\r\n" + HOST + b"\r\n")
        first = b""
        while not first.endswith(b"}"):  # the whole first answer, headers and JSON body
            first += connection.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        connection.sendall(b"GET /health HTTP/1.1\r\n")  # the second request's headers never end
        started = time.monotonic()
        received, closed = read_until_closed(connection, started, DEADLINE)
    assert closed and time.monotonic() - started < FAST.header_timeout + 1.0
    assert STATUS_LINE.findall(received) in ([], [b"408"])


ROUTES = [
    b"GET /health",
    b"GET /metrics",
    b"GET /v1/models",
    b"GET /no/such/path",  # 404
    b"POST /health",  # 405
    b"POST /v1/completions",
]


def trickle(front: Front, head: bytes, pieces, pause: float, wait: float) -> tuple[Exchange, int]:
    """Send `head`, then each piece of `pieces` every `pause` s while the server reads; stop when it closes.

    Returns what came back and how many body bytes the connection accepted before it was closed.
    """
    connection = socket.create_connection(front.address, timeout=wait)
    started, taken, received, closed = time.monotonic(), 0, b"", False
    connection.sendall(head)
    connection.setblocking(False)
    try:
        for piece in pieces:
            if time.monotonic() - started > wait:
                break
            try:
                while chunk := connection.recv(65536):
                    received += chunk
                closed = True  # recv returned b"": the server closed its side
                break
            except BlockingIOError:
                pass
            except ConnectionResetError:
                closed = True
                break
            try:
                taken += connection.send(piece)
            except BlockingIOError:
                pass  # the server does not read: nothing more goes in
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(pause)
        if not closed:
            connection.setblocking(True)
            rest, closed = read_until_closed(connection, started, wait)
            received += rest
    finally:
        connection.close()
    seconds = time.monotonic() - started
    return Exchange([int(code) for code in STATUS_LINE.findall(received)], received, seconds, closed), taken


@pytest.mark.parametrize("route", ROUTES, ids=[route.decode() for route in ROUTES])
def test_a_billion_byte_body_one_byte_at_a_time_is_refused_on_every_route(both, route):
    head = route + b" HTTP/1.1\r\n" + HOST + b"Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"
    answer, taken = trickle(both, head, iter(lambda: b"x", None), pause=0.25, wait=DEADLINE + 1)
    assert answer.closed and answer.seconds < DEADLINE + 1, f"open after {answer.seconds:.1f} s, {taken} bytes in"
    assert len(answer.statuses) <= 1, answer.raw[:400]


@pytest.mark.parametrize("route", ROUTES, ids=[route.decode() for route in ROUTES])
def test_an_endless_chunked_body_is_cut_off_on_every_route(both, route):
    head = route + b" HTTP/1.1\r\n" + HOST + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"  # 16 KB chunks, every 10 ms
    answer, taken = trickle(both, head, iter(lambda: chunk, None), pause=0.01, wait=DEADLINE + 1)
    assert answer.closed and answer.seconds < DEADLINE + 1, f"open after {answer.seconds:.1f} s, {taken} bytes in"
    assert len(answer.statuses) <= 1, answer.raw[:400]


def test_a_body_that_stops_halfway_is_cut_off_at_the_body_deadline(front):
    answer = exchange(front, POST + b"Content-Length: 100\r\n\r\n{")  # 99 bytes never come
    assert answer.closed and answer.seconds < FAST.body_timeout + 1.0
    assert answer.statuses in ([], [408])


def test_a_body_h11_cannot_parse_gets_one_answer_from_whoever_refuses_it_first(both):
    """Content-Length with a chunked body that is not chunked: uvicorn's parser refuses the body while the
    app refuses the headers; one answer goes out, and the app's refusal leaves no traceback."""
    good = json.dumps({"model": "specdec-bundled", "prompt": "x", "max_tokens": 4}).encode() + b"\r\n"
    head = POST + b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(good)
    answer = exchange(both, head + good)  # by chunked framing, '{"model"...\r\n' is a chunk size h11 refuses
    assert answer.closed and answer.seconds < DEADLINE and answer.statuses == [400], answer.raw[:300]


def test_a_bad_chunk_after_the_answer_never_gets_a_second_answer(both):
    head = b"GET /health HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\n"
    before = read_metrics(both.app_url)
    with socket.create_connection(both.address, timeout=DEADLINE) as connection:
        started = time.monotonic()
        connection.sendall(head + b"5\r\nhello\r\n")
        time.sleep(0.3)  # the app answers /health without reading the body
        try:
            connection.sendall(b"zz\r\nnot a chunk\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # already closed: nothing more can be answered
        received, closed = read_until_closed(connection, started, DEADLINE)
    assert closed and len(STATUS_LINE.findall(received)) <= 1, received
    delta = difference(read_metrics(both.app_url), before)
    assert sum(v for (name, _), v in delta.items() if name == "specdec_requests_total") <= 1


# --- 3. no lockout: many slow clients, and a good one is still served -----------------------------------


def hold_slow_bodies(front: Front, count: int, stop: threading.Event) -> list[socket.socket]:
    """`count` connections from 127.0.0.1, each sending a 1,000-byte body one byte every 0.4 s."""
    head = POST + b"Content-Length: 1000\r\n\r\n"
    held = []
    for _ in range(count):
        connection = socket.create_connection(front.address, timeout=5)
        connection.sendall(head)
        held.append(connection)

    def drip() -> None:
        while not stop.wait(0.4):
            for connection in held:
                try:
                    connection.send(b" ")
                except OSError:
                    pass

    threading.Thread(target=drip, daemon=True).start()
    return held


@pytest.mark.parametrize("name", FRONTS)
def test_a_good_client_is_served_while_256_slow_bodies_are_held(name):
    """256 connections of one address trickle bodies past every deadline but the gap between bytes;
    a client at another address is served at once, and the slow address gets 503s, in JSON."""
    limits = Limits(header_timeout=1.0, keep_alive=1.0, body_timeout=1.0, max_connections=256)
    with serving(GenerationService(TARGET, DRAFT, TOKENIZER), name, limits) as served:
        stop = threading.Event()
        held = hold_slow_bodies(served, 256, stop)
        try:
            time.sleep(1.5)  # longer than the header and body deadlines: the drip keeps them alive
            good = json.dumps({"model": "specdec-bundled", "prompt": "x", "max_tokens": 4, "seed": 1}).encode()
            for raw in [
                b"GET /health HTTP/1.1\r\n" + HOST + b"Connection: close\r\n\r\n",
                POST + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(good) + good,
            ]:
                answer = exchange(served, raw, source=GOOD_CLIENT)
                assert answer.statuses == [200] and answer.seconds < 1.0, (name, answer.raw[:300])
            over = exchange(served, b"GET /health HTTP/1.1\r\n" + HOST + b"\r\n")  # the same address, 257th
            assert over.statuses == [503] and over.headers()["retry-after"] == "1", (name, over.raw[:300])
            assert_json_error(over, "overloaded")
        finally:
            stop.set()
            for connection in held:
                connection.close()


# --- 4. what only the app knows: JSON, fields, streams --------------------------------------------------


def test_an_object_with_7766_distinct_keys_is_answered_at_once(both):
    """Duplicate keys are found in one pass: 64 KB of distinct keys is refused in milliseconds."""
    names = ("".join(chars) for chars in itertools.product(string.ascii_letters + string.digits, repeat=3))
    keys = dict.fromkeys(itertools.islice(names, 7766), 0)  # "abc":0, 8 bytes a key
    raw = json.dumps({"model": "specdec-bundled", "prompt": "x", **keys}, separators=(",", ":")).encode()
    assert len(raw) <= FAST.max_body, len(raw)
    answer = exchange(both, POST + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(raw) + raw)
    assert answer.statuses == [422] and answer.seconds < 0.3, answer.seconds
    assert_json_error(answer, "invalid_field")


def test_a_nested_unknown_field_is_named_by_its_path(both):
    raw = json.dumps({"model": "specdec-bundled", "prompt": "x", "stream": True, "stream_options": {"foo": 1}}).encode()
    answer = exchange(both, POST + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(raw) + raw)
    assert answer.statuses == [422]
    assert answer.json()["error"]["param"] == "stream_options.foo", answer.raw


def events(raw: bytes) -> list[dict]:
    """The JSON events of a chunked server-sent-events answer, in order."""
    rest, payload = raw.partition(b"\r\n\r\n")[2], b""
    while rest:
        size, _, rest = rest.partition(b"\r\n")
        payload, rest = payload + rest[: int(size, 16)], rest[int(size, 16) + 2 :]
    lines = payload.decode().split("\n\n")
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def test_a_stream_cut_by_its_deadline_counts_what_it_sent_and_is_labelled_as_the_client_saw_it(both):
    """The client got a 200, tokens, then an error event: generated = the tokens it got, the rest
    discarded, and the request counted as ("200", "deadline"), not as a 504 nobody saw."""
    service = GenerationService(SlowModel(TARGET, 0.01), DRAFT, TOKENIZER, timeout=0.3)
    with serving(service, both.name) as served:
        raw = json.dumps(
            {"model": "specdec-bundled", "prompt": "x", "max_tokens": 250, "seed": 3, "temperature": 0, "stream": True}
        ).encode()
        before = read_metrics(served.app_url)
        answer = exchange(served, POST + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(raw) + raw, wait=10)
        delta = difference(read_metrics(served.app_url), before)
    chunks = events(answer.raw)
    got = sum(len(TOKENIZER.encode(c["choices"][0]["text"])) for c in chunks if "choices" in c and c["choices"])
    assert answer.statuses == [200] and chunks[-1]["error"]["code"] == "deadline_exceeded" and got > 0
    assert metric(delta, "specdec_generated_tokens_total") == got
    # only the round verified after the deadline is discarded: at most gamma + 1 = 5 tokens, none of those sent
    assert 0 < metric(delta, "specdec_discarded_tokens_total", reason="deadline_exceeded") <= 5
    assert metric(delta, "specdec_requests_total", code="200", outcome="deadline") == 1
    assert metric(delta, "specdec_requests_total", code="504", outcome="deadline") == 0


def test_a_stream_its_client_leaves_is_counted_as_200_aborted_with_its_sent_tokens(both):
    service = GenerationService(SlowModel(TARGET, 0.01), DRAFT, TOKENIZER)
    with serving(service, both.name) as served:
        raw = json.dumps(
            {"model": "specdec-bundled", "prompt": "x", "max_tokens": 250, "seed": 3, "temperature": 0, "stream": True}
        ).encode()
        before = read_metrics(served.app_url)
        with socket.create_connection(served.address, timeout=5) as connection:
            connection.sendall(POST + b"Content-Length: %d\r\n\r\n" % len(raw) + raw)
            assert connection.recv(65536).startswith(b"HTTP/1.1 200")  # the first round arrived; then gone
        deadline = time.monotonic() + 10
        while metric(read_metrics(served.app_url), "specdec_requests_in_progress") and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)
        delta = difference(read_metrics(served.app_url), before)
    assert metric(delta, "specdec_requests_total", code="200", outcome="aborted") == 1
    assert metric(delta, "specdec_requests_total", code="499", outcome="aborted") == 0
    sent, discarded = metric(delta, "specdec_generated_tokens_total"), metric(delta, "specdec_discarded_tokens_total")
    assert 0 < sent < 250 and sent + discarded < 250  # stopped early; each verified token counted once


def test_an_absolute_form_target_is_served_by_its_path(both):
    """RFC 9112 3.2.2: a server must accept `GET http://host/path`, as a proxy would send it."""
    answer = exchange(both, b"GET http://127.0.0.1/v1/models HTTP/1.1\r\n" + HOST + b"Connection: close\r\n\r\n")
    assert answer.statuses == [200] and answer.json()["data"][0]["id"] == "specdec-bundled", answer.raw[:300]
