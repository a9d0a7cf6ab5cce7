"""The one-command demo, `python -m specdec`."""

import subprocess
import sys

from specdec.__main__ import main


def test_greedy_demo_prints_both_texts_identical_and_the_figures(capsys):
    assert main(["--temperature", "0", "--max-new-tokens", "30", "--repeats", "1", "--gamma", "3"]) == 0
    out = capsys.readouterr().out
    assert "greedy: the two texts are identical" in out
    for figure in ("tokens per target call", "speedup", "alpha ="):
        assert figure in out


def test_sampling_demo_runs_with_filters(capsys):
    assert main(["--max-new-tokens", "20", "--repeats", "1", "--top-k", "20", "--top-p", "0.9", "--seed", "3"]) == 0
    assert "their distribution is the same" in capsys.readouterr().out


def test_bad_arguments_get_a_clear_message_and_exit_code_2(capsys):
    assert main(["--top-p", "1.5", "--repeats", "1"]) == 2
    assert "top_p must be in (0, 1]" in capsys.readouterr().err
    assert main(["--max-new-tokens", "400", "--repeats", "1"]) == 2
    assert "max_context 256" in capsys.readouterr().err
    assert main(["--gamma", "0", "--repeats", "1"]) == 2
    assert "gamma must be an integer >= 1" in capsys.readouterr().err


def test_help_reads_well():
    result = subprocess.run([sys.executable, "-m", "specdec", "--help"], capture_output=True, text=True, check=True)
    assert "speculative decoding" in result.stdout and "--temperature" in result.stdout
