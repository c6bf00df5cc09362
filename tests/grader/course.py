"""A temporary nbgrader course for the grader tests: the course's own configuration
(grader/nbgrader_config.py), its own folders and gradebook, lessons released from solutions/."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat

import heads_lessons as lessons
from harness import feedback_text, fill
from replay import HIDDEN_SEED
from heads_lessons import REPO, lesson

GRADER = REPO / "grader"

LESSON = "00_representations"  # the lesson the bad-submission cases are written against


def make_course(root: Path, names=(LESSON,), extra_config: str = "") -> Path:
    """A course in `root` that uses the course configuration, then `extra_config`; lessons released. Its
    hidden seed is the tests' own (a run's fresh seed would record every lesson again for every command)."""
    return lessons.make_course(root, names, f"c.RunAnswersOnly.hidden_seed = {HIDDEN_SEED}\n"
                               + textwrap.dedent(extra_config))


def nbgrader(root: Path, *args: str, env=None, check=True) -> str:
    import os
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, capture_output=True,
                          text=True, timeout=900, env={**os.environ, **(env or {})})
    out = proc.stdout + proc.stderr
    if check and proc.returncode != 0:
        raise AssertionError(f"nbgrader {' '.join(args)} failed ({proc.returncode}):\n{out[-5000:]}")
    return out


def grade_py(*args: str, env=None) -> subprocess.CompletedProcess:
    import os
    return subprocess.run([sys.executable, str(GRADER / "grade.py"), *args], capture_output=True,
                          text=True, timeout=900, env={**os.environ, **(env or {})})


def release_nb(root: Path, lesson: str = LESSON):
    return nbformat.read(root / "release" / lesson / f"{lesson}.ipynb", as_version=4)


def solution_answers(name: str = LESSON) -> dict[str, str]:
    return lesson(name).answers()


def submit(root: Path, student: str, nb, lesson: str = LESSON, name: str | None = None) -> Path:
    """Put `nb` (a notebook, a dict, or raw text) where nbgrader expects a submission."""
    target = root / "submitted" / student / lesson / (name or f"{lesson}.ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(nb, str):
        target.write_text(nb)
    elif isinstance(nb, nbformat.NotebookNode):
        nbformat.write(nb, target)
    else:
        target.write_text(json.dumps(nb))
    return target


def looping(padding_mask: str) -> str:
    """Lesson 00's `padding_mask` answer made to never return. It sleeps rather than spins: the grader
    interrupts both alike (test_execute_limits.py spins), and a spinning loop would take a core from the
    tests running beside it for the cell time limit, in every cell that calls it."""
    return padding_mask.replace("    positions =", "    import time\n    while True:\n        time.sleep(0.1)\n"
                                                   "    positions =")


def colab_saved(nb, lesson: str = LESSON) -> dict:
    """`nb` as Colab's "Download .ipynb" writes it: nbformat 4.0 (no cell ids), Colab's notebook
    metadata (its name "Copy of …" from "Save a copy in Drive"), an id in every cell's metadata."""
    colab = json.loads(nbformat.writes(nb))
    colab["nbformat_minor"] = 0
    colab["metadata"] = {"colab": {"provenance": [], "name": f"Copy of {lesson}.ipynb"},
                         "kernelspec": {"name": "python3", "display_name": "Python 3"},
                         "language_info": {"name": "python"}}
    for i, cell in enumerate(colab["cells"]):
        cell.pop("id", None)
        cell["metadata"]["id"] = f"colab{i:04d}"
        if cell["cell_type"] == "code":
            cell["metadata"]["outputId"] = f"out{i:04d}"
    return colab


def scores(root: Path, lesson: str = LESSON) -> dict[str, dict]:
    """{student: {"score": s, "cells": {grade_id: score}}} from the gradebook."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for sub in gb.find_assignment(lesson).submissions:
            nb = sub.notebooks[0]
            out[sub.student.id] = {"score": nb.score, "cells": {g.name: g.score for g in nb.grades}}
    return out


def feedback(root: Path, student: str, lesson: str = LESSON) -> str:
    return feedback_text(root / "feedback" / student / lesson / f"{lesson}.html")


# A student on a hub (grader/JUPYTERHUB.md): on Zero to JupyterHub every single-user server runs as the OS
# user `jovyan`, and nbgrader then names the submission after JUPYTERHUB_USER.
AS_JOVYAN = ("import sys, nbgrader.utils as u; u.get_osusername = lambda: 'jovyan'; "
             "from nbgrader.apps.nbgraderapp import main; sys.argv[0] = 'nbgrader'; main()")


def hub_course(tmp: Path, lesson: str = LESSON) -> tuple[Path, Path]:
    """(course root, exchange folder) in `tmp`: a course whose nbgrader uses a temporary exchange,
    with `lesson` released into it (`nbgrader release_assignment`)."""
    exchange = tmp / "exchange"
    exchange.mkdir()
    exchange.chmod(0o777)
    exchange_config = f"\nc.Exchange.root = {str(exchange)!r}\nc.Exchange.path_includes_course = True\n"
    root = make_course(tmp / "course", names=(lesson,), extra_config=exchange_config)
    nbgrader(root, "release_assignment", lesson, "--force")
    return root, exchange


def student_home(tmp: Path, exchange: Path, student: str) -> Path:
    """`student`'s own home folder in `tmp`, with an nbgrader configuration that uses `exchange`."""
    home = tmp / "home" / student
    home.mkdir(parents=True)
    (home / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\nc.Exchange.path_includes_course = True\n"
        'c.CourseDirectory.course_id = "heads"\n')
    return home


def student_nbgrader(home: Path, student: str, *args: str) -> str:
    """`nbgrader ARGS` as `student` on the hub, run from their `home` (output; fails the test on error)."""
    import os
    env = {**os.environ, "JUPYTERHUB_USER": student, "HOME": str(home)}
    proc = subprocess.run([sys.executable, "-c", AS_JOVYAN, *args], cwd=home, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


__all__ = ["LESSON", "REPO", "fill", "looping", "make_course", "nbgrader", "grade_py", "release_nb",
           "solution_answers", "submit", "colab_saved", "scores", "feedback",
           "hub_course", "student_home", "student_nbgrader"]
