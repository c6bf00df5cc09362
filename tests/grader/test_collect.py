"""Collecting: the file names students really submit, an LMS zip and a folder, nothing dropped silently."""
from __future__ import annotations

import zipfile

import nbformat
import pytest

from course import LESSON, fill, grade_py, make_course, release_nb, solution_answers
from heads_collect import match

NOTEBOOKS = ["03_sequence_head"]


@pytest.mark.parametrize("path, student, rank", [
    ("class/alice/03_sequence_head.ipynb", "alice", 0),
    ("class/alice_03_sequence_head.ipynb", "alice", 0),
    ("class/s1234567-03_sequence_head.ipynb", "s1234567", 0),
    ("class/bob/Copy of 03_sequence_head.ipynb", "bob", 1),
    ("class/bob/03_sequence_head (1).ipynb", "bob", 2),
    ("class/bob/03_sequence_head (2).ipynb", "bob", 3),
    ("class/carol - 03 Sequence Head - Copy.ipynb", "carol", 1),
    ("class/Copy of dave_03_sequence_head.ipynb", "dave", 1),
    ("class/course-export/erin.smith@uni.edu/03_sequence_head.ipynb", "erin.smith@uni.edu", 0),
    ("class/course-export/Frank Li/03_Sequence_Head.ipynb", "Frank_Li", 0),
])
def test_names_students_submit(path, student, rank):
    assert match(path, NOTEBOOKS) == (student, "03_sequence_head", rank)


@pytest.mark.parametrize("path, reason", [
    ("class/alice/Untitled.ipynb", "not a notebook of this lesson"),
    ("class/alice/data.csv", "not a notebook"),
    ("class/03_sequence_head.ipynb", "no student id"),
    ("class/alice/03_sequence_head_old_backup.ipynb", "text after the notebook name"),
])
def test_files_not_collected_say_why(path, reason):
    found = match(path, NOTEBOOKS)
    assert isinstance(found, str) and reason in found, found


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("collect")
    root = make_course(tmp / "course")
    rel = release_nb(root)
    sol = solution_answers()

    def nb(tag: str) -> str:
        book = fill(rel, sol)
        book.metadata["tag"] = tag  # to tell the copies apart afterwards
        return nbformat.writes(book)

    lms = tmp / "lms-download.zip"
    with zipfile.ZipFile(lms, "w") as z:
        z.writestr(f"alice/{LESSON}.ipynb", nb("alice"))
        z.writestr(f"bob/Copy of {LESSON}.ipynb", nb("bob-first"))
        z.writestr(f"bob/{LESSON} (1).ipynb", nb("bob-second"))
        z.writestr(f"carol_{LESSON}.ipynb", nb("carol"))
        z.writestr("dave - 00 Representations - Copy.ipynb", nb("dave"))
        z.writestr("erin/Untitled.ipynb", nb("erin-untitled"))
        z.writestr("erin/notes.txt", "my notes")
        z.writestr(f"{LESSON}.ipynb", nb("nobody"))
    folder = tmp / "downloads"
    (folder / "gina").mkdir(parents=True)
    (folder / f"frank_{LESSON}.ipynb").write_text(nb("frank"))
    (folder / "gina" / f"Copy of {LESSON}.ipynb").write_text(nb("gina"))
    proc = grade_py("--course", str(root), "collect", str(lms), str(folder))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, proc.stdout


def tag(root, student):
    path = root / "submitted" / student / LESSON / f"{LESSON}.ipynb"
    assert path.exists(), f"{student} not collected"
    return nbformat.read(path, as_version=4).metadata["tag"]


def test_every_student_is_collected(collected):
    root, out = collected
    for student in ("alice", "carol", "dave", "frank", "gina"):
        assert tag(root, student) == student
    assert sorted(p.name for p in (root / "submitted").iterdir()) == \
        ["alice", "bob", "carol", "dave", "frank", "gina"]


def test_the_latest_copy_wins_and_the_other_is_reported(collected):
    root, out = collected
    assert tag(root, "bob") == "bob-second"
    assert f"bob/Copy of {LESSON}.ipynb: an older copy" in out


def test_unmatched_files_are_reported_by_name(collected):
    root, out = collected
    report = (root / "downloaded" / "collect_report.txt").read_text()
    assert report.strip() == out.strip()
    not_collected = out.split("NOT COLLECTED")[1]
    for name in ("erin/Untitled.ipynb", "erin/notes.txt", f"lms-download/{LESSON}.ipynb"):
        assert name in not_collected, out
    assert "no student id" in not_collected and "not a notebook" in not_collected
    # nothing lost: every file is still in downloaded/
    extracted = root / "downloaded" / LESSON / "extracted"
    assert (extracted / "lms-download" / "erin" / "notes.txt").read_text() == "my notes"
