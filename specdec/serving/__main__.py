"""python -m specdec.serving [--port 8000] [--fail-rate 0.1]: serve the bundled models on 127.0.0.1."""

import argparse

import numpy as np
from threadpoolctl import threadpool_limits

import specdec
from specdec.serving.faults import FlakyModel
from specdec.serving.retry import RetryPolicy
from specdec.serving.server import make_server
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
        "--port",
        type=bounded(int, 0, 65535, "a port number in [0, 65535]"),
        default=8000,
        help="port on 127.0.0.1 (0: any free port; default 8000)",
    )
    parser.add_argument(
        "--fail-rate",
        type=bounded(float, 0.0, 0.99, "a fraction in [0, 0.99]"),
        default=0.0,
        help="inject transient target failures on this fraction of calls (default 0)",
    )
    parser.add_argument(
        "--attempts",
        type=bounded(int, 1, 100, "a whole number in [1, 100]"),
        default=5,
        help="attempts per target call before giving up (default 5)",
    )
    args = parser.parse_args(argv)  # every option checked here, before any model is loaded
    threadpool_limits(1, user_api="blas")  # small products: one BLAS thread is faster and steadier (notebook 07)
    target = specdec.load_model("target")
    if args.fail_rate:
        target = FlakyModel(target, args.fail_rate, np.random.default_rng(), mid_forward=0.5)
    service = GenerationService(target=target, policy=RetryPolicy(attempts=args.attempts))
    server = make_server(service, "127.0.0.1", args.port)
    host, port = server.server_address[:2]
    print(f"serving on http://{host}:{port}  (POST /generate, GET /metrics; Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
