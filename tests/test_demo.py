"""The one-command demo, `python -m specdec`."""

import subprocess
import sys

import pytest

from specdec.__main__ import main, verdict


def test_greedy_demo_prints_both_texts_identical_and_the_figures(capsys):
    assert main(["--temperature", "0", "--max-new-tokens", "30", "--pairs", "5", "--gamma", "3"]) == 0
    out = capsys.readouterr().out
    assert "greedy: the two texts are identical" in out
    for figure in ("tokens per target call", "speed-up: measured", "predicted", "alpha =", "verdict:", "kernels"):
        assert figure in out
    assert out.index("tokens per target call") < out.index("speed-up: measured")  # counts first, then timings
    assert "cost model inputs, timed inside these runs: a plain step takes" in out


def test_the_prediction_uses_inputs_timed_inside_the_pairs(monkeypatch):
    """predicted_speedup charges the rounds the timed runs made with the inputs those runs measured."""
    import specdec.__main__ as demo

    seen = {}
    real = demo.turn_costs

    def spy(plain, fast):
        seen["runs"] = (len(plain), len(fast))
        return real(plain, fast)

    monkeypatch.setattr(demo, "turn_costs", spy)
    assert main(["--temperature", "0", "--max-new-tokens", "40", "--pairs", "5", "--gamma", "3"]) == 0
    assert seen["runs"] == (5, 5)  # the five interleaved pairs, not a separate timing


def test_too_short_a_run_gets_no_prediction_rather_than_nan(capsys):
    assert main(["--max-new-tokens", "1", "--pairs", "5"]) == 0
    out = capsys.readouterr().out
    assert "no prediction (generate more tokens)" in out and "nan" not in out


def test_sampling_demo_runs_with_filters_and_automatic_gamma(capsys):
    assert main(["--max-new-tokens", "20", "--pairs", "5", "--top-k", "20", "--top-p", "0.9", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "their distribution is the same" in out and "gamma = auto, token verification" in out


def test_block_verification_is_one_option_away(capsys):
    assert main(["--max-new-tokens", "24", "--pairs", "5", "--gamma", "4", "--verify", "block"]) == 0
    assert "gamma = 4, block verification" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--top-p", "1.5"], "--top-p must be in (0, 1], got 1.5"),
        (["--top-p", "nan"], "--top-p must be in (0, 1]"),
        (["--top-k", "0"], "--top-k must be a whole number >= 1"),
        (["--temperature", "-1"], "--temperature must be a finite number >= 0"),
        (["--max-new-tokens", "400"], "--max-new-tokens must be between 1 and 169 for this prompt"),
        (["--max-new-tokens", "0"], "--max-new-tokens must be between 1 and"),
        (["--gamma", "0"], '--gamma: must be "auto" or a whole number >= 1, got 0'),
        (["--gamma", "many"], "--gamma: must be \"auto\" or a whole number >= 1, got 'many'"),
        (["--pairs", "2"], "--pairs must be at least 5"),
        (["--prompt", ""], "--prompt must not be empty"),
        (["--verify", "tree"], "--verify: invalid choice: 'tree' (choose from"),
    ],
)
def test_bad_options_are_refused_in_the_command_lines_terms(capsys, argv, message):
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "top_p" not in err and "max_new_tokens" not in err  # the flags' names, not the function's


def test_the_verdict_says_when_the_machine_is_too_noisy_to_tell():
    assert verdict([1.5, 1.6, 1.7, 1.8, 1.9], 1.75).startswith("speculative decoding was faster in all 5 pairs")
    assert verdict([0.9, 1.4, 1.6, 1.7, 1.8], 1.75).startswith("too noisy to tell")
    assert verdict([0.5, 0.6, 0.7, 0.8, 0.9], 1.75).startswith("speculative decoding was slower in all 5 pairs")


def test_the_verdict_compares_the_median_with_the_prediction_in_words():
    assert verdict([1.2, 1.28, 1.3], 1.28).endswith("as the cost model predicted for this machine")  # not "0% below"
    assert verdict([1.2, 1.5, 1.6], 1.25).endswith("20% above the cost model's prediction for this machine")
    assert verdict([1.1, 1.2, 1.3], 1.5).endswith("20% below the cost model's prediction for this machine")


def test_the_verdict_without_a_prediction_says_so():
    assert verdict([1.2, 1.28, 1.3], None).endswith("with no prediction to compare")
    assert verdict([0.9, 1.4, 1.6], None).startswith("too noisy to tell")


def test_help_reads_well():
    result = subprocess.run([sys.executable, "-m", "specdec", "--help"], capture_output=True, text=True, check=True)
    assert "speculative decoding" in result.stdout and "--temperature" in result.stdout
    assert "None" not in result.stdout  # no "(default: None)"


def test_the_default_prompt_is_the_measured_choice_and_its_texts_parse():
    """tools/demo_prompt.py's choice: a candidate whose seed-0 texts, plain and speculative, parse as Python."""
    from pathlib import Path

    import specdec
    from specdec.__main__ import DEFAULT_PROMPT

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from demo_prompt import CANDIDATES, parses, seed_zero_parses

    assert DEFAULT_PROMPT in CANDIDATES.values()
    tokenizer, target, draft = specdec.load_tokenizer(), specdec.load_model("target"), specdec.load_model("draft")
    assert seed_zero_parses(target, draft, tokenizer, DEFAULT_PROMPT) == (True, True)
    assert not parses("def f(:\n")  # the check can fail
    assert parses("def f():\n") and parses("x = 1\nif x:\n    y = [")  # an open block, a cut last line: fine
    assert len(CANDIDATES) == 20  # as the README says


def test_a_faster_pair_never_prints_as_1_00x():
    # 1.004x rounds to "1.00x", which would read as "no faster" in a sentence that says faster
    assert "(1.004x to 1.09x)" in verdict([1.004, 1.05, 1.09], None)
    assert "from 0.996x to 1.20x" in verdict([0.996, 1.1, 1.2], None)
