"""A chapter reads in order: each notebook's core writes what it teaches, and never uses what comes later.

The rule (docs/authoring.md, "The core writes what it teaches"): every public name a notebook's map row
says it builds is exported from a core cell, in plain sight; and a core cell uses from the package
only what its own core wrote before it, or what an earlier notebook wrote. A core that imports a
name its own notebook writes later, or only in a Going-further section, sends the learner to code
they were told they may skip. Checked statically, on the cells: imports (`from specdec... import`),
attributes (`specdec.name`, `specdec.module.name`) and plain names a core cell reads that the
notebook exports. (tests/test_core_and_explorers.py runs each core alone, with its Going-further
sections removed.) Reference answers come folded: an exported cell right under an exercise's
checker is hidden (`source_hidden`) or below a spoiler line.
"""

import ast
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import course_stats  # noqa: E402
import export  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

# What each notebook's core builds: the public names of its row of the course map (README, notebook
# 00, docs/authoring.md), each exported from a core cell of that notebook.
BUILDS = {
    "00": [],
    "01": ["softmax", "log_softmax"],
    "02": ["sample", "chi_square_test"],
    "03": ["kth_largest", "top_k_filter"],
    "04": ["top_p_filter"],
    "05": ["min_p_filter", "SamplingParams", "sampling_probs", "sample_token"],
    "06": ["CharTokenizer", "LanguageModel", "DecodingState", "NGramModel", "GPT", "generate"],
    "07": ["time_scoring", "cost_ratios", "expected_tokens", "predicted_speedup"],
    "08": ["propose", "verify_round", "SpeculativeResult", "speculative_generate"],
    "09": ["residual_distribution", "speculative_verify", "Rule", "round_law", "text_law", "target_law"],
    "10": ["acceptance_by_position", "side_by_side", "predict"],
    "11": ["block_weights", "block_verify", "BlockRule"],
    "12": ["score_batch", "generate_batch", "speculative_generate_batch"],
}


def parse(code: str) -> ast.Module | None:
    """The cell as Python, IPython magics blanked; None for a cell that does not parse."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.split("\n"))
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def defined_names(tree: ast.Module) -> set[str]:
    """The names a cell binds at its top level: functions, classes, assignments."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return names


def used_names(tree: ast.Module) -> set[str]:
    """What a cell takes from the package (imports, specdec.x, specdec.m.x) and every plain name it reads."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "specdec":
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "specdec":
            names.add(node.attr)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "specdec"
        ):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
    return names


def chapter(path: Path) -> list[dict]:
    """The code cells: index, core or not, exported or not, the names each defines and uses."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    out = []
    for index, (cell, further) in enumerate(course_stats.split_sections(cells)):
        if cell["cell_type"] != "code":
            continue
        text = course_stats.cell_source(cell)
        found = export.cell_directive(text, f"{path.name}, cell {index}")
        exported = found is not None and found[0] == "export"
        tree = parse(text)
        if tree is None:
            continue
        defines = defined_names(tree)
        out.append(
            {
                "index": index,
                "core": not further,
                "exported": exported,
                "defines": defines,
                "uses": used_names(tree) - defines,
            }
        )
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name[:2])
def test_the_core_exports_what_the_map_says_the_notebook_builds(path):
    cells = chapter(path)
    core_exports = {name for cell in cells if cell["core"] and cell["exported"] for name in cell["defines"]}
    missing = [name for name in BUILDS[path.name[:2]] if name not in core_exports]
    assert not missing, f"{path.name}: the core exports none of {missing} (written in Going further, or not at all)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name[:2])
def test_the_core_uses_only_what_its_core_wrote_before(path):
    cells = chapter(path)
    exported = {name for cell in cells if cell["exported"] for name in cell["defines"]}
    problems = []
    for cell in cells:
        if not cell["core"]:
            continue
        for name in sorted(cell["uses"] & exported):
            earlier = [c for c in cells if c["core"] and c["exported"] and name in c["defines"]]
            if not any(c["index"] < cell["index"] for c in earlier):
                where = "later in the core" if earlier else "only in Going further"
                problems.append(f"cell {cell['index']} uses {name}, which this notebook writes {where}")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("number", sorted(BUILDS))
def test_the_readme_map_names_what_each_core_builds(number):
    """The course map's "You build" column (README) names every public name of BUILDS, in backticks."""
    rows = [line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    row = next((line for line in rows if line.split("|")[1].strip() == number), None)
    assert row is not None, f"README's course map has no row {number}"
    you_build = row.rstrip().rstrip("|").split("|")[-1]
    missing = [name for name in BUILDS[number] if f"`{name}`" not in you_build]
    assert not missing, f"README's row {number} does not name {missing} in its 'You build' column: {you_build.strip()}"


EXERCISE_CHECK = re.compile(r"raise NotImplementedError[\s\S]*\bcheck_\w+\(")  # an exercise's stub and its checker


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name[:2])
def test_a_reference_answer_right_under_its_exercise_is_folded(path):
    """The exported cell right after an exercise (its stub and checker) is its reference: folded, not in plain view."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    plain_view = []
    for i, cell in enumerate(cells[:-1]):
        if cell["cell_type"] != "code" or not EXERCISE_CHECK.search(course_stats.cell_source(cell)):
            continue
        following = [c for c in cells[i + 1 : i + 3] if c["cell_type"] == "code"][:1]
        spoiler = any(
            "spoiler" in course_stats.cell_source(c).lower()
            for c in cells[i + 1 : i + 3]
            if c["cell_type"] == "markdown"
        )
        for nxt in following:
            text = course_stats.cell_source(nxt)
            hidden = nxt.get("metadata", {}).get("jupyter", {}).get("source_hidden", False)
            if export.cell_directive(text, path.name) and not (hidden or spoiler):
                plain_view.append(text.split("\n")[1][:60])
    assert not plain_view, f"{path.name}: references in plain view under their exercise: {plain_view}"
