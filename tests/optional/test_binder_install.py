"""Reproduce Binder's install of the course and check that it is consistent.

repo2docker (2026.4) with our binder/ folder starts from its base environment, which already has
Jupyter installed, and runs `pip install -r binder/requirements.txt` from the repository root over
it. This test does the same in a fresh virtual environment: the base's Jupyter packages at their
versions, then binder/requirements.txt, then `pip check` must be clean and `import specdec` must
work. It installs from the package index, so it is not part of the README's test command; .ci/run
runs it (about two minutes).
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
REPO2DOCKER_BASE = [  # what repo2docker 2026.4's base environment already holds
    "jupyterlab==4.4.9",
    "notebook==7.4.7",
    "jupyter_server==2.17.0",
    "ipykernel==7.0.1",
    "ipywidgets==8.1.7",
]


def run(*command, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, check=False)


def ok(result: subprocess.CompletedProcess, what: str) -> str:
    output = result.stdout[-3000:] + result.stderr[-3000:]
    assert result.returncode == 0, f"{what} failed (exit {result.returncode}):\n{output}"
    return result.stdout


def test_binder_requirements_install_cleanly_over_repo2dockers_base(tmp_path):
    env = tmp_path / "binder-env"
    ok(run(sys.executable, "-m", "venv", env, cwd=tmp_path), "creating the virtual environment")
    python = env / "bin" / "python"
    ok(run(python, "-m", "pip", "install", "--quiet", *REPO2DOCKER_BASE, cwd=tmp_path), "installing the base")
    ok(run(python, "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt", cwd=ROOT), "binder/requirements")
    ok(run(python, "-m", "pip", "check", cwd=tmp_path), "pip check (Binder would run with these conflicts)")
    code = "import specdec, notebook, jupyterlab; print(specdec.__name__, notebook.__version__, jupyterlab.__version__)"
    imported = ok(run(python, "-c", code, cwd=tmp_path), "import specdec (from outside the repository)").split()
    pins = dict(
        line.split("==") for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines() if "==" in line
    )
    assert imported == ["specdec", pins["notebook"], imported[2]], f"installed: {imported}, pinned: {pins}"
