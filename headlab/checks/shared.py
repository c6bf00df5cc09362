"""What the lessons' checks share beyond the engine: a table of mistakes written as data."""
from __future__ import annotations

from typing import Any, Callable, Iterable

from .engine import Mistake


def table(rows: Iterable[tuple], says: str | Callable[[str], Any] = "",
          fix: str | Callable[..., str] = "") -> list[Mistake]:
    """An exercise's mistakes from rows (key, message) or (key, message, fix), in the order of the grader's outputs
    for them (heads_mistakes). What all rows share is said once: `says`, a text, opens every message (then each
    message is a text too), or, a function, makes each message from its row's words; `fix` is the fix of every row
    that gives none."""
    said = says if callable(says) else lambda message: says + message if says else message
    return [Mistake(key, said(message), more[0] if more else fix) for key, message, *more in rows]
