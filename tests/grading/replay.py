"""Grading outside the student's process, in-process for tests: record a lesson's checks on its solution,
then judge any implementation of an exercise by replaying them on its results (headlab/grading.py).

`record_lesson` runs the solution notebook once in an in-process IPython shell with every test cell
recorded, as the grader does in a kernel; `judge_answers` runs an implementation on the recorded inputs,
as the student's kernel would, and replays the checks on the results, as the grader does.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import textwrap
from functools import lru_cache
from pathlib import Path

import nbformat

from headlab import codec, grading, kernel
from heads_lessons import lesson as lesson_named


HIDDEN_SEED = int(os.environ.get("HEADS_TEST_HIDDEN_SEED", "1"))   # one seed for every grading run of the
# tests, so each lesson is recorded once; set HEADS_TEST_HIDDEN_SEED to try the mistake tables on other inputs


def notebook(lesson: str) -> Path:
    return lesson_named(lesson).path()


@lru_cache(maxsize=None)
def record_lesson(lesson: str, seed: int = HIDDEN_SEED) -> tuple[dict, dict]:
    """(the recording of every test cell with hidden seed `seed`, the notebook's namespace after the run)."""
    from IPython.core.interactiveshell import InteractiveShell

    import matplotlib

    matplotlib.use("Agg")   # in this process only: kernels started later keep the inline backend
    nb = nbformat.read(notebook(lesson), as_version=4)
    shell = InteractiveShell.instance()
    shell.user_ns.clear()
    grading._BOOK.clear()
    cwd = os.getcwd()
    os.chdir(notebook(lesson).parent)
    os.environ[grading.SEED_VARIABLE] = str(seed)   # as the grader's recording kernel has it
    try:
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            meta = cell.metadata.get("nbgrader", {})
            source = cell.source
            if meta.get("grade"):
                source = grading.recorded_source(meta["grade_id"], source)
            with contextlib.redirect_stdout(io.StringIO()):
                result = shell.run_cell(source, silent=True)
            if not result.success:
                raise RuntimeError(f"{lesson}: a solution cell failed: {result.error_in_exec or result.error_before_exec}\n{source[:500]}")
    finally:
        os.chdir(cwd)
        del os.environ[grading.SEED_VARIABLE]
    book = json.loads(json.dumps(grading._BOOK))
    grading._BOOK.clear()
    return book, dict(shell.user_ns)


def defined_names(code: str) -> set[str]:
    """The names a cell defines at its top level (functions, classes, assignments)."""
    names = set()
    for node in ast.parse(textwrap.dedent(code)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        for target in getattr(node, "targets", []) + [getattr(node, "target", None)]:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} if target else set()
    return names


def namespace_with(lesson: str, answers: dict[str, str]) -> dict:
    """The solution's namespace with answer cells replaced ({exercise: code}), as a kernel would run
    them: what the solution's cell defined is gone, and a cell that raises (a stub) defines nothing."""
    _, ns = record_lesson(lesson)
    ns = dict(ns)
    solution = answer_cells(lesson)
    for exercise, code in answers.items():
        for name in defined_names(solution[exercise]):
            ns.pop(name, None)
        try:
            exec(compile(textwrap.dedent(code), "<answer>", "exec"), ns)
        except Exception:
            pass
    return ns


@lru_cache(maxsize=None)
def answer_cells(lesson: str) -> dict[str, str]:
    return lesson_named(lesson).answers()


def judge_answers(lesson: str, grade_id: str, namespace: dict, seed: int = HIDDEN_SEED) -> grading.Verdict:
    """Run `namespace`'s answers on the recorded inputs (hidden seed `seed`) of test cell `grade_id` and judge them."""
    book, _ = record_lesson(lesson, seed)
    view = grading.kernel_view(book)[grade_id]
    answers = []
    for entry in view:
        answer = namespace if entry["answer"] == codec.GLOBALS else namespace.get(entry["answer"], kernel._MISSING)
        results = [] if answer is kernel._MISSING else [kernel._run(answer, call) for call in entry["calls"]]
        answers.append(json.loads(json.dumps({"answer": kernel.describe(answer), "results": results})))
    return grading.judge(book[grade_id], answers)
