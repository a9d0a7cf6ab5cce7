"""Repository-level checks: the package agrees with the notebooks, the code is ruff-clean,
the notebooks are committed the way nbval needs them, and `import specdec` needs numpy only."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import markdown_cells

import specdec

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
APPENDICES = sorted((ROOT / "notebooks" / "appendices").glob("*.ipynb"))  # executed by CI's extras stage
ALLOWED_TAGS = {"nbval-ignore-output", "raises-exception"}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


def test_the_package_and_the_notebooks_agree():
    result = run(sys.executable, "tools/export.py", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("command", [("check",), ("format", "--check")], ids=["lint", "format"])
def test_ruff_is_clean(command):
    result = run(sys.executable, "-m", "ruff", *command, ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_specdec_needs_numpy_only():
    code = "import sys, specdec; print(sorted(m for m in ('matplotlib', 'ipywidgets', 'IPython') if m in sys.modules))"
    result = run(sys.executable, "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_public_api_of_the_sampling_half():
    expected = {
        "softmax",
        "log_softmax",
        "sample",
        "top_k_filter",
        "top_p_filter",
        "min_p_filter",
        "SamplingParams",
        "sampling_probs",
        "sample_token",
    }
    assert expected <= set(specdec.__all__)
    assert all(callable(getattr(specdec, name)) for name in expected)


def test_there_are_notebooks_00_to_12_and_two_appendices():
    assert [path.name[:2] for path in NOTEBOOKS] == [f"{n:02d}" for n in range(13)]
    assert [path.name[:2] for path in APPENDICES] == ["A_", "B_"]


@pytest.mark.parametrize("path", NOTEBOOKS + APPENDICES, ids=lambda path: path.name)
def test_notebook_is_committed_executed_and_shaped_like_a_chapter(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = notebook["cells"]
    code = [cell for cell in cells if cell["cell_type"] == "code" and "".join(cell["source"]).strip()]
    counts = [cell["execution_count"] for cell in code]
    assert None not in counts, "every code cell must be executed (nbval compares stored outputs)"
    assert counts == list(range(1, len(code) + 1)), "execute from a fresh kernel, top to bottom"
    markdown = "\n".join(markdown_cells(path))
    for heading in ("Learning objectives", "Summary", "Further reading"):
        assert heading.lower() in markdown.lower(), f"missing a '{heading}' section"
    assert "minutes" in markdown.lower(), "state an estimated time"
    for cell in code:
        assert set(cell.get("metadata", {}).get("tags", [])) <= ALLOWED_TAGS
        for output in cell.get("outputs", []):
            assert "image/svg+xml" not in output.get("data", {}), "figures must be PNG (nbval compares SVG as text)"
            assert output.get("name") != "stderr", f"unexpected stderr output: {''.join(output.get('text', ''))[:200]}"


def test_the_readme_figure_is_notebook_09s_output():
    """docs/figures/exact_and_shortcuts.png is what notebook 09 printed (tools/readme_figure.py writes it)."""
    result = run(sys.executable, "tools/readme_figure.py", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
