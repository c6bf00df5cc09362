"""grader/heads_outside.py on what a student's kernel can do to its answers: forged answers are one failed cell
with a reason, never an error that stops the grading of the notebook; a test cell's inputs exist only while it
runs; its result is what its own output held when it ended, whatever a later cell writes or sends."""
from __future__ import annotations

import json
import os

import nbformat
import pytest

from headlab import codec
from heads_autograde import HeardMessages
from heads_outside import AnswerCapture, JudgeOutsideKernel, read_given

ENTRIES = [{"check": "headlab.checks.ch00:padding_mask", "answer": "padding_mask", "args": [], "kwargs": {},
            "calls": []}]
VIEW = {f"test_{x}": [{"answer": x, "calls": []}] for x in "abcde"}


def graded_cell(grade_id: str | None, *given: dict):
    """A code cell (a test cell when `grade_id` is given) whose run output `given` as respond's display data."""
    meta = {"nbgrader": {"grade": True, "grade_id": grade_id}} if grade_id else {}
    cell = nbformat.v4.new_code_cell(metadata=meta)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="printed\n"),
                    *(nbformat.v4.new_output("display_data", data={codec.ANSWERS_MIME: g}) for g in given)]
    return cell


def deep(n: int):
    out = []
    for _ in range(n):
        out = [out]
    return out


@pytest.mark.parametrize("payload", [
    {"grade_id": "test_padding_mask", "answers": [{"answer": {"kind": "function"}, "results": deep(5000)}]},
    {"grade_id": "test_padding_mask", "answers": 1},
    {"grade_id": "test_padding_mask", "answers": ["not an answer"]},
    {"grade_id": "test_another_cell", "answers": []},
    "not a dict",
])
def test_forged_answers_are_a_failed_cell_with_a_reason(payload):
    try:
        answers = read_given(payload, "test_padding_mask", 16 * 1024**2)
    except (ValueError, TypeError, RecursionError) as err:
        answers = err
    verdict = JudgeOutsideKernel().judge("test_padding_mask", ENTRIES, answers)
    assert not verdict.passed and verdict.error in ("BadAnswers", "NoAnswers", "CheckFailed"), verdict


def test_answers_over_the_size_cap_are_refused():
    payload = {"grade_id": "test_a", "answers": [{}] * 100}
    assert len(json.dumps(payload)) > 100
    with pytest.raises(ValueError, match="larger than"):
        read_given(payload, "test_a", 100)


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
    """The answers are the test cell's last display of respond's type: what it gave when it ended. The grader takes
    them out of the cell (the feedback shows the checks, not the data), and a later cell, a file in the old answers
    folder or a second run of the cell (a copied cell) changes nothing."""
    capture = AnswerCapture(tmp_path, VIEW, 1024)
    answers = tmp_path / codec.ANSWERS

    def given(grade_id: str, said: str) -> dict:
        return {"grade_id": grade_id, "answers": [{"answer": {"kind": "function"}, "results": [said]}]}

    capture.before(graded_cell("test_a"))
    cell = graded_cell("test_a", given("test_a", "honest"))
    capture.after(cell)
    assert [o.output_type for o in cell.outputs] == ["stream"], "the answers stay in the feedback"
    answers.mkdir()
    (answers / "test_a.json").write_text(json.dumps(given("test_a", "forged")["answers"]))   # a later cell (K4)
    capture.after(graded_cell(None, given("test_a", "forged")))                        # an ordinary cell's output
    capture.before(graded_cell("test_b"))
    assert not answers.exists(), "what a cell wrote before a test cell ran is still there"
    capture.after(graded_cell("test_b", given("test_a", "another cell's")))            # test_b gave test_a's
    capture.before(graded_cell("test_a"))         # test_a again (a copied cell): the first result stays
    capture.after(graded_cell("test_a", given("test_a", "forged")))
    assert capture.answers["test_a"] == given("test_a", "honest")["answers"]
    assert isinstance(capture.answers["test_b"], ValueError), capture.answers
    # Code of the notebook's that runs in the test cell (an answer's forward, a post-run hook) and gives answers
    # too: the cell's result is refused, whichever came first
    capture.before(graded_cell("test_c"))
    capture.after(graded_cell("test_c", given("test_c", "honest"), given("test_c", "a hook's")))
    assert "2 sets of answers" in str(capture.answers["test_c"]), capture.answers
    # A set the notebook showed before it kept the cell from ending (a loop that swallows the grader's interrupt,
    # a killed kernel): respond's never came, and the cell gives none
    capture.before(graded_cell("test_d"))
    capture.after(graded_cell("test_d", given("test_d", "shown before the kernel died")), ended=False)
    assert capture.answers["test_d"] is None, "no answers: the feedback says why the cell did not end"
    capture.before(graded_cell("test_e"))
    capture.after(graded_cell("test_e", given("test_e", "the one set that came")), distrust="3 messages were lost")
    assert "lost" in str(capture.answers["test_e"]), capture.answers


def test_the_executor_counts_the_messages_it_lost():
    """jupyter_client numbers a session's messages; a cell during which some never arrived (a queue overflowed)
    is known, whatever arrived after them."""
    heard = HeardMessages()

    def hear(*numbers, session="k_1"):
        for n in numbers:
            heard.hear({"header": {"msg_id": f"{session}_{n}"}})

    hear(9, 10, 11)
    mark = heard.mark()
    hear(12, 13, 15, 16)   # 14 lost
    assert heard.lost_since(mark) == 1
    mark = heard.mark()
    hear(17, 18, session="k_1")
    hear(1, 2, session="other_2")
    assert heard.lost_since(mark) == 0


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
    # Red team 6 (held out; written here): the package's `kernel` attribute replaced by an object of the notebook's
    "package-attribute": "import headlab, headlab.kernel as _real\nclass _K:\n    @staticmethod\n"
                         "    def respond(grade_id, namespace=None, **k):\n"
                         "        return _real.respond(grade_id, {'causal_mask': _right}, **k)\n"
                         "headlab.kernel = _K\n",
}


@pytest.mark.parametrize("attack", SHADOWS)
def test_the_test_cells_line_finds_the_notebooks_own_answer_whatever_names_it_shadows(tmp_path, monkeypatch,
                                                                                    attack):
    import headlab.kernel
    from headlab.checks.core import checked
    from heads_outside import respond_source

    monkeypatch.setattr(headlab, "kernel", headlab.kernel)   # put back after an attack that replaces it
    monkeypatch.chdir(tmp_path)
    (tmp_path / codec.FOLDER).mkdir()
    (tmp_path / codec.FOLDER / "calls.json").write_text('{"test_causal_mask": [{"answer": "causal_mask", '
                                                        '"calls": []}]}')
    notebook = {"causal_mask": _wrong_causal_mask, "_right": lambda n: n}
    exec(SHADOWS[attack], notebook)
    exec(compile(respond_source("test_causal_mask", tmp_path / codec.FOLDER), "<test cell>", "exec"), notebook)
    assert checked["causal_mask"] is _wrong_causal_mask


def test_the_test_cells_line_finds_the_inputs_after_the_notebook_changed_directory(tmp_path, monkeypatch):
    """Red team 6: an honest `os.chdir("figures")` (or `%cd`) lost every later test cell, whose inputs the kernel
    looked for relative to its directory."""
    from headlab.checks.core import checked
    from heads_outside import respond_source

    (tmp_path / codec.FOLDER).mkdir()
    (tmp_path / codec.FOLDER / "calls.json").write_text('{"test_causal_mask": [{"answer": "causal_mask", '
                                                        '"calls": []}]}')
    (tmp_path / "figures").mkdir()
    monkeypatch.chdir(tmp_path / "figures")
    notebook = {"causal_mask": _wrong_causal_mask}
    exec(compile(respond_source("test_causal_mask", tmp_path / codec.FOLDER), "<test cell>", "exec"), notebook)
    assert checked["causal_mask"] is _wrong_causal_mask


class _Publisher:
    """A shell's display publisher that keeps what respond sends (no kernel session: respond publishes through it)."""
    def __init__(self):
        self.sent = []

    def publish(self, data, metadata=None):
        self.sent.append(data)


# Red teams 10-12 (held out; written here): the imported kernel side replaced, through one route or another, so that
# the wrong causal_mask's results leave as the right one's. The test cell's fresh copy of kernel.py and codec.py
# answers, so none of these changes what leaves.
PATCHES = {
    "respond": "import headlab.kernel as K\n_r = K.respond\n"
               "K.respond = lambda g, ns=None, **k: _r(g, {'causal_mask': _right}, **k)\n",
    "run": "import headlab.kernel as K\n_run = K._run\nK._run = lambda answer, call: _run(_right, call)\n",
    "encode": "import headlab.codec as C, headlab.kernel as K\n"
              "C.encode = K.encode = lambda value, _depth=0: {'forged': True}\n",
    "describe": "import headlab.kernel as K\nK.describe = lambda answer: {'kind': 'function', 'type': 'forged'}\n",
    # red team 13: the method of the tensor class that the codec turned a tensor into bytes with
    "tensor-class": "import torch\nT = type(torch.zeros(1))\n_numpy = T.numpy\n"
                    "T.numpy = lambda self, *a, **k: _numpy(~self if self.dtype == torch.bool else self)\n",
    "module": "import sys, types\nsys.modules['headlab.kernel'] = types.SimpleNamespace(_CHANNEL=None)\n"
              "sys.modules['headlab.codec'] = types.SimpleNamespace()\n",
}


@pytest.mark.parametrize("patch", PATCHES)
def test_what_the_notebook_did_to_the_imported_kernel_side_changes_no_answer(tmp_path, monkeypatch, patch):
    import sys

    import IPython
    import torch

    import headlab.codec
    import headlab.kernel
    from heads_outside import respond_source

    for name in ("headlab.kernel", "headlab.codec"):   # put back after the attack
        monkeypatch.setitem(sys.modules, name, sys.modules[name])
    for module in (headlab.kernel, headlab.codec):
        for name, value in vars(module).copy().items():
            monkeypatch.setattr(module, name, value)
    monkeypatch.setattr(torch.Tensor, "numpy", torch.Tensor.numpy)
    publisher = _Publisher()
    monkeypatch.setattr(IPython, "get_ipython", lambda: type("Shell", (), {"display_pub": publisher})())
    (tmp_path / codec.FOLDER).mkdir()
    call = {"kind": "call", "grad": False, "args": codec.encode([3]), "kwargs": codec.encode({})}
    (tmp_path / codec.FOLDER / "calls.json").write_text(json.dumps(
        {"test_causal_mask": [{"answer": "causal_mask", "calls": [call]}]}))
    wrong = torch.zeros(3, 3, dtype=torch.bool)   # the wrong answer's mask, all False
    expected = [{"answer": {"kind": "function", "type": "function"}, "results": [{"value": codec.encode(wrong)}]}]
    notebook = {"causal_mask": lambda n: wrong.clone(), "_right": lambda n: torch.ones(n, n, dtype=torch.bool).tril()}
    exec(PATCHES[patch], notebook)
    exec(compile(respond_source("test_causal_mask", tmp_path / codec.FOLDER), "<test cell>", "exec"), notebook)
    [given] = publisher.sent
    assert given[codec.ANSWERS_MIME]["answers"] == expected, given
