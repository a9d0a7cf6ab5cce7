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
    report = run_notebook(path, core_only_run=True)   # {"errors": [...], "driven": [...]}

Every wait on the kernel has a deadline, and a deadline that passes is an error in the report that
names what was awaited (the notebook, the cell's index in the file and its first line, or the
explorer call), never a hang:

    the kernel's start      STARTUP_TIMEOUT_S: its first kernel_info reply (jupyter_client's wait_for_ready)
    each cell               CELL_TIMEOUT_S: from the execute_request to its execute_reply (nbclient's timeout);
                            a reply first seen when that wait ran out fails too (see "Lost wakeups" below)
    each cell's output      IOPUB_TIMEOUT_S after the reply: the rest of its output, up to the kernel's
                            "idle" status (nbclient's iopub_timeout, raised instead of skipped)
    each explorer call      EXPLORER_CALL_TIMEOUT_S, inside the kernel (tests/explorer_driver.py); a call
                            that cannot be interrupted is caught by the driver cell's CELL_TIMEOUT_S, and
                            the report names the call it was in
    the kernel's shutdown   immediate: SIGKILL, then at most 5 s for the process to go (jupyter_client)

Each deadline is a keyword argument of run_notebook (the constants are the defaults).

Lost wakeups. jupyter_client's Session.send writes through a *blocking shadow* of the client's asyncio
socket. A blocking send makes libzmq process the socket's pending commands, and so consumes the wakeup
(the edge on the socket's ZMQ_FD) that announced a message which had just arrived: pyzmq's asyncio
layer never sees it, and a waiter already polling that socket sleeps on with the message sitting in
it, until its own timeout runs out (both processes idle in epoll). nbclient sends on the shell socket
*during* a cell: its stand-in for an Output widget (nbclient/output_widget.py) sends a comm_msg back
to the kernel for each output the widget captures, which every `interact` explorer does. When the
cell's execute_reply lands just before such a send, nbclient's wait for that reply (a single poll of
up to the cell's whole timeout) stalls: in `tests/test_core_and_explorers.py` it stalled at
notebook 05's `def explore(...)` cell, and the case went on, passing, only when the poll timed out
(CELL_TIMEOUT_S, then 600 s) and found the reply. `RearmingChannel` re-reads the socket's events
through the asyncio socket after each send, which makes pyzmq wake any waiter the send starved.
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
from traitlets import Type

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import course_stats  # noqa: E402

STARTUP_TIMEOUT_S = 120  # a fresh kernel's first kernel_info reply (about 2 s here)
CELL_TIMEOUT_S = 300  # one cell, execute_request to execute_reply (the slowest cell takes about 10 s)
IOPUB_TIMEOUT_S = 60  # after a cell's reply, the rest of its output and the kernel's "idle" status
EXPLORER_CALL_TIMEOUT_S = 60  # one explorer call in the driver (each takes well under a second)
REPORT_MARKER = "EXPLORER-REPORT "


class RearmingChannel(AsyncZMQSocketChannel):
    """A shell, control or stdin channel whose sends cannot strand a message that is waiting to be read.

    Session.send sends through a blocking shadow of the asyncio socket, which can consume the wakeup of
    a message that has just arrived (see "Lost wakeups" in the module docstring). Reading zmq.EVENTS
    through the asyncio socket makes pyzmq schedule its waiters for whatever is now readable.
    """

    def send(self, msg: dict) -> None:
        super().send(msg)
        if self.socket is not None and not self.socket.closed:
            self.socket.get(zmq.EVENTS)


class RearmingKernelClient(AsyncKernelClient):
    shell_channel_class = Type(RearmingChannel)
    control_channel_class = Type(RearmingChannel)
    stdin_channel_class = Type(RearmingChannel)


class RearmingKernelManager(AsyncKernelManager):
    """nbclient's kernel manager, handing out RearmingKernelClient."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.client_factory = RearmingKernelClient


def driver_source(explorer_call_timeout_s: float | None, progress_path: str) -> str:
    """The last cell: drive whatever explorers the notebook made (tests/explorer_driver.py), in its kernel."""
    return "\n".join(
        [
            "import sys",
            f"sys.path.insert(0, {str(ROOT / 'tests')!r})",
            "from explorer_driver import drive_explorers",
            f"drive_explorers(call_timeout_s={explorer_call_timeout_s!r}, progress_path={progress_path!r})",
        ]
    )


def core_only(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of the notebook without its Going-further sections (as tools/course_stats.py delimits them)."""
    stripped = nbformat.from_dict(json.loads(json.dumps(notebook)))
    stripped.cells = [cell for cell, further in course_stats.split_sections(stripped.cells) if not further]
    return stripped


class DeadlinePassed(Exception):
    """A wait on the kernel outlasted its deadline; the message says what was awaited."""


def first_line(cell: nbformat.NotebookNode) -> str:
    lines = [line for line in cell.source.splitlines() if line.strip()]
    return lines[0].strip()[:100] if lines else ""


def run_notebook(
    path: Path,
    *,
    core_only_run: bool,
    startup_timeout_s: int = STARTUP_TIMEOUT_S,
    cell_timeout_s: int = CELL_TIMEOUT_S,
    iopub_timeout_s: int = IOPUB_TIMEOUT_S,
    explorer_call_timeout_s: float | None = EXPLORER_CALL_TIMEOUT_S,
) -> dict:
    """Execute the notebook (whole, or its core alone) in a fresh kernel, then drive its explorers.

    Returns {"errors": [...], "driven": [...]}: a cell that raised (other than one tagged
    raises-exception), or a wait that passed its deadline, is the first error; explorer failures follow.
    """
    notebook = nbformat.read(path, as_version=4)
    # where each cell that runs sits in the file, for the messages (the core alone skips cells)
    in_file = list(range(len(notebook.cells)))
    if core_only_run:
        in_file = [i for i, (_, further) in enumerate(course_stats.split_sections(notebook.cells)) if not further]
        notebook = core_only(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    name = f"{path.name}{' (its core alone)' if core_only_run else ''}"
    handle, progress_path = tempfile.mkstemp(prefix="explorer-progress-", suffix=".txt")
    os.close(handle)
    notebook.cells.append(nbformat.v4.new_code_cell(driver_source(explorer_call_timeout_s, progress_path)))
    driver_index = len(notebook.cells) - 1

    def where(index: int | None) -> str:
        if index is None:
            return "the kernel's start"
        if index == driver_index:
            return "the explorer driver (the cell run after the notebook's last)"
        return f"cell {in_file[index]} ({first_line(notebook.cells[index])!r})"

    running = {"index": None, "started": 0.0}

    def cell_started(cell, cell_index, **_):
        running.update(index=cell_index, started=time.monotonic())

    def cell_replied(cell, cell_index, **_):
        took = time.monotonic() - running["started"]
        if took >= cell_timeout_s:  # the reply was only seen when nbclient's wait for it ran out
            raise DeadlinePassed(
                f"{name}: {where(cell_index)} took {took:.0f} s, its whole {cell_timeout_s} s deadline: its "
                "execute_reply was only seen when the wait for it timed out"
            )

    client = NotebookClient(
        notebook,
        timeout=cell_timeout_s,
        startup_timeout=startup_timeout_s,
        iopub_timeout=iopub_timeout_s,
        raise_on_iopub_timeout=True,
        kernel_name="python3",
        kernel_manager_class=RearmingKernelManager,
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_execute=cell_started,
        on_cell_executed=cell_replied,
    )

    async def execute() -> None:
        # nbclient's execute() without its extra kernel_info request, whose timeout fails on an assert
        async with client.async_setup_kernel():
            for index, cell in enumerate(notebook.cells):
                await client.async_execute_cell(cell, index, execution_count=client.code_cells_executed + 1)

    try:
        try:
            run_sync(execute)()
        except CellExecutionError as error:
            return {"errors": [f"{name}: a cell raised: {str(error)[-3000:]}"], "driven": []}
        except DeadlinePassed as error:
            return {"errors": [str(error)], "driven": []}
        except CellTimeoutError as error:
            index = running["index"]
            if "IOPub" in str(error):
                message = (
                    f"{name}: {where(index)} replied, but the rest of its output (up to the kernel's idle "
                    f"status) did not arrive within {iopub_timeout_s} s"
                )
            else:
                message = f"{name}: {where(index)} did not finish within {cell_timeout_s} s (no execute_reply)"
            if index == driver_index:
                calls = Path(progress_path).read_text(encoding="utf-8").splitlines()
                message += f"; the last explorer call it started: {calls[-1] if calls else 'none'}"
            return {"errors": [f"{message}; the kernel was stopped there"], "driven": []}
        except DeadKernelError:
            return {"errors": [f"{name}: the kernel died during {where(running['index'])}"], "driven": []}
        except RuntimeError as error:
            if running["index"] is not None:
                raise
            # jupyter_client's wait_for_ready: "Kernel didn't respond in N seconds", "Kernel died before ..."
            return {"errors": [f"{name}: the kernel did not start within {startup_timeout_s} s: {error}"], "driven": []}
    finally:
        Path(progress_path).unlink(missing_ok=True)
    for output in notebook.cells[-1].outputs:
        text = output.get("text", "")
        for line in text.splitlines():
            if line.startswith(REPORT_MARKER):
                return json.loads(line[len(REPORT_MARKER) :])
    return {"errors": [f"{name}: the explorer driver printed no report"], "driven": []}


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
