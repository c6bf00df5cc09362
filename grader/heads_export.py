"""`nbgrader export` for the Heads course: one row per student, one column per notebook.

nbgrader's own CSV has a row per student *and assignment*; a class sheet wants a row per student.
Configured in nbgrader_config.py (`c.ExportApp.plugin_class`), so `nbgrader export --to FILE`
writes it. Columns: `student_id`, one per notebook (`<lesson>/<notebook>` when a lesson has more
than one), `total`, `max_total`. A notebook a student did not submit scores 0.
"""
from __future__ import annotations

import csv

from nbgrader.api import MissingEntry
from nbgrader.plugins import ExportPlugin


def _fmt(x: float) -> str:
    return f"{x:g}"


class WideCsvExport(ExportPlugin):
    def export(self, gradebook) -> None:
        dest = self.to or "grades.csv"
        columns, maxima = [], {}
        for assignment in sorted(gradebook.assignments, key=lambda a: a.name):
            if self.assignment and assignment.name not in self.assignment:
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
        with open(dest, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["student_id", *(c[0] for c in columns), "total", "max_total"])
            for student in students:
                row, total = [student], 0.0
                for _, assignment, notebook in columns:
                    try:
                        score = gradebook.find_submission_notebook(notebook, assignment, student).score
                    except MissingEntry:
                        score = 0.0
                    row.append(_fmt(score))
                    total += score
                writer.writerow([*row, _fmt(total), _fmt(sum(maxima.values()))])
