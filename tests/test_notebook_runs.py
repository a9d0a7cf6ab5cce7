"""The waits of tests/notebook_runs.py on a kernel end at their deadlines, with a message that says what was awaited.

Each test runs a tiny notebook, written to tmp_path, with a deadline of a few seconds passed to
run_notebook, and a cell or an explorer call that outlasts it. The last test is the lost wakeup that
once stalled tests/test_core_and_explorers.py (see "Lost wakeups" in notebook_runs.py).
"""

import asyncio
import time

import nbformat
from jupyter_core.utils import run_sync
from notebook_runs import RearmingKernelManager, run_notebook

SLEEP_S = 60  # what the stuck cell or call would take: each deadline below is far shorter


def write_notebook(tmp_path, *sources: str):
    cells = [nbformat.v4.new_markdown_cell("# A tiny notebook")]
    cells += [nbformat.v4.new_code_cell(source) for source in sources]
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_a_cell_past_its_deadline_fails_and_the_message_names_the_cell(tmp_path):
    path = write_notebook(tmp_path, "x = 1", f"import time\n\ntime.sleep({SLEEP_S})  # past the deadline", "y = 2")
    start = time.monotonic()
    report = run_notebook(path, core_only_run=False, cell_timeout_s=3)
    took = time.monotonic() - start
    assert report["errors"] == [
        "tiny.ipynb: cell 2 ('import time') did not finish within 3 s (no execute_reply); the kernel was stopped there"
    ]
    assert took < SLEEP_S / 2, f"the run took {took:.0f} s: the deadline did not stop it"


def test_an_explorer_call_past_its_deadline_fails_and_the_message_names_the_call(tmp_path):
    callback = "\n".join(
        [
            "import time",
            "from ipywidgets import interact",
            "",
            "def slow(x=0):",
            "    if x == 4:",
            f"        time.sleep({SLEEP_S})",
            "",
            "interact(slow, x=(0, 4));",
        ]
    )
    start = time.monotonic()
    report = run_notebook(write_notebook(tmp_path, callback), core_only_run=False, explorer_call_timeout_s=2)
    took = time.monotonic() - start
    assert report["driven"] == ["slow(IntSlider('x'))"]
    names = [error.split(":", 2)[:2] for error in report["errors"]]
    assert names == [["slow", " IntSlider('x') = 4"], ["slow", " every control at its far end"]], report["errors"]
    assert all("CallTimedOut: did not return within 2 s" in error for error in report["errors"]), report["errors"]
    assert all("time.sleep(60)" in error for error in report["errors"]), "the traceback shows where it was stuck"
    assert took < SLEEP_S, f"the run took {took:.0f} s: the deadline did not stop the calls"


def test_an_explorer_call_no_signal_can_stop_fails_at_the_cell_deadline_naming_the_call(tmp_path):
    callback = "\n".join(
        [
            "import signal",
            "import time",
            "from ipywidgets import interact",
            "",
            "def stuck(x=0):",
            "    if x == 4:",
            "        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # the call's deadline cannot stop it",
            f"        time.sleep({SLEEP_S})",
            "",
            "interact(stuck, x=(0, 4));",
        ]
    )
    start = time.monotonic()
    report = run_notebook(
        write_notebook(tmp_path, callback), core_only_run=False, cell_timeout_s=15, explorer_call_timeout_s=1
    )
    took = time.monotonic() - start
    assert report["errors"] == [
        "tiny.ipynb: the explorer driver (the cell run after the notebook's last) did not finish within 15 s"
        " (no execute_reply); the last explorer call it started: stuck: IntSlider('x') = 4; the kernel was stopped"
        " there"
    ]
    assert took < SLEEP_S, f"the run took {took:.0f} s: the deadline did not stop it"


def test_a_send_on_the_shell_does_not_strand_a_reply_already_waiting_to_be_read():
    """The stall once seen in test_core_and_explorers, made deterministic.

    While the client waits for an execute_reply, the reply arrives (the loop is blocked, so no one reads
    it yet) and then the client sends on the same socket, as nbclient's Output-widget stand-in does
    mid-cell. That blocking send consumes the reply's wakeup; with jupyter_client's own channels the wait
    then sleeps until its timeout (wait_s) with the reply in the socket. With notebook_runs' channels it
    ends at once.
    """
    wait_s = 30

    async def scenario() -> float:
        manager = RearmingKernelManager(kernel_name="python3")
        await manager.start_kernel()
        client = manager.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=60)
            msg_id = client.execute("import time\ntime.sleep(0.5)")
            reply = asyncio.ensure_future(client.shell_channel.get_msg(timeout=wait_s))
            await asyncio.sleep(0.05)  # the wait for the reply is registered
            time.sleep(2)  # the loop is blocked: the reply arrives and its wakeup waits on the socket's fd
            client.shell_channel.send(client.session.msg("comm_info_request", {}))
            start = time.monotonic()
            message = await reply
            took = time.monotonic() - start
            assert message["parent_header"]["msg_id"] == msg_id
            return took
        finally:
            client.stop_channels()
            await manager.shutdown_kernel(now=True)

    took = run_sync(scenario)()
    assert took < wait_s / 2, f"the waiting reply was read {took:.0f} s after the send (its timeout: {wait_s} s)"
