"""A temporary nbgrader course for the grader tests: the course's own configuration
(grader/nbgrader_config.py), its own folders and gradebook, lessons released from solutions/."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[2]
GRADER = REPO / "grader"
SOLUTIONS = REPO / "solutions"
sys.path.insert(0, str(GRADER))
sys.path.insert(0, str(REPO / "tests" / "grading"))
sys.path.insert(0, str(REPO / "tests"))  # lab_server

from harness import feedback_text, fill, nbgrader_cells, strip_solution_markers  # noqa: E402

LESSON = "00_representations"  # the lesson the bad-submission cases are written against


def make_course(root: Path, lessons=(LESSON,), extra_config: str = "") -> Path:
    """A course in `root` that uses the course configuration, then `extra_config`; lessons released."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(textwrap.dedent(f"""\
        c = get_config()
        load_subconfig({str(GRADER / 'nbgrader_config.py')!r})
        c.CourseDirectory.root = {str(root)!r}
        c.CourseDirectory.db_url = {'sqlite:///' + str(root / 'gradebook.db')!r}
        c.CourseDirectory.source_directory = {str(SOLUTIONS)!r}
        c.CourseDirectory.release_directory = {str(root / 'release')!r}
    """) + textwrap.dedent(extra_config))
    for lesson in lessons:
        nbgrader(root, "generate_assignment", lesson, "--force")
    return root


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


def solution_answers(lesson: str = LESSON) -> dict[str, str]:
    nb = nbformat.read(SOLUTIONS / lesson / f"{lesson}.ipynb", as_version=4)
    return {gid: strip_solution_markers(c.source) for gid, c in nbgrader_cells(nb).items()
            if c.metadata["nbgrader"].get("solution")}


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


__all__ = ["LESSON", "REPO", "fill", "make_course", "nbgrader", "grade_py", "release_nb",
           "solution_answers", "submit", "colab_saved", "scores", "feedback"]
