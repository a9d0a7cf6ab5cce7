"""The course as a learner meets it: JupyterLab in a real browser (see conftest.py for the set-up).

For notebooks 00, 05 and 09: clear the stored outputs, Run All, and check that no cell fails, that
every explorer renders as a live widget (not "Error displaying widget", not a text repr), and, in 05
and 09, that moving a slider changes what the explorer shows. In 00, the Solution link opens the
solution file. Screenshots go to tests/browser/screenshots/.

    .venv-extras/bin/python -m pytest tests/browser
"""

import time

import pytest
from conftest import ROOT, SCREENSHOTS, Server
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

RUN_ALL_TIMEOUT_S = 300
WIDGET_UPDATE_TIMEOUT_S = 60
RENDER_TIMEOUT_MS = 30_000  # the page renders outputs after the kernel is done: wait for them, within bounds
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# Read the open notebook from JupyterLab's own model (exposed by --LabApp.expose_app_in_browser).
NOTEBOOK_STATE = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const notebook = panel.content.model.toJSON();
    return {
        kernel: panel.sessionContext.session?.kernel?.status ?? "none",
        cells: notebook.cells.filter(c => c.cell_type === "code").map(c => ({
            count: c.execution_count ?? null,
            tags: (c.metadata && c.metadata.tags) || [],
            source: (Array.isArray(c.source) ? c.source.join("") : c.source).slice(0, 80),
            outputs: (c.outputs || []).map(o => ({
                type: o.output_type,
                name: o.name ?? null,
                error: o.output_type === "error" ? `${o.ename}: ${o.evalue}` : null,
                text: o.output_type === "stream" ? [].concat(o.text).join("").slice(0, 300) : null,
                mimes: Object.keys(o.data || {}),
            })),
        })),
    };
}"""


def open_notebook(page: Page, server: Server, name: str) -> None:
    """Open notebooks/<name>.ipynb as the only tab (a fresh workspace) and wait for an idle kernel."""
    server.opened.add(ROOT / "notebooks" / f"{name}.ipynb")
    page.goto(f"{server.url}/lab/tree/notebooks/{name}.ipynb?reset&token={server.token}")
    page.wait_for_function(
        "() => window.jupyterapp?.shell.currentWidget?.content?.model?.cells?.length > 0", timeout=120_000
    )
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
        timeout=120_000,
    )


def menu(page: Page, top: str, item: str) -> None:
    """Click a command in JupyterLab's menu bar, as a learner would."""
    page.locator(".lm-MenuBar-itemLabel", has_text=top).first.click()
    page.locator(".lm-Menu-itemLabel").get_by_text(item, exact=True).click()


def run_all(page: Page, name: str) -> dict:
    """Clear all outputs (so nothing stored can pass for a fresh result), Run All, wait until done."""
    menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.content.model.toJSON().cells"
        ".every(c => c.cell_type !== 'code' || c.execution_count == null)"
    )
    menu(page, "Run", "Run All Cells")
    deadline = time.monotonic() + RUN_ALL_TIMEOUT_S
    while True:
        state = page.evaluate(NOTEBOOK_STATE)
        done = all(cell["count"] is not None for cell in state["cells"] if cell["source"].strip())
        failed = any(output["type"] == "error" for cell in state["cells"] for output in cell["outputs"])
        if state["kernel"] == "idle" and (done or failed):
            return state
        if time.monotonic() > deadline:
            page.screenshot(path=SCREENSHOTS / f"{name}_timeout.png")
            pending = [cell["source"] for cell in state["cells"] if cell["count"] is None]
            pytest.fail(f"{name}: Run All unfinished after {RUN_ALL_TIMEOUT_S} s; kernel {state['kernel']}; {pending}")
        time.sleep(1)


def problems(state: dict) -> list[str]:
    """Error outputs and stderr, outside cells tagged raises-exception; cells Run All did not reach."""
    found = []
    for cell in state["cells"]:
        if "raises-exception" in cell["tags"]:
            continue
        for output in cell["outputs"]:
            if output["type"] == "error":
                found.append(f"{cell['source']!r}: {output['error']}")
            elif output["name"] == "stderr":
                found.append(f"{cell['source']!r}: stderr {output['text']!r}")
        if cell["count"] is None and cell["source"].strip():
            found.append(f"{cell['source']!r}: not executed")
    return found


def widget_views(page: Page) -> Locator:
    """Outputs that the widget manager rendered as live widgets (a text fallback is a jp-RenderedText)."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output:has(> .jupyter-widgets)")


def settled(read, previous, timeout_s: float):
    """Wait until read() differs from `previous` and then stops changing (for a second); return it."""
    deadline = time.monotonic() + timeout_s
    last = read()
    while time.monotonic() < deadline:
        time.sleep(1)
        now = read()
        if now != previous and now == last:
            return now
        last = now
    return last


def images(locator: Locator) -> list[str]:
    """The data of the images (the plots) shown in an element."""
    return locator.locator("img").evaluate_all("imgs => imgs.map(img => img.src)")


def drag_slider(page: Page, slider: Locator, fraction: float) -> None:
    """Drag a slider's handle by a fraction of the slider's width, with the mouse."""
    slider.scroll_into_view_if_needed()
    track = slider.locator(".noUi-target, .slider").first.bounding_box()
    handle = slider.locator(".noUi-handle").first.bounding_box()
    x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + fraction * track["width"], y, steps=10)
    page.mouse.up()


EXPLORERS = {  # what each notebook's explorers must look like once the kernel has run them
    "00_welcome": {"views": 1, "sliders": 1},
    "05_sampling_pipeline": {"views": 1, "sliders": 4},
    "09_exact_speculative_sampling": {"views": 1, "sliders": 1},
}


@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_run_all_works_and_the_explorers_are_live_widgets(page, server, name):
    open_notebook(page, server, name)
    state = run_all(page, name)
    found = problems(state)
    explorer = page.locator(".jp-Cell", has=page.locator(".jp-OutputArea-output:has(> .jupyter-widgets)")).first
    if explorer.count():
        explorer.scroll_into_view_if_needed()  # the screenshot shows the first explorer in its notebook
    page.screenshot(path=SCREENSHOTS / f"{name}_run_all.png")
    assert not found, f"{name}: after Run All\n  " + "\n  ".join(found)

    expected = EXPLORERS[name]
    stored_views = sum(WIDGET_VIEW in output["mimes"] for cell in state["cells"] for output in cell["outputs"])
    assert stored_views >= expected["views"], f"{name}: {stored_views} widget outputs, expected {expected['views']}"
    views = widget_views(page)
    try:
        expect(views).to_have_count(stored_views, timeout=RENDER_TIMEOUT_MS)
    except AssertionError:
        pytest.fail(f"{name}: {views.count()} live widget views, {stored_views} widget outputs in the model")
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
    text = "\n".join(notebook.locator(".jp-OutputArea").all_inner_texts())  # outputs only, not the code
    assert "Error displaying widget" not in text, f"{name}: a widget failed to display"
    for repr_start in ("interactive(children=", "IntSlider(value=", "VBox(children="):
        assert repr_start not in text, f"{name}: a widget shows as its text repr ({repr_start}...), not as a widget"
    sliders = notebook.locator(".jp-OutputArea-output .widget-slider")
    try:
        sliders.nth(expected["sliders"] - 1).wait_for(timeout=RENDER_TIMEOUT_MS)
    except PlaywrightTimeout:
        pytest.fail(f"{name}: {sliders.count()} sliders rendered, expected at least {expected['sliders']}")
    views.first.scroll_into_view_if_needed()
    views.first.screenshot(path=SCREENSHOTS / f"{name}_explorer.png")


def test_moving_the_pipeline_explorers_temperature_slider_redraws_the_plot(page, server):
    name = "05_sampling_pipeline"
    open_notebook(page, server, name)
    assert not problems(run_all(page, name))
    explorer = widget_views(page).first
    output = explorer.locator(".widget-output")
    before = settled(lambda: images(output), [], RENDER_TIMEOUT_MS / 1000)
    assert before, "the explorer should show a plot before the slider moves"
    readout = explorer.locator(".widget-slider").first.locator(".widget-readout")
    temperature_before = readout.inner_text()
    explorer.screenshot(path=SCREENSHOTS / f"{name}_slider_before.png")
    drag_slider(page, explorer.locator(".widget-slider").first, 0.25)
    after = settled(lambda: images(output), before, WIDGET_UPDATE_TIMEOUT_S)
    explorer.screenshot(path=SCREENSHOTS / f"{name}_slider_after.png")
    assert readout.inner_text() != temperature_before, "dragging did not move the temperature slider"
    assert after, "after moving the slider the explorer shows no plot"
    assert after != before, f"temperature {temperature_before} -> {readout.inner_text()}: the plot did not change"


def test_moving_the_speculative_round_slider_shows_another_round(page, server):
    name = "09_exact_speculative_sampling"
    open_notebook(page, server, name)
    assert not problems(run_all(page, name))
    explorer = widget_views(page).first
    view = explorer.locator(".widget-html-content").last
    expect(view).to_contain_text("round 1 of", timeout=RENDER_TIMEOUT_MS)
    before = view.inner_text()
    assert before.startswith("round 1 of"), f"the explorer should start at round 1, shows {before[:80]!r}"
    explorer.screenshot(path=SCREENSHOTS / f"{name}_slider_before.png")
    drag_slider(page, explorer.locator(".widget-slider").first, 0.3)
    settled(view.inner_text, before, WIDGET_UPDATE_TIMEOUT_S)
    explorer.screenshot(path=SCREENSHOTS / f"{name}_slider_after.png")
    after = view.inner_text()
    assert after != before and not after.startswith("round 1 of"), f"still {after[:80]!r} after moving the slider"


def test_the_solution_link_opens_the_solution(page, server):
    open_notebook(page, server, "00_welcome")
    page.locator(".jp-RenderedMarkdown a", has_text="Solution").first.click()
    tab = page.locator(".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel", has_text="ex00_warm_up.py")
    try:
        tab.wait_for(timeout=30_000)
    except PlaywrightTimeout:
        page.screenshot(path=SCREENSHOTS / "00_solution_link_failed.png")
        pytest.fail("clicking Solution in 00 opened no ex00_warm_up.py tab within 30 s: is the repository root served?")
    first_line = (ROOT / "solutions" / "ex00_warm_up.py").read_text().strip().splitlines()[0]
    editor = page.locator(".jp-FileEditor:not(.lm-mod-hidden) .cm-content")
    try:
        expect(editor).to_contain_text(first_line.strip(), timeout=RENDER_TIMEOUT_MS)
    except AssertionError:
        pytest.fail(f"the ex00_warm_up.py tab does not show the solution's first line: {editor.inner_text()[:200]!r}")
    page.screenshot(path=SCREENSHOTS / "00_solution_link.png")
