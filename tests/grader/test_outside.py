"""grader/heads_outside.py on what a student's kernel can do to its answers: a forged answers file is one
failed cell with a reason, never an error that stops the grading of the notebook; a test cell's inputs exist
only while it runs; its result is what its own run left, whatever a later cell writes."""
from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from headlab import codec
from heads_outside import AnswerCapture, JudgeOutsideKernel, read_answers

ENTRIES = [{"check": "headlab.checks.ch00:padding_mask", "answer": "padding_mask", "args": [], "kwargs": {},
            "calls": []}]
VIEW = {"test_a": [{"answer": "a", "calls": []}], "test_b": [{"answer": "b", "calls": []}]}


def graded_cell(grade_id: str | None):
    meta = {"nbgrader": {"grade": True, "grade_id": grade_id}} if grade_id else {}
    return SimpleNamespace(cell_type="code", metadata=meta)


@pytest.mark.parametrize("text", [
    "[" * 200_000 + "]" * 200_000,                                  # deeper than Python's JSON parser goes
    '[{"answer": {"kind": "function"}, "results": ' + "[" * 5000 + "]" * 5000 + "}]",   # deeper than decode goes
    "not json",
    '{"answers": 1}',
])
def test_a_forged_answer_file_is_a_failed_cell_with_a_reason(tmp_path, text):
    (tmp_path / "test_padding_mask.json").write_text(text)
    try:
        answers = read_answers(tmp_path, "test_padding_mask.json", 16 * 1024**2)
    except (ValueError, RecursionError) as err:
        answers = err
    verdict = JudgeOutsideKernel().judge("test_padding_mask", ENTRIES, answers)
    assert not verdict.passed and verdict.error in ("BadAnswers", "NoAnswers", "CheckFailed"), verdict


def test_answers_are_read_without_following_a_link_or_blocking_on_a_fifo(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "test_a.json").write_text("[]")
    os.symlink(real, tmp_path / "linked")
    with pytest.raises(OSError):
        read_answers(tmp_path / "linked", "test_a.json", 100)
    os.symlink(real / "test_a.json", real / "test_b.json")
    with pytest.raises(OSError):
        read_answers(real, "test_b.json", 100)
    os.mkfifo(real / "test_c.json")
    with pytest.raises(ValueError, match="not a regular file"):
        read_answers(real, "test_c.json", 100)
    (real / "test_d.json").write_text("[" + "{}," * 100 + "{}]")
    with pytest.raises(ValueError, match="larger than"):
        read_answers(real, "test_d.json", 100)


def test_a_cell_sees_only_its_own_inputs_and_only_while_it_runs(tmp_path):
    capture = AnswerCapture(tmp_path, VIEW, 1024)
    folder = tmp_path / codec.FOLDER
    (tmp_path / codec.FOLDER).mkdir()                      # what a submission or an earlier cell left
    (folder / "calls.json").write_text("forged")
    capture.before(graded_cell(None))                           # an ordinary cell: nothing is given to it
    assert (folder / "calls.json").read_text() == "forged"
    capture.before(graded_cell("test_a"))
    assert (folder / "calls.json").read_text() == '{"test_a": [{"answer": "a", "calls": []}]}'
    capture.after(graded_cell("test_a"))
    assert not folder.exists(), "a test cell's inputs outlive it"


def test_a_link_in_place_of_the_inputs_folder_is_removed_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    os.symlink(elsewhere, work / codec.FOLDER)
    AnswerCapture(work, VIEW, 1024).before(graded_cell("test_a"))
    assert list(elsewhere.iterdir()) == [] and not (work / codec.FOLDER).is_symlink()


def test_a_result_is_what_its_cell_left_whatever_a_later_cell_writes(tmp_path):
    capture = AnswerCapture(tmp_path, VIEW, 1024)
    answers = tmp_path / codec.ANSWERS

    def cell_writes(grade_id: str, text: str) -> None:
        answers.mkdir(exist_ok=True)
        (answers / f"{grade_id}.json").write_text(text)

    capture.before(graded_cell("test_a"))
    cell_writes("test_a", '[{"answer": {"kind": "function"}, "results": ["honest"]}]')
    capture.after(graded_cell("test_a"))
    assert not answers.exists()
    cell_writes("test_a", '[{"answer": {"kind": "function"}, "results": ["forged"]}]')   # a later cell (K4)
    cell_writes("test_b", '[{"answer": {"kind": "function"}, "results": ["early"]}]')    # before test_b runs
    capture.before(graded_cell("test_b"))
    assert not answers.exists(), "answers written before a test cell ran reach the grader"
    capture.after(graded_cell("test_b"))          # test_b's own run left nothing
    capture.before(graded_cell("test_a"))         # test_a again (a copied cell): the first result stays
    cell_writes("test_a", '[{"answer": {"kind": "function"}, "results": ["forged"]}]')
    capture.after(graded_cell("test_a"))
    assert capture.answers == {"test_a": [{"answer": {"kind": "function"}, "results": ["honest"]}]}


def _wrong_causal_mask(n):   # a wrong answer: the graded one in the attacks below
    return None


# Issue 25, K3b/K3c: a notebook shadows the names the test cell's line used (`__import__`, `globals`), so that
# line handed respond a namespace in which `causal_mask` was another, right, function defined elsewhere.
SHADOWS = {
    "K3b-import": ("import builtins as _b\n_real_import = _b.__import__\n"
                   "class _Mod:\n    def respond(self, grade_id, ns=None):\n"
                   "        m = _real_import('headlab.kernel', fromlist=['respond'])\n"
                   "        return m.respond(grade_id, {**(ns or {}), 'causal_mask': _right})\n"
                   "def __import__(name, *a, **k):\n"
                   "    return _Mod() if name.startswith('headlab') else _real_import(name, *a, **k)\n"),
    "K3c-globals": "_g = globals\ndef globals():\n    return {**_g(), 'causal_mask': _right}\n",
}


@pytest.mark.parametrize("attack", SHADOWS)
def test_the_test_cells_line_finds_the_notebooks_own_answer_whatever_names_it_shadows(tmp_path, monkeypatch,
                                                                                    attack):
    from headlab.checks.core import checked
    from heads_outside import RESPOND

    monkeypatch.chdir(tmp_path)
    (tmp_path / codec.FOLDER).mkdir()
    (tmp_path / codec.FOLDER / "calls.json").write_text('{"test_causal_mask": [{"answer": "causal_mask", '
                                                        '"calls": []}]}')
    notebook = {"causal_mask": _wrong_causal_mask, "_right": lambda n: n}
    exec(SHADOWS[attack], notebook)
    exec(compile(RESPOND.format(grade_id="test_causal_mask"), "<test cell>", "exec"), notebook)
    assert checked["causal_mask"] is _wrong_causal_mask
