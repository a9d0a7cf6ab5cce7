"""nginx in front of the service: the transport limits, from the component made for them.

A server on a network must bound what a client can hold: the time its headers may take, the gap
between two pieces of its body, the body's size, the connections one address keeps open, and it
must parse HTTP/1.1 strictly (absolute-form targets, request smuggling, lingering close). uvicorn
has no header deadline and no per-client limit, and adding them means subclassing its private
protocol classes, which a release can silently undo. nginx has each of them as a documented
directive, so the service runs behind it (`python -m specdec.serving --proxy`), and the app keeps
what only it can know: the generation cap, each request's deadline, cancelling a generation whose
client left, strict JSON and OpenAI's error shapes.

    client --> nginx (--port, 127.0.0.1) --> uvicorn (a free port on 127.0.0.1) --> the app

nginx reads a request's whole body (`proxy_request_buffering on`, nginx's default) before it opens
a connection to the app, so slow clients cost nginx a few kilobytes each and the app nothing; it
streams the answer back unbuffered (`proxy_buffering off`), so server-sent events arrive round by
round; and when a client goes away it closes the app's connection, which stops the generation.
nginx's own refusals are answered in OpenAI's error shape too (`ERRORS`).

Needs the `nginx` binary (Debian: `apt-get install nginx-light`); nothing here runs it as a
system service: each `Proxy` writes its configuration to a temporary folder and runs its own
nginx, in the foreground, until it is stopped.
"""

import grp
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from specdec.serving.app import Limits
from specdec.serving.service import ServiceError

# nginx's refusals -> (the status sent, the OpenAI error code, the message). 494 is nginx's own code
# for "request header too large"; it is sent as 431, as the app would. (A body that stops arriving
# gets no answer from nginx, whose 408 only closes the connection; 502 and 504: the app is down.)
ERRORS = {
    400: (400, "invalid_framing", "the request is not valid HTTP/1.1 (refused by the proxy)"),
    413: (413, "body_too_large", "the body is larger than {max_body} bytes"),
    414: (431, "headers_too_large", "the request target is longer than {max_headers} bytes"),
    494: (431, "headers_too_large", "the request's headers are longer than {max_headers} bytes"),
    501: (501, "invalid_framing", "the only Transfer-Encoding this server reads is chunked"),
    502: (503, "target_unavailable", "the service behind the proxy is not answering; try again shortly"),
    503: (503, "overloaded", "this address holds {max_connections} connections, its most; try again shortly"),
    504: (504, "deadline_exceeded", "the service behind the proxy did not answer in time"),
    505: (505, "http_version", "this server speaks HTTP/1.1"),
}
TEMP_FOLDERS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")  # nginx's scratch folders, in the prefix
ERROR_PATH = "/.specdec-proxy-error-"  # internal locations: no request can reach them from outside


def error_locations(limits: Limits) -> str:
    """nginx `error_page` lines and the internal locations that answer each refusal in JSON.

    By URI, not by named location: nginx cannot redirect a request whose line it could not parse
    (HELLO, an HTTP/2 preface) to a named location, and would answer 500 instead.
    """
    lines = []
    for nginx_status, (status, code, message) in ERRORS.items():
        text = message.format(**vars(limits))
        kind = "invalid_request_error" if status == 501 else None  # the client's transfer coding, not our fault
        body = json.dumps(ServiceError(status, text, code, kind=kind).body())  # the app's error shape
        quoted = body.replace("\\", "\\\\").replace("'", "\\'")  # inside nginx's single quotes
        retry = "            add_header Retry-After 1 always;\n" if status == 503 else ""
        lines.append(f"        error_page {nginx_status} ={status} {ERROR_PATH}{nginx_status};")
        lines.append(
            f"        location = {ERROR_PATH}{nginx_status} {{\n"
            "            internal;\n"
            "            default_type application/json;\n"
            f"{retry}"
            f"            return {status} '{quoted}';\n"
            "        }"
        )
    return "\n".join(lines)


def nginx_config(listen: str, upstream: str, limits: Limits, prefix: Path) -> str:
    """The whole nginx.conf: listen on `listen` (host:port), pass to `upstream` (host:port).

    Limits map to nginx directives: header_timeout to client_header_timeout (the whole header),
    body_timeout to client_body_timeout (nginx's is the longest gap between two reads of the
    body, not the whole body: a body that keeps coming is bounded by max_body instead),
    keep_alive to keepalive_timeout, max_body to client_max_body_size, max_headers to
    large_client_header_buffers, max_connections to limit_conn per client address. After a
    refusal nginx reads what is left of a body for at most body_timeout before it closes (lingering
    close: a connection closed with unread bytes is reset by the kernel, and the answer can be lost).
    """
    user = ""
    if os.geteuid() == 0:  # nginx's workers drop root; nobody's own group, whatever it is called here
        nobody = pwd.getpwnam("nobody")
        user = f"user nobody {grp.getgrgid(nobody.pw_gid).gr_name};"
    temp = "\n".join(f"    {kind}_temp_path {prefix / kind};" for kind in TEMP_FOLDERS)
    return f"""# written by specdec.serving.proxy; nginx -p {prefix} -c {prefix / "nginx.conf"}
{user}
worker_processes 1;
pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} warn;
events {{
    worker_connections {8 * limits.max_connections + 64};
}}
http {{
    access_log off;
    server_tokens off;
{temp}
    client_header_timeout {limits.header_timeout:g}s;
    client_body_timeout {limits.body_timeout:g}s;
    keepalive_timeout {limits.keep_alive:g}s;
    send_timeout 30s;
    client_max_body_size {limits.max_body};
    client_body_buffer_size {limits.max_body};
    client_header_buffer_size 1k;
    large_client_header_buffers 4 {max(limits.max_headers // 4, 1024)};
    lingering_time {limits.body_timeout:g}s;
    lingering_timeout {limits.body_timeout:g}s;
    limit_conn_zone $binary_remote_addr zone=per_address:1m;
    limit_conn_status 503;
    upstream service {{
        server {upstream};
    }}
    server {{
        listen {listen};
        limit_conn per_address {limits.max_connections};
        location / {{
            proxy_pass http://service;
            proxy_http_version 1.1;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_buffering off;
            proxy_read_timeout 600s;
            proxy_intercept_errors off;
        }}
{error_locations(limits)}
    }}
}}
"""


def nginx_binary() -> str | None:
    """Where the nginx program is (Debian installs it in /usr/sbin, often not on a user's PATH), or None."""
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on now (nginx must be told its port: it cannot report one it chose)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class Proxy:
    """nginx in front of the service at `upstream` (http://host:port), on 127.0.0.1:`port` (0: a free one).

    with Proxy(server.url, limits) as proxy: ... proxy.url ...
    """

    def __init__(self, upstream: str, limits: Limits = Limits(), port: int = 0, host: str = "127.0.0.1"):
        self.nginx = nginx_binary()
        if self.nginx is None:
            raise RuntimeError("nginx is not installed (Debian: apt-get install nginx-light)")
        self.limits = limits
        self.host, self.port = host, port or free_port(host)
        address = f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"
        self.url = f"http://{address}"
        self.prefix = Path(tempfile.mkdtemp(prefix="specdec-nginx-"))
        self.prefix.chmod(0o755)
        for kind in TEMP_FOLDERS:
            (self.prefix / kind).mkdir(mode=0o777)
            (self.prefix / kind).chmod(0o777)  # the workers run as nobody when started as root
        config = nginx_config(address, upstream.removeprefix("http://"), limits, self.prefix)
        (self.prefix / "nginx.conf").write_text(config)
        self.process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        conf = str(self.prefix / "nginx.conf")
        return [self.nginx, "-p", str(self.prefix), "-e", str(self.prefix / "error.log"), "-c", conf]

    def __enter__(self) -> "Proxy":
        check = subprocess.run([*self.command(), "-t", "-q"], capture_output=True, text=True)
        if check.returncode:
            raise RuntimeError(f"nginx refused its configuration: {check.stderr.strip()}")
        self.process = subprocess.Popen([*self.command(), "-g", "daemon off;"])
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((self.host, self.port), timeout=1).close()
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError(f"nginx did not start on {self.url}: {self.errors()}") from None
                time.sleep(0.02)

    def errors(self) -> str:
        """What nginx wrote to its error log (warnings and errors)."""
        log = self.prefix / "error.log"
        return log.read_text() if log.exists() else ""

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # nginx's fast shutdown: open connections close now
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.prefix, ignore_errors=True)
