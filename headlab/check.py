"""How am I doing? Run lesson notebooks in a fresh kernel and print one line per exercise.

    python -m headlab.check lessons/03_sequence_head/03_sequence_head.ipynb [more notebooks …]
    !python -m headlab.check 03_sequence_head.ipynb        # in Colab or a notebook cell

Each notebook runs top to bottom as Run All would, but keeps going past a failing cell, so every exercise's
check cell runs. An exercise's line says it passed, is not written yet, or gives its check's message. The exit
status is 0 only when every exercise of every notebook passed (for CI), and no traceback is printed.
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


def check_notebook(path: Path, timeout: int) -> list[Result]:
    """Run the notebook at `path` in a fresh kernel, in its own folder, and read each exercise's check cell."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    # The kernel's own log (e.g. jupyter_client's transport warnings) is no part of the answer: kept off stderr.
    NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute(stderr=subprocess.DEVNULL)
    return [result_of(name, cell) for cell in nb.cells
            if cell.cell_type == "code" and (name := exercise_of(cell)) is not None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m headlab.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds a cell may run (default 600)")
    args = parser.parse_args(argv)
    all_passed = True
    for path in args.notebooks:
        print(path)
        try:
            results = check_notebook(path, args.timeout)
        except Exception as err:   # unreadable file, no kernel, a cell past the timeout: one line, no traceback
            print(f"  ✗ could not run it: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            all_passed = False
            continue
        if not results:
            print("  ✗ no exercise check found in this notebook")
        for result in results:
            print("  " + result.line())
        all_passed &= bool(results) and all(r.status == PASSED for r in results)
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
