"""The BLAS thread setting that generation runs with: one thread by default, restored afterwards.

Decoding multiplies a few rows by small weight matrices, thousands of times: products far too
small to gain from a second thread, which then only adds synchronisation and, on a busy 2-core
machine, waits. Measured with the bundled models (8 held-out prompts, 160 tokens, T = 1,
settings alternated prompt by prompt, three passes): on a 2-core Intel Xeon with OpenBLAS's
SkylakeX kernels, plain decoding ran at the same speed with one thread as with two, and
speculative decoding about 5% faster with one; on a 2-core AMD EPYC with the Haswell kernels one
thread gave the larger speed-up too (1.25x against 1.12x at T = 1). So `generate` and
`speculative_generate` run with one BLAS thread (through threadpoolctl when it is installed;
without it nothing changes) and leave the caller's setting untouched outside them.
`set_generation_blas_threads(n)` chooses another limit, `set_generation_blas_threads(None)`
leaves BLAS as the caller set it.

The limit is process-wide (a BLAS library has one setting), so it is counted: the first
generation to start sets it, the last one to finish restores what was there before, and
threads that generate at the same time never leave it changed behind them.
"""

import os
import platform
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from specdec.validation import check_integer

_lock = threading.Lock()
_active = 0  # generations running now
_limiter = None  # threadpoolctl's handle while any generation runs; None when unset or unavailable
_controller = None  # threadpoolctl.ThreadpoolController, made once: finding the libraries takes milliseconds
_threads: int | None = 1  # one BLAS thread while generating (see above); None: leave BLAS alone


def generation_blas_threads() -> int | None:
    """The BLAS thread limit generation runs with; None means generation leaves the setting alone."""
    return _threads


def set_generation_blas_threads(n: int | None) -> None:
    """Run later generations with at most `n` BLAS threads (n >= 1), or, with None, leave BLAS as it is."""
    global _threads
    _threads = None if n is None else check_integer(n, "n", minimum=1)


def _limit(n: int):
    """Limit the BLAS libraries numpy loaded to n threads; None if threadpoolctl is missing."""
    global _controller
    try:
        from threadpoolctl import ThreadpoolController  # optional: `import specdec` needs numpy only
    except ImportError:
        return None
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.limit(limits=n, user_api="blas")


@contextmanager
def generation_threads() -> Iterator[None]:
    """Inside the block, BLAS uses `generation_blas_threads()` threads; nested and concurrent uses are counted."""
    global _active, _limiter
    with _lock:
        if _active == 0 and _threads is not None:
            _limiter = _limit(_threads)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _limiter is not None:
                _limiter.restore_original_limits()
                _limiter = None


def cpuinfo(field: str) -> str | None:
    """The value of the first `field` line of /proc/cpuinfo ("model name", "flags"); None without one (not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return next((line.split(":", 1)[1].strip() for line in info if line.startswith(field)), None)
    except OSError:
        return None


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux, else what `platform` knows)."""
    name = cpuinfo("model name")
    return name if name is not None else platform.processor() or platform.machine()


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags ("avx2", "avx512f", ...) from /proc/cpuinfo on Linux; empty elsewhere."""
    return frozenset((cpuinfo("flags") or "").split())


AVX2_KERNELS = frozenset({"Haswell", "Zen"})  # OpenBLAS's AVX2 kernel families


def kernel_note() -> str | None:
    """A warning when OpenBLAS runs AVX2 kernels on a CPU that has AVX-512, else None.

    The products of a few rows, most of a batched call's work, depend on the kernels more than on
    anything else: on the course's 2-core AMD EPYC (Zen 5), the GPT layer's four float32 products of 8
    rows took 2.8x as long with OpenBLAS's Haswell (AVX2) kernels as with its SkylakeX (AVX-512) ones
    (benchmarks/README.md, "Which kernels OpenBLAS runs"). OpenBLAS picks them from the CPU when numpy
    loads it, unless the environment variable OPENBLAS_CORETYPE names them; an OpenBLAS older than the
    CPU falls back on what it knows and can land on older kernels (OpenMathLib/OpenBLAS#6029, Zen 5).
    """
    kernels = blas_kernels()
    if "avx512f" not in cpu_flags() or not kernels or not kernels <= AVX2_KERNELS:
        return None
    forced = os.environ.get("OPENBLAS_CORETYPE")
    why = f"OPENBLAS_CORETYPE={forced} in the environment makes OpenBLAS run" if forced else "OpenBLAS chose"
    fix = "start Python without it" if forced else "start Python with OPENBLAS_CORETYPE=SkylakeX"
    return (
        f"note: {why} its {'/'.join(sorted(kernels))} (AVX2) kernels on this CPU, which has AVX-512;"
        f" a batch's small products usually run faster on the AVX-512 ones: {fix}"
    )


def blas_kernels() -> frozenset[str]:
    """The kernel families of the BLAS libraries numpy loaded ("Haswell", "SkylakeX", ...); empty if unknown."""
    try:
        from threadpoolctl import threadpool_info  # optional, as above
    except ImportError:
        return frozenset()
    return frozenset(
        str(i["architecture"]) for i in threadpool_info() if i["user_api"] == "blas" and i.get("architecture")
    )


def describe_machine() -> str:
    """The CPU and numpy's BLAS (library, version, kernel): what every timing in the course depends on."""
    cpu = cpu_name()
    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(
            f"{i['internal_api']} {i.get('version') or ''} ({i.get('architecture') or 'unknown'} kernels)"
            for i in threadpool_info()
            if i["user_api"] == "blas"
        )
    except ImportError:
        blas = "BLAS unknown (install threadpoolctl to see it)"
    return f"{cpu}, {os.cpu_count()} logical CPUs; numpy {np.__version__}, {blas or 'no BLAS found'}"
