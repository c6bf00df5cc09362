"""Lesson 02's checks: clear errors for misuse, full marks for right answers spelled differently."""
import pytest
import torch
import torch.nn as nn

from headlab.checks import CheckFailed
from headlab.checks import ch02


def test_a_tensor_instead_of_a_function_is_explained():
    with pytest.raises(CheckFailed, match=r"takes your function mean_pool itself"):
        ch02.mean_pool(torch.zeros(2, 3, 4))


def test_a_built_pooler_instead_of_the_class_is_explained():
    with pytest.raises(CheckFailed, match=r"takes your class Pooler itself") as excinfo:
        ch02.Pooler(nn.Linear(4, 4))
    assert excinfo.value.mistake == "instance-not-class"


def test_a_function_instead_of_a_module_class_is_explained():
    with pytest.raises(CheckFailed, match=r"subclasses nn.Module") as excinfo:
        ch02.Pooler(lambda d: torch.tanh)
    assert excinfo.value.mistake == "not-a-module"


def test_stubs_say_they_are_not_written_yet():
    def stub(*args):
        raise NotImplementedError()

    class StubPooler(nn.Module):
        def __init__(self, d):
            super().__init__()
            raise NotImplementedError()

    for check, fn in [(ch02.cls_pool, stub), (ch02.mean_pool, stub), (ch02.max_pool, stub),
                      (ch02.Pooler, StubPooler)]:
        with pytest.raises(NotImplementedError, match="not written yet"):
            check(fn)


def test_right_answers_pass_with_any_mask_dtype():
    ch02.cls_pool(lambda H: H[:, 0].clone())
    ch02.mean_pool(lambda H, m: (H * m[..., None]).sum(1) / m.sum(1, keepdim=True))
    ch02.max_pool(lambda H, m: H.masked_fill(m[..., None] == 0, -1e30).amax(1))


def test_every_visible_max_case_has_a_row_of_negative_features():
    for H, mask, expected in ch02.MAX_CASES:
        H, mask = torch.tensor(H), torch.tensor(mask)
        assert any(bool((H[b][mask[b]] < 0).all()) for b in range(len(H)))
        assert torch.equal(torch.tensor(expected), H.masked_fill(~mask[..., None], -1e9).amax(1))


def test_the_hand_written_expectations_are_right():
    for H, expected in ch02.CLS_CASES:
        assert torch.equal(torch.tensor(H)[:, 0], torch.tensor(expected))
    for H, mask, expected in ch02.MEAN_CASES:
        H, m = torch.tensor(H), torch.tensor(mask).float()
        assert torch.allclose((H * m[..., None]).sum(1) / m.sum(1, keepdim=True), torch.tensor(expected))
    for d, W, b, c, expected in ch02.POOLER_CASES:
        W = torch.tensor(W)
        assert torch.equal(W, W.T)
        got = torch.tanh(torch.tensor(c) @ W.T + torch.tensor(b))
        assert torch.allclose(got, torch.tensor(expected), atol=1e-4)


def test_cls_pool_on_the_feature_axis_is_named_even_when_n_equals_d():
    H = torch.arange(2 * 3 * 3, dtype=torch.float32).reshape(2, 3, 3) ** 1.5
    with pytest.raises(CheckFailed) as excinfo:
        ch02.cls_pool(lambda H: H[:, :, 0], cases=[(H, H[:, 0].clone())])
    assert excinfo.value.mistake == "feature-axis"


def count_without_keepdim(H, mask):
    m = mask.to(H.dtype)
    return (H * m[:, :, None]).sum(1) / m.sum(1)


@pytest.mark.parametrize("B, n, d, key", [
    (3, 4, 2, "count-without-keepdim"),   # the sizes in the error say which axes met
    (3, 4, 3, "wrong-values"),            # B = d: the (B,) count broadcasts without an error
    (2, 3, 3, "raised-RuntimeError"),     # n = d: the error cannot say whether the mask or the count met d
])
def test_a_count_without_keepdim_is_never_called_a_mask_on_the_wrong_axis(B, n, d, key):
    """Issue 11.6: a mistake is named only where the output or the error shows it."""
    H = torch.arange(B * n * d, dtype=torch.float32).reshape(B, n, d) % 7
    mask = torch.arange(n)[None, :] < torch.arange(n - B + 1, n + 1)[:, None]
    expected = torch.stack([H[b, mask[b]].mean(0) for b in range(B)])
    with pytest.raises(CheckFailed) as excinfo:
        ch02.mean_pool(count_without_keepdim, cases=[(H, mask, expected)])
    assert excinfo.value.mistake == key, excinfo.value
    assert "feature axis" not in str(excinfo.value) and "mask[:, None, :]" not in str(excinfo.value)
    if key != "wrong-values":   # said at once, or as the fix of a repeat (core.shown)
        assert "keepdim=True" in f"{excinfo.value} {excinfo.value.fix}"


def test_the_first_masked_cases_tell_the_axes_apart():
    """B, n and d differ, so a mask or a count on the wrong axis raises an error whose sizes say which."""
    for cases in (ch02.MEAN_CASES, ch02.MAX_CASES):
        assert len(set(torch.tensor(cases[0][0]).shape)) == 3


@pytest.mark.parametrize("check, wrong, key, words", [
    (ch02.cls_pool, lambda H: H[:, :1].squeeze(), "squeeze-drops-batch-axis", "drops the batch axis"),
    (ch02.mean_pool, lambda H, mask: torch.stack([H[b][mask[b]].mean(0) for b in range(len(H))]),
     "integer-mask-as-index", "an integer tensor is read as a list of positions"),
    (ch02.max_pool, lambda H, mask: torch.stack([H[b][mask[b]].amax(0) for b in range(len(H))]),
     "integer-mask-as-index", "an integer tensor is read as a list of positions"),
    (ch02.mean_pool, lambda H, mask: (H * mask[:, :, None]).sum(1) / mask.sum(), "divides-by-batch-count",
     "the whole batch"),
    (ch02.mean_pool, lambda H, mask: H[mask.bool()].mean(0), "pools-whole-batch", "one vector for the whole batch"),
    # the next three got a row's values, or passed (a simulated student, issue 27)
    (ch02.max_pool, lambda H, mask: H.masked_fill(~mask.bool()[:, :, None], -1.0).amax(1), "zero-fill",
     "in row 0 every real value of feature 0 is below -1, so the fill value won the max there"),
    (ch02.cls_pool, lambda H: H[:, 0].detach(), "no-gradient", "cls_pool passes no gradient back to H"),
    (ch02.mean_pool, lambda H, mask: (H * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True).double(),
     "wrong-dtype", "returned dtype torch.float64"),
    # a fill every real value lay above, until a case reached the thousands (a simulated student)
    (ch02.max_pool, lambda H, mask: H.masked_fill(~mask.bool()[:, :, None], -100.0).amax(1), "zero-fill",
     "every real value of feature 0 is below -100, so the fill value won the max there"),
])
def test_pooling_mistakes_the_student_made_are_named(check, wrong, key, words):
    """Each got a shape or a row's values without a name (issue 27)."""
    with pytest.raises(CheckFailed) as caught:
        check(wrong)
    assert caught.value.mistake == key and words in str(caught.value), str(caught.value)


def test_the_first_sequence_message_leaves_the_index_for_a_repeat():
    with pytest.raises(CheckFailed) as caught:
        ch02.cls_pool(lambda H: H[0])
    assert caught.value.mistake == "first-sequence" and "H[:, 0]" not in str(caught.value)
    assert "`H[:, 0]`" in caught.value.fix


def test_a_pooler_with_dropout_is_named_by_its_train_mode():
    """Right in eval mode, random in train mode, where lesson 02 measures the pooler (a simulated student's)."""
    class WithDropout(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.dense, self.dropout = nn.Linear(d, d), nn.Dropout(0.1)

        def forward(self, c):
            return torch.tanh(self.dense(self.dropout(c)))
    with pytest.raises(CheckFailed) as caught:
        ch02.Pooler(WithDropout)
    assert caught.value.mistake == "dropout-in-head" and "train mode" in str(caught.value)


def _pooler(forward):
    """A Pooler class with nn.Linear(d, d) as `dense` and the given forward(self, c)."""
    class Pooler(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.dense = nn.Linear(d, d)
    Pooler.forward = forward
    return Pooler


@pytest.mark.parametrize("forward, key, words", [
    (lambda self, c: nn.functional.hardtanh(self.dense(c)), "hardtanh-not-tanh", "clips W c + b to [−1, 1]"),
    (lambda self, c: self.dense(c).clamp(-1, 1), "hardtanh-not-tanh", "clips W c + b to [−1, 1]"),
    (lambda self, c: torch.tanh(c @ self.dense.weight.T) + self.dense.bias, "bias-outside-tanh",
     "adds the bias after the tanh"),
])
def test_pooler_mistakes_a_simulated_student_made_are_named(forward, key, words):
    """Each got only "returned X; tanh(W c + b) is Y" before."""
    with pytest.raises(CheckFailed) as caught:
        ch02.Pooler(_pooler(forward))
    assert caught.value.mistake == key and words in str(caught.value), str(caught.value)
