"""Hidden inputs drawn afresh for every grading run (issue 25, item 3): knowing last run's inputs, and the
right outputs for them, is worth nothing in the next run.

Each hidden test draws its inputs from `headlab.grading.hidden_seed(n)`: `n` itself when the solution runs by
hand or under nbval (its stored outputs stay put), `n` mixed with the run's seed in the grader's recording.
"""
from __future__ import annotations

import re

import nbformat
import pytest
import torch

import replay
from headlab import codec, grading
from heads_lessons import all_lessons, lesson as lesson_named

# A test cell whose hidden part draws nothing: the lesson's own questions have one set of answers.
FIXED = {"test_knowledge_check": "the knowledge check asks the lesson's own questions"}


def hidden_parts(name: str):
    for cell in lesson_named(name).read().cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and "### BEGIN HIDDEN TESTS" in cell.source:
            yield meta["grade_id"], cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]


@pytest.mark.parametrize("name", [x.name for x in all_lessons()])
def test_every_hidden_test_draws_from_the_run_seed(name):
    for grade_id, hidden in hidden_parts(name):
        if grade_id in FIXED:
            continue
        assert "_hidden_seed(" in hidden, f"{name} {grade_id}: its hidden inputs are the same in every run"
        fixed = re.findall(r"(?:manual_seed|Random)\(\d+\)|\bseed=\d+", hidden)
        assert not fixed, f"{name} {grade_id}: a fixed seed in the hidden test: {fixed}"


def test_the_seed_is_the_fixed_one_outside_a_grading_run(monkeypatch):
    monkeypatch.delenv(grading.SEED_VARIABLE, raising=False)
    assert grading.hidden_seed(7) == 7
    monkeypatch.setenv(grading.SEED_VARIABLE, "1")
    one = grading.hidden_seed(7)
    monkeypatch.setenv(grading.SEED_VARIABLE, "2")
    assert len({one, grading.hidden_seed(7), grading.hidden_seed(8), 7}) == 4


def memoriser(book: dict, grade_id: str, solution):
    """An answer that returns, for every input the grader used in one run, the solution's output (what a
    student could collect from last run's feedback), and something wrong for any other input."""
    seen = {}
    for entry in book[grade_id]:
        for call in entry["calls"]:
            args, kwargs = codec.decode(call["args"]), codec.decode(call["kwargs"])
            seen[call["digest"]] = solution(*args, **kwargs)

    def answer(*args, **kwargs):
        if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return solution(*args, **kwargs)   # a gradient check's fixed input, public: not what the seed hides
        out = seen.get(codec.digest(solution.__name__, args, kwargs))
        return out if out is not None else solution(*args, **kwargs) * 0
    answer.__name__ = solution.__name__
    return answer


# (lesson, test cell, function): exercises whose inputs are plain values the grader passes in
MEMORISED = [("00_representations", "test_padding_mask", "padding_mask"),
             ("00_representations", "test_causal_mask", "causal_mask"),
             ("02_pooling", "test_mean_pool", "mean_pool"),
             ("02_pooling", "test_max_pool", "max_pool"),
             ("03_sequence_head", "test_head_param_count", "head_param_count"),
             ("03_sequence_head", "test_untrained_loss", "untrained_loss")]


@pytest.mark.slow
@pytest.mark.parametrize("lesson,grade_id,name", MEMORISED)
def test_last_runs_outputs_pass_last_run_only(lesson, grade_id, name):
    last, namespace = replay.record_lesson(lesson, seed=1)
    this, _ = replay.record_lesson(lesson, seed=2)
    assert grading.kernel_view(last)[grade_id] != grading.kernel_view(this)[grade_id], \
        f"{grade_id}: two runs drew the same hidden inputs"
    copied = {name: memoriser(last, grade_id, namespace[name])}
    assert replay.judge_answers(lesson, grade_id, copied, seed=1).passed, "the memoriser is no attack: it fails its own run"
    verdict = replay.judge_answers(lesson, grade_id, copied, seed=2)
    assert not verdict.passed, f"{grade_id}: last run's outputs passed a new run"
