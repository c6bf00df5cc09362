import pytest
import torch

from headlab.metrics import accuracy, base_rate, entity_scores, f1_score


def test_accuracy_ignores_the_ignore_index():
    assert accuracy(torch.tensor([1, 0, 2]), torch.tensor([1, 1, -100]), ignore_index=-100) == 0.5


def test_f1_of_the_minority_class():
    pred, true = torch.tensor([1, 1, 0, 0, 0]), torch.tensor([1, 0, 1, 0, 0])
    assert f1_score(pred, true) == pytest.approx(0.5)  # tp 1, fp 1, fn 1
    assert f1_score(torch.zeros(5, dtype=torch.long), true) == 0.0  # never predicted: the base-rate model


def test_base_rate_is_the_majority_share():
    assert base_rate(torch.tensor([0, 0, 0, 1])) == 0.75


def test_entity_scores_need_exact_type_and_boundaries():
    true = [[("PER", 0, 2), ("LOC", 4, 5)]]
    pred = [[("PER", 0, 1), ("LOC", 4, 5), ("ORG", 6, 7)]]
    s = entity_scores(pred, true)
    assert s["precision"] == pytest.approx(1 / 3) and s["recall"] == pytest.approx(1 / 2)
    assert s["f1"] == pytest.approx(0.4)


def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError):
        accuracy(torch.tensor([1, 2]), torch.tensor([1]))
