"""The data that crosses between the student's kernel and the grader: JSON, with tensors as raw bytes, never pickle.

The grader writes a test cell's inputs into `FOLDER` (calls.json), the kernel its answers' results into that cell's
own output, as display data of the type `ANSWERS_MIME`; both are read with `decode`, which refuses any shape of data
it does not know.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
from typing import Any

import torch

FOLDER = ".heads_grader"          # in the notebook's folder, the grader's: calls.json, the inputs
ANSWERS = ".heads_answers"        # in the notebook's folder: once the results; the grader still clears it
# The results travel in the test cell's output: the grader takes them when the cell ends, so nothing the kernel
# runs later (a callback of its event loop, a later cell) can change them, as it could a file.
ANSWERS_MIME = "application/vnd.heads.answers+json"
GLOBALS = "$globals"              # the answer of a check that reads the notebook's namespace

_DTYPES = {str(dt).removeprefix("torch."): dt for dt in (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.uint8, torch.int8, torch.int16,
    torch.int32, torch.int64, torch.bool)}
_BITS = {torch.bfloat16: torch.int16}   # dtypes numpy cannot hold: their bits travel as an integer
PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,79}")


class GraderError(RuntimeError):
    """The recording and the replay disagree: a bug in the course, never the student's doing."""


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
    return {"$obj": plain(type(value).__name__, 200), "repr": _safe_repr(value)}


# The tensor methods of C: torch.Tensor is a Python class that a notebook can patch for every tensor (red team 13
# rewrote the answers in Tensor.numpy), its base class torch._C.TensorBase is immutable, as is numpy's ndarray
_BASE = torch._C.TensorBase


def _encode_tensor(t: torch.Tensor) -> dict:
    plain = _BASE.clone(_BASE.contiguous(_BASE.cpu(_BASE.detach(t))))
    if type(plain) is not torch.Tensor:  # a subclass: only its data travels
        plain = _BASE.as_subclass(plain, torch.Tensor)
    dtype = _BASE.dtype.__get__(plain)
    if dtype not in _DTYPES.values():
        return {"$obj": "Tensor", "repr": f"a tensor of dtype {dtype}"}
    bits = _BASE.numpy(_BASE.view(plain, _BITS[dtype]) if dtype in _BITS else plain)
    grad = _BASE.requires_grad.__get__(t)
    return {"$t": str(dtype).removeprefix("torch."), "shape": list(bits.shape), "grad": bool(grad),
            "b": binascii.b2a_base64(bits.tobytes(), newline=False).decode()}


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
        return plain(repr(value), 200)
    except Exception:  # a student's object whose repr raises
        return "?"


def plain(text: Any, most: int) -> str:
    """`text` as a str of the builtin class, cut to `most` characters; "?" if it is no str. A subclass's slice is
    whatever its `__getitem__` returns: a red team's was an object JSON cannot encode, so respond's answers never
    left and a set the notebook had shown was the only one."""
    try:
        return str.__str__(text)[:most]   # a copy of the characters alone for a subclass
    except TypeError:
        return "?"


def stand_in_object(type_name: str, text: str = "") -> Any:
    """An object whose type has the given name: what a check sees of an answer it cannot hold."""
    name = type_name if PLAIN_NAME.fullmatch(type_name) else "object"
    return type(name.rsplit(".", 1)[-1], (), {"__repr__": lambda self: text or f"<{name}>"})()


def digest(name: str, args: Any, kwargs: Any) -> str:
    text = json.dumps([name, encode(args), encode(kwargs)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def at(args: tuple, kwargs: dict, path: Any) -> Any:
    """The input at `path`: a position among the arguments, or a keyword's name."""
    return args[path] if isinstance(path, int) else kwargs[path]


def safe_str(err: BaseException) -> str:
    """An exception's message, cut short; "?" for an exception whose str() raises (a student's)."""
    try:
        return plain(str(err), 4000)
    except Exception:
        return "?"
