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

Between the last two, the student's kernel runs `respond(grade_id, globals())` in place of the test
cell: it reads the recorded inputs (never the expected values), calls the student's answers on them
and writes the results as data (JSON, tensors as raw bytes: never pickle). Whatever the student's
code patches in its own process can change only what its answers return.
"""
from __future__ import annotations

import base64
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

FOLDER = ".heads_grader"          # in the notebook's folder, the grader's: calls.json, the inputs
ANSWERS = ".heads_answers"        # in the notebook's folder, the kernel's: <grade_id>.json, the results
GLOBALS = "$globals"              # the answer of a check that reads the notebook's namespace

_DTYPES = {str(dt).removeprefix("torch."): dt for dt in (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.uint8, torch.int8, torch.int16,
    torch.int32, torch.int64, torch.bool)}
_BITS = {torch.bfloat16: torch.int16}   # dtypes numpy cannot hold: their bits travel as an integer
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,79}")


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


class GraderError(RuntimeError):
    """The recording and the replay disagree: a bug in the course, never the student's doing."""


# --- data in and out of the kernel --------------------------------------------------------------------
def encode(value: Any, _depth: int = 0) -> Any:
    """`value` as JSON-able data: tensors as dtype, shape and raw bytes, containers kept as they were;
    anything else becomes its type name (so a check can still say "returned a list")."""
    if _depth > 32:
        return {"$obj": "object", "repr": "nested too deeply"}
    if value is None or type(value) in (bool, str):
        return value
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        return {"$np": str(value.dtype), "v": encode(value.item(), _depth + 1)}
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else {"$f": repr(float(value))}
    if isinstance(value, torch.Tensor):
        return _encode_tensor(value)
    if isinstance(value, torch.Generator):
        return {"$gen": _encode_tensor(value.get_state())}
    if isinstance(value, torch.dtype):
        return {"$dtype": str(value).removeprefix("torch.")}
    if isinstance(value, tuple) and (type(value) in (tuple, torch.Size)
                                     or type(value).__module__ == "torch.return_types"):  # values, indices
        return {"$tuple": [encode(v, _depth + 1) for v in value]}
    if type(value) is list:
        return [encode(v, _depth + 1) for v in value]
    if type(value) is dict:
        return {"$dict": [[encode(k, _depth + 1), encode(v, _depth + 1)] for k, v in value.items()]}
    return {"$obj": type(value).__name__, "repr": _safe_repr(value)}


def _encode_tensor(t: torch.Tensor) -> dict:
    plain = t.detach().cpu().contiguous().clone()
    if type(plain) is not torch.Tensor:  # a subclass: only its data travels
        plain = plain.as_subclass(torch.Tensor)
    if plain.dtype not in _DTYPES.values():
        return {"$obj": "Tensor", "repr": f"a tensor of dtype {plain.dtype}"}
    bits = plain.view(_BITS[plain.dtype]) if plain.dtype in _BITS else plain
    return {"$t": str(plain.dtype).removeprefix("torch."), "shape": list(plain.shape),
            "grad": bool(t.requires_grad), "b": base64.b64encode(bits.numpy().tobytes()).decode()}


def decode(data: Any, _depth: int = 0) -> Any:
    """The value `encode` wrote. Strict: unknown shapes of data raise ValueError."""
    if _depth > 40:
        raise ValueError("data nested too deeply")
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [decode(v, _depth + 1) for v in data]
    if not isinstance(data, dict) or len(data) == 0:
        raise ValueError(f"unexpected data {type(data).__name__}")
    if "$t" in data:
        return _decode_tensor(data)
    if "$f" in data:
        return float(data["$f"]) if data["$f"] in ("nan", "inf", "-inf") else _bad("float")
    if "$tuple" in data:
        return tuple(decode(v, _depth + 1) for v in _list(data["$tuple"]))
    if "$dict" in data:
        return {decode(k, _depth + 1): decode(v, _depth + 1) for k, v in _list(data["$dict"])}
    if "$gen" in data:
        return torch.Generator().set_state(_decode_tensor(data["$gen"]))
    if "$np" in data:
        import numpy as np

        kind = str(data["$np"])
        if kind not in ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"):
            raise ValueError("malformed numpy scalar")
        return np.dtype(kind).type(decode(data["v"], _depth + 1))
    if "$dtype" in data:
        return _DTYPES.get(data["$dtype"]) or _bad("dtype")
    if "$obj" in data:
        return stand_in_object(str(data["$obj"]), str(data.get("repr", ""))[:300])
    raise ValueError("unexpected data")


def _decode_tensor(data: dict) -> torch.Tensor:
    dtype = _DTYPES.get(data.get("$t"))
    shape = data.get("shape")
    if dtype is None or not isinstance(shape, list) or not all(isinstance(s, int) and 0 <= s for s in shape):
        raise ValueError("malformed tensor")
    raw = base64.b64decode(str(data.get("b", "")), validate=True)
    bits = _BITS.get(dtype, dtype)
    numel = math.prod(shape)
    if numel * torch.empty((), dtype=bits).element_size() != len(raw):
        raise ValueError("tensor bytes do not match its shape")
    t = torch.frombuffer(bytearray(raw), dtype=bits) if raw else torch.empty(0, dtype=bits)
    t = t.reshape(shape).clone()
    t = t.view(dtype) if bits is not dtype else t
    if data.get("grad") is True and t.is_floating_point():
        t.requires_grad_()
    return t


def _list(value) -> list:
    return value if isinstance(value, list) else _bad("container")


def _bad(what: str):
    raise ValueError(f"malformed {what}")


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)[:200]
    except Exception:  # a student's object whose repr raises
        return "?"


def stand_in_object(type_name: str, text: str = "") -> Any:
    """An object whose type has the given name: what a check sees of an answer it cannot hold."""
    name = type_name if _NAME.fullmatch(type_name) else "object"
    return type(name.rsplit(".", 1)[-1], (), {"__repr__": lambda self: text or f"<{name}>"})()


def digest(name: str, args: Any, kwargs: Any) -> str:
    text = json.dumps([name, encode(args), encode(kwargs)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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
    return (kind if _NAME.fullmatch(kind) else "Exception"), str(raised.get("message", ""))[:4000]


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
        target = _at(args, kwargs, path)
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
        parts = [part if where is None else _at(args, kwargs, where) for part, where in zip(value, alias)]
        return type(value)(parts)
    if alias is not None and not isinstance(alias, list):   # (a view of) one of its inputs
        return _at(args, kwargs, alias)
    if isinstance(value, torch.Tensor) and "grads" in result:
        value = _with_grads(value, args, kwargs, result["grads"])
    return value


def _with_grads(value: torch.Tensor, args: tuple, kwargs: dict, grads: list) -> torch.Tensor:
    """`value`, differentiable so that value.sum().backward() gives the inputs the recorded gradients."""
    value = value.detach()
    link = None
    for path, g in grads:
        x = _at(args, kwargs, path)
        g = decode(g)
        if isinstance(x, torch.Tensor) and x.requires_grad and g.shape == x.shape:
            term = (x * g.to(x.dtype)).sum()
            link = term - term.detach() if link is None else link + term - term.detach()
    if link is None:
        return value.requires_grad_() if value.is_floating_point() else value
    return value + link / max(1, value.numel())


def _at(args: tuple, kwargs: dict, path: Any) -> Any:
    return args[path] if isinstance(path, int) else kwargs[path]


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


# --- the student's side: the kernel answers ------------------------------------------------------------
def describe(answer: Any) -> dict:
    """What kind of object an answer is, so the grader can stand in for it."""
    import torch.nn as nn

    if answer is _MISSING:
        return {"kind": "missing"}
    if isinstance(answer, dict):
        return {"kind": "namespace"}
    if isinstance(answer, type):
        return {"kind": "module class" if issubclass(answer, nn.Module) else "class",
                "type": answer.__name__}
    if isinstance(answer, nn.Module):
        return {"kind": "module", "type": type(answer).__name__}
    return {"kind": "function" if callable(answer) else "value", "type": type(answer).__name__}


_MISSING = object()


def respond(grade_id: str, namespace: dict) -> None:
    """Run this test cell's answers on the grader's inputs and leave the results for the grader."""
    from .checks.core import checked   # not at import: headlab.checks imports this module

    folder = Path(FOLDER)
    book = json.loads((folder / "calls.json").read_text())
    out = []
    for entry in book.get(grade_id, []):
        name = entry["answer"]
        answer = namespace if name == GLOBALS else namespace.get(name, _MISSING)
        results = [] if answer is _MISSING else [_run(answer, call) for call in entry["calls"]]
        out.append({"answer": describe(answer), "results": results})
        if answer is not _MISSING and name != GLOBALS:
            # Later cells that start with uses(answer) run, as after a visible check: whether it passed is
            # decided outside, and the feedback shows what they do with the answer (never a grade).
            checked[name] = answer
    Path(ANSWERS).mkdir(exist_ok=True)
    target = Path(ANSWERS) / f"{grade_id}.json"
    target.with_suffix(".tmp").write_text(json.dumps(out))
    os.replace(target.with_suffix(".tmp"), target)
    print("Your answers were run on the grader's inputs; the grade is decided outside this notebook.")


def _run(answer: Any, call: dict) -> dict:
    args, kwargs = decode(call["args"]), decode(call["kwargs"])
    try:
        with torch.set_grad_enabled(bool(call["grad"])), redirect_stdout(io.StringIO()):
            if call["kind"] == "drive":
                return {"value": encode(_driver(call["name"])(answer, *args))}
            before = [(p, x.detach().clone()) for p, x in _tensors(args, kwargs)]
            before += [(p, encode(x)) for p, x in _lists(args, kwargs)]
            value = answer(*args, **kwargs)
            return _result(value, args, kwargs, before)
    except NotImplementedError as err:
        return {"raised": {"type": "NotImplementedError", "message": str(err)}}
    except Exception as err:  # the student's bug: reported by the grader like the check would
        return {"raised": {"type": type(err).__name__, "message": _safe_str(err)}}


def _driver(name: str) -> Callable:
    module, _, attr = name.partition(":")
    if not (module.startswith("headlab.checks.") and attr.startswith("drive_")):
        raise GraderError(f"not a course driver: {name}")
    return getattr(importlib.import_module(module), attr)


def _tensors(args: tuple, kwargs: dict):
    yield from ((i, a) for i, a in enumerate(args) if isinstance(a, torch.Tensor))
    yield from ((k, a) for k, a in kwargs.items() if isinstance(a, torch.Tensor))


def _lists(args: tuple, kwargs: dict):
    """The plain-list inputs (a list of tags, of label ids): a check also sees whether they changed."""
    yield from ((i, a) for i, a in enumerate(args) if type(a) is list)
    yield from ((k, a) for k, a in kwargs.items() if type(a) is list)


def _result(value: Any, args: tuple, kwargs: dict, before: list) -> dict:
    result: dict = {"value": encode(value)}
    changed = []
    for path, old in before:
        now = _at(args, kwargs, path)
        if isinstance(old, list):
            if encode(now) != old:
                changed.append([path, encode(now)])
        elif now.shape != old.shape or not torch.equal(now.detach(), old):
            changed.append([path, encode(now.detach())])
    if changed:
        result["changed"] = changed
    parts = list(value) if type(value) in (tuple, list) else [value]
    aliases = [_alias(part, args, kwargs) for part in parts]
    if any(a is not None for a in aliases):
        result["alias"] = aliases if type(value) in (tuple, list) else aliases[0]
    if isinstance(value, torch.Tensor):
        if value.requires_grad and value.grad_fn is not None:
            inputs = [(p, x) for p, x in _tensors(args, kwargs) if x.requires_grad]
            if inputs:
                grads = torch.autograd.grad(value.sum(), [x for _, x in inputs], allow_unused=True)
                result["grads"] = [[p, encode(g)] for (p, _), g in zip(inputs, grads) if g is not None]
    return result


def _alias(value: Any, args: tuple, kwargs: dict) -> Any:
    """Where `value` is one of the inputs (or shares its memory and shape), that input's place."""
    if isinstance(value, torch.Tensor):
        for path, x in _tensors(args, kwargs):
            if value is x or (value.numel() and x.numel() and value.data_ptr() == x.data_ptr()
                              and value.shape == x.shape):
                return path
    return None


def _safe_str(err: BaseException) -> str:
    try:
        return str(err)[:4000]
    except Exception:
        return "?"


# --- the grader's side: judging -----------------------------------------------------------------------
def stand_in(description: dict) -> Any:
    """An object a check can be given in place of the student's answer, of the same kind."""
    import torch.nn as nn

    kind = description.get("kind")
    name = str(description.get("type", "Answer"))
    name = name if _NAME.fullmatch(name) else "Answer"
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

    def text(self) -> str:
        return self.printed + ("" if self.passed else f"{self.error}: {self.message}")

    fingerprint: str = ""   # of the answer's results on the grader's inputs (`fingerprint`)

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
        return Verdict(False, error="NoAnswers", message="the grader received no answers from this cell")
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
            return Verdict(False, printed + buffer.getvalue(), type(err).__name__, _safe_str(err))
        printed += buffer.getvalue()
    return Verdict(True, printed)
