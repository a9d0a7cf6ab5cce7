"""Imported in a notebook's kernel after its last cell (see notebook_runs.py): move every explorer's controls.

Every `interact` callback is called with values spread over each control's range (one control at
a time, the others where the notebook left them, then all at their far end together). Every other
control with an observer is moved through its range, and every button with a click handler is
clicked. `interact` itself would catch a failing callback and print its traceback under the
widget, where no test sees it; here the callback is called directly, so the error is reported.

Each call has a deadline (`call_timeout_s`): a SIGALRM timer in the kernel's main thread interrupts a
call that outlasts it, and the call is reported as an error, with the line it was stuck on. A call
that a signal cannot interrupt (stuck in C with signals blocked, say) is left to the driver cell's own
deadline (tests/notebook_runs.py); so that the test can still name it, each call's name is written to
`progress_path` before it starts.
"""

import contextlib
import json
import signal
import threading
import traceback

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from ipywidgets.widgets import widget as widget_module

MARKER = "EXPLORER-REPORT "


def spread(control: widgets.Widget, count: int = 5) -> list:
    """Values over the control's whole range: both ends and points between (("index", i) for selections)."""
    if isinstance(control, widgets.FloatLogSlider):
        return [float(control.base**exponent) for exponent in np.linspace(control.min, control.max, count)]
    if isinstance(control, widgets.IntRangeSlider):
        return [(control.min, control.max), (control.min, control.min), (control.max, control.max)]
    if isinstance(control, widgets.IntSlider | widgets.BoundedIntText):
        return sorted({round(float(v)) for v in np.linspace(control.min, control.max, count)})
    if isinstance(control, widgets.FloatSlider | widgets.BoundedFloatText):
        return [float(v) for v in np.linspace(control.min, control.max, count)]
    if hasattr(control, "options") and hasattr(control, "index"):
        return [("index", i) for i in range(len(control.options))]
    if isinstance(control, widgets.Checkbox | widgets.ToggleButton):
        return [not control.value, control.value]
    if isinstance(control, widgets.IntText):
        return [control.value + 1, control.value + 10, control.value]
    if isinstance(control, widgets.Text | widgets.Textarea):
        return [control.value[: len(control.value) // 2], control.value]
    return []


def set_value(control: widgets.Widget, value) -> None:
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "index":
        control.index = value[1]
    else:
        control.value = value


def label(control: widgets.Widget) -> str:
    return f"{type(control).__name__}({getattr(control, 'description', '')!r})"


class CallTimedOut(Exception):
    """An explorer call outlasted its deadline."""


@contextlib.contextmanager
def deadline(seconds: float | None):
    """Raise CallTimedOut in the block once it runs past `seconds` (main thread only; None: no deadline).

    The alarm repeats every second after the deadline until the block ends: `interact`'s own call of
    the callback (when a control moves) catches and prints the first CallTimedOut, and the block must
    not go on unbounded after that.
    """
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return
    armed = True

    def expire(signum, frame):
        if armed:  # an alarm that lands as the block ends is dropped
            raise CallTimedOut(f"did not return within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def drive_explorers(call_timeout_s: float | None = None, progress_path: str | None = None) -> None:
    """Drive every live explorer; print one line, MARKER + {"errors": [...], "driven": [...]}.

    call_timeout_s: each call's deadline (None: none). progress_path: a file to which each call's name
    is appended before the call starts.
    """
    errors, driven = [], []
    progress = open(progress_path, "a", encoding="utf-8") if progress_path else None

    def attempt(name: str, action) -> None:
        if progress:
            progress.write(name + "\n")
            progress.flush()
        try:
            with deadline(call_timeout_s):
                action()
        except Exception:  # every failure is reported to the test, with its traceback
            errors.append(f"{name}: {traceback.format_exc(limit=-4)}")
        plt.close("all")

    instances = list(widget_module._instances.values())
    explorers = [w for w in instances if isinstance(w, widgets.interactive)]
    inside = {id(control) for explorer in explorers for control in explorer.kwargs_widgets}

    for explorer in explorers:
        name = getattr(explorer.f, "__name__", repr(explorer.f))
        controls = list(explorer.kwargs_widgets)

        def call(explorer=explorer):
            kwargs = {control._kwarg: control.get_interact_value() for control in explorer.kwargs_widgets}
            explorer.f(**kwargs)  # not inside `with explorer.out:`, which would swallow the error

        for control in controls:
            start = control.value
            for value in spread(control):

                def move(control=control, value=value, call=call):
                    set_value(control, value)
                    call()

                attempt(f"{name}: {label(control)} = {value!r}", move)
            attempt(f"{name}: {label(control)} back to {start!r}", lambda c=control, v=start: setattr(c, "value", v))
        for control in controls:
            values = spread(control)
            if values:
                attempt(f"{name}: {label(control)} = {values[-1]!r}", lambda c=control, v=values[-1]: set_value(c, v))
        attempt(f"{name}: every control at its far end", call)
        driven.append(f"{name}({', '.join(label(control) for control in controls)})")

    for control in instances:
        if id(control) in inside or isinstance(control, widgets.interactive):
            continue
        if isinstance(control, widgets.Button):
            if control._click_handlers.callbacks:
                for _ in range(3):
                    attempt(f"click {control.description!r}", control.click)
                driven.append(f"Button({control.description!r})")
            continue
        if not control._trait_notifiers.get("value", {}).get("change"):
            continue
        values = spread(control)
        for value in values:
            attempt(f"{label(control)} = {value!r}", lambda c=control, v=value: set_value(c, v))
        if values:
            driven.append(label(control))

    if progress:
        progress.close()
    print(MARKER + json.dumps({"errors": errors, "driven": driven}))
