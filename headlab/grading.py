"""Grading outside the student's process: the kernel only runs answers on given inputs and returns data.

A check (`headlab.checks`) reaches the learner's code only through `core.call` (a function called
on inputs) and `core.drive` (a driver that builds the learner's class, loads weights, runs it and
returns plain data). Everything else a check does is comparison and diagnosis. That split lets a
check run in three ways:

- **directly**, in a notebook (self-study, Colab): the learner's code is called in place;
- **recording**, on the instructor's solution (`record_cell`): every call and drive is written down
  with its inputs, together with the check's own arguments (the hidden cases and expected values);
- **replaying**, in the grader's own process (`Replay`): the check runs again on the recorded
  arguments, and each call or drive returns what the *student's* kernel returned for those inputs.

Between the last two, the student's kernel runs `kernel.respond(grade_id)` in place of the test
cell: it reads the recorded inputs (never the expected values), calls the student's answers on them
and writes the results as data (`codec`: JSON, tensors as raw bytes, never pickle). Whatever the student's
code patches in its own process can change only what its answers return.

The boundary is in the tree: `headlab/kernel.py` is all that runs in the student's kernel for the grader (respond
and the drivers, which return facts and name nothing), `headlab/codec.py` the data both sides read, and this
module with the checks the grader's side (recording, replay, judging).
"""
from __future__ import annotations

import builtins
import hashlib
import importlib
import io
import json
import math
import os
import re
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NoReturn

import torch

from .codec import (GLOBALS, PLAIN_NAME, GraderError, at, decode, digest, encode, safe_str,
                    stand_in_object)

SEED_VARIABLE = "HEADS_HIDDEN_SEED"   # set only in the kernel that records the checks on the solution


def hidden_seed(n: int) -> int:
    """The seed a hidden test draws its inputs from, in place of its fixed `n`.

    In the recording of a grading run (`RunAnswersOnly`, which sets HEADS_HIDDEN_SEED to that run's seed)
    it is `n` mixed with the run's seed, so each run draws fresh hidden inputs, and a feedback page of
    one run tells nothing about the next. Anywhere else (the solution notebook run by hand or by
    nbval) it is `n`, so the solution's stored outputs stay the same."""
    run = os.environ.get(SEED_VARIABLE)
    if run is None:
        return n
    return int.from_bytes(hashlib.sha256(f"{run}:{n}".encode()).digest()[:4], "big") >> 1


# --- sessions: how core.call and core.drive reach the learner's code -------------------------------------
_session: "_Session | None" = None


def active() -> "_Session | None":
    return _session


class _Session:
    def __enter__(self):
        global _session
        if _session is not None:
            raise GraderError("a check session is already running")
        _session = self
        return self

    def __exit__(self, *exc):
        global _session
        _session = None
        return False


class Record(_Session):
    """Runs a check on the instructor's answer and writes down every call and drive it makes."""

    def __init__(self, answer: Any):
        self.answer, self.calls, self._inside_drive = answer, [], False

    def call(self, fn: Callable, name: str, args: tuple, kwargs: dict) -> Callable:
        if self._inside_drive:
            return fn
        if fn is not self.answer:
            raise GraderError(f"a check called {name} directly on something other than the answer; "
                              "reach the learner's objects through core.drive")
        self.calls.append({"kind": "call", "name": name, "args": encode(args), "kwargs": encode(kwargs),
                           "grad": torch.is_grad_enabled(), "digest": digest(name, args, kwargs)})
        return fn

    def drive(self, driver: Callable, answer: Any, args: tuple) -> Any:
        if answer is not self.answer:
            raise GraderError(f"{driver.__name__} was driven on something other than the answer")
        name = f"{driver.__module__}:{driver.__name__}"
        self.calls.append({"kind": "drive", "name": name, "args": encode(args), "kwargs": encode({}),
                           "grad": torch.is_grad_enabled(), "digest": digest(name, args, {})})
        self._inside_drive = True
        try:
            return driver(answer, *args)
        finally:
            self._inside_drive = False


class Replay(_Session):
    """Runs a check in the grader's process; each call or drive returns what the student's kernel
    returned for the same recorded inputs."""

    def __init__(self, calls: list[dict], results: list[Any]):
        self.calls, self.results, self.used = calls, results, 0

    def _next(self, name: str, args: tuple, kwargs: dict) -> Any:
        if self.used >= len(self.calls):
            raise GraderError(f"the check made more calls than were recorded ({name})")
        record, i = self.calls[self.used], self.used
        self.used += 1
        if record["name"] != name or record["digest"] != digest(name, args, kwargs):
            raise GraderError(f"call {i} ({name}) does not match the recording")
        result = self.results[i] if i < len(self.results) else None
        if not isinstance(result, dict):   # a kernel that stopped early, or wrote something else
            return {"raised": {"type": "NoResult", "message": "the notebook returned no result for this call"}}
        return result

    def call(self, fn: Callable, name: str, args: tuple, kwargs: dict) -> Callable:
        result = self._next(name, args, kwargs)

        def replayed(*a, **k):
            return _replay_result(result, a, k)
        return replayed

    def drive(self, driver: Callable, answer: Any, args: tuple) -> Any:
        from .checks.core import CheckFailed, NotWritten

        result = self._next(f"{driver.__module__}:{driver.__name__}", args, {})
        if "raised" in result:
            kind, message = _raised(result)
            if kind == "NotImplementedError":
                raise NotWritten(message)
            # A driver returns facts and names nothing (checks/heads.py): a key the kernel sends is not the course's.
            raise CheckFailed(f"{driver.__name__.removeprefix('drive_')} raised {kind}: {message}", "")
        return decode(result["value"])


def _raised(result: dict) -> tuple[str, str]:
    raised = result["raised"]
    kind = str(raised.get("type", "Exception"))
    return (kind if PLAIN_NAME.fullmatch(kind) else "Exception"), str(raised.get("message", ""))[:4000]


def reraise(raised: dict) -> NoReturn:
    """Raise again, in the grader's process, what the kernel reported as {"type", "message"}: a builtin
    exception as itself (so that a check's `except IndexError` still applies), another as a class of its name."""
    kind, message = _raised({"raised": raised})
    builtin = getattr(builtins, kind, None)
    if isinstance(builtin, type) and issubclass(builtin, Exception) and builtin is not KeyError:
        raise builtin(message)
    raise type(kind, (Exception,), {"__str__": lambda self: message})(message)


def _replay_result(result: dict, args: tuple, kwargs: dict) -> Any:
    """What the student's function did with these arguments: change them in place, return a value
    (tied to the inputs' graph by the gradients it had), or raise."""
    for path, after in result.get("changed", []):
        target = at(args, kwargs, path)
        if type(target) is list and type(after) is list:
            target[:] = decode(after)
        elif isinstance(target, torch.Tensor):
            with torch.no_grad():
                new = decode(after)
                if new.shape == target.shape:
                    target.copy_(new.to(target.dtype))
    if "raised" in result:
        reraise(result["raised"])
    value = decode(result["value"])
    alias = result.get("alias")
    if isinstance(alias, list) and type(value) in (tuple, list):   # some parts are inputs themselves
        parts = [part if where is None else at(args, kwargs, where) for part, where in zip(value, alias)]
        return type(value)(parts)
    if alias is not None and not isinstance(alias, list):   # (a view of) one of its inputs
        return at(args, kwargs, alias)
    if isinstance(value, torch.Tensor) and "grads" in result:
        value = _with_grads(value, args, kwargs, result["grads"])
    return value


def _with_grads(value: torch.Tensor, args: tuple, kwargs: dict, grads: list) -> torch.Tensor:
    """`value`, differentiable so that value.sum().backward() gives the inputs the recorded gradients."""
    value = value.detach()
    link = None
    for path, g in grads:
        x = at(args, kwargs, path)
        g = decode(g)
        if isinstance(x, torch.Tensor) and x.requires_grad and g.shape == x.shape:
            term = (x * g.to(x.dtype)).sum()
            link = term - term.detach() if link is None else link + term - term.detach()
    if link is None:
        return value.requires_grad_() if value.is_floating_point() else value
    return value + link / max(1, value.numel())


# --- the instructor's side: recording a solution notebook ------------------------------------------------
class RecordingChecks:
    """Stands in for `check` in one test cell while the instructor's solution runs: each check it
    runs is recorded, arguments (the hidden cases) included."""

    def __init__(self, module: Any, book: dict, grade_id: str):
        self._module, self._book, self._grade_id = module, book, grade_id

    def __getattr__(self, name: str) -> Any:
        check = getattr(self._module, name)
        if name.startswith("_") or not callable(check) or isinstance(check, type):
            return check

        def recorded(answer, *args, **kwargs):
            entry = {"check": f"{self._module.__name__}:{name}", "answer": answer_name(answer),
                     "args": encode(args), "kwargs": encode(kwargs)}
            with Record(answer) as session:
                check(answer, *args, **kwargs)   # the solution must pass its own check
            entry["calls"] = session.calls
            self._book.setdefault(self._grade_id, []).append(entry)
        return recorded


def answer_name(answer: Any) -> str:
    if isinstance(answer, dict):
        return GLOBALS
    name = getattr(answer, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise GraderError(f"a check was given {answer!r}, which has no name to find it by")
    return name


_BOOK: dict = {}


def record_cell(check: Any, grade_id: str) -> RecordingChecks:
    return RecordingChecks(check, _BOOK, grade_id)


def end_cell(check: Any) -> Any:
    return check._module if isinstance(check, RecordingChecks) else check


def recorded_source(grade_id: str, source: str) -> str:
    """A test cell's source that records the checks it runs (for a run of the solution notebook)."""
    return (f"import headlab.grading as _heads_grading\n"
            f"check = _heads_grading.record_cell(check, {grade_id!r})\n{source}\n"
            f"check = _heads_grading.end_cell(check)\n")


def save_book(path: str) -> None:
    Path(path).write_text(json.dumps(_BOOK))


def kernel_view(book: dict) -> dict:
    """What the student's kernel may see of a recording: which answer, and the inputs of each call."""
    return {grade_id: [{"answer": e["answer"],
                        "calls": [{k: c[k] for k in ("kind", "name", "args", "kwargs", "grad")}
                                  for c in e["calls"]]}
                       for e in entries]
            for grade_id, entries in book.items()}


# --- the grader's side: judging -----------------------------------------------------------------------
def stand_in(description: dict) -> Any:
    """An object a check can be given in place of the student's answer, of the same kind."""
    import torch.nn as nn

    kind = description.get("kind")
    name = str(description.get("type", "Answer"))
    name = name if PLAIN_NAME.fullmatch(name) else "Answer"
    if kind == "module class":
        return type(name, (nn.Module,), {})
    if kind == "class":
        return type(name, (), {})
    if kind == "module":
        return type(name, (nn.Module,), {})()
    if kind == "function":
        def answer(*args, **kwargs):
            raise GraderError("a check called the answer outside core.call")
        answer.__name__ = name
        return answer
    if kind == "namespace":
        return {}
    return stand_in_object(name)


@dataclass
class Verdict:
    """The outcome of a test cell, judged outside the kernel."""

    passed: bool
    printed: str = ""   # what the checks printed (their pass lines)
    error: str = ""     # the failure's type name, e.g. CheckFailed
    message: str = ""   # the failure's message, which names the mistake
    key: str = ""       # the mistake's key in the exercise's table, where the check has one
    fingerprint: str = ""   # of the answer's results on the grader's inputs, for a wrong value no key explains

    def text(self) -> str:
        return self.printed + ("" if self.passed else f"{self.error}: {self.message}")

    @property
    def mistake(self) -> str:
        """The mistake this failure names, the same for every student who made it: its key in the
        exercise's table; for a wrong value no entry explains, `unnamed-` and the fingerprint of the answer's
        outputs, so that students who wrote the same wrong function share a row of the class report and
        different ones do not; else the message's first sentence with numbers, shapes and values left out."""
        if self.passed:
            return ""
        if self.key == UNEXPLAINED and self.fingerprint:
            return f"unnamed-{self.fingerprint}"
        return self.key or mistake_key(self.error, self.message)

    def as_dict(self) -> dict:
        return {"passed": self.passed, "error": self.error, "message": self.message, "mistake": self.mistake}


UNEXPLAINED = "wrong-values"   # the engine's key for a wrong value that no mistake of the table gives


def fingerprint(answers: list[dict]) -> str:
    """Eight hex digits that stand for what an answer returned on the grader's inputs (one grading run draws
    the same inputs for every hand-in). Floating-point values are rounded to 4 decimals first, so one wrong
    function gives one fingerprint on any worker, whatever its BLAS."""
    def plain(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            value = value.detach()
            if value.is_floating_point():
                value = value.double().nan_to_num(nan=9e99, posinf=8e99, neginf=-8e99).round(decimals=4) + 0.0
            return [str(value.dtype), list(value.shape), value.tolist()]
        if isinstance(value, float):
            return round(value, 4) + 0.0 if math.isfinite(value) else repr(value)
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value if isinstance(value, (int, str, bool, type(None))) else type(value).__name__

    def read(result: dict) -> Any:   # a result of `_run`: encoded values, and paths into the inputs
        return {key: result[key] if key in ("raised", "alias") else
                decode(result[key]) if key == "value" else [[path, decode(x)] for path, x in result[key]]
                for key in sorted(result)}

    try:
        results = [[plain(read(result)) for result in answer.get("results", [])] for answer in answers]
    except Exception:   # results the judge could not read fail apart, before any fingerprint is asked for
        return ""
    return hashlib.sha256(json.dumps(results, sort_keys=True).encode()).hexdigest()[:8]


def mistake_key(error: str, message: str) -> str:
    first = re.split(r"(?<=[.!?])\s|\n", message.strip(), maxsplit=1)[0]
    while True:   # innermost brackets of values first, until none is left
        shorter = re.sub(r"(tensor)?[\[(][^\[\]()]*[\])]", "…", first)
        if shorter == first:
            break
        first = shorter
    first = re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", first)
    first = re.sub(r"\s+", " ", first).strip()
    return f"{error}: {first}"

def judge(entries: list[dict], answers: list[dict]) -> Verdict:
    """Replay a test cell's recorded checks on the student's results."""
    from .checks.core import CheckFailed

    printed = ""
    if len(answers) != len(entries):
        return Verdict(False, error="NoAnswers", message=(
            f"the grader got answers to {len(answers)} of this cell's {len(entries)} checks: it did not run to the end "
            "(the time limit, or an answer that stopped it)"))
    for entry, answer in zip(entries, answers):
        description = answer.get("answer", {}) if isinstance(answer, dict) else {}
        if description.get("kind") == "missing":
            return Verdict(False, printed, "NameError", (
                f"{entry['answer']} is not defined. Define it in its answer cell under the same name "
                "(was it renamed or deleted?)."))
        module, _, name = entry["check"].partition(":")
        if not module.startswith("headlab.checks."):
            raise GraderError(f"not a course check: {entry['check']}")
        check = getattr(importlib.import_module(module), name)
        buffer = io.StringIO()
        try:
            with Replay(entry["calls"], list(answer.get("results", []))), redirect_stdout(buffer):
                check(stand_in(description), *decode(entry["args"]), **decode(entry["kwargs"]))
        except GraderError:
            raise
        except CheckFailed as err:
            return Verdict(False, printed + buffer.getvalue(), "CheckFailed", str(err), err.mistake,
                           fingerprint(answers) if err.mistake == UNEXPLAINED else "")
        except NotImplementedError as err:
            return Verdict(False, printed + buffer.getvalue(), "NotImplementedError", str(err), "not-written")
        except Exception as err:  # the check could not read what the answer returned
            return Verdict(False, printed + buffer.getvalue(), type(err).__name__, safe_str(err))
        printed += buffer.getvalue()
    return Verdict(True, printed)
