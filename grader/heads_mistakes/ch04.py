"""What the mistakes of lesson 04's checks return (headlab/checks/ch04.py holds their words)."""
from typing import Callable

import torch
import torch.nn.functional as F

from headlab.checks.ch04 import X

from . import register, register_reference, wrong


# --- TokenClassifier: from the judge's H and the loaded W, b ---------------------------------------------
def _changed(key: str, change: Callable):
    """A head whose Linear layer is right and whose output is then changed."""
    return wrong(key, lambda H, W, b: change(H @ W.T + b))


register_reference("TokenClassifier", lambda H, W, b: H @ W.T + b)   # the right head: one Linear layer
register("TokenClassifier", [
    wrong("no-bias", lambda H, W, b: H @ W.T),
    _changed("labels-axis-second", lambda z: z.transpose(1, 2)),
    _changed("returns-label-ids", lambda z: z.argmax(-1)),
    _changed("softmax-inside-head", lambda z: z.softmax(-1)),
    _changed("log-softmax-inside-head", lambda z: z.log_softmax(-1)),
    _changed("sigmoid-output", torch.sigmoid),
    _changed("relu-on-logits", torch.relu),
    _changed("tanh-on-logits", torch.tanh),
    wrong("scores-one-position", lambda H, W, b: H[:, 0] @ W.T + b),
    _changed("flattened-in-head", lambda z: z.flatten(0, 1)),
])


# --- token_loss -----------------------------------------------------------------------------------
def _ce_sum(logits, labels):
    """The summed cross-entropy over the positions labelled ≠ -100. A sum, never the mean: the mean would be
    token_loss's (and mlm_loss's) answer. Each mistake below divides it by its own wrong count."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="sum")


def _kept(labels):
    return (labels != X).sum()


def _one_hot(logits, labels):
    """The logits of the labelled positions, (N, L), and their labels one-hot, (N, L) floats."""
    kept = labels != X
    return logits[kept], F.one_hot(labels[kept], logits.shape[-1]).to(logits.dtype)


register("token_loss", [
    wrong("minus-100-as-class-0", lambda lo, la: _ce_sum(lo, la.clamp(min=0)) / la.numel()),
    wrong("divides-by-all-positions", lambda lo, la: _ce_sum(lo, la) / la.numel()),
    wrong("sum-not-mean", _ce_sum),
    wrong("divides-by-batch-size", lambda lo, la: _ce_sum(lo, la) / len(la)),
    wrong("mean-per-sentence",
          lambda lo, la: torch.stack([_ce_sum(*r) / _kept(r[1]) for r in zip(lo, la) if max(r[1]) >= 0]).mean()),
    wrong("labels-shifted-left", lambda lo, la: _ce_sum(lo[:, 1:], la[:, :-1]) / _kept(la[:, :-1])),
    wrong("labels-shifted-right", lambda lo, la: _ce_sum(lo[:, :-1], la[:, 1:]) / _kept(la[:, 1:])),
    wrong("softmax-first", lambda lo, la: _ce_sum(lo.softmax(-1), la) / _kept(la)),
    wrong("classes-on-sequence-axis", lambda lo, la: F.cross_entropy(lo, la)),
    wrong("classes-on-sequence-axis", lambda lo, la: F.nll_loss(lo.log_softmax(1).flatten(0, 1), la.flatten())),
    wrong("nll-on-logits", lambda lo, la: F.nll_loss(lo.flatten(0, 1), la.flatten())),
    wrong("binary-cross-entropy", lambda lo, la: F.binary_cross_entropy_with_logits(*_one_hot(lo, la))),
    wrong("mse-not-cross-entropy", lambda lo, la: F.mse_loss(*_one_hot(lo, la))),
    wrong("label-smoothing", lambda lo, la: F.cross_entropy(lo.flatten(0, 1), la.flatten(), label_smoothing=0.1)),
    wrong("class-0-ignored", lambda lo, la: (lambda kept: _ce_sum(lo, kept) / _kept(kept))(la.masked_fill(la == 0, X))),
    wrong("mask-only-in-the-count", lambda lo, la: _ce_sum(lo, la.clamp(min=0)) / _kept(la)),
], right=lambda z, y: F.cross_entropy(z.reshape(-1, z.shape[-1]), y.reshape(-1)))


# --- bio_to_spans: each a twist of the right spans, from (tags, spans) ----------------------------
def _merged(spans: list[tuple], joins: Callable[[tuple, tuple], bool]) -> list[tuple]:
    """Each span glued onto the one it touches wherever `joins(previous, span)`: an entity that was not ended."""
    out: list[tuple] = []
    for span in spans:
        if out and out[-1][2] == span[1] and joins(out[-1], span):
            out[-1] = (*out[-1][:2], span[2])
        else:
            out.append(span)
    return out


def _left_open(tags: list[str], spans: list[tuple]) -> list[tuple]:
    """Every entity left open through the O tags after it: it ends where the next one starts (an I- of its own type
    after the O tags continues it), or at the end of the sentence."""
    starts = [(t, s) for k, (t, s, _) in enumerate(spans) if not (k and spans[k - 1][0] == t and tags[s][:2] == "I-")]
    return [(t, s, e) for (t, s), (_, e) in zip(starts, [*starts[1:], (None, len(tags))])]


register("bio_to_spans", [
    wrong("keeps-the-prefix", lambda tags, spans: [(tags[s], s, e) for _, s, e in spans]),
    wrong("keeps-the-prefix", lambda tags, spans: [(tags[s][1:], s, e) for _, s, e in spans]),
    wrong("inclusive-ends", lambda tags, spans: [(t, s, e - 1) for t, s, e in spans]),
    wrong("drops-orphan-inside-tag", lambda tags, spans: [sp for sp in spans if tags[sp[1]][:2] != "I-"]),
    wrong("type-change-continues-entity", lambda tags, spans: _merged(spans, lambda a, sp: tags[sp[1]][:2] == "I-")),
    wrong("begin-continues-same-type", lambda tags, spans: _merged(spans, lambda a, sp: a[0] == sp[0])),
    wrong("last-entity-not-closed", lambda tags, spans: [sp for sp in spans if sp[2] != len(tags)]),
    wrong("each-tag-its-own-entity", lambda tags, spans: [(t, k, k + 1) for t, s, e in spans for k in range(s, e)]),
    wrong("fields-out-of-order", lambda tags, spans: [(s, e, t) for t, s, e in spans]),
    wrong("o-does-not-close", _left_open),
])
