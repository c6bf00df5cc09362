"""Crashes inside a learner's function that torch words obscurely become one line naming the operation (issue 27.4):
`//` (floor division) in a mean, an argmax of a bool tensor, a float operation on a mask or a count, an `if` on a
batch. Each wrong implementation below is one a learner plausibly writes; its failure names the mistake's key, says
which operation in its first line, and keeps the code of the fix for a repeat (tests/test_hints.py)."""
from __future__ import annotations

import ast
from functools import partial

import numpy as np
import pytest
import torch

from headlab.checks import ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08
from headlab.checks.core import CheckFailed, NotWritten

# (check, wrong implementation, key, the operation's words in the message) of each crash below, the cases of
# test_a_crash_names_the_operation_in_one_line (tests/mistakes.py reads their keys as proven by it)
CRASHES = []


def crash(check, key: str, words: str):
    """Register the wrong implementation it decorates as a case of CRASHES, named after it: a case is written once,
    beside its code, instead of in a table of rows and a list of names that must stay in step with it."""
    def register(wrong):
        CRASHES.append(pytest.param(check, wrong, key, words, id=wrong.__name__))
        return wrong
    return register


@crash(ch08.sentence_embedding, "floor-division", "divides with `//`, floor division")
def floor_divided_embedding(H, attention_mask):
    real = attention_mask.bool()[:, :, None].to(H.dtype)
    z = (H * real).sum(1) // real.sum(1)   # the visible means are whole numbers: only the gradient step shows it
    return z / z.norm(dim=-1, keepdim=True)


@crash(ch02.mean_pool, "floor-division", "that is what `//`, floor division, does")
def floor_divided_mean(H, mask):
    w = mask.to(H.dtype)[:, :, None]
    return (H * w).sum(1) // w.sum(1)


@crash(ch06.last_real_index, "ranks-a-bool-tensor", "argmax (or topk) of a bool tensor")
def argmax_of_flipped_bool(attention_mask):
    return attention_mask.shape[1] - 1 - attention_mask.bool().flip(1).argmax(1)


@crash(ch07.predict_or_reject, "ranks-a-bool-tensor", "argmax (or topk) of a bool tensor")
def argmax_of_reached_threshold(probs, threshold, reject=-1):
    top = probs.max(-1).values
    return torch.where(top >= threshold, (probs == top[:, None]).argmax(-1), reject)


@crash(ch07.predict_or_reject, "tensor-as-condition", "a tensor of several values as a condition")
def if_on_the_batch(probs, threshold, reject=-1):
    top, prediction = probs.max(dim=-1)
    if top >= threshold:   # one answer for the whole batch
        return prediction
    return torch.full_like(prediction, reject)


# at the check's backward step: torch's words alone, ending in its anomaly-detection hint and "..", before
@crash(ch05.span_loss, "in-place-on-saved-tensor", "expected version 0 instead. span_loss wrote in place")
def span_loss_shifting_log_probabilities_in_place(start_logits, end_logits, start, end):
    start_lp, end_lp = start_logits.log_softmax(-1), end_logits.log_softmax(-1)
    start_lp -= 0.0   # in place, in what log_softmax's backward reads
    return -(start_lp.gather(1, start[:, None]).mean() + end_lp.gather(1, end[:, None]).mean()) / 2


# in the kernel's step of a head, met by the driver
@crash(ch02.Pooler, "in-place-on-saved-tensor", "expected version 0 instead. Pooler.forward wrote in place")
class PoolerDoublingItsOutputInPlace(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dense = torch.nn.Linear(d, d)

    def forward(self, c):
        pooled = torch.tanh(self.dense(c))
        pooled *= 2   # in place, in what tanh's backward reads
        return pooled / 2


@crash(ch07.expected_calibration_error, "float-operation-on-integers", "needs floats (a mean")
def mean_of_bool_hits(probs, labels, n_bins=10):
    confidence, predicted = probs.max(-1)
    correct = predicted == labels
    total = 0.0
    for k in range(n_bins):
        inside = (confidence > k / n_bins) & (confidence <= (k + 1) / n_bins)
        if inside.any():
            total += inside.float().mean() * (correct[inside].mean() - confidence[inside].mean()).abs()
    return float(total)


def _band_scores(start_logits, end_logits, allowed, max_len):
    """best_span's (B, n, n) table of span scores, −inf off the band and outside the allowed positions, and n."""
    allowed = allowed.bool()
    n = start_logits.shape[1]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    scores = start_logits.masked_fill(~allowed, float("-inf"))[:, :, None] + \
        end_logits.masked_fill(~allowed, float("-inf"))[:, None, :]
    return scores.masked_fill(~((i <= j) & (j < i + max_len)), float("-inf")), n


@crash(ch05.best_span, "argmax-over-two-axes", "gave argmax a tuple of axes")
def best_span_argmax_over_two_axes(*inputs):
    scores, n = _band_scores(*inputs)
    k = scores.argmax(dim=(1, 2))   # one axis only
    return torch.stack([k // n, k % n], dim=-1)


# on the two-sentence case (one sentence's transpose is still a view: there it is classes-on-sequence-axis)
@crash(partial(ch04.token_loss, cases=ch04.LOSS_CASES[1:]), "view-on-non-contiguous", "called `.view(...)` on a")
def token_loss_viewed_after_a_transpose(logits, labels):
    flat = logits.transpose(1, 2).view(-1, logits.shape[-1])   # the classes on dim 1, then flattened with view
    return torch.nn.functional.cross_entropy(flat, labels.view(-1))


@crash(ch05.best_span, "item-of-many-values", "turned a tensor of several values into one")
def best_span_for_one_example(*inputs):
    scores, n = _band_scores(*inputs)
    k = scores.flatten(1).argmax(-1).item()   # one number for the whole batch
    return torch.tensor([[k // n, k % n]])


@crash(ch05.best_span, "tensors-not-in-a-list", "its tensors as separate arguments")
def best_span_stacking_without_a_list(*inputs):
    scores, n = _band_scores(*inputs)
    k = scores.flatten(1).argmax(-1)
    return torch.stack(k // n, k % n, dim=-1)   # two tensors, not a list of them


@crash(ch05.span_loss, "softmax-without-dim", "without an axis")
def span_loss_log_softmax_without_dim(start_logits, end_logits, start, end):
    nll = torch.nn.functional.nll_loss
    return (nll(start_logits.log_softmax(), start) + nll(end_logits.log_softmax(), end)) / 2


@crash(ch04.token_loss, "numpy-on-graph", "carries the graph to NumPy")
def token_loss_through_numpy(logits, labels):
    keep = labels != -100
    p = logits.softmax(-1)[keep].gather(1, labels[keep][:, None])
    return -torch.as_tensor(np.log(p)).mean()   # NumPy's log of a tensor that carries the graph


# From here to causal_mask_looping_over_n, each crash got torch's (or Python's) words alone, raised-<exception>, or a
# hint about another mistake, before its operation was named.
@crash(ch07.expected_calibration_error, "float-index", "indexed with floats")
def ece_with_float_bin_indices(probs, labels, n_bins=10):
    confidence, predicted = probs.max(-1)
    bins = (confidence * n_bins).ceil().clamp(min=1) - 1   # bin k holds (k/M, (k+1)/M]; still float, no .long()
    count = torch.zeros(n_bins).index_add(0, bins, torch.ones_like(confidence))
    gap = torch.zeros(n_bins).index_add(0, bins, (predicted == labels).float() - confidence)
    return float(gap[count > 0].abs().sum() / len(labels))


@crash(ch06.last_real_index, "stack-of-numbers", "Python numbers or lists")
def last_real_index_stacking_ints(attention_mask):
    found = []
    for row in attention_mask.bool():
        found.append(int(row.nonzero().max()))
    return torch.stack(found)   # Python ints: torch.tensor(found)


@crash(ch06.last_real_index, "cat-of-scalars", "gave torch.cat 0-d tensors")
def last_real_index_concatenating_scalars(attention_mask):
    return torch.cat([row.nonzero().max() for row in attention_mask.bool()])   # 0-d tensors: torch.stack


@crash(ch02.max_pool, "minus-on-bool-mask", "subtracted a bool mask from a number")
def max_pool_with_berts_additive_mask(H, mask):
    return (H + (1.0 - mask[:, :, None]) * -1e9).max(dim=1).values   # right for 0/1 masks, refused for bool


class _Transform(torch.nn.Module):
    """MLMHead's transform, written right: the wrong heads below differ in their projection to the vocabulary."""

    def __init__(self, embedding):
        super().__init__()
        d = embedding.weight.shape[1]
        self.dense, self.act, self.norm = torch.nn.Linear(d, d), torch.nn.GELU(), torch.nn.LayerNorm(d)

    def transform(self, h):
        return self.norm(self.act(self.dense(h)))


@crash(ch01.mlm_head, "tensor-as-parameter", "assigned a tensor computed from a weight")
class MLMHeadTyingTheTranspose(_Transform):
    def __init__(self, embedding):
        super().__init__(embedding)
        V, d = embedding.weight.shape
        self.decoder = torch.nn.Linear(d, V)
        self.decoder.weight = embedding.weight.T   # (d, V) thought needed; a computed tensor, no Parameter

    def forward(self, h):
        return self.decoder(self.transform(h))


@crash(ch01.mlm_head, "module-as-tensor", "gave a layer (an nn.Embedding")
class MLMHeadLinearOfTheEmbedding(_Transform):
    def __init__(self, embedding):
        super().__init__(embedding)
        self.embedding, self.bias = embedding, torch.nn.Parameter(torch.zeros(embedding.weight.shape[0]))

    def forward(self, h):   # the layer where its weight belongs
        return torch.nn.functional.linear(self.transform(h), self.embedding, self.bias)


@crash(ch06.last_real_index, "float-into-integer-tensor", "wrote a float (-inf, or a fraction) into an integer tensor")
def last_real_index_minus_inf_positions(attention_mask):
    positions = torch.arange(attention_mask.shape[1]).expand(attention_mask.shape)
    return positions.masked_fill(~attention_mask.bool(), float("-inf")).max(dim=1).values   # -inf into longs


@crash(ch00.padding_mask, "shape-called", "called `.shape(...)` as if it were a method")
def padding_mask_calling_shape(lengths, n):
    return torch.arange(n).expand(lengths.shape(0), n) < lengths[:, None]


@crash(ch01.mask_tokens, "method-not-called", "used a tensor's method without calling")
def mask_tokens_clone_not_called(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
    chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask.bool()
    inputs = ids.clone   # the method, not a copy
    inputs[chosen] = mask_id
    return inputs, torch.where(chosen, ids, -100)


# torch's words alone (raised-NotImplementedError) before
@crash(ch01.mask_tokens, "comparison-without-brackets", "binds `&` tighter than `<`")
def mask_tokens_comparison_unbracketed(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
    chosen = torch.rand(ids.shape, generator=generator) < p & ~special_mask.bool()   # `&` first: p & ~special
    return torch.where(chosen, mask_id, ids), torch.where(chosen, ids, -100)


# Python's words alone (raised-ValueError) before
@crash(ch04.bio_to_spans, "splits-the-o-tag", "An O tag has no '-' to split on")
def bio_to_spans_splitting_every_tag(tags):
    spans = []
    for i, tag in enumerate(tags):
        prefix, kind = tag.split("-")   # an O tag has no '-'
        if prefix == "B" or not spans or spans[-1][0] != kind or spans[-1][2] != i:
            spans.append((kind, i, i + 1))
        else:
            spans[-1] = (kind, spans[-1][1], i + 1)
    return spans


@crash(ch01.mask_tokens, "numpy-method-on-a-tensor", "a NumPy array method on a tensor")
def mask_tokens_numpy_copy(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
    chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask.bool()
    inputs = ids.copy()   # NumPy's name for clone
    inputs[chosen] = mask_id
    return inputs, torch.where(chosen, ids, -100)


@crash(ch01.mlm_head, "parameter-given-a-size", "gave nn.Parameter a size")
class MLMHeadWithABiasOfASize(_Transform):
    def __init__(self, embedding):
        super().__init__(embedding)
        self.embedding = embedding
        self.bias = torch.nn.Parameter(embedding.weight.shape[0])   # a size, not torch.zeros(V)

    def forward(self, h):
        return torch.nn.functional.linear(self.transform(h), self.embedding.weight, self.bias)


@crash(ch05.span_loss, "targets-with-extra-axis", "targets with an extra axis")
def span_loss_with_targets_as_columns(start_logits, end_logits, start, end):
    ce = torch.nn.functional.cross_entropy
    return (ce(start_logits, start.view(-1, 1)) + ce(end_logits, end.view(-1, 1))) / 2   # Keras's (N, 1) labels


@crash(ch08.sentence_embedding, "axis-keyword", "calls it `dim`")
def sentence_embedding_normalised_with_axis(H, attention_mask):
    real = attention_mask.to(H.dtype)[:, :, None]
    z = (H * real).sum(1) / real.sum(1)
    return z / z.norm(axis=-1, keepdim=True)   # NumPy's np.linalg.norm(z, axis=-1, keepdims=True)


@crash(ch00.causal_mask, "loop-over-a-number", "looped over a number")
def causal_mask_looping_over_n(n):
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in n:   # range(n)
        mask[i, :i + 1] = True
    return mask


# told "Pooler.forward is not written yet", the stub's words, before
@crash(ch02.Pooler, "forward-misnamed", "has no method named `forward`")
class PoolerWithForwardMisspelt(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dense = torch.nn.Linear(d, d)

    def foward(self, c):   # nn.Module finds no forward
        return torch.tanh(self.dense(c))


@crash(ch03.sequence_classifier, "train-method-as-flag", "passed `self.train`")
class SequenceClassifierPassingTheTrainMethod(torch.nn.Module):
    def __init__(self, d, num_classes, dropout=0.1):
        super().__init__()
        self.p, self.linear = dropout, torch.nn.Linear(d, num_classes)

    def forward(self, pooled):   # self.train, the method, for the flag self.training
        logits = self.linear(torch.nn.functional.dropout(pooled, self.p, self.train))
        return logits.squeeze(-1) if logits.shape[-1] == 1 else logits


@pytest.mark.parametrize("check, wrong, key, words", CRASHES)
def test_a_crash_names_the_operation_in_one_line(check, wrong, key, words):
    with pytest.raises(CheckFailed) as caught:
        check(wrong)
    err = caught.value
    assert err.mistake == key and words in str(err), str(err)
    assert "\n" not in str(err) and len(str(err)) < 600, str(err)
    assert err.fix not in str(err)
    assert err.fix, "the fix waits for a repeat"


def test_torch_lacking_a_kernel_is_a_crash_not_the_stub():
    """torch raises NotImplementedError for an operation it has no kernel for on a dtype (a softmax of longs): that
    is not the released stub, whose check says "not written yet"."""
    def softmax_of_long_ids(next_token_logits, label_token_ids):
        return torch.as_tensor(label_token_ids).expand(next_token_logits.shape[0], -1).softmax(-1)

    with pytest.raises(CheckFailed) as caught:
        ch07.restrict_to_labels(softmax_of_long_ids)
    assert caught.value.mistake == "float-operation-on-integers" and "not implemented for 'Long'" in str(caught.value)

    def stub(next_token_logits, label_token_ids):
        raise NotImplementedError()

    with pytest.raises(NotWritten):
        ch07.restrict_to_labels(stub)


def test_a_floor_divided_loss_is_only_diagnosed_by_its_value():
    """A loss divided with `//` is wrong on its value before any gradient step: the check shows the values."""
    def floor_divided_loss(logits, labels):
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1).clamp(min=0),
                                               reduction="none")
        labelled = (labels.reshape(-1) != -100).float()
        return (ce * labelled).sum() // labelled.sum()

    with pytest.raises(CheckFailed, match="expected"):
        ch01.mlm_loss(floor_divided_loss)


KC = {"kc_positions": [4, 2, 3], "kc_head_params": 10, "kc_initial_loss": 0.5}


def test_the_knowledge_check_lists_every_form_problem_at_once():
    wrong = {"kc_positions": torch.tensor([4, 2, 3]), "kc_head_params": 10.0, "kc_initial_loss": 1.0986}
    with pytest.raises(CheckFailed) as caught:
        ch06.knowledge_check(wrong)
    said = str(caught.value)
    assert said.startswith("3 answers of the knowledge check need another form: (1) kc_positions")
    assert "(2) kc_head_params" in said and "(3) kc_initial_loss = 1.0986 is not rounded" in said
    assert caught.value.mistake == "tensor-answer" and "\n" not in said


@pytest.mark.parametrize("name, value, key", [("kc_positions", [4, -1, 3], "position-outside"),
                                              ("kc_head_params", 0, "params-not-positive"),
                                              ("kc_initial_loss", "0.5", "loss-not-a-positive-number")])
def test_one_form_problem_is_said_alone(name, value, key):
    with pytest.raises(CheckFailed) as caught:
        ch06.knowledge_check({**KC, name: value})
    assert caught.value.mistake == key and str(caught.value).startswith(name)


def test_the_conversions_of_the_form_problems_wait_for_a_repeat():
    wrong = {**KC, "kc_positions": torch.tensor([4, 2, 3]), "kc_initial_loss": 1.0986}
    with pytest.raises(CheckFailed) as caught:
        ch06.knowledge_check(wrong)
    assert "tolist" not in str(caught.value) and "round(" not in str(caught.value)
    assert "`tensor.tolist()`" in caught.value.fix and "round(..., 2) gives 1.1" in caught.value.fix


def test_the_graded_knowledge_check_lists_every_wrong_answer():
    """Hidden, with the values: two wrong answers are both named, the first one's key for the class report."""
    question = {"lengths": [7, 4, 9], "n": 10, "d": 512, "K": 5}
    expected = {"kc_positions": [6, 3, 8], "kc_head_params": 2565, "kc_initial_loss": 1.61}
    answers = {"kc_positions": [7, 4, 9], "kc_head_params": 512 * 5, "kc_initial_loss": 1.61}
    with pytest.raises(CheckFailed) as caught:
        ch06.knowledge_check(answers, expected, question)
    said = str(caught.value)
    assert said.startswith("2 answers of the knowledge check are wrong: (1) kc_positions = [7, 4, 9]")
    assert "(2) kc_head_params = 2560" in said and caught.value.mistake == "one-too-many"


# --- a signature that does not fit the exercise's (issue 27): one line that names the exercise's parameters -------
class _Head(torch.nn.Module):
    """A right head for Pooler and SpanHead but for the signatures the subclasses below give it."""

    def __init__(self, d):
        super().__init__()
        self.dense = torch.nn.Linear(d, d)


class PoolerWithoutD(_Head):
    def __init__(self):   # the size fixed inside, as in a first draft
        super().__init__(8)

    def forward(self, c):
        return torch.tanh(self.dense(c))


class SpanHeadForwardWithMask(_Head):
    def forward(self, H, mask):   # the mask belongs to best_span, not to the head
        return tuple(self.dense(H)[..., :2].unbind(-1))


def best_span(start_logits, end_logits, allowed):   # max_len forgotten; named as the learner names it
    return torch.zeros(len(start_logits), 2, dtype=torch.long)


@pytest.mark.parametrize("check, wrong, words", [
    (ch05.best_span, best_span, "The check calls best_span(start_logits, end_logits, allowed, max_len)"),
    (ch02.Pooler, PoolerWithoutD, "The check builds Pooler(d), so its __init__ takes (self, d)"),
    (ch05.span_head, SpanHeadForwardWithMask, "The check calls SpanHead.forward on (H) alone, so forward takes (self, H)"),
], ids=["function", "__init__", "forward"])
def test_a_signature_that_does_not_fit_names_the_exercises_in_one_line(check, wrong, words):
    with pytest.raises(CheckFailed) as caught:
        check(wrong)
    assert caught.value.mistake == "wrong-signature" and words in str(caught.value), str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_call_that_does_not_fit_inside_the_answer_is_not_its_signature():
    """The learner's forward calls its layer with two arguments: torch's Linear.forward refuses, not the check's call."""
    class Pooler(_Head):
        def forward(self, c):
            return torch.tanh(self.dense(c, c))

    with pytest.raises(CheckFailed) as caught:
        ch02.Pooler(Pooler)
    assert caught.value.mistake == "raised-TypeError" and "The check builds" not in str(caught.value)


def test_the_signatures_are_the_solutions():
    """core.SIGNATURES says each exercise's parameters as its solution declares them (a method's without self)."""
    from headlab.checks.core import SIGNATURES
    from heads_lessons import all_lessons

    declared = {}
    for lesson in all_lessons():
        for name, source in lesson.answers().items():
            for node in ast.parse(source).body:
                functions = [(node.name, node)] if isinstance(node, ast.FunctionDef) else [
                    (node.name if f.name == "__init__" else f"{node.name}.{f.name}", f)
                    for f in node.body if isinstance(f, ast.FunctionDef)] if isinstance(node, ast.ClassDef) else []
                for key, f in functions:
                    args = [a.arg for a in f.args.args if a.arg != "self"]
                    defaults = [ast.literal_eval(d) for d in f.args.defaults]
                    plain = args[:len(args) - len(defaults)]
                    declared[key] = ", ".join(plain + [f"{a}={d!r}" for a, d in zip(args[len(plain):], defaults)])
    assert SIGNATURES == declared
