"""The grading harness: real nbgrader runs on simulated submissions, for any lesson.

A lesson's grading tests are one file, `test_grade_<lesson>.py`, that lists wrong implementations
students really write (each named after its mistake, with words its feedback must contain) and correct
alternatives, then calls `grading_tests(...)`. The harness types the cases into copies of the released
notebook, autogrades them all with nbgrader and the course's `grader/nbgrader_config.py`, generates
feedback, and checks:
- the solution gets full marks and the untouched lesson gets zero without crashing the run;
- each wrong implementation loses the points of its exercise and its feedback names the mistake;
- each correct alternative keeps full marks;
- no feedback shows the source of a hidden test.

Every submission runs the whole notebook, demos included, so cases are packed: one submission holds at
most one case per exercise, and never cases for two exercises whose test cells name each other's
function. Each case is then judged on its own exercise's test cell (its score and its error message in
the autograded notebook, which must also appear on the student's feedback page), and every exercise of
the pack without a case must keep full marks, which proves the cases did not interfere.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "grader"))
from heads_feedback import hidden_test_lines  # noqa: E402  (one scanner for the grader and its tests)

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "solutions"
NBGRADER = [sys.executable, "-m", "nbgrader"]


@dataclass(frozen=True)
class Wrong:
    """A wrong implementation of one exercise, named after the mistake."""

    name: str
    exercise: str  # grade_id of the answer cell it replaces
    code: str
    says: str  # words the feedback must contain: the message that names the mistake


@dataclass(frozen=True)
class Alternative:
    """A correct implementation spelled differently from the solution."""

    name: str
    exercise: str
    code: str


# --- notebooks -----------------------------------------------------------------------------------
def notebook_path(lesson: str, root: Path = SOLUTIONS) -> Path:
    paths = sorted((root / lesson).glob("*.ipynb"))
    assert len(paths) == 1, f"{root / lesson} must hold exactly one notebook, found {paths}"
    return paths[0]


def nbgrader_cells(nb) -> dict[str, dict]:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}


def exercises(nb) -> list[str]:
    return [gid for gid, c in nbgrader_cells(nb).items() if c.metadata["nbgrader"].get("solution")]


def strip_solution_markers(source: str) -> str:
    return "\n".join(line for line in source.splitlines()
                     if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def stub_answers(lesson: str) -> dict[str, str]:
    """exercise → its answer cell as released to students (`raise NotImplementedError()` inside)."""
    released = nbformat.read(notebook_path(lesson, REPO / "lessons"), as_version=4)
    return {gid: c.source for gid, c in nbgrader_cells(released).items()
            if c.metadata["nbgrader"].get("solution")}


def fill(release_nb, answers: dict[str, str]):
    """A student's copy of the released notebook with `answers` typed into the answer cells."""
    nb = nbformat.from_dict(json.loads(json.dumps(release_nb)))
    cells = nbgrader_cells(nb)
    for grade_id, code in answers.items():
        cells[grade_id].source = code
    return nb


def depends(nb) -> dict[str, set[str]]:
    """exercise → the other exercises whose function its test cell names (and so may call)."""
    cells = nbgrader_cells(nb)
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
    for gid, cell in nbgrader_cells(nb).items():
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


def write_course_config(root: Path) -> None:
    """nbgrader_config.py for a temporary course: the course's own config, other folders."""
    (root / "nbgrader_config.py").write_text(textwrap.dedent(f"""\
        c = get_config()
        load_subconfig({str(REPO / 'grader' / 'nbgrader_config.py')!r})
        c.CourseDirectory.root = {str(root)!r}
        c.CourseDirectory.db_url = {'sqlite:///' + str(root / 'gradebook.db')!r}
        c.CourseDirectory.source_directory = {str(SOLUTIONS)!r}
        c.CourseDirectory.release_directory = {str(root / 'release')!r}
    """))


def run_nbgrader(root: Path, *args: str) -> str:
    proc = subprocess.run([*NBGRADER, *args], cwd=root, capture_output=True, text=True, timeout=1800)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f"nbgrader {' '.join(args)} failed ({proc.returncode}):\n{out[-5000:]}")
    return out


def grade_class(lesson: str, submissions: dict[str, dict[str, str] | None], root: Path) -> GradedClass:
    """Release `lesson`, submit one notebook per student (answers typed in, or None for untouched),
    autograde and generate feedback for all of them with nbgrader."""
    write_course_config(root)
    log = run_nbgrader(root, "generate_assignment", lesson, "--force")
    release_path = notebook_path(lesson, root / "release")
    release_nb = nbformat.read(release_path, as_version=4)
    for student, answers in submissions.items():
        target = root / "submitted" / student / lesson / release_path.name
        target.parent.mkdir(parents=True)
        if answers is None:
            shutil.copy(release_path, target)
        else:
            nbformat.write(fill(release_nb, answers), target)
    log += run_nbgrader(root, "autograde", lesson, "--force")
    log += run_nbgrader(root, "generate_feedback", lesson, "--force")

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


# --- the tests, generated for one lesson ----------------------------------------------------------
def grading_tests(lesson: str, wrong: list[Wrong], alternatives: list[Alternative]) -> dict:
    """Test functions and the module fixture for `lesson`; bind them with globals().update(...)."""
    source_nb = nbformat.read(notebook_path(lesson), as_version=4)
    solution = {gid: strip_solution_markers(c.source) for gid, c in nbgrader_cells(source_nb).items()
                if c.metadata["nbgrader"].get("solution")}
    names = [w.name for w in wrong] + [a.name for a in alternatives]
    assert len(names) == len(set(names)), f"duplicate case names in {lesson}"

    deps = depends(source_nb)
    # nbgrader grades three students end to end: the solution, the untouched release, and one whose
    # answers are a pack of wrong implementations plus correct alternatives wherever they fit; every
    # case is also judged by the grader's replay in-process (test_replay_*): the same checks and the
    # same messages, in milliseconds each.
    mixed: list = []
    for k, exercise in enumerate(exercises(source_nb)):   # wrong and right answers by turns
        kinds = (wrong, alternatives) if k % 2 == 0 else (alternatives, wrong)
        for case in (c for cases in kinds for c in cases if c.exercise == exercise):
            if fits(mixed, case, deps):
                mixed.append(case)
                break
    packs = {"mixed": mixed}
    student_of = {case.name: student for student, p in packs.items() for case in p}
    end_to_end = [w for w in wrong if w.name in student_of]
    end_to_end_alternatives = [a for a in alternatives if a.name in student_of]

    def submissions() -> dict[str, dict[str, str] | None]:
        subs: dict[str, dict[str, str] | None] = {"solution": dict(solution), "untouched": None}
        for student, cases in packs.items():
            subs[student] = {**solution, **{c.exercise: textwrap.dedent(c.code) for c in cases}}
        return subs

    @pytest.fixture(scope="module")
    def graded(tmp_path_factory) -> GradedClass:
        return grade_class(lesson, submissions(), tmp_path_factory.mktemp(f"grade-{lesson}"))

    def test_cases_cover_every_exercise():
        for exercise in exercises(source_nb):
            n_wrong = sum(w.exercise == exercise for w in wrong)
            n_alt = sum(a.exercise == exercise for a in alternatives)
            assert n_wrong >= 2, f"{lesson}: exercise {exercise} needs at least two wrong implementations"
            assert n_alt >= 1, f"{lesson}: exercise {exercise} needs a correct alternative"
        for case in [*wrong, *alternatives]:
            assert case.exercise in solution, f"{case.name}: no answer cell {case.exercise} in {lesson}"

    def test_solution_gets_full_marks(graded):
        assert graded.max_score > 0
        assert graded.scores["solution"] == graded.max_score, graded.cell_scores["solution"]

    def test_untouched_lesson_gets_zero(graded):
        assert graded.scores["untouched"] == 0, graded.cell_scores["untouched"]
        assert "not written yet" in graded.feedback("untouched")

    def untouched_exercises_keep_full_marks(graded, student):
        mutated = {f"test_{c.exercise}" for c in packs[student]}
        for cell, points in graded.cell_points.items():
            if cell not in mutated:
                assert graded.cell_scores[student][cell] == points, (
                    f"{cell} lost points in {student}, which changed only {sorted(mutated)}: "
                    "a test cell depends on another exercise; name that exercise in it")

    def test_replay_solution_passes_every_test_cell():
        book, namespace = replay.record_lesson(lesson)
        assert set(book) == {f"test_{x}" for x in exercises(source_nb)}, "a test cell recorded no check"
        for grade_id in book:
            verdict = replay.judge_answers(lesson, grade_id, namespace)
            passed, text = verdict.passed, verdict.text()
            assert passed, f"the solution fails {grade_id} when judged outside the kernel:\n{text}"

    def test_test_cells_grade_only_through_checks():
        """Outside the kernel only `check.*` calls are replayed: a bare assert would go ungraded."""
        for grade_id, cell in nbgrader_cells(source_nb).items():
            if cell.metadata["nbgrader"].get("grade"):
                asserts = [n for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Assert)]
                assert not asserts, f"{grade_id}: move the assert on line {asserts[0].lineno} into a check"

    def test_replay_untouched_lesson_fails_every_test_cell():
        book, _ = replay.record_lesson(lesson)
        namespace = replay.namespace_with(lesson, stub_answers(lesson))
        for grade_id in book:
            verdict = replay.judge_answers(lesson, grade_id, namespace)
            passed, text = verdict.passed, verdict.text()
            assert not passed and "not written yet" in text, f"{grade_id}: {text}"

    @pytest.mark.parametrize("case", wrong, ids=[w.name for w in wrong])
    def test_replay_wrong_implementation_fails(case):
        verdict = replay.judge_answers(lesson, f"test_{case.exercise}", replay.namespace_with(lesson, {case.exercise: case.code}))
        passed, text = verdict.passed, verdict.text()
        assert not passed, f"{case.name} passes test_{case.exercise} when judged outside the kernel"
        assert case.says.lower() in text.lower(), (
            f"test_{case.exercise} does not say {case.says!r} for {case.name}; it says:\n{text}")

    @pytest.mark.parametrize("case", alternatives, ids=[a.name for a in alternatives])
    def test_replay_correct_alternative_passes(case):
        verdict = replay.judge_answers(lesson, f"test_{case.exercise}", replay.namespace_with(lesson, {case.exercise: case.code}))
        passed, text = verdict.passed, verdict.text()
        assert passed, f"{case.name} fails test_{case.exercise}:\n{text}"

    @pytest.mark.parametrize("case", end_to_end, ids=[w.name for w in end_to_end])
    def test_wrong_implementation_loses_points(graded, case):
        student = student_of[case.name]
        test_cell = f"test_{case.exercise}"
        assert graded.cell_scores[student][test_cell] == 0, (
            f"{case.name} kept {graded.cell_scores[student][test_cell]} points of {test_cell}")
        untouched_exercises_keep_full_marks(graded, student)
        message = graded.errors(student)[test_cell]
        assert case.says.lower() in message.lower(), (
            f"{test_cell} does not say {case.says!r} for {case.name}; it says:\n{message}")
        shown = re.sub(r"\s+", " ", message.splitlines()[0]).strip()
        assert shown in graded.feedback(student), f"the feedback page of {student} lacks: {shown}"

    @pytest.mark.parametrize("case", end_to_end_alternatives, ids=[a.name for a in end_to_end_alternatives])
    def test_correct_alternative_gets_full_marks(graded, case):
        student = student_of[case.name]
        cell = f"test_{case.exercise}"
        assert graded.cell_scores[student][cell] == graded.cell_points[cell], graded.cell_scores[student]

    def test_feedback_never_shows_hidden_tests(graded):
        hidden = hidden_test_lines(source_nb)
        assert hidden, f"{lesson} has no hidden tests"
        for student in graded.scores:
            text = graded.feedback(student)
            assert "HIDDEN TESTS" not in text
            shown = [line for line in hidden if re.sub(r"\s+", " ", line) in text]
            assert not shown, f"feedback of {student} shows hidden test lines: {shown}"

    return {name: obj for name, obj in locals().items()
            if name == "graded" or name.startswith("test_")}
