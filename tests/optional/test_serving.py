"""Appendix B, speculative decoding as a service: exact retries, dask, the command line's checks.

Optional: needs prometheus_client, tenacity and dask[distributed] (requirements-extras.txt); CI
(.ci/run) runs it in the extras environment:

    .venv-extras/bin/python -m pytest tests/optional/test_serving.py

All network traffic goes to 127.0.0.1 (a server on a free port, a LocalCluster), bounded in count.
"""

import numpy as np
import pytest

import specdec
from specdec.serving.faults import BrokenModel, FlakyModel, TransientError
from specdec.serving.lawcheck import TableModel, law_test
from specdec.serving.loadtest import histogram_quantile
from specdec.serving.retry import RetryingModel, RetryPolicy, TargetUnavailable, redrawing_speculative_generate

TARGET, DRAFT, TOKENIZER = specdec.load_model("target"), specdec.load_model("draft"), specdec.load_tokenizer()
PROMPT = TOKENIZER.encode("def __init__(self")
NO_SLEEP = RetryPolicy(attempts=12, initial=0.0, maximum=0.0, jitter=0.0, deadline=60.0)

# Tiny Markov-chain models whose law is known exactly (V = 3), with a draft far from the target.
TABLE_TARGET = TableModel([[2.0, 0.5, 0.0], [0.0, 1.5, 1.0], [1.0, 0.0, 2.0]], "table target")
TABLE_DRAFT = TableModel([[0.5, 0.5, 0.5], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], "table draft")


def fails_when_last_draft_is_0(tokens) -> float:
    """A failure whose chance depends on the drafted tokens (the last token scored is the last draft)."""
    return 0.6 if tokens[-1] == 0 else 0.0


# --- retries that keep the output exact -----------------------------------------------------------


@pytest.mark.parametrize(
    ("temperature", "failure_rate", "mid_forward"),
    [(1.0, 0.3, 1.0), (1.0, 0.1, 0.5), (1.0, 0.3, 0.5), (0.0, 0.3, 0.5)],
    ids=["T=1-30%-all-mid-forward", "T=1-10%", "T=1-30%", "greedy-30%"],
)
def test_fault_injected_run_equals_the_clean_run_token_for_token(temperature, failure_rate, mid_forward):
    """Several seeds, failure rates up to 30%, failures after part of the cache was written."""
    params = specdec.SamplingParams(temperature=temperature, top_k=40, top_p=0.95)
    for seed in range(3):
        clean = specdec.speculative_generate(TARGET, DRAFT, PROMPT, 64, params, 4, np.random.default_rng(seed))
        flaky = FlakyModel(TARGET, failure_rate, np.random.default_rng([seed, 99]), mid_forward=mid_forward)
        retrying = RetryingModel(flaky, NO_SLEEP, np.random.default_rng(0), sleep=lambda seconds: None)
        faulty = specdec.speculative_generate(retrying, DRAFT, PROMPT, 64, params, 4, np.random.default_rng(seed))
        assert flaky.failures > 0 and flaky.partial_writes > 0, "the fault injection must actually fail mid-forward"
        assert retrying.retries == flaky.failures
        np.testing.assert_array_equal(faulty.tokens, clean.tokens)
        assert (faulty.target_calls, faulty.accepted, faulty.drafted) == (
            clean.target_calls,
            clean.accepted,
            clean.drafted,
        )


def test_backoff_is_exponential_with_jitter_bounded_and_the_error_is_clear():
    sleeps = []
    policy = RetryPolicy(attempts=5, initial=0.01, maximum=0.03, jitter=0.002, deadline=60.0)
    down = FlakyModel(TARGET, 1.0, np.random.default_rng(0), mid_forward=1.0)  # writes part of the cache, then fails
    retrying = RetryingModel(down, policy, np.random.default_rng(0), sleep=sleeps.append)
    state = TARGET.start()
    TARGET.score(PROMPT, state)
    with pytest.raises(TargetUnavailable, match=r"failed 5 time\(s\) in a row.*Last error: .*transient failure"):
        retrying.score([5, 6, 7], state)
    assert down.calls == 5 and down.partial_writes == 5 and retrying.retries == 4
    assert state.length == len(PROMPT), "after giving up, the state is as the failed call found it"
    backoff = np.array([0.01, 0.02, 0.03, 0.03])  # doubling, capped at `maximum`
    assert np.all(np.array(sleeps) >= backoff) and np.all(np.array(sleeps) < backoff + 0.002)
    assert len(set(np.array(sleeps) - backoff)) == 4, "jitter: the waits are not the bare schedule"


def test_the_deadline_stops_retrying_before_the_attempts_run_out():
    policy = RetryPolicy(attempts=1000, initial=0.02, maximum=0.02, jitter=0.0, deadline=0.1)
    broken = BrokenModel(TARGET, TransientError("injected"))
    with pytest.raises(TargetUnavailable):
        RetryingModel(broken, policy).score(PROMPT, TARGET.start())
    assert 2 <= broken.calls <= 7


def test_non_transient_errors_are_not_retried():
    broken = BrokenModel(TARGET, KeyError("a bug, not a hiccup"))
    retrying = RetryingModel(broken, NO_SLEEP)
    with pytest.raises(KeyError, match="a bug"):
        specdec.speculative_generate(retrying, DRAFT, PROMPT, 10, rng=np.random.default_rng(0))
    assert broken.calls == 1 and retrying.retries == 0


def test_the_exact_retry_keeps_the_law_and_the_redrawing_retry_does_not():
    """Chi-square against the exact law of 3 tokens (27 outcomes); failures depend on the last draft."""
    n, params = 4000, specdec.SamplingParams()
    rng = np.random.default_rng(20)
    flaky = FlakyModel(TABLE_TARGET, fails_when_last_draft_is_0, np.random.default_rng(21), mid_forward=0.5)
    patient = RetryPolicy(attempts=60, initial=0.0, maximum=0.0, jitter=0.0, deadline=60.0)  # 0.6**60: never gives up
    exact = RetryingModel(flaky, patient, np.random.default_rng(0), sleep=lambda seconds: None)
    kept, _, _ = law_test(
        lambda: specdec.speculative_generate(exact, TABLE_DRAFT, [1], 3, params, 2, rng).tokens, TABLE_TARGET, 1, 3, n
    )
    assert flaky.failures > n / 10, "failures must be frequent for the control to mean anything"
    assert kept.p_value > 1e-3, kept
    flaky = FlakyModel(TABLE_TARGET, fails_when_last_draft_is_0, np.random.default_rng(21), mid_forward=0.5)
    redrawn, _, _ = law_test(
        lambda: redrawing_speculative_generate(flaky, TABLE_DRAFT, [1], 3, params, 2, rng).tokens, TABLE_TARGET, 1, 3, n
    )
    assert redrawn.p_value < 1e-9, redrawn


# --- the load test's arithmetic (the HTTP service: tests/optional/test_service_http.py) ---------------


def test_the_overhead_verdict_says_which_measurement_decides():
    from specdec.serving.bench import overhead_verdict

    quiet = overhead_verdict({"cpu_overhead": 0.02, "cpu_noise": -0.06}, {"overhead": 0.002})
    assert "inside the noise floor (±6.0%)" in quiet and "0.20% of a generation, within the 3% budget" in quiet
    busy = overhead_verdict({"cpu_overhead": 0.38, "cpu_noise": 0.1}, {"overhead": 0.002})
    assert "far from what the wrappers cost" in busy and "run the cell again" in busy
    costly = overhead_verdict({"cpu_overhead": 0.05, "cpu_noise": 0.01}, {"overhead": 0.04})
    assert "stands out of the noise floor" in costly and "over the 3% budget" in costly


def test_histogram_quantile_interpolates_like_prometheus():
    cumulative = [(0.1, 10.0), (0.2, 30.0), (0.5, 40.0), (float("inf"), 40.0)]
    assert histogram_quantile(0.25, cumulative) == pytest.approx(0.1)
    assert histogram_quantile(0.5, cumulative) == pytest.approx(0.15)
    assert histogram_quantile(1.0, cumulative) == pytest.approx(0.5)


# --- dask ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    from distributed import Client

    from specdec.serving.cluster import local_cluster, quiet_dask_logging

    quiet_dask_logging()
    with local_cluster(2) as cluster, Client(cluster) as dask_client:
        yield dask_client


def test_the_dask_run_equals_the_sequential_run(client):
    from specdec.serving.cluster import Job, generate_many, generate_sequential

    jobs = [
        Job("def __init__(self", 30, specdec.SamplingParams(temperature=t), gamma)
        for t, gamma in [(1.0, 4), (0.7, 2), (0.0, 5), (1.0, 3), (1.2, 4), (0.9, 6)]
    ]
    results = generate_many(client, jobs, root_seed=2024)
    workers = {record for record in client.run(lambda: 1)}
    assert len(workers) == 2
    assert [r["tokens"] for r in results] == [r["tokens"] for r in generate_sequential(jobs, root_seed=2024)]
    assert [r["tokens"] for r in results] != [r["tokens"] for r in generate_sequential(jobs, root_seed=2025)]


class NaNDraft:
    """A draft whose logits are NaN: generation fails after the target's state was started."""

    name, vocab_size, max_context = "nan draft", DRAFT.vocab_size, DRAFT.max_context

    def start(self):
        return DRAFT.start()

    def score(self, tokens, state):
        return DRAFT.score(tokens, state) * np.nan


def test_a_target_on_another_worker_gives_the_same_tokens(client):
    from specdec.serving.cluster import RemoteModel, TargetActor

    worker = sorted(client.scheduler_info()["workers"])[-1]
    actor = client.submit(TargetActor, actor=True, workers=[worker]).result()
    remote = RemoteModel(actor)
    params = specdec.SamplingParams(temperature=0.9)
    calls = 0
    for seed in range(2):
        local = specdec.speculative_generate(TARGET, DRAFT, PROMPT, 50, params, 4, np.random.default_rng(seed))
        with remote.closing():
            far = specdec.speculative_generate(remote, DRAFT, PROMPT, 50, params, 4, np.random.default_rng(seed))
        np.testing.assert_array_equal(far.tokens, local.tokens)
        calls += far.target_calls
    assert remote.calls == calls, "one round trip per round: rollbacks ride along with the next call"
    assert actor.where().result() == worker
    assert actor.open_states().result() == 0  # every run's KV cache freed
    with pytest.raises(ValueError, match="NaN"), remote.closing():  # an error inside: the state is freed all the same
        specdec.speculative_generate(remote, NaNDraft(), PROMPT, 50, params, 4, np.random.default_rng(0))
    assert actor.open_states().result() == 0
    remote.start()  # without closing(): the leak the context manager prevents
    assert actor.open_states().result() == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "70000"], "--port: must be a port number in [0, 65535], got '70000'"),
        (["--port", "-1"], "--port: must be a port number in [0, 65535]"),
        (["--attempts", "0"], "--attempts: must be a whole number in [1, 100], got '0'"),
        (["--fail-rate", "1.5"], "--fail-rate: must be a fraction in [0, 0.99], got '1.5'"),
        (["--fail-rate", "nan"], "--fail-rate: must be a fraction in [0, 0.99], got 'nan'"),
        (["--fail-rate", "1"], "--fail-rate: must be a fraction in [0, 0.99]"),
        (["--host", "localhost:80"], "--host: must be an IP address such as 127.0.0.1, got 'localhost:80'"),
        (["--timeout", "0"], "--timeout: must be a number of seconds in [0.1, 600], got '0'"),
        (["--timeout", "inf"], "--timeout: must be a number of seconds in [0.1, 600]"),
        (["--max-generations", "0"], "--max-generations: must be a whole number in [1, 256], got '0'"),
        (["--max-generations", "2.5"], "--max-generations: must be a whole number in [1, 256]"),
        (["--slow-ms", "-1"], "--slow-ms: must be a number of milliseconds in [0, 1000], got '-1'"),
        (["--batch-rows", "300"], "--batch-rows: must be a whole number in [0, 256], got '300'"),
        (["--batch-call", "fast"], "--batch-call: invalid choice: 'fast' (choose from"),
    ],
)
def test_the_serving_cli_refuses_bad_options_before_loading_any_model(monkeypatch, capsys, argv, message):
    from specdec.serving import __main__ as cli

    monkeypatch.setattr(cli.specdec, "load_model", lambda *args: pytest.fail("a model was loaded"))
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2  # argparse's usage error, no traceback
    assert message in capsys.readouterr().err
