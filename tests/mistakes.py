"""The course's vocabulary of mistake keys, and where tests prove each one (tests/test_mistake_vocabulary.py).

A key is *declared* where a check can name it:
- every string a check module (headlab/checks/*.py) writes in a key's form, lower-case words joined by
  hyphens (`one-too-many`): the first argument of `Mistake(...)`, the key argument of `fail(...)` or
  `CheckFailed(...)`, and the tables of (key, ...) tuples that feed them. Read with
  `ast`, so the list is never written by hand and a new key is found the day it is written;
- the key of every `Mistake` of every `Exercise` the check modules hold (found by walking them), which
  catches a key built at import time.

A key is *proven* where a test feeds a named wrong implementation to a check and asserts that key:
- a `Wrong(...)` / `Wrong.edit(...)` entry (or a row of `Wrong.edits(...)`) of a lesson's grading table
  (tests/grading/test_grade_*.py), which the harness replays and requires to be named by its key;
- an `Exercise`'s `Mistake`, fed back to the check by tests/test_engine.py's
  `test_every_mistake_is_named_by_its_key` (its output is the wrong implementation);
- in a test function of tests/test_*.py, an assertion `<failure>.mistake == "key"`; or `<failure>.mistake ==
  name`, where `name` takes its keys from the function's `pytest.mark.parametrize` list (written in the decorator,
  or a list of the module that the decorator names, read from the module) or from the list a `for` loop walks.
Each of these is a test that runs and fails if its key is not named, so a key proven here is one the suite
checks. The keys the engine builds from an exception's name (`raised-IndexError`) are a family, not declared.
"""
from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import headlab.checks
from headlab.checks.engine import Exercise

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ROOT / "headlab" / "checks"
KEY = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)+")   # a key's form: words joined by hyphens
WORD = re.compile(r"[a-z][a-z0-9]*")

# The five class-head checks, each module's top-level definitions that belong to it (the `heads` helper's):
# only to sort the failure list of the vocabulary test, never to excuse a key.
HEAD_DEFINITIONS = {
    "ch01": {"CONTRACT", "_head_inputs", "_crashes", "HEAD_MISTAKES", "_head_where", "_logits", "_close",
             "mlm_head"},
    "ch02": {"_pooler", "Pooler", "_judge_pooler"},
    "ch03": {"CONTRACT", "_bias_and_seed", "_eval", "sequence_classifier"},
    "ch04": {"TokenClassifier", "_crashes", "_crash_hint", "_logits"},
    "ch05": {"span_head", "_drive", "_logits", "_close", "_scorers", "_judge_head"},
    "dropout": None,   # the whole module: the heads' shared dropout rules
    "heads": None,     # the whole module: the heads' one protocol
}


def _check_modules() -> list[Path]:
    return sorted(p for p in CHECKS.glob("*.py") if p.name != "__init__.py")


def _owners(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of each top-level definition or assignment of a module."""
    spans = []
    for node in tree.body:
        names = ([node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else
                 [t.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name)])
        for name in names:
            spans.append((node.lineno, node.end_lineno, name))
    return spans


# The calls that take a key, and which positional argument it is; a key there may be a single word ("inverted").
KEY_ARGUMENT = {"Mistake": 0, "fail": 1, "CheckFailed": 1, "_fail": 1, "Unclear": 1}


def _key_arguments(tree: ast.Module) -> set[int]:
    """The ids of the string constants given as a key argument (or as a branch of one: `a if c else b`)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            at = KEY_ARGUMENT.get(name)
            if at is not None and len(node.args) > at:
                ids |= {id(n) for n in ast.walk(node.args[at]) if isinstance(n, ast.Constant)}
    return ids


def declared_keys() -> dict[str, list[str]]:
    """{key: ["ch01:mask_tokens:66", ...]}: where each key is declared (module, top-level owner, line)."""
    found: dict[str, list[str]] = {}
    for path in _check_modules():
        tree = ast.parse(path.read_text())
        owners, arguments = _owners(tree), _key_arguments(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    KEY.fullmatch(node.value) or id(node) in arguments and WORD.fullmatch(node.value)):
                owner = next((name for a, b, name in owners if a <= node.lineno <= b), "")
                found.setdefault(node.value, []).append(f"{path.stem}:{owner}:{node.lineno}")
    for info in pkgutil.iter_modules(headlab.checks.__path__):
        module = importlib.import_module(f"headlab.checks.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, Exercise):
                for mistake in value.mistakes:
                    found.setdefault(mistake.key, []).append(f"{info.name}:{name}:table")
    return found


def is_head_key(places: list[str]) -> bool:
    """Whether every place that declares the key belongs to one of the five class-head checks."""
    def head(place: str) -> bool:
        module, owner, _ = place.split(":")
        owners = HEAD_DEFINITIONS.get(module, set())
        return owners is None or owner in owners
    return all(head(p) for p in places)


# --- proofs ---------------------------------------------------------------------------------------------
def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and KEY.fullmatch(n.value)}


def grading_table_proofs() -> dict[str, list[str]]:
    """{key: [wrong implementation, ...]}: the `WRONG` table of every lesson's grading tests (tests/grading),
    each entry of which the harness replays and requires to be named by its key."""
    proofs: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests" / "grading").glob("test_grade_*.py")):
        for wrong in importlib.import_module(path.stem).WRONG:
            proofs.setdefault(wrong.mistake, []).append(f"{path.stem}::{wrong.name}")
    return proofs


def _compares_mistake(node: ast.AST) -> list[ast.AST]:
    """The right-hand sides of every `<x>.mistake == <y>` (either side) inside `node`."""
    sides = []
    for n in ast.walk(node):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Eq):
            left, right = n.left, n.comparators[0]
            for a, b in ((left, right), (right, left)):
                if isinstance(a, ast.Attribute) and a.attr == "mistake":
                    sides.append(b)
    return sides


def _named_cases(path: Path, argvalues: list[ast.AST]) -> set[str]:
    """The keys of a parametrize list the module builds and the decorator names (a pytest.param's values too)."""
    if not (argvalues and isinstance(argvalues[0], ast.Name)):
        return set()
    cases = getattr(importlib.import_module(path.stem), argvalues[0].id)
    return {v for case in cases for v in getattr(case, "values", case) if isinstance(v, str) and KEY.fullmatch(v)}


def test_function_proofs() -> dict[str, list[str]]:
    """{key: [test id, ...]} from the test functions of tests/test_*.py that assert a failure's key."""
    proofs: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]:
            sides = _compares_mistake(fn)
            keys = {s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)}
            if any(isinstance(s, (ast.Name, ast.Attribute)) for s in sides):
                # the keys come from the cases this function runs: its parametrize list, or a loop's list
                for deco in fn.decorator_list:
                    if isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "parametrize":
                        keys |= _strings(deco) | _named_cases(path, deco.args[1:2])
                for loop in [n for n in ast.walk(fn) if isinstance(n, ast.For)]:
                    if _compares_mistake(loop):
                        keys |= _strings(loop.iter)
            for key in keys:
                proofs.setdefault(key, []).append(f"{path.stem}::{fn.name}")
    return proofs


def engine_table_proofs() -> dict[str, list[str]]:
    """{key: [exercise]}: every Mistake that tests/test_engine.py feeds back to its check."""
    import test_engine

    proofs: dict[str, list[str]] = {}
    for ex, mistake in test_engine.MISTAKES:
        proofs.setdefault(mistake.key, []).append(f"test_engine::test_every_mistake_is_named_by_its_key[{ex.name}]")
    return proofs


def proven_keys() -> dict[str, list[str]]:
    proofs: dict[str, list[str]] = {}
    for source in (grading_table_proofs(), test_function_proofs(), engine_table_proofs()):
        for key, where in source.items():
            proofs.setdefault(key, []).extend(where)
    return proofs
