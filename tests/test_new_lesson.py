"""dev/new_lesson.py: a new lesson is its content files plus one command. The scaffold runs into a
temporary copy of the README and must produce what the course's own tests ask of a lesson."""
import ast
import shutil

import nbformat
import pytest

from dev.new_lesson import scaffold
from headlab.checks.engine import Exercise
from heads_lessons import REPO, Lesson, graded_cells
from test_links import SLUG, links
from test_notebooks import SETUP_CELL

NAME, EXERCISES = "09_label_smoothing", ["smooth_targets", "smoothed_loss"]


@pytest.fixture
def written(tmp_path):
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    return tmp_path, scaffold(tmp_path, NAME, "Label smoothing", EXERCISES)


def test_the_notebook_has_the_setup_cell_badges_and_an_answer_and_test_cell_per_exercise(written):
    root, _ = written
    lesson = Lesson(NAME)
    nb = lesson.read(root / "solutions")
    assert next(c for c in nb.cells if c.cell_type == "code").source == SETUP_CELL
    own = f"lessons/{NAME}/{NAME}.ipynb"
    assert links(nb.cells[0].source) == [(SLUG, own), (SLUG, own)]
    cells = graded_cells(nb)
    assert [g for g, c in cells.items() if c.metadata["nbgrader"]["solution"]] == EXERCISES
    for exercise in EXERCISES:
        test = cells[f"test_{exercise}"]
        assert test.metadata["nbgrader"]["grade"] and test.metadata["nbgrader"]["points"] > 0
        assert test.source.index(f"check.{exercise}(") < test.source.index("### BEGIN HIDDEN TESTS")
    assert len({c.id for c in nb.cells}) == len(nb.cells)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert all(part in text for part in ("After this lesson you can", "## Summary", "## Knowledge check"))
    nbformat.validate(nb)


def test_the_checks_declare_one_exercise_each_and_the_mutants_name_the_lesson(written):
    root, _ = written
    path = root / "headlab" / "checks" / "ch09.py"
    # Run as a module of the installed package (its relative imports resolve there), not imported by path.
    module = {"__name__": "headlab.checks.ch09", "__package__": "headlab.checks"}
    exec(compile(path.read_text(), str(path), "exec"), module)
    assert [v.name for v in module.values() if isinstance(v, Exercise)] == EXERCISES
    outputs = ast.parse((root / "grader" / "heads_mistakes" / "ch09.py").read_text())
    assert [c.args[0].value for c in ast.walk(outputs) if isinstance(c, ast.Call) and getattr(c.func, "id", "") ==
            "register"] == EXERCISES, "one table of outputs per exercise"
    mutants = (root / "tests" / "grading" / f"test_grade_{NAME}.py").read_text()
    (test_class,) = [n for n in ast.parse(mutants).body if isinstance(n, ast.ClassDef)]
    assert [b.id for b in test_class.bases] == ["LessonGrading"]
    assert NAME in [c.value for c in ast.walk(test_class) if isinstance(c, ast.Constant)]


def test_the_readme_gets_a_row_with_both_badges(written):
    root, _ = written
    before = (REPO / "README.md").read_text()
    after = (root / "README.md").read_text()
    new = [line for line in after.splitlines() if line not in before.splitlines()]
    assert len(new) == 1 and new[0].startswith("| 09 | [Label smoothing]")
    own = f"lessons/{NAME}/{NAME}.ipynb"
    assert links(new[0]) == [(SLUG, own), (SLUG, own)]
    rows = [line for line in after.splitlines() if line.startswith("| 0")]
    assert rows[-1] == new[0], "the new row ends the lesson table"


def test_it_never_overwrites_a_lesson(written):
    root, _ = written
    with pytest.raises(SystemExit, match="refusing to overwrite"):
        scaffold(root, NAME, "Again", EXERCISES)
    with pytest.raises(SystemExit, match="NN_words"):
        scaffold(root, "label smoothing", "x", EXERCISES)
