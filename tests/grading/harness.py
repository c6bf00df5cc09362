"""The grading harness: real nbgrader runs on simulated submissions, for any lesson.

A lesson's grading tests are one file, `test_grade_<lesson>.py`, that lists wrong implementations
students really write (each named by the key of its mistake in the checks' table) and correct
alternatives, then calls `grading_tests(...)`. Every case is judged by the grader's own replay, in this
process (test_replay_*, milliseconds each once the solution has been recorded): each wrong implementation
must fail with its mistake's key, each alternative pass, the solution pass every test cell and the
untouched lesson fail every one with "not written yet".

End to end, nbgrader with the course's `grader/nbgrader_config.py` grades one student, a "mixed" one
whose answers alternate between a wrong implementation and a correct alternative, exercise by exercise
(never two whose test cells name each other's function). Each wrong case loses its exercise's points
with the message the replay gives, on the autograded notebook and the feedback page; each alternative
keeps its points; no feedback shows a hidden test. nbgrader is given the recording this process made
(tests/grader/test_recording.py shows it is the one a kernel makes). (The solution and the untouched
release of lesson 00 are graded by nbgrader in tests/grader/.)
"""
from __future__ import annotations

import ast
import html
import json
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

import replay
from heads_feedback import hidden_test_lines   # one scanner for the grader and its tests
from heads_outside import cached_recording
from headlab import grading
from heads_lessons import (LESSONS, course_config, fill, graded_cells, lesson as lesson_named, make_course,
                     nbgrader_api)

NBGRADER = [sys.executable, "-m", "nbgrader"]


@dataclass(frozen=True)
class Wrong:
    """A wrong implementation of one exercise, named after the mistake.

    `mistake` is the key the check must name (a key of the exercise's table in headlab/checks, or one of
    the engine's: wrong-values, changed-input, raised-IndexError, ...). `code` is the whole answer cell,
    or `Wrong.edit(...)` makes it an edit of the solution's."""

    name: str
    exercise: str  # grade_id of the answer cell it replaces
    code: str = ""
    mistake: str = ""
    replace: tuple[str, str] | None = None  # (old, new): the solution's answer with one edit

    @classmethod
    def edit(cls, name: str, exercise: str, old: str, new: str, mistake: str) -> "Wrong":
        return cls(name, exercise, mistake=mistake, replace=(old, new))

    @classmethod
    def edits(cls, exercise: str, old: str, rows: list[tuple[str, ...]], prefix: str = "") -> list["Wrong"]:
        """The wrong implementations that each replace the same place `old` of the solution of `exercise`, one
        per row `(what, new, mistake)`, named `<prefix>-<what>` (the prefix is the exercise's name unless given):
        the exercise and the place are written once, however many mistakes students make there. A row named by
        its mistake's key is `(key, new)`: the key is written once."""
        return [cls.edit(f"{prefix or exercise}-{what}", exercise, old, new, key[0] if key else what)
                for what, new, *key in rows]

    def answer(self, solution: dict[str, str]) -> str:
        if self.replace is None:
            return textwrap.dedent(self.code)
        old, new = self.replace
        source = solution[self.exercise]
        assert source.count(old) == 1, f"{self.name}: {old!r} must occur once in the solution of {self.exercise}"
        return source.replace(old, new)

    def named_in(self, verdict) -> str:
        """Why `verdict` does not name this mistake, or "" if it does."""
        return "" if verdict.key == self.mistake else (
            f"test_{self.exercise} should name mistake {self.mistake!r} for {self.name}; it named "
            f"{verdict.key or 'none'}:\n{verdict.text()}")


def squashed(logits: str) -> list[tuple[str, str, str]]:
    """The rows of a head whose `logits`, the solution's expression for them, go through sigmoid, relu or tanh:
    the same three mistakes, named alike, in every lesson whose head returns logits for a loss (04, 05)."""
    return [(f"{f}-on-the-logits", f"torch.{f}({logits})", key)
            for f, key in (("sigmoid", "sigmoid-output"), ("relu", "relu-on-logits"), ("tanh", "tanh-on-logits"))]


@dataclass(frozen=True)
class Alternative:
    """A correct implementation spelled differently from the solution."""

    name: str
    exercise: str
    code: str

    def answer(self, solution: dict[str, str]) -> str:
        return textwrap.dedent(self.code)


# --- notebooks ---------------------------------------------------------------------------------
def exercises(nb) -> list[str]:
    return [gid for gid, c in graded_cells(nb).items() if c.metadata["nbgrader"].get("solution")]


def depends(nb) -> dict[str, set[str]]:
    """exercise → the other exercises whose function its test cell names (and so may call)."""
    cells = graded_cells(nb)
    names = exercises(nb)
    out = {}
    for x in names:
        test = cells.get(f"test_{x}")
        source = test.source if test is not None else ""
        out[x] = {y for y in names if y != x and re.search(rf"\b{re.escape(y)}\b", source)}
    return out


def fits(p: list, case, deps: dict[str, set[str]]) -> bool:
    """Whether `case` can join submission `p` without its test cells seeing each other's answers."""
    clash = {case.exercise} | deps.get(case.exercise, set())
    taken = {c.exercise for c in p}
    return not taken & clash and not any(case.exercise in deps.get(t, set()) for t in taken)


def pack(cases: list, deps: dict[str, set[str]]) -> list[list]:
    """Greedy packing of cases into submissions that cannot interfere with each other."""
    packs: list[list] = []
    for case in cases:
        for p in packs:
            if fits(p, case, deps):
                p.append(case)
                break
        else:
            packs.append([case])
    return packs


def cell_errors(path: Path) -> dict[str, str]:
    """grade_id → the error lines ("Name: message") a cell printed, from an autograded notebook."""
    nb = nbformat.read(path, as_version=4)
    out = {}
    for gid, cell in graded_cells(nb).items():
        lines = [f"{o.get('ename', '')}: {o.get('evalue', '')}" for o in cell.get("outputs", [])
                 if o.get("output_type") == "error"]
        out[gid] = "\n".join(lines)
    return out


def feedback_text(path: Path) -> str:
    """The visible text of a feedback HTML page, tags removed and entities decoded."""
    raw = path.read_text(encoding="utf-8")
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", raw)))


# --- one class of simulated students, graded by nbgrader -----------------------------------------
@dataclass
class GradedClass:
    lesson: str
    notebook: str
    root: Path
    scores: dict[str, float]
    max_score: float
    cell_scores: dict[str, dict[str, float]]
    cell_points: dict[str, float]
    log: str

    def errors(self, student: str) -> dict[str, str]:
        path = self.root / "autograded" / student / self.lesson / f"{self.notebook}.ipynb"
        assert path.exists(), f"no autograded notebook for {student}:\n{self.log[-3000:]}"
        return cell_errors(path)

    def feedback(self, student: str) -> str:
        path = self.root / "feedback" / student / self.lesson / f"{self.notebook}.html"
        assert path.exists(), f"no feedback for {student}:\n{self.log[-3000:]}"
        return feedback_text(path)


def run_nbgrader(root: Path, *args: str) -> str:
    proc = subprocess.run([*NBGRADER, *args], cwd=root, capture_output=True, text=True, timeout=1800)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f"nbgrader {' '.join(args)} failed ({proc.returncode}):\n{out[-5000:]}")
    return out


def recorded_here(root: Path, lessons) -> str:
    """nbgrader configuration that gives the grader of the course in `root`, for each of `lessons`, the
    recording of its checks this process made (`replay.record_lesson`) instead of running the solution in
    a kernel again: the two are the same bytes (tests/grader/test_recording.py)."""
    folder = root / "recordings"
    folder.mkdir(parents=True, exist_ok=True)
    for name in lessons:
        book, _ = replay.record_lesson(name)
        cached_recording(folder, lesson_named(name).path(), replay.HIDDEN_SEED).write_text(json.dumps(book))
    return f"c.RunAnswersOnly.recordings = {str(folder)!r}\nc.RunAnswersOnly.hidden_seed = {replay.HIDDEN_SEED}\n"


def grade_class(lesson: str, submissions: dict[str, dict[str, str] | None], root: Path) -> GradedClass:
    """Release `lesson`, submit one notebook per student (answers typed in, or None for untouched),
    autograde them with `nbgrader autograde`, which takes the recording of the solution this process made
    for the replay tests, and generate their feedback with nbgrader's API in this process."""
    make_course(root, [lesson], recorded_here(root, [lesson]))
    release_path = lesson_named(lesson).path(root / "release")
    release_nb = nbformat.read(release_path, as_version=4)
    for student, answers in submissions.items():
        target = root / "submitted" / student / lesson / release_path.name
        target.parent.mkdir(parents=True)
        if answers is None:
            shutil.copy(release_path, target)
        else:
            nbformat.write(fill(release_nb, answers), target)
    log = run_nbgrader(root, "autograde", lesson, "--force")
    feedback = nbgrader_api(course_config(root)).generate_feedback(lesson, force=True)
    assert feedback["success"], f"generate_feedback failed:\n{feedback['error']}\n{feedback['log']}"
    log += feedback["log"]

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        scores, cell_scores = {}, {}
        nb_name = release_path.stem
        for student in submissions:
            sub = gb.find_submission_notebook(nb_name, lesson, student)
            scores[student] = sub.score
            cell_scores[student] = {g.name: g.score for g in sub.grades}
        assignment = gb.find_assignment(lesson)
        max_score = assignment.max_score
        notebook = gb.find_notebook(nb_name, lesson)
        cell_points = {cell.name: cell.max_score for cell in notebook.grade_cells}
    return GradedClass(lesson, nb_name, root, scores, max_score, cell_scores, cell_points, log)


# --- the tests, written once for every lesson ------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """What a lesson's grading tests work from: its notebook and solution, and the "mixed" student whose
    answers alternate between a wrong implementation and a correct alternative, exercise by exercise."""

    source_nb: object
    solution: dict
    mixed: tuple

    @classmethod
    def of(cls, lesson: str, wrong: list, alternatives: list) -> "Plan":
        source_nb = lesson_named(lesson).read()
        deps = depends(source_nb)
        mixed: list = []
        for k, exercise in enumerate(exercises(source_nb)):   # wrong and right answers by turns
            kinds = (wrong, alternatives) if k % 2 == 0 else (alternatives, wrong)
            for case in (c for cases in kinds for c in cases if c.exercise == exercise):
                if fits(mixed, case, deps):
                    mixed.append(case)
                    break
        return cls(source_nb, lesson_named(lesson).answers(), tuple(mixed))


class LessonGrading:
    """A lesson's grading tests, written once: a lesson's file subclasses it with `lesson`, `wrong` (each
    named by its mistake's key) and `alternatives`.

    Every case, and the solution, is judged by the grader's replay in-process (test_replay_*). End to end,
    nbgrader grades one student, the "mixed" one (Plan): every test cell then runs through the kernel, the
    answers' transport and the judge outside it, half of them with a correct answer that must get full
    marks and half with a wrong one that must show the replay's message. (The solution of lesson 00 is
    graded end to end in tests/grader/, lesson 03's through a Colab copy.)"""

    lesson: str = ""
    wrong: list = []
    alternatives: list = []
    _plans: dict = {}

    @classmethod
    def plan(cls) -> Plan:
        if cls not in LessonGrading._plans:
            LessonGrading._plans[cls] = Plan.of(cls.lesson, cls.wrong, cls.alternatives)
        return LessonGrading._plans[cls]

    def pytest_generate_tests(self, metafunc):
        """`case` is every wrong implementation or alternative, or those the mixed student made."""
        if "case" not in metafunc.fixturenames:
            return
        end_to_end = metafunc.function.__name__ in ("test_wrong_implementation_loses_points",
                                                    "test_correct_alternative_gets_full_marks")
        wrong = "wrong" in metafunc.function.__name__
        cases = [c for c in (self.wrong if wrong else self.alternatives)
                 if not end_to_end or c in self.plan().mixed]
        metafunc.parametrize("case", cases, ids=[c.name for c in cases])

    @pytest.fixture(scope="class")
    def graded(self, tmp_path_factory) -> GradedClass:
        solution = self.plan().solution
        mixed = {**solution, **{c.exercise: c.answer(solution) for c in self.plan().mixed}}
        return grade_class(self.lesson, {"mixed": mixed}, tmp_path_factory.mktemp(f"grade-{self.lesson}"))

    def replayed(self, case) -> grading.Verdict:
        namespace = replay.namespace_with(self.lesson, {case.exercise: case.answer(self.plan().solution)})
        return replay.judge_answers(self.lesson, f"test_{case.exercise}", namespace)

    # --- in-process: the grader's replay ----------------------------------------------------------
    def test_cases_cover_every_exercise(self):
        names = [c.name for c in [*self.wrong, *self.alternatives]]
        assert len(names) == len(set(names)), f"duplicate case names in {self.lesson}"
        for exercise in exercises(self.plan().source_nb):
            n_wrong = sum(w.exercise == exercise for w in self.wrong)
            n_alt = sum(a.exercise == exercise for a in self.alternatives)
            assert n_wrong >= 2, f"{self.lesson}: exercise {exercise} needs at least two wrong implementations"
            assert n_alt >= 1, f"{self.lesson}: exercise {exercise} needs a correct alternative"
        for case in [*self.wrong, *self.alternatives]:
            assert case.exercise in self.plan().solution, f"{case.name}: no answer cell {case.exercise}"
        assert all(w.mistake for w in self.wrong), "every wrong implementation names the key of its mistake"

    def test_test_cells_grade_only_through_checks(self):
        """Outside the kernel only `check.*` calls are replayed: a bare assert would go ungraded."""
        for grade_id, cell in graded_cells(self.plan().source_nb).items():
            if cell.metadata["nbgrader"].get("grade"):
                asserts = [n for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Assert)]
                assert not asserts, f"{grade_id}: move the assert on line {asserts[0].lineno} into a check"

    def test_replay_solution_passes_every_test_cell(self):
        book, namespace = replay.record_lesson(self.lesson)
        assert set(book) == {f"test_{x}" for x in exercises(self.plan().source_nb)}, "a test cell recorded no check"
        for grade_id in book:
            verdict = replay.judge_answers(self.lesson, grade_id, namespace)
            assert verdict.passed, f"the solution fails {grade_id} when judged outside the kernel:\n{verdict.text()}"

    def test_replay_untouched_lesson_fails_every_test_cell(self):
        book, _ = replay.record_lesson(self.lesson)
        namespace = replay.namespace_with(self.lesson, lesson_named(self.lesson).answers(LESSONS))
        for grade_id in book:
            verdict = replay.judge_answers(self.lesson, grade_id, namespace)
            assert not verdict.passed and "not written yet" in verdict.text(), f"{grade_id}: {verdict.text()}"

    def test_replay_wrong_implementation_fails(self, case):
        verdict = self.replayed(case)
        assert not verdict.passed, f"{case.name} passes test_{case.exercise} when judged outside the kernel"
        assert not case.named_in(verdict), case.named_in(verdict)

    def test_replay_correct_alternative_passes(self, case):
        verdict = self.replayed(case)
        assert verdict.passed, f"{case.name} fails test_{case.exercise}:\n{verdict.text()}"

    # --- end to end: nbgrader ---------------------------------------------------------------------
    def test_every_test_cell_is_graded(self, graded):
        assert graded.max_score > 0
        assert set(graded.cell_scores["mixed"]) == {f"test_{x}" for x in exercises(self.plan().source_nb)}
        assert {case.exercise for case in self.plan().mixed} == set(exercises(self.plan().source_nb)), (
            "the mixed student leaves an exercise out: add a case that fits beside the others")

    def test_wrong_implementation_loses_points(self, graded, case):
        test_cell = f"test_{case.exercise}"
        assert graded.cell_scores["mixed"][test_cell] == 0, (
            f"{case.name} kept {graded.cell_scores['mixed'][test_cell]} points of {test_cell}")
        message = graded.errors("mixed")[test_cell]
        expected = self.replayed(case)   # nbgrader shows what the in-process replay says
        assert message.startswith(f"{expected.error}: ") and expected.message in message, (
            f"{test_cell} says for {case.name}:\n{message}\nThe replay says:\n{expected.text()}")
        shown = re.sub(r"\s+", " ", message.splitlines()[0]).strip()
        assert shown in graded.feedback("mixed"), f"the feedback page of the mixed student lacks: {shown}"

    def test_correct_alternative_gets_full_marks(self, graded, case):
        cell = f"test_{case.exercise}"
        assert graded.cell_scores["mixed"][cell] == graded.cell_points[cell], graded.cell_scores["mixed"]

    def test_feedback_never_shows_hidden_tests(self, graded):
        hidden = hidden_test_lines(self.plan().source_nb)
        assert hidden, f"{self.lesson} has no hidden tests"
        for student in graded.scores:
            text = graded.feedback(student)
            assert "HIDDEN TESTS" not in text
            shown = [line for line in hidden if re.sub(r"\s+", " ", line) in text]
            assert not shown, f"feedback of {student} shows hidden test lines: {shown}"
