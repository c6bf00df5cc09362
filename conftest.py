"""Root pytest configuration: how nbval treats the student notebooks in lessons/.

A lesson is a solution with its answers removed, so under nbval:
- every grade cell (an exercise's checks) must FAIL: it is marked xfail(strict=True), so a stub that
  passes its own checks turns the run red;
- any other cell may fail only because it calls an exercise that is not written yet (the error is
  NotImplementedError, or headlab.uses' NotChecked); it is then reported as xfailed. Any other error is a real failure.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from heads_lessons import python_tools_on_path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models run faster on one thread per process
python_tools_on_path()  # nbgrader finds `alembic` under `.venv/bin/pytest` too (grader/heads_lessons.py)

ROOT = Path(__file__).parent
# The slow tier: real nbgrader runs, browsers, the weights rebuild, packaging and notebooks.
# `pytest -m "not slow"` is the edit loop.
SLOW = [ROOT / "tests" / "grading", ROOT / "tests" / "grader", ROOT / "solutions", ROOT / "lessons",
        *(ROOT / "tests" / name for name in ("test_browser.py", "test_weights.py", "test_packaging.py",
                                             "test_binder.py", "test_readme_command.py"))]

LESSONS = Path(__file__).parent / "lessons"


def pytest_configure(config):
    """The grader requires its sandbox (bubblewrap), and the grading tests grade. Where bubblewrap cannot
    run, they grade without it, as `grade.py --no-sandbox` does (HEADS_SANDBOX=off), and the tests of the
    sandbox itself skip; under CI=1 nothing is switched off, so they fail instead. An explicit
    HEADS_SANDBOX is left alone."""
    if "HEADS_SANDBOX" in os.environ or os.environ.get("CI"):
        return
    from heads_sandbox import bwrap_works

    if not bwrap_works():
        os.environ["HEADS_SANDBOX"] = "off"
        config._heads_no_sandbox = True


def pytest_report_header(config):
    if getattr(config, "_heads_no_sandbox", False):
        return ("bubblewrap does not work here: grading tests run WITHOUT the sandbox (HEADS_SANDBOX=off), "
                "the sandbox tests skip (apt-get install bubblewrap)")
    return None


@pytest.hookimpl(optionalhook=True)   # a hook of pytest-xdist, which the ipywidgets 7 pass runs without
def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: three workers per two cores. The slow tier spends much of its time waiting on other
    processes (kernels starting, nbgrader, browsers), so one worker per core leaves cores idle."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cores * 3 // 2)


def _nbgrader_meta(item) -> dict:
    cell = getattr(item, "cell", None)
    return (cell.get("metadata", {}).get("nbgrader", {}) if cell is not None else {})


def _in_lessons(item) -> bool:
    return LESSONS in Path(str(item.fspath)).resolve().parents


def _is_slow(item) -> bool:
    path = Path(str(item.fspath)).resolve()
    return any(path == slow or slow in path.parents for slow in SLOW)


# Files that grade whole classes in their fixtures go first: `--dist loadfile` hands files to workers in
# collection order, and one such file started last keeps a single worker busy for minutes at the end.
START_FIRST = [ROOT / "tests" / "grader", ROOT / "tests" / "grading"]


def _start_rank(item) -> int:
    path = Path(str(item.fspath)).resolve()
    return next((i for i, folder in enumerate(START_FIRST) if folder in path.parents), len(START_FIRST))


def pytest_collection_modifyitems(config, items):
    items.sort(key=_start_rank)  # stable: the order within a file is kept
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
        if _in_lessons(item) and _nbgrader_meta(item).get("grade"):
            item.add_marker(pytest.mark.xfail(
                strict=True, reason="a lesson's checks fail until the student writes the answer"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if (call.when == "call" and report.failed and _in_lessons(item)
            and not _nbgrader_meta(item).get("grade") and call.excinfo is not None):
        err = call.excinfo.value
        text = f"{err} {getattr(err, 'inner_traceback', '')}"
        # NotChecked (headlab/uses.py): the cell uses an answer whose check has not passed, i.e. is not written
        if "NotImplementedError" in text or "NotChecked" in text:
            report.outcome = "skipped"
            report.wasxfail = "uses an exercise the student has not written yet"
