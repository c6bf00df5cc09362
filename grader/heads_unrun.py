"""Flagged code is not run: the grader runs a hand-in with each statement that holds its score for review
(grader/heads_flags.py) replaced by `pass`.

A flag holds a score because the code could forge it: a notebook that replaced `builtins.exec` for the test
cell's lines (red team 15) scored its hidden correct answer while showing a wrong one. Held, such a score was
worth nothing unread, but the instructor then had to find the honest score by hand. Not run, the patch does
nothing, and the gradebook holds what the rest of the notebook earns: the honest score, still held until the
instructor has looked (`grade.py export --clear`).

Which statements: those whose replacement by `pass` takes a held flag away from their cell, narrowed to the
innermost (a patch inside a function leaves the function defined, without the patch). What no single
statement explains (a flag two statements raise alike) is settled by not running the rest of the cell. A
cell too deep to parse is not run at all. The cell the kernel runs starts with a comment naming what was not
run and why; the student reads it in the feedback. The hand-in itself is untouched.

An answer built on the course package (heads_flags.package_routes: `causal_mask` through the decoder's own
attention pattern) is a score the package earned, whatever statement reaches the package: the top-level statements
of the student's cells that bind the exercise's name (its `def`, an assignment) are not run, so the exercise scores
what an unwritten answer scores.

`SkipFlaggedCode.run_as_written`, set by `grade.py autograde --run-flagged STUDENT/LESSON` for one run, grades
a notebook whose flags the instructor has read and found honest with all its code.
"""
from __future__ import annotations

import ast
import json
import os

from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import List, Unicode

from heads_code import CODE_MAGICS, magic_calls, module_level_stores, parse, translated
from heads_files import problem
from heads_flags import NotebookReading, cell_id, holds, package_flags

MOST_ROUNDS = 8   # each round removes at least one statement; a cell needing more is not run at all
# Narrowing reads the cell again for each statement: a flagged cell of more is not run at all (a red team's
# 1200-line cell kept the grader's process busy for minutes)
MOST_STATEMENTS = 200


def _lines(source: str) -> str:
    """`source` with Python's line breaks as `\n` only: Python breaks a line at a lone `\r` too, which a split on
    `\n` does not see (a red team's `\r` moved code into the grader's note, where the kernel ran it)."""
    return source.replace("\r\n", "\n").replace("\r", "\n")


def _shown(line: str) -> str:
    """A line of code as the note quotes it: its first 60 characters."""
    return _printable(line.strip()[:60])


def _printable(text: str) -> str:
    """`text` with each unprintable character (a line break among them) as `?`: a note is one comment line."""
    return "".join(c if c.isprintable() else "?" for c in text)


def _children(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements in the blocks of a compound statement."""
    blocks = [getattr(stmt, name, None) or [] for name in ("body", "orelse", "finalbody")]
    blocks += [handler.body for handler in getattr(stmt, "handlers", [])]
    blocks += [case.body for case in getattr(stmt, "cases", [])]
    return [child for block in blocks if isinstance(block, list) for child in block if isinstance(child, ast.stmt)]


def _span(stmt: ast.stmt) -> tuple[int, int, int, int]:
    """(first line, column, last line, end column) of `stmt` with its decorators, lines from 0, columns in bytes."""
    first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
    return first - 1, stmt.col_offset, stmt.end_lineno - 1, stmt.end_col_offset


def replaced(text: str, stmts: list[ast.stmt]) -> str:
    """`text` with each of `stmts` (parsed from it, none inside another) replaced by `pass`."""
    lines = [line.encode() for line in text.split("\n")]
    for first, col, last, end in sorted(map(_span, stmts), reverse=True):
        lines[first:last + 1] = [lines[first][:col] + b"pass" + lines[last][end:]]
    return "\n".join(line.decode() for line in lines)


def _timed_body(text: str) -> tuple[str, str] | None:
    """(the magic, its code) of a cell that is one `%%time`, `%%timeit`, `%%capture` or `%%prun`, else None."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
        for call, name, args in magic_calls(tree.body[0]):
            if call is tree.body[0].value and call.func.attr == "run_cell_magic" and name in CODE_MAGICS \
                    and len(args) >= 2:
                return name, args[1]
    return None


class _Cell:
    """One student cell as the grader will run it."""

    def __init__(self, reading: NotebookReading, cell: dict):
        self.reading, self.cell = reading, cell

    def held(self, text: str) -> set[str]:
        return {f for f in self.reading.reasons(self.cell, parse(text), text) if holds(f)}

    def culprits(self, text: str, stmts: list[ast.stmt], held: set[str]) -> list[ast.stmt]:
        """The innermost of `stmts` whose replacement by pass takes one of the `held` flags of `text` away."""
        found = []
        for stmt in stmts:
            if held <= self.held(replaced(text, [stmt])):
                continue
            found += self.culprits(text, _children(stmt), held) or [stmt]
        return found

    def as_run(self, source: str) -> tuple[str, list[str]]:
        """(the cell's code with its flagged statements replaced by pass, a line for each: where, what, why)."""
        text, notes = translated(_lines(source)), []
        for _ in range(MOST_ROUNDS):
            held = self.held(text)
            if not held:
                return text, notes
            timed = _timed_body(text)
            if timed is not None:   # %%time's code is run as the cell, its own statements narrowed
                notes.append(f"the cell's code ran without its `%%{timed[0]}`")
                text = translated(timed[1])
                continue
            try:
                body = ast.parse(text).body
                stmts = self.culprits(text, body, held) if len(body) <= MOST_STATEMENTS else []
            except (SyntaxError, ValueError, RecursionError):
                break
            if not stmts:
                break
            lines = text.split("\n")
            for stmt in stmts:
                first = _span(stmt)[0]
                reasons = sorted(held - self.held(replaced(text, [stmt])))
                notes.append(f"line {first + 1} `{_shown(lines[first])}`: {'; '.join(reasons)}")
            text = replaced(text, stmts)
        held = sorted(self.held(text)) or ["its code could not be narrowed to a statement"]
        return "pass", notes + [f"the rest of the cell: {'; '.join(held)}"]


def _instructors(cell: dict) -> bool:
    """A locked or test cell, which nbgrader's OverwriteCells has put back as the source notebook has it (a test cell
    with its hidden tests, so unlike the release's): the instructor's code, not the student's."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("locked") or (meta.get("grade") and not meta.get("solution")))


def disable_flagged(nb, release: dict) -> list[str]:
    """Replace the flagged statements of `nb`'s student cells (in place) by pass; one line per cell changed."""
    reading = NotebookReading(nb, release)
    unwritten = _answers_built_on_the_package(reading, release)
    changed = []
    for cell, tree in reading.cells:
        if _instructors(cell):
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if any(holds(f) for f in reading.reasons(cell, tree)):
            text, notes = _Cell(reading, cell).as_run(source)
        else:
            text, notes = translated(_lines(source)), []
        text, more = _without_answers(text, unwritten)
        if not notes and not more:
            continue
        notes += more
        header = ["# The grader did not run this cell's code flagged for review (replaced by `pass`):"]
        cell["source"] = "\n".join([*header, *(f"#   {_printable(note)}" for note in notes), text])
        changed.append(f"{cell_id(cell)}: not run, flagged for review: {' | '.join(notes)}")
    return changed


def _answers_built_on_the_package(reading: NotebookReading, release: dict) -> dict[str, str]:
    """{exercise: why} for each answer the package computes (heads_flags.package_routes): its score is the
    package's, so the answer is left unwritten and scores what no answer scores."""
    try:
        return package_flags(release, [tree for _, tree in reading.cells if tree is not None])
    except RecursionError:   # a cell too deep to read, which is not run at all
        return {}


def _without_answers(text: str, unwritten: dict[str, str]) -> tuple[str, list[str]]:
    """`text` with each top-level statement that binds one of the `unwritten` answers (its def, an assignment, an
    import, a loop or with that names it) replaced by pass, and a note for each."""
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError, RecursionError):
        return text, []
    binding = [(stmt, sorted({name for name, _ in module_level_stores(ast.Module([stmt], [])) if name in unwritten}))
               for stmt in body]
    binding = [(stmt, names) for stmt, names in binding if names]
    lines = text.split("\n")
    notes = [f"line {_span(stmt)[0] + 1} `{_shown(lines[_span(stmt)[0]])}`: "
             + "; ".join(unwritten[name] for name in names) for stmt, names in binding]
    return (replaced(text, [stmt for stmt, _ in binding]) if binding else text), notes


class SkipFlaggedCode(NbGraderPreprocessor):
    """Before the kernel starts: each statement of a student cell that holds the notebook's score for review is
    replaced by `pass` (see grader/heads_unrun.py)."""
    run_as_written = List(Unicode(), help="`student/lesson` whose flagged code the instructor has read and found "
                                          "honest: graded with all its code (grade.py autograde --run-flagged)."
                          ).tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        student, lesson = info.get("student", "?"), info["assignment"]
        if f"{student}/{lesson}" in self.run_as_written:
            return nb, resources
        coursedir = CourseDirectory(config=self.config)
        path = os.path.join(coursedir.format_path(coursedir.release_directory, ".", lesson),
                            f"{info['notebook']}.ipynb")
        try:
            with open(path, encoding="utf-8") as fh:
                release = json.load(fh)
        except (OSError, ValueError):
            self.log.warning("No release of %s at %s: its flagged code runs", lesson, path)
            return nb, resources
        for line in disable_flagged(nb, release):
            problem(self.log, student, lesson, line)
        return nb, resources
