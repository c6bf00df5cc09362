"""Hints in steps (issue 27.3): in the learner's kernel the first failure of a mistake gives its diagnosis, and the
code that fixes it comes only when the same mistake (same exercise, same key) is shown again; the grader's
feedback gives the diagnosis only (headlab/checks/core.py: `shown`)."""
from __future__ import annotations

import inspect

import pytest
import torch

from headlab import grading
from headlab.checks import ch00, ch06, core
from headlab.checks.core import CheckFailed
from test_grading import kernel_answers, padding_mask, record


@pytest.fixture(autouse=True)
def fresh_kernel(monkeypatch):
    """Each test starts as a kernel that has shown no mistake yet."""
    monkeypatch.setattr(core, "_shown_before", set())


def shown(check, answer) -> str:
    """What IPython shows the learner when `check(answer)` fails, as a plain line."""
    with pytest.raises(CheckFailed) as caught:
        check(answer)
    (line,) = caught.value._render_traceback_()
    return line.removeprefix("\x1b[0;31mCheckFailed\x1b[0m: ")


def every_row_every_position(H, lengths):
    return H[:, lengths - 1]


def flipped_not_mapped_back(mask):
    return mask.long().flip(1).argmax(1)


def first_true(mask):
    return mask.long().argmax(1)


def one_too_many(lengths, n):
    return torch.arange(n)[None, :] <= torch.as_tensor(lengths)[:, None]


one_too_many.__name__ = "padding_mask"
FIX = "`H[torch.arange(H.shape[0]), lengths - 1]`"


def test_the_first_failure_diagnoses_and_the_second_adds_the_fix():
    first = shown(ch06.last_token_pool, every_row_every_position)
    assert "Pair each row with its own position" in first and "for lengths=" in first
    assert "torch.arange" not in first
    second = shown(ch06.last_token_pool, every_row_every_position)
    assert second.startswith(first) and second.endswith(FIX + "."), second


def test_a_different_mistake_starts_with_its_diagnosis():
    shown(ch06.last_real_index, flipped_not_mapped_back)
    assert "n − 1 − i" in shown(ch06.last_real_index, flipped_not_mapped_back)
    other = shown(ch06.last_real_index, first_true)
    assert "argmax returns the FIRST position" in other and "flip the row" not in other


def test_the_same_key_in_another_exercise_starts_with_its_diagnosis():
    shown(ch06.last_token_pool, lambda H, lengths: H[torch.arange(H.shape[0]), lengths])   # one-too-many
    first = shown(ch00.padding_mask, one_too_many)
    assert "off by one" in first and "<=" not in first
    assert shown(ch00.padding_mask, one_too_many).endswith("Compare with <, not <=.")


def test_the_failure_itself_holds_the_diagnosis_and_the_fix_apart():
    with pytest.raises(CheckFailed) as caught:
        ch06.last_token_pool(every_row_every_position)
    err = caught.value
    assert err.mistake == "every-row-every-position" and err.exercise == "last_token_pool"
    assert "torch.arange" not in str(err) and FIX in err.fix


def test_grader_feedback_never_shows_the_fix():
    """Replayed outside the kernel, a mistake this process has shown twice is still only diagnosed."""
    entries = record(ch00, padding_mask)
    for _ in range(2):
        shown(ch00.padding_mask, one_too_many)
    for _ in range(2):
        verdict = grading.judge(entries, kernel_answers(entries, one_too_many))
        assert verdict.key == "one-too-many" and "off by one" in verdict.message
        assert "<=" not in verdict.message
    with pytest.raises(CheckFailed) as caught:
        ch00.padding_mask(one_too_many)
    with grading.Replay([], []):   # a failure rendered while a grading session runs
        assert core.shown(caught.value) == str(caught.value)


def test_every_mistake_of_lessons_02_05_07_has_a_fix():
    """Lessons 02, 05 and 07 give every mistake of their tables a fix, so that a repeat adds something (issue 27)."""
    from headlab.checks import ch02, ch05, ch07
    from headlab.checks.engine import Exercise

    tables = [value for module in (ch02, ch05, ch07) for value in vars(module).values() if isinstance(value, Exercise)]
    tables += [held for check in (ch02.mean_pool, ch02.max_pool)
               for held in inspect.getclosurevars(check).nonlocals.values() if isinstance(held, Exercise)]
    assert {ex.name for ex in tables} >= {"cls_pool", "Pooler.forward", "mean_pool", "max_pool", "best_span",
                                          "span_loss", "predict_or_reject", "expected_calibration_error",
                                          "restrict_to_labels"}
    without = [f"{ex.name}: {m.key}" for ex in tables for m in ex.mistakes if not m.fix]
    assert not without, without
