"""Structure every notebook must have, checked without running it."""
import ast
import re

import nbformat
import pytest

from heads_lessons import LESSONS as RELEASED, REPO, all_lessons

SOLUTIONS = [x.path() for x in all_lessons()]
LESSONS = [x.path(RELEASED) for x in all_lessons()]
SETUP_CELL = (REPO / "dev" / "setup_cell.py").read_text().rstrip("\n")
GRADE_ID = re.compile(r"^[a-zA-Z0-9_\-]*$")


def read(path):
    return nbformat.read(path, as_version=4)


def nbgrader(cell):
    return cell.metadata.get("nbgrader", {})


def test_there_are_notebooks():
    assert SOLUTIONS and len(SOLUTIONS) == len(LESSONS)


@pytest.mark.parametrize("path", SOLUTIONS + LESSONS, ids=lambda p: str(p.relative_to(REPO)))
def test_first_code_cell_is_the_course_setup_cell(path):
    first = next(c for c in read(path).cells if c.cell_type == "code")
    assert first.source == SETUP_CELL, "copy dev/setup_cell.py into the first code cell"


def test_setup_cell_installs_only_the_course_package_and_only_on_colab():
    installs = [line for line in SETUP_CELL.splitlines() if "pip install" in line]
    assert len(installs) == 1 and "headlab @ git+" in installs[0]
    for heavy in ("torch", "numpy", "ipywidgets", "matplotlib"):
        assert heavy not in installs[0]
    assert 'if "google.colab" in sys.modules:' in SETUP_CELL


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.parent.name)
def test_solution_notebook_structure(path):
    nb = read(path)
    assert path.stem == path.parent.name, "one notebook per lesson folder, named like the folder"
    ids = [c.id for c in nb.cells]
    assert len(ids) == len(set(ids)), "cell ids must be unique (nbgrader renames duplicates at random)"
    grade_ids = [nbgrader(c)["grade_id"] for c in nb.cells if nbgrader(c)]
    assert len(grade_ids) == len(set(grade_ids)) and all(GRADE_ID.match(g) for g in grade_ids)
    answers = [nbgrader(c)["grade_id"] for c in nb.cells if nbgrader(c).get("solution")]
    tests = {nbgrader(c)["grade_id"]: c for c in nb.cells if nbgrader(c).get("grade")}
    assert 2 <= len(answers) <= 4, "each lesson has 2–4 graded exercises"
    for answer in answers:
        test = tests.get(f"test_{answer}")
        assert test is not None, f"exercise {answer} needs a test cell test_{answer}"
        assert nbgrader(test)["points"] > 0
        assert "### BEGIN HIDDEN TESTS" in test.source, f"test_{answer} has no hidden tests"
        assert not test.source.lstrip().startswith("### BEGIN HIDDEN"), "visible checks come first"
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for part in ("After this lesson you can", "## Summary", "## Knowledge check"):
        assert part in text, f"missing: {part}"
    assert any(o.get("output_type") == "display_data" and "image/png" in o.get("data", {})
               for c in nb.cells if c.cell_type == "code" for o in c.outputs), "at least one figure"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.parent.name)
def test_lessons_carry_no_outputs_and_no_solutions(path):
    nb = read(path)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None
        assert "BEGIN SOLUTION" not in cell.source and "BEGIN HIDDEN TESTS" not in cell.source


def graded_names():
    """Names of the functions and classes students write, from every answer cell."""
    names = set()
    for path in SOLUTIONS:
        for cell in read(path).cells:
            if nbgrader(cell).get("solution"):
                tree = ast.parse(cell.source)
                names |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return names


def test_the_package_holds_no_answer_to_an_exercise():
    defined = set()
    for path in (REPO / "headlab").rglob("*.py"):
        tree = ast.parse(path.read_text())
        defined |= {(n.name, path.name) for n in ast.walk(tree)
                    if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")}
    answers = graded_names()
    assert answers
    # The checks module names its checks after the exercises they check; that is allowed.
    leaked = sorted((name, file) for name, file in defined
                    if name in answers and not file.startswith("ch") )
    assert not leaked, f"the package defines graded exercises: {leaked}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.parent.name)
def test_solution_outputs_are_current(path):
    """Committed outputs come from the committed code: run `python -m dev.run_solutions NAME`."""
    from dev import run_solutions

    nb = read(path)
    stamp = nb.metadata.get("heads", {}).get("code_sha256")
    assert stamp == run_solutions.code_hash(nb), "code changed since the outputs were made"
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), "every code cell runs once, top to bottom"
