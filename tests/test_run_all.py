"""Run All of an untouched lesson shows every figure and widget that needs no answer (issue 27, item 5).

JupyterLab's Run All stops at the first cell that raises: the cells after it never run. A lesson's
first unwritten exercise raises (its check cell says, in one line, that it is not written yet), so
every figure or widget that needs no answer has to come before that cell, or its cell must not raise.

How it is measured: the released lesson runs untouched in a fresh kernel with every cell executed
(allow_errors). A figure/widget cell that ran without an error there needs no answer. Run All would
have shown it only if it comes before the first cell that raised. The test lists the ones it would not.

    python tests/test_run_all.py [NN …]      # the same report, printed, for the lessons named
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
LESSONS = sorted((REPO / "lessons").glob("[0-9][0-9]_*/[0-9][0-9]_*.ipynb"))
FIGURE_KINDS = ("image/png", "application/vnd.jupyter.widget-view+json")

# Lessons not yet changed. Strict: a fixed lesson turns the test red until its entry is removed. (05 and 07 were
# the last: their answer-free figures moved before the first check, 5 Dec.)
NOT_YET: set[str] = set()


def run_untouched(path: Path) -> nbformat.NotebookNode:
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute(stderr=subprocess.DEVNULL)
    return nb


def errors(cell) -> list:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def shows_something(cell) -> bool:
    return any(kind in o.get("data", {}) for o in cell.get("outputs", []) for kind in FIGURE_KINDS)


def run_all_report(nb) -> tuple[int | None, list[str]]:
    """(index of the code cell where Run All stops, ids of answer-free figure/widget cells after it)."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    stop = next((i for i, c in enumerate(code) if errors(c)), None)
    if stop is None:
        return None, []
    missed = [c.get("id", f"cell {i}") for i, c in enumerate(code)
              if i > stop and not errors(c) and shows_something(c)]
    return stop, missed


@pytest.fixture(scope="module", params=LESSONS, ids=lambda p: p.parent.name)
def executed(request):
    return request.param, run_untouched(request.param)


def test_run_all_shows_every_figure_that_needs_no_answer(executed, request):
    path, nb = executed
    if path.name[:2] in NOT_YET:
        request.applymarker(pytest.mark.xfail(strict=True, reason="lesson owned by the perf helper, not reordered"))
    stop, missed = run_all_report(nb)
    assert not missed, (f"{path.parent.name}: Run All stops at code cell {stop} and never shows "
                        f"{', '.join(missed)}, which need no answer")


def test_run_all_stops_on_one_line_that_says_what_to_write(executed):
    """Where Run All stops, it is on an exercise the student has not written, told in one line."""
    path, nb = executed
    code = [c for c in nb.cells if c.cell_type == "code"]
    stop, _ = run_all_report(nb)
    assert stop is not None, f"{path.parent.name}: an untouched lesson ran without any error"
    first = errors(code[stop])[0]
    assert "not written yet" in first.get("evalue", ""), (path.parent.name, code[stop].get("id"), first)
    assert len(first.get("traceback", [])) == 1, (f"{path.parent.name}: Run All stops on a "
                                                  f"{len(first['traceback'])}-line traceback in {code[stop].get('id')}")


if __name__ == "__main__":
    wanted = sys.argv[1:]
    for lesson in LESSONS:
        if wanted and lesson.name[:2] not in wanted:
            continue
        nb = run_untouched(lesson)
        stop, missed = run_all_report(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        print(f"{lesson.parent.name}: stops at {code[stop].get('id') if stop is not None else None}; "
              f"misses {missed or 'nothing'}")
