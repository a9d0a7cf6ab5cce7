"""Each numbered notebook runs with its Going-further sections removed, and every explorer survives its controls.

The course tells learners that "Going further" sections can be skipped: so each notebook is run
in a fresh kernel with those sections removed (as tools/course_stats.py delimits them), and any
error fails the test. Then, in the same kernel, and again after a run of the whole notebook,
every explorer is driven through its controls' ranges (tests/explorer_driver.py): an explorer
that breaks when a learner moves a slider fails here, not only in front of a class.
Every wait on the kernel has a deadline (tests/notebook_runs.py), so a stuck cell or explorer call
fails the case with its name instead of holding the run; tests/test_notebook_runs.py checks them.
nbval (the README's test command) runs each notebook whole and compares its outputs.
"""

import re
from pathlib import Path

import pytest
from notebook_runs import run_notebook

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# The explorers each notebook has, as the driver names them (an `interact` callback "name(", or a
# control with an observer "Kind('description')"), so that a driver that finds nothing cannot pass.
EXPLORERS = {
    "00": [],
    "01": ["show_temperature("],
    "02": ["show_draws("],
    "03": ["explore_top_k("],
    "04": ["explore_top_p("],
    "05": ["explore("],
    "06": ["explore("],
    "07": ["explore("],
    "08": ["Dropdown('prompt')", "IntSlider('γ')", "IntSlider('round')", "Button('next ▶')"],
    "09": ["BoundedIntText('seed')", "IntSlider('round')"],
    "10": ["explore("],
    "11": ["explore_two_tokens("],
    "12": [],
}
SHOWN_ERRORS = 3


def failures(report: dict) -> str:
    errors = [ANSI.sub("", error) for error in report["errors"]]
    more = f"\n\n... and {len(errors) - SHOWN_ERRORS} more" if len(errors) > SHOWN_ERRORS else ""
    return "\n\n".join(errors[:SHOWN_ERRORS]) + more


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name[:2])
def test_the_core_runs_alone_and_its_explorers_survive_their_controls(path):
    report = run_notebook(path, core_only_run=True)
    assert not report["errors"], f"{path.name} without its Going-further sections:\n{failures(report)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name[:2])
def test_every_explorer_survives_its_controls_after_run_all(path):
    report = run_notebook(path, core_only_run=False)
    assert not report["errors"], f"{path.name}, run whole, then its explorers driven:\n{failures(report)}"
    missing = [name for name in EXPLORERS[path.name[:2]] if not any(d.startswith(name) for d in report["driven"])]
    assert not missing, f"{path.name}: explorers {missing} were not found among the driven ones: {report['driven']}"
