"""Every relative link in the course's documents opens a file of the repository, and every launch
command serves the repository root (so that `../solutions/...` and `../docs/...` links from a
notebook resolve in JupyterLab, not only on GitHub)."""

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from helpers import markdown_cells

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {"build", "dist", "node_modules", "__pycache__"}  # plus every hidden folder and *.egg-info
LAUNCH_DOCUMENTS = ["README.md", "docs/instructors.md", "notebooks/00_welcome.ipynb"]
SERVES_THE_ROOT = "--ServerApp.root_dir=."

FENCED_CODE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.MULTILINE)
HTML_ATTRIBUTE = re.compile(r"""<[a-zA-Z][^>]*?\s(?:href|src)\s*=\s*(["'])(.*?)\1""", re.DOTALL)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def documents() -> list[Path]:
    """Markdown files and notebooks of the repository (not in hidden folders, virtual environments, builds)."""
    found = []
    for path in sorted(ROOT.rglob("*")):
        parts = path.relative_to(ROOT).parts
        if any(p.startswith(".") or p in SKIPPED_DIRS or p.endswith(".egg-info") for p in parts[:-1]):
            continue
        if path.is_file() and path.suffix in {".md", ".ipynb"}:
            found.append(path)
    return found


def markdown_texts(path: Path) -> list[str]:
    """The markdown of a document: the whole file, or each markdown cell of a notebook."""
    return markdown_cells(path) if path.suffix == ".ipynb" else [path.read_text(encoding="utf-8")]


def link_targets(markdown: str) -> list[str]:
    """Link and image targets in markdown prose (inline, reference-style, HTML), code left out."""
    prose = INLINE_CODE.sub("", FENCED_CODE.sub("", markdown))
    targets = [m.group(1) for m in INLINE_LINK.finditer(prose)]
    targets += [m.group(1) for m in REFERENCE_DEFINITION.finditer(prose)]
    targets += [m.group(2) for m in HTML_ATTRIBUTE.finditer(prose)]
    return [t[1:-1] if t.startswith("<") and t.endswith(">") else t for t in targets]


def broken_reason(document: Path, target: str) -> str | None:
    """Why a link target does not open a file of the repository, or None if it does (or is not relative)."""
    if not target or target.startswith("#") or SCHEME.match(target) or target.startswith("//"):
        return None  # an anchor in the same document, or a URL with a scheme (https:, mailto:, ...)
    if target.startswith("/"):
        return "an absolute path: use a path relative to the document"
    relative = unquote(target.split("#", 1)[0].split("?", 1)[0])
    resolved = (document.parent / relative).resolve()
    if not resolved.is_relative_to(ROOT):
        return "points outside the repository"
    if not resolved.exists():
        return f"{resolved.relative_to(ROOT).as_posix()} does not exist"
    return None


def test_the_documents_are_found():
    names = {path.relative_to(ROOT).as_posix() for path in documents()}
    assert {"README.md", "docs/instructors.md", "notebooks/00_welcome.ipynb"} <= names


def test_the_link_extraction_finds_every_form_and_ignores_code():
    markdown = (
        "[a](one.md) ![b](img/two.png) [c](<three with space.md>) [d][ref] <a href='four.md'>x</a>\n"
        '<img src="five.png"> [e](six.md "title") [f](seven.md#part)\n\n[ref]: eight.md\n'
        "`[not](code.md)`\n```\n[not](fenced.md)\n```\n"
    )
    assert link_targets(markdown) == [
        "one.md",
        "img/two.png",
        "three with space.md",
        "six.md",
        "seven.md#part",
        "eight.md",
        "four.md",
        "five.png",
    ]


def test_a_broken_link_is_reported():
    readme = ROOT / "README.md"
    assert broken_reason(readme, "docs/instructors.md") is None
    assert broken_reason(readme, "docs/instructors.md#before-the-day") is None
    assert broken_reason(readme, "https://example.org/missing") is None
    assert broken_reason(readme, "docs/no-such-guide.md") == "docs/no-such-guide.md does not exist"
    assert broken_reason(readme, "../elsewhere.md") == "points outside the repository"
    assert broken_reason(readme, "/docs/instructors.md").startswith("an absolute path")


@pytest.mark.parametrize("document", documents(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_relative_link_opens_a_file_of_the_repository(document):
    broken = []
    for markdown in markdown_texts(document):
        for target in link_targets(markdown):
            reason = broken_reason(document, target)
            if reason:
                broken.append(f"  ({target}): {reason}")
    assert not broken, f"broken links in {document.relative_to(ROOT).as_posix()}:\n" + "\n".join(broken)


def launch_commands(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        text = "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"])
    return [line.strip() for line in text.splitlines() if re.search(r"\bjupyter[ -]lab\b", line)]


@pytest.mark.parametrize("name", LAUNCH_DOCUMENTS)
def test_the_launch_command_serves_the_repository_root(name):
    commands = launch_commands(ROOT / name)
    assert commands, f"{name} shows no `jupyter lab` command to open the course"
    for command in commands:
        assert SERVES_THE_ROOT in command, (
            f"{name}: `{command}` serves the notebook's folder, so links to ../solutions and ../docs 404 in"
            f" JupyterLab; add {SERVES_THE_ROOT} (serve the repository root) and open notebooks/00_welcome.ipynb"
        )
        assert "notebooks/00_welcome.ipynb" in command, f"{name}: `{command}` should open notebooks/00_welcome.ipynb"
