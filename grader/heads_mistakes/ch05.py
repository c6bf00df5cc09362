"""What the mistakes of lesson 05's checks return (headlab/checks/ch05.py holds their words). Each search is wrong in
one thing, so that no function here gives the right spans."""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from headlab.checks.ch05 import SMOOTHING

from . import register, twist, wrong


# --- best_span ------------------------------------------------------------------------------------
def _block(allowed: torch.Tensor) -> torch.Tensor:
    """Every position from a row's first allowed one to its last: the allowed positions taken for one block."""
    return (allowed.cumsum(-1) > 0) & (allowed.flip(-1).cumsum(-1).flip(-1) > 0)


# A mistake's rule: the logits it scores and the positions it lets a span start and end at (from start, end,
# allowed), and its band: max_len → the lowest and the highest j − i it searches, (0, max_len − 1) for the right
# one. Each is wrong in one thing (a rule that would, on some input, give the right spans gives None there).
_ALL = torch.ones_like
_SAME = lambda s, e, a: (s, e, a, a)   # noqa: E731  the logits as given, spans from and to allowed positions
_RIGHT = lambda m: (0, m - 1)          # noqa: E731
_RULES = {
    "one-too-long": (_SAME, lambda m: (0, m)),
    "one-too-short": (_SAME, lambda m: (0, m - 2)),
    "backward-spans": (_SAME, lambda m: (-(m - 1), m - 1)),          # |j − i| < max_len
    "one-token-spans-excluded": (_SAME, lambda m: (1, m - 1)),       # i < j
    "outside-the-passage": (lambda s, e, a: (s, e, _ALL(a), _ALL(a)), _RIGHT),
    "end-not-restricted": (lambda s, e, a: (s, e, a, _ALL(a)), _RIGHT),
    "start-not-restricted": (lambda s, e, a: (s, e, _ALL(a), a), _RIGHT),
    "mask-multiplied": (lambda s, e, a: (s * a, e * a, _ALL(a), _ALL(a)), _RIGHT),
    "searches-between-allowed": (lambda s, e, a: (s, e, _block(a), _block(a)), _RIGHT),
}
TRANSPOSED_BAND = lambda m: (-(m - 1), 0)   # noqa: E731  j ≤ i: `tril` where `triu` belongs


def _band(n: int, max_len: int, band: Callable[[int], tuple[int, int]] = _RIGHT) -> torch.Tensor:
    """(n, n): True where a span (i, j) has lo ≤ j − i ≤ hi, (lo, hi) = band(max_len)."""
    gap, (lo, hi) = torch.arange(n)[None, :] - torch.arange(n)[:, None], band(max_len)
    return (gap >= lo) & (gap <= hi)


def _argmax_pairs(scores: torch.Tensor) -> torch.Tensor:
    """The (i, j) of each row's largest entry of a (B, n, n) table of span scores, as torch's argmax finds it."""
    n = scores.shape[-1]
    flat = scores.flatten(1).argmax(-1)
    return torch.stack([flat // n, flat % n], dim=-1)


def _wrong_spans(rule: tuple, start, end, allowed, max_len: int) -> torch.Tensor | None:
    """The best (i, j) under a mistake's `rule` (where, band), or None where it has no span to compare or searches
    exactly the spans the right rule does."""
    where, band = rule
    allowed = allowed.bool()
    start, end, starts, ends = where(start, end, allowed)
    if band(max_len) == _RIGHT(max_len) and torch.equal(starts, allowed) and torch.equal(ends, allowed):
        return None
    ok = _band(start.shape[1], max_len, band) & starts[:, :, None] & ends[:, None, :]
    if not ok.flatten(1).any(-1).all():   # a row without candidates: this rule gives no span to compare
        return None
    return _argmax_pairs((start[:, :, None] + end[:, None, :]).masked_fill(~ok, float("-inf")))


def _probabilities(start, end, allowed) -> tuple[torch.Tensor, torch.Tensor]:
    """P_start and P_end, each a softmax over its row's allowed positions."""
    return tuple(x.masked_fill(~allowed, float("-inf")).softmax(-1) for x in (start, end))


def _summed_probabilities(right, start, end, allowed, max_len: int) -> torch.Tensor | None:
    """The pair in the band maximising P_start(i) + P_end(j), the probabilities added, not multiplied; None where
    that gives the `right` spans anyway (often: so the check holds no function that passes in their place)."""
    allowed = allowed.bool()
    p_start, p_end = _probabilities(start, end, allowed)
    ok = _band(start.shape[1], max_len) & allowed[:, :, None] & allowed[:, None, :]
    spans = _argmax_pairs((p_start[:, :, None] + p_end[:, None, :]).masked_fill(~ok, float("-inf")))
    is_spans = isinstance(right, torch.Tensor) and right.dtype == torch.long and right.shape == spans.shape
    return spans if is_spans and not torch.equal(spans, right) else None


def _multiplied(start, end, allowed, max_len: int, masked_first: bool = False) -> torch.Tensor:
    """The allowed pair in the band maximising start_logit(i) × end_logit(j); with `masked_first`, the product of
    logits already set to −inf outside `allowed`, where −inf × −inf = +inf and −inf × 0 is NaN (argmax takes NaN for
    the largest), so an excluded pair can win."""
    allowed, band = allowed.bool(), _band(start.shape[1], max_len)
    if masked_first:
        start, end = (x.masked_fill(~allowed, float("-inf")) for x in (start, end))
    else:
        band = band & allowed[:, :, None] & allowed[:, None, :]
    return _argmax_pairs((start[:, :, None] * end[:, None, :]).masked_fill(~band, float("-inf")))


def _greedy(start, end, allowed, max_len: int) -> torch.Tensor | None:
    """The best allowed start, then the best allowed end in its band: a greedy search (None where that start has
    no allowed end)."""
    allowed = allowed.bool()
    i = start.masked_fill(~allowed, float("-inf")).argmax(-1)             # (B,)
    ends = _band(start.shape[1], max_len)[i] & allowed                     # (B, n): the ends start i may take
    if not ends.any(-1).all():
        return None
    return torch.stack([i, end.masked_fill(~ends, float("-inf")).argmax(-1)], dim=-1)


def _nan_spans(start, end, allowed, max_len: int) -> torch.Tensor | None:
    """A softmax over the batch axis (dim 0) of −inf-masked logits: NaN (0/0) at a position masked in every row, and
    argmax takes the first NaN for the largest value. None where no span in the band is NaN."""
    p_start, p_end = (x.masked_fill(~allowed.bool(), float("-inf")).softmax(0) for x in (start, end))
    scores = (p_start[:, :, None] * p_end[:, None, :]).masked_fill(~_band(start.shape[1], max_len), float("-inf"))
    return _argmax_pairs(scores) if bool(scores.isnan().any()) else None


def _zeros_outside_band(right, start, end, allowed, max_len: int, log_probs: bool = False) -> torch.Tensor | None:
    """The best pair of a score table masked with −inf outside the allowed positions (with `log_probs`, of
    log-probabilities), then cut to the band with `triu().tril(max_len − 1)`, which sets the pairs it drops to 0;
    None where that gives the `right` spans anyway."""
    start, end = (x.masked_fill(~allowed.bool(), float("-inf")) for x in (start, end))
    if log_probs:
        start, end = start.log_softmax(-1), end.log_softmax(-1)
    spans = _argmax_pairs((start[:, :, None] + end[:, None, :]).triu().tril(max_len - 1))
    return None if torch.equal(spans, right) else spans


def _from_zero(right, start, end) -> torch.Tensor | None:
    """The `right` spans, with (0, 0) in every row whose best span's logits add up to 0 or less: a search whose best
    score starts at 0 keeps its first pair there. None where no row does. (Its sums of log-probabilities, never above
    0, would keep (0, 0) in every row, as a softmax over the batch axis gives: nan-from-softmax-over-batch.)"""
    rows = torch.arange(len(right))
    low = (start[rows, right[:, 0]] + end[rows, right[:, 1]] <= 0)[:, None]
    return right.masked_fill(low, 0) if bool(low.any()) else None


def _rule(key: str, band: Callable | None = None):
    """The mistake whose spans are the best ones under its rule in _RULES, or that rule's positions in `band`."""
    where, its_band = _RULES[key]
    rule = (where, band or its_band)
    return wrong(key, lambda s, e, allowed, m: _wrong_spans(rule, s, e, allowed, m))


register("best_span", [
    _rule("one-too-long"),
    wrong("independent-argmax", lambda s, e, allowed, m: torch.stack(
        [x.masked_fill(~allowed, float("-inf")).argmax(-1) for x in (s, e)], dim=-1)),
    _rule("backward-spans"),
    _rule("backward-spans", band=TRANSPOSED_BAND),
    _rule("one-token-spans-excluded"),
    _rule("end-not-restricted"),
    _rule("start-not-restricted"),
    wrong("nan-from-softmax-over-batch", _nan_spans),
    twist("pairs-on-first-axis", lambda E, s, e, allowed, m: E.T),
    _rule("outside-the-passage"),
    _rule("mask-multiplied"),
    twist("start-end-swapped", lambda E, s, e, allowed, m: E.flip(-1)),
    twist("probabilities-added", _summed_probabilities),
    wrong("greedy-start-first", _greedy),
    twist("exclusive-end", lambda E, s, e, allowed, m: E + torch.tensor([0, 1])),
    _rule("one-too-short"),
    _rule("searches-between-allowed"),
    wrong("logits-multiplied", _multiplied),
    wrong("logits-multiplied", lambda *a: _multiplied(*a, masked_first=True)),
    twist("zeros-outside-band", _zeros_outside_band),
    twist("zeros-outside-band", lambda *a: _zeros_outside_band(*a, log_probs=True)),
    twist("flat-index", lambda E, s, e, allowed, m: E[:, 0] * s.shape[1] + E[:, 1]),
    twist("end-as-offset", lambda E, s, e, allowed, m: E - E[:, :1] * torch.tensor([0, 1])),
    twist("best-starts-at-zero", lambda E, s, e, allowed, m: _from_zero(E, s, e)),
])


# --- span_loss ------------------------------------------------------------------------------------
def _ce(logits, target, reduce: str = "mean", dim: int = -1):
    """Cross-entropy of (B, n) logits against (B,) targets, with its softmax over `dim`."""
    nll = -logits.log_softmax(dim)[torch.arange(len(target)), target]
    return nll if reduce == "none" else getattr(nll, reduce)()


def _pick(logits, target):
    """The mean over the batch of each row's logit at its target: `F.nll_loss` on raw logits gives minus this."""
    return logits[torch.arange(len(target)), target].mean()


def _squared(x, target):
    """A mean squared error of (B, n) scores against one-hot (B,) targets."""
    return ((x - torch.eye(x.shape[-1], dtype=x.dtype)[target]) ** 2).mean()


def _smoothed(logits, target, eps: float):
    """`F.cross_entropy(..., label_smoothing=eps)`: the target puts 1 − eps on the answer, eps spread over all n."""
    return (1 - eps) * _ce(logits, target) + eps * -logits.log_softmax(-1).mean(-1).mean()


def _binary(x, target):
    """`F.binary_cross_entropy_with_logits` of (B, n) logits against one-hot (B,) targets."""
    return F.binary_cross_entropy_with_logits(x, torch.eye(x.shape[-1], dtype=x.dtype)[target])


register("span_loss", [
    wrong("one-loss-per-example", lambda s, e, st, en: (_ce(s, st, "none") + _ce(e, en, "none")) / 2),
    wrong("start-only", lambda s, e, st, en: _ce(s, st)),
    wrong("end-only", lambda s, e, st, en: _ce(e, en)),
    wrong("larger-of-the-two", lambda s, e, st, en: torch.maximum(_ce(s, st), _ce(e, en))),
    wrong("not-halved", lambda s, e, st, en: _ce(s, st) + _ce(e, en)),
    wrong("operator-precedence", lambda s, e, st, en: _ce(s, st) + _ce(e, en) / 2),
    wrong("nll-on-logits", lambda s, e, st, en: -(_pick(s, st) + _pick(e, en)) / 2),
    wrong("softmax-first", lambda s, e, st, en: (_ce(s.softmax(-1), st) + _ce(e.softmax(-1), en)) / 2),
    wrong("targets-swapped", lambda s, e, st, en: (_ce(s, en) + _ce(e, st)) / 2),
    wrong("same-logits-twice", lambda s, e, st, en: (_ce(s, st) + _ce(s, en)) / 2),   # the end loss on start logits
    wrong("same-logits-twice", lambda s, e, st, en: (_ce(e, st) + _ce(e, en)) / 2),
    wrong("summed-over-batch", lambda s, e, st, en: (_ce(s, st, "sum") + _ce(e, en, "sum")) / 2),
    wrong("softmax-over-batch", lambda s, e, st, en: (_ce(s, st, dim=0) + _ce(e, en, dim=0)) / 2),
    # a squared error of the logits, of the softmax, of the argmax positions (the kernel's table, in this order)
    *[wrong("mse-not-cross-entropy", lambda s, e, st, en, of=of: (of(s, st) + of(e, en)) / 2) for of in [
        _squared, lambda x, t: _squared(x.softmax(-1), t), lambda x, t: ((x.argmax(-1) - t).double() ** 2).mean()]],
    *[wrong("label-smoothing", lambda s, e, st, en, eps=eps: (_smoothed(s, st, eps) + _smoothed(e, en, eps)) / 2)
      for eps in SMOOTHING],
    wrong("binary-cross-entropy", lambda s, e, st, en: (_binary(s, st) + _binary(e, en)) / 2),
], right=lambda s, e, st, en: (_ce(s, st) + _ce(e, en)) / 2)
