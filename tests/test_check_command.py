"""`python -m headlab.check NOTEBOOK…`: one line per exercise, exit 0 only when all pass, never a traceback."""
import subprocess
import sys

import nbformat
import pytest

from headlab import check

REPO = check.Path(__file__).resolve().parents[1]
LESSON_03 = "03_sequence_head/03_sequence_head.ipynb"


def run(*notebooks):
    return subprocess.run([sys.executable, "-m", "headlab.check", *map(str, notebooks)], capture_output=True,
                          text=True, timeout=900)


def lines(proc):
    return [line.strip() for line in proc.stdout.splitlines()[1:]]


def cell(outputs, grade_id="test_head_param_count", count=3):
    return nbformat.v4.new_code_cell("check.head_param_count(head_param_count)", outputs=outputs,
                                     execution_count=count, metadata={"nbgrader": {"grade_id": grade_id}})


def error(ename, evalue):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=["…"])


@pytest.mark.parametrize("outputs, line", [
    ([nbformat.v4.new_output("stream", text="✓ head_param_count: 4 cases passed\n")], "✓ head_param_count: passed"),
    ([error("NotWritten", "head_param_count is not written yet: replace …")], "· head_param_count: not written yet"),
    # a crash's hint comes on a second line: the result stays one line
    ([error("CheckFailed", "head_param_count(64, 2) raised TypeError: x\nKeep the parameters.")],
     "✗ head_param_count: head_param_count(64, 2) raised TypeError: x Keep the parameters."),
    ([error("NameError", "name 'torch' is not defined")], "✗ head_param_count: NameError: name 'torch' is not defined"),
])
def test_a_check_cell_is_read_as_one_line(outputs, line):
    assert check.result_of("head_param_count", cell(outputs)).line() == line


def test_a_check_cell_that_never_ran_is_not_a_pass():
    assert check.result_of("x", cell([], count=None)).status == check.FAILED


def test_check_cells_are_found_by_metadata_or_by_their_call():
    assert check.exercise_of(cell([])) == "head_param_count"
    assert check.exercise_of(cell([], grade_id="head_param_count")) is None   # the answer cell
    assert check.exercise_of(nbformat.v4.new_code_cell("x = 1\ncheck.sequence_classifier(SequenceClassifier)")) \
        == "SequenceClassifier"
    assert check.exercise_of(nbformat.v4.new_code_cell("check.knowledge_check(globals())")) == "knowledge_check"
    assert check.exercise_of(nbformat.v4.new_code_cell("print(check)")) is None


@pytest.mark.slow
def test_an_untouched_lesson_is_not_written_yet_and_fails():
    proc = run(REPO / "lessons" / LESSON_03)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert lines(proc) == [f"· {name}: not written yet" for name in
                           ("SequenceClassifier", "head_param_count", "untrained_loss")], proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.slow
def test_a_solved_lesson_passes():
    proc = run(REPO / "solutions" / LESSON_03)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines(proc) == [f"✓ {name}: passed" for name in ("SequenceClassifier", "head_param_count", "untrained_loss")]


@pytest.mark.slow
def test_a_students_copy_with_one_mistake_names_it_and_fails(tmp_path):
    """A copy that lost nbgrader's metadata (check cells found by their call), one answer wrong."""
    nb = nbformat.read(REPO / "solutions" / LESSON_03, as_version=4)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == "head_param_count":
            assert c.source.count("return K * d + K") == 1, c.source
            c.source = c.source.replace("return K * d + K", "return K * d")
        c.metadata.pop("nbgrader", None)
    copy = tmp_path / "mine.ipynb"
    nbformat.write(nb, copy)
    proc = run(copy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    got = lines(proc)
    assert got[0] == "✓ SequenceClassifier: passed" and got[-1] == "✓ untrained_loss: passed", got
    assert got[1].startswith("✗ head_param_count: ") and "bias" in got[1], got
    assert "Traceback" not in proc.stdout + proc.stderr


def test_other_failed_cells_are_counted_with_the_first():
    """A claim or a crash after the checks is counted; a cell that waits for an answer (NotChecked, the stub) and a
    NameError it leaves behind are the exercise's own line, not counted again."""
    cells = [cell([]), nbformat.v4.new_code_cell("uses(x)", outputs=[error("NotChecked", "this cell uses your …")]),
             nbformat.v4.new_code_cell("y", outputs=[error("NameError", "name 'y' is not defined")]),
             nbformat.v4.new_markdown_cell("## 2 · Training\n\ntext"),
             nbformat.v4.new_code_cell("assert a", outputs=[error("AssertionError", "claim: the loss falls")]),
             nbformat.v4.new_code_cell("1 / 0", outputs=[error("ZeroDivisionError", "division by zero")]),
             cell([error("CheckFailed", "wrong")])]
    others = check.other_failures(cells)
    assert others == ["cell 5, in “2 · Training”, claim: the loss falls",
                      "cell 6, in “2 · Training”, ZeroDivisionError: division by zero"]
    assert check.others_line(others) == \
        "✗ 2 later cells failed (first: cell 5, in “2 · Training”, claim: the loss falls)"


@pytest.mark.slow
def test_a_failed_claim_after_the_checks_fails_the_run(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from headlab.checks import ch03 as check"),
        nbformat.v4.new_code_cell("def head_param_count(d, K):\n    return K * d + K"),
        nbformat.v4.new_code_cell("check.head_param_count(head_param_count)"),
        nbformat.v4.new_code_cell('assert head_param_count(2, 3) == 6, "claim: a head of 2 × 3 has 6 parameters"')])
    copy = tmp_path / "mine.ipynb"
    nbformat.write(nb, copy)
    proc = run(copy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert lines(proc) == ["✓ head_param_count: passed", "✗ 1 later cell failed (first: cell 4, in “the top”, "
                           "claim: a head of 2 × 3 has 6 parameters)"], proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
