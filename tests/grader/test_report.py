"""The class report (grader/heads_report.py, `grade.py report`).

- On plain data: a gradebook and verdict files written by hand; counts, ordering, what is counted
  apart, escaping of student text, the CSV.
- End to end (slow): a generated class of lesson 00 in a known mix of the grading harness's wrong
  implementations, graded by `grade.py autograde`; the report's counts equal the mix, each mistake's
  key computed independently by replaying the checks in-process (tests/grading/replay.py).
- In headless Chromium: the page opened from a file:// URL shows every chart and opens a student's
  details; a screenshot goes to test-artifacts/class-report.png.
"""
from __future__ import annotations

import csv
import functools
import html
import importlib
import json
import os
import re
from collections import Counter

import pytest

from course import LESSON, REPO, fill, grade_py, looping, make_course, release_nb, solution_answers, submit
from heads_report import (APART, FLAGGED, MISTAKE, NO_VERDICT, counts, read_class, render, tally, write_csv,
                          write_report)


# --- on plain data ----------------------------------------------------------------------------------
def verdict(mistake: str = "", message: str = "", error: str = "CheckFailed") -> dict:
    if not mistake and not message:
        return {"passed": True, "error": "", "message": "", "mistake": ""}
    return {"passed": False, "error": error, "message": message, "mistake": mistake}


EVIL = "<script>alert('x')</script> & \"quoted\""
OFF_BY_ONE = "CheckFailed: off by one …"
SWAPPED = "CheckFailed: rows and columns swapped …"
CLASS = {   # student → {grade_id: verdict or None (no verdict file)}
    "ann": {"test_a": verdict(OFF_BY_ONE, "you marked [0, 1, 2, 3]: off by one"), "test_b": verdict()},
    "bob": {"test_a": verdict(OFF_BY_ONE, f"you marked {EVIL}: off by one"),
            "test_b": verdict("NoAnswers: no answers …", "the grader got no answers", "NoAnswers")},
    "cat": {"test_a": verdict(SWAPPED, "rows and columns swapped (5, 3)"), "test_b": verdict()},
    "dan": {"test_a": verdict(SWAPPED, "rows and columns swapped (5, 3)"),
            "test_b": verdict("NotImplementedError: ", "", "NotImplementedError")},
    "eve": {"test_a": verdict(OFF_BY_ONE, "off by one"), "test_b": verdict()},      # flagged
    "fay": {"test_a": verdict("=HYPERLINK(…)", "=HYPERLINK(\"http://x\")"), "test_b": verdict()},
    "gus": None,                                                                      # no verdict file
    EVIL: {"test_a": verdict(OFF_BY_ONE, "off by one"), "test_b": verdict()},
}
FLAGS = {"eve/L": ["test_a: spawns processes: imports subprocess"]}


@pytest.fixture(scope="module")
def small_class(tmp_path_factory):
    """A course folder with a hand-made gradebook (lesson L: test_a 2 points, test_b 1 point), verdict
    files for CLASS (cell scores follow the verdicts), and the report's reading of them. (Each opening
    of an nbgrader gradebook runs `alembic` for seconds: it is opened as few times as possible.)"""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("small-class")
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    with Gradebook(db_url) as gb:
        gb.add_assignment("L")
        gb.add_notebook("L", "L")
        gb.add_grade_cell("test_a", "L", "L", max_score=2, cell_type="code")
        gb.add_grade_cell("test_b", "L", "L", max_score=1, cell_type="code")
        for student, verdicts in CLASS.items():
            gb.add_student(student)
            gb.add_submission("L", student)
            for cell, points in (("test_a", 2), ("test_b", 1)):
                grade = gb.find_grade(cell, "L", "L", student)
                grade.auto_score = points if verdicts and verdicts[cell]["passed"] else 0
            gb.db.commit()
            if verdicts is not None:
                path = root / "verdicts" / "L" / student / "L.json"
                path.parent.mkdir(parents=True)
                path.write_text(json.dumps(verdicts))
    return root, db_url, read_class(db_url, root / "verdicts", ["L"], FLAGS)


def test_counts_order_and_what_is_counted_apart(small_class):
    _, _, (outcomes, totals, order) = small_class
    assert order == {"L": ["test_a", "test_b"]}
    a, b = tally(outcomes, order)
    # most frequent first; eve (flagged) and gus (no verdict) are counted apart, not as mistakes
    assert counts(a) == {OFF_BY_ONE: 3, SWAPPED: 2, "=HYPERLINK(…)": 1, FLAGGED: 1, NO_VERDICT: 1}
    assert list(a.mistakes) == [OFF_BY_ONE, SWAPPED, "=HYPERLINK(…)"]
    assert [o.student for o in a.mistakes[OFF_BY_ONE]] == sorted(["ann", "bob", EVIL])
    assert a.passed == 0 and a.scores == Counter({0.0: 8}) and a.max_score == 2
    assert counts(b) == {APART["NoAnswers"]: 1, APART["NotImplementedError"]: 1, FLAGGED: 1, NO_VERDICT: 1}
    # the gradebook's scores as they are (eve's 1 point included); eve's pass is not counted
    assert not b.mistakes and b.passed == 4 and b.scores == Counter({1.0: 5, 0.0: 3})
    assert totals[("ann", "L")] == (1.0, 3.0)


def test_page_escapes_and_orders(small_class):
    _, _, (outcomes, totals, order) = small_class
    text = render(tally(outcomes, order), outcomes, totals, FLAGS)
    # student text is escaped everywhere: in a message, in a student id, in the alt text
    assert "<script>" not in text and html.escape(EVIL) in text
    # the mistakes table, most frequent first; the explanation is what the first student (by id) saw
    rows = re.findall(r"<tr><td>M(\d)</td><td class='n'>(\d+)</td><td>(.*?)</td><td><pre>(.*?)</pre>", text)
    assert [(m, int(n), html.unescape(k)) for m, n, k, _ in rows] == [   # test_b has none
        ("1", 3, OFF_BY_ONE), ("2", 2, SWAPPED), ("3", 1, "=HYPERLINK(…)")]
    assert [html.unescape(r[3]) for r in rows] == [
        "CheckFailed: off by one", "CheckFailed: rows and columns swapped (5, 3)",   # EVIL < ann, cat
        'CheckFailed: =HYPERLINK("http://x")']
    assert text.count("<img src='data:image/png;base64,") == 2
    alts = [html.unescape(a) for a in re.findall(r"alt='([^']*)'", text)]
    assert alts[0].startswith("L test_a, students by outcome. passed: 0; M1 (CheckFailed: off by one …): 3;")
    assert "did not run: 1" in alts[1] and "flagged: 1" in alts[1]
    # every student, behind their id; no script, nothing fetched from elsewhere
    assert text.count("<details") == len(CLASS)
    assert "<script" not in text and not re.search(r"(src|href)=['\"]?(https?:|//)", text)


def test_csv_rows(small_class, tmp_path):
    _, _, (outcomes, _, _) = small_class
    assert write_csv(outcomes, tmp_path / "mistakes.csv") == 12   # 8 of test_a, 4 of test_b
    with (tmp_path / "mistakes.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["student", "lesson", "exercise", "mistake", "message", "score", "max_score",
                             "status"]
    by_status = Counter((r["exercise"], r["status"]) for r in rows)
    assert by_status == {("test_a", MISTAKE): 6, ("test_a", FLAGGED): 1, ("test_a", NO_VERDICT): 1,
                         ("test_b", "did not run"): 1, ("test_b", "not written yet"): 1,
                         ("test_b", FLAGGED): 1, ("test_b", NO_VERDICT): 1}
    bob = next(r for r in rows if r["student"] == "bob" and r["exercise"] == "test_a")
    assert bob["mistake"] == OFF_BY_ONE and EVIL in bob["message"]
    assert (bob["score"], bob["max_score"]) == ("0", "2")
    fay = next(r for r in rows if r["student"] == "fay")   # a formula is not a formula in a spreadsheet
    assert fay["mistake"].startswith("'=") and fay["message"].startswith("CheckFailed: =HYPERLINK")


def test_write_report_writes_both_files(small_class):
    root, db_url, _ = small_class
    page, table, exercises = write_report(root, db_url, ["L"], FLAGS)
    assert (page, table) == (root / "reports" / "class.html", root / "reports" / "mistakes.csv")
    assert [ex.name for ex in exercises] == ["test_a", "test_b"]
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>") and table.stat().st_size


def test_a_lone_surrogate_in_a_message_does_not_stop_the_report(small_class, tmp_path, monkeypatch):
    """A red team's answer raised an exception whose text held a lone surrogate: it reached the verdict, and the
    report (strict UTF-8) failed for the whole class. Both files are written, the surrogate shown as text."""
    import dataclasses
    import heads_report

    root, db_url, (outcomes, _, _) = small_class
    odd = [dataclasses.replace(o, message=o.message + " boom \udcff") for o in outcomes]
    write_csv(odd, tmp_path / "mistakes.csv")
    assert "boom \\udcff" in (tmp_path / "mistakes.csv").read_text(encoding="utf-8")
    monkeypatch.setattr(heads_report, "render", lambda *a: "<!DOCTYPE html> boom \udcff")
    page, _, _ = write_report(root, db_url, ["L"], FLAGS, out=tmp_path / "out")
    assert "boom \\udcff" in page.read_text(encoding="utf-8")


# --- end to end: a generated class of lesson 00 -------------------------------------------------------
CELL_TIMEOUT = 15   # the loop costs this many seconds; the setup cell imports torch in a few
SOL = solution_answers()


@functools.lru_cache(maxsize=None)
def wrong_cases() -> dict:
    """{name: Wrong} of the grading harness for LESSON (the module builds its case lists, grades nothing)."""
    cases = importlib.import_module(f"test_grade_{LESSON}")
    return {w.name: w for w in cases.WRONG}


UNEXPLAINED = "def padding_mask(lengths, n):\n    return torch.arange(n)[None, :] {rule}\n"


def generated_class() -> dict[str, dict | None]:
    """{student: answers typed into the release, or None for the release untouched}: 3 × one mistake,
    2 × another, 1 student with one more in each exercise, the solution, the untouched release, an
    infinite loop in an answer, and a flagged submission making the first mistake."""
    wrong = wrong_cases()

    def answers(*names: str, **code: str) -> dict:
        return {**SOL, **{wrong[n].exercise: wrong[n].answer(SOL) for n in names}, **code}

    return {
        **{f"le-{i}": answers("padding_mask-less-or-equal") for i in (1, 2, 3)},
        **{f"nodiag-{i}": answers("causal_mask-without-diagonal") for i in (1, 2)},
        "mixed": answers("padding_mask-left-padding", "causal_mask-bidirectional"),
        # wrong answers no named mistake explains: two students with one, a third with another
        **{f"odd-{i}": answers(padding_mask=UNEXPLAINED.format(rule="< lengths[:, None] - 2")) for i in (1, 2)},
        "odder": answers(padding_mask=UNEXPLAINED.format(rule="< lengths[:, None] // 2")),
        "solution": answers(),
        "untouched": None,
        "loop": answers(padding_mask=looping(SOL["padding_mask"])),
        # the most frequent mistake again, but the submission is flagged: counted apart
        "flagged": answers("padding_mask-less-or-equal", padding_mask="import subprocess\n" +
                           wrong["padding_mask-less-or-equal"].answer(SOL)),
    }


def expected_mistake(name: str) -> str:
    """The mistake key of a harness case, from the checks replayed in this process."""
    import replay

    case = wrong_cases()[name]
    namespace = replay.namespace_with(LESSON, {case.exercise: case.answer(SOL)})
    found = replay.judge_answers(LESSON, f"test_{case.exercise}", namespace)
    assert not found.passed and found.mistake, found
    return found.mistake


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("report") / "course", extra_config=f"""
        c.Execute.timeout = {CELL_TIMEOUT}
        """)
    rel = release_nb(root)
    for student, answers in generated_class().items():
        submit(root, student, rel if answers is None else fill(rel, answers))
    jobs = min(4, len(os.sched_getaffinity(0)))
    graded = grade_py("--course", str(root), "--jobs", str(jobs), "autograde")
    assert graded.returncode == 0, graded.stdout + graded.stderr
    made = grade_py("--course", str(root), "report")
    assert made.returncode == 0, made.stdout + made.stderr
    with (root / "reports" / "mistakes.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return root, graded.stdout, rows


@pytest.mark.slow
def test_report_counts_equal_the_generated_mix(report):
    root, autograde_log, rows = report
    assert "FLAG flagged/00_representations" in autograde_log, autograde_log
    le, left, nodiag, both = map(expected_mistake, [
        "padding_mask-less-or-equal", "padding_mask-left-padding",
        "causal_mask-without-diagonal", "causal_mask-bidirectional"])
    assert len({le, left, nodiag, both}) == 4
    mistakes = Counter((r["exercise"], r["mistake"]) for r in rows if r["status"] == MISTAKE)
    unnamed = {r["student"]: r["mistake"] for r in rows if r["mistake"].startswith("unnamed-")}
    odd, odder = unnamed.pop("odd-1"), unnamed.pop("odder")   # one row per wrong function, none a catch-all
    assert unnamed == {"odd-2": odd} and odd != odder, (odd, odder, unnamed)
    assert mistakes == {("test_padding_mask", le): 3, ("test_padding_mask", odd): 2, ("test_padding_mask", left): 1,
                        ("test_padding_mask", odder): 1, ("test_causal_mask", nodiag): 2, ("test_causal_mask", both): 1}
    apart = {(r["student"], r["exercise"]): r["status"] for r in rows if r["status"] != MISTAKE}
    assert apart == {("loop", "test_padding_mask"): APART["NoAnswers"],
                     ("untouched", "test_padding_mask"): APART["NotImplementedError"],
                     ("untouched", "test_causal_mask"): APART["NotImplementedError"],
                     ("flagged", "test_padding_mask"): FLAGGED,
                     ("flagged", "test_causal_mask"): FLAGGED}
    loop = next(r for r in rows if r["student"] == "loop")
    assert "did not run to the end" in loop["message"]
    made_le = {r["student"] for r in rows if r["mistake"] == le and r["status"] == MISTAKE}
    assert made_le == {"le-1", "le-2", "le-3"}
    # the page: the same counts, most frequent first, scores from the gradebook
    text = (root / "reports" / "class.html").read_text(encoding="utf-8")
    table = [(int(n), html.unescape(k)) for n, k in
             re.findall(r"<tr><td>M\d</td><td class='n'>(\d+)</td><td>(.*?)</td>", text)]
    assert table == [(3, le), (2, odd), *sorted([(1, left), (1, odder)], key=lambda row: row[1]), (2, nodiag),
                     (1, both)]
    assert "Scores: 0/2: 10 · 2/2: 3 · passed 3" in text       # padding_mask: nodiag ×2, solution pass
    # causal_mask: le ×3, odd ×3, solution, loop pass; flagged scores 2 in the gradebook, its pass is not counted
    assert "Scores: 0/2: 4 · 2/2: 9 · passed 8" in text
    assert text.count("<details") == len(generated_class())


# --- in a real browser --------------------------------------------------------------------------------
@pytest.mark.slow
def test_report_renders_in_chromium(report):
    from lab_server import chromium

    root, _, _ = report
    page_path = root / "reports" / "class.html"
    shots = REPO / "test-artifacts"
    shots.mkdir(exist_ok=True)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri())
        page.wait_for_load_state("load")
        images = page.eval_on_selector_all(
            "img", "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.naturalHeight, i.alt])")
        details = page.locator("details", has_text="le-1").first
        message = details.locator("pre").first
        hidden_before = not message.is_visible()
        details.locator("summary").click()
        opened = details.evaluate("d => d.open")
        message.scroll_into_view_if_needed()
        shown = message.is_visible() and "one position too many" in message.inner_text()
        page.screenshot(path=str(shots / "class-report.png"))
    assert len(images) == 2, images
    assert all(complete and width > 0 and height > 0 for complete, width, height, _ in images), images
    assert all(alt.startswith(f"{LESSON} test_") for *_, alt in images)
    assert not [u for u in requests if not u.startswith(("file:", "data:"))], requests
    assert hidden_before and opened and shown
