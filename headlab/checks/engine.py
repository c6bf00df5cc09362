"""One check engine: an exercise is declared as data, and the engine runs it.

An `Exercise` holds the visible cases, how to read a case into (inputs, expected), the shape and dtype
a right answer has, and a table of `Mistake`s: the words that name each usual wrong answer (what it
returns on the same inputs is the grader's: `mistake_output`). The engine does the rest once for every
exercise: it calls the learner's function through `core.call` (so the grader can record and replay it), checks the type,
shape and dtype, compares with the expected value, names a mistake only when the output equals what
that mistake gives on that input (otherwise it shows the input, the expected value and the output),
and refuses an answer that wrote into its inputs.

    padding_mask = Exercise(
        "padding_mask", CASES, read=lambda case: ((lengths, n), expected), ...,
        mistakes=[Mistake("inverted", "padding_mask is inverted{where}: ...")])
    # and in grader/heads_mistakes/ch00.py: register("padding_mask", [twist("inverted", lambda E, lengths, n: ~E)])
    padding_mask(fn)                 # the visible check
    padding_mask(fn, cases=hidden)   # a hidden test brings its own cases
"""
from __future__ import annotations

import functools
import importlib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from ..codec import GraderError, decode, digest, encode
from ..kernel import STEP_LR, weighted_backward
from .core import CheckFailed, a_type, backward, call, call_raw, explain, fail, passed, require_function


# What a function (or a forward) that returned None is told: it has no `return`, the usual slip
NO_RETURN = "it ends without a `return` of its result, and Python returns None from a function that has none."
NO_RETURN_FIX = "End it with `return` and the result it computed."
# Shown on a repeat of changed-input (core.shown), after the exercise's own words on what it changed
IN_PLACE_FIX = ("Use the operation's out-of-place form (`masked_fill`, not `masked_fill_`; `x = x * m`, not `x *= m`), "
                "or work on a copy, `x.clone()`.")


class Unclear(CheckFailed):
    """A wrong output that two mistakes of the table explain equally well: the check says what was
    expected, names neither, and looks at the next case for one that tells them apart."""


@dataclass(frozen=True)
class Mistake:
    """A usual wrong answer as the learner reads it: `key` names it, `message` says what is wrong.

    `message` is a format string over `where` (the case, in words), `out` and `expected` (a number as it
    is, a tensor shown short) and the exercise's `fields`, or a function `(out, *inputs) -> str`. It is the
    diagnosis (what is wrong, on which input, which concept); `fix`, written like it, is the code that mends it,
    shown only when the learner makes the same mistake again (core.shown).

    What the mistake returns is not here: a function general enough to compute a wrong answer is one argument
    away from the right one, which a student could call instead of writing it. The outputs live on the grader's
    side (heads_mistakes, not installed with headlab): the i-th output registered for an exercise is what its
    i-th mistake returns. In the student's kernel, where that module is not, a mistake's outputs on the inputs
    the visible checks judge are data (`RECORDING`); on any other input it does not apply."""

    key: str
    message: str | Callable[..., str]
    fix: str | Callable[..., str] = ""
    index: int = -1   # its place in its exercise's table, set by the exercise: its outputs are found by it


@dataclass
class Exercise:
    """One graded function: its cases, its right answer's form, and its table of mistakes."""

    name: str                                  # the learner's function, and the test cell test_<name>
    cases: Sequence = ()                       # the visible cases, as `read` understands them (none: judge only)
    read: Callable[[Any], tuple[tuple, Any]] | None = None   # a case → (inputs, expected)
    shape: Callable[..., tuple] = lambda *inputs: ()          # inputs → the shape of a right answer
    dtype: torch.dtype | None = None           # required dtype; None: any floating point (a list's: torch.long)
    returns: type = torch.Tensor               # or int, float (a Python number), list (of ints)
    mistakes: Sequence[Mistake] = ()
    where: Callable[..., str] = lambda *inputs: ""           # inputs → " for lengths=[3, 1], n=4"
    meaning: str = ""                          # what the shape means, e.g. " (B, n)"
    atol: float = 1e-4
    fields: Callable[..., dict] = lambda *inputs: {}          # inputs → more names for the messages
    # (exception, (err, *inputs) → a hint, or (hint, mistake key, fix): the key when the crash itself names a
    # mistake ("": raised-<exception>), the fix shown on a repeat)
    hints: Sequence[tuple[type, Callable[..., str | tuple[str, ...] | None]]] = ()
    # (out, expected, *inputs) → the message when no mistake fits, or (message, fix)
    explain: Callable[..., str | tuple[str, str]] | None = None
    dtype_message: str = "{name} returned dtype {got}{where}; expected {wanted}."
    unchanged: str = "{name} changed a tensor it was given; build a new tensor instead."
    then: Callable[[Callable], None] | None = None   # (fn) → a check of what no single case shows, once the cases pass
    # While `__call__` judges a case: the other cases as (inputs, expected, the learner's output), where a mistake must
    # give the learner's output too to be named (a wrong answer can match a mistake on one case by coincidence: the
    # larger of two losses is one of them)
    others: Sequence[tuple] = ()
    # Set: each case's rows are also run alone, as cases of their own after it, and a row whose answer alone differs
    # from its answer in the batch fails depends-on-other-rows, with these words on why
    rows: str = ""

    def __post_init__(self):
        self.mistakes = [m if m.index >= 0 else replace(m, index=i) for i, m in enumerate(self.mistakes)]

    def __call__(self, fn: Callable, cases: Sequence | None = None) -> None:
        require_function(fn, self.name)
        cases = [self.read(case) for case in (self.cases if cases is None else cases)]
        runs = [run for case in cases for run in [case, *self._rows(*case)]]   # with `rows`, its rows after each case
        # Every output first, so that a mistake is named only if it also explains the other cases; a crash
        # or a refusal is still reported in its case's turn.
        outs = [self._attempt(fn, inputs) for inputs, _ in runs]
        unclear = None   # the first wrong case that two mistakes explain equally well
        for i, ((inputs, expected), out) in enumerate(zip(runs, outs)):
            if isinstance(out, CheckFailed):
                raise out
            self._same_alone(out, inputs, outs[i + 1:i + 1 + len(self._rows(inputs, expected))])
            try:
                replace(self, others=[c + (o,) for j, (c, o) in enumerate(zip(runs, outs))
                                      if j != i and not isinstance(o, CheckFailed)]).judge(out, expected, inputs)
            except Unclear as err:   # a later case may tell which mistake it is
                unclear = unclear or err
        if unclear is not None:
            raise unclear
        if self.then is not None:
            self.then(fn)
        passed(self.name, len(cases))

    def _rows(self, inputs: tuple, expected: Any) -> list[tuple]:
        """With `rows`, each row of a case of several alone, (inputs, expected): its tensors cut to that row."""
        B = len(inputs[0]) if self.rows else 1
        return [(tuple(x[b:b + 1].clone() if isinstance(x, torch.Tensor) else x for x in inputs), expected[b:b + 1])
                for b in range(B)] if B > 1 else []

    def _same_alone(self, out: Any, inputs: tuple, alone: list) -> None:
        """Fail if a row's answer alone differs from its answer in the batch (where both have the right shape)."""
        right = isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(self.shape(*inputs))
        for b, got in enumerate(alone if right else []):
            if isinstance(got, torch.Tensor) and got.shape == out[b:b + 1].shape and not same(got, out[b:b + 1], 0.0):
                fail(f"row {b}'s answer depends on the other rows: in the batch you return {show(out[b])}, for row {b} "
                     f"alone {show(got)}. {self.rows}", "depends-on-other-rows")

    def _attempt(self, fn: Callable, inputs: tuple) -> Any:
        try:
            return self.answer(fn, inputs)
        except CheckFailed as err:
            return err

    def _refuted(self, mistake: Mistake) -> bool:
        """Whether the learner's output on one of the `others` differs from `mistake`'s there (asked only of a mistake
        that explains the output judged)."""
        return not all(self._agrees(got, wrong) for given, right, got in self.others
                       if (wrong := self.output(mistake, given, right)) is not None)

    def _agrees(self, out: Any, wrong: Any) -> bool:
        try:
            return same(self._as_tensor(out), self._as_tensor(wrong), self.atol)   # NaN equals NaN
        except Exception:   # not a value of the exercise's kind
            return False

    def _as_tensor(self, x: Any) -> Any:
        """A value as the engine compares it: a Python number as a 0-d float64, a list of ints as a long tensor
        (None, a mistake that does not apply, stays None)."""
        if x is None or self.returns is torch.Tensor:
            return x
        list_ = self.returns is list
        return torch.tensor(list(x) if list_ else float(x), dtype=torch.long if list_ else torch.float64)

    def output(self, mistake: Mistake, inputs: tuple, expected: Any = None) -> Any:
        """What `mistake` gives on `inputs` (None where it does not apply), as it returns it."""
        return mistake_output(self.name, mistake, inputs, expected)

    def answer(self, fn: Callable, inputs: tuple) -> Any:
        """The learner's output on `inputs`, refused if it wrote into them (checked first, as a judgement of
        the output would read the changed inputs). For a check that makes more than one call per case."""
        before = [_copy(x) for x in inputs]
        out = self._call(fn, inputs)
        if any(isinstance(b, (list, torch.Tensor)) and not same(x, b, 0.0)   # anything else is its own "copy"
               for x, b in zip(inputs, before)):
            fail(self.unchanged.format(name=self.name), "changed-input", IN_PLACE_FIX)
        return out

    def _call(self, fn: Callable, inputs: tuple) -> Any:
        try:
            return call_raw(fn, self.name, *inputs)
        except Exception as err:
            # the exercise's hints are for a crash: not a check's failure or the grader's error, which explain raises
            # as they are, nor a stub (NotImplementedError is also a RuntimeError)
            hints = () if isinstance(err, (CheckFailed, GraderError, NotImplementedError)) else self.hints
            for kind, hint in hints:
                said = hint(err, *inputs) if isinstance(err, kind) else None
                if said:
                    said, key, fix = (*said, "")[:3] if isinstance(said, tuple) else (said, "", "")
                    fail(f"{self.name} raised {type(err).__name__} ({err}){self.where(*inputs)}. {said}",
                         key or f"raised-{type(err).__name__}", fix)
            explain(err, self.name, *inputs)

    # --- judging one output ------------------------------------------------------------------------
    def judge(self, out: Any, expected: Any, inputs: tuple) -> None:
        """Pass silently if `out` is right; otherwise fail with the message that fits it best."""
        if _recording is not None:   # dev/record_mistakes.py: every mistake's output on what this check judges
            _record(self, inputs, expected)
        if out is None:   # told "returned a NoneType", a wrong type, before
            fail(f"{self.name} returned None{self.where(*inputs)}: {NO_RETURN}", "returned-none", NO_RETURN_FIX)
        judge = {torch.Tensor: self._judge_tensor, list: self._judge_list}.get(self.returns, self._judge_number)
        judge(out, expected, inputs, self.where(*inputs))

    def _judge_tensor(self, out: Any, expected: Any, inputs: tuple, where: str) -> None:
        """A tensor (or a list of ints, made one): its type, shape and dtype, then its values (and the mistakes')."""
        want = tuple(self.shape(*inputs))
        tensor = isinstance(out, torch.Tensor)
        if tensor and tuple(out.shape) == want and self._right_dtype(out) and same(out, expected, self.atol):
            return
        unclear = self._name_mistake(out, inputs, where, expected)   # fails if a mistake names the output
        if not tensor:
            _fail(f"{self.name} returned {a_type(out)}{where}; it must return a torch.Tensor{self.meaning}.",
                  "not-a-tensor", unclear, "Compute the result with torch operations and return that tensor, not "
                  "`.item()`, `.tolist()` or a NumPy array of it.")
        if tuple(out.shape) != want:
            _fail(f"{self.name} returned shape {tuple(out.shape)}{where}; expected {want}{self.meaning}.",
                  "wrong-shape", unclear)
        if not self._right_dtype(out):
            wanted = self.dtype if self.dtype is not None else "a floating-point dtype"
            hint = " Your values are right; convert the result." if same(out, expected, self.atol, kind=False) else ""
            _fail(self.dtype_message.format(name=self.name, got=out.dtype, where=where, wanted=wanted) + hint,
                  "wrong-dtype", unclear, f"Convert the result before returning it: `.to({self.dtype})`."
                  if self.dtype is not None else "Convert the result before returning it: `.float()`.")
        self._wrong_values(out, expected, inputs, f"{self.name} returned {show(out)}{where}; expected {show(expected)}."
                           + first_difference(out, expected, self.atol), unclear)

    def _judge_number(self, out: Any, expected: Any, inputs: tuple, where: str) -> None:
        """A Python int or float: its type first, then its value (and the mistakes') as a 0-d float64."""
        kind = self.returns.__name__
        ok = (int,) if self.returns is int else (int, float)
        if isinstance(out, bool) or not isinstance(out, ok):
            right, tensor = self._agrees(out, expected), isinstance(out, torch.Tensor)
            fail(f"{self.name} returned {a_type(out)}{where}; it must return a Python {kind}." +
                 (f" Your number is right: convert it with {kind}(...)" + (" or .item()." if tensor else ".")) * right,
                 "returned-a-tensor" if tensor else "not-an-int" if self.returns is int else "not-a-float",
                 f"Wrap the number you return in {kind}(...)" + (", or call .item() on the 0-d tensor." if tensor
                                                                  else "."))
        if abs(float(out) - float(expected)) <= self.atol:
            return
        unclear = self._name_mistake(self._as_tensor(out), inputs, where, self._as_tensor(expected))
        self._wrong_values(out, expected, inputs, f"{self.name} returned {out}{where}; expected {expected}.", unclear)

    def _judge_list(self, out: Any, expected: Any, inputs: tuple, where: str) -> None:
        """A list of ints: its form first, then its values (and the mistakes') as a long tensor."""
        if isinstance(out, torch.Tensor):
            fail(f"{self.name} returned a tensor{where}; return a plain list of ints (build it with append, or "
                 "call .tolist()).", "returned-a-tensor", "Return the list itself: convert the tensor with `.tolist()` "
                 "just before returning it.")
        if not isinstance(out, (list, tuple)):
            fail(f"{self.name} returned {a_type(out)}{where}; return a list of ints.", "not-a-list",
                 "Build the result in a list, starting from `[]` and adding each int with `.append`, and return it.")
        bad = [x for x in out if isinstance(x, bool) or not isinstance(x, int)]
        if bad:
            fail(f"{self.name} returned {bad[0]!r} ({a_type(bad[0])}) in its list{where}; every entry "
                 "must be a plain int.", "not-an-int",
                 "Convert each entry with int() before appending it (`.item()` gives the number of a 0-d tensor).")
        self._judge_tensor(self._as_tensor(out), self._as_tensor(expected), inputs, where)

    def _wrong_values(self, out: Any, expected: Any, inputs: tuple, default: str, unclear: bool) -> None:
        said = self.explain(out, expected, *inputs) if self.explain is not None else default
        said, fix = said if isinstance(said, tuple) else (said, "")
        _fail(said, "wrong-values", unclear, fix)

    def _right_dtype(self, out: torch.Tensor) -> bool:
        return out.dtype == self.dtype if self.dtype is not None else out.is_floating_point()

    def _name_mistake(self, out: Any, inputs: tuple, where: str, expected: Any = None) -> bool:
        """Fail with the mistake whose output on these inputs equals `out` (and that the other cases do not refute).
        Returns whether two different mistakes give that output: then neither is named, and the caller's generic
        failure is `Unclear`."""
        # None: the mistake does not apply to this case; one that gives the right answer here is no mistake here
        found = [m for m in self.mistakes if (wrong := self.output(m, inputs, expected)) is not None
                 and self._agrees(out, wrong) and not self._agrees(wrong, expected) and not self._refuted(m)]
        if len({m.key for m in found}) != 1:   # none fits, or two do
            return bool(found)
        number = self.returns in (int, float)   # shown as the number it is, which a message may format ({out:.4f})
        out, shown = (self.returns(out.item()), self.returns(expected.item())) if number else (out, show(expected))

        def words(text: str | Callable[..., str]) -> str:   # the mistake's message, or its fix, for this output
            return text(out, *inputs) if callable(text) else text.format(
                name=self.name, where=where, out=out if number else show(out), expected=shown, **self.fields(*inputs))
        fail(words(found[0].message), found[0].key, words(found[0].fix))


# --- what a mistake returns -------------------------------------------------------------------------
# The recording of the mistakes' outputs on the inputs the visible checks judge: exercise → digest of the inputs →
# {mistake index: output}. Written by `python -m dev.record_mistakes` (tests/test_no_answer_in_package.py says when
# it is out of date); read in a kernel without the grader's side.
RECORDING = Path(__file__).resolve().parent.parent / "resources" / "mistakes.json"
_recording: dict | None = None   # while dev/record_mistakes.py runs: the recording it writes


@functools.cache
def grader_side() -> Any:
    """The grader's module of mistake outputs, heads_mistakes, or None (the student's kernel: not installed there,
    and hidden by the sandbox when grading)."""
    try:
        return importlib.import_module("heads_mistakes")
    except ImportError:
        return None


@functools.cache
def _recorded() -> dict:
    """The recording, read once."""
    return json.loads(RECORDING.read_text()) if RECORDING.exists() else {}


def _grader_or_recording(name: str, inputs: tuple, entry: str, compute: Callable[[Any], Any]) -> Any:
    """What the grader's side knows of exercise `name` on `inputs` under `entry` (a mistake's index, "right",
    "reference" or "step"): `compute(heads_mistakes)`, written into the recording while dev/record_mistakes.py runs
    (unless None); in the kernel, where heads_mistakes is not, what the recording holds (None for inputs it does not
    hold)."""
    # keyed by the inputs only: a visible check's expected value is a function of them (a case's, or the right head's
    # under the grader's weights)
    key, grader = digest(name, inputs, {}), grader_side()
    if grader is None:
        found = _recorded().get(name, {}).get(key, {}).get(entry)
        return None if found is None else decode(found)
    value = compute(grader)
    if value is not None and _recording is not None:
        _recording.setdefault(name, {}).setdefault(key, {})[entry] = encode(value)
    return value


def right_gradients(name: str, inputs: tuple) -> tuple[torch.Tensor, ...] | None:
    """The gradients the right answer of exercise `name` gives those of `inputs` that require grad (heads_mistakes.
    right; in the kernel, None for inputs the recording does not hold, which no visible check uses: the right answer
    is no more in the package than a mistake's function)."""
    return _grader_or_recording(name, inputs, "right", lambda grader: gradient_of(grader.right(name), *inputs))


def reference(name: str, *inputs: Any) -> Any:
    """What the right head `name` returns on `inputs` (its input and the weights the grader loads): the grader's
    function (heads_mistakes.reference), or in the kernel the recording (which holds the visible checks' inputs
    only). No head is computed in the package: a student could call it in place of writing the class."""
    out = _grader_or_recording(name, inputs, "reference", lambda grader: grader.reference(name)(*inputs))
    if out is None:
        raise GraderError(f"the right {name} on these inputs is the grader's: run this check on its own cases")
    return out


def reference_step(name: str, x: torch.Tensor, weights: Sequence[torch.Tensor] | None, seed: int) -> tuple:
    """`_step` of the right head `name`: the grader's, or in the kernel the recording's ((None, None) where it holds
    none)."""
    return _grader_or_recording(name, (x, *(weights or ()), seed), "step",
                                lambda grader: _step(grader.reference(name), x, weights, seed)) or (None, None)


def _record(exercise: Exercise, inputs: tuple, expected: Any) -> None:
    """Every mistake's output on `inputs`, into the recording, once the exercise's table is seen to match the
    grader's row for row."""
    keys, outputs = [m.key for m in exercise.mistakes], [w.key for w in grader_side().outputs(exercise.name)]
    if keys != outputs:
        raise GraderError(f"{exercise.name}: headlab's mistakes {keys} and heads_mistakes' outputs {outputs} differ")
    for mistake in exercise.mistakes:
        exercise.output(mistake, inputs, expected)


def mistake_output(name: str, mistake: Mistake, inputs: tuple, expected: Any = None) -> Any:
    """What `mistake` of exercise `name` gives on `inputs`, or None where it does not apply (its output raises, or
    in the kernel no output was recorded for these inputs): on the grader's side its function, in the kernel the
    recording."""
    return _grader_or_recording(name, inputs, str(mistake.index), lambda grader: _wrong_output(
        grader.output(name, mistake.index, mistake.key), inputs, expected))


def _wrong_output(wrong: Any, inputs: tuple, expected: Any) -> Any:
    """What the grader's mistake `wrong` returns on copies of the inputs (and of `expected`, for a twist); None if it
    raises."""
    try:
        return wrong.output(*([_copy(expected)] if wrong.twist else []), *map(_copy, inputs))
    except Exception:
        return None


def _copy(x: Any) -> Any:
    """A copy of what a function could change in place (a tensor, a list); anything else as it is."""
    return x.clone() if isinstance(x, torch.Tensor) else list(x) if isinstance(x, list) else x


def _fail(message: str, key: str, unclear: bool, fix: str = "") -> None:
    """The generic failure after no mistake was named: `Unclear` if two of them fitted."""
    raise (Unclear if unclear else CheckFailed)(message, key, fix)


def _kind(x: torch.Tensor) -> str:
    return "bool" if x.dtype == torch.bool else "float" if x.is_floating_point() else "int"


def same(a: Any, b: Any, atol: float, rtol: float = 0.0, kind: bool = True) -> bool:
    """Equal shapes and values within `atol` + `rtol`·|b| (NaN equals NaN); with `kind`, also the same kind
    of dtype (bool, int, float). Values that are not tensors must be equal and of one type."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor) and type(a) is type(b) and a == b
    if a.shape != b.shape or (kind and _kind(a) != _kind(b)) or a.is_complex() or b.is_complex():
        return False
    return bool(torch.allclose(a.detach().double(), b.detach().double(), atol=atol, rtol=rtol, equal_nan=True))


def show(x: Any) -> str:
    """A value short enough for a message: small tensors in full, larger ones by shape and a corner."""
    if isinstance(x, torch.Tensor):
        if x.numel() <= 12:
            return str([round(v, 4) for v in x.tolist()] if x.dim() == 1 and x.is_floating_point() else x.tolist())
        return f"a tensor of shape {tuple(x.shape)}"
    return repr(x)


def first_difference(out: Any, expected: Any, atol: float = 1e-4) -> str:
    """Where two tensors of one shape, too large for `show`, first differ: the words a message needs when
    it could otherwise only say "a tensor of shape (4, 5), not a tensor of shape (4, 5)"."""
    # no words needed: not two tensors of one shape, shown in full, complex (the learner's), or no difference
    if not (isinstance(out, torch.Tensor) and isinstance(expected, torch.Tensor)) or out.shape != expected.shape \
            or expected.numel() <= 12 or out.is_complex() or expected.is_complex() \
            or same(out, expected, atol, kind=False):
        return ""
    a, b = out.detach().double(), expected.detach().double()
    at = tuple((~torch.isclose(a, b, atol=atol, rtol=0, equal_nan=True)).nonzero()[0].tolist())
    return f" They first differ at index {list(at)}: yours {a[at].item():.6g}, expected {b[at].item():.6g}."


# What `backward_through` says when no gradient reaches the logits, and when another one does.
NO_GRADIENT = ("{name} returned a loss that `loss.backward()` cannot carry back to the logits: compute it from the "
               "logits with torch operations, without .item(), .detach() or `torch.no_grad()`.")
# Shown on a repeat of no-gradient or wrong-gradient, whichever exercise's words `said` holds.
GRADIENT_FIX = ("Compute the result from the inputs with torch operations only: no `.detach()`, `.item()` or `.data` "
                "on the way, no `torch.no_grad()`, and no new tensor built from their values.")
WRONG_GRADIENT = ("{name} returns the right loss, but `loss.backward()` does not give the logits its gradient: part of "
                  "the loss is computed outside autograd (.detach(), .item(), .data, or a new tensor made from its "
                  "values), so training would follow another loss than the one printed.")


def backward_through(fn: Callable, name: str, *inputs: Any, want: Sequence[torch.Tensor] | None = None,
                     rules: Callable | None = None, said: tuple[str, str] = (NO_GRADIENT, WRONG_GRADIENT)) -> None:
    """A loss's `then` step: `fn(*inputs)` must carry the graph, so that `loss.backward()` gives each of the
    logits among the inputs (those that require grad) a gradient, and the gradient the right answer gives them:
    `want`, stored as data, or the grader's right answer's (`right_gradients`). `rules(*inputs)`, run on the
    gradients before that comparison, names the mistakes an exercise knows; `said` holds the two messages, over
    {name}."""
    backward(call(fn, name, *inputs), name)   # replayed, the output carries the gradients the learner's gave
    logits = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    if any(x.grad is None or not bool(x.grad.abs().sum() > 0) for x in logits):
        fail(said[0].format(name=name), "no-gradient", GRADIENT_FIX)
    if rules is not None:
        rules(*inputs)
    # The gradient is measured in the learner's process, so it is compared, not only seen to be nonzero.
    right = want if want is not None else right_gradients(name, inputs)
    if right is not None and not all(close_gradient(x.grad, g) for x, g in zip(logits, right)):
        fail(said[1].format(name=name), "wrong-gradient", GRADIENT_FIX)


def gradient_of(want: Callable[..., torch.Tensor], *inputs: Any) -> tuple[torch.Tensor, ...]:
    """The gradients `want(*inputs).sum()` gives the inputs that require grad, in order, taken on copies so that
    the inputs' own `.grad` (what the learner's function gave them) stays as it is."""
    copies = [x.detach().clone().requires_grad_() if isinstance(x, torch.Tensor) and x.requires_grad else x
              for x in inputs]
    with torch.enable_grad():
        return torch.autograd.grad(want(*copies).sum(), [c for c, x in zip(copies, inputs) if c is not x])


def close_gradient(got: Any, right: torch.Tensor) -> bool:
    """Whether `got`, a gradient the learner's process measured, is `right`, the right answer's."""
    return same(got, right, 1e-5 * (1 + float(right.abs().max())), rtol=1e-3, kind=False)


def judge_gradients(facts: dict, name: str, given: str, x: torch.Tensor, want: str | Callable, seed: int,
                    weights: Sequence[torch.Tensor] | None) -> None:
    """Fail unless, after the step of `gradient_facts(…, x, seed)`, the head gives the outputs that the right head
    under the grader's `weights` gives after the same step (so every weight was trained, by its own gradient), and
    the gradient that reached its input (`given`, the input's name) is the right head's: a head is trained by these
    gradients, and the encoder below it learns only through the gradient of its input. Both are measured in the
    learner's process, and compared here. The right head is `want`, the name of the grader's (`reference_step`), or
    a function `want(x, *weights)`. `weights` None: the head may hold its weights in any layout, whose step differs
    (SpanHead judges its step itself, from the learner's own scorers)."""
    if facts.get("moved"):
        fail(f"{name} changed its own weights while the grader ran it ({', '.join(facts['moved'])}): its forward, "
             "or a hook it registered, wrote into its parameters or buffers (e.g. `bias.data -= ...` when the "
             "gradient arrives), or its outputs after the step come from something other than them. A head is "
             "trained only by the optimiser: every weight is an `nn.Parameter` that autograd gives a gradient.",
             "parameters-without-gradient", "Keep every parameter trainable, compute the output from them with torch "
             "operations, and write no weight in forward or in a hook.")
    input_grad, after = reference_step(want, x, weights, seed) if isinstance(want, str) else \
        _step(want, x, weights, seed)
    if input_grad is None:   # a kernel given inputs the recording does not hold: the grader judges these
        return
    if weights is not None and not (close_gradient(facts["stepped"], after)
                                    and _secret_step_right(facts.get("secret"), x, want, seed, weights)):
        fail(f"after one step of gradient descent on its outputs, {name} gives other outputs than a head whose "
             "every weight learns by its own gradient: a weight did not move (frozen with requires_grad=False, "
             "used under `torch.no_grad()` or through `.detach()`/`.data`, or kept outside the module's "
             "parameters) or moved by a gradient written by hand. Keep every parameter trainable and compute the "
             "output from them with torch operations; autograd fills `.grad`.", "parameters-without-gradient",
             "Hold every weight in a layer such as `nn.Linear` or an `nn.Parameter` set on self in __init__, leave "
             "requires_grad as it is, and use it in forward outside `torch.no_grad()` and without `.detach()`.")
    grad = facts["input_grad"]
    if not isinstance(grad, torch.Tensor) or not bool(grad.abs().sum() > 0):
        fail(f"no gradient flows back through {name} to its input {given}: the output is computed from a detached "
             f"copy of {given} (`.detach()`, `torch.no_grad()`, or a new tensor made from its values). The encoder "
             "below the head learns only through this gradient, so fine-tuning would train the head alone.",
             "input-detached", f"Compute the output from {given} itself: drop the `.detach()`, `.data` or "
             "`torch.no_grad()` between it and the output.")
    if not close_gradient(grad, input_grad):
        fail(f"the gradient that flows back through {name} to its input {given} is not the gradient of the outputs "
             f"it returns: part of them is computed from a detached copy of {given} (`.detach()`, `.data`, "
             "`torch.no_grad()`), so fine-tuning would train the encoder below for another output than the one "
             "the head gives.", "wrong-input-gradient", f"Compute every part of the output from {given} itself, "
             "with torch operations: no `.detach()`, `.data` or `.item()` on the way.")


def _secret_step_right(secret: Any, x: torch.Tensor, want: str | Callable, seed: int,
                       weights: Sequence[torch.Tensor]) -> bool:
    """Whether the outputs after the kernel's secret step (kernel._secret_step), the step a hook could not foresee,
    are the right head's after the same step. The grader alone judges it (in the kernel: True): its sizes are the
    kernel's, drawn at random, so no recording holds the right head's outputs after it."""
    grader = grader_side()
    if grader is None:
        return True
    sizes = secret_sizes(secret)
    right = grader.reference(want) if isinstance(want, str) else want
    # A weight whose size the head holds in no state entry is not a trainable weight of it; no size stands in for
    # it, or a head keeping its bias outside its state would foresee the step of that weight
    return all(w.numel() in sizes for w in weights) and secret_sizes_drawn(sizes) and \
        close_gradient(secret.get("stepped"), _step(right, x, weights, seed, sizes)[1])


def secret_sizes(secret: Any) -> dict[int, float]:
    """{numel: step size} of the kernel's secret step, as its facts give them ({} when they give none)."""
    if not (isinstance(secret, dict) and isinstance(secret.get("sizes"), torch.Tensor)):
        return {}
    return {int(n): float(size) for n, size in secret["sizes"].tolist()}


def secret_sizes_drawn(sizes: dict[int, float]) -> bool:
    """Whether the kernel's secret step sizes are what its draw gives (kernel._secret_step: in [0.25, 0.75), none the
    public STEP_LR, no two alike): sizes a notebook set itself (a red team's hook made them all 0.5) are not."""
    return all(0.25 <= size < 0.75 and abs(size - STEP_LR) > 1e-9 for size in sizes.values()) and \
        len(set(sizes.values())) == len(sizes)   # 56 random bits each: equal sizes were chosen (red team 5)


def _step(want: Callable, x: torch.Tensor, weights: Sequence[torch.Tensor] | None, seed: int,
          sizes: dict[int, float] | None = None) -> tuple:
    """The gradient that the right head `want` under `weights` gives its input x, in `judge_gradients`'s step, and
    its outputs after that step (None without `weights`): each weight's step size is `sizes[its numel]` (the
    kernel's secret step), or STEP_LR (the public one)."""
    leaves = [w.detach().clone().requires_grad_() for w in weights or ()]
    xg = x.detach().clone().requires_grad_()
    with torch.enable_grad():
        weighted_backward(want(xg, *leaves), seed)
    if weights is None:
        return xg.grad, None
    with torch.no_grad():
        stepped = [w if w.grad is None else w - (STEP_LR if sizes is None else sizes[w.numel()]) * w.grad
                   for w in leaves]
        return xg.grad, want(x.detach(), *stepped)


_CLASH = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")


def clashing_sizes(err: Exception) -> tuple[int, ...]:
    """The two sizes that met in torch's broadcasting error, (a, b), or () for another error. Every case's sizes
    differ from each other (tests/test_case_sizes.py), so the two sizes say which axes a mistake lined up."""
    clash = _CLASH.search(str(err))
    return tuple(map(int, clash.groups())) if clash else ()


def inputs_as(*dtypes: torch.dtype | None) -> Callable[[Any], tuple[tuple, Any]]:
    """A `read` for cases written as (input, ..., expected): each input becomes a tensor of its dtype
    (None leaves it as written), and `expected` a tensor of the last dtype given."""
    *in_types, out_type = dtypes

    def read(case):
        *args, expected = case
        args = tuple(a if t is None else torch.as_tensor(a, dtype=t) for a, t in zip(args, in_types))
        return args, torch.as_tensor(expected, dtype=out_type) if out_type is not None else expected
    return read
