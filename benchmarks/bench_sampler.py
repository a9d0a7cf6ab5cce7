"""Benchmark: specdec's sampler against Hugging Face's logits warpers on CPU, side by side.

What is timed, for a (64, 50257) float32 batch of logits (GPT-2's vocabulary size):

* ours: `sample_token(logits, params, rng)`: `sampling_probs` (the filtered distribution as
  float64 probabilities), then one inverse-CDF draw per row (`draw`, the core of `sample`,
  without re-validating rows that are distributions by construction).
* Hugging Face: what `generate(do_sample=True)` runs per step on the logits, in its order:
  `TemperatureLogitsWarper` -> `TopKLogitsWarper` -> `TopPLogitsWarper` (a `LogitsProcessorList`),
  then `softmax` and `torch.multinomial(probs, num_samples=1)`, under `torch.no_grad()`, with
  torch's default thread settings. The logits are already a torch tensor (no conversion timed).

Two settings: T=0.7, top_k=50, top_p=0.9, and T=0.7, top_p=0.9 without top-k. The runs are
interleaved (ours, HF, ours, HF, ...) after a warm-up, so both see the same machine state; the
script reports medians, interquartile ranges and the ratio of the medians from the same run.
Process CPU time / wall time shows how many cores each side keeps busy: Hugging Face's over its
timed runs (about 1.5 with two threads on an idle 2-core machine; the script warns below 1.3,
which means another process took the second core and the ratio is inflated), ours in a few runs
alone, before torch has started its thread pool (in the interleaved runs torch's idle OpenMP
workers keep spinning for a moment after each of its calls, which would be counted as ours).

Before timing, it asserts that both sides keep exactly the same tokens in every row (ours:
probability > 0; Hugging Face: filtered score finite), that ours also agrees with the naive
composition of the package's filters (so no kept token's probability underflowed to 0), and
that every drawn token is one of the kept ones.

    pip install -r benchmarks/requirements.txt && pip install --no-deps -e .
    python benchmarks/bench_sampler.py            # about 20 s on a 2-core machine
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np
import torch
import transformers
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from specdec import SamplingParams, sample_token, sampling_probs, top_k_filter, top_p_filter

ROWS, VOCAB = 64, 50257
SEED = 20261129


def realistic_logits(rng: np.random.Generator, rows: int = ROWS, vocab: int = VOCAB) -> np.ndarray:
    """A batch of next-token logits shaped like a language model's: a few strong tokens over a Gaussian background.

    Each row: every token gets a background logit ~ N(0, 3^2) (alone, at T=0.7 and p=0.9,
    that gives a nucleus of tens to a few hundred tokens); then 1 to 8 "strong" tokens (random
    ids) are placed at lead - |N(0, 1.5^2)| above the background's maximum, with the lead
    uniform on [-4, 8]. A large lead makes a confident row (nucleus of 1 or a few tokens), a
    negative one lets the background dominate (hundreds), so the batch covers both, as real
    generation does. Returns float32, shape (rows, vocab); continuous values, so no ties.
    """
    logits = (3.0 * rng.standard_normal((rows, vocab))).astype(np.float32)  # (rows, vocab)
    background_max = logits.max(axis=-1)  # (rows,)
    for row in range(rows):
        n_strong = int(rng.integers(1, 9))
        ids = rng.choice(vocab, size=n_strong, replace=False)  # (n_strong,)
        lead = rng.uniform(-4.0, 8.0)
        offsets = np.abs(rng.normal(0.0, 1.5, size=n_strong))  # (n_strong,)
        logits[row, ids] = background_max[row] + lead - offsets
    return logits


def ours(logits: np.ndarray, params: SamplingParams, rng: np.random.Generator) -> np.ndarray:
    """specdec: the filtered distribution, then one draw per row; returns (rows,) int64 tokens."""
    return sample_token(logits, params, rng)


def hf_warpers(params: SamplingParams) -> LogitsProcessorList:
    """The warpers `generate` builds for these parameters, in its order."""
    warpers = LogitsProcessorList([TemperatureLogitsWarper(params.temperature)])
    if params.top_k is not None:
        warpers.append(TopKLogitsWarper(top_k=params.top_k))
    if params.top_p < 1:
        warpers.append(TopPLogitsWarper(top_p=params.top_p))
    return warpers


def hf(scores: torch.Tensor, warpers: LogitsProcessorList, input_ids: torch.Tensor, generator: torch.Generator):
    """Hugging Face: warp the scores, softmax, torch.multinomial; returns (filtered scores, (rows,) tokens)."""
    with torch.no_grad():
        filtered = warpers(input_ids, scores)  # (rows, vocab) -inf outside the kept set
        probs = torch.nn.functional.softmax(filtered, dim=-1)  # (rows, vocab)
        tokens = torch.multinomial(probs, num_samples=1, generator=generator).squeeze(1)  # (rows,)
    return filtered, tokens


def check_parity(logits: np.ndarray, params: SamplingParams, warpers, input_ids, generator, rng) -> np.ndarray:
    """Assert identical kept sets (ours, naive filters, Hugging Face) and valid draws; return kept sizes."""
    probs = sampling_probs(logits, params)  # (rows, vocab) float64
    kept_ours = probs > 0  # (rows, vocab)
    scaled = logits.astype(np.float64) / params.temperature  # (rows, vocab)
    naive = scaled if params.top_k is None else top_k_filter(scaled, params.top_k)
    kept_naive = np.isfinite(top_p_filter(naive, params.top_p))  # (rows, vocab)
    filtered, hf_tokens = hf(torch.from_numpy(logits), warpers, input_ids, generator)
    kept_hf = torch.isfinite(filtered).numpy()  # (rows, vocab)
    assert np.array_equal(kept_ours, kept_naive), "a kept token's probability underflowed to 0 (or a filter bug)"
    differing = np.flatnonzero((kept_ours != kept_hf).any(axis=-1))
    assert differing.size == 0, f"kept sets differ from Hugging Face's in rows {differing.tolist()}"
    assert np.allclose(probs.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    tokens = ours(logits, params, rng)  # (rows,)
    rows = np.arange(logits.shape[0])
    assert tokens.shape == (logits.shape[0],) and kept_ours[rows, tokens].all(), "ours drew a filtered-out token"
    assert hf_tokens.shape == (logits.shape[0],) and kept_hf[rows, hf_tokens.numpy()].all(), "HF drew a dropped token"
    return kept_ours.sum(axis=-1)


def cores_busy(run, repeats: int = 5) -> float:
    """Process CPU time / wall time over a few runs: about 1 for one thread, up to 2 on two cores."""
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(repeats):
        run()
    return (time.process_time() - start_cpu) / (time.perf_counter() - start_wall)


def time_interleaved(run_ours, run_hf, repeats: int, warmup: int):
    """Alternate ours / HF after a warm-up.

    Returns each side's list of wall-clock seconds, and the process CPU time / wall time over
    Hugging Face's timed runs (about 1.5 when torch had both cores to itself, about 1 when
    something else was running on the other core).
    """
    for _ in range(warmup):
        run_ours()
        run_hf()
    wall = {"ours": [], "hf": []}
    hf_cpu = 0.0
    for _ in range(repeats):
        for name, run in (("ours", run_ours), ("hf", run_hf)):
            start, start_cpu = time.perf_counter(), time.process_time()
            run()
            wall[name].append(time.perf_counter() - start)
            if name == "hf":
                hf_cpu += time.process_time() - start_cpu
    return wall, hf_cpu / sum(wall["hf"])


def summary(seconds: list[float]) -> tuple[float, float, float]:
    """Median and interquartile range (q1, q3), in milliseconds."""
    q1, median, q3 = statistics.quantiles([1e3 * s for s in seconds], n=4, method="inclusive")
    return median, q1, q3


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux, else what platform knows)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=40, help="timed runs per side and setting (default 40)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs per side first (default 3)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()

    print(f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}")
    print(f"numpy {np.__version__}, torch {torch.__version__}, transformers {transformers.__version__}")
    print(
        f"threads: torch intra-op {torch.get_num_threads()}, inter-op {torch.get_num_interop_threads()} (defaults); "
        "numpy: 1 (argpartition, sort, exp and cumsum do not use BLAS or threads)"
    )
    rng = np.random.default_rng(args.seed)
    logits = realistic_logits(rng)  # (ROWS, VOCAB) float32
    scores = torch.from_numpy(logits)  # shares memory; the warpers do not modify it
    input_ids = torch.zeros((ROWS, 1), dtype=torch.long)  # the warpers above ignore it
    generator = torch.Generator().manual_seed(args.seed)
    print(f"logits: {logits.shape} {logits.dtype}, generator seed {args.seed}")
    print("load average before timing (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))

    settings = {
        "T=0.7, top_k=50, top_p=0.9": SamplingParams(temperature=0.7, top_k=50, top_p=0.9),
        "T=0.7, top_p=0.9 (no top-k)": SamplingParams(temperature=0.7, top_p=0.9),
    }
    busy_ours = {
        label: cores_busy(lambda params=params: ours(logits, params, rng)) for label, params in settings.items()
    }
    rows = []
    for label, params in settings.items():
        warpers = hf_warpers(params)
        sizes = check_parity(logits, params, warpers, input_ids, generator, rng)
        q = np.percentile(sizes, [25, 50, 75])
        print(
            f"{label}: kept sets identical to Hugging Face's in all {ROWS} rows, draws valid; kept-set sizes "
            f"min {sizes.min()}, quartiles {q[0]:.0f}/{q[1]:.0f}/{q[2]:.0f}, max {sizes.max()}"
        )
        wall, busy_hf = time_interleaved(
            lambda params=params: ours(logits, params, rng),
            lambda warpers=warpers: hf(scores, warpers, input_ids, generator),
            args.repeats,
            args.warmup,
        )
        busy = (busy_ours[label], busy_hf)
        ours_ms, hf_ms = summary(wall["ours"]), summary(wall["hf"])
        rows.append((label, ours_ms, hf_ms, hf_ms[0] / ours_ms[0], busy))

    print(f"\n{args.repeats} interleaved runs per side after {args.warmup} warm-up runs; milliseconds per batch;")
    print("speed-up = HF median / specdec median; cores busy = process CPU time / wall time")
    print("| setting | specdec median (IQR) | Hugging Face median (IQR) | speed-up | cores busy: specdec, HF |")
    print("|---|---|---|---|---|")
    for label, (om, oq1, oq3), (hm, hq1, hq3), ratio, busy in rows:
        print(
            f"| {label} | {om:.1f} ({oq1:.1f}–{oq3:.1f}) | {hm:.1f} ({hq1:.1f}–{hq3:.1f}) | {ratio:.1f}× "
            f"| {busy[0]:.2f}, {busy[1]:.2f} |"
        )
    if min(busy[1] for *_, busy in rows) < 1.3 and (os.cpu_count() or 1) > 1:
        print(
            "WARNING: torch did not keep two cores busy: another process was using the machine, which slows "
            "torch's two threads more than specdec's one and inflates the ratio. Rerun on an idle machine."
        )


if __name__ == "__main__":
    main()
