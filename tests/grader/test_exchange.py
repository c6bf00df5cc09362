"""A class on a JupyterHub: nbgrader's exchange round trip through a temporary exchange folder.

release_assignment (instructor) → fetch_assignment → submit (four students, each in their own home
folder) → collect → autograde (course configuration) → `grade.py feedback` → release_feedback →
fetch_feedback (each student). The students are simulated as on Zero to JupyterHub, where every
single-user server runs as the OS user `jovyan` and nbgrader names the submission after
JUPYTERHUB_USER: their nbgrader sees `jovyan` as the OS user. One student (dave) replaced his
submission's secret by a link to a file outside his folder: it must not be read, and his feedback,
which cannot be released, must not stop the release of his classmates' (nbgrader's own
release_feedback stops at the first student without a secret).
"""
from __future__ import annotations

import os

import nbformat
import pytest

from course import (LESSON, fill, grade_py, hub_course, nbgrader, scores, solution_answers, student_home,
                    student_nbgrader)

STUDENTS = {"alice": "all", "bob": "padding_mask", "carol": None, "dave": "all"}  # what each one answers
HOSTILE = "dave"  # his submitted secret is a link to a file outside his folder


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exchange")
    root, exchange = hub_course(tmp)
    sol = solution_answers()
    for student, answers in STUDENTS.items():
        home = student_home(tmp, exchange, student)
        student_nbgrader(home, student, "fetch_assignment", LESSON, "--course", "heads")
        path = home / "heads" / LESSON / f"{LESSON}.ipynb"  # path_includes_course
        nb = nbformat.read(path, as_version=4)
        if answers == "all":
            nb = fill(nb, sol)
        elif answers:
            nb = fill(nb, {answers: sol[answers]})
        nbformat.write(nb, path)
        student_nbgrader(home, student, "submit", LESSON, "--course", "heads")
    nbgrader(root, "collect", LESSON)
    outside = tmp / "instructor_only.txt"
    outside.write_text("not for students")
    secret = root / "submitted" / HOSTILE / LESSON / "submission_secret.txt"
    secret.unlink()
    secret.symlink_to(outside)
    nbgrader(root, "autograde", LESSON, "--force")
    return root, scores(root), tmp


@pytest.fixture(scope="module")
def feedback_round_trip(round_trip):
    """`grade.py feedback`, `nbgrader release_feedback` (instructor), `nbgrader fetch_feedback` (each
    student): {student: [feedback pages in their home]}, the instructor's output."""
    root, _, tmp = round_trip
    proc = grade_py("--course", str(root), "feedback", LESSON)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    released = nbgrader(root, "release_feedback", LESSON)
    received = {}
    for student in STUDENTS:
        home = tmp / "home" / student
        student_nbgrader(home, student, "fetch_feedback", LESSON, "--course", "heads")
        received[student] = sorted((home / "heads" / LESSON / "feedback").glob(f"*/{LESSON}.html"))
    return root, received, proc.stdout + released


def test_every_student_comes_back_through_the_exchange(round_trip):
    root, got, _ = round_trip
    assert sorted(got) == sorted(STUDENTS)
    for student in STUDENTS:
        assert (root / "submitted" / student / LESSON / f"{LESSON}.ipynb").exists()


def test_each_submission_is_autograded(round_trip):
    _, got, _ = round_trip
    assert got["alice"]["score"] == 4
    assert got["bob"]["cells"] == {"test_padding_mask": 2, "test_causal_mask": 0}
    assert got["carol"]["score"] == 0
    assert got["dave"]["score"] == 4


def test_each_student_fetches_their_own_feedback(feedback_round_trip):
    root, received, _ = feedback_round_trip
    for student in sorted(set(STUDENTS) - {HOSTILE}):
        assert len(received[student]) == 1, (student, received[student])
        page = received[student][0].read_bytes()
        assert page == (root / "feedback" / student / LESSON / f"{LESSON}.html").read_bytes()


def test_a_secret_that_is_a_link_is_not_followed_and_stops_no_one(feedback_round_trip):
    root, received, out = feedback_round_trip
    folder = root / "feedback" / HOSTILE / LESSON
    assert (folder / f"{LESSON}.html").exists() and received[HOSTILE] == []
    assert not (folder / "submission_secret.txt").exists()
    assert f"PROBLEM {HOSTILE}/{LESSON}: submission_secret.txt (a link, not a plain file) not copied" in out
    assert f"Not released: {folder} has no submission_secret.txt" in out


def test_a_release_record_is_read_only_as_a_short_plain_file_inside_the_folder(tmp_path):
    """`read_record` (what `grade.py feedback` copies for release_feedback): no link followed at any
    level below the submitted folder, nothing but one short line from a regular file."""
    from heads_exchange import RecordRefused, read_record

    outside = tmp_path / "outside"
    (outside / LESSON).mkdir(parents=True)
    (outside / LESSON / "timestamp.txt").write_text("2026-01-01 00:00:00 UTC")
    base = tmp_path / "submitted"
    lesson = base / "alice" / LESSON
    lesson.mkdir(parents=True)
    (lesson / "timestamp.txt").write_text("2026-01-02 00:00:00 UTC")
    assert read_record(str(base), ("alice", LESSON, "timestamp.txt")) == "2026-01-02 00:00:00 UTC"
    assert read_record(str(base), ("alice", LESSON, "submission_secret.txt")) is None  # an LMS hand-in
    (base / "bob").symlink_to(outside, target_is_directory=True)              # a linked student folder
    (base / "carol").mkdir()
    (base / "carol" / LESSON).symlink_to(outside / LESSON)                     # a linked lesson folder
    (lesson / "link.txt").symlink_to(outside / LESSON / "timestamp.txt")       # a linked file
    os.mkfifo(lesson / "fifo.txt")                                             # would block a read
    (lesson / "big.txt").write_text("0" * 4097)
    (lesson / "lines.txt").write_text("2026\nPROBLEM forged")
    os.link(outside / LESSON / "timestamp.txt", lesson / "hard.txt")
    cases = [("bob", LESSON, "timestamp.txt"), ("carol", LESSON, "timestamp.txt"),
             ("alice", LESSON, "link.txt"), ("alice", LESSON, "fifo.txt"), ("alice", LESSON, "big.txt"),
             ("alice", LESSON, "lines.txt"), ("alice", LESSON, "hard.txt"), ("..", "outside", "x"),
             ("alice", "../../outside", "timestamp.txt")]
    for parts in cases:
        with pytest.raises(RecordRefused):
            read_record(str(base), parts)
