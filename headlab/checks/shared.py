"""What the lessons' checks share beyond the engine: a table of mistakes written as data."""
from __future__ import annotations

from typing import Any, Callable, Iterable

from .engine import Mistake


def table(rows: Iterable[tuple], says: str | Callable[[str], Any] = "",
          fix: str | Callable[..., str] = "") -> list[Mistake]:
    """An exercise's mistakes from rows (key, message) or (key, message, fix), in the order of the grader's outputs
    for them (heads_mistakes). What every row of a table shares is said once: `says` opens each message (a text;
    without it a message may also be a function) or makes each message from the row's (a function), and `fix` is the
    fix of each row that gives none."""
    said = says if callable(says) else lambda message: says + message if says else message
    return [Mistake(key, said(message), more[0] if more else fix) for key, message, *more in rows]
