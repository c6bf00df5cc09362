"""What the mistakes of lesson 02's checks return (headlab/checks/ch02.py holds their words)."""
import torch
import torch.nn as nn

from . import register, register_reference, twist, wrong

# --- Pooler: tanh(c Wᵀ + b) under the grader's W and b -----------------------------------------------
_dense = lambda d, W, b, c, act=lambda x: x: act(c @ W.T + b)   # noqa: E731  the pooler with `act` for tanh
register_reference("Pooler", lambda c, W, b: _dense(len(b), W, b, c, torch.tanh))

register("cls_pool", [
    wrong("first-sequence", lambda H: H[0]),
    wrong("first-sequence-only", lambda H: H[0, 0]),
    wrong("squeeze-drops-batch-axis", lambda H: H[:, 0].squeeze() if len(H) == 1 else None),
    wrong("keeps-position-axis", lambda H: H[:, :1]),
    wrong("feature-axis", lambda H: H[:, :, 0]),
    wrong("last-position", lambda H: H[:, -1]),
    *[wrong("later-position", lambda H, i=i: H[:, i] if i < H.shape[1] - 1 else None) for i in (1, 2)],
    wrong("mean-pooling", lambda H: H.mean(1)),
    wrong("max-pooling", lambda H: H.amax(1)),
])

register("Pooler.forward", [
    wrong("no-tanh", _dense),
    wrong("relu-not-tanh", lambda *a: _dense(*a, torch.relu)),
    wrong("sigmoid-not-tanh", lambda *a: _dense(*a, torch.sigmoid)),
    wrong("gelu-not-tanh", lambda *a: _dense(*a, nn.functional.gelu)),
    wrong("hardtanh-not-tanh", lambda *a: _dense(*a, nn.functional.hardtanh)),
    wrong("no-bias", lambda d, W, b, c: torch.tanh(c @ W.T)),
    wrong("bias-outside-tanh", lambda d, W, b, c: torch.tanh(c @ W.T) + b),
    wrong("tanh-before-dense", lambda d, W, b, c: _dense(d, W, b, torch.tanh(c))),
    wrong("linear-weight-not-transposed", lambda d, W, b, c: torch.tanh(c @ W + b)),
    wrong("no-dense-layer", lambda d, W, b, c: torch.tanh(c)),
    twist("squeeze-drops-batch-axis", lambda E, d, W, b, c: E.squeeze() if len(c) == 1 else None),
    wrong("tanh-twice", lambda *a: _dense(*a, lambda x: torch.tanh(torch.tanh(x)))),
])


# --- mean_pool and max_pool -----------------------------------------------------------------------
_w = lambda H, mask: mask.to(H.dtype)[:, :, None]   # noqa: E731  (B, n, 1): 1 on real tokens, 0 on padding
_fill = lambda H, mask, value: H.masked_fill(~mask.bool()[:, :, None], value)   # noqa: E731  fills the padding


def _squeezed(right):
    return wrong("squeeze-drops-batch-axis", lambda H, m: right(H, m).squeeze() if len(H) == 1 else None)


def _indexed(pool):
    """Each row pooled from `H[b][mask[b]]`: with a 0/1 integer mask, an index that picks positions 0 and 1."""
    return wrong("integer-mask-as-index", lambda H, m: torch.stack([pool(H[b][m[b]]) for b in range(len(H))])
                 if m.dtype in (torch.long, torch.int) else None)


def _first_lengths(pool):
    """Each row pooled over its first ℓ positions, ℓ its real tokens: right where every row is right-padded, where
    it is no mistake (None)."""
    def output(H, m):
        real = m.bool()
        if torch.equal(real, torch.arange(real.shape[1]) < real.sum(1, keepdim=True)):
            return None
        return torch.stack([pool(H[b, :int(k)]) for b, k in enumerate(real.sum(1))])
    return wrong("assumes-right-padding", output)


register("mean_pool", [
    _squeezed(lambda H, m: (H * _w(H, m)).sum(1) / _w(H, m).sum(1)),
    _indexed(lambda rows: rows.mean(0)),
    wrong("keeps-position-axis", lambda H, m: (H * _w(H, m)).sum(1, True) / _w(H, m).sum(1, True)),
    wrong("padding-included", lambda H, m: H.mean(1)),
    wrong("divides-by-n", lambda H, m: (H * _w(H, m)).sum(1) / H.shape[1]),
    wrong("floor-division", lambda H, m: ((H * _w(H, m)).sum(1) / _w(H, m).sum(1)).floor()),
    wrong("divides-by-batch-count", lambda H, m: (H * _w(H, m)).sum(1) / _w(H, m).sum()),
    wrong("pools-whole-batch", lambda H, m: H[m.bool()].mean(0)),
    wrong("mask-against-every-sequence", lambda H, m: (m.to(H.dtype) @ H) / _w(H, m).sum(1)),
    wrong("sum-not-mean", lambda H, m: (H * _w(H, m)).sum(1)),
    wrong("sums-padding", lambda H, m: H.sum(1) / _w(H, m).sum(1)),
    wrong("inverted-mask", lambda H, m: (H * (1 - _w(H, m))).sum(1) / (1 - _w(H, m)).sum(1)),
    *[wrong("over-features", output) for output in (lambda H, m: H.mean(2), lambda H, m: (H * _w(H, m)).mean(2),
                                                    lambda H, m: (H * _w(H, m)).sum(2) / _w(H, m).sum(1))],
    _first_lengths(lambda rows: rows.mean(0)),
])

register("max_pool", [
    _squeezed(lambda H, m: _fill(H, m, -torch.inf).amax(1)),
    _indexed(lambda rows: rows.amax(0)),
    wrong("pools-whole-batch", lambda H, m: H[m.bool()].amax(0)),
    wrong("keeps-position-axis", lambda H, m: _fill(H, m, -torch.inf).amax(1, True)),
    wrong("zero-fill", lambda H, m: _fill(H, m, 0.0).amax(1)),
    wrong("padding-included", lambda H, m: H.amax(1)),
    wrong("inverted-mask", lambda H, m: H.masked_fill(m.bool()[:, :, None], -torch.inf).amax(1)),
    *[wrong("over-features", output) for output in (lambda H, m: _fill(H, m, -torch.inf).amax(2),
                                                    lambda H, m: H.amax(2), lambda H, m: _fill(H, m, 0.0).amax(2))],
    _first_lengths(lambda rows: rows.amax(0)),
    wrong("nan-from-zero-times-inf", lambda H, m: (H * _w(H, m) + (1 - _w(H, m)) * -torch.inf).amax(1)),
    wrong("returns-indices", lambda H, m: _fill(H, m, -torch.inf).argmax(1)),
])
