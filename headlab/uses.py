"""A cell that uses the learner's answer points back to it (issue 27, item 2).

    uses(last_real_index)                 # first line of a cell that calls it: stops, in one line, unless
                                          # its visible check passed in this kernel
    with uses(last_token_pool, last_real_index):
        ...                               # as above, and a failure inside (a `claim:` assert, a crash)
                                          # says that it happened with these answers

A convenience in the learner's kernel, never part of a grade: grades come from the check cells, compared
outside the kernel.
"""
from __future__ import annotations

from typing import Any

from .checks import core


class NotChecked(NotImplementedError):
    """A cell uses an answer whose visible check has not passed in this kernel."""

    def _render_traceback_(self) -> list[str]:
        # One line instead of a traceback: what to run next is all the learner needs.
        return [f"\x1b[0;31mNotChecked\x1b[0m: {self}"]


class UsedAnswerFailed(AssertionError):
    """A cell failed while it used answers that passed their checks: the message names them."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m{type(self.__cause__ or self).__name__}\x1b[0m: {self}"]


def _name(answer: Any) -> str:
    name = getattr(answer, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"uses() takes your functions or classes themselves, e.g. uses(last_real_index); "
                        f"you passed {core.a_type(answer)}.")
    return name


def _quoted(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


class uses:  # noqa: N801 - reads as a statement in a cell: `uses(last_real_index)`
    def __init__(self, *answers: Any):
        self.names = [_name(a) for a in answers]
        for answer, name in zip(answers, self.names):
            if name not in core.checked:   # never checked, or checked and failed: what to do next differs
                raise NotChecked(f"this cell uses your `{name}`, whose check has not passed yet: " + (
                    "fix it and run its check cell again" if core.tried(name) else "run its check cell")) from None
            if core.checked[name] is not answer:
                raise NotChecked(f"this cell uses your `{name}`, which changed after its check passed: "
                                 "run its check cell again") from None

    def __enter__(self) -> "uses":
        return self

    def __exit__(self, kind, err, tb) -> bool:
        if err is None or isinstance(err, (NotChecked, core.CheckFailed, KeyboardInterrupt)):
            return False
        said = " ".join(str(err).split()) or type(err).__name__
        which = _quoted(self.names)
        if isinstance(err, AssertionError) and said.startswith("claim:"):
            message = (f"{said} — this failed with your {which}, which passed its visible check; the check's "
                       "few cases may miss what this cell measures: compare your code with the exercise's "
                       "definition on this cell's inputs")
        else:
            message = f"this cell, using your {which}, raised {type(err).__name__}: {said}"
            hint = core.exception_hint(err, self.names[0])
            if hint:
                message += f" {hint}"
        raise UsedAnswerFailed(message) from err
