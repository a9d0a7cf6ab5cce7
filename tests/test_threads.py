"""The BLAS thread setting generation runs with (specdec/threads.py): set while generating, restored after."""

import threading

import numpy as np
import pytest
from test_speculative import DRAFT_LOGITS, TARGET_LOGITS
from threadpoolctl import threadpool_info, threadpool_limits

from specdec import SamplingParams, generate, speculative_generate
from specdec.exact import TableModel
from specdec.threads import describe_machine, generation_blas_threads, set_generation_blas_threads


def blas_threads_now() -> int:
    return min(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas")


class SpyModel(TableModel):
    """A table model that records the BLAS thread limit in force at every score call."""

    def __init__(self, logits, name):
        super().__init__(logits, name, max_context=64)
        self.seen: list[int] = []

    def score(self, tokens, state):
        self.seen.append(blas_threads_now())
        return super().score(tokens, state)


@pytest.fixture
def three_blas_threads():
    """Start every test from a known limit other than 1, with the library's default setting (both restored)."""
    with threadpool_limits(limits=3, user_api="blas"):
        try:
            yield
        finally:
            set_generation_blas_threads(1)


def test_by_default_generation_runs_with_one_blas_thread():
    assert generation_blas_threads() == 1


@pytest.mark.parametrize("how", ["generate", "speculative_generate"])
def test_generation_runs_with_one_blas_thread_and_restores_the_callers_setting(three_blas_threads, how):
    assert generation_blas_threads() == 1  # the library's default
    target, draft = SpyModel(TARGET_LOGITS, "target"), SpyModel(DRAFT_LOGITS, "draft")
    if how == "generate":
        generate(target, [0], 10, SamplingParams(1.0), np.random.default_rng(0))
    else:
        speculative_generate(target, draft, [0], 10, SamplingParams(1.0), 3, np.random.default_rng(0))
    assert set(target.seen) == {1} and set(draft.seen) <= {1}
    assert blas_threads_now() == 3


def test_concurrent_generations_leave_the_setting_as_they_found_it(three_blas_threads):
    target, draft = SpyModel(TARGET_LOGITS, "target"), SpyModel(DRAFT_LOGITS, "draft")
    errors = []

    def work(seed):
        try:
            for i in range(30):
                rng = np.random.default_rng([seed, i])
                speculative_generate(target, draft, [0], 20, SamplingParams(1.0), "auto", rng)
                generate(target, [0], 20, SamplingParams(1.0), rng)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    # What worker threads see depends on the BLAS build: OpenBLAS 0.3.31 keeps a limit the main thread
    # set (here 3) in force in other threads. What must hold everywhere: nothing is left changed.
    assert set(target.seen) <= {1, 3}
    assert blas_threads_now() == 3


def test_a_caller_can_choose_another_setting_or_none(three_blas_threads):
    target = SpyModel(TARGET_LOGITS, "target")
    try:
        set_generation_blas_threads(2)
        assert generation_blas_threads() == 2
        generate(target, [0], 5, SamplingParams(0.0))
        assert set(target.seen) == {2}
        set_generation_blas_threads(None)
        target.seen.clear()
        generate(target, [0], 5, SamplingParams(0.0))
        assert set(target.seen) == {3}
        with pytest.raises(ValueError, match="n must be an integer >= 1"):
            set_generation_blas_threads(0)
    finally:
        set_generation_blas_threads(1)  # the library's default
    assert blas_threads_now() == 3


def test_the_machine_is_named_with_its_blas_kernel():
    text = describe_machine()
    assert "logical CPUs" in text and "numpy" in text and "kernels" in text
