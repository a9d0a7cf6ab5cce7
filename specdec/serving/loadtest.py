"""A bounded load test against a local server, and the same figures read back from its /metrics.

Only for servers on this machine (the URL must be http://127.0.0.1:PORT or http://localhost:PORT):
a fixed number of requests, a fixed number of concurrent clients, and a duration after which
no new request is sent. Every request sent is accounted for: answered (by status) or failed.
"""

import json
import math
import socket
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

# Each request goes out at once: without TCP_NODELAY the body, written after the headers, waits for the
# server's delayed ACK of the headers (Nagle's algorithm), about 40 ms on Linux, and the load test would
# measure that wait instead of the server.
NO_DELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]

LOCAL_HOSTS = {"127.0.0.1", "localhost"}


def check_local(url: str) -> str:
    host = urllib.parse.urlsplit(url).hostname
    if host not in LOCAL_HOSTS:
        raise ValueError(f"the load test only talks to this machine (127.0.0.1 or localhost), got {url!r}")
    return url.rstrip("/")


def post_json(url: str, path: str, body, timeout: float = 30.0) -> tuple[int, dict]:
    """POST a JSON body (or raw bytes, sent as application/json) to a local server; (status, JSON answer)."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    response = httpx.post(check_local(url) + path, content=content, headers=headers, timeout=timeout)
    return response.status_code, response.json()


def get_text(url: str, path: str, timeout: float = 10.0) -> tuple[int, str]:
    response = httpx.get(check_local(url) + path, timeout=timeout)
    return response.status_code, response.text


@dataclass
class LoadTestResult:
    sent: int
    not_sent: int  # requests the duration bound stopped before they were sent
    statuses: dict = field(default_factory=dict)  # status -> count (0: no answer at all)
    latencies: list = field(default_factory=list)  # seconds, answered requests
    tokens: int = 0  # completion tokens in the 200 answers
    texts: dict = field(default_factory=dict)  # index of the body -> text of its 200 answer
    wall: float = 0.0

    @property
    def failed(self) -> int:
        return self.sent - self.statuses.get(200, 0)

    @property
    def lost(self) -> int:
        return self.sent - sum(count for status, count in self.statuses.items() if status)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else math.nan


def load_test(url: str, bodies: list, concurrency: int = 4, duration: float = 60.0, timeout: float = 30.0):
    """POST each body once to /v1/completions (at most `concurrency` at a time, none after `duration` s)."""
    url = check_local(url)
    if not 1 <= concurrency <= 64:
        raise ValueError(f"concurrency must be in [1, 64], got {concurrency}")
    result = LoadTestResult(0, 0)
    lock = threading.Lock()
    start = time.perf_counter()
    local, clients = threading.local(), []  # one connection pool per client thread

    def one(indexed) -> None:
        index, body = indexed
        if time.perf_counter() - start > duration:
            with lock:
                result.not_sent += 1
            return
        if not hasattr(local, "client"):
            local.client = httpx.Client(
                base_url=url, timeout=timeout, transport=httpx.HTTPTransport(socket_options=NO_DELAY)
            )
            with lock:
                clients.append(local.client)
        with lock:
            result.sent += 1
        sent = time.perf_counter()
        try:
            response = local.client.post("/v1/completions", json=body)
            status, answer = response.status_code, response.json()
        except (httpx.HTTPError, ValueError):
            status, answer = 0, {}
        seconds = time.perf_counter() - sent
        with lock:
            result.statuses[status] = result.statuses.get(status, 0) + 1
            if status:
                result.latencies.append(seconds)
            if status == 200:
                result.tokens += answer["usage"]["completion_tokens"]
                result.texts[index] = answer["choices"][0]["text"]

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, enumerate(bodies)))
    for client in clients:
        client.close()
    result.wall = time.perf_counter() - start
    return result


def read_metrics(url: str) -> dict:
    """GET /metrics, parsed by prometheus_client's parser: {(sample name, labels as a sorted tuple): value}."""
    status, text = get_text(url, "/metrics")
    if status != 200:
        raise RuntimeError(f"GET /metrics answered {status}")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def metric(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted((k, str(v)) for k, v in labels.items()))), 0.0)


def buckets(samples: dict, name: str) -> list[tuple[float, float]]:
    """A histogram's cumulative buckets [(upper bound, count)], sorted, +Inf last."""
    rows = [
        (float(dict(labels)["le"]), value) for (sample, labels), value in samples.items() if sample == name + "_bucket"
    ]
    return sorted(rows)


def histogram_quantile(q: float, cumulative: list[tuple[float, float]]) -> float:
    """Prometheus' histogram_quantile: linear interpolation inside the bucket where rank q * count falls."""
    if not cumulative or cumulative[-1][1] == 0:
        return math.nan
    total = cumulative[-1][1]
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in cumulative:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound  # the highest finite bound, as Prometheus does
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / max(count - lower_count, 1e-300)
        lower_bound, lower_count = bound, count
    return math.nan


def difference(after: dict, before: dict) -> dict:
    """Counters and buckets of `after` minus `before` (what happened between two scrapes)."""
    return {key: value - before.get(key, 0.0) for key, value in after.items()}
