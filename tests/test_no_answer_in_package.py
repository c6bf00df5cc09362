"""The package students install holds no answer (issue 25, item 4).

Every callable reachable from `headlab` (functions, classes, methods, private ones, and callables up to three
attributes or items deep: a check's mistakes, a class's methods) is submitted as the answer to every graded
exercise it fits, to the exercise's visible check and to its hidden test, and must fail both. A callable
"fits" a function exercise when it runs on the exercise's inputs: called as the exercise is, or with up to two
extra parameters filled in by name (a parameter named like one of the exercise's, or a prefix of one) or from a
small pool of values a student would try (the inputs, zeros like them, an int input ± 1, 0, 1, -1, None,
True, False); a class exercise takes the package's nn.Module subclasses. The knowledge check's answers must
appear nowhere in the package's values.

Each filled-in call is first compared with the instructor's solution on one input the visible check gives
(the one with the smallest numbers); only the calls that agree there are run through the checks, which keeps
this fast (about 20 s). The hidden test is the solution notebook's own (its source between the HIDDEN TESTS
markers), run here in-process on the candidate, not replayed from a recording of a notebook run: the checks
judge a function the same way in both, and recording every lesson would cost a notebook run each.
What is not tried: compositions of two callables, and arithmetic on the inputs beyond ± 1.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import inspect
import io
import itertools
import math
import pkgutil
import re
import signal
from functools import lru_cache
from typing import Any, Callable

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import headlab
from headlab.checks.engine import Exercise, Mistake, same
from heads_lessons import LESSONS, all_lessons

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)
VISIBLE = re.compile(r"^check\.(\w+)\((\w+)\)$", re.M)
# Not submitted: the grader's own session machinery (calling it with stray arguments would start or end a
# recording in this process) and the command line; neither returns tensors or numbers for an exercise.
SKIP_MODULES = ("headlab.grading", "headlab.check")
KNOWLEDGE_CHECK = "knowledge_check"


# --- what is reachable --------------------------------------------------------------------------
def _ours(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.startswith("headlab") and module not in SKIP_MODULES


@lru_cache(maxsize=None)
def reachable() -> tuple[tuple[str, Callable], ...]:
    """(where, callable) for every callable of headlab, found from each module's globals and from there up to
    three steps further (attributes of the package's objects and classes, items of lists, tuples and dicts)."""
    modules = [headlab] + [importlib.import_module(m.name) for m in pkgutil.walk_packages(headlab.__path__, "headlab.")]
    found: dict[int, tuple[str, Callable]] = {}

    def visit(obj: Any, where: str, depth: int) -> None:
        if isinstance(obj, type(headlab)) or depth > 3:
            return
        if callable(obj) and _ours(obj) and id(obj) not in found:
            found[id(obj)] = (where, obj)
        if isinstance(obj, (list, tuple)):
            children = list(enumerate(obj))
        elif isinstance(obj, dict):
            children = list(obj.items())
        elif _ours(obj) or isinstance(obj, (Mistake, Exercise)):
            children = list(vars(obj).items()) if hasattr(obj, "__dict__") else []
        else:
            return
        for key, child in children:
            if isinstance(child, (staticmethod, classmethod)):
                child = child.__func__
            visit(child, f"{where}.{key}", depth + 1)

    for module in modules:
        if module.__name__ in SKIP_MODULES:
            continue
        for name, obj in vars(module).items():
            if not name.startswith("__"):
                visit(obj, f"{module.__name__}.{name}", 0)
    return tuple(found.values())


# --- the graded exercises -------------------------------------------------------------------------
@lru_cache(maxsize=None)
def exercises() -> tuple[dict, ...]:
    """Each graded exercise: its lesson's check module, the visible check's name, the hidden test's source,
    and the instructor's solution (its answer cell run on the lesson's usual imports)."""
    out = []
    for lesson in all_lessons():
        nb = lesson.read()
        cells = {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")}
        answers = lesson.answers()
        for name in lesson.exercises():
            if name == KNOWLEDGE_CHECK:
                continue
            test = cells[f"test_{name}"].source
            visible = VISIBLE.search(test.split("### BEGIN HIDDEN TESTS")[0])
            assert visible and visible.group(2) == name, f"{lesson.name}: no `check.X({name})` line in test_{name}"
            ns = _namespace(lesson)
            exec(answers[name], ns)
            out.append(dict(lesson=lesson, name=name, check=getattr(ns["check"], visible.group(1)),
                            hidden=HIDDEN.search(test).group(1), solution=ns[name]))
    return tuple(out)


def _namespace(lesson) -> dict:
    """The names the lesson's answer cells and hidden tests use: its import lines (the setup cell's install
    line left out), and lesson 08's tokenizer."""
    ns = {}
    exec(_imports(lesson.name), ns)
    if lesson.number == "08":
        ns.update(tokenizer=_tokenizer(), TAGS=importlib.import_module("headlab.data").TAGS)
    return ns


@lru_cache(maxsize=None)
def _imports(name: str) -> str:
    from heads_lessons import lesson
    return lesson(name).imports()


@lru_cache(maxsize=None)
def _tokenizer():
    """Lesson 08's WordPiece tokenizer alone (its hidden tests build word_ids with it); the model is not loaded,
    so the one hidden check that needs it stops there (counted by the checks that passed before it)."""
    from transformers import AutoTokenizer

    from headlab.minilm import snapshot_folder
    folder = snapshot_folder()
    return None if folder is None else AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


# --- judging one candidate -------------------------------------------------------------------------
class _Captured(Exception):
    pass


class _Slow(Exception):
    pass


@contextlib.contextmanager
def no_open_of_an_fd():
    """`open(3)` wraps file descriptor 3 and closes it after: a file reader of the package (a checksum) given an
    int of the pool would close this process's stdout or a pipe of pytest's."""
    real = builtins.open

    def guarded(file, *args, **kwargs):
        if isinstance(file, int):
            raise TypeError("a file descriptor, refused here")
        return real(file, *args, **kwargs)
    builtins.open = io.open = guarded
    try:
        yield
    finally:
        builtins.open = io.open = real


@contextlib.contextmanager
def time_limit(seconds: float):
    """Stop a call that runs longer than `seconds`: an answer to these exercises takes microseconds on the
    check's small inputs, and some callables of the package (data sets, training loops) given a size from the
    pool (30522 words) would run for minutes."""
    def stop(*_):
        raise _Slow()
    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def first_call(check: Callable, solution: Callable) -> tuple[tuple, dict]:
    """The arguments of the visible check's call of the solution with the smallest numbers in it (generators as
    their state): the package's builders given 30522 words would allocate for minutes."""
    got = []

    def spy(*args, **kwargs):
        got.append((_freeze(args), {k: _freeze((v,))[0] for k, v in kwargs.items()}))
        return solution(*args, **kwargs)

    with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
        check(spy)
    assert got, f"{check} never called the answer"
    size = lambda call: max([abs(a) for a in call[0] if isinstance(a, int)] + [0])  # noqa: E731
    return min(got, key=size)


def _freeze(args: tuple) -> tuple:
    return tuple(("generator", a.get_state()) if isinstance(a, torch.Generator) else
                 a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def _thaw(args: tuple) -> list:
    """Fresh copies of frozen arguments, so that no call sees what an earlier one did to them."""
    out = []
    for a in args:
        if isinstance(a, tuple) and len(a) == 2 and a[0] == "generator":
            out.append(torch.Generator().set_state(a[1]))
        else:
            out.append(a.clone() if isinstance(a, torch.Tensor) else list(a) if isinstance(a, list) else a)
    return out


def _pool(args: list) -> list:
    """The values a student would try for a parameter the exercise does not have."""
    pool: list = [0, 1, -1, None, True, False]
    for i, a in enumerate(args):
        pool.append(("arg", i))
        if isinstance(a, torch.Tensor):
            pool.append(("zeros", i))
        if isinstance(a, int) and not isinstance(a, bool):
            pool += [("plus", i, 1), ("plus", i, -1)]
    return pool


def _value(spec: Any, args: list) -> Any:
    if not isinstance(spec, tuple):
        return spec
    a = args[spec[1]]
    return a if spec[0] == "arg" else torch.zeros_like(a) if spec[0] == "zeros" else a + spec[2]


def adapters(fn: Callable, names: list[str], args: list) -> list[Callable[[list], tuple]]:
    """Ways to call `fn` with the exercise's arguments: as they are, then with its extra required parameters
    filled in (a parameter named like one of the exercise's, or a prefix of one, takes that argument; the
    others take values of the pool)."""
    ways = [lambda given: tuple(given)]
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return ways
    required = [p for p in params if p.default is p.empty]
    if not len(args) < len(required) <= len(args) + 2:
        return ways
    matched = {}
    for p in required:
        i = next((i for i, name in enumerate(names) if p.name == name or name.startswith(p.name)
                  or p.name.startswith(name)), None)
        if i is not None:
            matched[p.name] = ("arg", i)
    free = [p for p in required if p.name not in matched]
    if len(free) > 2:   # beyond two, the pool's product costs more than it finds
        return ways

    def way(choice):
        spec = {**matched, **dict(zip((p.name for p in free), choice))}
        return lambda given: tuple(_value(spec[p.name], given) for p in required)
    return ways + [way(choice) for choice in itertools.product(_pool(args), repeat=len(free))]


def agrees(out: Any, want: Any) -> bool:
    if isinstance(want, torch.Tensor):
        return isinstance(out, torch.Tensor) and same(out, want, 1e-4, kind=False)
    if isinstance(want, tuple) and isinstance(out, tuple) and len(out) == len(want):
        return all(agrees(a, b) for a, b in zip(out, want))
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        try:
            return abs(float(out) - float(want)) <= 1e-4
        except Exception:
            return False
    try:
        return out == want
    except Exception:
        return False


def passes(exercise: dict, answer: Callable) -> list[str]:
    """Which of the exercise's checks `answer` passes: "visible", and "hidden" if one of the hidden test's
    check calls printed its pass line."""
    said = []
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            exercise["check"](answer)
            said.append("visible")
        except Exception:
            pass
    ns = _namespace(exercise["lesson"])
    ns[exercise["name"]] = answer
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            exec(exercise["hidden"], ns)
        except Exception:
            pass
    if "✓" in printed.getvalue():
        said.append("hidden")
    return said


def answers_among(exercise: dict, candidates) -> list[str]:
    """Every candidate (or filled-in call of one) that passes one of the exercise's checks."""
    solution = exercise["solution"]
    found = []
    if isinstance(solution, type):   # a class exercise: any nn.Module subclass of the package, as it is
        for where, obj in candidates:
            if isinstance(obj, type) and issubclass(obj, nn.Module):
                said = passes(exercise, obj)
                if said:
                    found.append(f"{where} passes {exercise['name']} ({', '.join(said)})")
        return found
    args, kwargs = first_call(exercise["check"], solution)
    names = list(inspect.signature(solution).parameters)
    want = solution(*_thaw(args), **dict(zip(kwargs, _thaw(tuple(kwargs.values())))))
    for where, fn in candidates:
        if isinstance(fn, type) or isinstance(fn, Exercise):
            continue
        for bind in adapters(fn, names, _thaw(args)):
            try:
                with contextlib.redirect_stdout(io.StringIO()), time_limit(0.5):
                    out = fn(*bind(_thaw(args)), **dict(zip(kwargs, _thaw(tuple(kwargs.values())))))
            except Exception:
                continue
            if not agrees(out, want):
                continue
            # the same binding, as an answer of the exercise's signature
            answer = lambda *a, _fn=fn, _bind=bind, **k: _fn(*_bind(list(a)), **k)  # noqa: E731
            said = passes(exercise, answer)
            if said:
                found.append(f"{where} passes {exercise['name']} ({', '.join(said)})")
                break
    return found


@pytest.mark.parametrize("index", range(len(exercises())), ids=[e["name"] for e in exercises()])
def test_no_callable_of_the_package_passes_an_exercise(index):
    exercise = exercises()[index]
    with no_open_of_an_fd():
        found = answers_among(exercise, reachable())
    assert not found, "the package holds an answer:\n" + "\n".join(found)


def _composed() -> dict[str, Callable]:
    """A held-out red team's answers (stop 34), written as a student would: check helpers composed with a string
    argument, arithmetic on an argument or a lambda, which the search above does not try."""
    from headlab.checks import ch05, ch07, ch08
    return {
        # the second held-out red team's (stop 35): lesson 08's rule of first pieces, once a message helper
        "align_labels": lambda w, l: [l[w[i]] if i in ch08._first_pieces(w) else -100 for i in range(len(w))],
        "best_span": lambda s, e, allowed, max_len: ch05._wrong_spans(ch05._RULES["one-too-long"], s, e, allowed,
                                                                      max_len - 1),
        "expected_calibration_error":
            lambda p, y, n_bins=10: float(torch.mul(*ch07._bins(p, y, n_bins, zero_binned=True)).nansum()),
        "predict_or_reject": lambda p, t, reject=-1: ch07._decide(p, lambda top: top >= t, reject),
    }


# Each passed while the mistake tables held helpers general enough to give the answer (a search under a rule, a
# binning). The mistakes' functions are now the grader's (grader/heads_mistakes), the kernel holding their outputs on
# the visible cases as data (tests/test_mistake_recording.py), so these helpers are no longer in the package.
@pytest.mark.parametrize("name", ["best_span", "expected_calibration_error", "predict_or_reject", "align_labels"])
def test_check_helpers_composed_by_hand_pass_no_exercise(name):
    exercise = next(e for e in exercises() if e["name"] == name)
    assert not passes(exercise, _composed()[name]), f"{name}: a composition of check helpers passes"


def test_the_search_finds_a_planted_answer():
    """The search itself can find an answer: a helper like the ones the checks hold, planted among the
    candidates, is found for padding_mask whether it is called as the exercise is or needs its extra
    parameters filled in, and for a class exercise."""
    exercise = next(e for e in exercises() if e["name"] == "padding_mask")

    def rows(n, first, stop):   # the form of a check helper: right with first = 0, stop = lengths
        i = torch.arange(n)[None, :]
        return (i >= first[:, None]) & (i < stop[:, None])

    assert answers_among(exercise, [("planted.rows", rows)])
    assert answers_among(exercise, [("planted.solution", exercise["solution"])])
    pooler = next(e for e in exercises() if e["name"] == "Pooler")
    assert answers_among(pooler, [("planted.Pooler", pooler["solution"])])


def knowledge_check_values() -> dict[str, Any]:
    """The graded knowledge check's answers, read from lesson 06's hidden test (its `expected=` argument), so
    that these tests follow the graded question when it changes."""
    lesson = next(l for l in all_lessons() if l.number == "06")
    hidden = HIDDEN.search(next(c.source for c in lesson.read().cells
                                if c.metadata.get("nbgrader", {}).get("grade_id") == f"test_{KNOWLEDGE_CHECK}")).group(1)
    call = next(node for node in ast.walk(ast.parse(hidden)) if isinstance(node, ast.Call)
                and any(k.arg == "expected" for k in node.keywords))
    values = eval(compile(ast.Expression(next(k.value for k in call.keywords if k.arg == "expected")), "<kc>", "eval"),
                  {"math": math})
    assert values["kc_positions"] and values["kc_head_params"] and values["kc_initial_loss"], values
    return values


def test_the_knowledge_check_values_are_nowhere_in_the_package():
    """Lesson 06's hidden test holds the knowledge check's values; no constant of the package may equal one
    (a list of positions, the parameter count, the rounded loss), however deep in a table it sits."""
    values = knowledge_check_values()
    modules = [headlab] + [importlib.import_module(m.name) for m in pkgutil.walk_packages(headlab.__path__, "headlab.")]
    found = []

    def visit(obj: Any, where: str, depth: int) -> None:
        if depth > 5 or isinstance(obj, (type(headlab), torch.Tensor)) or callable(obj) and not isinstance(obj, Exercise):
            return
        for name, value in values.items():
            if type(obj) is type(value) and obj == value or isinstance(value, list) and isinstance(obj, (list, tuple)) \
                    and list(obj) == value:
                found.append(f"{where} = {obj!r} is {name}")
        items = (enumerate(obj) if isinstance(obj, (list, tuple)) else obj.items() if isinstance(obj, dict)
                 else vars(obj).items() if isinstance(obj, Exercise) else ())
        for key, child in items:
            visit(child, f"{where}[{key!r}]", depth + 1)

    for module in modules:
        for name, obj in vars(module).items():
            if not name.startswith("__"):
                visit(obj, f"{module.__name__}.{name}", 0)
    assert not found, "the package holds the knowledge check's answers:\n" + "\n".join(found)


def _written(value: Any) -> re.Pattern:
    """How a knowledge-check answer would be written in prose or printed: a list as its numbers in order,
    joined by commas and/or "and" (`6, 3 and 8`, `[6, 3, 8]`); an integer with or without a thousands
    separator (`2565`, `2,565`, `2 565`); a float as its two decimals (`1.61`). Digits around it do not
    count (`12565` is another number)."""
    if isinstance(value, list):
        return re.compile(r"(?<![\d.])" + r"(?:,\s*|\s+and\s+|,\s+and\s+)".join(map(str, value)) + r"(?![\d.])")
    if isinstance(value, int):
        text = str(value)
        return re.compile(r"(?<![\d.,])" + (text[:-3] + r"[,\s]?" + text[-3:] if len(text) > 3 else text)
                          + r"(?![\d]|\.\d)")
    return re.compile(r"(?<![\d.])" + re.escape(f"{value:.2f}") + r"(?!\d)")


def _printed(cell) -> list[str]:
    return ["".join(o.get("text", "")) + "".join("".join(v) for k, v in o.get("data", {}).items() if k.startswith("text/"))
            for o in cell.get("outputs", [])]   # images left out: base64 holds digits by chance


def test_no_cell_a_student_runs_prints_the_knowledge_check_values():
    """What a student's Run All prints, read from the solutions' outputs: no cell other than the answer and its test
    may print a graded knowledge-check value (lesson 06 measured an untrained 5-class head right after the question
    and printed `1.61`, the graded loss, until a review found it; it now measures 4 classes)."""
    patterns = {name: _written(value) for name, value in knowledge_check_values().items()}
    found = []
    for lesson in all_lessons():
        for cell in lesson.read().cells:
            if cell.cell_type != "code" or cell.metadata.get("nbgrader", {}).get("grade_id"):
                continue
            for text, (name, pattern) in itertools.product(_printed(cell), patterns.items()):
                found += [f"{lesson.name} {cell.get('id')}: {match.group(0)!r} is {name}" for match in pattern.finditer(text)]
    assert not found, "a lesson's cell prints the graded knowledge check's answers:\n" + "\n".join(found)


def test_the_knowledge_check_values_are_in_no_released_lesson():
    """The graded knowledge check's answers appear in no released lesson's markdown or outputs: an ungraded
    end-of-lesson question with the same numbers (lesson 06's left-padded batch, lesson 03's head size) would
    print the graded answer beside it in an Answer box. The code cells' sources are left out: the exercise's
    own question states its inputs, and the release strips solutions and hidden tests (checked elsewhere).
    The release clears outputs today; they are read too, so that a release with outputs stays covered."""
    patterns = {name: _written(value) for name, value in knowledge_check_values().items()}
    found = []
    for lesson in all_lessons():
        for cell in lesson.read(LESSONS).cells:
            texts = [cell.source] if cell.cell_type == "markdown" else _printed(cell)
            for text, (name, pattern) in itertools.product(texts, patterns.items()):
                found += [f"{lesson.name} {cell.get('id')}: {match.group(0)!r} is {name}" for match in pattern.finditer(text)]
    assert not found, "released lessons print the graded knowledge check's answers:\n" + "\n".join(found)
