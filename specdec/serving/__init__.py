"""Appendix B: speculative decoding as a service (notebooks/appendices/B_serving.ipynb).

Optional: the submodules import their own extra dependencies (requirements-extras.txt), and
`import specdec` never imports this package.

* `faults`   fault injection: a target whose forward pass fails on a seeded fraction of calls,
             sometimes after writing part of its cache (numpy only)
* `retry`    `RetryingModel`: retries a model's `score` with exponential back-off and jitter
             (tenacity), rolling its decoding state back first, so the output stays exact; and
             `redrawing_speculative_generate`, the naive retry kept as a negative control
* `metrics`  Prometheus counters and histograms (prometheus_client)
* `service`  the request schema (pydantic), validation and generation with a deadline and
             cancellation, independent of HTTP
* `batcher`  the requests in flight decoded in one batch: one target call per round for all of them
             (notebook 12's batch-invariant call: every text bit for bit the text alone), rows joining
             and leaving between rounds, retries that roll every row back
* `app`      the HTTP service (Starlette on uvicorn): POST /v1/completions (OpenAI's API, with
             streaming), GET /v1/models, GET /metrics, GET /health, and the limits a real server
             needs that only the app can set; `python -m specdec.serving` starts it on 127.0.0.1
* `proxy`    nginx in front of the app for the transport's limits (header deadline, connections
             per address, lingering close), configured from the same `Limits`;
             `python -m specdec.serving --proxy` starts both
* `loadtest` a bounded load test against a local server, and the same figures read from /metrics
* `cluster`  scale-out on dask.distributed: many requests on many workers, and a remote target
"""
