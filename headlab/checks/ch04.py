"""Checks for lesson 04: TokenClassifier, token_loss and bio_to_spans.

Expected values are written out by hand (losses as sums of logarithms, spans as lists) or follow from
weights the check loads into the learner's head (its logits in eval mode are that Linear layer applied
to every position). The learner's class is run only inside the `drive_*` functions, which return plain
data, so the checks can be replayed outside the learner's process (headlab/grading.py). Wrong answers
are compared with what the usual mistakes produce, so that a message can name the mistake instead of
only saying "wrong".
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from .core import CheckFailed, call, drive, fail, passed, require_function, require_loss, require_tensor

# --- TokenClassifier -------------------------------------------------------------------------------
# (d, num_labels, B, n): n differs from num_labels, so a (B, L, n) output cannot pass for (B, n, L).
HEAD_CASES = [(8, 5, 2, 6), (16, 3, 3, 4), (4, 7, 1, 9)]


def TokenClassifier(cls: Callable, cases: Sequence | None = None) -> None:
    """Build `cls(d, num_labels)` for each case and check what its forward pass returns.

    The learner's class is only run inside the `drive_*` functions below, which load the check's own
    weights into its Linear layer and return the logits; everything here compares those logits with what
    that Linear layer must give."""
    require_function(cls, "TokenClassifier")
    cases = HEAD_CASES if cases is None else cases
    for k, (d, L, B, n) in enumerate(cases):
        g = torch.Generator().manual_seed(100 + k)
        H = torch.randn(B, n, d, generator=g)
        W = torch.randn(L, d, generator=g) / math.sqrt(d)      # the weights the check loads into the head
        b = torch.randn(L, generator=g)                          # nonzero, so "only the bias" is visible
        before = H.clone()
        ran = drive(drive_head, cls, d, L, H, W, b, 300 + k)
        if not torch.equal(ran["H_after"], before):
            fail("TokenClassifier.forward changed the hidden states H it was given; "
                 "build new tensors instead of editing H in place.")
        _diagnose_head(ran, before, W, b, d, L, B, n)
        _check_dropout(drive(drive_dropout, cls, d, L, before.clone(), W, b, 400 + k), before, b, d, L)
    passed("TokenClassifier", len(cases))


def drive_head(cls, d: int, L: int, H: torch.Tensor, W: torch.Tensor, b: torch.Tensor, seed: int) -> dict:
    """Build cls(d, L), load W and b into its Linear layer, and run it in eval mode: twice on H, then on
    each position H[:, i:i+1] alone."""
    with torch.random.fork_rng(devices=[]):   # the same data in any process; the notebook's RNG untouched
        torch.manual_seed(seed)
        head = _build(cls, d, L)
        _load_linear(head, d, L, W, b)
        head.eval()
        with torch.no_grad():
            out = _forward(head, H)
            again = _forward(head, H)
            alone = ([_forward_alone(head, H[:, i:i + 1]) for i in range(H.shape[1])]
                     if _is_logits(out, H, L) else [])
    return {"logits": out, "again": again, "per_position": alone, "H_after": H}


def drive_dropout(cls, d: int, L: int, H: torch.Tensor, W: torch.Tensor, b: torch.Tensor, seed: int) -> dict:
    """Build cls(d, L, dropout=1.0), load W and b, and run it on H in train mode, then in eval mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        head = _build(cls, d, L, dropout=1.0)
        _load_linear(head, d, L, W, b)
        with torch.no_grad():
            head.train()
            out = _forward(head, H)
            head.eval()
            plain = _forward(head, H)
    return {"train": out, "eval": plain}


def _build(cls, d: int, L: int, **kwargs) -> nn.Module:
    head = call(cls, "TokenClassifier", d, L, **kwargs)
    if not isinstance(head, nn.Module):
        fail(f"TokenClassifier({d}, {L}) made a {type(head).__name__}; the head must be an "
             "nn.Module (class TokenClassifier(nn.Module) with super().__init__()).")
    return head


def _is_logits(out, H: torch.Tensor, L: int) -> bool:
    return isinstance(out, torch.Tensor) and tuple(out.shape) == (*H.shape[:2], L)


def _forward_alone(head, H_i):
    """The logits of one position fed alone; a crash is kept as data, for the check to report in turn."""
    try:
        return _forward(head, H_i)
    except CheckFailed as err:
        return {"crashed": str(err)}


def _forward(head, H):
    try:
        return call(head, "TokenClassifier.forward", H)
    except CheckFailed as err:
        if "cannot be multiplied" in str(err):
            fail(f"{err}\nnn.Linear acts on the last axis of its input, which must hold the d = {H.shape[-1]} "
                 "features: apply it to H of shape (B, n, d) as it is, not to a transposed H.")
        raise


def _load_linear(head: nn.Module, d: int, L: int, W: torch.Tensor, b: torch.Tensor) -> None:
    """Find the head's weight, (L, d) or stored as (d, L), and its bias (L,) among its parameters, and
    copy W and b into them."""
    params = list(head.parameters())
    total = sum(p.numel() for p in params)
    where = f"TokenClassifier({d}, {L})"
    if total != L * d + L:
        fail(f"{where} has {total} parameters; a token head is one Linear(d, num_labels) with its "
             f"bias: L·d + L = {L} × {d} + {L} = {L * d + L}.")
    weights = [p for p in params if p.dim() == 2]
    biases = [p for p in params if p.dim() == 1 and p.numel() == L]
    if len(weights) != 1 or len(biases) != 1:
        fail(f"{where} should hold one weight matrix ({L}, {d}) and one bias ({L},); "
             f"it holds parameters of shapes {[tuple(p.shape) for p in params]}.")
    weight, bias = weights[0], biases[0]
    if tuple(weight.shape) == (d, L) and d != L:
        W = W.T  # stored the other way round, used as H @ W: still one linear map per position
    if tuple(weight.shape) != tuple(W.shape):
        fail(f"{where} has a weight of shape {tuple(weight.shape)}; mapping d = {d} features to "
             f"num_labels = {L} scores needs nn.Linear({d}, {L}), whose weight is ({L}, {d}).")
    with torch.no_grad():
        weight.copy_(W.to(weight.dtype))
        bias.copy_(b.to(bias.dtype))


def _diagnose_head(ran: dict, H, W, b, d, L, B, n) -> None:
    out, again = ran["logits"], ran["again"]
    where = f" for H of shape {(B, n, d)} and num_labels = {L}"
    if isinstance(out, torch.Tensor) and tuple(out.shape) == (B, L, n):
        fail(f"TokenClassifier returned shape {(B, L, n)}{where}: that is (B, L, n), the labels axis "
             f"second. The contract is (B, n, L) = {(B, n, L)}: one row of L scores per position, labels "
             "axis last. (Moving L to dim 1 is the loss's business, not the head's.)")
    require_tensor(out, "TokenClassifier", (B, n, L), meaning=f" (B, n, num_labels){where}")
    if not (isinstance(again, torch.Tensor) and again.shape == out.shape and torch.equal(out, again)):
        fail("In eval mode your head gave different logits on two calls with the same H: dropout is "
             "left on at eval (at inference). Use an nn.Dropout module, which .eval() switches off, "
             "or F.dropout(x, p, training=self.training).")
    expected = H @ W.T + b
    if torch.allclose(out, expected.softmax(-1), atol=1e-5):
        fail("TokenClassifier returns probabilities: you applied softmax inside the head. A head "
             "returns raw logits; cross-entropy applies log-softmax itself, and argmax needs no softmax.")
    if torch.allclose(out, expected.log_softmax(-1), atol=1e-5):
        fail("TokenClassifier returns log-probabilities (log_softmax inside the head). A head returns "
             "raw logits; the loss normalises them itself.")
    if bool(((out >= 0) & (out <= 1)).all()) and torch.allclose(out.sum(-1), torch.ones(B, n), atol=1e-4):
        fail("Every row of your head's output sums to 1: it returns probabilities (a softmax inside the "
             "head). Return the raw logits of the Linear layer.")
    alone = ran["per_position"]
    for o in alone if isinstance(alone, (list, tuple)) else []:
        if isinstance(o, dict) and "crashed" in o:
            fail(str(o["crashed"]))
    if not (isinstance(alone, (list, tuple)) and len(alone) == n and all(
            isinstance(o, torch.Tensor) and tuple(o.shape) == (B, 1, L)
            and torch.allclose(o, out[:, i:i + 1], atol=1e-6) for i, o in enumerate(alone))):
        fail("the logits of one position must not depend on the other positions")
    if not torch.allclose(out, expected, atol=1e-5):
        fail(f"In eval mode the head must apply its Linear layer to every position: logits[b, i] = "
             f"W H[b, i] + bias{where}. At position [0, 0] you returned "
             f"{[round(v, 3) for v in out[0, 0].tolist()]}, the Linear layer gives "
             f"{[round(v, 3) for v in expected[0, 0].tolist()]}.")


def _check_dropout(ran: dict, H, b, d, L) -> None:
    """With dropout=1.0 in train mode every feature is dropped before the Linear: logits = bias."""
    out, plain = ran["train"], ran["eval"]
    expected = b.expand(*H.shape[:2], L)
    if not isinstance(out, torch.Tensor) or out.shape != expected.shape:
        fail("TokenClassifier(d, L, dropout=1.0) in train mode should drop every feature of H before the "
             "Linear layer, leaving logits equal to the bias at every position; yours did not. Pass the dropout "
             "argument on to nn.Dropout(dropout) and apply it to H before the Linear layer.")
    if torch.allclose(out, expected, atol=1e-6):
        return
    if torch.allclose(out, torch.zeros_like(out)) and not torch.allclose(b, torch.zeros_like(b)):
        fail("With dropout=1.0 in train mode your head returned all zeros: dropout comes after the "
             "Linear layer. The order is dropout → Linear, so a dropped input leaves only the bias.")
    if isinstance(plain, torch.Tensor) and plain.shape == out.shape and torch.allclose(out, plain, atol=1e-6):
        fail("TokenClassifier(d, L, dropout=1.0) in train mode gave the same logits as in eval mode: "
             "the dropout argument is not applied. Build nn.Dropout(dropout) and apply it to H "
             "before the Linear layer.")
    fail("TokenClassifier(d, L, dropout=1.0) in train mode should drop every feature of H before the "
         "Linear layer, leaving logits equal to the bias at every position; yours did not. Pass the dropout "
         "argument on to nn.Dropout(dropout) and apply it to H before the Linear layer.")


# --- token_loss ------------------------------------------------------------------------------------
L2, L3, L5 = math.log(2), math.log(3), math.log(5)
X = -100  # the label of [CLS], [SEP] and [PAD]
# Logits at unlabelled positions strongly favour class 1, so counting them changes the loss a lot.
LOSS_CASES = [
    (  # B = 1, n = 3 = L: here cross_entropy on (B, n, L) runs without an error, and is wrong
        [[[0, 5, 0], [0, 0, L2], [0, L2, 0]]],
        [[X, 2, 0]],
        (L2 + 2 * L2) / 2,  # -log(2/4) and -log(1/4)
    ),
    (  # B = 2, n = 4, L = 3; row 0: [CLS] w w [SEP]; row 1: [CLS] w [SEP] [PAD]
        [[[0, 5, 0], [L2, 0, 0], [0, 0, 0], [0, 5, 0]],
         [[0, 5, 0], [L2, 0, L2], [0, 5, 0], [0, 5, 0]]],
        [[X, 0, 2, X], [X, 1, X, X]],
        # -log(2/4), -log(1/3), -log(1/5): three labelled positions
        (L2 + L3 + L5) / 3,
    ),
]


def token_loss(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(logits, labels)` on each case and name the mistake if the loss is wrong."""
    require_function(fn, "token_loss")
    cases = LOSS_CASES if cases is None else cases
    for logits, labels, expected in cases:
        logits = torch.as_tensor(logits, dtype=torch.float32).requires_grad_()
        labels = torch.as_tensor(labels, dtype=torch.long)
        before = labels.clone()
        out = _call_loss(fn, logits, labels)
        if not torch.equal(labels, before):
            fail("token_loss changed the labels tensor it was given (for example by writing 0 over "
                 "the -100 entries). Leave the labels as they are; the -100 entries must be ignored.")
        _diagnose_loss(out, logits, labels, float(expected))
    _check_no_gradient_to_unlabelled(fn)
    passed("token_loss", len(cases))


# Always run after the cases: the loss's gradient must not reach positions labelled -100.
GRAD_LABELS = [[X, 1, 2, X], [X, 0, X, X]]


def _check_no_gradient_to_unlabelled(fn: Callable) -> None:
    logits = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(4)).requires_grad_()
    labels = torch.tensor(GRAD_LABELS)
    out = _call_loss(fn, logits, labels)
    require_loss(out, "token_loss", " (a single number: the mean over labelled positions)")
    out.backward()   # replayed, the loss carries the gradients the learner's function really had
    grad = logits.grad
    if grad is None:
        fail("token_loss returned a loss that does not reach the logits: loss.backward() gave them no "
             "gradient. Compute the loss from the logits with torch operations.")
    if bool((grad[labels == X] != 0).any()):
        fail("unlabelled positions must get no gradient from token_loss: with labels "
             f"{GRAD_LABELS}, loss.backward() gave the logits of positions labelled -100 ([CLS], [SEP], "
             "padding) a nonzero gradient, so training would still push them. Leave them out of the "
             "computation itself (ignore_index=-100, or select the labelled positions), not only out of "
             "the value.")


def _call_loss(fn: Callable, logits: torch.Tensor, labels: torch.Tensor):
    try:
        return call(fn, "token_loss", logits, labels)
    except CheckFailed as err:
        _translate_crash(err, logits, labels)
        raise


def _translate_crash(err: CheckFailed, logits, labels) -> None:
    text = str(err)
    B, n, L = logits.shape
    if "Expected target size" in text:
        fail(f"token_loss crashed: {text}\nF.cross_entropy reads the classes from dim 1, so on logits of "
             f"shape (B, n, L) = {(B, n, L)} it took the sequence axis n = {n} for the classes and expected "
             f"targets of shape (B, L) = {(B, L)}. Flatten to (B·n, L) and (B·n,), or move L to dim 1 "
             "with logits.transpose(1, 2).")
    if "out of bounds" in text or "IndexError" in text or "index" in text.lower() and "-100" in text:
        fail(f"token_loss crashed: {text}\nThe label -100 is not a class: positions labelled -100 "
             "([CLS], [SEP], padding) must be left out of the loss (ignore_index=-100, or a mask).")


def _ce(logits2d, target, reduction="mean"):
    return F.cross_entropy(logits2d, target, ignore_index=X, reduction=reduction)


def _diagnose_loss(out, logits, labels, expected: float) -> None:
    B, n, L = logits.shape
    got = require_loss(out, "token_loss", " (a single number: the mean over labelled positions)")
    if math.isclose(got, expected, rel_tol=1e-4, abs_tol=1e-5):
        return
    flat, target = logits.detach().reshape(-1, L), labels.reshape(-1)
    real = target != X
    said = f"token_loss gave {got:.4f} for labels {labels.tolist()}; the mean over labelled positions is {expected:.4f}"
    wrong = {
        "zero": (_ce(flat, target.clamp(min=0)),
                 "you replaced the -100 labels by a class (0), so [CLS], [SEP] and padding positions "
                 "count in the loss. Positions labelled -100 must be left out (ignore_index=-100)."),
        "all": (_ce(flat, target, "sum") / target.numel(),
                f"you divided by all B·n = {target.numel()} positions, padding and specials included; "
                f"divide by the {int(real.sum())} labelled positions (label ≠ -100)."),
        "sum": (_ce(flat, target, "sum"),
                "you returned the sum over labelled positions; the loss is their mean."),
        "sentence": (_per_sentence_mean(logits.detach(), labels),
                     "you averaged within each sentence and then over sentences; the loss is the mean "
                     "over all labelled positions of the batch, so a long sentence weighs more."),
        "shift-left": (_ce(logits.detach()[:, 1:].reshape(-1, L), labels[:, :-1].reshape(-1)),
                       "the labels are shifted by one position against the logits (label i scored "
                       "with the logits of position i + 1). The labels are already aligned: word w sits at "
                       "position w + 1 after [CLS], and so does its label; do not shift them again."),
        "shift-right": (_ce(logits.detach()[:, :-1].reshape(-1, L), labels[:, 1:].reshape(-1)),
                        "the labels are shifted by one position against the logits (label i + 1 scored "
                        "with the logits of position i, as if [CLS] were not there). The labels are already "
                        "aligned to the token positions, [CLS] included: do not shift them."),
        "probs": (_ce(flat.softmax(-1), target),
                  "you applied softmax to the logits before cross_entropy, which applies log-softmax "
                  "itself: cross_entropy takes raw logits."),
    }
    if n == L:
        wrong["axis"] = (_ce(logits.detach(), labels),
                         f"F.cross_entropy took the sequence axis for the classes: on (B, n, L) logits it "
                         f"reads the classes from dim 1, here n = {n}, which happens to equal L, so nothing "
                         "crashed but the number is wrong. Flatten to (B·n, L) and (B·n,), or move L to "
                         "dim 1 with logits.transpose(1, 2).")
    for value, why in wrong.values():
        if math.isfinite(float(value)) and math.isclose(got, float(value), rel_tol=1e-4, abs_tol=1e-5):
            fail(f"{said}: {why}")
    fail(f"{said}. The loss is the mean cross-entropy over the positions whose label is not -100.")


def _per_sentence_mean(logits, labels):
    means = []
    for row_logits, row_labels in zip(logits, labels):
        if (row_labels != X).any():
            means.append(_ce(row_logits, row_labels))
    return torch.stack(means).mean()


# --- bio_to_spans ----------------------------------------------------------------------------------
# (tags, expected spans), end exclusive. Each case isolates one rule; the message explains it.
BIO_CASES = [
    (["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O"], [("PER", 0, 2), ("LOC", 3, 5)]),
    (["O", "I-ORG", "I-ORG", "O", "B-PER"], [("ORG", 1, 3), ("PER", 4, 5)]),
    (["B-PER", "I-LOC", "O"], [("PER", 0, 1), ("LOC", 1, 2)]),
    (["I-LOC", "O", "B-LOC", "B-LOC", "I-LOC"], [("LOC", 0, 1), ("LOC", 2, 3), ("LOC", 3, 5)]),
    (["B-ORG", "I-ORG", "I-ORG"], [("ORG", 0, 3)]),
    (["O", "O"], []),
    ([], []),
]


def bio_to_spans(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(tags)` on each case and name the mistake if the spans are wrong."""
    require_function(fn, "bio_to_spans")
    cases = BIO_CASES if cases is None else cases
    for tags, expected in cases:
        tags = list(tags)
        given = list(tags)
        out = call(fn, "bio_to_spans", given)
        if given != tags:
            fail("bio_to_spans changed the list of tags it was given; read it without editing it.")
        _diagnose_spans(out, tags, [tuple(s) for s in expected])
    passed("bio_to_spans", len(cases))


def _diagnose_spans(out, tags: list[str], expected: list[tuple]) -> None:
    if not isinstance(out, (list, tuple)):
        fail(f"bio_to_spans returned a {type(out).__name__}; return a list of (type, start, end) tuples.")
    got = []
    for item in out:
        if not isinstance(item, (tuple, list)) or len(item) != 3:
            fail(f"bio_to_spans returned {item!r} as an entity; each entity is a tuple (type, start, end), "
                 "e.g. ('PER', 0, 2).")
        got.append(tuple(item))
    if got == expected:
        return
    said = f"for tags {tags} the entities are {expected}; you returned {got}"
    if any(isinstance(t, str) and t[:2] in ("B-", "I-") for t, _, _ in got):
        fail(f"{said}. The type is the tag without its B-/I- prefix: 'PER', not 'B-PER'.")
    if got == [(t, s, e - 1) for t, s, e in expected]:
        fail(f"{said}. Your ends are inclusive (the index of the last word); the end is exclusive: "
             "one past the last word, so that tags[start:end] is the entity.")
    if sorted(got, key=repr) == sorted(expected, key=repr):
        fail(f"{said}. Same entities, different order: list them in order of their start.")
    missing = [s for s in expected if s not in got]
    extra = [s for s in got if s not in expected]
    for t, s, e in extra:  # an entity that ran on across a change of type
        for t2, s2, e2 in expected:
            if t2 == t and s2 == s and e2 < e and tags[e2].startswith("I-") and tags[e2][2:] != t:
                fail(f"{said}. At position {e2} the tag {tags[e2]} has a different type from the open "
                     f"{t} entity: the type changes, so the {t} entity ends there and {tags[e2]} starts a "
                     f"new {tags[e2][2:]} entity. An I-X only continues an open X entity.")
            if t2 == t and s2 == s and e2 < e and tags[e2] == f"B-{t}":
                fail(f"{said}. At position {e2} the tag {tags[e2]} begins a new entity even though the "
                     "previous word has the same type: B- always starts a new entity.")
    orphans = [(t, s, e) for t, s, e in missing if tags[s].startswith("I-")]
    if orphans and not extra:
        t, s, e = orphans[0]
        before = ("at the start of the sentence" if s == 0 else "after O" if tags[s - 1] == "O"
                  else f"after {tags[s - 1]}, a different type")
        fail(f"{said}. The {tags[s]} at position {s} comes {before}: there is no open {t} entity to "
             f"continue, so it starts a new one. You dropped it; an I-X that does not continue an open "
             "X entity starts a new entity, it is not thrown away.")
    if any(e == len(tags) for _, _, e in missing):
        fail(f"{said}. The entity that reaches the end of the sentence was never closed: after the last "
             "tag, close the open entity too.")
    fail(f"{said}.")


__all__ = ["TokenClassifier", "token_loss", "bio_to_spans", "CheckFailed"]
