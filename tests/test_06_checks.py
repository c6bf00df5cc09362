"""Lesson 06's checks: right answers pass, the usual wrong ones are named."""
import pytest
import torch

from headlab.checks import CheckFailed, ch06


def pool(H, lengths):
    return H[torch.arange(H.shape[0]), lengths - 1]


def last_true(mask):
    return (mask.long() * torch.arange(mask.shape[1])).argmax(1)


def test_right_answers_pass(capsys):
    ch06.last_token_pool(pool)
    ch06.last_real_index(last_true)
    assert "✓ last_token_pool" in capsys.readouterr().out


def test_an_index_error_on_a_full_row_is_explained():
    H = torch.randn(2, 4, 3)
    with pytest.raises(CheckFailed, match=r"IndexError.*Row 0 is full.*off by one"):
        ch06.last_token_pool(lambda H, L: H[torch.arange(2), L], cases=[(H, torch.tensor([4, 2]), pool(H, torch.tensor([4, 2])))])


@pytest.mark.parametrize("wrong, says", [
    (lambda H, L: H[:, -1], "last tensor position"),
    (lambda H, L: H[:, 0], "first token"),
    (lambda H, L: H[torch.arange(H.shape[0]), L], "off by one"),
    (lambda H, L: H[:, L - 1], "Pair each row"),
    (lambda H, L: H.mean(1), "mean pooling"),
])
def test_wrong_pools_are_named(wrong, says):
    with pytest.raises(CheckFailed, match=says):
        ch06.last_token_pool(wrong)


@pytest.mark.parametrize("wrong, says", [
    (lambda m: m.long().sum(1) - 1, "left-padded"),
    (lambda m: m.long().argmax(1) + m.long().sum(1) - 1, "hole"),
    (lambda m: m.long().argmax(1), "FIRST position"),
    (lambda m: m.shape[1] - m.long().sum(1), "first real token"),
    (lambda m: torch.full((m.shape[0],), m.shape[1] - 1), "last tensor position"),
    (lambda m: last_true(m).int(), "dtype torch.int32"),
    (lambda m: torch.where(m, torch.arange(m.shape[1]), -1).max(1).values, "0/1 mask"),
])
def test_wrong_indices_are_named(wrong, says):
    with pytest.raises(CheckFailed, match=says):
        ch06.last_real_index(wrong)


def test_knowledge_check_reads_the_namespace():
    with pytest.raises(CheckFailed, match="not written yet"):
        ch06.knowledge_check({})
    with pytest.raises(CheckFailed, match="globals"):
        ch06.knowledge_check([6, 3, 8])
    expected = {"kc_positions": [6, 3, 8], "kc_head_params": 2565, "kc_initial_loss": 1.6094}
    ch06.knowledge_check({"kc_positions": [6, 3, 8], "kc_head_params": 2565, "kc_initial_loss": 1.61}, expected)
    with pytest.raises(CheckFailed, match="log base 10"):
        ch06.knowledge_check({"kc_positions": [6, 3, 8], "kc_head_params": 2565, "kc_initial_loss": 0.70}, expected)
    with pytest.raises(CheckFailed, match="two-class head"):
        ch06.knowledge_check({"kc_positions": [6, 3, 8], "kc_head_params": 2565, "kc_initial_loss": 0.69}, expected)
    with pytest.raises(CheckFailed, match="is not right"):
        ch06.knowledge_check({"kc_positions": [6, 3, 8], "kc_head_params": 2565, "kc_initial_loss": 1.60}, expected)


RIGHT_FORM = {"kc_positions": [1, 2, 3], "kc_head_params": 10, "kc_initial_loss": 0.5}


@pytest.mark.parametrize("name, value, says", [
    ("kc_positions", torch.tensor([6, 3, 8]), "kc_positions is a torch tensor.*tolist"),
    ("kc_positions", [torch.tensor(6), 3, 8], "holds a tensor"),
    ("kc_positions", [6, 3], "list of three positions"),
    ("kc_positions", [6.0, 3, 8], "whole numbers"),
    ("kc_positions", [6, 3, 10], "not a position of a batch padded to n = 10"),
    ("kc_head_params", torch.tensor(2565), "kc_head_params is a torch tensor"),
    ("kc_head_params", 2565.0, "an int"),
    ("kc_head_params", 0, "positive"),
    ("kc_initial_loss", torch.tensor(1.61), "kc_initial_loss is a torch tensor.*round"),
    ("kc_initial_loss", 1.6094379124341003, "not rounded.*two decimals.*1.61"),
    ("kc_initial_loss", "1.61", "must be a number"),
    ("kc_initial_loss", -1.0, "positive"),
])
def test_the_visible_check_rejects_the_wrong_form_without_giving_values_away(name, value, says):
    answers = {**RIGHT_FORM, name: value}
    with pytest.raises(CheckFailed, match=says) as err:
        ch06.knowledge_check(answers)
    for secret in ("2565", "[6, 3, 8]", "6, 3, 8"):
        if secret not in repr(value):
            assert secret not in str(err.value), err.value


def test_the_visible_check_passes_any_answer_of_the_right_form(capsys):
    ch06.knowledge_check(RIGHT_FORM)
    ch06.knowledge_check({"kc_positions": (6, 3, 8), "kc_head_params": 2565, "kc_initial_loss": 1.61})
    assert capsys.readouterr().out.count("right form") == 2
