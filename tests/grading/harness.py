"""The grading harness: real nbgrader runs on simulated submissions, for any lesson.

A lesson's grading tests are one file, `test_grade_<lesson>.py`, that lists wrong implementations
students really write (each named after its mistake, with words its feedback must contain) and correct
alternatives, then calls `grading_tests(...)`. The harness builds one submission per case from the
released notebook, autogrades them all with nbgrader and the course's `grader/nbgrader_config.py`,
generates feedback, and checks:
- the solution gets full marks and the untouched lesson gets zero without crashing the run;
- each wrong implementation loses the points of its exercise and its feedback names the mistake;
- each correct alternative keeps full marks;
- no feedback shows the source of a hidden test.
"""
from __future__ import annotations

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


def hidden_test_lines(nb) -> list[str]:
    """The distinctive lines of every hidden-test region, to look for in feedback."""
    lines = []
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) >= 12:
                lines.append(line.strip())
    return lines


def fill(release_nb, answers: dict[str, str]):
    """A student's copy of the released notebook with `answers` typed into the answer cells."""
    nb = nbformat.from_dict(json.loads(json.dumps(release_nb)))
    cells = nbgrader_cells(nb)
    for grade_id, code in answers.items():
        cells[grade_id].source = code
    return nb


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

    def submissions() -> dict[str, dict[str, str] | None]:
        subs: dict[str, dict[str, str] | None] = {"solution": dict(solution), "untouched": None}
        for case in [*wrong, *alternatives]:
            prefix = "wrong" if isinstance(case, Wrong) else "alt"
            subs[f"{prefix}--{case.name}"] = {**solution, case.exercise: textwrap.dedent(case.code)}
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

    @pytest.mark.parametrize("case", wrong, ids=[w.name for w in wrong])
    def test_wrong_implementation_loses_points(graded, case):
        student = f"wrong--{case.name}"
        test_cell = f"test_{case.exercise}"
        assert graded.cell_scores[student][test_cell] == 0, (
            f"{case.name} kept {graded.cell_scores[student][test_cell]} points of {test_cell}")
        assert graded.scores[student] == graded.max_score - graded.cell_points[test_cell], (
            f"{case.name} should lose only {test_cell}: {graded.cell_scores[student]}")
        text = graded.feedback(student)
        assert case.says.lower() in text.lower(), (
            f"feedback for {case.name} does not say {case.says!r}; it shows:\n"
            + "\n".join(m.group(0) for m in re.finditer(r"\w*(Error|Failed)\w*: .{0,300}", text)))

    @pytest.mark.parametrize("case", alternatives, ids=[a.name for a in alternatives])
    def test_correct_alternative_gets_full_marks(graded, case):
        student = f"alt--{case.name}"
        assert graded.scores[student] == graded.max_score, graded.cell_scores[student]

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
