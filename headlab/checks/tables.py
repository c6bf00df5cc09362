"""Mistake tables written as rows of words (lessons 01, 02 and 05): one row per mistake, so that a table holds its
words and nothing else, and the code that turns them into `Mistake`s is written once."""
from __future__ import annotations

from typing import Callable, Sequence

from .engine import Mistake


def mistakes(rows: Sequence[tuple], said: Callable[[str], Callable[..., str]] | None = None) -> list[Mistake]:
    """One Mistake per row (key, message[, fix]). With `said`, a row's message is words that `said(words)` makes
    into the exercise's sentence: a function of the output, for what a format string cannot say (a loss to four
    places, a tensor as a list)."""
    return [Mistake(key, message if said is None else said(message), *fix) for key, message, *fix in rows]


__all__ = ["mistakes"]
