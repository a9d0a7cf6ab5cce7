"""python -m specdec.serving [--port 8000] [--proxy] [--fail-rate 0.1]: serve the bundled models on 127.0.0.1.

An OpenAI-compatible completions API (POST /v1/completions), GET /v1/models, GET /metrics and
GET /health, on uvicorn; with --proxy, behind nginx (specdec.serving.proxy), which then listens
on --host:--port and holds the transport limits. Every option is checked before any model loads.
"""

import argparse
import contextlib
import ipaddress
import sys

import numpy as np
from threadpoolctl import threadpool_limits

import specdec
from specdec.serving.cluster import SlowModel
from specdec.serving.faults import FlakyModel
from specdec.serving.retry import RetryPolicy
from specdec.serving.service import GenerationService


def bounded(kind, low, high, what: str):
    """An argparse type: a `kind` number in [low, high], or an argparse error."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if not low <= value <= high:  # NaN fails too
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    return parse


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m specdec.serving", description=__doc__)
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; anything else is warned about)",
    )
    parser.add_argument(
        "--port",
        type=bounded(int, 0, 65535, "a port number in [0, 65535]"),
        default=8000,
        help="port (0: any free port; default 8000)",
    )
    parser.add_argument(
        "--timeout",
        type=bounded(float, 0.1, 600.0, "a number of seconds in [0.1, 600]"),
        default=30.0,
        help="each request's deadline in seconds, retries included (default 30)",
    )
    parser.add_argument(
        "--max-generations",
        type=bounded(int, 1, 256, "a whole number in [1, 256]"),
        default=16,
        help="generations at once; beyond it requests get 503 with Retry-After (default 16)",
    )
    parser.add_argument(
        "--batch-rows",
        type=bounded(int, 0, 256, "a whole number in [0, 256]"),
        default=16,
        help="requests decoded together, one target call per round for all of them; more wait for a row"
        " (0: each request alone in its own thread, as before batching; default 16)",
    )
    parser.add_argument(
        "--batch-call",
        choices=("invariant", "padded"),
        default="invariant",
        help="the batched call: invariant (a text never depends on its batch-mates; default) or padded"
        " (notebook 12's faster call: texts equal to alone up to float32 rounding)",
    )
    parser.add_argument(
        "--fail-rate",
        type=bounded(float, 0.0, 0.99, "a fraction in [0, 0.99]"),
        default=0.0,
        help="inject transient target failures on this fraction of calls; the target is then served one request"
        " at a time, without the batcher (default 0)",
    )
    parser.add_argument(
        "--slow-ms",
        type=bounded(float, 0.0, 1000.0, "a number of milliseconds in [0, 1000]"),
        default=0.0,
        help="make every target call this much slower: a stand-in for a bigger model, to watch streaming,"
        " the limits and the deadline at human speed; a slowed target is served one request at a time (default 0)",
    )
    parser.add_argument(
        "--attempts",
        type=bounded(int, 1, 100, "a whole number in [1, 100]"),
        default=5,
        help="attempts per target call before giving up (default 5)",
    )
    parser.add_argument(
        "--proxy",
        action="store_true",
        help="serve behind nginx (it must be installed): nginx listens on --host:--port with header and body"
        " deadlines, size and per-address connection limits; the app listens on a free port of 127.0.0.1",
    )
    args = parser.parse_args(argv)  # every option checked here, before any model is loaded
    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        parser.error(f"argument --host: must be an IP address such as 127.0.0.1, got {args.host!r}")
    # Imported here: uvicorn and starlette load only once the options are known to be good.
    import uvicorn

    from specdec.serving.app import Limits, bind, uvicorn_config

    threadpool_limits(1, user_api="blas")  # small products: one BLAS thread is faster and steadier (notebook 07)
    target = specdec.load_model("target")
    if args.slow_ms:
        target = SlowModel(target, args.slow_ms / 1000)
    if args.fail_rate:
        target = FlakyModel(target, args.fail_rate, np.random.default_rng(), mid_forward=0.5)
    service = GenerationService(
        target=target,
        policy=RetryPolicy(attempts=args.attempts),
        timeout=args.timeout,
        batch_rows=args.batch_rows or None,
        batch_call=args.batch_call,
    )
    limits = Limits(max_generations=args.max_generations)
    sock = bind("127.0.0.1", 0) if args.proxy else bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    with contextlib.ExitStack() as stack:
        if args.proxy:
            from specdec.serving.proxy import Proxy

            proxy = stack.enter_context(Proxy(f"http://{host}:{port}", limits, port=args.port, host=args.host))
            url = proxy.url
        else:
            url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        if not loopback:
            print(
                f"warning: listening on {args.host}, not only on this machine: the service has no authentication,"
                " no TLS and no rate limit per client; put it behind a proxy that adds them",
                file=sys.stderr,
                flush=True,
            )
        print(
            f"serving on {url}  (POST /v1/completions, GET /v1/models, GET /metrics, GET /health; Ctrl-C stops)",
            flush=True,
        )
        uvicorn.Server(uvicorn_config(service, limits, host, port, "warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
