"""Evaluation metrics the lessons report. Spans are (type, start, end) tuples, end exclusive."""
from __future__ import annotations

from typing import Iterable, Sequence

import torch


def accuracy(pred: torch.Tensor, target: torch.Tensor, ignore_index: int | None = None) -> float:
    pred, target = torch.as_tensor(pred).flatten(), torch.as_tensor(target).flatten()
    if pred.shape != target.shape:
        raise ValueError(f"pred has {pred.numel()} items, target {target.numel()}")
    keep = target != ignore_index if ignore_index is not None else torch.ones_like(target, dtype=torch.bool)
    return float((pred[keep] == target[keep]).float().mean()) if keep.any() else float("nan")


def f1_score(pred: torch.Tensor, target: torch.Tensor, positive: int = 1) -> float:
    """F1 of one class (for the course's imbalanced set, the minority class 1). 0 when it is never predicted."""
    pred, target = torch.as_tensor(pred).flatten(), torch.as_tensor(target).flatten()
    tp = int(((pred == positive) & (target == positive)).sum())
    fp = int(((pred == positive) & (target != positive)).sum())
    fn = int(((pred != positive) & (target == positive)).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def base_rate(target: torch.Tensor) -> float:
    """Accuracy of always answering the most frequent class."""
    target = torch.as_tensor(target).flatten()
    return float(torch.bincount(target).max()) / target.numel()


def entity_scores(pred_spans: Iterable[Sequence[tuple]], true_spans: Iterable[Sequence[tuple]]) -> dict:
    """Entity-level precision, recall and F1: a predicted entity counts only if its type, start and
    end all match a true entity of the same sentence."""
    tp = n_pred = n_true = 0
    for pred, true in zip(pred_spans, true_spans, strict=True):
        pred, true = set(map(tuple, pred)), set(map(tuple, true))
        tp += len(pred & true)
        n_pred += len(pred)
        n_true += len(true)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_true if n_true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def balanced_accuracy(pred: torch.Tensor, target: torch.Tensor) -> float:
    """Mean of the per-class recalls: 0.5 for any constant answer on two classes, whatever the imbalance."""
    pred, target = torch.as_tensor(pred).flatten(), torch.as_tensor(target).flatten()
    recalls = [float((pred[target == c] == c).float().mean()) for c in target.unique().tolist()]
    return sum(recalls) / len(recalls)


def mean_reciprocal_rank(scores: torch.Tensor, targets: Sequence[int]) -> float:
    """`scores` (Q, D): query q's correct document is targets[q]; 1/rank of it, averaged over queries."""
    scores = torch.as_tensor(scores)
    correct = scores[torch.arange(len(targets)), torch.as_tensor(targets)]
    ranks = 1 + (scores > correct[:, None]).sum(dim=1)
    return float((1.0 / ranks.float()).mean())


def average_ranks(x: torch.Tensor) -> torch.Tensor:
    """Ranks 1 … N of the values of a 1-D tensor; tied values share the mean of their ranks."""
    return _row_ranks(torch.as_tensor(x).flatten())


def spearman(x: torch.Tensor, y: torch.Tensor) -> float:
    """Spearman's rank correlation: the Pearson correlation of the two samples' (average) ranks."""
    rx, ry = average_ranks(x), average_ranks(y)
    if rx.numel() != ry.numel() or rx.numel() < 2:
        raise ValueError(f"spearman needs two samples of the same size ≥ 2, got {rx.numel()} and {ry.numel()}")
    return float(_pearson(rx, ry))


def spearman_rows(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Spearman's ρ of each row of x (R, N) with the same row of y, (R,) in float64: a bootstrap's resamples
    in one call instead of R calls of `spearman` (the same ranks and the same arithmetic, so the same values)."""
    if x.shape != y.shape or x.dim() != 2 or x.shape[1] < 2:
        raise ValueError(f"spearman_rows needs two (R, N ≥ 2) tensors of one shape, got {tuple(x.shape)} and {tuple(y.shape)}")
    return _pearson(_row_ranks(x), _row_ranks(y))


def _row_ranks(x: torch.Tensor) -> torch.Tensor:
    # average_ranks along the last dim: the values below, plus the mean rank among the equal ones (N² compares)
    below = (x[..., None, :] < x[..., :, None]).sum(-1).double()
    equal = (x[..., None, :] == x[..., :, None]).sum(-1).double()
    return below + (equal + 1) / 2


def _pearson(rx: torch.Tensor, ry: torch.Tensor) -> torch.Tensor:
    # The correlation along the last dim
    rx, ry = rx - rx.mean(-1, keepdim=True), ry - ry.mean(-1, keepdim=True)
    return (rx * ry).sum(-1) / (rx.norm(dim=-1) * ry.norm(dim=-1))
