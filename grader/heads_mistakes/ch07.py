"""What the mistakes of lesson 07's checks return (headlab/checks/ch07.py holds their words)."""
import torch

from headlab.checks.ch07 import _ids

from . import register, wrong


# --- predict_or_reject ----------------------------------------------------------------------------
def _decide(probs, keep, reject, dim=-1, top_not_class=False):
    top, pred = probs.max(dim=dim)
    out = top if top_not_class else pred
    return torch.where(keep(top), out, torch.full_like(out, reject))


register("predict_or_reject", [
    wrong("argmax-over-batch", lambda p, t, r: _decide(p, lambda top: top >= t, r, dim=0)),
    wrong("argmax-over-batch", lambda p, t, r: p.argmax(0)),
    wrong("returns-top-probability", lambda p, t, r: _decide(p, lambda top: top >= t, r, top_not_class=True)),
    wrong("hardcoded-minus-one", lambda p, t, r: _decide(p, lambda top: top >= t, -1)),
    wrong("strict-greater", lambda p, t, r: _decide(p, lambda top: top > t, r)),
    wrong("never-rejects", lambda p, t, r: p.argmax(-1)),
    wrong("first-over-threshold", lambda p, t, r: torch.where((p >= t).any(-1), (p >= t).long().argmax(-1), r)),
    wrong("rejects-the-confident", lambda p, t, r: _decide(p, lambda top: top < t, r)),
    wrong("confidence-of-class-one", lambda p, t, r: torch.where(p[:, 1] >= t, p.argmax(-1), r)),
    wrong("threshold-on-class-index", lambda p, t, r: torch.where(p.argmax(-1) >= t, p.argmax(-1), r)),
    wrong("softmax-of-probabilities", lambda p, t, r: _decide(p.softmax(-1), lambda top: top >= t, r)),
    wrong("threshold-tolerance", lambda p, t, r: _decide(p, lambda top: top >= t - 1e-3, r)),
    wrong("max-over-whole-batch", lambda p, t, r: torch.where(p.max(-1).values >= t, p.argmax(), r)),
    wrong("margin-not-top-probability",
          lambda p, t, r: _decide(p, lambda top: top - p.topk(2, -1).values[:, 1] >= t, r)),
    wrong("reject-as-new-class", lambda p, t, r: _decide(p, lambda top: top >= t, p.shape[-1])),
])


# --- expected_calibration_error -------------------------------------------------------------------
def _bins(probs, labels, n_bins, closed="right", column=None, zero_binned=False, batch=(False, False),
          global_accuracy=False, binary=False, true_label=False, centres=False, counted=False):
    """Each bin's share of the predictions and |accuracy − confidence| (nan in an empty bin), with bins
    (k/n, (k+1)/n] or, for `closed="left"`, [k/n, (k+1)/n) and 1.0 in the last; the confidence is the top
    probability, or with `column` the probability of that class. A confidence of 0 (a column's probability can be
    0, the top one never is) lies in no right-closed bin, or with `zero_binned` in the first, as a clamp puts it.
    With `batch` (confidence, prediction), every row's confidence is the largest probability of the batch, or its
    prediction the flat index of that entry, as `probs.max()` and `probs.argmax()` without a dim give. With
    `global_accuracy`, every bin's accuracy is that of all N predictions. With `binary`, the prediction is class 1
    where the probability of class 1 exceeds 0.5, and class 0 elsewhere, as if there were two classes. With
    `true_label`, the confidence is the probability of each row's label. With
    `centres`, every bin's accuracy is compared with the centre of the bin, (k + 1/2) / n, not with the mean
    confidence of its rows. With `counted`, a bin's accuracy is its count of correct rows, not their fraction."""
    conf, pred = probs.double().max(-1)
    pred = (probs[:, 1] > 0.5).long() if binary else pred
    conf = conf if column is None else probs.double()[:, column]
    conf = probs.double()[torch.arange(len(labels)), labels] if true_label else conf
    conf, pred = conf * 0 + probs.double().max() if batch[0] else conf, pred * 0 + probs.argmax() if batch[1] else pred
    ok = (pred == labels).double()
    k = torch.ceil(conf * n_bins) - 1 if closed == "right" else torch.floor(conf * n_bins).clamp(max=n_bins - 1)
    k = k.clamp(min=0) if zero_binned else k
    share = torch.stack([(k == b).double().mean() for b in range(n_bins)])
    accuracy = [ok.mean() if global_accuracy else ok[k == b].sum() if counted else ok[k == b].mean()
                for b in range(n_bins)]
    # each bin's confidence: its rows' mean, or its centre (times 0 plus: nan in an empty bin all the same)
    mean = [conf[k == b].mean() * 0 + (b + 0.5) / n_bins if centres else conf[k == b].mean() for b in range(n_bins)]
    return share, torch.stack([(accuracy[b] - mean[b]).abs() for b in range(n_bins)])


def _weighted(probs, labels, n_bins, *, weight, of, **bins) -> float:
    """Σ weight(share_bin) · of(gap_bin) over the non-empty bins, the bins and gaps as `_bins(**bins)` makes them:
    a wrong weight or a wrong gap in an ECE otherwise written as it should be."""
    share, gap = _bins(probs, labels, n_bins, **bins)
    return float((weight(share) * of(gap)).nansum())


_SAME = lambda x: x   # noqa: E731  a weight or gap as it is


def _global_gap(probs, labels, signed=False) -> float:
    """|mean accuracy − mean confidence|, or with `signed` that difference as it is: what the per-bin gaps weighted by
    their shares add up to when each keeps its sign."""
    conf, pred = probs.double().max(-1)
    gap = float((pred == labels).double().mean() - conf.mean())
    return gap if signed else abs(gap)


def _both_closed(probs, labels, n_bins) -> float:
    """Σ share · gap over bins [k/n, (k+1)/n], closed on both sides: a confidence on an inner edge counts in the two
    bins it bounds (and its share in both)."""
    conf, pred = probs.double().max(-1)
    ok, total = (pred == labels).double(), 0.0
    for k in range(n_bins):
        inside = (conf >= k / n_bins) & (conf <= (k + 1) / n_bins)
        total += float(inside.double().mean() * (ok[inside].mean() - conf[inside].mean()).abs()) if inside.any() else 0
    return total


# (confidence, prediction) taken over the whole batch, and N where one confidence, a 0-d mask, counts as one
# prediction: one row of max-over-whole-batch each, in this order.
WHOLE_BATCH_WAYS = [(1, 1, 0), (1, 1, 1), (0, 1, 0), (1, 0, 0), (1, 0, 1)]

register("expected_calibration_error", [
    wrong("nan-from-empty-bins", lambda p, y, n: float(torch.mul(*_bins(p, y, n)).sum())),
    wrong("left-closed-bins", lambda p, y, n: float(torch.mul(*_bins(p, y, n, "left")).nansum())),
    wrong("unweighted-bins", lambda p, y, n: float(_bins(p, y, n)[1].nanmean())),
    wrong("unweighted-bins", lambda p, y, n: float(_bins(p, y, n)[1].nan_to_num(0).mean())),
    wrong("unweighted-bins", lambda p, y, n: float(_bins(p, y, n)[1].nansum())),
    wrong("single-global-gap", lambda p, y, n: _global_gap(p, y)),
    wrong("confidence-of-class-one",
          lambda p, y, n: float(torch.mul(*_bins(p, y, n, column=1, zero_binned=False)).nansum())),
    wrong("confidence-of-class-one",
          lambda p, y, n: float(torch.mul(*_bins(p, y, n, column=1, zero_binned=True)).nansum())),
    # class 1 predicted where its probability exceeds 0.5, as if there were two classes: without and with 0 in bin 0
    *[wrong("confidence-of-class-one", lambda p, y, n, z=z: float(torch.mul(*_bins(
        p, y, n, column=1, zero_binned=z, binary=True)).nansum())) for z in (False, True)],
    wrong("counts-not-shares", lambda p, y, n: float(len(y) * torch.mul(*_bins(p, y, n)).nansum())),
    wrong("fixed-ten-bins", lambda p, y, n: float(torch.mul(*_bins(p, y, 10)).nansum())),
    wrong("rms-of-gaps", lambda p, y, n: float((lambda share, gap: (share * gap ** 2).nansum().sqrt())(
        *_bins(p, y, n)))),
    wrong("squared-gaps", lambda p, y, n: _weighted(p, y, n, weight=_SAME, of=lambda gap: gap ** 2)),
    wrong("global-accuracy-per-bin", lambda p, y, n: _weighted(p, y, n, weight=_SAME, of=_SAME, global_accuracy=True)),
    wrong("integer-division-weights", lambda p, y, n: _weighted(p, y, n, weight=torch.floor, of=_SAME)),
    *[wrong("max-over-whole-batch", lambda p, y, n, c=c, k=k, per=per: float(torch.mul(*_bins(
        p, y, n, batch=(c, k))).nansum()) / (len(y) if per else 1)) for c, k, per in WHOLE_BATCH_WAYS],
    wrong("one-bin-too-few", lambda p, y, n: float(torch.mul(*_bins(p, y, n - 1)).nansum())),
    wrong("edge-in-two-bins", lambda p, y, n: _both_closed(p, y, n)),
    wrong("confidence-of-true-label", lambda p, y, n: _weighted(p, y, n, weight=_SAME, of=_SAME, true_label=True)),
    wrong("bin-centre-as-confidence", lambda p, y, n: _weighted(p, y, n, weight=_SAME, of=_SAME, centres=True)),
    wrong("single-global-gap", lambda p, y, n: _global_gap(p, y, signed=True)),
    wrong("per-prediction-gaps", lambda p, y, n: float((lambda conf, pred: (conf - (pred == y).double()).abs().mean())(
        *p.double().max(-1)))),
    wrong("weights-over-n-bins", lambda p, y, n: _weighted(p, y, n, weight=lambda share: share * len(y) / n, of=_SAME)),
    wrong("bin-accuracy-as-count", lambda p, y, n: _weighted(p, y, n, weight=_SAME, of=_SAME, counted=True)),
    wrong("top-bin-dropped", lambda p, y, n: float(torch.mul(*_bins(p, y, n))[:-1].nansum())),
    wrong("softmax-of-probabilities", lambda p, y, n: float(torch.mul(*_bins(p.double().softmax(-1), y, n)).nansum())),
])


# --- restrict_to_labels ---------------------------------------------------------------------------
def _vocabulary_mask(logits, ids):
    keep = torch.zeros(logits.shape[-1], dtype=torch.bool)
    keep[_ids(ids)] = True
    return logits.masked_fill(~keep, float("-inf")).softmax(-1)


register("restrict_to_labels", [
    wrong("whole-vocabulary-distribution", lambda z, ids: z.softmax(-1)),
    wrong("whole-vocabulary-distribution", _vocabulary_mask),
    wrong("returns-logits", lambda z, ids: z[:, _ids(ids)]),
    wrong("one-hot-not-probabilities", lambda z, ids: torch.eye(len(_ids(ids)))[z[:, _ids(ids)].argmax(-1)]),
    wrong("logits-divided-by-sum", lambda z, ids: z[:, _ids(ids)] / z[:, _ids(ids)].sum(-1, keepdim=True)),
    wrong("vocabulary-order", lambda z, ids: z[:, sorted(_ids(ids))].softmax(-1)),
    wrong("softmax-over-batch", lambda z, ids: z[:, _ids(ids)].softmax(0)),
    wrong("indexes-rows", lambda z, ids: z[_ids(ids)].softmax(-1)),
    wrong("sigmoid-not-softmax", lambda z, ids: z[:, _ids(ids)].sigmoid()),
    wrong("log-probabilities", lambda z, ids: z[:, _ids(ids)].log_softmax(-1)),
    wrong("exp-overflow", lambda z, ids: z[:, _ids(ids)].exp() / z[:, _ids(ids)].exp().sum(-1, keepdim=True)),
    wrong("gather-index-shape", lambda z, ids: z[:1, _ids(ids)].softmax(-1) if len(z) > 1 else None),
    wrong("softmax-before-selecting", lambda z, ids: z.softmax(-1)[:, _ids(ids)]),
    wrong("softmax-over-batch", lambda z, ids: z[:, _ids(ids)].exp() / z[:, _ids(ids)].exp().sum()),
    wrong("softmax-over-batch", lambda z, ids: z[:, _ids(ids)].exp() / z[:, _ids(ids)].exp().sum(0)),
])
