"""Lesson 03's checks: right heads pass, each usual mistake is named, misuse is explained."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from headlab.checks import CheckFailed
from headlab.checks import ch03


def make_head(forward=None, bias=True, fixed_p=None, inplace=False):
    """A SequenceClassifier-like class; `forward(self, x)` returns the raw output before squeezing."""

    class Head(nn.Module):
        def __init__(self, d, num_classes, dropout=0.1):
            super().__init__()
            self.K, self.p = num_classes, dropout
            self.dropout = nn.Dropout(dropout if fixed_p is None else fixed_p, inplace=inplace)
            self.linear = nn.Linear(d, num_classes, bias=bias)

        def forward(self, pooled):
            z = forward(self, pooled) if forward else self.linear(self.dropout(pooled))
            return z.squeeze(-1) if self.K == 1 else z

    return Head


def test_a_right_head_passes_visible_and_fresh_cases(capsys):
    ch03.sequence_classifier(make_head())
    ch03.sequence_classifier(make_head(), cases=[(8, 4, 3), (16, 1, 6)], seed=3)
    assert "SequenceClassifier" in capsys.readouterr().out


@pytest.mark.parametrize("head, says", [
    (make_head(lambda s, x: s.linear(s.dropout(x)).softmax(-1)), "returned probabilities"),
    (make_head(lambda s, x: s.linear(s.dropout(x)).log_softmax(-1)), "log-probabilities"),
    (make_head(lambda s, x: torch.sigmoid(s.linear(s.dropout(x)))), "sigmoid"),
    (make_head(lambda s, x: s.linear(F.dropout(x, s.p, training=True))), "still on in eval mode"),
    (make_head(lambda s, x: s.linear(x)), "no dropout at all in training mode"),
    (make_head(lambda s, x: s.dropout(s.linear(x))), "dropout AFTER the linear layer"),
    (make_head(bias=False), "has no bias"),
    (make_head(fixed_p=0.1), "Use the dropout argument"),
    (make_head(inplace=True), "changed the pooled vectors"),
    (make_head(lambda s, x: s.linear(x * (torch.rand_like(x) > s.p) if s.training else x)),
     "did not scale the survivors"),
])
def test_each_mistake_is_named(head, says):
    with pytest.raises(CheckFailed, match=says):
        ch03.sequence_classifier(head)


def test_a_b_by_1_regression_output_is_named():
    class Head(make_head()):
        def forward(self, pooled):
            return self.linear(self.dropout(pooled))

    with pytest.raises(CheckFailed, match=r"returned shape \(B, 1\)"):
        ch03.sequence_classifier(Head)


def test_an_instance_instead_of_the_class_is_explained():
    with pytest.raises(CheckFailed, match="takes the class SequenceClassifier itself"):
        ch03.sequence_classifier(make_head()(4, 2))


def test_a_stub_says_it_is_not_written_yet():
    class Stub(nn.Module):
        def __init__(self, d, num_classes, dropout=0.1):
            super().__init__()
            raise NotImplementedError()

    with pytest.raises(NotImplementedError, match="not written yet"):
        ch03.sequence_classifier(Stub)


def test_head_param_count_verdicts():
    ch03.head_param_count(lambda d, K: K * d + K)
    ch03.head_param_count(lambda d, K: (d + 1) * K)
    for wrong, says in [(lambda d, K: K * d, "bias is left out"), (lambda d, K: K * d + d, "one entry per class"),
                        (lambda d, K: (d + 1) * (K + 1), "one row and one column too many"),
                        (lambda d, K: K * d + 1, "single bias shared"),
                        (lambda d, K: d + K, "added, not multiplied"),
                        (lambda d, K: d * d + K, "d × d"), (lambda d, K: float(K * d + K), "must return an int")]:
        with pytest.raises(CheckFailed, match=says):
            ch03.head_param_count(wrong)
    with pytest.raises(CheckFailed, match="takes your function head_param_count itself"):
        ch03.head_param_count(130)


def test_untrained_loss_verdicts():
    ch03.untrained_loss(math.log)
    ch03.untrained_loss(lambda K: F.cross_entropy(torch.zeros(1, K), torch.tensor([0])).item())
    for wrong, says in [(math.log2, "log base 2"), (math.log10, "log base 10"), (lambda K: 1 / K, "probability"),
                        (lambda K: -math.log(K), "sign is wrong"), (lambda K: math.log(1 / K), "sign is wrong"),
                        (lambda K: 1 - 1 / K, "error rate of a uniform guess"),
                        (lambda K: math.log(2), "ln 2 for every K"),
                        (lambda K: math.log(K - 1) if K > 1 else 0.0, r"ln\(K − 1\)"),
                        (lambda K: math.log(K) + 0.1, "spreads probability 1/K"),
                        (lambda K: torch.log(torch.tensor(float(K))), "returned a tensor")]:
        with pytest.raises(CheckFailed, match=says):
            ch03.untrained_loss(wrong)


def test_untrained_loss_tells_apart_mistakes_that_agree_at_two_classes():
    """At K = 2, 1/K = 1 − 1/K = 0.5 and a constant ln 2 is right: the other K decide."""
    with pytest.raises(CheckFailed, match="probability"):
        ch03.untrained_loss(lambda K: 1 / K, cases=[(2, math.log(2))])
    with pytest.raises(CheckFailed, match="error rate"):
        ch03.untrained_loss(lambda K: 1 - 1 / K, cases=[(2, math.log(2))])
    with pytest.raises(CheckFailed, match="ln 2 for every K"):
        ch03.untrained_loss(lambda K: math.log(2), cases=[(2, math.log(2)), (4, math.log(4))])
