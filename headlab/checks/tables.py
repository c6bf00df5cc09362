"""Mistake tables written as rows of words (lessons 01, 02 and 05): one row per mistake, so that a table holds its
words and nothing else, and the code that turns them into `Mistake`s is written once."""
from __future__ import annotations

from typing import Callable, Sequence

from .engine import Mistake


def mistakes(rows: Sequence[tuple], said: Callable[[str], Callable[..., str]] | None = None) -> list[Mistake]:
    """One Mistake per row (key, message[, fix]). With `said`, a row whose message is words has them made into the
    exercise's sentence by `said(words)`: a function of the output, for what a format string cannot say (a loss to
    four places, a tensor as a list); a row whose message is already such a function keeps it."""
    return [Mistake(key, said(message) if said and isinstance(message, str) else message, *fix)
            for key, message, *fix in rows]


__all__ = ["mistakes"]
