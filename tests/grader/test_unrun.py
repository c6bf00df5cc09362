"""Flagged code is not run (grader/heads_unrun.py), parse only: no kernel, no nbgrader run.

The statements that hold a score for review are replaced by `pass` and nothing held is left; the rest of the
notebook, the student's answers among it, runs as written. End to end (a kernel, the grader's run) in
test_hostile.py: a hand-in whose patch would have forged its score gets its honest score.
"""
from __future__ import annotations

import nbformat
import pytest
import torch

from course import REPO, fill, solution_answers
from heads_flags import code_flags, holds
from heads_unrun import disable_flagged
from test_flags import FORGERIES, HONEST, LESSON, PACKAGE_ROUTES, release

CORRECT = "def causal_mask(n):\n    return torch.ones(n, n, dtype=torch.bool).tril()\n"
WRONG = "def causal_mask(n):\n    return torch.ones(n, n, dtype=torch.bool).triu()\n"
# Red team 15 (held out; written here): the test cell's lines run through a replaced builtins.exec, which swaps in a
# correct causal_mask while the grader calls it; the notebook shows a wrong one.
SWAP_DURING_TEST = """\
class Runner:
    def __init__(self, real):
        self.real = real

    def __call__(self, code, *rest, **kw):
        global causal_mask
        causal_mask = lambda n: torch.ones(n, n, dtype=torch.bool).tril()
        return self.real(code, *rest, **kw)


match print:
    case object(__self__=b):
        b.exec = Runner(b.exec)
"""


def held(nb, rel) -> list[str]:
    return [f for f in code_flags(nb, rel) if holds(f)]


def answer_cell(nb):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "causal_mask")


def code_of(cell) -> str:
    """The cell's code without the grader's note (comment lines at its top)."""
    lines = cell.source.split("\n")
    return "\n".join(lines[next(i for i, line in enumerate(lines) if not line.startswith("#")):])


def run(cell) -> dict:
    """The cell as the kernel would run it, in a namespace of its own."""
    namespace = {"torch": torch}
    exec(cell.source, namespace)
    return namespace


def with_cell(source: str, answer: str = CORRECT):
    rel = release(LESSON)
    nb = fill(rel, {**solution_answers(LESSON), "causal_mask": answer})
    nb.cells.insert(3, nbformat.v4.new_code_cell(source))
    return nb, rel


def test_the_patch_is_not_run_and_the_answer_shown_is_graded():
    nb, rel = with_cell(SWAP_DURING_TEST, WRONG)
    assert held(nb, rel)
    changed = disable_flagged(nb, rel)
    assert len(changed) == 1 and "match print:" in changed[0], changed
    inserted = nb.cells[3]
    assert "b.exec" not in code_of(inserted) and "pass" in inserted.source
    assert "class Runner" in inserted.source, "the rest of the cell runs"
    namespace = run(inserted)
    assert "Runner" in namespace and print.__self__.exec is exec, "nothing was patched"
    assert held(nb, rel) == []
    assert answer_cell(nb).source.strip() == WRONG.strip(), "the answer cell is not touched"


# Red team 15's a7 (held out; written here): the answer installs the swap itself, through a match capture named `b`
# (a name lesson 00 binds to the tokenizer's batch at its top level: the capture is the answer's own).
PATCHES_IN_AN_ANSWER = {
    "import": "    import builtins\n    builtins.exec = print\n",
    "match-capture": "    match print:\n        case object(__self__=b):\n            b.exec = print\n",
}


@pytest.mark.parametrize("patch", PATCHES_IN_AN_ANSWER)
def test_a_patch_inside_an_answer_leaves_the_answer_defined(patch):
    answer = CORRECT.replace("    return", PATCHES_IN_AN_ANSWER[patch] + "    return")
    nb, rel = with_cell("x = 1", answer)
    disable_flagged(nb, rel)
    namespace = run(answer_cell(nb))
    assert torch.equal(namespace["causal_mask"](3), torch.ones(3, 3, dtype=torch.bool).tril())
    assert ".exec = print" not in code_of(answer_cell(nb))
    assert held(nb, rel) == []


def test_a_timed_cell_runs_its_code_without_the_timer():
    nb, rel = with_cell("%%time\nimport builtins\nbuiltins.open = print\ny = 2")
    disable_flagged(nb, rel)
    namespace = run(nb.cells[3])
    assert namespace["y"] == 2 and "builtins.open" not in code_of(nb.cells[3])
    assert "%%time" in nb.cells[3].source, "the note says the timer was left out"


def test_the_instructors_cells_run_as_written():
    """At autograde the test cells hold the source's hidden tests (nbgrader's OverwriteCells), which import the
    grader's side: the instructor's code, never rewritten."""
    source = nbformat.read(REPO / "solutions" / LESSON / f"{LESSON}.ipynb", as_version=4)
    tests = [c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert any("headlab.grading" in t for t in tests), "the hidden tests are in the source"
    assert disable_flagged(source, release(LESSON)) == []


@pytest.mark.parametrize("route", ["model-as-a-default", "loop-variable"])
def test_an_answer_the_package_computes_is_left_unwritten(route):
    """Red team 16 (held out): causal_mask through the decoder's attention pattern, scored as if written. Its def is
    not run, so the exercise scores what an unwritten answer scores; the loop before it still runs."""
    nb, rel = with_cell("x = 1", PACKAGE_ROUTES[route])
    assert any("an answer built on the course package" in f for f in held(nb, rel))
    changed = disable_flagged(nb, rel)
    assert len(changed) == 1 and changed[0].startswith("causal_mask: not run") and "course package" in changed[0]
    code = code_of(answer_cell(nb))
    assert "def causal_mask" not in code and "pass" in code
    assert answer_cell(nb).source.startswith("# The grader did not run"), "the note the other rewrites write"
    assert "causal_mask" not in run(nbformat.v4.new_code_cell(code.replace("decoder", "None"))), "left undefined"
    assert held(nb, rel) == []
    assert nb.cells[3].source == "x = 1", "cells that do not bind the answer run as written"


def test_a_binding_of_the_answer_in_another_cell_is_not_run_either():
    nb, rel = with_cell(PACKAGE_ROUTES["partial"], CORRECT)
    changed = disable_flagged(nb, rel)
    assert len(changed) == 2, changed
    assert "functools.partial" not in code_of(nb.cells[3]) and "def impl" in nb.cells[3].source
    assert "def causal_mask" not in code_of(answer_cell(nb)), "the answer cell's own def binds the answer too"
    assert held(nb, rel) == []


# Red team 17 (held out; written here): a flagged line with carriage returns, which Python reads as line breaks. Quoted
# in the note, its code ran in the kernel from inside the comment; a line count other than the split's crashed
# the rewrite. A cell of more statements than the grader narrows is not run at all.
CARRIAGE_RETURNS = {
    "note": 'P = "ran.append(1)"\nimport ctypes; s = """\rexec(P)\r#"""',
    "count": "import ctypes\nx = 1\ry = 2\rz = 3",
    "long": "import pdb\n" + "\n".join(f"x{k} = {k}" for k in range(300)) + "\nimport pdb",
}


@pytest.mark.parametrize("name", CARRIAGE_RETURNS)
def test_what_the_kernel_runs_is_the_notebook_without_its_flagged_statements(name):
    nb, rel = with_cell(CARRIAGE_RETURNS[name])
    assert held(nb, rel)
    disable_flagged(nb, rel)
    source = nb.cells[3].source
    namespace = {"ran": []}
    exec(source, namespace)   # as the kernel runs it, comments and all
    assert namespace["ran"] == [], source
    assert held(nb, rel) == [], source


@pytest.mark.parametrize("name", sorted(HONEST)[:12])
def test_honest_code_runs_as_written(name):
    nb, rel = with_cell(HONEST[name])
    assert disable_flagged(nb, rel) == []
    assert nb.cells[3].source == HONEST[name]


@pytest.mark.slow
@pytest.mark.parametrize("where", ["answer", "inserted"])
def test_nothing_held_is_left_of_any_forgery(where):
    """Every forgery test_flags names, in the answer cell or a cell of its own: after the rewrite, nothing of it
    holds the score (no flag the grader would hold for is left in the code the kernel runs)."""
    left = {}
    for name, forgery in FORGERIES.items():
        if where == "answer":
            code = [CORRECT, forgery]
            nb, rel = with_cell("x = 1", "\n".join(code[::-1] if "%%" in forgery else code))
        else:
            nb, rel = with_cell(forgery)
        before = held(nb, rel)
        disable_flagged(nb, rel)
        after = held(nb, rel)
        if after or not before:
            left[name] = after or "not held to begin with"
    assert not left, left
