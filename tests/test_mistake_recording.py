"""What each mistake of the checks returns is the grader's (grader/heads_mistakes, issue 25 N1); a student's kernel,
where that module is not, names a mistake on a visible case from a recording, headlab/resources/mistakes.json.

- The recording is what `python -m dev.record_mistakes` writes today, and every table of the grader's is used.
- The grading process refuses to judge without heads_mistakes.
- A self-learner's kernel (heads_mistakes not importable) names the mistakes of named wrong implementations on the
  visible checks, and compares a loss's gradient and a head's outputs and step with the right ones, recorded too (tests/test_engine.py names every
  mistake of every table both ways; this runs the real thing).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import heads_mistakes
import nbformat
import pytest
import torch
from dev.record_mistakes import recording, text
from headlab.checks import engine
from headlab.codec import decode
from heads_outside import _STATE, JudgeOutsideKernel


def alike(a, b) -> bool:
    """Two recordings (as JSON) alike: the same keys, the same values, float tensors within the tolerance a head's
    step is compared with (engine.close_gradient): its matrix products' last bits depend on the number of threads
    (pytest runs one per process), and differ by about 3e-5 on logits near 10."""
    if isinstance(a, dict) and isinstance(b, dict) and "$t" in a and "$t" in b:
        x, y = decode(a), decode(b)
        if x.dtype != y.dtype or x.shape != y.shape or not x.is_floating_point():
            return x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
        x, y = x.detach().double(), y.detach().double()
        scale = float(y[y.isfinite()].abs().max()) if bool(y.isfinite().any()) else 0.0
        return bool(torch.allclose(x, y, rtol=1e-3, atol=1e-5 * (1 + scale), equal_nan=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(alike(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(alike, a, b))
    return a == b


def test_the_recording_is_up_to_date():
    book = recording()
    assert alike(json.loads(text(book)), json.loads(engine.RECORDING.read_text())), \
        "headlab/resources/mistakes.json is out of date: run `python -m dev.record_mistakes`"
    registered = set(heads_mistakes._OUTPUTS) | set(heads_mistakes._REFERENCES)
    assert registered == set(book), "a table or right head of heads_mistakes that no visible check uses"


# Named wrong implementations, run in a process where `import heads_mistakes` fails, as in a Colab kernel.
SELF_LEARNER = textwrap.dedent('''
    import json, sys
    sys.modules["heads_mistakes"] = None          # not importable: the student's environment has no grader
    import torch
    import torch.nn.functional as F
    from torch import nn
    from headlab.checks import ch00, ch01, ch03, ch05, ch07, engine
    from headlab.checks.core import CheckFailed
    assert engine.grader_side() is None

    def inverted_padding_mask(lengths, n):
        return torch.arange(n)[None, :] >= lengths[:, None]

    def independent_argmax(start_logits, end_logits, allowed, max_len):
        allowed = allowed.bool()
        return torch.stack([x.masked_fill(~allowed, float("-inf")).argmax(-1) for x in (start_logits, end_logits)],
                           dim=-1)

    def unweighted_ece(probs, labels, n_bins=10):
        conf, pred = probs.max(-1)
        gaps = []
        for k in range(n_bins):
            inside = (conf > k / n_bins) & (conf <= (k + 1) / n_bins)
            if inside.any():
                gaps.append(abs((pred[inside] == labels[inside]).float().mean() - conf[inside].mean()))
        return float(sum(gaps) / len(gaps))

    def strict_greater(probs, threshold, reject=-1):
        top, pred = probs.max(-1)
        return torch.where(top > threshold, pred, torch.full_like(pred, reject))

    def half_detached_mlm_loss(logits, labels):   # the right value, half the right gradient
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        return (loss + loss.detach()) / 2

    class SequenceClassifier(nn.Module):   # right: judged against the right head's recorded outputs and step
        def __init__(self, d, num_classes, dropout=0.1):
            super().__init__()
            self.dropout, self.linear, self.K = nn.Dropout(dropout), nn.Linear(d, num_classes), num_classes

        def forward(self, pooled):
            out = self.linear(self.dropout(pooled))
            return out.squeeze(-1) if self.K == 1 else out

    class SoftmaxInsideHead(SequenceClassifier):
        def forward(self, pooled):
            out = super().forward(pooled)
            return out.softmax(-1) if self.K > 1 else out

    named = {}
    for check, answer in [(ch00.padding_mask, inverted_padding_mask), (ch05.best_span, independent_argmax),
                          (ch07.expected_calibration_error, unweighted_ece), (ch07.predict_or_reject, strict_greater),
                          (ch01.mlm_loss, half_detached_mlm_loss), (ch03.sequence_classifier, SequenceClassifier),
                          (ch03.sequence_classifier, SoftmaxInsideHead)]:
        try:
            check(answer)
            named[answer.__name__] = "passed"
        except CheckFailed as err:
            named[answer.__name__] = err.mistake
    print(json.dumps(named))
''')


def test_a_kernel_without_the_grader_names_mistakes_on_the_visible_cases():
    proc = subprocess.run([sys.executable, "-c", SELF_LEARNER], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {
        "inverted_padding_mask": "inverted", "independent_argmax": "independent-argmax",
        "unweighted_ece": "unweighted-bins", "strict_greater": "strict-greater",
        "half_detached_mlm_loss": "wrong-gradient",   # the right gradient, recorded too
        "SequenceClassifier": "passed", "SoftmaxInsideHead": "softmax-inside-head"}   # the right head's outputs too


def test_the_grader_refuses_to_judge_without_the_mistakes_outputs(monkeypatch):
    """Without heads_mistakes the grading process would name no mistake on a hidden case: it stops and says why."""
    monkeypatch.setattr(engine, "grader_side", lambda: None)
    with pytest.raises(ImportError, match=r"pip install -e \./grader"):
        JudgeOutsideKernel().preprocess(nbformat.v4.new_notebook(), {_STATE: {}})
