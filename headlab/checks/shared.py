"""What the lessons' checks share beyond the engine: a table of mistakes written as data, one row per mistake, so that
a table holds its words and the code that makes them `Mistake`s is written once."""
from __future__ import annotations

from typing import Any, Callable, Iterable

from .engine import Mistake


def table(rows: Iterable[tuple], says: str | Callable[[str], Any] = "",
          fix: str | Callable[..., str] = "") -> list[Mistake]:
    """An exercise's mistakes from rows (key, message) or (key, message, fix), in the order of the grader's outputs
    for them (heads_mistakes). What all rows share is said once: `says`, a text, opens every message, or, a
    function, makes each message from its row's words (a function of the output, for what a format string cannot
    say: a loss to four places, a tensor as a list); `fix` is the fix of every row that gives none. A row whose
    message is already a function of the output keeps it."""
    def said(message):
        if not isinstance(message, str):
            return message
        return says(message) if callable(says) else says + message
    return [Mistake(key, said(message), more[0] if more else fix) for key, message, *more in rows]
