"""Run a course notebook in a fresh kernel, whole or with its Going-further sections removed, then drive its explorers.

The course promises that a learner who skips every "Going further" section meets no error
(docs/authoring.md, "The core writes what it teaches"): `core_only` removes those sections exactly as
`tools/course_stats.py` counts them. Explorers are driven in the same kernel after the last cell:
every `interact` callback is called with values spread over each control's range (one control at
a time, the others at their defaults, then all at their last value), and every other control
that has an observer, or a button with a click handler, is moved or clicked, so a callback that
fails on a value a learner can choose fails the test (`interact` itself would swallow the error
and print a traceback under the widget).

    from notebook_runs import run_notebook
    report = run_notebook(path, core_only=True)   # {"errors": [...], "driven": [...]}
"""

import json
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import course_stats  # noqa: E402

CELL_TIMEOUT_S = 600
REPORT_MARKER = "EXPLORER-REPORT "
# The last cell: drive whatever explorers the notebook made (tests/explorer_driver.py), in its kernel.
DRIVER = "\n".join(
    [
        "import sys",
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})",
        "from explorer_driver import drive_explorers",
        "drive_explorers()",
    ]
)


def core_only(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of the notebook without its Going-further sections (as tools/course_stats.py delimits them)."""
    stripped = nbformat.from_dict(json.loads(json.dumps(notebook)))
    stripped.cells = [cell for cell, further in course_stats.split_sections(stripped.cells) if not further]
    return stripped


def run_notebook(path: Path, *, core_only_run: bool) -> dict:
    """Execute the notebook (whole, or its core alone) in a fresh kernel, then drive its explorers.

    Returns {"errors": [...], "driven": [...]}: a cell that raised (other than one tagged
    raises-exception) is the first error; explorer failures follow.
    """
    notebook = nbformat.read(path, as_version=4)
    if core_only_run:
        notebook = core_only(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    notebook.cells.append(nbformat.v4.new_code_cell(DRIVER))
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(path.parent)}},
    )
    try:
        client.execute()
    except CellExecutionError as error:
        return {"errors": [f"a cell raised: {str(error)[-3000:]}"], "driven": []}
    for output in notebook.cells[-1].outputs:
        text = output.get("text", "")
        for line in text.splitlines():
            if line.startswith(REPORT_MARKER):
                return json.loads(line[len(REPORT_MARKER) :])
    return {"errors": ["the explorer driver printed no report"], "driven": []}


def main() -> int:
    """python tests/notebook_runs.py NN [NN ...] [--core]: run notebooks (whole, or core alone) and drive explorers."""
    import argparse
    import re

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("numbers", nargs="+", help="notebook numbers, e.g. 01 09")
    parser.add_argument("--core", action="store_true", help="remove the Going-further sections first")
    args = parser.parse_args()
    failed = 0
    for number in args.numbers:
        (path,) = sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
        report = run_notebook(path, core_only_run=args.core)
        print(f"{path.name} ({'core alone' if args.core else 'whole'}): driven {report['driven']}")
        for error in report["errors"]:
            failed += 1
            print(re.sub(r"\x1b\[[0-9;]*m", "", error))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
