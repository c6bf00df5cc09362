"""How am I doing? Run lesson notebooks in a fresh kernel and print one line per exercise.

    python -m headlab.check lessons/03_sequence_head/03_sequence_head.ipynb [more notebooks …]
    !python -m headlab.check 03_sequence_head.ipynb        # in Colab or a notebook cell

Each notebook runs top to bottom as Run All would, but keeps going past a failing cell, so every exercise's
check cell runs. An exercise's line says it passed, is not written yet, or gives its check's message. When every
exercise passed, one more line counts the other cells that failed (a claim the lesson measures, a crash), with the
first of them (while an exercise fails, a later cell that fails is most often its consequence). The exit status is
0 only when every exercise of every notebook passed and no other cell failed (for CI), and no traceback is
printed.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PASSED, NOT_WRITTEN, FAILED = "passed", "not written yet", "failed"
_MARK = {PASSED: "✓", NOT_WRITTEN: "·", FAILED: "✗"}
# A check cell without nbgrader's metadata (a student's copy): `check.<check>(<answer>` …
_CHECK_CALL = re.compile(r"^check\.(\w+)\((\w*)", re.M)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Result:
    exercise: str
    status: str
    message: str = ""

    def line(self) -> str:
        said = self.message if self.status == FAILED else self.status
        return f"{_MARK[self.status]} {self.exercise}: {said}"


def exercise_of(cell) -> str | None:
    """The exercise a code cell checks, or None: nbgrader's test cell `test_<name>`, else a cell that calls
    `check.<check>(<name>…)` (metadata can be lost when a notebook is copied); <name> is the learner's answer,
    unless the check reads the whole namespace (`globals()`)."""
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
    if grade_id.startswith("test_"):
        return grade_id.removeprefix("test_")
    if cell.get("metadata", {}).get("nbgrader"):
        return None   # another graded cell: an answer, the setup
    found = _CHECK_CALL.search(cell.source)
    if found is None:
        return None
    check, answer = found.groups()
    return answer if answer and answer != "globals" else check


def result_of(exercise: str, cell) -> Result:
    """The check cell's outcome, read from its outputs: the checks raise CheckFailed (a named mistake) or
    NotWritten (a stub), and print nothing to stderr when they pass."""
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if cell.get("execution_count") is None and not errors:
        return Result(exercise, FAILED, "its check cell did not run")
    if not errors:
        return Result(exercise, PASSED)
    name, value = errors[0].get("ename", ""), _ANSI.sub("", errors[0].get("evalue", ""))
    if name == "NotWritten" or (name == "NotImplementedError" and "not written yet" in value):
        return Result(exercise, NOT_WRITTEN)
    one_line = " ".join(part.strip() for part in value.splitlines() if part.strip())
    return Result(exercise, FAILED, one_line if name == "CheckFailed" else f"{name}: {one_line}")


# A cell stopped because an answer has not passed its check (`uses`), or called a stub: the exercise's own line
# says so already.
_WAITING = {"NotChecked", "NotWritten", "NotImplementedError"}


def other_failures(cells) -> list[str]:
    """The code cells other than check cells that raised, each as "cell N, what it raised" (N counts every cell
    from 1). Left out: a cell that waits for an answer (_WAITING), and a NameError after an earlier cell failed,
    which is that cell's consequence (a name it never defined)."""
    found, failed_before, section = [], False, "the top"
    for number, cell in enumerate(cells, 1):
        if cell.get("cell_type") == "markdown":   # a learner finds a cell by its section: Jupyter numbers none
            section = next((line.lstrip("#").strip() for line in cell.get("source", "").splitlines()
                            if line.startswith("#")), section)
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if cell.get("cell_type") != "code" or not errors:
            continue
        name, value = errors[0].get("ename", ""), _ANSI.sub("", errors[0].get("evalue", ""))
        waiting = name in _WAITING or (name == "NameError" and failed_before)
        failed_before = True
        if waiting or exercise_of(cell) is not None:
            continue
        said = " ".join(value.split())
        told = said if said.startswith("claim:") or name == "UsedAnswerFailed" else f"{name}: {said}"
        found.append(f"cell {number}, in “{section}”, {told}")
    return found


def check_notebook(path: Path, timeout: int) -> tuple[list[Result], list[str]]:
    """Run the notebook at `path` in a fresh kernel, in its own folder, and read each exercise's check cell, and
    the other cells that failed (`other_failures`)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    # The kernel's own log (e.g. jupyter_client's transport warnings) is no part of the answer: kept off stderr.
    NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute(stderr=subprocess.DEVNULL)
    return [result_of(name, cell) for cell in nb.cells
            if cell.cell_type == "code" and (name := exercise_of(cell)) is not None], other_failures(nb.cells)


def others_line(others: list[str]) -> str:
    """One line for the other cells that failed: how many, and the first."""
    return f"✗ {len(others)} later cell{'s' * (len(others) > 1)} failed (first: {others[0]})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m headlab.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds a cell may run (default 600)")
    args = parser.parse_args(argv)
    all_passed = True
    for path in args.notebooks:
        print(path)
        try:
            results, others = check_notebook(path, args.timeout)
        except Exception as err:   # unreadable file, no kernel, a cell past the timeout: one line, no traceback
            print(f"  ✗ could not run it: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            all_passed = False
            continue
        if not results:
            print("  ✗ no exercise check found in this notebook")
        for result in results:
            print("  " + result.line())
        passed = bool(results) and all(r.status == PASSED for r in results)
        if passed and others:
            print("  " + others_line(others))
        all_passed &= passed and not others
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
