"""The one writer: every graded hand-in is applied to the gradebook exactly once.

`grade.py autograde` sends each hand-in to a worker (grader/heads_task.py) and applies what comes back
here, in its own process only. A ledger table in the gradebook, `heads_ledger`, holds one row per
applied result, keyed by (student, lesson, the hand-in's hash, the grader's version); the row and the
grades it brings are written in one transaction. So a result delivered twice (Dask runs a task again
when a worker dies), a coordinator killed mid-run and started again, or a second `autograde` applies
nothing twice, and grades only what is missing: a new or changed hand-in, or a changed grader.
`--regrade` makes the ledger forget the lessons graded, so every hand-in is graded and applied again,
once.

The autograded folder is written before the transaction: a coordinator killed between the two has no
ledger row for it, and the next run grades that hand-in again and replaces the folder.
"""
from __future__ import annotations

import datetime
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Column, DateTime, MetaData, String, Table, select

from heads_task import write_files

_metadata = MetaData()
LEDGER = Table(
    "heads_ledger", _metadata,
    Column("student", String(256), primary_key=True),
    Column("lesson", String(128), primary_key=True),
    Column("handin", String(64), primary_key=True),     # heads_task.handin_hash
    Column("version", String(64), primary_key=True),    # heads_task.grader_version
    Column("applied_at", DateTime, nullable=False),
    Column("worker", String(256)),
)


class Writer:
    """The gradebook at `db_url`, open for applying results; its ledger table is created on opening,
    once, before any task runs (processes that open an empty PostgreSQL gradebook at once mostly fail)."""

    def __init__(self, db_url: str, course_id: str, autograded: Path, verdicts: Path):
        from nbgrader.api import Gradebook

        self.gb = Gradebook(db_url, course_id)
        LEDGER.create(self.gb.engine, checkfirst=True)
        self.autograded, self.verdicts = autograded, verdicts

    def close(self) -> None:
        self.gb.close()

    def applied(self) -> set[tuple[str, str, str, str]]:
        """Every (student, lesson, handin, version) already applied."""
        rows = self.gb.db.execute(select(LEDGER.c.student, LEDGER.c.lesson, LEDGER.c.handin, LEDGER.c.version))
        result = {tuple(row) for row in rows}
        self.gb.db.commit()
        return result

    def forget(self, lessons: list[str]) -> None:
        """`--regrade`: the ledger forgets `lessons`, so that each of their hand-ins is graded and
        applied again, once."""
        with self._one_transaction():
            self.gb.db.execute(LEDGER.delete().where(LEDGER.c.lesson.in_(lessons)))

    def forget_handins(self, where: frozenset[str]) -> None:
        """`grade.py autograde --run-flagged STUDENT/LESSON`: the ledger forgets those hand-ins, so that the
        result graded as written is applied in place of the one already there."""
        with self._one_transaction():
            for student, _, lesson in (w.partition("/") for w in where):
                self.gb.db.execute(LEDGER.delete().where((LEDGER.c.student == student) & (LEDGER.c.lesson == lesson)))

    def apply(self, result: dict) -> bool:
        """Apply one task's result (heads_task.grade_handin, status "graded"): its autograded folder and
        verdicts, then its scores, comments and ledger row in one transaction. False, with nothing
        written, when the ledger already has it."""
        from nbgrader.utils import parse_utc

        key = {k: result[k] for k in ("student", "lesson", "handin", "version")}
        student, lesson = result["student"], result["lesson"]
        with self._one_transaction() as gb:
            if gb.db.execute(select(LEDGER.c.student).filter_by(**key)).first():
                return False
            write_folder(self.autograded / student / lesson, result["files"])
            write_verdicts(self.verdicts / lesson / student, result.get("verdicts", {}))
            gb.update_or_create_student(student)
            stamp = {"timestamp": parse_utc(result["timestamp"])} if result.get("timestamp") else {}
            gb.update_or_create_submission(lesson, student, **stamp)
            for notebook, data in result["notebooks"].items():
                sub = gb.find_submission_notebook(notebook, lesson, student)
                for grade in sub.grades:
                    if grade.name in data["grades"]:   # as nbgrader's SaveAutoGrades does
                        grade.auto_score = data["grades"][grade.name]
                        grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
                for comment in sub.comments:
                    if comment.name in data["comments"]:
                        comment.auto_comment = data["comments"][comment.name]
                sub.late_submission_penalty = data.get("late_penalty")
            gb.db.execute(LEDGER.insert().values(**key, applied_at=datetime.datetime.utcnow(),
                                                 worker=f"{result.get('worker')}:{result.get('pid')}"))
        return True

    @contextmanager
    def _one_transaction(self):
        session = self.gb.db
        self.gb.db = _OneTransaction(session)
        try:
            yield self.gb
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            self.gb.db = session


class _OneTransaction:
    """nbgrader's Gradebook commits after every change; during an apply its commits only flush, so that
    the whole hand-in (submission, grades, comments, ledger row) is committed once, or not at all."""

    def __init__(self, session):
        self.session = session

    def commit(self) -> None:
        self.session.flush()

    def __getattr__(self, name):
        return getattr(self.session, name)


def write_folder(folder: Path, files: dict[str, bytes]) -> None:
    """Replace `folder` by `files` (heads_task.read_handin), built beside it and swapped in."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    write_files(fresh, files)
    fresh.chmod(0o755)
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.is_dir():
        shutil.rmtree(folder)
    os.replace(fresh, folder)


def write_verdicts(folder: Path, verdicts: dict[str, str]) -> None:
    """A result's verdict files, for the class report (grader/heads_report.py)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in verdicts.items():
        if "/" not in name and name.endswith(".json"):
            (folder / name).write_text(text)
