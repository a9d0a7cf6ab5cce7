"""A JupyterLab server on the repository root and a headless Chromium driven by Playwright.

Needs requirements-extras.txt (playwright) and a Chromium on the machine: Debian's `chromium` package
(`apt-get install chromium`), or the executable named by the CHROMIUM environment variable.
Playwright's own browser download is not used. The server runs with a throw-away Jupyter
configuration (autosave off, so the committed notebooks are never rewritten; the test also checks
that), and its kernels and the server itself are stopped at the end, whatever happened.
"""

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent.parent
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"  # gitignored (tests/browser/.gitignore)
SERVER_START_TIMEOUT_S = 120
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SETTINGS = {  # JupyterLab user settings for the test server
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},  # every cell stays in the page
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


@dataclass
class Server:
    url: str
    token: str
    log: Path
    opened: set[Path] = field(default_factory=set)  # notebooks the tests opened; they must stay unchanged

    def api(self, method: str, path: str) -> object:
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def notebook_digests() -> dict[Path, bytes]:
    return {path: hashlib.sha256(path.read_bytes()).digest() for path in sorted(ROOT.glob("notebooks/**/*.ipynb"))}


def stop(process: subprocess.Popen, server: Server) -> None:
    """Shut the kernels down, then the server; kill what is left of its process group."""
    try:
        for kernel in server.api("GET", "/api/kernels"):
            server.api("DELETE", f"/api/kernels/{kernel['id']}")
        server.api("POST", "/api/shutdown")
    except (OSError, urllib.error.URLError):
        pass  # the server is gone already or does not answer: the signals below deal with it
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    try:
        os.killpg(process.pid, signal.SIGKILL)  # kernels that outlived the server, if any
    except ProcessLookupError:
        pass


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> Server:
    home = tmp_path_factory.mktemp("jupyter")
    for plugin, values in SETTINGS.items():
        path = home / "settings" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = free_port(), os.urandom(16).hex()
    env = os.environ | {
        "JUPYTER_TOKEN": token,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
    }
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--allow-root",  # CI runs as root
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={ROOT}",  # as the README's launch command: the repository root
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        f"--FileCheckpoints.checkpoint_dir={home / 'checkpoints'}",  # not .ipynb_checkpoints/ in the repository
        "--LabApp.expose_app_in_browser=True",  # lets the test read the notebook model
    ]
    before = notebook_digests()
    log = home / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    running = Server(f"http://127.0.0.1:{port}", token, log)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited with code {process.returncode}:\n{running.log_tail()}")
            try:
                running.api("GET", "/api/status")
                break
            except (OSError, urllib.error.URLError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer within {SERVER_START_TIMEOUT_S} s:\n{running.log_tail()}")
                time.sleep(0.5)
        yield running
    finally:
        stop(process, running)
        after = notebook_digests()
        changed = sorted(path.relative_to(ROOT).as_posix() for path in running.opened if before[path] != after[path])
        assert not changed, f"the browser session rewrote committed notebooks: {changed}"


def chromium_executable() -> str:
    executable = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not executable:
        pytest.fail("no Chromium found: install Debian's `chromium` package, or set CHROMIUM to a Chromium binary")
    return executable


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_executable(), headless=True, args=CHROMIUM_ARGS, timeout=60_000
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser, server):
    """A fresh browser tab; afterwards the tab is closed and the test's kernels are shut down."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    opened = context.new_page()
    opened.set_default_timeout(60_000)
    SCREENSHOTS.mkdir(exist_ok=True)
    try:
        yield opened
    finally:
        context.close()
        for kernel in server.api("GET", "/api/kernels"):
            server.api("DELETE", f"/api/kernels/{kernel['id']}")
