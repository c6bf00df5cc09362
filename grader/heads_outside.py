"""Grading outside the student's process (nbgrader autograde preprocessors; headlab/grading.py).

nbgrader scores a test cell by whether its output has an error, and the output comes from the
student's kernel, which the student controls. These two steps take the scoring away from it:

- `RunAnswersOnly` (before `HeadsExecute`) records the lesson's checks once on the instructor's
  solution (cached under `recordings`), writes only the *inputs* of every call into the student's
  folder, and replaces each test cell, for the run, by `respond(grade_id, globals())`: the kernel calls
  the student's answers on those inputs and writes the results as data. No hidden case, expected
  value or check runs in the kernel.
- `JudgeOutsideKernel` (after the kernel is gone and `ScrubWorkdir` has cleaned the folder) replays
  each test cell's recorded checks in this process on the student's results, and writes the outcome
  as the cell's only output: the check's message, or its pass lines. Whatever the kernel printed in a
  test cell is discarded; the original cell source is put back for the feedback. The verdicts, with
  the mistake each failure names, are kept in `<course>/verdicts/` for the class report.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import fcntl
import importlib.util
import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer, Unicode

if TYPE_CHECKING:
    from headlab.grading import Verdict

HEADLAB = Path(importlib.util.find_spec("headlab").origin).resolve().parent


def _grading():
    """headlab.grading, imported when a step uses it: it imports torch (2-3 s), which nbgrader's
    other commands (generate_assignment, generate_feedback, export) load this module without needing."""
    from headlab import grading
    return grading
RESPOND = ("# Graded outside this notebook: your answers run on the grader's inputs, and the grader compares.\n"
           "__import__('headlab.grading', fromlist=['respond']).respond({grade_id!r}, globals())\n")
_STATE = "heads_outside"


def _grade_cells(nb):
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and meta.get("grade_id"):
            yield meta["grade_id"], cell


def _remove(path: Path) -> None:
    """Remove a file, link or folder at `path` without following links."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)   # rmtree does not follow links inside
    else:
        path.unlink()


class RunAnswersOnly(NbGraderPreprocessor):
    recordings = Unicode(
        os.path.join(os.path.expanduser("~"), ".cache", "heads", "recordings"),
        help="Folder for the recordings of each lesson's checks on its solution, reused while the "
             "solution notebook and headlab's checks are unchanged."
    ).tag(config=True)
    record_timeout = Integer(
        600, help="Seconds a solution notebook may take while its checks are recorded."
    ).tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        source = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"])) \
            / f"{info['notebook']}.ipynb"
        book = self.recording(source)
        grading = _grading()
        folder = Path(resources["metadata"]["path"]) / grading.FOLDER
        for name in (grading.FOLDER, grading.ANSWERS):   # whatever the submission brought there
            _remove(folder.parent / name)
        folder.mkdir()
        (folder / "calls.json").write_text(json.dumps(grading.kernel_view(book)))
        sources = {}
        for grade_id, cell in _grade_cells(nb):
            sources[grade_id] = cell.source
            cell.source = RESPOND.format(grade_id=grade_id)
        resources[_STATE] = {"book": book, "sources": sources}
        return nb, resources

    def recording(self, source: Path) -> dict:
        """The checks of `source`'s test cells, recorded on the solution (cached)."""
        target = cached_recording(Path(self.recordings), source)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.parent / f"{source.stem}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)    # parallel autograde processes record a lesson once
            if not target.exists():
                self.log.info("Recording the checks of %s on its solution", source)
                book = record_solution(source, self.record_timeout)
                tmp = target.with_suffix(".tmp")
                tmp.write_text(json.dumps(book))
                os.replace(tmp, target)
        return json.loads(target.read_text())


def cached_recording(recordings: Path, source: Path) -> Path:
    """Where the recording of `source` is kept in `recordings`: named by the solution notebook and the
    checks it was recorded with, so that a change to either records again."""
    key = hashlib.sha256(source.read_bytes())
    for path in sorted([HEADLAB / "grading.py", *(HEADLAB / "checks").glob("*.py")]):
        key.update(path.name.encode() + path.read_bytes())
    return recordings / f"{source.stem}-{key.hexdigest()[:20]}.json"


def record_solution(source: Path, timeout: int) -> dict:
    """Run the solution notebook with every test cell's checks recorded; the recording."""
    from nbclient import NotebookClient

    grading = _grading()
    nb = nbformat.read(source, as_version=4)
    for grade_id, cell in _grade_cells(nb):
        cell.source = grading.recorded_source(grade_id, cell.source)
    with tempfile.TemporaryDirectory(prefix="heads-record-") as tmp:
        book_path = Path(tmp) / "book.json"
        nb.cells.append(nbformat.v4.new_code_cell(
            f"import headlab.grading as _heads_grading\n_heads_grading.save_book({str(book_path)!r})"))
        env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            NotebookClient(nb, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": tmp}}).execute()
        finally:
            for k, v in saved.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        return json.loads(book_path.read_text())


class JudgeOutsideKernel(NbGraderPreprocessor):
    max_answer_bytes = Integer(
        16 * 1024**2, help="Largest answers file a test cell may leave; a larger one is not read (score 0)."
    ).tag(config=True)

    def preprocess(self, nb, resources):
        state = resources.pop(_STATE, None)
        if state is None:
            return nb, resources
        grading = _grading()
        workdir = Path(resources["metadata"]["path"])
        answers = workdir / grading.ANSWERS
        verdicts = {}
        for grade_id, cell in _grade_cells(nb):
            kernel_said = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            verdict = self.judge(answers, grade_id, state["book"].get(grade_id, []))
            if not verdict.passed and verdict.error == "NoAnswers" and kernel_said:
                why = f"{kernel_said[-1].get('ename', '')}: {kernel_said[-1].get('evalue', '')}"[:2000]
                verdict.message += f"\nThe cell reported: {why}"
            cell.outputs = [_output(verdict)]
            cell.source = state["sources"].get(grade_id, cell.source)
            verdicts[grade_id] = verdict.as_dict()
        self.keep(resources["nbgrader"], verdicts)
        _remove(workdir / grading.FOLDER)
        _remove(answers)
        return nb, resources

    def keep(self, info: dict, verdicts: dict) -> None:
        """The verdicts, by test cell, for the class report (`grade.py report`)."""
        root = Path(CourseDirectory(config=self.config).root) / "verdicts" / info["assignment"]
        target = root / info["student"] / f"{info['notebook']}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(verdicts, indent=1))
        os.replace(tmp, target)

    def judge(self, folder: Path, grade_id: str, entries: list) -> Verdict:
        grading = _grading()
        if not entries:   # a test cell that runs no check would give everyone full marks
            self.log.error("Test cell %s ran no check on the solution: nothing to grade it by", grade_id)
            return grading.Verdict(False, error="GraderError", message=(
                f"{grade_id} runs no check, so the grader cannot score it; your instructor has been told"))
        try:
            answers = self.read(folder / f"{grade_id}.json")
        except FileNotFoundError:
            return grading.Verdict(False, error="NoAnswers", message=(
                "the grader got no answers from this cell: it did not run to the end (an error in an "
                "earlier cell, the time limit, or the kernel died)"))
        except (ValueError, OSError, RecursionError) as err:   # JSON nested deeper than the parser goes
            return grading.Verdict(False, error="BadAnswers",
                                   message=f"the grader could not read the answers this cell returned: {err}")
        try:
            return grading.judge(entries, answers)
        except grading.GraderError as err:
            self.log.error("Grader error on %s: %s", grade_id, err)
            return grading.Verdict(False, error="GraderError", message=(
                f"the grader failed on this cell ({err}); your instructor has been told"))
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as err:
            return grading.Verdict(False, error="BadAnswers", message=(
                f"the grader could not read the answers this cell returned ({type(err).__name__}: {err})"))

    def read(self, path: Path) -> list:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ValueError("not a regular file")
            data = f.read(self.max_answer_bytes + 1)
        if len(data) > self.max_answer_bytes:
            raise ValueError(f"larger than {self.max_answer_bytes} bytes")
        answers = json.loads(data)
        if not isinstance(answers, list) or not all(isinstance(a, dict) for a in answers):
            raise ValueError("not a list of answers")
        return answers


def _output(verdict: Verdict) -> NotebookNode:
    if verdict.passed:
        return NotebookNode(output_type="stream", name="stdout",
                            text=f"{verdict.printed}(graded outside your notebook)\n")
    ename = verdict.error if verdict.error.isidentifier() else "CheckFailed"
    evalue = f"{verdict.printed}{verdict.message}"
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"{ename}: {evalue}"])
