"""A class on a JupyterHub: nbgrader's exchange round trip through a temporary exchange folder.

release_assignment (instructor) → fetch_assignment → submit (three students, each in their own home
folder) → collect → autograde (course configuration). The students are simulated as on Zero to
JupyterHub, where every single-user server runs as the OS user `jovyan` and nbgrader names the
submission after JUPYTERHUB_USER: their nbgrader sees `jovyan` as the OS user.
"""
from __future__ import annotations

import os
import textwrap

import subprocess
import sys

import nbformat
import pytest

from course import LESSON, fill, make_course, nbgrader, scores, solution_answers

AS_JOVYAN = ("import sys, nbgrader.utils as u; u.get_osusername = lambda: 'jovyan'; "
             "from nbgrader.apps.nbgraderapp import main; sys.argv[0] = 'nbgrader'; main()")


def student_nbgrader(home, student, *args):
    env = {**os.environ, "JUPYTERHUB_USER": student, "HOME": str(home)}
    proc = subprocess.run([sys.executable, "-c", AS_JOVYAN, *args], cwd=home, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr

STUDENTS = {"alice": "all", "bob": "padding_mask", "carol": None}  # what each one answers


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exchange")
    exchange = tmp / "exchange"
    exchange.mkdir()
    os.chmod(exchange, 0o777)
    exchange_config = f"\nc.Exchange.root = {str(exchange)!r}\nc.Exchange.path_includes_course = True\n"
    root = make_course(tmp / "course", extra_config=exchange_config)
    nbgrader(root, "release_assignment", LESSON, "--force")
    sol = solution_answers()
    for student, answers in STUDENTS.items():
        home = tmp / "home" / student
        home.mkdir(parents=True)
        (home / "nbgrader_config.py").write_text(textwrap.dedent(f"""\
            c = get_config()
            c.Exchange.root = {str(exchange)!r}
            c.Exchange.path_includes_course = True
            c.CourseDirectory.course_id = "heads"
        """))
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
    nbgrader(root, "autograde", LESSON, "--force")
    return root, scores(root)


def test_every_student_comes_back_through_the_exchange(round_trip):
    root, got = round_trip
    assert sorted(got) == sorted(STUDENTS)
    for student in STUDENTS:
        assert (root / "submitted" / student / LESSON / f"{LESSON}.ipynb").exists()


def test_each_submission_is_autograded(round_trip):
    _, got = round_trip
    assert got["alice"]["score"] == 4
    assert got["bob"]["cells"] == {"test_padding_mask": 2, "test_causal_mask": 0}
    assert got["carol"]["score"] == 0
