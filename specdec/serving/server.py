"""The HTTP server: POST /generate (JSON in, JSON out) and GET /metrics (Prometheus text format).

The standard library's ThreadingHTTPServer: no dependency beyond the course's, one thread per
connection, and enough for a teaching service that listens on 127.0.0.1. (In production an ASGI
server behind a proxy would do the connection handling; the `GenerationService` would not change.)
The numpy work of concurrent requests shares the GIL and the machine's cores, so threads give
concurrency, not parallelism: for that, more processes (see `specdec.serving.cluster`).
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST

from specdec.serving.service import GenerationService

MAX_BODY = 64 * 1024  # bytes


class Handler(BaseHTTPRequestHandler):
    service: GenerationService  # set on the subclass made by make_server
    server_version = "specdec-serving/0.1"
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass  # quiet: the metrics are the log

    def send_json(self, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/metrics":
            data = self.service.metrics.exposition()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif self.path == "/generate":
            self.send_json(405, {"error": "use POST /generate with a JSON body"}, {"Allow": "POST"})
        else:
            self.send_json(404, {"error": f"no such path {self.path!r}; try POST /generate or GET /metrics"})

    def do_POST(self):
        if self.path != "/generate":
            if self.path == "/metrics":
                self.send_json(405, {"error": "use GET /metrics"}, {"Allow": "GET"})
            else:
                self.send_json(404, {"error": f"no such path {self.path!r}; try POST /generate or GET /metrics"})
            self.close_connection = True
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.send_json(411, {"error": "a Content-Length header (the size of the JSON body) is required"})
            self.close_connection = True
            return
        if int(length) > MAX_BODY:
            self.send_json(413, {"error": f"the body is {length} bytes, more than {MAX_BODY}"})
            self.close_connection = True
            return
        content_type = self.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
        if content_type != "application/json":
            self.rfile.read(int(length))
            self.send_json(415, {"error": f"Content-Type must be application/json, got {content_type!r}"})
            return
        status, body = self.service.handle(self.rfile.read(int(length)))
        self.send_json(status, body, {"Retry-After": "1"} if status == 503 else None)


def make_server(
    service: GenerationService | None = None, host: str = "127.0.0.1", port: int = 0
) -> ThreadingHTTPServer:
    """A server bound to host:port (port 0: a free one; see server.server_address). Not yet serving."""
    handler = type("BoundHandler", (Handler,), {"service": GenerationService() if service is None else service})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


class BackgroundServer:
    """A server running in a background thread, as a context manager (for notebooks and tests).

    with BackgroundServer(service) as server: ... server.url ...
    """

    def __init__(self, service: GenerationService | None = None, host: str = "127.0.0.1", port: int = 0):
        self.server = make_server(service, host, port)
        self.service = self.server.RequestHandlerClass.service
        host, port = self.server.server_address[:2]
        self.url = f"http://{host}:{port}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="specdec-server", daemon=True)

    def __enter__(self) -> "BackgroundServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
