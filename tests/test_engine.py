"""The check engine's promises, tested once for every exercise declared as data (headlab/checks/engine.py).

For each `Exercise` of every lesson, with an answer that replays the expected values of the visible cases
(so no test here computes a graded answer either):
- the expected values pass, and the pass line is printed;
- every mistake of the table is named by its own key when an answer returns what that mistake returns;
- an output that matches no mistake is shown with its expected value, not given a mistake's name;
- a stub says "not written yet", a crash names its exception with a hint, a wrong shape and a wrong type are
  named, an answer that writes into its inputs is refused, and a failure shows no traceback in IPython.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
import torch

import headlab.checks
from headlab.checks.core import CheckFailed, NotWritten
from headlab.checks.engine import Exercise, _same


def all_exercises() -> list[Exercise]:
    found = []
    for info in sorted(pkgutil.iter_modules(headlab.checks.__path__), key=lambda m: m.name):
        if info.name.startswith("ch"):
            module = importlib.import_module(f"headlab.checks.{info.name}")
            found += [v for v in vars(module).values() if isinstance(v, Exercise) and v.cases]
    return found


EXERCISES = all_exercises()
MISTAKES = [(ex, m) for ex in EXERCISES for m in ex.mistakes]


def replaying(ex: Exercise, change=lambda out, inputs: out):
    """An answer that returns, call by call, `change` of each visible case's expected value."""
    expected = iter([ex.read(case) for case in ex.cases])

    def answer(*inputs):
        _, want = next(expected)
        return change(want.clone() if isinstance(want, torch.Tensor) else ex.returns(want), inputs)
    answer.__name__ = ex.name
    return answer


def failure(ex: Exercise, answer) -> CheckFailed:
    with pytest.raises(CheckFailed) as caught:
        ex(answer)
    return caught.value


def test_every_lesson_declares_its_exercises():
    assert {ex.name for ex in EXERCISES} >= {"padding_mask", "causal_mask"}


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.name)
def test_the_expected_values_pass(ex, capsys):
    ex(replaying(ex))
    assert f"✓ {ex.name}: {len(ex.cases)} case" in capsys.readouterr().out


@pytest.mark.parametrize("ex, mistake", MISTAKES, ids=lambda x: getattr(x, "name", None) or x.key)
def test_every_mistake_is_named_by_its_key(ex, mistake):
    """An answer that makes this mistake wherever it applies (and is right elsewhere) is named by its key:
    the visible cases reach every mistake of the table and tell it apart from the others."""
    def making_the_mistake(out, inputs):
        try:
            wrong = mistake.output(*inputs)
        except Exception:
            wrong = None
        return out if wrong is None else wrong
    err = failure(ex, replaying(ex, making_the_mistake))
    assert err.mistake == mistake.key, f"{ex.name}: {mistake.key} was named {err.mistake}: {err}"


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.name)
def test_an_unknown_wrong_value_shows_what_was_expected(ex):
    def off(out, inputs):   # one entry changed: a slip no table names
        if isinstance(out, list):
            return [out[0] + 7, *out[1:]]
        if not isinstance(out, torch.Tensor):
            return out + (7 if isinstance(out, int) else 0.731)
        flat = out.reshape(-1)
        flat[0] = ~flat[0] if out.dtype == torch.bool else flat[0] + (0.731 if out.is_floating_point() else 7)
        return out
    err = failure(ex, replaying(ex, off))
    assert err.mistake == "wrong-values", str(err)


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.name)
def test_stubs_crashes_shapes_types_and_writes_are_named(ex):
    def stub(*inputs):
        raise NotImplementedError()
    with pytest.raises(NotWritten, match="not written yet"):
        ex(stub)

    def crash(*inputs):
        return torch.zeros(2)[5]
    err = failure(ex, crash)
    assert err.mistake == "raised-IndexError" and "positions count from 0" in str(err), str(err)

    if ex.returns is torch.Tensor:
        assert failure(ex, replaying(ex, lambda out, _: out[None])).mistake == "wrong-shape"
        assert failure(ex, replaying(ex, lambda out, _: out.tolist())).mistake == "not-a-tensor"
    elif ex.returns is list:
        assert failure(ex, replaying(ex, lambda out, _: torch.tensor(out))).mistake == "returned-a-tensor"
        assert failure(ex, replaying(ex, lambda out, _: out[:-1])).mistake == "wrong-shape"
        assert failure(ex, replaying(ex, lambda out, _: [float(x) for x in out])).mistake == "not-an-int"
    else:   # a Python number
        assert failure(ex, replaying(ex, lambda out, _: torch.tensor(out))).mistake == "returned-a-tensor"
        assert failure(ex, replaying(ex, lambda out, _: [out])).mistake == {int: "not-an-int", float: "not-a-float"}[ex.returns]
    if any(isinstance(x, (torch.Tensor, list)) for x in ex.read(ex.cases[0])[0]):
        def writes(out, inputs):
            given = next(x for x in inputs if isinstance(x, (torch.Tensor, list)))
            given.fill_(3) if isinstance(given, torch.Tensor) else given.append(3)
            return out
        assert failure(ex, replaying(ex, writes)).mistake == "changed-input"

    with pytest.raises(CheckFailed, match=f"takes your function {ex.name} itself"):
        ex(torch.zeros(3))


def test_a_failure_shows_the_message_without_a_traceback():
    err = CheckFailed("padding_mask is inverted.", "inverted")
    assert err._render_traceback_() == ["\x1b[0;31mCheckFailed\x1b[0m: padding_mask is inverted."]
    assert NotWritten("x is not written yet")._render_traceback_()[0].endswith("x is not written yet")


def takes_tensors(f) -> bool:
    """Whether a function has a tensor parameter: the ones that could compute an exercise's answer (the
    others build data sets, whose sizes an exercise's numbers would blow up)."""
    return any("Tensor" in str(p.annotation) for p in inspect.signature(f).parameters.values())


# The package's public functions that take tensors (plots, widgets, downloads and training left out).
PACKAGE_FUNCTIONS = [f for name in ("data", "metrics", "models", "probe", "qa", "tokenizer")
                     for module in [importlib.import_module(f"headlab.{name}")]
                     for key, f in vars(module).items()
                     if inspect.isfunction(f) and f.__module__ == module.__name__ and not key.startswith("_")
                     and takes_tensors(f)]


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.name)
def test_no_function_in_the_package_returns_the_answer(ex):
    """By behaviour, not by name: no public function of headlab, given an exercise's inputs, returns its
    expected answer (the checks' mistakes return wrong answers only: test_every_mistake_is_named_by_its_key)."""
    assert len(PACKAGE_FUNCTIONS) >= 8
    for case in ex.cases:
        inputs, expected = ex.read(case)
        for f in PACKAGE_FUNCTIONS:
            try:
                out = f(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
            except Exception:
                continue
            if isinstance(expected, torch.Tensor):
                answers = _same(out, expected, ex.atol)
            else:
                answers = isinstance(out, (int, float)) and abs(float(out) - float(expected)) <= ex.atol
            assert not answers, f"headlab's {f.__module__}.{f.__name__} answers {ex.name}"
