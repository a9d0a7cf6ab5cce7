"""The exporter that writes specdec modules from notebook cells (tools/export.py)."""

import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def exporter(tmp_path, monkeypatch):
    """tools/export.py pointed at a scratch repository with its own notebooks/ and specdec/."""
    spec = importlib.util.spec_from_file_location("export_under_test", ROOT / "tools" / "export.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "specdec").mkdir()
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "NOTEBOOKS", tmp_path / "notebooks")
    monkeypatch.setattr(module, "PACKAGE", tmp_path / "specdec")
    return module


def write_notebook(path: Path, *sources: str) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    notebook.cells.insert(1, nbformat.v4.new_markdown_cell("#| export\nprose is never exported"))
    nbformat.write(notebook, path)


def run(exporter, monkeypatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["export.py", *args])
    return exporter.main()


def test_export_writes_marked_cells_in_order_and_check_detects_drift(exporter, monkeypatch, capsys, tmp_path):
    write_notebook(
        tmp_path / "notebooks" / "01_demo.ipynb",
        "#| default_exp demo",
        "#| export\nimport math",
        "print('not exported')",
        "#| export\ndef area(r):\n    return math.pi * r * r",
        "#| export extra\nVALUE = 1",
    )
    assert run(exporter, monkeypatch, "--check") == 1  # nothing written yet
    assert run(exporter, monkeypatch) == 0
    demo = (tmp_path / "specdec" / "demo.py").read_text()
    assert demo == (
        "# Generated from notebooks/01_demo.ipynb by tools/export.py: edit the notebook, not this file.\n"
        "import math\n\n\ndef area(r):\n    return math.pi * r * r\n"
    )
    assert (tmp_path / "specdec" / "extra.py").read_text().endswith("VALUE = 1\n")
    assert run(exporter, monkeypatch, "--check") == 0
    (tmp_path / "specdec" / "demo.py").write_text(demo.replace("math.pi", "3.14"))  # someone edits the module
    capsys.readouterr()
    assert run(exporter, monkeypatch, "--check") == 1
    assert "-    return 3.14 * r * r" in capsys.readouterr().out


def test_a_module_no_notebook_exports_is_reported_as_stale(exporter, monkeypatch, tmp_path):
    (tmp_path / "specdec" / "old.py").write_text("# Generated from notebooks/09_gone.ipynb by tools/export.py\n")
    (tmp_path / "specdec" / "handwritten.py").write_text("VALUE = 2\n")
    assert run(exporter, monkeypatch, "--check") == 1
    assert run(exporter, monkeypatch) == 0
    assert not (tmp_path / "specdec" / "old.py").exists()
    assert (tmp_path / "specdec" / "handwritten.py").exists()


def test_export_without_a_module_name_is_an_error(exporter, monkeypatch, tmp_path):
    write_notebook(tmp_path / "notebooks" / "02_bad.ipynb", "x = 1", "#| export\ny = 2")
    with pytest.raises(SystemExit, match="before any '#| default_exp"):
        run(exporter, monkeypatch)


@pytest.mark.parametrize("spelling", ["#| export", "#|export", "# | export", "# |export", "#|  export  ", " #| export"])
def test_every_spelling_of_the_export_directive_nbdev_accepts_is_exported(exporter, monkeypatch, tmp_path, spelling):
    write_notebook(tmp_path / "notebooks" / "01_demo.ipynb", "#|default_exp demo", f"{spelling}\nVALUE = 3")
    assert run(exporter, monkeypatch) == 0
    assert (tmp_path / "specdec" / "demo.py").read_text().endswith("VALUE = 3\n")


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("#| exprot\nVALUE = 3", "unknown directive '#| exprot'"),
        ("#| export demo extra\nVALUE = 3", "takes at most one module name"),
        ("# a comment first\n#| export\nVALUE = 3", "must be the first line"),
        ("#| export\n#| export other\nVALUE = 3", "and the only one"),
    ],
)
def test_unknown_or_misplaced_directives_are_refused_loudly(exporter, monkeypatch, tmp_path, cell, message):
    write_notebook(tmp_path / "notebooks" / "01_demo.ipynb", "#| default_exp demo", cell)
    with pytest.raises(SystemExit, match=message):
        run(exporter, monkeypatch)


def test_a_directive_mentioned_in_prose_or_a_later_comment_is_not_one(exporter, monkeypatch, tmp_path):
    write_notebook(
        tmp_path / "notebooks" / "01_demo.ipynb",
        "#| default_exp demo\n# cells that start with `#| export` go to specdec/demo.py",
        "x = 1  # not exported\n#| export",
        "#| export\nVALUE = 4",
    )
    assert run(exporter, monkeypatch) == 0
    assert (tmp_path / "specdec" / "demo.py").read_text().endswith("VALUE = 4\n")
