"""Lesson 06's checks, beyond what tests/grading/test_grade_06_causal_pitfall.py states: the usual
mistakes are listed there once, each with the key its check must name; here are the cases a mutant of
the answer cell cannot reach (other inputs, a misused check, what the visible check must not say)."""
import math

import pytest
import torch

from headlab.checks import CheckFailed, ch06
from heads_lessons import lesson
from test_grade_06_causal_pitfall import WRONG


def pool(H, lengths):
    return H[torch.arange(H.shape[0]), lengths - 1]


def last_true(mask):
    return (mask.long() * torch.arange(mask.shape[1])).argmax(1)


def test_right_answers_pass(capsys):
    ch06.last_token_pool(pool)
    ch06.last_real_index(last_true)
    assert "✓ last_token_pool: 3 cases passed" in capsys.readouterr().out


def test_an_index_error_on_a_full_row_is_explained():
    H, lengths = torch.randn(2, 4, 3), torch.tensor([4, 2])
    with pytest.raises(CheckFailed, match=r"IndexError.*Row 0 is full.*off by one") as failed:
        ch06.last_token_pool(lambda H, L: H[torch.arange(2), L], cases=[(H, lengths, pool(H, lengths))])
    assert failed.value.mistake == "one-too-many"


def test_an_index_error_on_the_batch_axis_is_not_called_an_off_by_one():
    H, lengths = torch.randn(1, 4, 3), torch.tensor([4])   # a full row, but the batch axis is what overflows
    with pytest.raises(CheckFailed, match=r"past the batch of 1.*from H itself") as failed:
        ch06.last_token_pool(lambda H, L: H[torch.arange(3), L - 1], cases=[(H, lengths, pool(H, lengths))])
    assert "off by one" not in str(failed.value) and "torch.arange(H.shape[0])" in failed.value.fix
    assert failed.value.mistake == "row-index-past-the-batch"


# Issue 11.6: on a right-padded mask, flipping without mapping back and n − ℓ give the same numbers, so
# neither is named there; the message shows the row instead of guessing how it was computed.
@pytest.mark.parametrize("wrong", [lambda m: m.flip(1).long().argmax(1), lambda m: m.shape[1] - m.long().sum(1)])
def test_mistakes_that_give_the_same_numbers_are_not_named(wrong):
    mask = torch.tensor([[True, True, True, False], [True, False, False, False]])
    with pytest.raises(CheckFailed, match=r"returned 1 for row 0 .* last True is at position 2") as failed:
        ch06.last_real_index(wrong, cases=[(mask, [2, 0])])
    assert failed.value.mistake == "wrong-values"


@pytest.mark.parametrize("mask", [
    [[True, True, False], [True, False, False]],     # counting is right under right padding
    [[False, True, True], [False, False, True]],     # the last position is right under left padding
    [[True]],                                        # every mistake gives 0
])
def test_right_numbers_in_the_wrong_dtype_name_no_mistake(mask):
    with pytest.raises(CheckFailed, match="Your values are right") as failed:
        ch06.last_real_index(lambda m: last_true(m).int(), cases=[(torch.tensor(mask), last_true(torch.tensor(mask)))])
    assert failed.value.mistake == "wrong-dtype"


def test_knowledge_check_reads_the_namespace():
    with pytest.raises(NotImplementedError, match="not written yet"):
        ch06.knowledge_check({})
    with pytest.raises(CheckFailed, match="globals") as failed:
        ch06.knowledge_check([6, 3, 8])
    assert failed.value.mistake == "not-a-namespace"


def test_the_visible_check_passes_any_answer_of_the_right_form(capsys):
    ch06.knowledge_check({"kc_positions": [1, 2, 3], "kc_head_params": 10, "kc_initial_loss": 0.5})
    assert "right form" in capsys.readouterr().out


# The rest are wrong values. A position past the end is one too: the visible check does not know n (the package
# holds none of the question's numbers), the hidden test does.
FORM = {"not-set", "tensor-answer", "not-three-positions", "position-not-int", "params-not-int",
        "params-not-positive", "loss-not-a-positive-number", "loss-not-rounded"}


@pytest.mark.parametrize("case", [w for w in WRONG if w.exercise == "knowledge_check"], ids=lambda w: w.name)
def test_the_visible_check_gives_no_value_away(case):
    """Each wrong knowledge check of the mutant file, run through the visible check only (no expected
    values): a wrong value of the right form passes it, a wrong form is named, and no message holds an
    answer the learner did not write."""
    namespace = {"math": math, "torch": torch}
    exec(case.answer(lesson("06_causal_pitfall").answers()), namespace)
    try:
        ch06.knowledge_check(namespace)
    except CheckFailed as failed:
        assert failed.mistake == case.mistake, failed
        written = repr({k: namespace.get(k) for k in ch06.KC_NAMES})
        for secret in ("2565", "6, 3, 8"):
            assert secret in written or secret not in str(failed), failed
    else:
        assert case.mistake not in FORM, f"the visible check passed {case.name}"
