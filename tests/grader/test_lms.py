"""The LMS round trip: submissions downloaded from Canvas and Moodle come back as one upload-ready
feedback zip per lesson (`grade.py feedback --zip`), and `grade.py export` writes grades only for
the lessons the class took.

One class, collected as the instructor does it from an LMS's downloads: a Canvas "Download
Submissions" zip (`<lastfirst>_[LATE_]<user id>_<attachment id>_<file>`) and a Moodle "Download all
submissions" folder (`<Full Name>_<participant id>_assignsubmission_file/<file>`). Two lessons are
released; the class takes one.
"""
from __future__ import annotations

import csv
import zipfile

import nbformat
import pytest

from course import LESSON, fill, grade_py, make_course, release_nb, solution_answers

OTHER = "01_mlm_head"  # released, taken by nobody
SOL = solution_answers()
# {prefix: (answers, archive date)}: Jane resubmitted; her newer file (attachment 67999) is graded
CANVAS = {"doejane_12345_67890": ({}, (2026, 12, 1, 9, 0, 0)),
          "doejane_12345_67999": (SOL, (2026, 12, 2, 9, 0, 0)),
          "roelee_LATE_23456_78901": ({"padding_mask": SOL["padding_mask"]}, (2026, 12, 3, 9, 0, 0))}
MOODLE = {"Sam Smith_345_assignsubmission_file": {}}
SCORES = {"doejane_12345": 4, "roelee_23456": 2, "Sam_Smith_345_assignsubmission_file": 0}


def canvas_reads(name: str) -> tuple[str, str] | None:
    """(user id, attachment id) as Canvas's "Re-upload Submissions" reads a file name
    (canvas-lms `Assignment#infer_comment_context_from_filename`: the first two all-digit `_` fields)."""
    numbers = [field for field in name.rsplit("/", 1)[-1].split("_") if field.isdigit()]
    return (numbers[0], numbers[1]) if len(numbers) >= 2 else None


def moodle_reads(name: str) -> tuple[str, str, str] | None:
    """(participant id, plugin type, plugin name) as Moodle's "Upload multiple feedback files in a
    zip" reads a path (`assignfeedback_file_zip_importer::is_valid_filename_for_import`: the first path
    part that splits at `_`, at most 5 fields, into a full name, a numeric id and a plugin)."""
    for part in name.split("/"):
        info = part.split("_", 4)
        if len(info) >= 4 and info[1].isdigit():
            return info[1], info[2], info[3]
    return None


@pytest.fixture(scope="module")
def lms_class(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lms")
    root = make_course(tmp / "course", names=(LESSON, OTHER))
    rel = release_nb(root)
    canvas = tmp / "submissions.zip"
    with zipfile.ZipFile(canvas, "w") as z:
        for prefix, (answers, when) in CANVAS.items():
            z.writestr(zipfile.ZipInfo(f"{prefix}_{LESSON}.ipynb", when), nbformat.writes(fill(rel, answers)))
    moodle = tmp / "moodle"
    for folder, answers in MOODLE.items():
        (moodle / folder).mkdir(parents=True)
        nbformat.write(fill(rel, answers), moodle / folder / f"{LESSON}.ipynb")
    for step in (["collect", str(canvas), str(moodle)], ["--jobs", "2", "autograde", LESSON],
                 ["feedback", "--zip", LESSON]):
        proc = grade_py("--course", str(root), *step)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, proc.stdout


def test_the_class_is_collected_and_graded(lms_class):
    root, _ = lms_class
    assert sorted(p.name for p in (root / "submitted").iterdir()) == sorted(SCORES)


def test_one_zip_per_lesson_named_as_each_lms_matches_it_back(lms_class):
    root, out = lms_class
    dest = root / "lms" / f"{LESSON}_feedback.zip"
    assert f"wrote {dest}: 3 feedback pages" in out
    with zipfile.ZipFile(dest) as z:
        names = sorted(z.namelist())
        pages = {name: z.read(name) for name in names}
    assert names == sorted([f"doejane_12345_67999_{LESSON}.html", f"roelee_23456_78901_{LESSON}.html",
                            f"Sam-Smith_345_assignfeedback_file/{LESSON}.html"])
    assert canvas_reads(names[1]) == ("12345", "67999")  # the graded (newer) file, not the student id's
    assert canvas_reads(names[2]) == ("23456", "78901")
    assert moodle_reads(names[0]) == ("345", "assignfeedback", "file")
    for name, student in zip(names, ["Sam_Smith_345_assignsubmission_file", "doejane_12345", "roelee_23456"]):
        assert pages[name] == (root / "feedback" / student / LESSON / f"{LESSON}.html").read_bytes()


def test_export_has_no_column_for_a_lesson_nobody_took(lms_class, tmp_path):
    root, _ = lms_class
    proc = grade_py("--course", str(root), "export", "--to", str(tmp_path / "all.csv"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = list(csv.DictReader((tmp_path / "all.csv").open()))
    assert list(rows[0]) == ["student_id", LESSON, "total", "max_total", "flags"]
    assert {r["student_id"]: float(r["total"]) for r in rows} == SCORES
    assert {r["max_total"] for r in rows} == {"4"}


def test_export_of_named_lessons_leaves_out_those_never_taken_or_released(lms_class, tmp_path):
    root, _ = lms_class
    proc = grade_py("--course", str(root), "export", LESSON, OTHER, "09_not_a_lesson",
                    "--to", str(tmp_path / "named.csv"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"NOT EXPORTED {OTHER}: nobody submitted it" in proc.stdout
    assert "NOT EXPORTED 09_not_a_lesson: not in the gradebook: never released" in proc.stdout
    rows = list(csv.DictReader((tmp_path / "named.csv").open()))
    assert list(rows[0]) == ["student_id", LESSON, "total", "max_total", "flags"]
    assert {r["student_id"]: float(r[LESSON]) for r in rows} == SCORES
    proc = grade_py("--course", str(root), "export", OTHER, "--to", str(tmp_path / "none.csv"))
    assert proc.returncode == 1 and "nothing to export" in proc.stdout
    assert not (tmp_path / "none.csv").exists()


def test_the_zip_names_pages_it_could_not_add_and_follows_no_link(tmp_path):
    from heads_lms import write_feedback_zip

    feedback = tmp_path / "feedback"
    for student in ("ann_11_22", "ben_33_44"):
        (feedback / student / LESSON).mkdir(parents=True)
    (feedback / "ann_11_22" / LESSON / f"{LESSON}.html").write_text("ann's page")
    (tmp_path / "solution.html").write_text("the solutions")
    (feedback / "ben_33_44" / LESSON / f"{LESSON}.html").symlink_to(tmp_path / "solution.html")
    dest = tmp_path / "lms" / f"{LESSON}_feedback.zip"
    written, missing = write_feedback_zip(feedback, LESSON, [LESSON], ["ann_11_22", "ben_33_44", "cy"], dest)
    assert written == [f"ann_11_22_{LESSON}.html"]
    assert missing == [("ben_33_44", LESSON), ("cy", LESSON)]
    with zipfile.ZipFile(dest) as z:
        assert z.namelist() == written and z.read(written[0]) == b"ann's page"
