"""Lesson 05's visible checks: misuse is explained, stubs say so, right answers pass, wrong ones are named."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from headlab.checks import CheckFailed
from headlab.checks import ch05


class GoodHead(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Linear(d, 2)

    def forward(self, H):
        return tuple(self.w(H).unbind(-1))


def good_best_span(s, e, allowed, max_len):  # brute force, written independently of the lesson
    allowed = allowed.bool()
    out = []
    for b in range(s.shape[0]):
        pairs = [(float(s[b, i] + e[b, j]), i, j) for i in range(s.shape[1])
                 for j in range(i, min(i + max_len, s.shape[1])) if allowed[b, i] and allowed[b, j]]
        out.append(max(pairs)[1:])
    return torch.tensor(out, dtype=torch.long)


def good_span_loss(s, e, start, end):
    return (F.cross_entropy(s, start) + F.cross_entropy(e, end)) / 2


def test_right_answers_pass(capsys):
    ch05.span_head(GoodHead)
    ch05.best_span(good_best_span)
    ch05.span_loss(good_span_loss)
    assert capsys.readouterr().out.count("✓") == 3


def test_misuse_is_explained():
    with pytest.raises(CheckFailed, match="takes your class SpanHead itself"):
        ch05.span_head(GoodHead(4))
    with pytest.raises(CheckFailed, match="takes your function best_span itself"):
        ch05.best_span(torch.zeros(2, 2))
    with pytest.raises(CheckFailed, match="takes your function span_loss itself"):
        ch05.span_loss(3.0)


def test_stubs_say_not_written_yet():
    class Stub(nn.Module):
        def __init__(self, d):
            super().__init__()
            raise NotImplementedError()

    def stub(*args):
        raise NotImplementedError()

    for check, fn in [(ch05.span_head, Stub), (ch05.best_span, stub), (ch05.span_loss, stub)]:
        with pytest.raises(NotImplementedError, match="not written yet"):
            check(fn)


def test_hand_written_expectations_agree_with_brute_force():
    for name, s, e, allowed, max_len, expected in ch05.BEST_SPAN_CASES:
        got = good_best_span(torch.tensor(s, dtype=torch.float), torch.tensor(e, dtype=torch.float),
                             torch.tensor(allowed), max_len)
        assert got.tolist() == expected, name
    for s, e, st, en, ce_s, ce_e in ch05.SPAN_LOSS_CASES:
        s, e, st, en = torch.tensor(s), torch.tensor(e), torch.tensor(st), torch.tensor(en)
        for value, (logits, target) in [(ce_s, (s, st)), (ce_e, (e, en))]:
            assert value == pytest.approx(F.cross_entropy(logits, target).item(), abs=1e-5)


def test_zero_initialised_separate_vectors_are_not_mistaken_for_a_shared_one():
    class ZeroVectors(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.s, self.e = nn.Parameter(torch.zeros(d)), nn.Parameter(torch.zeros(d))

        def forward(self, H):
            return H @ self.s, H @ self.e

    ch05.span_head(ZeroVectors)


class EndFromTwoVectors(nn.Module):   # end = H·w + H·c: parameters in no usual layout
    def __init__(self, d):
        super().__init__()
        self.w, self.c = nn.Parameter(torch.randn(d)), nn.Parameter(torch.randn(d))
        self.b = nn.Parameter(torch.zeros(2))

    def forward(self, H):
        return H @ self.w + self.b[0], H @ self.w + H @ self.c + self.b[1]


class FlatParameter(nn.Module):   # one vector holding both scorers and both biases
    def __init__(self, d):
        super().__init__()
        self.d, self.theta = d, nn.Parameter(torch.randn(2 * d + 2))

    def forward(self, H):
        W, b = self.theta[:2 * self.d].view(2, self.d), self.theta[2 * self.d:]
        return tuple((H @ W.T + b).unbind(-1))


class WeightAsColumns(nn.Module):   # a (d, 2) weight and a separate bias of shape (1, 2)
    def __init__(self, d):
        super().__init__()
        self.W, self.b = nn.Parameter(torch.randn(d, 2)), nn.Parameter(torch.zeros(1, 2))

    def forward(self, H):
        return tuple((H @ self.W + self.b).unbind(-1))


@pytest.mark.parametrize("head", [EndFromTwoVectors, FlatParameter, WeightAsColumns], ids=lambda c: c.__name__)
def test_a_linear_head_passes_whatever_the_layout_of_its_parameters(head):
    ch05.span_head(head)
    ch05.span_head(head, sizes=[(16, 4, 9), (3, 1, 6)], seed=5)


def test_heads_outside_the_usual_layouts_are_still_judged_by_their_outputs():
    class Curved(EndFromTwoVectors):   # the same parameters through sinh: not a linear map any more
        def forward(self, H):
            return tuple(torch.sinh(t) for t in super().forward(H))

    with pytest.raises(CheckFailed) as caught:
        ch05.span_head(Curved)
    assert caught.value.mistake == "not-linear"


def test_a_crash_reports_its_inputs():
    with pytest.raises(CheckFailed, match=r"best_span\(.*\) raised RuntimeError") as caught:
        ch05.best_span(lambda s, e, a, m: s.reshape(7, 7))
    assert caught.value.mistake == "raised-RuntimeError"


def test_dropout_in_train_mode_only_is_named():
    class WithDropout(GoodHead):   # right in eval mode; lesson 05 trains and measures the head in train mode
        def __init__(self, d):
            super().__init__(d)
            self.dropout = nn.Dropout(0.1)

        def forward(self, H):
            return super().forward(self.dropout(H))
    with pytest.raises(CheckFailed) as caught:
        ch05.span_head(WithDropout)
    assert caught.value.mistake == "dropout-in-head" and "train mode" in str(caught.value)


def test_dropout_left_on_at_eval_is_named_before_linearity():
    class DropoutAtEval(GoodHead):   # random at eval: the linearity probes would call it "not-linear"
        def forward(self, H):
            return super().forward(F.dropout(H, 0.1, training=True))

    with pytest.raises(CheckFailed) as caught:
        ch05.span_head(DropoutAtEval)
    assert caught.value.mistake == "dropout-at-eval"


def test_a_head_that_passes_no_gradient_to_H_is_named():
    class DetachesH(GoodHead):   # trains the head alone: fine-tuning would leave the encoder frozen
        def forward(self, H):
            return super().forward(H.detach())

    class DetachedLogits(GoodHead):   # the rule that says more comes first
        def forward(self, H):
            return tuple(t.detach() for t in super().forward(H))

    for head, key in [(DetachesH, "input-detached"), (DetachedLogits, "not-connected")]:
        with pytest.raises(CheckFailed) as caught:
            ch05.span_head(head)
        assert caught.value.mistake == key, head.__name__


def test_allowed_positions_that_are_not_one_block_are_judged():
    def gapped(row):
        pos = [i for i, a in enumerate(row) if a]
        return pos != list(range(pos[0], pos[-1] + 1))

    assert any(gapped(row) for case in ch05.BEST_SPAN_CASES for row in case[3]), \
        "a visible case must allow positions that are not one block"

    def one_block(s, e, allowed, max_len):   # searches from the first allowed position to the last
        block = (allowed.cumsum(-1) > 0) & (allowed.flip(-1).cumsum(-1).flip(-1) > 0)
        return good_best_span(s, e, block, max_len)

    with pytest.raises(CheckFailed) as caught:
        ch05.best_span(one_block)
    assert caught.value.mistake == "searches-between-allowed"


def test_the_larger_of_the_two_losses_is_not_called_one_of_them():
    with pytest.raises(CheckFailed) as caught:
        ch05.span_loss(lambda s, e, start, end: torch.maximum(F.cross_entropy(s, start), F.cross_entropy(e, end)))
    assert caught.value.mistake == "larger-of-the-two"


def _search(s, e, allowed, max_len, band):
    """The best (i, j) of s_i + e_j among allowed pairs that `band(i, j)` keeps: a wrong search for the tests."""
    allowed = allowed.bool()
    n = s.shape[1]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    ok = band(i, j, max_len) & allowed[:, :, None] & allowed[:, None, :]
    flat = (s[:, :, None] + e[:, None, :]).masked_fill(~ok, float("-inf")).flatten(1).argmax(-1)
    return torch.stack([flat // n, flat % n], dim=-1)


def _end_unmasked(s, e, allowed, max_len):   # the start is masked, the end is not
    allowed = allowed.bool()
    return _search(s.masked_fill(~allowed, -1e9), e, torch.ones_like(allowed), max_len,
                   lambda i, j, m: (i <= j) & (j <= i + m - 1))


def _softmax_over_batch(s, e, allowed, max_len):   # -inf masking, then a softmax over dim 0: NaN where all masked
    allowed = allowed.bool()
    p_s, p_e = (x.masked_fill(~allowed, float("-inf")).softmax(0) for x in (s, e))
    n = s.shape[1]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    flat = (p_s[:, :, None] * p_e[:, None, :]).masked_fill(~((i <= j) & (j < i + max_len)), float("-inf"))
    flat = flat.flatten(1).argmax(-1)
    return torch.stack([flat // n, flat % n], dim=-1)


@pytest.mark.parametrize("wrong, key, words", [
    (lambda s, e, a, m: _search(s, e, a, m, lambda i, j, m: (j - i).abs() < m), "backward-spans",
     "row 2 ends before it starts (j=5 < i=6)"),
    (_end_unmasked, "end-not-restricted", "row 2 ends at position 6, which is not allowed"),
    (_softmax_over_batch, "nan-from-softmax-over-batch", "is NaN (0/0)"),
    (lambda s, e, a, m: good_best_span(s, e, a, m).T, "pairs-on-first-axis", "(2, B) = (2, 3)"),
])
def test_best_span_names_the_order_the_mask_the_axis_and_the_stacking(wrong, key, words):
    """A band without i ≤ j was called two independent argmaxes, and the rest had no name (issue 27)."""
    with pytest.raises(CheckFailed) as caught:
        ch05.best_span(wrong)
    assert caught.value.mistake == key and words in str(caught.value), str(caught.value)


def test_best_span_tells_a_band_without_order_from_two_argmaxes():
    def argmaxes(s, e, allowed, max_len):
        allowed = allowed.bool()
        return torch.stack([x.masked_fill(~allowed, float("-inf")).argmax(-1) for x in (s, e)], dim=-1)
    with pytest.raises(CheckFailed) as caught:
        ch05.best_span(argmaxes)
    assert caught.value.mistake == "independent-argmax"


def test_nll_loss_on_raw_logits_is_named():
    with pytest.raises(CheckFailed) as caught:
        ch05.span_loss(lambda s, e, start, end: (F.nll_loss(s, start) + F.nll_loss(e, end)) / 2)
    assert caught.value.mistake == "nll-on-logits" and "log-probabilities" in str(caught.value)
    assert "cross_entropy" in caught.value.fix and "cross_entropy" not in str(caught.value)


def test_start_and_end_split_on_the_batch_axis_are_named():
    """`z[0], z[1]` on (B, n, 2) scores picks two examples (a simulated student was told to count from 0)."""
    class BatchSplit(GoodHead):
        def forward(self, H):
            z = self.w(H)
            return z[0], z[1]
    with pytest.raises(CheckFailed) as caught:
        ch05.span_head(BatchSplit)
    assert caught.value.mistake == "splits-batch-axis" and "last axis" in str(caught.value)



def _unpacked(self, H):
    start, end = self.w(H).unbind(1)   # ValueError: n values, not two
    return start, end


@pytest.mark.parametrize("forward", [
    lambda self, H: self.w(H).unbind(1),                  # n tensors of shape (B, 2)
    lambda self, H: (self.w(H)[:, 0], self.w(H)[:, 1]),   # positions 0 and 1, each (B, 2)
    _unpacked,
])
def test_start_and_end_split_on_the_position_axis_are_named(forward):
    """`unbind(1)` or `[:, k]` on (B, n, 2) scores (a simulated student's): each got a bare "returned a tuple", a
    shape or a ValueError before."""
    class PositionSplit(GoodHead):
        pass
    PositionSplit.forward = forward
    with pytest.raises(CheckFailed) as caught:
        ch05.span_head(PositionSplit)
    assert caught.value.mistake == "splits-position-axis" and "position axis" in str(caught.value), str(caught.value)


@pytest.mark.parametrize("log_probs", [False, True])
def test_a_band_cut_by_triu_and_tril_is_named(log_probs):
    """`triu`/`tril` zero the pairs they drop, so a 0 beats a negative span (a simulated student's): "returned X;
    expected Y" before."""
    def band_by_triu(s, e, allowed, max_len):
        s, e = (x.masked_fill(~allowed.bool(), float("-inf")) for x in (s, e))
        if log_probs:
            s, e = s.log_softmax(-1), e.log_softmax(-1)
        table = (s[:, :, None] + e[:, None, :]).triu().tril(max_len - 1)
        flat = table.flatten(1).argmax(-1)
        return torch.stack([flat // s.shape[1], flat % s.shape[1]], dim=-1)
    with pytest.raises(CheckFailed) as caught:
        ch05.best_span(band_by_triu)
    assert caught.value.mistake == "zeros-outside-band" and "not −inf" in str(caught.value), str(caught.value)


def test_a_band_cut_by_triu_on_probabilities_passes():
    """Probabilities are never below 0: there a zero-filled band loses to every span, and the answer is right."""
    def band_by_triu(s, e, allowed, max_len):
        p, q = (x.masked_fill(~allowed.bool(), float("-inf")).softmax(-1) for x in (s, e))
        flat = (p[:, :, None] * q[:, None, :]).triu().tril(max_len - 1).flatten(1).argmax(-1)
        return torch.stack([flat // s.shape[1], flat % s.shape[1]], dim=-1)
    ch05.best_span(band_by_triu)
