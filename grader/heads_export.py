"""`nbgrader export` for the Heads course: one row per student, one column per notebook, and flags.

nbgrader's own CSV has a row per student *and assignment*; a class sheet wants a row per student.
Configured in nbgrader_config.py (`c.ExportApp.plugin_class`), so `nbgrader export --to FILE`
writes it. Columns: `student_id`, one per notebook (`<lesson>/<notebook>` when a lesson has more
than one), `total`, `max_total`, `flags`. A notebook a student did not submit scores 0, but a lesson
that nobody submitted (released early, or generated with the others by release.py) has no column and
counts in no total: a class that has taken one lesson of nine is out of that lesson's points, not of
the course's. `nbgrader export --assignment A --assignment B` (what `grade.py export A B` runs)
exports only those lessons.

A score the gradebook holds above its maximum (a cell's or the notebook's: manual grading gone
wrong, or a forged request to the formgrader) is refused: the cell is left empty, left out of the
total, and named in `flags`. `flags` also carries every flag for review of grader/heads_flags.py
(`lesson/notebook: grade_id: reason`, separated by ` | `); `refused` lists what was refused, so
`grade.py export` can tell the instructor.

A notebook flagged for review (its code or its results look forged) is held: its cell is left empty and out
of the total, and `flags` says `HELD <score> of <max> until reviewed` before the reasons, until the instructor
has looked and clears it (`cleared`, `grade.py export --clear STUDENT/LESSON`). A forged score is so worth
nothing unread, and an honest one flagged by mistake costs a look, not the points. An id two names shared at
collect, and a shell command that only looks around or installs a package by name (`!ls`, `%pip install -q
numpy`: heads_flags.NOT_HELD), are flagged but not held.
"""
from __future__ import annotations

import csv

from nbgrader.api import MissingEntry
from nbgrader.plugins import ExportPlugin
from traitlets import Bool, List, Unicode

from heads_flags import holds, id_flags, notebook_flags


def _fmt(x: float) -> str:
    return f"{x:g}"


def over_maximum(submission) -> list[str]:
    """Why a graded notebook's scores cannot be true: a cell or the notebook above its maximum."""
    out = [f"{g.name} scored {_fmt(g.score)} of {_fmt(g.max_score)}"
           for g in submission.grades if g.score > g.max_score + 1e-9 or g.score < 0]
    if submission.score > submission.max_score + 1e-9 and not out:
        out.append(f"scored {_fmt(submission.score)} of {_fmt(submission.max_score)}")
    return out


class WideCsvExport(ExportPlugin):
    hold_flagged = Bool(True, help="Leave a notebook flagged for review (heads_flags) out of the scores and "
                                   "totals until it is cleared.").tag(config=True)
    cleared = List(Unicode(), help="`student/lesson` or `student/lesson/notebook` whose flags the instructor "
                                   "has reviewed: their scores count though flagged.").tag(config=True)
    refused: list[str] = []
    held: list[str] = []

    def _is_held(self, student: str, assignment: str, notebook: str, flags: list[str]) -> bool:
        return any(map(holds, flags)) and self.hold_flagged and not {f"{student}/{assignment}",
                                                          f"{student}/{assignment}/{notebook}"} & set(self.cleared)

    def export(self, gradebook) -> None:
        dest = self.to or "grades.csv"
        coursedir = getattr(self.parent, "coursedir", None)
        columns, maxima = [], {}
        for assignment in sorted(gradebook.assignments, key=lambda a: a.name):
            if self.assignment and assignment.name not in self.assignment:
                continue
            if not assignment.submissions:  # never taken: zeros here would be no one's score
                self.log.info("Not exporting %s: nobody submitted it", assignment.name)
                continue
            notebooks = sorted(assignment.notebooks, key=lambda n: n.name)
            for nb in notebooks:
                name = nb.name if len(notebooks) == 1 else f"{assignment.name}/{nb.name}"
                columns.append((name, assignment.name, nb.name))
                maxima[name] = nb.max_score
        students = sorted(s.id for s in gradebook.students)
        if self.student:
            students = [s for s in students if s in self.student]
        self.log.info("Exporting %d students x %d notebooks to %s", len(students), len(columns), dest)
        self.refused, self.held = [], []
        with open(dest, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["student_id", *(c[0] for c in columns), "total", "max_total", "flags"])
            for student in students:
                row, total, flags = [student], 0.0, []
                for _, assignment, notebook in columns:
                    where = f"{assignment}/{notebook}"
                    try:
                        sub = gradebook.find_submission_notebook(notebook, assignment, student)
                    except MissingEntry:
                        row.append(_fmt(0.0))
                        continue
                    review = [] if coursedir is None else notebook_flags(
                        coursedir, assignment, notebook, student, {g.name: g.score for g in sub.grades})
                    bad = over_maximum(sub)
                    if bad:
                        row.append("")
                        flags += [f"{where}: REFUSED, {why}" for why in bad]
                        self.refused += [f"{student}/{where}: {why}" for why in bad]
                    elif self._is_held(student, assignment, notebook, review):
                        row.append("")
                        held = f"HELD {_fmt(sub.score)} of {_fmt(sub.max_score)} until reviewed"
                        flags.append(f"{where}: {held}")
                        self.held.append(f"{student}/{where}: {held}")
                    else:
                        row.append(_fmt(sub.score))
                        total += sub.score
                    flags += [f"{where}: {f}" for f in review]
                if coursedir is not None:
                    flags += id_flags(coursedir, student)
                writer.writerow([*row, _fmt(total), _fmt(sum(maxima.values())), " | ".join(flags)])
        for line in self.refused:
            self.log.error("REFUSED %s", line)
        for line in self.held:
            self.log.warning("HELD %s", line)
