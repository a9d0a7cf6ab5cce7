"""generation_threads() (specdec/threads.py) used nested and overlapping: the limit holds while any use is active.

The law: the BLAS limit is process-wide, so uses are counted; the first to start sets the limit (one thread
by default), the last to finish restores exactly what the caller had, and nothing in between changes it.
Every test starts from a caller's limit of 3 threads (not 1, not the machine's default), read back with
threadpoolctl's threadpool_info(), so that "restored" and "still limited" are two different numbers.
"""

import io
import os
import platform
import re
import threading
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from specdec import threads
from specdec.threads import (
    cpu_name,
    describe_machine,
    generation_blas_threads,
    generation_threads,
    set_generation_blas_threads,
)

CALLER = 3  # the caller's own limit in every test


def blas_threads_now() -> int:
    """The BLAS thread limit in force, as threadpoolctl reads it from the BLAS libraries numpy loaded."""
    return min(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas")


@pytest.fixture(autouse=True)
def callers_limit():
    """The caller's limit of 3, and the library's default (one thread while generating) restored after each test."""
    with threadpool_limits(limits=CALLER, user_api="blas"):
        assert blas_threads_now() == CALLER
        try:
            yield
        finally:
            set_generation_blas_threads(1)


def test_nested_uses_keep_one_thread_until_the_outer_one_ends():
    """Outer then inner: 1 thread inside both, still 1 after the inner ends, the caller's 3 after the outer ends."""
    with generation_threads():
        assert blas_threads_now() == 1
        with generation_threads():
            assert blas_threads_now() == 1
            with generation_threads():  # three deep
                assert blas_threads_now() == 1
            assert blas_threads_now() == 1
        assert blas_threads_now() == 1  # the outer use is still active
    assert blas_threads_now() == CALLER


def test_overlapping_uses_that_end_in_the_order_they_started():
    """A starts, B starts, A ends (B still active: 1 thread), B ends: the caller's 3 (not last in, first out)."""
    a, b = generation_threads(), generation_threads()
    a.__enter__()
    b.__enter__()
    try:
        assert blas_threads_now() == 1
    finally:
        a.__exit__(None, None, None)
    try:
        assert blas_threads_now() == 1
    finally:
        b.__exit__(None, None, None)
    assert blas_threads_now() == CALLER


def in_a_thread(steps) -> list:
    """Run `steps` (a function of two events: `inside`, set once it is in the block, and `leave`, awaited before
    leaving) in a worker thread; return the thread, its events and its errors."""
    inside, leave, errors = threading.Event(), threading.Event(), []

    def work():
        try:
            steps(inside, leave)
        except Exception as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            inside.set()  # never leave the main thread waiting

    thread = threading.Thread(target=work)
    thread.start()
    return thread, inside, leave, errors


def use_until_told(inside: threading.Event, leave: threading.Event) -> None:
    with generation_threads():
        inside.set()
        assert leave.wait(10)


def test_another_thread_that_uses_and_leaves_inside_ours_does_not_restore_early():
    """The main thread's use is active; a worker thread starts a use and ends it: still 1 thread, then 3 at our end.

    What a worker thread itself sees depends on the BLAS build (OpenBLAS 0.3.31 ignores a limit set in a
    worker thread), so the setting is read where it is portable: in the main thread, which set it.
    """
    with generation_threads():
        assert blas_threads_now() == 1
        thread, inside, leave, errors = in_a_thread(use_until_told)
        assert inside.wait(10)
        assert blas_threads_now() == 1
        leave.set()
        thread.join(10)
        assert not errors and not thread.is_alive()
        assert blas_threads_now() == 1  # our use is still active
    assert blas_threads_now() == CALLER


def test_a_use_that_started_in_another_thread_and_ended_first_leaves_the_count_at_zero():
    """Worker in, main in, worker out, main out: the caller's 3 at the end, and the next use limits to 1 again."""
    thread, inside, leave, errors = in_a_thread(use_until_told)
    assert inside.wait(10)
    try:
        with generation_threads():
            leave.set()
            thread.join(10)
            assert not errors and not thread.is_alive()
    finally:
        leave.set()
    assert blas_threads_now() == CALLER
    with generation_threads():  # a first use again: it sets the limit
        assert blas_threads_now() == 1
    assert blas_threads_now() == CALLER


def test_an_exception_inside_still_restores_and_the_next_use_limits_again():
    """An error in the block ends the use: 3 afterwards; the count is back to zero, so the next use limits to 1."""
    with pytest.raises(RuntimeError, match="boom"), generation_threads():
        raise RuntimeError("boom")
    assert blas_threads_now() == CALLER
    with generation_threads():
        assert blas_threads_now() == 1
    assert blas_threads_now() == CALLER


def test_many_sequential_and_nested_uses_never_drift():
    """Twenty rounds of one, two and three nested uses: 1 inside every time, exactly 3 after every round."""
    for depth in [1, 2, 3] * 7:
        with ExitStack() as stack:
            for _ in range(depth):
                stack.enter_context(generation_threads())
                assert blas_threads_now() == 1
        assert blas_threads_now() == CALLER


def test_the_first_use_sets_the_limit_later_ones_join_it():
    """The setting read when the first use starts holds until the last ends: a change in between is for later uses."""
    set_generation_blas_threads(2)
    with generation_threads():
        assert blas_threads_now() == 2
        set_generation_blas_threads(1)
        with generation_threads():  # joins the running limit of 2
            assert blas_threads_now() == 2
        assert blas_threads_now() == 2
    assert blas_threads_now() == CALLER
    with generation_threads():  # a new first use: the new setting
        assert blas_threads_now() == 1
    assert blas_threads_now() == CALLER


def test_with_no_setting_the_block_leaves_blas_alone_and_restores_nothing_stale():
    """set_generation_blas_threads(None): the caller's limit holds inside, even after the caller changed it.

    A limited use first (it remembered 3 to restore), then the caller moves to 4: a use with no setting
    must leave 4 alone, inside and after, rather than restore the 3 an earlier use remembered.
    """
    with generation_threads():
        assert blas_threads_now() == 1
    with threadpool_limits(limits=4, user_api="blas"):
        set_generation_blas_threads(None)
        with generation_threads():
            assert blas_threads_now() == 4
        assert blas_threads_now() == 4
    assert blas_threads_now() == CALLER


def test_with_no_setting_the_getter_says_none():
    """set_generation_blas_threads(None) means "leave BLAS alone", and generation_blas_threads() reports None."""
    set_generation_blas_threads(None)
    assert generation_blas_threads() is None
    set_generation_blas_threads(2)
    assert generation_blas_threads() == 2


# --- the machine's description -------------------------------------------------------------------------


def test_the_cpu_is_named_by_the_model_name_line_of_proc_cpuinfo():
    """On Linux: the text after "model name :" (not the numeric "model :" line that precedes it), read here by regex."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        pytest.skip("no /proc/cpuinfo on this machine")
    names = re.findall(r"^model name\s*:\s*(.*?)\s*$", text, flags=re.M)
    if not names:
        pytest.skip("/proc/cpuinfo names no model here")
    assert cpu_name() == names[0]


@pytest.mark.parametrize("cpuinfo", [None, "processor\t: 0\nBogoMIPS\t: 50.00\n"], ids=["no file", "no model name"])
def test_without_a_model_name_the_cpu_is_named_by_platform(monkeypatch, cpuinfo):
    """No /proc/cpuinfo (OSError), or one without a "model name" line (an ARM board): what platform knows."""

    def fake_open(path, *args, **kwargs):
        if cpuinfo is None:
            raise FileNotFoundError(path)
        return io.StringIO(cpuinfo)

    monkeypatch.setattr(threads, "open", fake_open, raising=False)  # the module's open, ahead of the builtin
    assert cpu_name() == (platform.processor() or platform.machine())


def test_the_machine_description_names_the_blas_library_version_and_kernel():
    """Each BLAS threadpoolctl finds is written "internal_api version (architecture kernels)": "openblas 0.3.31 ..."."""
    text = describe_machine()
    assert f"{os.cpu_count()} logical CPUs" in text and f"numpy {np.__version__}" in text
    for info in (info for info in threadpool_info() if info["user_api"] == "blas"):
        version, kernels = info.get("version") or "", info.get("architecture") or "unknown"
        assert f"{info['internal_api']} {version} ({kernels} kernels)" in text


@pytest.mark.parametrize(
    ("flags", "kernels", "warned"),
    [
        ({"avx2", "avx512f"}, {"Haswell"}, True),  # forced, or an OpenBLAS that did not know the CPU
        ({"avx2", "avx512f"}, {"Zen"}, True),
        ({"avx2", "avx512f"}, {"SkylakeX"}, False),  # AVX-512 kernels: nothing to say
        ({"avx2", "avx512f"}, {"Haswell", "SkylakeX"}, False),  # two BLAS libraries, one with AVX-512 kernels
        ({"avx2"}, {"Haswell"}, False),  # an AVX2 CPU: the right kernels
        ({"avx2", "avx512f"}, set(), False),  # kernels unknown (no threadpoolctl)
        (set(), {"Haswell"}, False),  # flags unknown (not Linux)
    ],
)
def test_a_note_warns_of_avx2_kernels_on_an_avx512_cpu(monkeypatch, flags, kernels, warned):
    monkeypatch.setattr(threads, "cpu_flags", lambda: frozenset(flags))
    monkeypatch.setattr(threads, "blas_kernels", lambda: frozenset(kernels))
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)  # OpenBLAS chose by itself
    note = threads.kernel_note()
    assert (note is not None) == warned
    if warned:
        assert "OpenBLAS chose its " + "/".join(sorted(kernels)) + " (AVX2) kernels" in note
        assert "AVX-512" in note and "OPENBLAS_CORETYPE=SkylakeX" in note
        monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")  # forced: the note names the variable, not a misdetection
        note = threads.kernel_note()
        assert "OPENBLAS_CORETYPE=Haswell in the environment" in note and "without it" in note


@pytest.mark.parametrize(
    ("cpuinfo", "flags"),
    [
        ("processor\t: 0\nmodel name\t: X\nflags\t\t: fpu avx2 avx512f\n", {"fpu", "avx2", "avx512f"}),
        ("processor\t: 0\nBogoMIPS\t: 50.00\n", set()),  # no flags line (an ARM board says "Features")
        (None, set()),  # no /proc/cpuinfo
    ],
    ids=["flags", "no flags line", "no file"],
)
def test_the_cpu_flags_are_read_from_proc_cpuinfo(monkeypatch, cpuinfo, flags):
    def fake_open(path, *args, **kwargs):
        if cpuinfo is None:
            raise FileNotFoundError(path)
        return io.StringIO(cpuinfo)

    monkeypatch.setattr(threads, "open", fake_open, raising=False)
    assert threads.cpu_flags() == frozenset(flags)
