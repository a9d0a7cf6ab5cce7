"""The HTTP service: an ASGI app (Starlette) on uvicorn, listening on 127.0.0.1.

    POST /v1/completions   OpenAI's completions API; "stream": true sends server-sent events
    GET  /v1/models        the one model served
    GET  /metrics          Prometheus' text format
    GET  /health           {"status": "ok"} while the server serves

Why Starlette and not FastAPI: the service's contract is the wire itself. It decodes JSON
strictly (UTF-8 only, no duplicate keys, no NaN, no 5,000-digit integers), answers every error,
the framework's own 404 and 405 included, in OpenAI's error shape, streams rounds as they are
verified and notices a client that left. FastAPI would parse the body with its own JSON decoder
and answer validation errors in its own shape, both of which the service would have to undo;
its gift, an OpenAPI page, this small API does not need. Starlette gives routing, requests and
streaming responses and nothing it would have to override; pydantic checks the fields
(`specdec.serving.service.CompletionRequest`).

Why uvicorn: its HTTP/1.1 parser (h11) refuses malformed framing (two Content-Length headers, a
length that is not digits), and its event loop holds thousands of idle connections in one
thread. What a server on a network needs beyond that (a deadline for headers, limits per client
address, lingering close) comes from nginx in front of it (`specdec.serving.proxy`), the
component made for it, not from uvicorn's private classes. Here, through the ASGI interface only:
`StrictRequests` refuses what h11 lets through but this server does not (Content-Length together
with Transfer-Encoding, the way requests are smuggled past proxies; other HTTP versions;
oversized headers), accepts absolute-form targets (`GET http://host/health`, RFC 9112 3.2.2),
and ends the connection after any answer given before the request's body was read, so that a body
nobody reads can neither keep its connection nor be taken for a next request.

Each generation waits in a pool of `Limits.max_generations` threads while the service's batcher
(`specdec.serving.batcher`) decodes every request in flight together, one target call per round.
"""

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from urllib.parse import unquote

import h11
import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from specdec.serving.metrics import ServiceMetrics
from specdec.serving.service import MODEL, GenerationService, ServiceError, completion_body, completion_id, usage

log = logging.getLogger("specdec.serving")

# ServiceError codes -> the metrics' outcomes (specdec.serving.metrics.OUTCOMES)
OUTCOME = {
    "invalid_json": "bad_request",
    "invalid_framing": "bad_request",
    "model_not_found": "not_found",
    "not_found": "not_found",
    "method_not_allowed": "method_not_allowed",
    "request_timeout": "timeout",
    "body_too_large": "too_large",
    "unsupported_media_type": "unsupported_media_type",
    "invalid_field": "invalid_field",
    "client_closed": "aborted",
    "internal_error": "error",
    "overloaded": "rejected",
    "target_unavailable": "unavailable",
    "deadline_exceeded": "deadline",
    "headers_too_large": "headers_too_large",
    "http_version": "version_not_supported",
}
PATHS = "POST /v1/completions, GET /v1/models, GET /metrics, GET /health"


@dataclass(frozen=True)
class Limits:
    """What one client may take. Times in seconds; the request deadline is the service's `timeout`.

    The app enforces body_timeout (from the headers to the body's last byte, then 408), max_body
    (413), max_headers (431) and max_generations (generations at once; beyond it 503 with
    Retry-After); uvicorn closes a connection idle for keep_alive after an answer (a connection that
    never sends a request it keeps) and answers 503 beyond max_connections open connections. nginx
    in front (`specdec.serving.proxy`) adds header_timeout (to a request's last header byte; the
    connection then closes), max_connections per client address, and keep_alive, body_timeout
    (nginx's: the longest pause in a body), max_body and max_headers before a request reaches the app.
    """

    header_timeout: float = 5.0
    keep_alive: float = 5.0
    body_timeout: float = 10.0
    max_body: int = 64 * 1024
    max_headers: int = 16 * 1024
    max_generations: int = 16  # the batcher's rows: every generation at once shares the target's calls
    max_connections: int = 256

    def __post_init__(self):
        for name in ("header_timeout", "keep_alive", "body_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 3600:
                raise ValueError(f"{name} must be a number of seconds in (0, 3600), got {value!r}")
        for name, most in (
            ("max_body", 2**30),
            ("max_headers", 2**20),
            ("max_generations", 256),
            ("max_connections", 100_000),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                raise ValueError(f"{name} must be an integer in [1, {most}], got {value!r}")


COUNTED = "specdec.counted"  # set in a request's scope once the request is counted in the metrics


def count(
    metrics: ServiceMetrics,
    scope: dict,
    outcome: str,
    tokens: int = 0,
    seconds: float | None = None,
    code: str | None = None,
) -> None:
    """Count a request in the metrics once, whichever of the paths that end it gets there first.

    tokens: the tokens sent; code: the status the client saw, where it differs from the outcome's
    (a stream cut short after its 200: ServiceMetrics.record_request).
    """
    if scope.get(COUNTED):
        return
    scope[COUNTED] = True
    metrics.record_request(outcome, tokens, seconds, code)


def error_response(error: ServiceError) -> JSONResponse:
    headers = dict(error.headers)
    if error.status in (
        400,
        408,
        413,
        431,
        505,
    ):  # the rest of the request may still be on the wire: end the connection
        headers["Connection"] = "close"
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


def framing_error(scope, limits: Limits) -> ServiceError | None:
    """What h11 lets through but this server refuses: another HTTP version, CL with TE, huge headers."""
    if scope["http_version"] not in ("1.0", "1.1"):
        return ServiceError(
            505, f"HTTP/{scope['http_version'][:8]} is not supported: this server speaks HTTP/1.1", "http_version"
        )
    names = [name for name, _ in scope["headers"]]
    if b"transfer-encoding" in names and b"content-length" in names:  # RFC 9112 6.1: refuse, then close
        return ServiceError(
            400,
            "Content-Length and Transfer-Encoding together are ambiguous (the way requests are"
            " smuggled past proxies): send one of them",
            "invalid_framing",
        )
    size = len(scope["raw_path"]) + len(scope["query_string"]) + sum(len(k) + len(v) for k, v in scope["headers"])
    if size > limits.max_headers:
        return ServiceError(
            431,
            f"the request's target and headers are {size} bytes, more than {limits.max_headers}",
            "headers_too_large",
        )
    return None


def origin_form(scope) -> None:
    """Give an absolute-form target (`GET http://host/health`) its path, as RFC 9112 3.2.2 asks of servers."""
    raw = scope["raw_path"]
    if raw[:8].lower().startswith((b"http://", b"https://")):
        parts = raw.split(b"/", 3)  # b"http:", b"", the authority, the path without its "/"
        scope["raw_path"] = b"/" + (parts[3] if len(parts) == 4 else b"")
        scope["path"] = unquote(scope["raw_path"].decode("ascii"))


async def until_disconnected(receive) -> None:
    """Receive (and drop) messages until the server says the client is gone."""
    while (await receive())["type"] != "http.disconnect":
        pass


def declares_a_body(scope) -> bool:
    """A request with a body on the wire: chunked, or a Content-Length other than 0."""
    return any(
        name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0")
        for name, value in scope["headers"]
    )


class StrictRequests:
    """ASGI middleware: refuses what `framing_error` finds before any route sees the request, accepts
    absolute-form targets, and closes the connection after an answer given with the body unread."""

    def __init__(self, app: Starlette, limits: Limits, metrics: ServiceMetrics):
        self.app, self.limits, self.metrics = app, limits, metrics
        self.state = app.state

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin_form(scope)
        body_read = not declares_a_body(scope)

        async def receive_watched():
            nonlocal body_read
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                body_read = True
            return message

        server_answered = False

        async def send_closing(message) -> None:
            nonlocal server_answered
            if server_answered:
                return
            # Answered with the body still coming: the rest of it must not be read as a next request,
            # nor keep the connection open past every deadline, so the connection ends with this answer.
            if message["type"] == "http.response.start" and not body_read:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            try:
                await send(message)
            except h11.LocalProtocolError:
                # uvicorn has answered this request itself (its 400 for a body h11 cannot parse) and is
                # closing the connection; h11 refuses a second answer, and none is due. Wait for the
                # disconnect that follows, so that uvicorn expects nothing more of the app.
                server_answered = True
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(until_disconnected(receive), 1.0)

        error = framing_error(scope, self.limits)
        if error is None:
            await self.app(scope, receive_watched, send_closing)
            return
        count(self.metrics, scope, OUTCOME[error.code])
        await error_response(error)(scope, receive_watched, send_closing)


def check_content_type(request: Request) -> None:
    """The body must be declared as JSON; a charset, if given, must be UTF-8 (what JSON is sent in)."""
    value = request.headers.get("content-type")
    media, *parameters = (value or "").split(";")
    charset = "utf-8"
    for parameter in parameters:
        name, _, given = parameter.partition("=")
        if name.strip().lower() == "charset":
            charset = given.strip().strip('"').lower()
    if media.strip().lower() != "application/json" or charset not in ("utf-8", "utf8"):
        raise ServiceError(
            415, f"Content-Type must be application/json (UTF-8), got {value!r}", "unsupported_media_type"
        )


async def read_body(request: Request, limits: Limits) -> bytes:
    """The whole body, at most max_body bytes and within body_timeout seconds, or ServiceError."""
    too_large = ServiceError(413, f"the body is larger than {limits.max_body} bytes", "body_too_large")
    length = request.headers.get("content-length")  # digits: h11 refuses any other value
    if length is not None and int(length) > limits.max_body:
        raise too_large
    chunks, size = [], 0

    async def collect() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limits.max_body:
                raise too_large
            chunks.append(chunk)

    try:
        await asyncio.wait_for(collect(), limits.body_timeout)
    except TimeoutError:
        raise ServiceError(
            408, f"the body did not arrive within {limits.body_timeout:g} s", "request_timeout"
        ) from None
    return b"".join(chunks)


async def notice_disconnect(request: Request, cancelled: threading.Event) -> None:
    """Set `cancelled` when the client closes the connection (the body has been read by then)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            cancelled.set()
            return


def internal_error(error: BaseException) -> ServiceError:
    """A bug, not the client's fault: logged with its traceback, answered 500 without it."""
    log.error("generation failed", exc_info=error)
    return ServiceError(500, f"internal error: {type(error).__name__}", "internal_error")


def sse(data) -> bytes:
    return b"data: " + (data if isinstance(data, bytes) else json.dumps(data).encode()) + b"\n\n"


def create_app(service: GenerationService, limits: Limits = Limits()) -> StrictRequests:
    """The ASGI app around `service`."""
    metrics = service.metrics
    pool = ThreadPoolExecutor(limits.max_generations, thread_name_prefix="specdec-generation")
    running = [0]  # generations in the pool (touched on the event loop's thread only)

    def refuse(error: ServiceError, request: Request) -> JSONResponse:
        count(metrics, request.scope, OUTCOME[error.code])
        return error_response(error)

    def start(request_, on_tokens, cancelled) -> Future:
        """Run the generation in the pool; the running count drops when it really ends."""
        running[0] += 1
        metrics.in_progress.inc()
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(pool, service.complete, request_, on_tokens, cancelled)

        def ended(finished: Future) -> None:
            running[0] -= 1
            metrics.in_progress.dec()
            if not finished.cancelled():
                finished.exception()  # retrieved: it is handled where the future is awaited, or needs no handling

        future.add_done_callback(ended)
        return future

    async def completions(request: Request) -> Response:
        started = time.perf_counter()
        try:
            check_content_type(request)
            parsed = service.parse(await read_body(request, limits))
        except ServiceError as error:
            return refuse(error, request)
        except ClientDisconnect:
            count(metrics, request.scope, "aborted")
            return Response(status_code=499)  # nobody will read it
        if running[0] >= limits.max_generations:
            message = f"{limits.max_generations} generations are running, this server's most; try again shortly"
            return refuse(ServiceError(503, message, "overloaded", headers={"Retry-After": "1"}), request)
        identity, created = completion_id(), int(time.time())
        cancelled = threading.Event()
        watcher = asyncio.ensure_future(notice_disconnect(request, cancelled))
        if not parsed.stream:
            try:
                done = await start(parsed, None, cancelled)
            except ServiceError as error:
                return refuse(error, request)
            except Exception as error:  # a bug: say so, log it, keep serving
                return refuse(internal_error(error), request)
            finally:
                watcher.cancel()
            if cancelled.is_set():
                count(metrics, request.scope, "aborted")
                metrics.discarded.labels("client_closed").inc(done.tokens.size)
                return Response(status_code=499)
            count(metrics, request.scope, "ok", done.tokens.size, time.perf_counter() - started)
            return JSONResponse(completion_body(identity, created, parsed, done))

        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()
        ended = [False]  # the stream is over: tokens that still come are discarded, never sent

        def deliver(tokens) -> None:  # on the event loop's thread, in the order of the rounds
            if ended[0]:
                metrics.discarded.labels("client_closed").inc(tokens.size)
            else:
                events.put_nowait(tokens)

        future = start(parsed, lambda tokens: loop.call_soon_threadsafe(deliver, tokens), cancelled)
        future.add_done_callback(events.put_nowait)  # after every round's tokens: callbacks run in order
        first = await events.get()
        watcher.cancel()  # from here on the streaming response listens for the disconnect
        if isinstance(first, asyncio.Future) and first.exception() is not None:
            error = first.exception()
            return refuse(error if isinstance(error, ServiceError) else internal_error(error), request)

        def chunk(text: str, finish_reason: str | None, **extra) -> dict:
            choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}
            body = {"id": identity, "object": "text_completion", "created": created, "model": MODEL}
            return {**body, "choices": [choice], **extra}

        async def stream():
            sent, recorded = 0, False
            item = first
            try:
                while not isinstance(item, asyncio.Future):
                    sent += item.size  # handed to the transport: sent, unless the connection is already gone
                    yield sse(chunk(service.tokenizer.decode(item), None))
                    await asyncio.sleep(0)  # let the loop notice a closed connection before the next write
                    item = await events.get()
                error = item.exception()
                if error is None:
                    done = item.result()
                    count(metrics, request.scope, "ok", sent, time.perf_counter() - started)
                    recorded = True
                    yield sse(chunk("", done.finish_reason, specdec=asdict(done.specdec)))
                    if parsed.include_usage:
                        yield sse({**chunk("", None), "choices": [], "usage": usage(parsed, sent)})
                else:  # after the 200 and the tokens sent so far: the client saw a 200, the outcome says why it ended
                    error = error if isinstance(error, ServiceError) else internal_error(error)
                    count(metrics, request.scope, OUTCOME[error.code], sent, code="200")
                    recorded = True
                    yield sse(error.body())
                yield sse(b"[DONE]")
            finally:
                cancelled.set()  # if the client left, the generation stops at its next round
                ended[0] = True
                unsent = 0
                while not events.empty():  # verified and handed over, but never sent
                    item = events.get_nowait()
                    unsent += 0 if isinstance(item, asyncio.Future) else item.size
                metrics.discarded.labels("client_closed").inc(unsent)
                if not recorded:
                    count(metrics, request.scope, "aborted", sent, code="200")

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    async def models(request: Request) -> Response:
        card = {"id": MODEL, "object": "model", "created": 0, "owned_by": "specdec"}
        return JSONResponse({"object": "list", "data": [card]})

    async def metrics_page(request: Request) -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "generations_running": running[0]})

    async def http_error(request: Request, error: HTTPException) -> Response:
        if error.status_code == 405:
            allowed = ", ".join(sorted(error.headers.get("Allow", "").split(", ")))
            message = f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}"
            failure = ServiceError(405, message, "method_not_allowed", headers={"Allow": allowed})
        elif error.status_code == 404:
            failure = ServiceError(404, f"no such path {request.url.path[:80]!r}; the paths: {PATHS}", "not_found")
        else:
            failure = ServiceError(error.status_code, str(error.detail), "invalid_framing")
        return refuse(failure, request)

    routes = [
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/metrics", metrics_page, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    app.state.pool = pool
    return StrictRequests(app, limits, metrics)


def uvicorn_config(service: GenerationService, limits: Limits, host: str, port: int, log_level: str) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(service, limits),
        host=host,
        port=port,
        http="h11",
        limit_concurrency=limits.max_connections,
        timeout_keep_alive=limits.keep_alive,
        h11_max_incomplete_event_size=limits.max_headers,
        lifespan="off",
        access_log=False,
        log_level=log_level,
    )


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free one).

    Listening from here on, before uvicorn starts: a client that connects as soon as the address
    is printed waits in the backlog instead of being refused.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on connections whose socket says
    # TCP, and without it an answer's body waits for the client's delayed ACK of its headers (40 ms on Linux).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)  # uvicorn's default backlog
    return sock


class BackgroundServer:
    """The service on uvicorn in a background thread, as a context manager (notebooks and tests).

    with BackgroundServer(service) as server: ... server.url ...
    """

    def __init__(
        self,
        service: GenerationService | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        limits: Limits = Limits(),
    ):
        self.service = GenerationService() if service is None else service
        self.owns_service = service is None  # a service it made, it stops on exit (its batcher's thread)
        self.limits = limits
        self.socket = bind(host, port)
        host, port = self.socket.getsockname()[:2]
        self.url = f"http://{host}:{port}"
        self.server = uvicorn.Server(uvicorn_config(self.service, limits, host, port, "error"))
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, name="specdec-server", daemon=True
        )

    def __enter__(self) -> "BackgroundServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server on {self.url} did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.socket.close()
        self.server.config.app.state.pool.shutdown(wait=False, cancel_futures=True)
        if self.owns_service:
            self.service.close()
