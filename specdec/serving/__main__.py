"""python -m specdec.serving [--port 8000] [--fail-rate 0.1]: serve the bundled models on 127.0.0.1."""

import argparse

import numpy as np
from threadpoolctl import threadpool_limits

import specdec
from specdec.serving.faults import FlakyModel
from specdec.serving.retry import RetryPolicy
from specdec.serving.server import make_server
from specdec.serving.service import GenerationService


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m specdec.serving", description=__doc__)
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free port; default 8000)")
    parser.add_argument(
        "--fail-rate", type=float, default=0.0, help="inject transient target failures on this fraction of calls"
    )
    parser.add_argument("--attempts", type=int, default=5, help="attempts per target call before giving up")
    args = parser.parse_args(argv)
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
