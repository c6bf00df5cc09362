"""Lesson 03's checks: right heads pass, misuse is explained, and the mistakes that the grading file
(tests/grading/test_grade_03_sequence_head.py) does not already replay are named by their keys."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from headlab.checks import CheckFailed
from headlab.checks import ch03


def make_head(forward=None, fixed_p=None, inplace=False, extra=None):
    """A SequenceClassifier-like class; `forward(self, x)` returns the raw output before squeezing."""

    class Head(nn.Module):
        def __init__(self, d, num_classes, dropout=0.1):
            super().__init__()
            self.K, self.p = num_classes, dropout
            self.dropout = nn.Dropout(dropout if fixed_p is None else fixed_p, inplace=inplace)
            self.linear = nn.Linear(d, num_classes)
            if extra:
                self.extra = extra(d, num_classes)

        def forward(self, pooled):
            z = forward(self, pooled) if forward else self.linear(self.dropout(pooled))
            return z.squeeze(-1) if self.K == 1 else z

    return Head


def mistake_of(check, answer, **kw) -> str:
    with pytest.raises(CheckFailed) as excinfo:
        check(answer, **kw)
    return excinfo.value.mistake


def test_a_right_head_passes_visible_and_fresh_cases(capsys):
    ch03.sequence_classifier(make_head())
    ch03.sequence_classifier(make_head(), cases=[(8, 4, 3), (16, 1, 6)], seed=3)
    assert "SequenceClassifier" in capsys.readouterr().out


def _twice(s, x):
    """Dropout applied twice: 1 − (1 − p)² of the features zeroed."""
    return s.linear(s.dropout(s.dropout(x)))


@pytest.mark.parametrize("head, key", [
    (make_head(lambda s, x: torch.sigmoid(s.linear(s.dropout(x)))), "sigmoid-output"),
    (make_head(lambda s, x: F.relu(s.linear(s.dropout(x)))), "relu-on-logits"),
    (make_head(lambda s, x: torch.tanh(s.linear(s.dropout(x)))), "tanh-on-logits"),
    (make_head(lambda s, x: s.linear(x) * 2), "wrong-values"),
    (make_head(inplace=True), "changed-input"),
    (make_head(lambda s, x: s.linear(x * (torch.rand_like(x) > s.p) if s.training else x)), "unscaled-dropout"),
    (make_head(lambda s, x: s.linear(F.dropout(x, s.p, s.training) * (2 if s.training else 1))), "wrong-scale"),
    (make_head(lambda s, x: s.linear(s.dropout(x)) + (1 if s.training else 0)), "not-dropout-then-linear"),
    (make_head(_twice), "wrong-dropout-rate"),
    # the rate as TensorFlow 1's keep_prob: told drops-whole-vectors at p = 0.25, d = 3 before
    (make_head(lambda s, x: s.linear(F.dropout(x, 1 - s.p, s.training))), "keep-probability-as-rate"),
    (make_head(lambda s, x: s.linear(s.dropout(x) * (torch.arange(x.shape[1]) + 1 if s.training else 1))),
     "uneven-scaling"),
])
def test_each_mistake_is_named(head, key):
    with pytest.raises(CheckFailed) as caught:
        ch03.sequence_classifier(head)
    assert caught.value.mistake == key


class HiddenLayer(make_head(lambda s, x: s.extra(s.linear(s.dropout(x))), extra=lambda d, K: nn.Linear(K, K))):
    """Issue 25, K2: an extra nn.Linear(K, K) after the head's Linear layer, hidden from modules() and
    parameters() (the check once counted layers through them)."""

    def modules(self):
        return iter([self, self.dropout, self.linear])

    def parameters(self, recurse=True):
        return self.linear.parameters()


def test_an_extra_layer_hidden_from_modules_and_parameters_changes_the_outputs():
    with pytest.raises(CheckFailed) as caught:
        ch03.sequence_classifier(HiddenLayer)
    assert caught.value.mistake == "wrong-values"
    assert "no other layer, activation or parameter" in str(caught.value)


def test_a_wrong_default_rate_is_named():
    class Head(make_head()):
        def __init__(self, d, num_classes, dropout=0.5):
            super().__init__(d, num_classes, dropout)

    assert mistake_of(ch03.sequence_classifier, Head) == "wrong-default-dropout"


def test_misuse_is_explained():
    with pytest.raises(CheckFailed, match="takes your class SequenceClassifier") as excinfo:
        ch03.sequence_classifier(make_head()(4, 2))
    assert "not a head built from it" in str(excinfo.value) and excinfo.value.mistake == "instance-not-class"
    assert mistake_of(ch03.sequence_classifier, lambda d, K, dropout=0.1: None) == "not-a-module"
    with pytest.raises(CheckFailed, match="takes your function head_param_count itself"):
        ch03.head_param_count(130)


def test_a_stub_says_it_is_not_written_yet():
    class Stub(nn.Module):
        def __init__(self, d, num_classes, dropout=0.1):
            super().__init__()
            raise NotImplementedError()

    with pytest.raises(NotImplementedError, match="not written yet"):
        ch03.sequence_classifier(Stub)


def test_head_param_count_verdicts():
    ch03.head_param_count(lambda d, K: (d + 1) * K)
    for wrong, key in [(lambda d, K: K * d + 1, "shared-bias"), (lambda d, K: d * d + K, "square-matrix"),
                       (lambda d, K: d * d + d, "square-matrix"), (lambda d, K: K * d + K + 1, "wrong-values"),
                       (lambda d, K: torch.tensor(K * d + K), "returned-a-tensor")]:
        assert mistake_of(ch03.head_param_count, wrong) == key
    with pytest.raises(CheckFailed, match="Your number is right"):
        ch03.head_param_count(lambda d, K: float(K * d + K))


def test_untrained_loss_verdicts():
    ch03.untrained_loss(lambda K: F.cross_entropy(torch.zeros(1, K), torch.tensor([0])).item())
    for wrong, key in [(lambda K: -math.log(K), "wrong-sign"), (lambda K: math.log(K - 1), "ln-k-minus-1"),
                       (lambda K: math.log(K) + 0.1, "wrong-values"), (lambda K: str(math.log(K)), "not-a-float")]:
        assert mistake_of(ch03.untrained_loss, wrong) == key


def test_untrained_loss_names_no_mistake_where_two_agree():
    """At K = 2, 1/K = 1 − 1/K = 0.5: neither is named there (the visible cases try K = 2 last)."""
    for wrong in (lambda K: 1 / K, lambda K: 1 - 1 / K):
        assert mistake_of(ch03.untrained_loss, wrong, cases=[(2, math.log(2))]) == "wrong-values"
    # A constant ln 2 is right at K = 2 and named at the next K.
    assert mistake_of(ch03.untrained_loss, lambda K: math.log(2),
                      cases=[(2, math.log(2)), (4, math.log(4))]) == "ln-2-for-every-k"


def test_a_frozen_bias_whose_forward_writes_its_grad_is_caught():
    """Issue 25, K1: the kernel said every parameter got a gradient, because forward wrote the frozen bias's
    `.grad` itself; after a step of gradient descent on the check's weighted outputs the bias has moved by
    the wrong amount, so the outputs are not a trained head's."""
    def forward(self, pooled):
        self.linear.bias.requires_grad_(False)
        self.linear.bias.grad = torch.ones_like(self.linear.bias)
        return self.linear(self.dropout(pooled))

    with pytest.raises(CheckFailed) as caught:
        ch03.sequence_classifier(make_head(forward))
    assert caught.value.mistake == "parameters-without-gradient"
    assert "after one step of gradient descent" in str(caught.value)
