"""Grading outside the student's process (nbgrader autograde preprocessors; headlab/grading.py).

nbgrader scores a test cell by whether its output has an error, and the output comes from the
student's kernel, which the student controls. These two steps take the scoring away from it:

- `RunAnswersOnly` (before `HeadsExecute`) records the lesson's checks on the instructor's solution,
  once per hidden seed (cached under `recordings`), and replaces each test cell, for the run, by
  `respond(grade_id)` (RESPOND): the kernel calls the student's answers on the grader's inputs and
  writes the results as data. No hidden case, expected value or check runs in the kernel.
  - The hidden tests draw their inputs from `hidden_seed`, a fresh one for every grading run unless
    one is given, so knowing last run's inputs is worth nothing.
  - `AnswerCapture` works between cells (`HeadsExecute` calls it): just before a test cell runs, that
    cell's inputs, and only those, are put in the folder; when it ends, its answers are taken from its own
    output (what the kernel sent before the cell's end; nbclient reads no message of a cell after it) and
    the inputs removed. A result is kept as it was when its own cell ended: nothing a later cell or a
    callback of the kernel's event loop sends, and no earlier cell's code reading ahead, can change or
    see another cell's.
- `JudgeOutsideKernel` (after the kernel is gone and `ScrubWorkdir` has cleaned the folder) replays
  each test cell's recorded checks in this process on the results its cell left, and writes the outcome
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
import secrets
import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from heads_autograde import CELL_HOOKS, OVER_THE_CAP, answers_in
from heads_files import headlab, setting

if TYPE_CHECKING:
    from headlab.grading import Verdict

HEADLAB = Path(importlib.util.find_spec("headlab").origin).resolve().parent


# The lines that replace a test cell: they run headlab/fresh_kernel.py, whose fresh copy of the kernel side answers,
# so that what the notebook did to the imported headlab.kernel and codec changes nothing. They name nothing the
# notebook's namespace can rebind: an `import` statement finds `__import__` among the builtins, never in the
# notebook's globals (a red team defined `__import__` and `globals` at the top of a notebook), exec, compile and open
# are read from the builtins module, and the script takes the notebook's namespace from its caller's frame, not from
# a `globals()` call. The fresh copy's namespace is a dict the cell does not bind to a name: the learner's code
# that runs during the cell (a forward) cannot reach it through the notebook's globals. Rebinding `__builtins__` or
# an attribute of the builtins module is flagged (heads_flags).
RESPOND = ("# Graded outside this notebook: your answers run on the grader's inputs, and the grader compares.\n"
           "import builtins as _heads_builtins\n"
           "_heads_builtins.exec(\n"
           "    _heads_builtins.compile(_heads_builtins.open({script!r}).read(), {script!r}, 'exec'),\n"
           "    {{'__builtins__': _heads_builtins, '__name__': '__main__', "
           "'GRADE_ID': {grade_id!r}, 'FOLDER': {folder!r}, 'HEADLAB': {headlab!r}}})\n")


def respond_source(grade_id: str, folder: Path) -> str:
    """The source of test cell `grade_id` for the grading run, its inputs in `folder` (a full path)."""
    return RESPOND.format(grade_id=grade_id, folder=str(folder), headlab=str(HEADLAB),
                          script=str(HEADLAB / "fresh_kernel.py"))


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


_RUN_SEED = secrets.randbelow(2**31)   # a grading process's own seed, when none is configured


class RunAnswersOnly(NbGraderPreprocessor):
    recordings = setting(os.path.join(os.path.expanduser("~"), ".cache", "heads", "recordings"),
                         "Folder for the recordings of each lesson's checks on its solution, reused while "
                         "the solution notebook, headlab's checks and the hidden seed are unchanged.")
    record_timeout = setting(600, "Seconds a solution notebook may take while its checks are recorded.")
    hidden_seed = setting(-1, "Seed the hidden tests draw their inputs from "
                              "(headlab.grading.hidden_seed). -1: a fresh one for every grading run "
                              "(`grade.py autograde` picks one per run for the whole class; `nbgrader "
                              "autograde` one per process). Give one to grade again with the same inputs.")
    max_answer_bytes = setting(16 * 1024**2, "Largest answers file a test cell may leave; "
                                             "a larger one is not read (score 0).")
    keep_recordings = setting(8, "Recordings kept per lesson in `recordings` "
                                 "(the newest); older seeds' are removed.")

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        source = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"])) \
            / f"{info['notebook']}.ipynb"
        book = self.recording(source)
        codec, grading = headlab("codec"), headlab("grading")
        workdir = Path(resources["metadata"]["path"])
        for name in (codec.FOLDER, codec.ANSWERS):   # whatever the submission brought there
            _remove(workdir / name)
        sources = {}
        for grade_id, cell in _grade_cells(nb):
            sources[grade_id] = cell.source
            # the folder by its full path: a notebook that changed directory (os.chdir, %cd) still finds it
            cell.source = respond_source(grade_id, workdir.resolve() / codec.FOLDER)
        capture = AnswerCapture(workdir, grading.kernel_view(book), self.max_answer_bytes)
        resources[_STATE] = {"book": book, "sources": sources, "capture": capture}
        resources[CELL_HOOKS] = capture
        return nb, resources

    @property
    def seed(self) -> int:
        return self.hidden_seed if self.hidden_seed >= 0 else _RUN_SEED

    def recording(self, source: Path) -> dict:
        """The checks of `source`'s test cells, recorded on the solution with this run's seed (cached)."""
        target = cached_recording(Path(self.recordings), source, self.seed)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.parent / f"{source.stem}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)    # parallel autograde processes record a lesson once
            if not target.exists():
                self.log.info("Recording the checks of %s on its solution (hidden seed %d)", source, self.seed)
                book = record_solution(source, self.record_timeout, self.seed)
                tmp = target.with_suffix(".tmp")
                tmp.write_text(json.dumps(book))
                os.replace(tmp, target)
                _prune(target, self.keep_recordings)
            os.utime(target)   # in use: the newest are the ones kept
        return json.loads(target.read_text())


def _prune(target: Path, keep: int) -> None:
    """Remove all but the `keep` most recently used recordings of `target`'s lesson."""
    stem = target.name.split("-")[0]
    ours = sorted(target.parent.glob(f"{stem}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in ours[max(keep, 1):]:
        if old != target:
            old.unlink(missing_ok=True)


def cached_recording(recordings: Path, source: Path, seed: int) -> Path:
    """Where the recording of `source` with hidden seed `seed` is kept in `recordings`: named by the
    solution notebook, the checks it was recorded with and the seed, so that a change to any records again."""
    key = hashlib.sha256(source.read_bytes() + f"seed {seed}".encode())
    for path in sorted([HEADLAB / "grading.py", *(HEADLAB / "checks").glob("*.py")]):
        key.update(path.name.encode() + path.read_bytes())
    return recordings / f"{source.stem}-{key.hexdigest()[:20]}.json"


def record_solution(source: Path, timeout: int, seed: int) -> dict:
    """Run the solution notebook with every test cell's checks recorded, its hidden tests drawing from
    `seed`; the recording."""
    from nbclient import NotebookClient

    grading = headlab("grading")
    nb = nbformat.read(source, as_version=4)
    for grade_id, cell in _grade_cells(nb):
        cell.source = grading.recorded_source(grade_id, cell.source)
    with tempfile.TemporaryDirectory(prefix="heads-record-") as tmp:
        book_path = Path(tmp) / "book.json"
        nb.cells.append(nbformat.v4.new_code_cell(
            f"import headlab.grading as _heads_grading\n_heads_grading.save_book({str(book_path)!r})"))
        env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg",
               grading.SEED_VARIABLE: str(seed)}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            NotebookClient(nb, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": tmp}}).execute()
        finally:
            for k, v in saved.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        return json.loads(book_path.read_text())


class AnswerCapture:
    """A test cell's inputs in the student's folder only while that cell runs, and its answers read
    when it ends (called by `HeadsExecute` around every code cell).

    The folder is the kernel's to write, so nothing is left there between cells: `before` removes
    whatever is at `.heads_grader` and `.heads_answers` (files, links, folders), then writes this cell's
    inputs without following links; `after` reads this cell's answers without following links and
    removes both again. `answers` keeps, for each test cell, what its own run left: the list of
    answers, or the reason it could not be read."""

    def __init__(self, workdir: Path, view: dict, max_bytes: int):
        self.workdir, self.view, self.max_bytes = workdir, view, max_bytes
        self.answers: dict[str, list | Exception] = {}

    @staticmethod
    def grade_id(cell) -> str | None:
        meta = cell.metadata.get("nbgrader", {})
        return meta.get("grade_id") if cell.cell_type == "code" and meta.get("grade") else None

    def before(self, cell) -> None:
        grade_id = self.grade_id(cell)
        if grade_id not in self.view:
            return
        codec = headlab("codec")
        self.clear()
        folder = self.workdir / codec.FOLDER
        folder.mkdir()
        _write_new(folder, "calls.json", json.dumps({grade_id: self.view[grade_id]}))

    def after(self, cell, ended: bool = True, distrust: str | None = None) -> None:
        """From the executor: whether the cell `ended` by itself, not timed out, killed or dead, and why else its
        answers cannot be trusted (`distrust`: some of its messages were lost). respond's set comes last, so a set
        the notebook showed before it kept the cell from ending, or before a message lost on the way, could be the
        only one. A cell that did not end gives no answers, as one whose answer loops or kills the kernel would
        not have given respond's, and the feedback says why it did not end."""
        grade_id = self.grade_id(cell)
        if grade_id not in self.view:
            return
        mime = headlab("codec").ANSWERS_MIME
        given = answers_in(cell.get("outputs", []))
        # The results leave the notebook: the feedback shows the cell's checks, not the data they were judged on
        cell.outputs = [o for o in cell.get("outputs", []) if mime not in o.get("data", {})]
        if grade_id not in self.answers and not ended:
            self.answers[grade_id] = None
        if grade_id not in self.answers and given:   # a result, once given, stays what its cell left
            try:   # respond gives one; any other is code of the notebook's that ran in the cell, and says otherwise
                if distrust:
                    raise ValueError(distrust)
                if len(given) > 1:
                    raise ValueError(f"the cell gave {len(given)} sets of answers, where the grader's line gives one")
                self.answers[grade_id] = read_given(given[0]["data"][mime], grade_id, self.max_bytes)
            except (ValueError, TypeError, RecursionError) as err:   # JSON nested deeper than the parser goes
                self.answers[grade_id] = err
        self.clear()

    def clear(self) -> None:
        codec = headlab("codec")
        for name in (codec.FOLDER, codec.ANSWERS):
            _remove(self.workdir / name)


def _write_new(folder: Path, name: str, text: str) -> None:
    """Write a new file `name` in `folder`, following no link on the way (the kernel can write there)."""
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
        with os.fdopen(fd, "w") as f:
            f.write(text)
    finally:
        os.close(dfd)


def read_given(payload, grade_id: str, max_bytes: int) -> list:
    """The answers a test cell's output gave (respond's display data), at most `max_bytes` as JSON."""
    if isinstance(payload, dict) and OVER_THE_CAP in payload:
        raise ValueError("larger than the grader keeps")
    if not isinstance(payload, dict) or payload.get("grade_id") != grade_id:
        raise ValueError("not the answers of this cell")
    if "unsent" in payload:
        raise ValueError(f"the kernel did not send them: {str(payload['unsent'])[:200]}")
    if len(json.dumps(payload)) > max_bytes:
        raise ValueError(f"larger than {max_bytes} bytes")
    answers = payload.get("answers")
    if not isinstance(answers, list) or not all(isinstance(a, dict) for a in answers):
        raise ValueError("not a list of answers")
    return answers


class JudgeOutsideKernel(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        state = resources.pop(_STATE, None)
        resources.pop(CELL_HOOKS, None)
        if state is None:
            return nb, resources
        if headlab("checks.engine").grader_side() is None:   # the hidden cases' mistakes would go unnamed
            raise ImportError("heads_mistakes (what each mistake returns) is not importable in the grading process: "
                              "install the grader, `pip install -e ./grader`")
        verdicts = {}
        for grade_id, cell in _grade_cells(nb):
            kernel_said = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            verdict = self.judge(grade_id, state["book"].get(grade_id, []), state["capture"].answers.get(grade_id))
            if not verdict.passed and verdict.error == "NoAnswers" and kernel_said:
                why = f"{kernel_said[-1].get('ename', '')}: {kernel_said[-1].get('evalue', '')}"[:2000]
                verdict.message += f"\nThe cell reported: {why}"
            cell.outputs = [_output(verdict)]
            cell.source = state["sources"].get(grade_id, cell.source)
            verdicts[grade_id] = verdict.as_dict()
        self.keep(resources["nbgrader"], verdicts)
        state["capture"].clear()   # whatever the kernel wrote there after the last test cell
        return nb, resources

    def keep(self, info: dict, verdicts: dict) -> None:
        """The verdicts, by test cell, for the class report (`grade.py report`)."""
        root = Path(CourseDirectory(config=self.config).root) / "verdicts" / info["assignment"]
        target = root / info["student"] / f"{info['notebook']}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(verdicts, indent=1))
        os.replace(tmp, target)

    def judge(self, grade_id: str, entries: list, answers: list | Exception | None) -> Verdict:
        """The verdict on test cell `grade_id` from the `answers` its own run left (None: it left none;
        an exception: why they could not be read)."""
        codec, grading = headlab("codec"), headlab("grading")
        if not entries:   # a test cell that runs no check would give everyone full marks
            self.log.error("Test cell %s ran no check on the solution: nothing to grade it by", grade_id)
            return grading.Verdict(False, error="GraderError", message=(
                f"{grade_id} runs no check, so the grader cannot score it; your instructor has been told"))
        if answers is None:
            return grading.Verdict(False, error="NoAnswers", message=(
                "the grader got no answers from this cell: it did not run to the end (an error in an "
                "earlier cell, the time limit, or the kernel died)"))
        if isinstance(answers, Exception):
            return grading.Verdict(False, error="BadAnswers",
                                   message=f"the grader could not read the answers this cell returned: {answers}")
        try:
            return grading.judge(entries, answers)
        except codec.GraderError as err:
            self.log.error("Grader error on %s: %s", grade_id, err)
            return grading.Verdict(False, error="GraderError", message=(
                f"the grader failed on this cell ({err}); your instructor has been told"))
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as err:
            return grading.Verdict(False, error="BadAnswers", message=(
                f"the grader could not read the answers this cell returned ({type(err).__name__}: {err})"))


def _output(verdict: Verdict) -> NotebookNode:
    if verdict.passed:
        return NotebookNode(output_type="stream", name="stdout",
                            text=f"{verdict.printed}(graded outside your notebook)\n")
    ename = verdict.error if verdict.error.isidentifier() else "CheckFailed"
    evalue = f"{verdict.printed}{verdict.message}"
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"{ename}: {evalue}"])
