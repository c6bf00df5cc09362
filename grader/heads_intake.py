"""A hand-in is measured before nbgrader reads it: bytes, cells and stored output, each capped.

nbgrader parses, validates, copies and executes a notebook whole, in one process: a 100 MB hand-in or
one of 100,000 cells held one grader process at 1.2 GB for 7 minutes. `HandInLimits` (its caps are
traits, set in nbgrader_config.py) says why a hand-in is too large, reading its size before its
contents and its contents only when they are under the byte cap, so the grader never holds more than
that.

- `grade.py autograde` checks every hand-in before it starts nbgrader: one over a cap is set aside
  (renamed `NAME.ipynb.too-large` in `submitted/`, nothing deleted), scores 0, and is printed as a
  `PROBLEM` line with its reason.
- `nbgrader autograde` run by hand does the same check first (`refuse_oversized`, installed by
  nbgrader_config.py): that student's notebook fails with the reason in a `HEADS-PROBLEM` log line,
  and the classmates are graded.
"""
from __future__ import annotations

import functools
import json
import os

from traitlets.config import Configurable

from heads_files import limit

TOO_LARGE = ".too-large"


class HandInTooLarge(Exception):
    pass


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


class HandInLimits(Configurable):
    max_bytes = limit(16 * 1024**2, "Bytes a hand-in (the .ipynb file) may have, where a lesson with its outputs "
                                    "is under 0.5 MiB; a larger one is refused unread", off=-1)
    max_cells = limit(1000, "Cells a hand-in may have, where a lesson has 30-60", off=-1)
    max_output_bytes = limit(8 * 1024**2, "Bytes of output a hand-in may have stored in its cells, every output "
                                          "counted as JSON, where a lesson's, plots included, are under 0.5 MiB",
                             off=-1)

    def over(self, path: str) -> str | None:
        """Why the hand-in at `path` is over a cap, or None (also when it is not JSON: the
        readability check then says why)."""
        size = os.stat(path).st_size
        if 0 <= self.max_bytes < size:
            return (f"{_mib(size)}, more than the {_mib(self.max_bytes)} a hand-in may be "
                    "(HandInLimits.max_bytes)")
        try:
            with open(path, "rb") as fh:
                book = json.loads(fh.read(size + 1))
        except (ValueError, RecursionError):
            return None
        cells = book.get("cells") if isinstance(book, dict) else None
        if not isinstance(cells, list):
            return None
        if 0 <= self.max_cells < len(cells):
            return f"{len(cells)} cells, more than the {self.max_cells} a hand-in may have (HandInLimits.max_cells)"
        stored = sum(len(json.dumps(c.get("outputs", []))) for c in cells if isinstance(c, dict))
        if 0 <= self.max_output_bytes < stored:
            return (f"{_mib(stored)} of stored output, more than the {_mib(self.max_output_bytes)} a "
                    "hand-in may keep (HandInLimits.max_output_bytes)")
        return None


def set_aside(path, limits: HandInLimits) -> str | None:
    """Rename the hand-in at `path` to NAME.ipynb.too-large when it is over a cap; the report line,
    or None when it is within them."""
    why = limits.over(str(path))
    if why is None:
        return None
    aside = f"{path}{TOO_LARGE}"
    os.replace(path, aside)
    return f"refused before grading: {why}; kept as {os.path.basename(aside)}, scored 0"


def refuse_oversized(convert):
    """Wrap nbgrader's `Autograde.convert_single_notebook` so that a hand-in over a cap is refused
    before nbgrader reads it: a `HEADS-PROBLEM` log line says why, and nbgrader fails that student's
    notebook only."""
    from heads_files import problem

    if getattr(convert, "refuses_oversized", False):   # the configuration is loaded once per task on a worker
        return convert

    @functools.wraps(convert)
    def checked(self, notebook_filename: str) -> None:
        why = HandInLimits(parent=self).over(notebook_filename)
        if why:
            student, lesson = _owner(notebook_filename)
            problem(self.log, student, lesson, f"refused before grading: {why}; scored 0")
            raise HandInTooLarge(why)
        convert(self, notebook_filename)
    checked.refuses_oversized = True
    return checked


def _owner(path: str) -> tuple[str, str]:
    """(student, lesson) of `submitted/<student>/<lesson>/<notebook>.ipynb`."""
    parts = os.path.normpath(path).split(os.sep)
    return (parts[-3], parts[-2]) if len(parts) >= 3 else ("?", "?")
