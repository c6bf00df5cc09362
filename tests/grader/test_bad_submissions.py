"""Bad submissions in one class: each is graded (or reported) and the others are graded normally.

One batch, graded as the instructor does it (`grade.py autograde` → parallel `nbgrader autograde`
with the course configuration, sandboxed; then `generate_feedback` and `export`). The cell timeout
is lowered to 15 s here so an infinite loop costs seconds; the course's own values are checked in
`test_course_limits`.
"""
from __future__ import annotations

import copy
import csv
import json

import nbformat
import pytest

from course import (LESSON, colab_saved, feedback, fill, grade_py, looping, make_course, release_nb,
                    scores, solution_answers, submit)
from heads_lessons import REPO, lesson

CELL_TIMEOUT = 15  # the setup cell imports torch: seconds on a loaded 2-core machine
MAX_CELLS = 200    # size caps lowered here so that hand-ins over them stay small (course: test_course_limits)
# The release's own cells: a hand-in over the cap holds these and the cells it added
RELEASED_CELLS = len(nbformat.read(lesson(LESSON).path(REPO / "lessons"), as_version=4).cells)
SIZE_CAPS = f"""
        c.HandInLimits.max_bytes = 2 * 1024**2
        c.HandInLimits.max_cells = {MAX_CELLS}
        c.HandInLimits.max_output_bytes = 1024**2
"""
SOL = solution_answers()
CAUSAL_OK, PADDING_OK = SOL["causal_mask"], SOL["padding_mask"]


def answers(**replace: str) -> dict[str, str]:
    return {**SOL, **replace}


def cell_index(nb, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def build(root):
    """{student: (expected score, words the feedback must contain or None)}; submissions written."""
    rel = release_nb(root)
    cases = {}

    def add(student, nb, score, says=None, **kw):
        submit(root, student, nb, **kw)
        cases[student] = (score, says)

    add("ok-solution", fill(rel, answers()), 4)
    add("ok-untouched", rel, 0, "not written yet")
    add("loop-in-function", fill(rel, answers(padding_mask=looping(PADDING_OK))), 2, "an infinite loop?")
    add("kernel-exit", fill(rel, answers(causal_mask=CAUSAL_OK.replace(
        "    i = torch", "    import os; os._exit(3)\n    i = torch"))), 2, "the kernel died")
    add("kernel-segfault", fill(rel, answers(causal_mask=CAUSAL_OK.replace(
        "    i = torch", "    import ctypes; ctypes.string_at(0)\n    i = torch"))), 2, "the kernel died")
    add("memory-hog", fill(rel, answers(padding_mask=PADDING_OK.replace(
        "    positions =", "    hog = bytearray(6 * 1024**3)\n    positions ="))), 2, "MemoryError")
    add("output-flood", fill(rel, answers(padding_mask=PADDING_OK.replace(
        "    positions =", "    for _ in range(2000): print('flood ' * 100)\n    positions ="))),
        4, "output truncated")

    # an exception whose text holds a lone surrogate: in the notebook nbgrader writes, it stopped this
    # student's notebook at 0 (a red team's S1); escaped, the passing cell keeps its points
    add("lone-surrogate", fill(rel, answers(
        causal_mask='def causal_mask(n):\n    raise ValueError("boom \\udcff")\n')), 2)

    nb = fill(rel, answers())
    del nb.cells[cell_index(nb, "test_padding_mask")]
    add("deleted-test-cell", nb, 4)

    nb = fill(rel, answers())
    for gid in ("padding_mask", "test_causal_mask"):
        i = cell_index(nb, gid)
        twin = copy.deepcopy(nb.cells[i])
        twin["id"] = nb.cells[i]["id"] + "-copy"
        nb.cells.insert(i + 1, twin)
    add("duplicated-cells", nb, 4)

    nb = fill(rel, answers(padding_mask="def padding_mask(lengths, n):\n    return None\n"))
    nb.cells[cell_index(nb, "test_padding_mask")].source = "pass  # the student's 'test'"
    add("edited-test-cell", nb, 2, "padding_mask")

    text = nbformat.writes(fill(rel, answers()))
    add("malformed-json", text[: len(text) // 2], 0)

    add("colab-saved", colab_saved(fill(rel, answers())), 4)

    (root / "submitted" / "missing-notebook" / LESSON).mkdir(parents=True)
    (root / "submitted" / "missing-notebook" / LESSON / "notes.txt").write_text("sorry, later")
    cases["missing-notebook"] = (0, None)

    for student, grade_id, version in (("schema-too-old", "padding_mask", 2), ("schema-too-new", "causal_mask", 99)):
        nb = fill(rel, answers())   # nbgrader would stop its whole process, not grade this one notebook
        nb.cells[cell_index(nb, grade_id)].metadata["nbgrader"]["schema_version"] = version
        add(student, nb, 4)

    nb = fill(rel, answers())   # parses, but deeper than the recursion limit of a recursive reader
    nb.cells.insert(3, nbformat.v4.new_code_cell("if False:\n    x = a" + ".a" * 1500))
    add("deep-attribute-chain", nb, 4)

    # Over a size cap (lowered in this course, see `graded`): refused unread, kept, scored 0.
    nb = fill(rel, answers())
    nb.cells.append(nbformat.v4.new_markdown_cell("x" * (3 * 2**20)))
    add("too-many-bytes", nb, 0)
    nb = fill(rel, answers())
    nb.cells += [nbformat.v4.new_code_cell("") for _ in range(MAX_CELLS)]
    add("too-many-cells", nb, 0)
    nb = fill(rel, answers())
    nb.cells[cell_index(nb, "padding_mask")].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="x" * (3 * 2**19))]  # 1.5 MiB, in 2 MiB
    add("too-much-output", nb, 0)

    # Red team 6: an honest change of directory lost every later test cell, whose inputs the kernel looked for
    # relative to its directory
    nb = fill(rel, answers())
    nb.cells.insert(3, nbformat.v4.new_code_cell("import os\nos.makedirs('figures', exist_ok=True)\n"
                                                 "os.chdir('figures')"))
    add("changed-directory", nb, 4)

    add("extra-files", fill(rel, answers()), 4)
    submit(root, "extra-files", "x,y\n1,2\n", name="data.csv")
    submit(root, "extra-files", fill(rel, {}), name="Untitled.ipynb")
    return cases


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("bad-submissions") / "course", extra_config=f"""
        c.Execute.timeout = {CELL_TIMEOUT}
        c.Execute.error_on_timeout = {{"ename": "CellTimeoutError", "evalue":
            "this cell ran longer than the grader allows: an infinite loop?", "traceback": []}}
    """ + SIZE_CAPS)
    cases = build(root)
    # their crashes are flagged for review (os._exit, ctypes); run as written, they kill the kernel (heads_unrun)
    proc = grade_py("--course", str(root), "--jobs", "2", "autograde",
                    *(f"--run-flagged={s}/{LESSON}" for s in ("kernel-exit", "kernel-segfault")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fb = grade_py("--course", str(root), "feedback")
    csv_path = root / "grades.csv"
    ex = grade_py("--course", str(root), "export", "--to", str(csv_path))
    assert ex.returncode == 0, ex.stdout + ex.stderr
    return root, cases, scores(root), proc.stdout + fb.stdout + fb.stderr, csv_path


CASES = ["ok-solution", "ok-untouched", "loop-in-function", "kernel-exit", "kernel-segfault",
         "memory-hog", "output-flood", "deleted-test-cell", "duplicated-cells", "edited-test-cell",
         "malformed-json", "colab-saved", "missing-notebook", "schema-too-old", "schema-too-new",
         "deep-attribute-chain", "too-many-bytes", "too-many-cells", "too-much-output", "extra-files",
         "lone-surrogate", "changed-directory"]


@pytest.mark.parametrize("student", CASES)
def test_case_is_graded(graded, student):
    root, cases, got, log, _ = graded
    expected, says = cases[student]
    assert student in got, f"{student} has no grade:\n{log[-3000:]}"
    assert got[student]["score"] == expected, (student, got[student], log[-2000:])
    if says:
        assert says.lower() in feedback(root, student).lower(), feedback(root, student)[-1500:]


def test_the_class_is_graded_normally(graded):
    """Every student has a grade, and the correct ones in the same batch get full marks."""
    root, cases, got, log, _ = graded
    assert sorted(got) == sorted(CASES)
    for student in ("ok-solution", "deleted-test-cell", "duplicated-cells", "colab-saved", "schema-too-old",
                    "schema-too-new", "deep-attribute-chain", "extra-files", "changed-directory"):
        assert got[student]["score"] == 4, (student, got[student])


def test_kernel_death_keeps_earlier_points_and_gives_a_reason(graded):
    root, _, got, _, _ = graded
    for student in ("kernel-exit", "kernel-segfault"):
        assert got[student]["cells"] == {"test_padding_mask": 2, "test_causal_mask": 0}
        assert "not run" in feedback(root, student) or "died" in feedback(root, student)


def test_output_flood_is_capped(graded):
    root, *_ = graded
    nb = nbformat.read(root / "autograded" / "output-flood" / LESSON / f"{LESSON}.ipynb", as_version=4)
    biggest = max(len(json.dumps(c.get("outputs", []))) for c in nb.cells if c.cell_type == "code")
    assert biggest < 60_000, biggest


def test_unreadable_notebook_is_reported_and_kept(graded):
    root, _, got, log, _ = graded
    assert "PROBLEM malformed-json" in log and "unreadable" in log
    kept = root / "submitted" / "malformed-json" / LESSON / f"{LESSON}.ipynb.unreadable"
    assert kept.exists() and kept.stat().st_size > 100


@pytest.mark.parametrize("student, reason", [
    ("too-many-bytes", "3.0 MiB, more than the 2.0 MiB a hand-in may be (HandInLimits.max_bytes)"),
    ("too-many-cells", f"{MAX_CELLS + RELEASED_CELLS} cells, more than the {MAX_CELLS} a hand-in may have"),
    ("too-much-output", "1.5 MiB of stored output, more than the 1.0 MiB a hand-in may keep"),
])
def test_a_hand_in_over_a_size_cap_is_refused_with_its_reason_and_kept(graded, student, reason):
    root, _, got, log, _ = graded
    line = f"PROBLEM {student}/{LESSON}/{LESSON}.ipynb: refused before grading: "
    assert line in log and reason in log.split(line)[1].splitlines()[0], log[-3000:]
    kept = root / "submitted" / student / LESSON / f"{LESSON}.ipynb.too-large"
    assert kept.stat().st_size > 10_000 and not (root / "autograded" / student).exists()


def test_extra_files_are_kept(graded):
    root, *_ = graded
    folder = root / "autograded" / "extra-files" / LESSON
    assert (folder / "data.csv").read_text() == "x,y\n1,2\n"
    assert (root / "submitted" / "extra-files" / LESSON / "Untitled.ipynb").exists()
    assert f"PROBLEM extra-files/{LESSON}/Untitled.ipynb: not a notebook of this lesson" in graded[3]


def test_missing_notebook_is_reported(graded):
    assert f"PROBLEM missing-notebook/{LESSON}: no readable notebook submitted (found: notes.txt)" \
        in graded[3]


def test_export_has_one_row_per_student(graded):
    root, cases, got, _, csv_path = graded
    rows = list(csv.DictReader(csv_path.open()))
    assert [r["student_id"] for r in rows] == sorted(CASES)
    assert list(rows[0]) == ["student_id", LESSON, "total", "max_total", "flags"]
    # Held for review, out of the total: the code the flagger cannot read, the segfault's ctypes and the exit's
    # os._exit (a private part of a watched module).
    held = {r["student_id"] for r in rows if f"HELD {cases[r['student_id']][0]:g} of 4" in r["flags"]}
    assert held == {"deep-attribute-chain", "kernel-segfault", "kernel-exit"}, held
    for row in rows:
        assert row[LESSON] == ("" if row["student_id"] in held else f"{cases[row['student_id']][0]:g}")
        assert float(row["max_total"]) == 4


def test_feedback_never_shows_hidden_tests(graded):
    root, *_ = graded
    text = feedback(root, "edited-test-cell")
    assert "HIDDEN TESTS" not in text and "_cases.append" not in text


def test_course_limits():
    """The course's own limits: a cell may run 30 s, a notebook 180 s, a kernel 3 GiB."""
    from traitlets.config.loader import PyFileConfigLoader

    from course import REPO

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO / "grader")).load_config()
    assert config.Execute.timeout == 30
    assert config.HeadsExecute.notebook_timeout == 180
    assert config.SandboxKernelManager.memory_limit == 3 * 1024**3
    assert config.OverwriteCells.add_missing_cells is True
    assert config.Execute.kernel_manager_class == "heads_sandbox.SandboxKernelManager"
    assert config.HandInLimits.max_bytes == 16 * 1024**2
    assert config.HandInLimits.max_cells == 1000
    assert config.HandInLimits.max_output_bytes == 8 * 1024**2


def test_a_huge_hand_in_never_holds_the_grader(tmp_path):
    """100,000 cells (11 MB, under the byte cap): refused after one JSON parse, with the grader's
    processes under 400 MiB (1.2 GB and 7 minutes when nbgrader was given it)."""
    import subprocess
    import sys

    from course import GRADER

    root = make_course(tmp_path / "course")
    book = json.loads(json.dumps(fill(release_nb(root), answers())))  # a dict: nbformat would validate
    book["cells"] += [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None,
                       "outputs": [], "source": "pass"} for i in range(100_000)]
    submit(root, "huge", book)
    measured = subprocess.run([sys.executable, "-c", (
        "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(p.stdout); print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"),
        sys.executable, str(GRADER / "grade.py"), "--course", str(root), "autograde"],
        capture_output=True, text=True, timeout=900)
    out = measured.stdout
    assert f"PROBLEM huge/{LESSON}/{LESSON}.ipynb: refused before grading: {100_000 + RELEASED_CELLS} cells" in out, out
    peak_mib = int(out.split("PEAK")[1]) / 1024
    assert peak_mib < 400, f"the grader's processes peaked at {peak_mib:.0f} MiB"


def test_a_process_nbgrader_stops_costs_no_classmate_a_grade(tmp_path):
    """nbgrader stops its whole process on some errors of one notebook. With the schema step removed,
    a `schema_version` nbgrader does not know is one: every hand-in is a task of its own, so the
    classmates are graded, and the notebook that stopped nbgrader scores 0 and is reported with the
    reason."""
    root = make_course(tmp_path / "course", extra_config="""
        c.Autograde.sanitize_preprocessors = [p for p in c.Autograde.sanitize_preprocessors
                                              if p.__name__ != "CurrentSchemaVersion"]
    """)
    rel = release_nb(root)
    nb = fill(rel, answers())
    nb.cells[cell_index(nb, "padding_mask")].metadata["nbgrader"]["schema_version"] = 2
    submit(root, "a-schema", nb)
    for student in ("b-honest", "c-honest"):
        submit(root, student, fill(rel, answers()))
    proc = grade_py("--course", str(root), "--jobs", "1", "autograde")
    got = scores(root)
    assert got["b-honest"]["score"] == got["c-honest"]["score"] == 4, (got, proc.stdout[-2000:])
    assert got["a-schema"]["score"] == 0
    assert "PROBLEM a-schema/" in proc.stdout and "nbgrader stopped on this notebook" in proc.stdout, proc.stdout


def test_nbgrader_run_by_hand_refuses_a_hand_in_over_a_cap(tmp_path):
    """`cd grader && nbgrader autograde LESSON` checks the caps too: that notebook fails with the
    reason, unread; the classmate is graded."""
    from course import nbgrader

    root = make_course(tmp_path / "course", extra_config=SIZE_CAPS)
    rel = release_nb(root)
    submit(root, "honest", fill(rel, answers()))
    nb = fill(rel, answers())
    nb.cells += [nbformat.v4.new_code_cell("") for _ in range(MAX_CELLS)]
    submit(root, "too-many-cells", nb)
    log = nbgrader(root, "autograde", LESSON, "--force", check=False)
    assert f"HEADS-PROBLEM too-many-cells/{LESSON}: refused before grading: {MAX_CELLS + RELEASED_CELLS} cells" in log, log[-3000:]
    got = scores(root)
    assert got["honest"]["score"] == 4 and got["too-many-cells"]["score"] == 0, (got, log[-3000:])
    assert (root / "submitted" / "too-many-cells" / LESSON / f"{LESSON}.ipynb").exists()  # nothing lost
