"""Nothing a student wrote runs in the instructor's browser (issue 28), tested in headless Chromium.

One class of two, lesson 00, graded as the instructor grades it (`grade.py autograde`, sandbox required,
then `feedback`): `honest` (4/4) and `mallory`, who wrote no answer (0/4) and whose notebook carries the
placements that ran script in the formgrader before:

- PNG and JPEG outputs whose metadata puts `1 onerror=...` in every key nbconvert's templates print
  (`width`, `height` unquoted; `alt`, `filenames`, `unconfined`, `isolated`, `needs_background`),
  top-level and under the mimetype, made by the kernel;
- markdown links to `javascript:` (inline, by reference, autolink, with an entity, in upper case),
  `vbscript:` and `data:text/html`, raw `<a>`/`<img onerror>` in markdown and in a raw cell, a
  `text/markdown` output with such a link, SVG and HTML cell attachments, and cells marked as graded
  whose `grade_id` carries a tag (the formgrade template prints it unescaped).

The script each placement carries does what the held-out attack did as the instructor: it marks
`window.__pwned`, writes a file into the course through /api/contents, opens a terminal and sets its
own grades to full marks through the formgrader's API. (Measured on the code before the fix: 8 of
the image placements ran on opening the page and the first link on one click; the script wrote 9 files,
opened terminals and turned 0/4 into 4/4.) The tests open the formgrader page and the feedback page,
click every link once, and check that nothing ran and nothing changed: score, grades,
course files, terminals. Then the same page is opened on a notebook "autograded before the fix" (the
raw hand-in, outputs and all, in the autograded folder): the formgrader's own rendering makes it inert.
"""
from __future__ import annotations

import base64
import copy
import json
import os
import re
import textwrap
import urllib.error
import urllib.request
from html.parser import HTMLParser

import nbformat
import pytest

from course import LESSON, REPO, fill, grade_py, make_course, release_nb, solution_answers, submit
from heads_sandbox import bwrap_works
from lab_server import chromium, jupyter_lab, require_chromium

if not bwrap_works():
    if os.environ.get("CI"):
        raise RuntimeError("bubblewrap is required in CI (apt-get install bubblewrap)")
    pytest.skip("needs bubblewrap (apt-get install bubblewrap)", allow_module_level=True)
require_chromium(module_level=True)

NB = f"{LESSON}.ipynb"
TOKEN = "heads-xss-test"


def attack(n: int) -> str:
    """JavaScript, as one token with no space or double quote (it must fit an unquoted attribute),
    that marks `window.__pwned = n` and then does what the held-out attack did."""
    js = textwrap.dedent(f"""\
        window.__pwned = {n};
        var h = {{'X-XSRFToken': (document.cookie.match(/_xsrf=([^;]+)/) || [])[1],
                  'Content-Type': 'application/json'}};
        fetch('/api/contents/PWNED-{n}.txt', {{method: 'PUT', headers: h,
              body: JSON.stringify({{type: 'file', format: 'text', content: 'pwned'}})}});
        fetch('/api/terminals', {{method: 'POST', headers: h}});
        var sub = location.pathname.split('/')[3];
        fetch('/formgrader/api/grades?submission_id=' + sub).then(r => r.json()).then(gs => gs.forEach(
            g => fetch('/formgrader/api/grade/' + g.id, {{method: 'PUT', headers: h,
                       body: JSON.stringify({{manual_score: g.max_score, extra_credit: 0}})}})));
        """)
    return f"eval(atob('{base64.b64encode(js.encode()).decode()}'))"


BROKEN_IMAGE = "AAAA"  # fails to load, so an onerror handler fires
TEMPLATE_KEYS = ["width", "height", "alt", "unconfined", "isolated", "needs_background"]
# (mimetype, metadata) of each image output; every key the templates print, top-level and nested.
IMAGE_OUTPUTS = [
    (mime, metadata)
    for i, mime in enumerate(["image/png", "image/jpeg"])
    for metadata in [
        *({key: f"1 onerror={attack(100 + 20 * i + k)}"} for k, key in enumerate(TEMPLATE_KEYS)),
        *({mime: {key: f"1 onerror={attack(110 + 20 * i + k)}"}} for k, key in enumerate(TEMPLATE_KEYS)),
        {"filenames": {mime: f"x onerror={attack(119 + 20 * i)}"}},
    ]
]
LINKS = {  # text shown: markdown, each a link that ran script when clicked
    "CLICK-1": f"[CLICK-1](javascript:{attack(1)})",
    "CLICK-2": "[CLICK-2][evil]\n\n[evil]: javascript:" + attack(2),
    "CLICK-3": f"[CLICK-3](java&#09;script:{attack(3)})",
    "CLICK-4": f"[CLICK-4](JaVaScRiPt:{attack(4)})",
    "CLICK-5": f'<a href="javascript:{attack(5)}">CLICK-5</a>',
    "CLICK-6": f"[CLICK-6](vbscript:{attack(6)})",
    "CLICK-7": "[CLICK-7](data:text/html;base64,"
               + base64.b64encode(f"<script>{attack(7)}</script>".encode()).decode() + ")",
    "javascript:": f"<javascript:{attack(8)}>",
}
MARKDOWN = "\n\n".join(["My plot of the masks:", *LINKS.values(),
                        f'<img src="x" onerror="{attack(9)}">',
                        "![svg](attachment:plot.svg) ![html](attachment:page.html)"])
ATTACHMENTS = {
    "plot.svg": {"image/svg+xml": base64.b64encode(
        f'<svg xmlns="http://www.w3.org/2000/svg" onload="{attack(10)}"/>'.encode()).decode()},
    "page.html": {"text/html": base64.b64encode(f"<script>{attack(11)}</script>".encode()).decode()},
}
RAW_CELL = f'<img src="x" onerror="{attack(12)}"><a href="javascript:{attack(13)}">CLICK-RAW</a>'
MARKDOWN_OUTPUT_LINK = f"[CLICK-OUT](javascript:{attack(14)})"

# The kernel displays the same image outputs and the markdown output (the real path through autograde).
DISPLAY_CODE = "from IPython.display import Markdown, display\n" + "".join(
    f"display({{{mime!r}: {BROKEN_IMAGE!r}, 'text/plain': 'plot'}}, metadata={metadata!r}, raw=True)\n"
    for mime, metadata in IMAGE_OUTPUTS) + f"display(Markdown({MARKDOWN_OUTPUT_LINK!r}))\n"


def stored_outputs() -> list:
    """The same outputs as saved in the hand-in itself (what an autograded notebook held before the fix)."""
    out = [nbformat.v4.new_output("display_data", data={mime: BROKEN_IMAGE, "text/plain": "plot"},
                                  metadata=metadata) for mime, metadata in IMAGE_OUTPUTS]
    out.append(nbformat.v4.new_output("display_data", data={"text/markdown": MARKDOWN_OUTPUT_LINK,
                                                            "text/plain": "md"}))
    return out


def mallory_notebook(rel):
    nb = copy.deepcopy(rel)  # no answer written: honestly 0/4
    at = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "as check" in c.source) + 1
    code = nbformat.v4.new_code_cell(DISPLAY_CODE)
    code.outputs = stored_outputs()
    markdown = nbformat.v4.new_markdown_cell(MARKDOWN)
    markdown.attachments = copy.deepcopy(ATTACHMENTS)
    raw = nbformat.v4.new_raw_cell(RAW_CELL)
    raw.metadata["raw_mimetype"] = "text/html"
    nb.cells[at:at] = [markdown, code, raw, *graded_looking_cells()]
    return nb


def graded_looking_cells() -> list:
    """Cells the student marked as graded, with an id the formgrade template prints unescaped."""
    cells = []
    for k, (kind, source) in enumerate([("markdown", "A task of my own"), ("code", "x = 1")]):
        cell = getattr(nbformat.v4, f"new_{kind}_cell")(source)
        cell.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "points": 1,
                                     "schema_version": 3,
                                     "grade_id": f'x"><img src=x onerror={attack(15 + k)}>'}
        cells.append(cell)
    return cells


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("xss") / "course")
    rel = release_nb(root)
    submit(root, "honest", fill(rel, solution_answers()))
    submit(root, "mallory", mallory_notebook(rel))
    env = {"HEADS_SANDBOX": "required", "OMP_NUM_THREADS": "1"}
    out = ""
    for step in (["--jobs", "2", "autograde"], ["feedback"]):
        proc = grade_py("--course", str(root), *step, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out += proc.stdout
    (root.parent / "grade.out").write_text(out)
    return root


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def pwned(page):
    page.wait_for_timeout(1000)  # onerror handlers fire once the broken images fail
    return page.evaluate("window.__pwned === undefined ? null : window.__pwned")


def click_every_link(page) -> list[str]:
    """Click each planted link once (staying on the page); the texts clicked."""
    clicked = []
    for text in [*LINKS, "CLICK-RAW", "CLICK-OUT"]:
        link = page.locator("a", has_text=text)
        if link.count():
            link.first.click(timeout=5000, no_wait_after=True)
            clicked.append(text)
            page.wait_for_timeout(200)
            if page.evaluate("window.__pwned !== undefined"):
                break
    return clicked


def test_the_attack_runs_when_served_raw(browser):
    """The control: the payload, in an unquoted width as the templates wrote it and in a clicked link,
    runs in this browser, so the tests below can fail."""
    page = browser.new_page()
    page.set_content(f"<img src='data:image/png;base64,{BROKEN_IMAGE}' width=1 onerror={attack(1)}>")
    assert pwned(page) == 1
    page.set_content(f'<a href="javascript:{attack(2)}">CLICK-2</a>')
    page.get_by_text("CLICK-2").click()
    assert pwned(page) == 2
    page.close()


class _Tags(HTMLParser):
    """Every start tag's attributes of a page."""

    def __init__(self):
        super().__init__()
        self.attributes: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        self.attributes += [(tag, name, value or "") for name, value in attrs]


def unsafe_attributes(html: str) -> list[tuple[str, str, str]]:
    """Event handlers, and URLs that are not http(s), mailto, fragments, paths or embedded raster
    images: written independently of the grader's own cleaner."""
    parser = _Tags()
    parser.feed(html)
    bad = []
    for tag, name, value in parser.attributes:
        url = re.sub(r"[\x00-\x20]", "", value).lower()
        if name.startswith("on"):
            bad.append((tag, name, value[:60]))
        elif name in ("href", "src", "action", "formaction", "xlink:href", "srcdoc", "data", "poster") and \
                re.match(r"[a-z][a-z0-9+.-]*:", url) and not re.match(
                    r"(https?|mailto):|data:image/(png|jpeg|gif|webp);", url):
            bad.append((tag, name, value[:60]))
    return bad


def test_the_stored_notebook_holds_no_script(graded):
    nb = nbformat.read(graded / "autograded" / "mallory" / LESSON / NB, as_version=4)
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if BROKEN_IMAGE in (o.get("data", {}).get("image/png"), o.get("data", {}).get("image/jpeg"))]
    assert len(images) == len(IMAGE_OUTPUTS)  # shown, with metadata only the templates can print safely
    assert "onerror" not in json.dumps([o.metadata for o in images]), [o.metadata for o in images]
    student_cells = [c for c in nb.cells if c.cell_type in ("markdown", "raw") and "CLICK-" in c.source]
    assert len(student_cells) == 2
    text = json.dumps(student_cells)
    assert "My plot of the masks" in text and "CLICK-1" in text  # shown, as inert HTML
    assert not re.search(r"(href|src)=\\\"(javascript|vbscript|data:text)", text, re.I), text
    assert all(not c.get("attachments") for c in student_cells)  # neither SVG nor HTML survives
    # the cells marked with made-up grade ids are graded as ordinary cells, and the instructor is told
    assert not [c for c in nb.cells if "onerror" in str(c.metadata)]
    problems = [line for line in (graded.parent / "grade.out").read_text().splitlines()
                if line.startswith("PROBLEM mallory/") and "grade_id" in line]
    assert " ".join(problems).count("was graded as an ordinary cell") == 2, problems


def test_the_feedback_page_has_no_handler_and_no_script_url(graded, browser):
    page_file = graded / "feedback" / "mallory" / LESSON / f"{LESSON}.html"
    html = page_file.read_text()
    assert "My plot of the masks" in html
    assert unsafe_attributes(html) == []
    page = browser.new_page()
    page.goto(page_file.as_uri())
    clicked = click_every_link(page)
    assert pwned(page) is None, clicked
    page.close()


def course_files(root) -> set[str]:
    skip = {".ipynb_checkpoints", "__pycache__"}
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if not skip & set(p.parts) and not p.name.endswith("-journal")}


def grades(root, student: str) -> tuple:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        sub = gb.find_submission(LESSON, student)
        nb = sub.notebooks[0]
        return sub.score, sorted((g.name, g.manual_score, g.extra_credit) for g in nb.grades), nb.id


def terminals(url: str):
    try:
        with urllib.request.urlopen(f"{url}/api/terminals?token={TOKEN}", timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as err:
        return err.code, None


def test_the_formgrader_runs_nothing_and_nothing_changes(graded, browser, tmp_path):
    """Opened as the instructor, directly, on the notebook as autograded now and on one autograded before
    the fix: no placement runs, even clicked; the score, the grades, the course's files and the
    terminals are as before."""
    root = graded
    score, before, sub_id = grades(root, "mallory")
    assert score == 0 and all(manual is None for _, manual, _ in before), before
    classmate = grades(root, "honest")
    files = course_files(root)
    (tmp_path / "exchange").mkdir()
    config = REPO / "grader" / "jupyter_server_config.py"
    with jupyter_lab(root, TOKEN, f"--config={config}", "--LabApp.news_url=",
                     f"--Exchange.root={tmp_path / 'exchange'}", log=tmp_path / "lab.log") as url:
        assert terminals(url)[0] == 404, "the grading server must run with terminals off"
        page = browser.new_page()
        page.goto(f"{url}/lab?token={TOKEN}", timeout=120_000)  # logged in as the instructor is
        page.get_by_text("Nbgrader", exact=True).first.wait_for(timeout=120_000)
        submission = f"{url}/formgrader/submissions/{sub_id}/?token={TOKEN}"
        for when in ("autograded now", "autograded before the fix"):
            if when == "autograded before the fix":
                nbformat.write(mallory_notebook(release_nb(root)),
                               root / "autograded" / "mallory" / LESSON / NB)
            response = page.goto(submission, timeout=120_000)
            assert response.ok, (response.status, (tmp_path / "lab.log").read_text()[-2000:])
            page.get_by_text("My plot of the masks").first.wait_for(timeout=60_000)
            assert pwned(page) is None, when
            clicked = click_every_link(page)
            assert pwned(page) is None, (when, clicked)
            assert "CLICK-1" in clicked and "CLICK-RAW" in clicked, clicked
            cells = page.eval_on_selector_all(".cell", "cells => cells.map(c => c.outerHTML).join('')")
            assert unsafe_attributes(cells) == [], when  # the notebook's cells; nbgrader's own page has some
        page.wait_for_timeout(1000)  # any request a script started has landed
        page.close()
        assert terminals(url)[0] == 404
    assert grades(root, "mallory") == (score, before, sub_id)
    assert grades(root, "honest") == classmate
    assert course_files(root) == files
