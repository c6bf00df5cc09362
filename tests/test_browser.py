"""Real browser: JupyterLab in headless Chromium runs the widget lessons and a control changes the picture.

For each lesson that shows the pooled-position widget, a copy of the solution notebook is opened in
JupyterLab, run with Run → Run All Cells, and the first length slider of the widget is moved with the
keyboard; the widget's picture must change. Screenshots go to test-artifacts/browser/.
Skipped, with a message, only where Chromium is not installed; under CI (which installs it) it fails.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from lab_server import CHROMIUM_ARGS, jupyter_lab

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts" / "browser"
WIDGET_LESSONS = sorted(p for p in (REPO / "solutions").glob("*/*.ipynb") if "pooling_explorer(" in p.read_text())

if not CHROMIUM.exists():
    if os.environ.get("CI"):
        raise RuntimeError("CI needs Chromium at /usr/bin/chromium (apt-get install chromium)")
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on loopback serving copies of the widget lessons; stopped by its PID."""
    root = tmp_path_factory.mktemp("lab")
    for path in WIDGET_LESSONS:
        shutil.copy(path, root / path.name)
    settings = root / ".settings" / "@jupyterlab"
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    # JupyterLab 4 renders only the cells near the viewport; the widget sits near the end of a lesson.
    (settings / "notebook-extension").mkdir()
    (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}))
    token = "heads-browser-test"
    with jupyter_lab(root, token, f"--LabApp.user_settings_dir={root / '.settings'}",
                     f"--LabApp.workspaces_dir={root / '.workspaces'}", log=root / "server.log") as url:
        yield url, token


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def test_the_widget_lessons_are_there():
    names = {p.parent.name for p in WIDGET_LESSONS}
    assert {"02_pooling", "06_causal_pitfall"} <= names, f"widget lessons found: {sorted(names)}"


@pytest.mark.parametrize("path", WIDGET_LESSONS, ids=lambda p: p.parent.name)
def test_run_all_then_a_slider_changes_the_picture(lab, browser, path):
    url, token = lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = path.parent.name
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        # a workspace of its own, reset, so no other lesson's tab is restored next to this one
        page.goto(f"{url}/lab/workspaces/{name}/tree/{path.name}?reset&token={token}")
        page.wait_for_selector("text=| Idle", timeout=90_000)
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").click()
        page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
        # the widget's output area: the one holding both a slider and a picture
        notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        area = notebook.locator(".jp-OutputArea-output", has=page.locator(".widget-slider")).filter(
            has=page.locator("img")).last
        area.wait_for(state="attached", timeout=120_000)
        page.wait_for_selector("text=| Idle", timeout=120_000)
        area.scroll_into_view_if_needed()
        picture = area.locator("img").first
        before = picture.get_attribute("src")
        area.screenshot(path=str(ARTIFACTS / f"{name}-before.png"))
        handle = area.locator(".widget-slider .noUi-handle").first
        handle.focus()
        handle.press("ArrowLeft")
        handle.press("ArrowLeft")
        page.wait_for_function(
            """([area, before]) => { const img = area.querySelector('img');
                                     return img !== null && img.src !== before; }""",
            arg=[area.element_handle(), before], timeout=30_000)
        page.wait_for_selector("text=| Idle", timeout=60_000)
        area.screenshot(path=str(ARTIFACTS / f"{name}-after.png"))
        page.screenshot(path=str(ARTIFACTS / f"{name}-page.png"), full_page=False)
        errors = notebook.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']",
                              has_text="Traceback")
        assert errors.count() == 0, f"{name}: a cell raised an error in the browser"
    finally:
        page.close()
