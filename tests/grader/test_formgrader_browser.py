"""nbgrader's formgrader in JupyterLab, in headless Chromium, with the course's configuration.

Starts `jupyter-lab` in a temporary course (grader/nbgrader_config.py loaded, every lesson released),
opens the formgrader from Lab's Nbgrader menu, checks that it lists every lesson of the course, and
saves a screenshot to test-artifacts/formgrader.png. Skipped, with a message, only where Chromium or
Playwright is missing (CI installs both).
"""
from __future__ import annotations


import pytest

from course import REPO, make_course
from heads_lessons import all_lessons
from lab_server import chromium, jupyter_lab, require_chromium

LESSONS = [x.name for x in all_lessons()]

require_chromium(module_level=True)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("formgrader")
    (tmp / "exchange").mkdir()
    root = make_course(tmp / "course", LESSONS,
                       extra_config=f"c.Exchange.root = {str(tmp / 'exchange')!r}\n")
    token = "heads-formgrader-test"
    with jupyter_lab(root, token, "--LabApp.news_url=", "--ServerApp.open_browser=False") as url:
        yield url, token


def test_formgrader_lists_the_course_assignments(lab):
    url, token = lab
    shots = REPO / "test-artifacts"
    shots.mkdir(exist_ok=True)
    with chromium() as browser:
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
    assert "Manage Assignments" in text
    assert listed == {lesson: lesson for lesson in LESSONS}
