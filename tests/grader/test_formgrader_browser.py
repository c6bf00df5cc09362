"""nbgrader's formgrader in JupyterLab, in headless Chromium, with the course's configuration.

Starts `jupyter-lab` in a temporary course (grader/nbgrader_config.py loaded, every lesson released),
opens the formgrader from Lab's Nbgrader menu, checks that it lists every lesson of the course, and
saves a screenshot to test-artifacts/formgrader.png. Skipped, with a message, only where Chromium or
Playwright is missing (CI installs both).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from course import REPO, make_course

LESSONS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir())

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover
    sync_playwright = None

if not CHROMIUM or sync_playwright is None:
    if os.environ.get("CI"):
        raise RuntimeError("CI needs chromium (apt-get install chromium) and playwright (pip)")
    pytest.skip("needs Chromium (apt-get install chromium) and Playwright (pip install playwright)",
                allow_module_level=True)

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("formgrader")
    (tmp / "exchange").mkdir()
    root = make_course(tmp / "course", lessons=LESSONS,
                       extra_config=f"c.Exchange.root = {str(tmp / 'exchange')!r}\n")
    port, token = free_port(), "heads-formgrader-test"
    exe = Path(sys.executable).with_name("jupyter-lab")
    server = subprocess.Popen(
        [str(exe), "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=", "--ServerApp.open_browser=False"],
        cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise AssertionError("jupyter-lab did not start")
        yield url, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def test_formgrader_lists_the_course_assignments(lab):
    url, token = lab
    shots = REPO / "test-artifacts"
    shots.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{url}/lab?token={token}", timeout=120_000)
        page.get_by_text("Nbgrader", exact=True).first.click(timeout=120_000)
        page.locator(".lm-Menu-item", has_text="Formgrader").first.click(timeout=30_000)
        frame = page.frame_locator("iframe").first
        rows = {lesson: frame.locator("tr", has_text=lesson).first for lesson in LESSONS}
        rows[LESSONS[0]].wait_for(timeout=120_000)  # the assignments table has loaded
        no_news = page.get_by_role("button", name="No")
        if no_news.count():
            no_news.first.click()
        rows[LESSONS[-1]].scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "formgrader.png"))
        text = frame.locator("body").inner_text()
        listed = {lesson: row.inner_text().split()[0] for lesson, row in rows.items()}
        browser.close()
    assert "Manage Assignments" in text
    assert listed == {lesson: lesson for lesson in LESSONS}
