"""headlab.grading: the data that crosses between the student's kernel and the grader, and the replay."""
import json
import math

import numpy as np
import pytest
import torch

from headlab import codec, grading, kernel
from headlab.checks import ch00, ch02
from headlab.checks.core import CheckFailed


def roundtrip(value):
    return codec.decode(json.loads(json.dumps(codec.encode(value))))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.uint8, torch.bool])
def test_tensors_cross_as_raw_bytes_of_their_dtype(dtype):
    t = (torch.arange(12).reshape(3, 4) % 3).to(dtype)
    back = roundtrip(t)
    assert back.dtype == dtype and back.shape == t.shape and torch.equal(back, t)


def test_containers_numbers_and_generators_keep_their_kind():
    g = torch.Generator().manual_seed(3)
    value = {"a": (1, [2.5, float("nan"), float("-inf")], None, True), 7: "x",
             "n": np.int64(5), "f": np.float32(0.5), "g": g, "size": torch.Size([2, 3])}
    back = roundtrip(value)
    assert back["a"][0] == 1 and isinstance(back["a"], tuple) and math.isnan(back["a"][1][1])
    assert back["a"][1][2] == float("-inf") and back[7] == "x" and back["size"] == (2, 3)
    assert type(back["n"]) is np.int64 and type(back["f"]) is np.float32
    assert torch.equal(torch.rand(3, generator=back["g"]), torch.rand(3, generator=g))


def test_values_and_indices_cross_as_a_tuple():
    out = roundtrip(torch.tensor([[1.0, 3.0]]).max(dim=1))
    assert isinstance(out, tuple) and len(out) == 2


def test_an_unknown_object_becomes_a_stand_in_with_its_type_name():
    back = roundtrip(np.zeros(3))
    assert type(back).__name__ == "ndarray"


def test_a_tensor_subclass_crosses_as_its_data_only():
    class Anything(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})

    back = roundtrip(torch.ones(2).as_subclass(Anything))
    assert type(back) is torch.Tensor and torch.equal(back, torch.ones(2))


@pytest.mark.parametrize("bad", [
    {"$t": "object", "shape": [1], "b": ""},                       # a dtype it does not know
    {"$t": "float32", "shape": [4], "b": "AAAA"},                  # bytes that do not fill the shape
    {"$t": "float32", "shape": [-1], "b": ""},
    {"$pickle": "gASV"},                                          # nothing it does not know
    {"$f": "1e999"},
    {"$np": "object", "v": 1},
])
def test_malformed_data_is_refused(bad):
    with pytest.raises(ValueError):
        codec.decode(bad)


def test_deep_nesting_is_refused():
    data = []
    for _ in range(100):
        data = [data]
    with pytest.raises(ValueError):
        codec.decode(data)


def record(check, answer, *args, **kwargs):
    book = {}
    grading.RecordingChecks(check, book, "test_x").__getattr__(answer.__name__)(answer, *args, **kwargs)
    return book["test_x"]


def kernel_answers(entries, answer):
    return [json.loads(json.dumps({"answer": kernel.describe(answer),
                                   "results": [kernel._run(answer, c) for c in e["calls"]]}))
            for e in grading.kernel_view({"t": entries})["t"]]


def padding_mask(lengths, n):
    return torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None]


def test_the_kernel_sees_inputs_never_expected_values():
    entries = record(ch00, padding_mask, cases=[(torch.tensor([2, 1]), 3, [[True, True, False], [True, False, False]])])
    view = json.dumps(grading.kernel_view({"t": entries}))
    assert "cases" not in view and '"args"' in view
    assert "cases" in json.dumps(entries)


def test_replay_passes_the_right_answer_and_names_the_mistake_of_a_wrong_one():
    entries = record(ch00, padding_mask)
    assert grading.judge(entries, kernel_answers(entries, padding_mask)).passed

    def wrong(lengths, n):
        return torch.arange(n)[None, :] <= torch.as_tensor(lengths)[:, None]
    wrong.__name__ = "padding_mask"
    verdict = grading.judge(entries, kernel_answers(entries, wrong))
    assert not verdict.passed and verdict.error == "CheckFailed"
    with pytest.raises(CheckFailed) as direct:
        ch00.padding_mask(wrong)
    assert verdict.message == str(direct.value)


def test_a_wrong_value_no_mistake_explains_is_split_by_its_fingerprint():
    """No catch-all row in the class report: students who wrote the same unexplained wrong function share an
    `unnamed-` key, a different one gets another, and a named mistake keeps its key."""
    entries = record(ch00, padding_mask)

    def answer(rule):
        rule.__name__ = "padding_mask"
        return grading.judge(entries, kernel_answers(entries, rule))

    shifted = lambda lengths, n: torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None] - 2  # noqa: E731
    even = lambda lengths, n: padding_mask(lengths, n) & (torch.arange(n) % 2 == 0)  # noqa: E731
    first, again, other = answer(shifted), answer(lambda lengths, n: shifted(lengths, n)), answer(even)
    assert first.key == other.key == grading.UNEXPLAINED, (first.message, other.message)
    assert first.mistake.startswith("unnamed-") and first.mistake == again.mistake != other.mistake
    assert first.as_dict()["mistake"] == first.mistake
    named = answer(lambda lengths, n: torch.arange(n)[None, :] <= torch.as_tensor(lengths)[:, None])
    assert named.key == named.mistake != grading.UNEXPLAINED and not named.mistake.startswith("unnamed-")


def test_missing_stub_and_silent_kernels_fail():
    entries = record(ch00, padding_mask)
    missing = [{"answer": {"kind": "missing"}, "results": []} for _ in entries]
    assert grading.judge(entries, missing).error == "NameError"
    silent = [{"answer": kernel.describe(padding_mask), "results": []} for _ in entries]
    assert not grading.judge(entries, silent).passed

    def stub(lengths, n):
        raise NotImplementedError()
    stub.__name__ = "padding_mask"
    verdict = grading.judge(entries, kernel_answers(entries, stub))
    assert verdict.error == "NotImplementedError" and "not written yet" in verdict.message


def test_in_place_changes_and_gradients_are_replayed():
    def mean_pool(H, mask):
        mask.copy_(mask.clone())   # in place, but no change (H is not touched: it requires grad in the gradient check)
        m = mask.to(H.dtype)[:, :, None]
        return (H * m).sum(1) / m.sum(1)
    entries = record(ch02, mean_pool)
    assert grading.judge(entries, kernel_answers(entries, mean_pool)).passed

    def changes_H(H, mask):
        m = mask.to(H.dtype)[:, :, None]
        out = (H * m).sum(1) / m.sum(1)
        H.zero_()
        return out
    changes_H.__name__ = "mean_pool"
    verdict = grading.judge(entries, kernel_answers(entries, changes_H))
    assert "changed the H it was given" in verdict.message


def test_a_recording_that_does_not_match_is_the_graders_error():
    entries = record(ch00, padding_mask)
    entries[0]["calls"][0]["digest"] = "0" * 16
    with pytest.raises(codec.GraderError):
        grading.judge(entries, kernel_answers(entries, padding_mask))


def test_drivers_must_be_course_drivers():
    with pytest.raises(codec.GraderError):
        kernel._driver("os:system")
    with pytest.raises(codec.GraderError):
        kernel._driver("headlab.checks.ch06:knowledge_check")


# --- what the kernel measures about gradients is compared outside, not trusted ---------------------------
def sequence_classifier(cut):
    """A SequenceClassifier that applies `cut` to its input: `lambda x: x` is right, `torch.Tensor.detach` gives
    the right logits but passes no gradient back to the input."""
    class SequenceClassifier(torch.nn.Module):
        def __init__(self, d, num_classes, dropout=0.1):
            super().__init__()
            self.dropout, self.linear = torch.nn.Dropout(dropout), torch.nn.Linear(d, num_classes)

        def forward(self, pooled):
            logits = self.linear(self.dropout(cut(pooled)))
            return logits.squeeze(-1) if logits.shape[-1] == 1 else logits
    return SequenceClassifier


def judged_after_patching(monkeypatch, module, name, replacement, entries, answer) -> grading.Verdict:
    """The verdict outside on results from a kernel where `module.name` was patched, as a student's code can;
    it must be a failure."""
    monkeypatch.setattr(module, name, replacement)
    results = kernel_answers(entries, answer)
    monkeypatch.undo()
    verdict = grading.judge(entries, results)
    assert not verdict.passed, verdict
    return verdict


def test_a_kernel_that_forges_its_heads_input_gradient_still_fails(monkeypatch):
    """The student's kernel patches the driver's gradient step to claim that a gradient reached the input
    (the red team's forgery of 2026-12-01): the grader compares that gradient with the right head's."""
    from headlab.checks import ch03

    real, detached = kernel.gradient_facts, sequence_classifier(torch.Tensor.detach)
    book = {}
    grading.RecordingChecks(ch03, book, "t").sequence_classifier(sequence_classifier(lambda x: x))
    entries = book["t"]
    honest = grading.judge(entries, kernel_answers(entries, detached))
    assert not honest.passed and honest.key == "input-detached", honest

    def forged(module, forward, x, seed, **kwargs):
        facts = real(module, forward, x, seed, **kwargs)
        facts["input_grad"] = torch.ones_like(x)
        return facts
    assert judged_after_patching(monkeypatch, kernel, "gradient_facts", forged, entries, detached).key == \
        "wrong-input-gradient"


def test_a_kernel_that_forges_its_losss_gradient_still_fails(monkeypatch):
    """A loss computed with .item(), rewrapped as a leaf: the kernel adds the gradients it should have had
    (ones where the label is kept), and the grader compares them with the right loss's."""
    import torch.nn.functional as F
    from headlab.checks import ch04

    def token_loss(logits, labels):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
    entries = record(ch04, token_loss)

    def rewrapped(logits, labels):
        return torch.tensor(token_loss(logits, labels).item(), requires_grad=True)
    rewrapped.__name__ = "token_loss"
    real = kernel._result

    def forged(value, args, kwargs, before):
        result = real(value, args, kwargs, before)
        if isinstance(value, torch.Tensor) and value.requires_grad and args[0].requires_grad:
            result["grads"] = [[0, codec.encode((args[1] != -100)[..., None].expand_as(args[0]).float())]]
        return result
    assert judged_after_patching(monkeypatch, kernel, "_result", forged, entries, rewrapped).key == "wrong-gradient"
