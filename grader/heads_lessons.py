"""What a lesson is, in one place, for the grader, the developer scripts and the tests.

A lesson is a folder `solutions/NN_name/` holding one notebook `NN_name.ipynb` (the only place a notebook
is written), released without its solutions and hidden tests to `lessons/NN_name/`. Its checks are
`headlab.checks.chNN`, its wrong implementations `tests/grading/test_grade_NN_name.py`. In a notebook, an
exercise is an answer cell (nbgrader `solution`, grade_id = the function's name) and its test cell
(`grade`, grade_id `test_<name>`).

Imported as `heads_lessons`: grader/'s modules are installed (`-e ./grader` in the requirements, see
grader/pyproject.toml), so nbgrader's config, grader/'s scripts, Dask workers and tests find it by name; as
`grader.heads_lessons` by `python -m dev.<script>` from the repository.
"""
from __future__ import annotations

import atexit
import functools
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "solutions"
LESSONS = REPO / "lessons"
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


@dataclass(frozen=True)
class Lesson:
    name: str   # the folder and notebook name, e.g. "00_representations"

    @property
    def number(self) -> str:
        return self.name[:2]

    @property
    def checks(self) -> str:
        return f"headlab.checks.ch{self.number}"

    def path(self, root: Path = SOLUTIONS) -> Path:
        """The notebook in `root` (solutions/ by default, lessons/ or a course's release folder)."""
        return Path(root) / self.name / f"{self.name}.ipynb"

    def read(self, root: Path = SOLUTIONS):
        return nbformat.read(self.path(root), as_version=4)

    def exercises(self) -> list[str]:
        return [gid for gid, c in graded_cells(self.read()).items() if c.metadata["nbgrader"].get("solution")]

    def answers(self, root: Path = SOLUTIONS) -> dict[str, str]:
        """exercise → its answer cell: the solution (markers removed), or as released from `root`."""
        return {gid: strip_solution_markers(c.source) for gid, c in graded_cells(self.read(root)).items()
                if c.metadata["nbgrader"].get("solution")}

    def imports(self) -> str:
        """The lines of its code cells (answers left out) that import a module or set an int constant
        (`NUM_SPECIAL = 5`): what its answers and tests use, without running the lesson."""
        wanted = re.compile(r"(import|from) \S+|[A-Z][A-Z_0-9]* = \d+\b")
        return "\n".join(line for cell in self.read().cells if cell.cell_type == "code"
                         and not cell.metadata.get("nbgrader", {}).get("solution")
                         for line in cell.source.splitlines() if wanted.match(line))

    def solution_namespace(self, *names: str) -> dict:
        """The solution's answer cells (all, or those of `names`) run in a fresh namespace that has what
        every lesson's first cells import (torch, nn, F, math): the reference code for parity tests."""
        import math

        import torch
        import torch.nn.functional as F
        from torch import nn

        namespace = {"torch": torch, "nn": nn, "F": F, "math": math}
        for grade_id, source in self.answers().items():
            if not names or grade_id in names:
                exec(compile(source, f"{self.name}:{grade_id}", "exec"), namespace)
        return namespace


def all_lessons() -> list[Lesson]:
    return [Lesson(p.name) for p in sorted(SOLUTIONS.iterdir())
            if p.is_dir() and Lesson(p.name).path().exists()]


def lesson(name: str) -> Lesson:
    """A lesson by its folder name or its number ("02")."""
    found = [x for x in all_lessons() if name in (x.name, x.number)]
    if not found:
        raise KeyError(f"no lesson {name!r}; there are {[x.name for x in all_lessons()]}")
    return found[0]


def graded_cells(nb) -> dict[str, dict]:
    """grade_id → cell, for every cell nbgrader knows (answers, tests, locked cells)."""
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}


def strip_solution_markers(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if line.strip() not in SOLUTION_MARKERS)


def fill(release_nb, answers: dict[str, str]):
    """A student's copy of a released notebook with `answers` ({exercise: code}) typed into its answer cells."""
    nb = nbformat.from_dict(json.loads(json.dumps(release_nb)))
    cells = graded_cells(nb)
    for grade_id, code in answers.items():
        cells[grade_id].source = code
    return nb


def write_course(root: Path, extra_config: str = "") -> Path:
    """nbgrader_config.py for a temporary course in `root`: the course's own configuration, its own
    folders and gradebook, lessons released from solutions/; then `extra_config`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(textwrap.dedent(f"""\
        c = get_config()
        load_subconfig({str(REPO / 'grader' / 'nbgrader_config.py')!r})
        c.CourseDirectory.root = {str(root)!r}
        c.CourseDirectory.db_url = {'sqlite:///' + str(root / 'gradebook.db')!r}
        c.CourseDirectory.source_directory = {str(SOLUTIONS)!r}
        c.CourseDirectory.release_directory = {str(root / 'release')!r}
    """) + textwrap.dedent(extra_config))
    return root


def make_course(root: Path, names=(), extra_config: str = "") -> Path:
    """A temporary nbgrader course in `root` (write_course) with the lessons `names` released into it and
    entered in its gradebook by nbgrader's own generate_assignment, run in this process as release.py runs
    it (an `nbgrader` command costs 2 core-seconds of start-up)."""
    write_course(root, extra_config)
    shutil.copy(_empty_gradebook(), root / "gradebook.db")
    generate_assignments(list(names), course_config(root))
    return root


def course_config(root: Path):
    """The configuration nbgrader reads for the course in `root` (its nbgrader_config.py)."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()


def python_tools_on_path() -> None:
    """Put this Python's own scripts folder first on PATH: nbgrader runs the `alembic` command by name, and
    a venv used without activating it (`.venv/bin/python grader/release.py`) is not on PATH. Without
    this, a new gradebook fails, and `generate_assignment --force` has already removed the lesson."""
    scripts = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != scripts:
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")


def nbgrader_api(config):
    """nbgrader's own API (what its commands and the formgrader run) on the course `config` describes."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    python_tools_on_path()
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    api.log.setLevel(logging.WARNING)
    return api


def generate_assignments(names: list[str], config) -> None:
    """`nbgrader generate_assignment NAME --force` for each of `names`, in one process, with `config`."""
    api = nbgrader_api(config)
    for name in names:
        result = api.generate_assignment(name, force=True)
        if not result["success"]:
            raise RuntimeError(f"generate_assignment {name} failed:\n{result['error']}\n{result['log']}")


@functools.lru_cache(maxsize=None)
def _empty_gradebook() -> Path:
    """An empty gradebook made by nbgrader, once per process. A new gradebook runs the `alembic` command to
    stamp its schema version (2 core-seconds); a course made here starts from a copy instead."""
    from nbgrader.api import Gradebook

    folder = Path(tempfile.mkdtemp(prefix="heads-gradebook-"))
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}"):
        pass
    atexit.register(shutil.rmtree, folder, True)
    return folder / "gradebook.db"
