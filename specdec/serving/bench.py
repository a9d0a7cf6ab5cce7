"""The appendix's measurements, as functions (the notebook calls them) and as a command:

    python -m specdec.serving.bench [--quick] [--only batching]

prints, with the CPU and BLAS they were measured on: the cost of the instrumentation (metrics,
round clock, retry wrapper) per generation, throughput of many requests on 1 and 2 dask workers
against the sequential run, the remote-target cost model, and a bounded load test against a
server on 127.0.0.1 with the same figures read back from /metrics, and tokens per second under 16
concurrent clients with and without the batcher. Medians of interleaved runs:
the machine may be shared, and other programs only ever make a run slower.
"""

import argparse
import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import specdec
from specdec.serving import cluster, loadtest
from specdec.serving.app import BackgroundServer, Limits
from specdec.serving.service import MODEL, GenerationService
from specdec.threads import cpu_name
from specdec.timing import cost_ratios, expected_tokens, time_calls, time_scoring


def machine() -> str:
    """The CPU model and numpy's BLAS (library, kernel, threads): what every figure depends on."""
    cpu = cpu_name()
    blas = [
        f"{i['internal_api']} {i.get('version', '')} {i.get('architecture', '')}, {i['num_threads']} thread(s)"
        for i in threadpool_info()
        if i["user_api"] == "blas"
    ]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"CPU: {cpu}; BLAS: {'; '.join(blas) or 'unknown'}; load average (1 min) {load:.1f} on {os.cpu_count()} CPUs"


def uninstrumented(service: GenerationService, request):
    """The request's generation with the library alone: no metrics, no retries, no round clock."""
    return specdec.speculative_generate(
        service.target,
        service.draft,
        request.prompt,
        request.max_tokens,
        request.params,
        request.gamma,
        np.random.default_rng(request.seed),
        end_token=0,
    )


def instrumentation_overhead(service: GenerationService, body: dict, repeats: int = 15) -> dict:
    """Median seconds per generation (wall and CPU): plain speculative_generate vs the instrumented path.

    Same request, same seed, interleaved in a shuffled order each round, after a warm-up. The
    instrumented path is `service.complete`: the retry wrapper, the round clock and the Prometheus
    updates (no HTTP: that is transport, not instrumentation). "plain again" runs the plain path a
    second time: the gap between the two plain medians (an A/A comparison) is the noise floor.
    CPU time (process_time) is what this process itself spent, so other programs on a shared
    machine disturb it less than wall-clock time.
    """
    request = service.parse(json.dumps(body).encode())

    def plain():
        return uninstrumented(service, request)

    runs = {"plain": plain, "plain again": plain, "instrumented": lambda: service.complete(request)}
    for run in runs.values():
        run()
    rng = np.random.default_rng(0)
    wall, cpu = {key: [] for key in runs}, {key: [] for key in runs}
    for _ in range(repeats):
        for key in rng.permutation(list(runs)).tolist():
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            runs[key]()
            wall[key].append(time.perf_counter() - start_wall)
            cpu[key].append(time.process_time() - start_cpu)
    result = {"wall": {k: float(np.median(v)) for k, v in wall.items()}}
    result["cpu"] = {k: float(np.median(v)) for k, v in cpu.items()}
    for clock in ("wall", "cpu"):
        m = result[clock]
        result[f"{clock}_overhead"] = m["instrumented"] / m["plain"] - 1
        result[f"{clock}_noise"] = m["plain again"] / m["plain"] - 1
    return result


def format_overhead(o: dict, clock: str) -> str:
    m = o[clock]
    return (
        f"plain {m['plain'] * 1e3:.2f} ms, instrumented {m['instrumented'] * 1e3:.2f} ms:"
        f" overhead {o[clock + '_overhead']:+.1%} (A/A noise floor, plain vs plain again: {o[clock + '_noise']:+.1%})"
    )


def overhead_verdict(end_to_end: dict, bottom_up: dict, budget: float = 0.03) -> str:
    """One plain sentence from the two measurements: what the overhead is, and whether it fits the budget.

    The end-to-end difference (CPU time) says something only when it stands out of the A/A noise
    floor; even then, if the wrappers counted alone (bottom-up) cost far less, the difference came
    from the machine, not from the instrumentation. The bottom-up count is the figure either way.
    """
    overhead, noise = end_to_end["cpu_overhead"], abs(end_to_end["cpu_noise"])
    counted = bottom_up["overhead"]
    fits = "within" if counted <= budget else "over"
    verdict = f"counted bottom-up the overhead is {counted:.2%} of a generation, {fits} the {budget:.0%} budget"
    if abs(overhead) <= noise:
        return (
            f"End to end the difference ({overhead:+.1%}) is inside the noise floor (±{noise:.1%}), so it cannot"
            f" tell the overhead from zero; {verdict}."
        )
    if abs(overhead) > 3 * max(counted, budget / 3):
        return (
            f"End to end the difference ({overhead:+.1%}) stands out of this run's noise floor (±{noise:.1%}) but is"
            f" far from what the wrappers cost: other programs slowed some runs more than others (run the cell"
            f" again); {verdict}."
        )
    return f"End to end the difference ({overhead:+.1%}) stands out of the noise floor (±{noise:.1%}); {verdict}."


class _NullModel:
    """A model that does nothing (for timing what wrappers add around a score call)."""

    name, vocab_size, max_context = "null", 98, 1 << 30

    def __init__(self):
        self.logits = np.zeros((1, 98), dtype=np.float32)

    def start(self):
        return _NullState()

    def score(self, tokens, state):
        return self.logits


class _NullState:
    length = 0

    def rollback(self, length):
        pass


def instrumentation_cost(service: GenerationService, body: dict, repeats: int = 21) -> dict:
    """The instrumentation's cost counted bottom-up, which a busy machine blurs far less than end to end.

    Per target call: what RoundClock + RetryingModel (tenacity) add around a model whose score does
    nothing. Per request: building the wrappers and recording the metrics. Then the cost of one
    generation of `body` = per call * its target calls + per request, as a fraction of the
    generation's own median time.
    """
    from specdec.serving.metrics import RoundClock
    from specdec.serving.retry import RetryingModel

    request = service.parse(json.dumps(body).encode())
    null = _NullModel()
    state = null.start()
    wrapped = RoundClock(RetryingModel(null, service.policy), time.perf_counter)
    calls = 2000
    times = time_calls(
        {"bare": lambda: null.score([1], state), "wrapped": lambda: wrapped.score([1], state)},
        repeats=repeats,
        number=calls,
    )
    per_call = times["wrapped"] - times["bare"]
    result = uninstrumented(service, request)
    rounds = [0.001] * result.target_calls

    def per_request_work():
        RoundClock(RetryingModel(service.target, service.policy), time.perf_counter).reset()
        service.metrics.record_work(result, rounds)
        service.metrics.record_request("ok", result.tokens.size, result.seconds)

    per_request = time_calls({"fixed": per_request_work}, repeats=repeats, number=20)["fixed"]
    generation = time_calls(
        {
            "plain": lambda: uninstrumented(service, request),
        },
        repeats=max(5, repeats // 3),
    )["plain"]
    added = per_call * result.target_calls + per_request
    return {
        "per_call": per_call,
        "per_request": per_request,
        "target_calls": result.target_calls,
        "generation": generation,
        "overhead": added / generation,
    }


def worker_throughput(client, jobs: list, root_seed: int = 0, rounds: int = 3) -> dict:
    """Seconds for all jobs: sequential in this process, on 1 worker and on 2 workers of `client`'s cluster.

    "1 worker" restricts the tasks to the cluster's first worker (the other one idles), so one
    cluster serves both sizes and the runs can be interleaved (shuffled each round). Models are
    loaded on every worker before timing. Returns medians, tokens, and whether each run
    equalled the sequential one.
    """
    cluster.quiet_dask_logging()
    rng = np.random.default_rng(0)
    workers = sorted(client.scheduler_info()["workers"])
    client.run(cluster.worker_models)
    cluster.generate_many(client, jobs[: len(workers)], root_seed)  # warm-up
    reference = cluster.generate_sequential(jobs, root_seed)
    runs = {
        "sequential": lambda: cluster.generate_sequential(jobs, root_seed),
        "1 worker": lambda: cluster.generate_many(client, jobs, root_seed, workers=workers[:1]),
        f"{len(workers)} workers": lambda: cluster.generate_many(client, jobs, root_seed),
    }
    seconds = {key: [] for key in runs}
    equal = {key: True for key in runs}
    for _ in range(rounds):
        for key in rng.permutation(list(runs)).tolist():
            start = time.perf_counter()
            results = runs[key]()
            seconds[key].append(time.perf_counter() - start)
            equal[key] &= [r["tokens"] for r in results] == [r["tokens"] for r in reference]
    tokens = sum(len(r["tokens"]) for r in reference)
    return {"seconds": {k: float(np.median(v)) for k, v in seconds.items()}, "tokens": tokens, "equal": equal}


def remote_target_costs(client, gammas=range(1, 9), seeds: int = 4, new_tokens: int = 150) -> dict:
    """The cost model with a round trip: measured on a target in a dask actor on a worker of `client`.

    Measures (medians): the target's one-token step t1 and f(n) locally; the draft cost ratio c;
    alpha per gamma (local runs; a remote target gives the same tokens); the round trip of a
    remote score call beyond its compute; and measured speed-ups of local and remote speculative
    decoding over plain local decoding at each gamma.
    """
    target, draft, tokenizer = cluster.worker_models()
    prompt = tokenizer.encode("def __init__(self")
    params = specdec.SamplingParams()
    times = time_scoring(target, list(range(1, max(gammas) + 2)), repeats=15)
    f = cost_ratios(times)
    t1 = times[1]
    c = time_scoring(draft, [1], repeats=15)[1] / t1
    worker = sorted(client.scheduler_info()["workers"])[-1]
    actor = client.submit(cluster.TargetActor, actor=True, workers=[worker]).result()
    remote = cluster.RemoteModel(actor)
    pings = []
    for _ in range(60):
        start = time.perf_counter()
        actor.ping().result()
        pings.append(time.perf_counter() - start)
    rows, plain_runs = [], []
    for gamma in gammas:
        local_s, remote_s, alphas = [], [], []
        remote.seconds_total = remote.seconds_remote = 0.0
        remote.calls = 0
        for seed in range(seeds):
            plain = specdec.generate(target, prompt, new_tokens, params, np.random.default_rng(seed))
            plain_runs.append(plain.seconds / plain.tokens.size)
            for model, bucket in ((target, local_s), (remote, remote_s)):
                with remote.closing():  # the actor frees the remote run's state, whatever happens
                    r = specdec.speculative_generate(
                        model, draft, prompt, new_tokens, params, gamma, np.random.default_rng(seed)
                    )
                bucket.append(r.seconds / r.tokens.size)
            alphas.append(r.alpha)
        rows.append(
            {
                "gamma": gamma,
                "alpha": float(np.mean(alphas)),
                "local_s_per_token": float(np.median(local_s)),
                "remote_s_per_token": float(np.median(remote_s)),
                "round_trip": (remote.seconds_total - remote.seconds_remote) / remote.calls,
            }
        )
    del actor, remote
    plain_s = float(np.median(plain_runs))
    for row in rows:
        gamma, alpha = row["gamma"], row["alpha"]
        e = expected_tokens(alpha, gamma)
        r = row["round_trip"] / t1
        row.update(
            expected_tokens=e,
            r=r,
            predicted_local=e / (gamma * c + f[gamma + 1]),
            predicted_remote=e / (gamma * c + f[gamma + 1] + r),
            measured_local=plain_s / row["local_s_per_token"],
            measured_remote=plain_s / row["remote_s_per_token"],
            break_even_r=e - gamma * c - f[gamma + 1],
        )
    return {"t1": t1, "c": c, "f": f, "ping": float(np.median(pings)), "plain_s_per_token": plain_s, "rows": rows}


def when_remote_pays(
    client, steps=(0.0, 0.002, 0.01, 0.03), gamma: int = 4, seeds: int = 2, new_tokens: int = 60
) -> list:
    """Measured speed-ups over plain local decoding as the target's step grows (SlowModel, both sides).

    For each extra step time: plain local decoding, local speculative decoding, and speculative
    decoding with the target in an actor on a worker (one round trip per round), all with the
    same slowed target; medians over seeds of seconds per token.
    """
    target, draft, tokenizer = cluster.worker_models()
    prompt = tokenizer.encode("def __init__(self")
    params = specdec.SamplingParams()
    worker = sorted(client.scheduler_info()["workers"])[-1]
    rows = []
    for step in steps:
        slow = cluster.SlowModel(target, step)
        actor = client.submit(cluster.TargetActor, "target", step, actor=True, workers=[worker]).result()
        remote = cluster.RemoteModel(actor)
        models = {"plain": slow, "local": slow, "remote": remote}
        per_token = {key: [] for key in models}
        for seed in range(seeds):
            for key, model in models.items():
                rng = np.random.default_rng(seed)
                if key == "plain":
                    result = specdec.generate(model, prompt, new_tokens, params, rng)
                else:
                    with remote.closing():  # frees the actor's state of a remote run
                        result = specdec.speculative_generate(model, draft, prompt, new_tokens, params, gamma, rng)
                per_token[key].append(result.seconds / result.tokens.size)
        m = {key: float(np.median(v)) for key, v in per_token.items()}
        rows.append(
            {"step": step, **m, "local_speedup": m["plain"] / m["local"], "remote_speedup": m["plain"] / m["remote"]}
        )
        del actor, models
    return rows


def print_when_remote_pays(rows: list) -> None:
    print(" extra step | plain ms/token | speed-up: local  remote (gamma 4, vs plain local)")
    for row in rows:
        step, plain = row["step"] * 1e3, row["plain"] * 1e3
        print(f" {step:7.1f} ms | {plain:13.2f} | {row['local_speedup']:15.2f} {row['remote_speedup']:7.2f}")


def print_remote_table(costs: dict) -> None:
    print(
        f"target step t1 = {costs['t1'] * 1e3:.3f} ms, c = {costs['c']:.3f}, actor ping = {costs['ping'] * 1e3:.2f} ms"
    )
    print(
        " gamma  alpha  E[tok]  round trip   r=rt/t1 | speed-up local: pred  meas | remote: pred  meas | break-even r"
    )
    for row in costs["rows"]:
        print(
            f"  {row['gamma']:4d}  {row['alpha']:.2f}  {row['expected_tokens']:6.2f}  {row['round_trip'] * 1e3:7.2f} ms"
            f"  {row['r']:8.2f} |  {row['predicted_local']:18.2f} {row['measured_local']:5.2f} |"
            f" {row['predicted_remote']:12.2f} {row['measured_remote']:5.2f} | {row['break_even_r']:8.2f}"
        )
    best = max(costs["rows"], key=lambda row: row["break_even_r"])
    rt = float(np.median([row["round_trip"] for row in costs["rows"]]))
    print(
        f"a remote target beats plain local decoding only if r < {best['break_even_r']:.2f} (gamma = {best['gamma']}):"
        f" with this round trip ({rt * 1e3:.2f} ms) a target step of at least"
        f" {rt / best['break_even_r'] * 1e3:.2f} ms (this one: {costs['t1'] * 1e3:.3f} ms)"
    )


def completion(prompt: str, max_tokens: int, **fields) -> dict:
    """The body of a POST /v1/completions for the bundled models."""
    return {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, **fields}


def run_load_test(n_requests: int = 40, concurrency: int = 4, max_tokens: int = 64, duration: float = 120.0):
    """A server on a free port of 127.0.0.1, n requests, then /metrics; both sets of figures."""
    with BackgroundServer(GenerationService()) as server:
        loadtest.post_json(server.url, "/v1/completions", completion("x", 8, seed=0))  # warm-up
        before = loadtest.read_metrics(server.url)
        bodies = [completion("def __init__(self", max_tokens, seed=i) for i in range(n_requests)]
        result = loadtest.load_test(server.url, bodies, concurrency=concurrency, duration=duration)
        after = loadtest.read_metrics(server.url)
    return result, loadtest.difference(after, before)


def batching_throughput(
    clients: int = 16, n_requests: int = 64, max_tokens: int = 64, rounds: int = 2, prompts=None
) -> dict:
    """Tokens per second under `clients` concurrent clients: one generation per request against the batcher.

    "one at a time": GenerationService(batch_rows=None), each request generated alone in its own thread
    (the service before batching); "batched": the batcher, one target call per round for every request in
    flight (invariant call); "batched, padded": notebook 12's faster padded call. The same requests, the
    same limits (max_generations = clients), each set-up on a fresh server, interleaved `rounds` times;
    medians. The clients run in a process of their own, as real clients do: in the server's process their
    threads would take the GIL from the server. "identical": of the requests answered under load, how many
    got the text they get when sent one at a time to the batched server (its rows then never have company).
    """
    prompts = (
        ["def __init__(self", "import numpy as np\n", "for i in range(", "class Model:\n    "]
        if prompts is None
        else prompts
    )
    bodies = [completion(prompts[i % len(prompts)], max_tokens, seed=i) for i in range(n_requests)]
    setups = {
        "one at a time": {"batch_rows": None},
        "batched": {},
        "batched, padded": {"batch_call": "padded"},
    }
    rates: dict = {name: [] for name in setups}  # name -> tokens per second, a round each
    identical: dict = {name: [] for name in setups if name != "one at a time"}  # name -> texts as alone, a round each
    texts: dict = {}
    clients_process = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    for _ in range(rounds):
        for name, settings in setups.items():
            service = GenerationService(**settings)
            with BackgroundServer(service, limits=Limits(max_generations=clients)) as server:
                loadtest.post_json(server.url, "/v1/completions", completion("x", 8, seed=0))  # warm-up
                if name == "batched" and not texts:
                    texts = loadtest.load_test(server.url, bodies, concurrency=1, duration=300.0).texts
                result = clients_process.submit(loadtest.load_test, server.url, bodies, clients, 300.0).result()
            service.close()
            rates[name].append(result.tokens / result.wall)
            if name in identical:
                identical[name].append(sum(result.texts.get(i) == text for i, text in texts.items()))
    clients_process.shutdown()
    medians = {name: float(np.median(values)) for name, values in rates.items()}
    fewest = {name: min(counts) for name, counts in identical.items()}
    return {"clients": clients, "requests": n_requests, "tokens_per_second": medians, "identical": fewest}


def print_batching(b: dict) -> None:
    base = b["tokens_per_second"]["one at a time"]
    for name, rate in b["tokens_per_second"].items():
        same = b["identical"].get(name)
        same = "" if same is None else f"  texts as sent alone: {same} of {b['requests']}"
        print(f"{name:16s} {rate:7.0f} tokens/s  {rate / base:4.2f}x{same}")


def print_load_test(result, delta: dict) -> None:
    print(
        f"sent {result.sent}, answered 200: {result.statuses.get(200, 0)}, failed {result.failed},"
        f" lost {result.lost}, not sent {result.not_sent}"
    )
    print(
        f"client side : {result.sent / result.wall:6.2f} requests/s, {result.tokens / result.wall:7.1f} tokens/s,"
        f" latency p50 {result.percentile(50) * 1e3:6.1f} ms, p95 {result.percentile(95) * 1e3:6.1f} ms,"
        f" p99 {result.percentile(99) * 1e3:6.1f} ms"
    )
    cumulative = loadtest.buckets(delta, "specdec_request_seconds")
    q = {p: loadtest.histogram_quantile(p / 100, cumulative) * 1e3 for p in (50, 95, 99)}
    generated = loadtest.metric(delta, "specdec_generated_tokens_total")
    requests = loadtest.metric(delta, "specdec_requests_total", code="200", outcome="ok")
    alpha = loadtest.metric(delta, "specdec_accepted_tokens_total") / loadtest.metric(
        delta, "specdec_tested_tokens_total"
    )  # accepted / tested, notebook 10's alpha (accepted / drafted would underestimate it)
    print(
        f"from /metrics: {requests / result.wall:6.2f} requests/s, {generated / result.wall:7.1f} tokens/s,"
        f" generation p50 {q[50]:6.1f} ms, p95 {q[95]:6.1f} ms, p99 {q[99]:6.1f} ms (bucket-interpolated),"
        f" alpha {alpha:.3f}"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m specdec.serving.bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument(
        "--only", choices=("batching",), help="run one section: batching (16 clients, with and without the batcher)"
    )
    args = parser.parse_args(argv)
    limits = threadpool_limits(1, user_api="blas")  # kept: the limit holds while the object lives
    print(machine())
    q = args.quick
    if args.only == "batching":
        print_batching(batching_throughput(16, n_requests=32 if q else 96, rounds=1 if q else 3))
        limits.restore_original_limits()
        return
    print("\n== instrumentation overhead (per generation of 64 tokens, no HTTP, one request at a time)")
    service = GenerationService(batch_rows=None)
    body = completion("def __init__(self", 64, seed=3)
    o = instrumentation_overhead(service, body, repeats=5 if q else 31)
    print(f"end to end, wall: {format_overhead(o, 'wall')}")
    print(f"end to end, CPU:  {format_overhead(o, 'cpu')}")
    b = instrumentation_cost(service, body, repeats=5 if q else 21)
    print(
        f"bottom-up: {b['per_call'] * 1e6:.1f} us per target call x {b['target_calls']} calls"
        f" + {b['per_request'] * 1e6:.0f} us per request, against {b['generation'] * 1e3:.2f} ms per generation:"
        f" overhead {b['overhead']:.2%}"
    )
    print(overhead_verdict(o, b))
    from distributed import Client

    cluster.quiet_dask_logging()
    with cluster.local_cluster(2) as local, Client(local) as client:
        print("\n== many requests: sequential vs dask workers (processes, 1 thread each)")
        jobs = [cluster.Job("def __init__(self", 64) for _ in range(8 if q else 24)]
        w = worker_throughput(client, jobs, rounds=1 if q else 3)
        for key, seconds in w["seconds"].items():
            rate = w["tokens"] / seconds
            print(f"{key:12s} {seconds:6.2f} s  {rate:7.1f} tokens/s  equal to sequential: {w['equal'][key]}")
        per_task = (w["seconds"]["1 worker"] - w["seconds"]["sequential"]) / len(jobs)
        print(f"dask overhead with 1 worker: {per_task * 1e3:.1f} ms per request")
        print("\n== remote target (dask actor in another process): the cost model with a round trip")
        costs = remote_target_costs(client, gammas=(2, 4) if q else range(1, 9), seeds=2 if q else 4)
        print_remote_table(costs)
        print("\n== when a remote target pays: the same target made slower by a fixed wait per call (a bigger model)")
        print_when_remote_pays(when_remote_pays(client, seeds=1 if q else 3))
    print("\n== 16 clients at once: one generation per request against the batcher")
    print_batching(batching_throughput(16, n_requests=32 if q else 96, rounds=1 if q else 3))
    print("\n== load test against 127.0.0.1")
    print_load_test(*run_load_test(n_requests=12 if q else 60, concurrency=4))
    limits.restore_original_limits()


if __name__ == "__main__":
    main()
