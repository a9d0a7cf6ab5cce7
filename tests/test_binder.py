"""Binder (repo2docker) set-up, the rules that need no network: the same Python as CI, the course's
pins plus a `notebook` that agrees with them, and Binder links only to the repository the project's
metadata names. The install itself is reproduced by tests/optional/test_binder_install.py (.ci/run)."""

import re
import tomllib
from pathlib import Path

from test_links import documents, link_targets, markdown_texts

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
BINDER_URL = re.compile(
    r"https://mybinder\.org/v2/gh/(?P<owner>[^/]+)/(?P<repo>[^/]+)/(?P<ref>[^?]+)\?urlpath=(?P<path>.+)"
)
GITHUB_URL = re.compile(r"https://github\.com/(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+?)(?:\.git)?/?")
TEMPLATE = "https://mybinder.org/v2/gh/OWNER/REPO/HEAD?urlpath="


def requirement_pins(path: Path) -> dict[str, str]:
    """name -> version of the `name==version` lines of a requirements file, following `-r` includes."""
    pins = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("-r "):
            pins |= requirement_pins((path.parent / line[3:].strip()).resolve())
        elif "==" in line:
            name, version = (part.strip() for part in line.split("==", 1))
            pins[re.sub(r"\[.*\]", "", name).lower().replace("_", "-")] = version
    return pins


def configured_repository() -> tuple[str, str] | None:
    """(owner, repo) of the GitHub repository named in pyproject's [project.urls], or None."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for url in project.get("urls", {}).values():
        match = GITHUB_URL.fullmatch(url)
        if match:
            return match["owner"], match["repo"]
    return None


def binder_links() -> list[tuple[str, str]]:
    """(document, URL) of every Binder link in the prose of the course's documents (code left out)."""
    links = []
    for document in documents():
        for markdown in markdown_texts(document):
            for target in link_targets(markdown):
                if "mybinder.org" in target:
                    links.append((document.relative_to(ROOT).as_posix(), target))
    return links


def test_binder_uses_the_python_version_ci_uses():
    runtime = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    ci = re.search(r"python-version:\s*\[?\s*[\"']?(\d+\.\d+)", WORKFLOW.read_text(encoding="utf-8"))
    assert ci, f"{WORKFLOW.relative_to(ROOT)} names no python-version"
    assert runtime == f"python-{ci.group(1)}", f"binder/runtime.txt says {runtime!r}, CI uses Python {ci.group(1)}"


def test_binder_installs_the_course_pins_and_the_package():
    lines = [line.split("#", 1)[0].strip() for line in (BINDER / "requirements.txt").read_text().splitlines()]
    assert "-r ../requirements.txt" in lines, "binder/requirements.txt should install the course's own pins"
    assert "-e ." in lines, "binder/requirements.txt should install specdec (-e .)"


def test_the_notebook_pin_agrees_with_the_jupyterlab_pin():
    pins = requirement_pins(BINDER / "requirements.txt")
    lab, notebook = pins.get("jupyterlab"), pins.get("notebook")
    assert lab, "the course pins no jupyterlab"
    assert notebook, (
        "pin notebook in binder/requirements.txt: repo2docker's base environment has notebook 7.4.7,"
        f" which requires jupyterlab<4.5, and the course pins jupyterlab {lab}"
    )
    # notebook 7.N is built on (and requires) jupyterlab 4.N.
    assert notebook.split(".")[:2] == ["7", lab.split(".")[1]], f"notebook {notebook} does not go with jupyterlab {lab}"


def test_the_readme_says_how_a_binder_url_is_formed():
    assert TEMPLATE in (ROOT / "README.md").read_text(encoding="utf-8")


def test_binder_links_point_at_the_configured_repository_only():
    repository = configured_repository()
    for document, url in binder_links():
        match = BINDER_URL.fullmatch(url)
        assert match, f"{document}: {url} is not of the form {TEMPLATE}..."
        named = (match["owner"], match["repo"])
        assert named == repository, (
            f"{document}: Binder link to {'/'.join(named)}, but pyproject.toml [project.urls] names"
            f" {'/'.join(repository) if repository else 'no GitHub repository'}: never link a made-up owner"
        )
        path = match["path"].removeprefix("lab/tree/")
        assert (ROOT / path).is_file(), f"{document}: {url} opens {path}, which does not exist"
    if repository:
        expected = f"https://mybinder.org/v2/gh/{'/'.join(repository)}/HEAD?urlpath=lab/tree/notebooks/00_welcome.ipynb"
        assert ("README.md", expected) in binder_links(), f"README.md should have the Binder badge {expected}"


def test_a_binder_link_to_another_repository_is_refused():
    assert BINDER_URL.fullmatch(TEMPLATE + "lab/tree/notebooks/00_welcome.ipynb")["owner"] == "OWNER"
    match = GITHUB_URL.fullmatch("https://github.com/someone/specdec.git")
    assert match.group("owner", "repo") == ("someone", "specdec")
    assert GITHUB_URL.fullmatch("https://example.org/someone/specdec") is None
