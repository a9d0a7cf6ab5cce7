"""The benchmark scripts run end to end (tiny settings) and print the machine beside their figures.

They are not timed tests: these only keep the scripts from rotting. bench_sampler.py needs torch and
is run by tests/optional/.
"""

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from specdec.harness import TurnCosts, calls_only

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
MACHINE = re.compile(r"machine: .+ logical CPUs; numpy \S+, .+ kernels\)")


def run(script: str, *args: str, returncode: int = 0) -> subprocess.CompletedProcess:
    """Run a benchmark script with this interpreter; check its exit status."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == returncode, done.stderr
    return done


def test_bench_forward_prints_the_kernel_and_f_of_n():
    out = run("bench_forward.py").stdout
    assert MACHINE.search(out)
    assert re.search(r"^f\(n\)\s+1\.00(\s+\d\.\d\d){3}$", out, re.MULTILINE)
    assert re.search(r"^the same as a stack of n gemv \(us\):( +\d+\.\d){9}$", out, re.MULTILINE)
    assert re.search(r"the package's linear stacks 2\.\.[07] rows here$", out, re.MULTILINE)


def test_bench_speculative_checks_the_targets_at_the_defaults():
    out = run("bench_speculative.py", "--gammas", "3", "auto", "--prompts", "2", "--repeats", "1").stdout
    assert MACHINE.search(out)
    assert "greedy outputs identical to plain decoding: True" in out
    assert re.search(r"^  T=1 +tokens per call \d\.\d\d \(target 3\.1: (met|MISSED)\)", out, re.MULTILINE)
    assert "Cost model inputs, measured inside each row's runs" in out
    assert re.search(r"^  T=1 +auto: unit \d+ µs, c \d\.\d{3}, prompt \d+\.\d;", out, re.MULTILINE)
    assert re.search(r"measured within 10% of predicted: \d+ of 8 rows", out)
    assert re.search(r"at gamma \S+: \d of 2 outputs loop \(repeated fraction > 0\.5; median \d\.\d\d\)", out)
    assert re.search(r"^ +without the \d of 2 outputs that loop: tokens per call (\d\.\d\d|nan)", out, re.MULTILINE)
    bound = r"^ +calls only: at most \d\.\d\dx \(gamma (3|auto), the best row; target (1\.75|2\.5)x: (within|OUT OF) "
    assert len(re.findall(bound, out, re.MULTILINE)) == 2  # greedy and T=1
    share = r"^ +at the defaults: \d+\.\d% of its own calls-only bound \(\d\.\d\dx; target 95%: (met|MISSED)\)$"
    assert len(re.findall(share, out, re.MULTILINE)) == 2
    assert "calls only meas/bound" in out  # every row prints its own bound and the share of it measured
    rows = re.findall(r"^(?:greedy|T=1) .* (\d+\.\d\d)x +(\d+\.\d)%$", out, re.MULTILINE)
    assert len(rows) == 4 and all(0 < float(share) <= 150 for _, share in rows), rows  # 2 settings x 2 gammas


def test_the_calls_only_bound_charges_the_first_rounds_the_drafts_and_the_bare_calls_of_whole_runs():
    # Two prompts, 23 new tokens each. Plain: 27 steps per run (unit 1 ms). Speculative, per run: a first
    # round of 5 tokens whose calls (the draft's turn, the target's call of the prompt and 4 drafts) took
    # 5.5 steps, then three rounds scoring 5 tokens (4 drafts at c = 0.1, bare call 1.6) and one scoring
    # 3 (2 drafts, 1.2): 2 x 5.5 + 6 x 2.0 + 2 x 1.4 = 25.8 steps for the 46 tokens plain decoding wrote
    # in 54: at most 54 / 25.8. The whole turn f (call + sampling + verification) and plain's first step
    # are not what it charges.
    costs = TurnCosts(1e-3, 0.1, {5: 2.4, 3: 1.9}, {5: 1.6, 3: 1.2}, prompt=5.0, rounds={5: 6, 3: 2}, first_calls=5.5)
    plain = [SimpleNamespace(seconds=0.027, tokens=np.zeros(23, dtype=np.int64)) for _ in range(2)]
    speculative = [SimpleNamespace(tokens=np.zeros(23, dtype=np.int64)) for _ in range(2)]
    row = SimpleNamespace(tokens=46, plain=plain, speculative=speculative, costs=costs)  # what calls_only reads
    assert calls_only(row) == pytest.approx(54 / 25.8)
    row.costs = dataclasses.replace(costs, f={5: 9.0, 3: 9.0}, prompt=50.0, rounds={5: 8})
    assert calls_only(row) == pytest.approx(54 / (11 + 8 * 2.0))
    # rounds of one token only (nothing drafted after the first rounds): c is NaN, and not needed
    row.costs = dataclasses.replace(costs, c=float("nan"), f_call={1: 1.1}, rounds={1: 10})
    assert calls_only(row) == pytest.approx(54 / (11 + 10 * 1.1))


def test_bench_speculative_runs_with_block_verification():
    out = run("bench_speculative.py", "--gammas", "3", "--prompts", "2", "--repeats", "1", "--verify", "block").stdout
    assert "block verification" in out and "greedy outputs identical to plain decoding: True" in out


def test_bench_block_prints_both_rules_side_by_side_for_every_setting_and_gamma():
    out = run("bench_block.py", "--gammas", "2", "auto", "--prompts", "2", "--max-new-tokens", "24").stdout
    assert MACHINE.search(out)
    assert "greedy: token and block verification both give plain greedy's text" in out
    for setting in ("T=1", "T=1, top-p 0.9", "T=0.7, top-k 20"):
        for gamma in ("2", "auto"):
            row = rf"^{re.escape(setting)} +{gamma} +\d\.\d{{3}} +\d\.\d{{3}} +\d\.\d{{3}} +\d+\.\d\dx +\d+\.\d\dx"
            assert re.search(row, out, re.MULTILINE), (setting, gamma)


def test_bench_auto_threshold_prints_a_row_per_threshold_and_gamma():
    out = run("bench_auto_threshold.py", "--thresholds", "0.15", "0", "--gammas", "4", "--prompts", "2").stdout
    assert MACHINE.search(out)
    for setting in ("greedy", "T=1"):
        for rule in ("auto, stop < 0.15", "auto, stop < 0", "gamma = 4"):
            assert re.search(rf"^{re.escape(setting)} +{re.escape(rule)} +\d\.\d\d +0\.\d{{3}}", out, re.MULTILINE)


def test_bench_auto_threshold_runs_with_block_verification():
    out = run("bench_auto_threshold.py", "--thresholds", "0.15", "--gammas", "4", "--prompts", "2", "--verify", "block")
    assert "block verification" in out.stdout
    assert re.search(r"^T=1 +auto, stop < 0\.15 +\d\.\d\d", out.stdout, re.MULTILINE)


@pytest.mark.parametrize("thresholds", [["1"], ["-0.1"]])
def test_bench_auto_threshold_refuses_thresholds_outside_0_1(thresholds):
    done = run("bench_auto_threshold.py", "--thresholds", *thresholds, returncode=2)
    assert "--thresholds must be in [0, 1)" in done.stderr


def test_bench_batch_prints_every_batch_size_the_prediction_and_the_crossover():
    out = run("bench_batch.py", "--batch-sizes", "1", "2", "--repeats", "1", "--max-new-tokens", "24").stdout
    assert "kernels" in out and "time_batch" in out
    for setting in ("T=1", "greedy"):
        assert f"\n{setting}\n" in out
    assert out.count("rows equal to one at a time: ") == 4 and out.count("crossover") == 2
    assert "target: batched plain decoding at B = 8" not in out  # only reported when B = 8 was measured


def test_bench_batch_refuses_a_run_longer_than_the_context():
    done = run("bench_batch.py", "--max-new-tokens", "250", returncode=2)
    assert "must fit the target's context" in done.stderr
