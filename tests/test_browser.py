"""Real browser: JupyterLab in headless Chromium runs the widget lessons and the controls change the picture.

For each lesson that shows the pooled-position widget, a copy of the solution notebook is opened in
JupyterLab, run with Run → Run All Cells, and two controls of the widget are moved with the keyboard:
the first row's length (two steps down) and the amount of padding (two steps up). Each key press
redraws the picture, so the test waits until the picture on the page shows the *final* state, not
merely a changed one: every picture carries the plan it was drawn from in its PNG metadata
("Description", `PoolingPlan.key`), which the page reads from the image's own bytes and compares
with the state the sliders and the text show. Screenshots go to test-artifacts/browser/.
Skipped, with a message, only where Chromium is not installed; under CI (which installs it) it fails.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from lab_server import chromium, jupyter_lab, require_chromium
from heads_lessons import all_lessons

expect = pytest.importorskip("playwright.sync_api").expect

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts" / "browser"
WIDGET_LESSONS = [x.path() for x in all_lessons() if "pooling_explorer(" in x.path().read_text()]

require_chromium(module_level=True)


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
    with chromium() as browser:
        yield browser


def test_the_widget_lessons_are_there():
    names = {p.parent.name for p in WIDGET_LESSONS}
    assert {"02_pooling", "06_causal_pitfall"} <= names, f"widget lessons found: {sorted(names)}"


# The plan a picture shows, read from the bytes of the <img> itself (a tEXt chunk of the PNG).
PICTURE_KEY = """async (img) => {
    const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
    const view = new DataView(bytes.buffer);
    for (let at = 8; at + 8 <= bytes.length;) {
        const length = view.getUint32(at), type = String.fromCharCode(...bytes.slice(at + 4, at + 8));
        if (type === "tEXt") {
            const text = new TextDecoder("latin1").decode(bytes.slice(at + 8, at + 8 + length));
            const [keyword, value] = text.split("\\0");
            if (keyword === "Description") return value;
        }
        at += 12 + length;
    }
    return null;
}"""


def parse_key(key: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in key.split())


def wait_for_picture(area, key: str, timeout_ms: int = 30_000) -> None:
    """Wait until the widget's picture is the one drawn for `key`."""
    picture = area.locator("img.heads-pooling-picture")
    deadline = time.monotonic() + timeout_ms / 1000
    shown = None
    while time.monotonic() < deadline:
        shown = picture.evaluate(PICTURE_KEY)
        if shown == key:
            return
        time.sleep(0.2)
    raise AssertionError(f"the picture still shows {shown!r}, not the final state {key!r}")


def slider(area, label: str):
    return area.locator(".widget-slider", has=area.page.locator(".widget-label", has_text=label)).first


@pytest.mark.parametrize("path", WIDGET_LESSONS, ids=lambda p: p.parent.name)
def test_run_all_then_the_controls_change_the_picture(lab, browser, path):
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
        # the widget's output area: the one holding both a slider and the widget's picture
        notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        area = notebook.locator(".jp-OutputArea-output", has=page.locator(".widget-slider")).filter(
            has=page.locator("img.heads-pooling-picture")).last
        area.wait_for(state="attached", timeout=120_000)
        page.wait_for_selector("text=| Idle", timeout=120_000)
        area.scroll_into_view_if_needed()
        picture = area.locator("img.heads-pooling-picture")
        before = parse_key(picture.evaluate(PICTURE_KEY) or "")
        assert {"rule", "padding_side", "model", "lengths", "n"} <= before.keys(), before
        area.screenshot(path=str(ARTIFACTS / f"{name}-before.png"))

        # move two controls, two key presses each: every press redraws
        lengths = [int(x) for x in before["lengths"].split(",")]
        extra = int(before["n"]) - max(lengths)
        for handle, key in [(slider(area, "ℓ row 0").locator(".noUi-handle"), "ArrowLeft"),
                            (slider(area, "extra pads").locator(".noUi-handle"), "ArrowRight")]:
            handle.focus()
            handle.press(key)
            handle.press(key)
        lengths[0] = max(1, lengths[0] - 2)
        extra += 2                                      # the slider allows at least 6 extra pads
        final = {**before, "lengths": ",".join(map(str, lengths)), "n": str(max(lengths) + extra)}
        final_key = " ".join(f"{k}={v}" for k, v in final.items())

        # the sliders, the text and the picture all show the final state
        expect(slider(area, "ℓ row 0").locator(".widget-readout")).to_have_text(str(lengths[0]), timeout=30_000)
        expect(slider(area, "extra pads").locator(".widget-readout")).to_have_text(str(extra), timeout=30_000)
        expect(area.locator(".widget-html")).to_contain_text(f"row 0: length {lengths[0]},", timeout=30_000)
        expect(area.locator(".widget-html")).to_contain_text(f"Padded to n = {final['n']} ", timeout=30_000)
        wait_for_picture(area, final_key)
        page.wait_for_selector("text=| Idle", timeout=60_000)
        wait_for_picture(area, final_key, timeout_ms=2_000)  # and nothing redrew it afterwards
        area.screenshot(path=str(ARTIFACTS / f"{name}-after.png"))
        page.screenshot(path=str(ARTIFACTS / f"{name}-page.png"), full_page=False)
        errors = notebook.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']",
                                  has_text="Traceback")
        assert errors.count() == 0, f"{name}: a cell raised an error in the browser"
    finally:
        page.close()
