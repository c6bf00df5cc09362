"""Record what each mistake of the checks returns on the inputs the visible checks judge (issue 25, N1).

A mistake's output function is the grader's (grader/heads_mistakes); a student's kernel, where that module is not,
names a mistake on a visible case from this recording, headlab/resources/mistakes.json. It is made by running every
lesson's visible checks on the solution with the grader's functions in place: each input a check judges (its
cases, a row of a case alone, the inputs a class check loads) is recorded with every mistake's output on it.

    python -m dev.record_mistakes          # after a change to a check's cases or mistakes, or to heads_mistakes

tests/test_no_answer_in_package.py fails, naming this command, while the file is out of date.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import json
import re

from headlab.checks import engine
from heads_lessons import all_lessons

VISIBLE = re.compile(r"^check\.(\w+)\((\w+)\)$", re.M)   # a test cell's visible check, before its hidden tests


def recording() -> dict:
    """exercise → digest of the inputs → {mistake index: output}, from every lesson's visible checks."""
    if engine.grader_side() is None:
        raise SystemExit("heads_mistakes is not importable: install the grader (pip install -e ./grader)")
    book: dict = {}
    engine._recording = book
    try:
        for lesson in all_lessons():
            namespace, checks = lesson.solution_namespace(), importlib.import_module(lesson.checks)
            exec(lesson.imports(), namespace)
            for check, name in visible_checks(lesson):
                with contextlib.redirect_stdout(io.StringIO()):
                    getattr(checks, check)(namespace[name])
    finally:
        engine._recording = None
    return book


def visible_checks(lesson) -> list[tuple[str, str]]:
    """(check, exercise) of each `check.X(name)` line of the lesson's test cells, hidden tests left out."""
    cells = [c.source.split("### BEGIN HIDDEN TESTS")[0] for c in lesson.read().cells
             if c.metadata.get("nbgrader", {}).get("grade_id", "").startswith("test_")]
    return [m.groups() for source in cells for m in VISIBLE.finditer(source)]


def text(book: dict) -> str:
    return json.dumps(book, sort_keys=True, indent=0) + "\n"


def main() -> None:
    engine.RECORDING.write_text(text(recording()))
    print(f"wrote {engine.RECORDING}")


if __name__ == "__main__":
    main()
