"""The check engine's promises, tested once for every exercise declared as data (headlab/checks/engine.py).

For each `Exercise` of every lesson, with an answer that replays the expected values of the visible cases
(so no test here computes a graded answer either):
- the expected values pass, and the pass line is printed;
- every mistake of the table is named by its own key when an answer returns what that mistake returns;
- an output that matches no mistake is shown with its expected value, not given a mistake's name, and a
  mistake that fits one case but not the others is not named;
- a stub says "not written yet", a crash names its exception with a hint, a wrong shape and a wrong type are
  named, an answer that writes into its inputs is refused, and a failure shows no traceback in IPython;
- every code snippet a message shows (in backticks) runs as written on the case it is shown for, with the learner's
  own parameter names, and no message shows code outside backticks.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import math
import pkgutil
import re
from dataclasses import replace
from functools import lru_cache

import pytest
import torch

import headlab.checks
from headlab.checks import ch02, ch04, ch06
from headlab.checks.core import CheckFailed, NotWritten
import heads_mistakes
from headlab.checks import engine
from headlab.checks.engine import Exercise, Mistake, same
from heads_lessons import lesson


def all_exercises() -> list[Exercise]:
    found = []
    for info in sorted(pkgutil.iter_modules(headlab.checks.__path__), key=lambda m: m.name):
        if info.name.startswith("ch"):
            module = importlib.import_module(f"headlab.checks.{info.name}")
            # `then` checks with calls of its own, past the visible cases these tests replay; the lesson's
            # mutant table tests it (tests/grading).
            found += [replace(v, then=None) for v in vars(module).values() if isinstance(v, Exercise) and v.cases]
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


@pytest.mark.parametrize("side", ["grader", "kernel"])
@pytest.mark.parametrize("ex, mistake", MISTAKES, ids=lambda x: getattr(x, "name", None) or x.key)
def test_every_mistake_is_named_by_its_key(ex, mistake, side, monkeypatch):
    """An answer that makes this mistake wherever it applies (and is right elsewhere) is named by its key:
    the visible cases reach every mistake of the table and tell it apart from the others. On the grader's side the
    mistakes' outputs are their functions' (heads_mistakes); in a kernel without that module (a self-learner's), the
    recording's (engine.RECORDING): both name it."""
    wrongs = [ex.output(mistake, *ex.read(case)) for case in ex.cases]   # the grader's function, on each case
    if side == "kernel":
        monkeypatch.setattr(engine, "grader_side", lambda: None)
    made = iter(wrongs)

    def making_the_mistake(out, inputs):   # out: the right answer, given where the mistake does not apply
        wrong = next(made)
        return out if wrong is None else wrong
    err = failure(ex, replaying(ex, making_the_mistake))
    assert err.mistake == mistake.key, f"{ex.name}: {mistake.key} was named {err.mistake}: {err}"


def test_a_mistake_that_fits_one_case_by_coincidence_is_not_named(monkeypatch):
    """The larger of two numbers is, on each case, one of them: "the first one" fits case 0 only."""
    ex = Exercise("add", [((5, 1), 6), ((2, 7), 9)], returns=int, read=lambda case: case,
                  mistakes=[Mistake("first-only", "you returned the first number")])
    heads_mistakes.outputs("add")   # every lesson's table registered, then this exercise's
    monkeypatch.setitem(heads_mistakes._OUTPUTS, "add", [heads_mistakes.wrong("first-only", lambda a, b: a)])
    assert failure(ex, lambda a, b: a).mistake == "first-only"
    assert failure(ex, lambda a, b: max(a, b)).mistake == "wrong-values"   # fits case 0, refuted by case 1


def test_an_input_holding_nan_is_changed_only_when_written():
    """The inputs are compared with what they were by `same` (NaN equals NaN): torch.equal, which it replaced,
    took an untouched input holding NaN for one the answer had written into."""
    x = torch.tensor([1.0, float("nan")])
    ex = Exercise("keep", [((x,), x.clone())], read=lambda case: (tuple(t.clone() for t in case[0]), case[1]),
                  shape=lambda x: tuple(x.shape))
    ex(lambda x: x.clone())
    assert failure(ex, lambda x: x.mul_(2).clone()).mistake == "changed-input"


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
    writable = lambda x: isinstance(x, list) or isinstance(x, torch.Tensor) and not x.requires_grad   # noqa: E731
    if any(writable(x) for x in ex.read(ex.cases[0])[0]):   # (a leaf that requires grad refuses in-place writes)
        def writes(out, inputs):
            given = next(x for x in inputs if writable(x))
            given.fill_(3) if isinstance(given, torch.Tensor) else given.append(3)
            return out
        assert failure(ex, replaying(ex, writes)).mistake == "changed-input"

    with pytest.raises(CheckFailed, match=f"takes your function {ex.name} itself"):
        ex(torch.zeros(3))


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.name)
def test_an_answer_without_a_return_is_named(ex):
    """A forgotten `return`: the answer computes its result and returns None (told "returned a NoneType" before)."""
    def no_return(*inputs):
        inputs[0] if inputs else None
    err = failure(ex, no_return)
    assert err.mistake == "returned-none" and f"{ex.name} returned None" in str(err), str(err)


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
                answers = same(out, expected, ex.atol)
            elif isinstance(expected, list):
                answers = isinstance(out, list) and out == expected
            else:
                answers = isinstance(out, (int, float)) and abs(float(out) - float(expected)) <= ex.atol
            assert not answers, f"headlab's {f.__module__}.{f.__name__} answers {ex.name}"


# --- every code snippet a message suggests runs as written (issue 11.6) --------------------------------------------
# The rule. A message marks code with backticks. A backtick span is a SNIPPET when it parses as Python (a compound
# statement's header such as `if not word_id` is completed with ": pass") and contains a call, an operator
# (arithmetic, unary, boolean or comparison), an attribute, a subscript, an assignment or a loop. Any other span is a
# word the message quotes: a name or a number (`reject`, `keepdim`, `True`), a tuple of names (`(B, n)`), or what does
# not parse (`*=`, `~`, a method fragment such as `.float()`). The snippets of a message run in order in one fresh
# namespace (so an earlier one may define a name a later one uses, `for word_id in word_ids`), on a copy of the case
# the message is shown for: the inputs bound to the learner's parameter names (those of the solution's function) and
# what every lesson's first cell imports (torch, nn, F, math); an expression is evaluated, a statement executed.
CODE = (ast.Call, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Attribute, ast.Subscript, ast.Assign,
        ast.AugAssign, ast.For)
TICKED = re.compile(r"`([^`\n]+)`")
# Code outside backticks, which the rule would not run: a dotted call or subscript (x.sum(, torch.arange(,
# attention_mask.shape[) or a subscript of a name (H[, word_ids[). Math in words (tanh(W c + b), ln K, j ≤ i) and
# method fragments (.item()) do not match, nor the exercise's own name, which the engine writes as it was called
# (Pooler.forward(2, tensor(…))) and as its output (causal_mask[0, 1] is False).
UNTICKED = re.compile(r"(?<![\w.`])[A-Za-z_]\w*(?:(?:\.[A-Za-z_]\w*)+[(\[]|\[)")
IMPORTS = {"torch": torch, "nn": torch.nn, "F": torch.nn.functional, "math": math}


def snippet(span: str) -> ast.Module | None:
    """The parsed span if it is a snippet by the rule above, else None."""
    for source in (span, span + ": pass"):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        return tree if any(isinstance(node, CODE) for node in ast.walk(tree)) else None
    return None


# Exercises a check function holds rather than its module: how the check turns a visible case into the engine's.
HELD = {"mean_pool": lambda case: [(*case, kind) for kind in ch02._KINDS],
        "max_pool": lambda case: [(*case, kind) for kind in ch02._KINDS]}
# Where the engine's inputs are not the learner's parameters: exercise → (inputs → {learner's name: value}, reason).
BINDINGS = {
    "Pooler.forward": (lambda d, W, b, c: {"c": c},
                       "a method of a class exercise: the engine judges forward on (d, W, b, c), the size and the "
                       "weights the check loaded into the learner's Pooler, then forward's own parameter, c"),
}
# Names a message defines in words for its snippets: (exercise, name) → (learner's inputs → value, reason).
DEFINED = {
    ("mlm_loss", "loss"): (lambda logits, labels: logits.clone().requires_grad_().sum(),
                           "the loss the function returns, 'so that `loss.backward()` works': any 0-d tensor that "
                           "carries the graph"),
    ("span_loss", "loss"): (lambda start_logits, end_logits, start, end: start_logits.clone().requires_grad_().sum(),
                            "the loss the function returns, 'so that `loss.backward()` can train the head'"),
    ("token_loss", "loss"): (lambda logits, labels: logits.clone().requires_grad_().sum(),
                             "the loss the function returns, 'so that `loss.backward()` works'"),
    ("sentence_embedding", "z"): (lambda H, attention_mask: H.sum(1),
                                  "'the mean z, (B, d)': the learner's pooled vectors, one per sentence"),
    ("sentence_embedding", "b"): (lambda H, attention_mask: 0, "'`H[b][attention_mask[b]]` (row b)': a row index"),
    ("restrict_to_labels", "c"): (lambda next_token_logits, label_token_ids: 0,
                                  "'column c must be the probability of `label_token_ids[c]`': a column index"),
    ("align_labels", "i"): (lambda word_ids, word_labels: next(i for i, w in enumerate(word_ids) if w is not None),
                            "'not by the token position i', fixed by `word_labels[word_ids[i]]`: the position of a "
                            "token that belongs to a word (the hint is about those)"),
}


def checked_exercises() -> list[tuple[str, Exercise, list]]:
    """(lesson number, exercise, its visible cases as the engine reads them) for every exercise with visible cases,
    whether its module or a check function holds it."""
    found = []
    for info in sorted(pkgutil.iter_modules(headlab.checks.__path__), key=lambda m: m.name):
        if not info.name.startswith("ch"):
            continue
        module = importlib.import_module(f"headlab.checks.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Exercise) and value.cases:
                found.append((info.name[2:], value, list(value.cases)))
            elif inspect.isfunction(value) and value.__module__ == module.__name__:
                for held in inspect.getclosurevars(value).nonlocals.values():
                    if isinstance(held, Exercise) and held.cases:
                        assert held.name in HELD, f"{held.name}: say in HELD how its check reads its cases"
                        found.append((info.name[2:], held, [c for case in held.cases for c in HELD[held.name](case)]))
    return found


CHECKED = checked_exercises()


@lru_cache(maxsize=None)
def learner_parameters(number: str, name: str) -> tuple[str, ...]:
    """The parameters of the learner's function (a method's without self), as the solution declares them."""
    function, _, method = name.partition(".")
    answer = lesson(number).solution_namespace(function)[function]
    return tuple(p for p in inspect.signature(getattr(answer, method) if method else answer).parameters
                 if p != "self")


def copied(inputs: tuple) -> tuple:
    return tuple(x.clone() if isinstance(x, torch.Tensor) else list(x) if isinstance(x, list) else x for x in inputs)


def bound(number: str, ex: Exercise, inputs: tuple) -> dict:
    """A fresh namespace for a message's snippets: copies of the inputs under the learner's names, the names the
    message defines, and the lessons' imports."""
    if ex.name in BINDINGS:
        names = BINDINGS[ex.name][0](*copied(inputs))
    else:
        params = learner_parameters(number, ex.name)
        assert len(params) >= len(inputs), f"{ex.name}: the learner's {params} do not take {len(inputs)} inputs"
        names = dict(zip(params, copied(inputs)))
    defined = {name: value(**names) for (exercise, name), (value, _) in DEFINED.items() if exercise == ex.name}
    return {**IMPORTS, **names, **defined}


def crashes(inputs: tuple) -> list[Exception]:
    """Errors a learner's function raises, for the hints: every size clash the inputs' sizes allow, and the usual
    messages of the others."""
    sizes = sorted({s for x in inputs if isinstance(x, torch.Tensor) for s in x.shape}
                   | {len(x) for x in inputs if isinstance(x, list)})
    return [*(RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                           "dimension 1") for a in sizes for b in sizes if a != b),
            RuntimeError("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
            RuntimeError("expected scalar type Float but found Long"),
            RuntimeError("Expected object of scalar type Long but got Bool: dtype"),
            ValueError("Expected input batch_size (6) to match target batch_size (2)."),
            TypeError("'NoneType' object is not subscriptable"), TypeError("bad operand type for unary ~: 'float'"),
            TypeError("f() takes 1 positional argument but 2 were given"), TypeError("'Tensor' object is not callable"),
            IndexError("list index out of range"), IndexError("index 9 is out of bounds for dimension 1 with size 9"),
            IndexError("tensors used as indices must be long, int, byte or bool tensors"),
            AttributeError("'list' object has no attribute 'shape'")]


SHOWN: dict[str, dict[str, tuple]] = {}   # exercise → its shown messages, worked out once


def shown_messages(ex: Exercise, cases: list) -> dict[str, tuple]:
    if ex.name not in SHOWN:
        SHOWN[ex.name] = showing(ex, cases)
    return SHOWN[ex.name]


def showing(ex: Exercise, cases: list) -> dict[str, tuple]:
    """Every message the engine shows for the exercise on its visible cases → the inputs it is shown for: each
    mistake's (judged on what it returns, so named only where the engine names it), the explanation of a wrong
    value no mistake fits (on a slip of one entry and on every mistake's output), the wrong shape, dtype and type,
    each hint on the crashes it answers (the engine's and core's), and the refusal of a changed input."""
    shown: dict[str, tuple] = {}

    def keep(inputs, run):
        try:
            run()
        except NotWritten:
            pass
        except CheckFailed as err:   # with its fix, the code a repeat of the mistake shows (core.shown)
            shown.setdefault(f"{err} {err.fix}" if err.fix else str(err), inputs)

    for case in cases:
        inputs, expected = ex.read(case)
        outputs = []
        for mistake in ex.mistakes:
            outputs.append(ex.output(mistake, copied(inputs)))   # None where it does not apply (a twist: here)
        if isinstance(expected, torch.Tensor):
            flat = expected.clone().reshape(-1)
            slip = 0.731 if expected.is_floating_point() else 7
            flat[0] = ~flat[0] if expected.dtype == torch.bool else flat[0] + slip
            outputs += [flat.reshape(expected.shape), expected[None], expected.tolist(), (expected, expected.long()),
                        expected.long() if expected.is_floating_point() else expected.float()]
        elif isinstance(expected, list):
            outputs += [[expected[0] + 7, *expected[1:]], expected[:-1], torch.tensor(expected),
                        [float(x) for x in expected]]
        else:
            outputs += [expected + (7 if isinstance(expected, int) else 0.731), torch.tensor(expected), [expected]]
        for out in outputs:
            if out is not None:
                keep(inputs, lambda: ex.judge(out, expected, copied(inputs)))
        for err in crashes(inputs):
            def crash(*args, err=err):
                raise err
            keep(inputs, lambda: ex._call(crash, copied(inputs)))
        shown.setdefault(ex.unchanged.format(name=ex.name), inputs)
    return shown


def failed_snippets(number: str, ex: Exercise, cases: list) -> tuple[list[str], int]:
    """Each snippet of a shown message that does not run as written, in words (once per snippet and error, with the
    first message it failed in); and how many snippets ran."""
    failed: dict[tuple[str, str], list[str]] = {}
    ran = 0
    for message, inputs in shown_messages(ex, cases).items():
        namespace = bound(number, ex, inputs)
        names = sorted(set(namespace) - set(IMPORTS) - {"__builtins__"})
        for span in TICKED.findall(message):
            tree = snippet(span)
            if tree is None:
                continue
            ran += 1
            try:
                if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
                    eval(compile(ast.Expression(tree.body[0].value), span, "eval"), namespace)
                else:
                    exec(compile(tree, span, "exec"), namespace)
            except Exception as err:
                said = f"{type(err).__name__}: {err}"
                failed.setdefault((span, said), []).append(
                    f"{ex.name}: `{span}` does not run as written ({said}) with the learner's names {names}, "
                    f"in the message:\n    {message}")
    return [f"{shown[0]}" + (f"\n  (and in {len(shown) - 1} more messages)" if len(shown) > 1 else "")
            for shown in failed.values()], ran


def test_what_counts_as_a_snippet():
    assert all(snippet(s) is None for s in ("reject", "keepdim", "True", "(B, n)", "*=", "~", ".float()", "lengths"))
    assert all(snippet(s) is not None for s in ("mask.sum(dim=1, keepdim=True)", "H[:, 0]", "-100", "x = x.bool()",
                                                 "if not word_id", "word_id is None", "for w in word_ids"))
    assert TICKED.findall("use `a.b()` or `c`") == ["a.b()", "c"]
    assert UNTICKED.findall("x.sum(1), m.shape[1], H[:, 0], tanh(W c + b), .item(), `H[0]`, ln K") == [
        "x.sum(", "m.shape[", "H["]


def test_every_exercise_with_cases_is_checked_for_snippets():
    names = {ex.name for _, ex, _ in CHECKED}
    assert names >= {ex.name for ex in EXERCISES} | set(HELD)
    assert set(BINDINGS) | {name for name, _ in DEFINED} <= names, "a table entry names no exercise"
    assert all(reason for _, reason in [*BINDINGS.values(), *DEFINED.values()]), "each table entry says why"


@pytest.mark.parametrize("number, ex, cases", CHECKED, ids=[ex.name for _, ex, _ in CHECKED])
def test_every_suggested_snippet_runs_as_written(number, ex, cases):
    failed, _ = failed_snippets(number, ex, cases)
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize("number, ex, cases", CHECKED, ids=[ex.name for _, ex, _ in CHECKED])
def test_no_message_shows_code_outside_backticks(number, ex, cases):
    """Code a message shows outside backticks would escape the test above: each must be a snippet."""
    found = {}
    for message in shown_messages(ex, cases):
        for code in UNTICKED.findall(TICKED.sub("", message)):
            if code not in (f"{ex.name}(", f"{ex.name}["):
                found.setdefault(code, message)
    assert not found, "\n".join(f"{ex.name}: {code}… is code outside backticks in: {message}"
                                 for code, message in found.items())


def literal_texts(tree: ast.AST):
    """(line, text) of every string a module builds, docstrings left out; an f-string's fields read as X."""
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    inside = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in docstrings | inside):
            yield node.lineno, node.value


@pytest.mark.parametrize("module", [m for m in pkgutil.iter_modules(headlab.checks.__path__) if m.name.startswith("ch")],
                         ids=lambda m: m.name)
def test_no_check_shows_code_outside_backticks(module):
    """Messages raised outside the engine (class checks, rules, drivers) are not rendered by the tests above;
    read from the source, their code must still be in backticks (an exercise's own name may lead)."""
    checks = importlib.import_module(f"headlab.checks.{module.name}")
    source, public = inspect.getsource(checks), {name for name in dir(checks) if not name.startswith("_")}
    found = [f"{module.name}.py:{line}: {code}… outside backticks in: {text[:100]}"
             for line, text in literal_texts(ast.parse(source))
             for code in UNTICKED.findall(TICKED.sub("", text)) if code[:-1] not in public]
    assert not found, "\n".join(found)


def test_the_snippet_test_finds_snippets():
    """The rule finds the messages' code: hundreds of snippet runs over the exercises (557 when written)."""
    assert sum(failed_snippets(*checked)[1] for checked in CHECKED) >= 300


def test_a_module_without_super_init_is_told_to_call_it():
    class Head(torch.nn.Module):
        def __init__(self, d, num_labels, dropout=0.1):
            self.linear = torch.nn.Linear(d, num_labels)   # before nn.Module.__init__: torch refuses

    with pytest.raises(CheckFailed, match=r"before `super\(\)\.__init__\(\)` had run") as caught:
        ch04.TokenClassifier(Head)
    assert caught.value.mistake == "no-super-init" and "Call `super().__init__()` first" in caught.value.fix


def test_an_argmax_of_a_bool_mask_is_told_to_convert_it():
    with pytest.raises(CheckFailed, match=r"argmax \(or topk\) of a bool tensor") as caught:
        ch06.last_real_index(lambda mask: mask.shape[1] - 1 - mask.bool().flip(1).argmax(1))
    assert caught.value.mistake == "ranks-a-bool-tensor" and "`.long()`" in caught.value.fix
