"""What each usual wrong answer returns: the grader's half of the checks' mistake tables (issue 25, N1).

The checks in `headlab/checks/` name a mistake when the learner's output equals what that mistake returns on the
same inputs. The words (key, message, fix) are the package's, since a learner reads them in their own kernel; the
functions that compute a mistake's output are here, outside the package students install: any function general
enough to compute a wrong answer is usually one argument away from the right one, which a student could call
instead of writing it. This module is not installed in the student's environment and the grading sandbox does not
bind it, so only the grading process, `tests/` and `dev/` import it; a student's kernel reads the outputs on the
visible checks' inputs from a recording (headlab/checks/engine.py: `mistake_output`, `RECORDING`).

One module per lesson, `chNN`, registers each exercise's outputs in the order of its table in
`headlab.checks.chNN`: the i-th output belongs to the i-th mistake, and carries its key, which must match.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

from headlab.codec import GraderError


@dataclass(frozen=True)
class Wrong:
    """What a mistake returns: `output(*inputs)`, or with `twist`, `output(expected, *inputs)`: the right answer
    given the mistake's twist (the mask transposed), which computes nothing a student could hand in. It may raise
    or return None where the mistake does not apply to a case."""

    key: str
    output: Callable[..., Any]
    twist: bool = False


def wrong(key: str, output: Callable[..., Any]) -> Wrong:
    return Wrong(key, output)


def twist(key: str, output: Callable[..., Any]) -> Wrong:
    return Wrong(key, output, twist=True)


_OUTPUTS: dict[str, list[Wrong]] = {}
_RIGHT: dict[str, Callable[..., Any]] = {}
_REFERENCES: dict[str, Callable[..., Any]] = {}
_loaded = False


def register(name: str, outputs: list[Wrong], right: Callable[..., Any] | None = None) -> None:
    """The outputs of exercise `name`'s mistakes, in the order of its table; and, for a loss whose check compares
    the gradient it gives (engine.backward_through), the right loss."""
    _OUTPUTS[name] = list(outputs)
    if right is not None:
        _RIGHT[name] = right


def register_reference(name: str, head: Callable[..., Any]) -> None:
    """The right head `name` as a function of its input and the weights the grader loads: what a class check
    compares the learner's head with (engine.reference, engine.reference_step)."""
    _REFERENCES[name] = head


def _load() -> None:
    """Every lesson's module, registered on first use."""
    global _loaded
    if not _loaded:
        for info in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{info.name}")
        _loaded = True


def outputs(name: str) -> list[Wrong]:
    _load()
    return _OUTPUTS.get(name, [])


def right(name: str) -> Callable[..., Any]:
    """The right loss of exercise `name`, whose gradient the check compares with the learner's."""
    _load()
    return _RIGHT[name]


def output(name: str, index: int, key: str) -> Wrong:
    """The output of the `index`-th mistake of exercise `name`, whose key is `key`."""
    table = outputs(name)
    if not 0 <= index < len(table) or table[index].key != key:
        found = table[index].key if 0 <= index < len(table) else "nothing"
        raise GraderError(f"{name}: mistake {index} is {key!r} in headlab's table and {found} in heads_mistakes")
    return table[index]


def reference(name: str) -> Callable[..., Any]:
    _load()
    return _REFERENCES[name]
