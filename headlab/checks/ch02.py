"""Checks for lesson 02: cls_pool, Pooler, mean_pool and max_pool.

Visible cases carry expected values written out by hand. When a result is wrong, the checks compare
it with what the usual mistakes would give (the last position, padding inside a mean or a max, zeros
as the max fill, a mask lined up with the feature axis, …) and say which one it looks like.
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn as nn

from .core import CheckFailed, call, drive, fail, passed, require_function, require_tensor

T, F = True, False

# --- cls_pool: (H, expected) -------------------------------------------------------------------------
# The hundreds say the row and the tens the position, so every entry shows where it comes from;
# the positions are not evenly spaced, so the mean of a row is none of its positions.
CLS_CASES = [
    ([[[0., 1.], [10., 11.], [50., 51.]],
      [[100., 101.], [110., 111.], [150., 151.]]],
     [[0., 1.], [100., 101.]]),
    ([[[1.5, -2.0, 0.5], [7.0, 8.0, 9.0]]],
     [[1.5, -2.0, 0.5]]),
    ([[[3., 1.], [0., 0.], [5., 5.], [-1., 2.]],
      [[-4., 4.], [9., 9.], [0., 1.], [2., 2.]],
      [[6., -6.], [1., 1.], [1., 1.], [7., 7.]]],
     [[3., 1.], [-4., 4.], [6., -6.]]),
]

# --- Pooler: (d, W, b, c, expected tanh(W c + b)) ---------------------------------------------------
# W is symmetric, so a layer that computes c @ W and one that computes W @ c agree.
POOLER_CASES = [
    (2, [[0.5, 1.0], [1.0, -0.5]], [0.25, -0.25],
     [[1.0, 0.0], [0.0, -1.0], [2.0, 1.0]],
     [[0.6351, 0.6351], [-0.6351, 0.2449], [0.9780, 0.8483]]),
    (3, [[2.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 0.5]], [0.0, 1.0, -1.0],
     [[0.5, 1.0, 2.0], [-1.0, 0.0, 4.0]],
     [[0.7616, 0.0, 0.0], [-0.9640, 0.7616, 0.7616]]),
]

# --- mean_pool: (H, mask, expected) -----------------------------------------------------------------
# The first case is square (n = d), so a mask lined up with the wrong axis still broadcasts and the
# check can say what happened; padding holds large values, so any padding in the result shows.
MEAN_CASES = [
    ([[[1., 2., 3.], [3., 6., -3.], [90., 90., 90.]],
      [[0., 3., 6.], [3., 0., -6.], [-3., -3., 3.]]],
     [[T, T, F], [T, T, T]],
     [[2., 4., 0.], [0., 0., 1.]]),
    ([[[1., -1.], [2., -2.], [3., -3.], [6., -6.]],
      [[-5., 5.], [40., 40.], [40., 40.], [40., 40.]],
      [[2., 0.], [0., 2.], [-70., -70.], [-70., -70.]]],
     [[T, T, T, T], [T, F, F, F], [T, T, F, F]],
     [[3., -3.], [-5., 5.], [1., 1.]]),
]

# --- max_pool: (H, mask, expected) ------------------------------------------------------------------
# Row 0 of each case has only negative real features, so a zero fill at the padding wins the max.
MAX_CASES = [
    ([[[-3., -1., -4.], [-2., -5., -6.], [9., 9., 9.]],
      [[1., -2., -8.], [-1., -3., -7.], [0., -4., -9.]]],
     [[T, T, F], [T, T, T]],
     [[-2., -1., -4.], [1., -2., -7.]]),
    ([[[-7., -8.], [5., 5.], [5., 5.], [5., 5.]],
      [[1., -1.], [-2., 2.], [0., 0.], [3., -3.]],
      [[-1., -9.], [-6., -2.], [0., 0.], [0., 0.]]],
     [[T, F, F, F], [T, T, T, T], [T, T, F, F]],
     [[-7., -8.], [3., 2.], [-1., -2.]]),
]


def _close(a, b, atol=1e-4) -> bool:
    return isinstance(a, torch.Tensor) and a.shape == b.shape and torch.allclose(a.float(), b.float(), atol=atol)


def _where(H: torch.Tensor, mask: torch.Tensor | None = None) -> str:
    B, n, d = H.shape
    text = f" for H of shape ({B}, {n}, {d})"
    if mask is not None:
        text += f" with lengths {mask.bool().sum(1).tolist()}"
    return text


# --- cls_pool ----------------------------------------------------------------------------------------
def cls_pool(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(H)` on each case and name the mistake if the pooled vectors are wrong."""
    require_function(fn, "cls_pool")
    cases = CLS_CASES if cases is None else cases
    for H, expected in cases:
        H = torch.as_tensor(H, dtype=torch.float32)
        expected = torch.as_tensor(expected, dtype=torch.float32)
        before = H.clone()
        out = call(fn, "cls_pool", H)
        _diagnose_cls(out, H, expected)
        if not torch.equal(H, before):
            fail("cls_pool changed the H it was given; pooling must only read H.")
    passed("cls_pool", len(cases))


def _diagnose_cls(out, H: torch.Tensor, expected: torch.Tensor) -> None:
    B, n, d = H.shape
    where = _where(H)
    if isinstance(out, torch.Tensor) and tuple(out.shape) != (B, d):
        if _close(out, H[0]):
            fail(f"cls_pool returned H[0], shape {tuple(out.shape)}{where}: that is the first sequence "
                 "of the batch with all its positions. [CLS] is position 0 of every sequence: index "
                 "the position axis, H[:, 0].")
        if _close(out, H[:, :1]):
            fail(f"cls_pool returned shape {tuple(out.shape)}{where}: it kept the position axis. "
                 f"Index position 0 so that the result is (B, d) = ({B}, {d}).")
        if tuple(out.shape) == (B, n):
            fail(f"cls_pool returned shape {tuple(out.shape)}{where}: it indexed the feature axis, "
                 "not the position axis. H is (B, n, d); position 0 is H[:, 0].")
    require_tensor(out, "cls_pool", (B, d), meaning=f" (one vector per sequence){where}")
    if _close(out, expected, atol=1e-6):
        return
    if _close(out, H[:, -1], atol=1e-6):
        fail(f"cls_pool took the last position, H[:, -1]{where}. [CLS] is the first token: position 0. "
             "(In a padded batch the last position is usually padding.)")
    if n == d and _close(out, H[:, :, 0], atol=1e-6):
        fail(f"cls_pool indexed the feature axis, H[:, :, 0]{where}: that is feature 0 of every position, "
             "not the vector at position 0. H is (B, n, d); the position axis is the second one.")
    for i in range(1, n - 1):
        if _close(out, H[:, i], atol=1e-6):
            fail(f"cls_pool took position {i}{where}; [CLS] sits at position 0 (counting starts at 0).")
    if _close(out, H.mean(1)):
        fail(f"cls_pool averaged over the positions{where}: that is mean pooling (and it counts "
             "padding too). [CLS] pooling takes the vector at position 0 only.")
    if _close(out, H.amax(1)):
        fail(f"cls_pool took a maximum over the positions{where}; [CLS] pooling takes position 0 only.")
    fail(f"cls_pool returned {out.tolist()}{where}; position 0 of each row is {expected.tolist()}.")


# --- Pooler ------------------------------------------------------------------------------------------
def Pooler(cls, cases: Sequence | None = None) -> None:
    """Build `cls(d)`, load known weights into it and name the mistake if `forward(c)` is wrong."""
    if isinstance(cls, nn.Module):
        fail("this check takes your class Pooler itself, e.g. check.Pooler(Pooler); you passed an "
             "instance (a built module).")
    require_function(cls, "Pooler")
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        fail("Pooler must be a class that subclasses nn.Module: `class Pooler(nn.Module): ...`.")
    cases = POOLER_CASES if cases is None else cases
    for d, W, b, c, expected in cases:
        W = torch.as_tensor(W, dtype=torch.float32)
        b = torch.as_tensor(b, dtype=torch.float32)
        c = torch.as_tensor(c, dtype=torch.float32)
        expected = torch.as_tensor(expected, dtype=torch.float32)
        before = c.clone()
        ran = drive(drive_pooler, cls, d, W, b, c)
        out, c_after = ran["out"], ran["c_after"]
        # The c the forward pass left behind (the same tensor in a notebook): the diagnosis reads it
        # as the check always has; `expected` is fixed by the case, so it cannot make a wrong output pass.
        same_shape = isinstance(c_after, torch.Tensor) and c_after.shape == before.shape
        _diagnose_pooler(out, d, W, b, c_after if same_shape else before, expected)
        if not (same_shape and torch.equal(c_after, before)):
            fail("Pooler.forward changed the c it was given; build a new tensor instead.")
    passed("Pooler", len(cases))


def drive_pooler(cls, d: int, W: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> dict:
    """Build `cls(d)`, load W and b into its (d, d) weight and (d,) bias, and run `forward(c)` in eval
    mode without gradients. Returns {"out": the output, "c_after": c after the call}."""
    pooler = call(cls, "Pooler", d)
    _load_pooler(pooler, d, W, b)
    pooler.eval()
    with torch.no_grad():
        try:
            out = call(pooler, "Pooler.forward", c)
        except CheckFailed as err:
            fail(f"{err}\nPooler.forward receives c, the [CLS] vector already pooled by cls_pool, "
                 f"shape (B, d) = {tuple(c.shape)}: apply the dense layer and tanh to c as it is.")
    return {"out": out, "c_after": c}


def _load_pooler(pooler: nn.Module, d: int, W: torch.Tensor, b: torch.Tensor) -> None:
    params = list(pooler.parameters())
    total = sum(p.numel() for p in params)
    want = d * d + d
    if total == d * d and any(tuple(p.shape) == (d, d) for p in params):
        fail(f"Pooler({d}) has {total} parameters, a dense weight and no bias. The pooler is "
             f"tanh(W c + b): give the dense layer its bias, {d}·{d} + {d} = {want} parameters.")
    if total != want:
        shapes = [tuple(p.shape) for p in params]
        fail(f"Pooler({d}) has {total} parameters {shapes}; a pooler is one dense layer d → d with a "
             f"bias: {d}·{d} + {d} = {want} parameters (nn.Linear(d, d)).")
    weights = [p for p in params if tuple(p.shape) == (d, d)]
    biases = [p for p in params if tuple(p.shape) == (d,)]
    if len(weights) != 1 or len(biases) != 1:
        fail(f"Pooler({d}) should hold a ({d}, {d}) weight and a ({d},) bias; it holds "
             f"{[tuple(p.shape) for p in params]}.")
    if not (weights[0].requires_grad and biases[0].requires_grad):
        fail("the pooler's weight and bias must be trainable parameters (requires_grad=True).")
    with torch.no_grad():
        weights[0].copy_(W)
        biases[0].copy_(b)


def _diagnose_pooler(out, d: int, W: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
                     expected: torch.Tensor) -> None:
    B = c.shape[0]
    where = f" for c of shape ({B}, {d})"
    if isinstance(out, torch.Tensor) and tuple(out.shape) in ((B,), (d,)) and out.dim() == 1:
        fail(f"Pooler.forward returned shape {tuple(out.shape)}{where}. Its input c is the [CLS] vector, "
             "already pooled, shape (B, d): do not take position 0 again, apply the dense layer to c.")
    require_tensor(out, "Pooler.forward", (B, d), meaning=f" (B, d){where}")
    if _close(out, expected):
        return
    pre = c @ W.T + b
    if _close(out, pre):
        fail(f"Pooler.forward returns W c + b with no tanh{where}. BERT's pooler squashes the dense "
             "layer's output with tanh: tanh(W c + b).")
    if _close(out, torch.relu(pre)):
        fail(f"Pooler.forward uses ReLU instead of tanh{where}. The pooler is tanh(W c + b): its "
             "outputs lie in (−1, 1) and keep their sign.")
    if _close(out, torch.sigmoid(pre)):
        fail(f"Pooler.forward uses a sigmoid instead of tanh{where}. The pooler is tanh(W c + b), "
             "centred on 0 with outputs in (−1, 1); a sigmoid gives (0, 1).")
    if _close(out, torch.nn.functional.gelu(pre)):
        fail(f"Pooler.forward uses GELU instead of tanh{where}; the pooler is tanh(W c + b).")
    if _close(out, torch.tanh(c @ W.T)):
        fail(f"Pooler.forward leaves out the bias{where}: the pooler is tanh(W c + b).")
    if _close(out, torch.tanh(c) @ W.T + b):
        fail(f"Pooler.forward applies tanh before the dense layer{where}; it comes after: tanh(W c + b).")
    if _close(out, torch.tanh(c)):
        fail(f"Pooler.forward returns tanh(c){where}: the dense layer W c + b is missing.")
    fail(f"Pooler.forward returned {[[round(v, 4) for v in row] for row in out.tolist()]}{where}; "
         f"with the weights loaded, tanh(W c + b) is {expected.tolist()}.")


# --- mean_pool and max_pool --------------------------------------------------------------------------
def _mask_variants(mask: torch.Tensor):
    """The same mask as bool, 0/1 long and 0/1 float: the contract accepts all three."""
    return [("bool", mask), ("0/1 integer", mask.long()), ("0/1 float", mask.float())]


def _run_masked(fn: Callable, name: str, H: torch.Tensor, mask: torch.Tensor, kind: str):
    H_before, mask_before = H.clone(), mask.clone()
    try:
        out = call(fn, name, H, mask)
    except CheckFailed as err:
        message = str(err)
        if kind != "bool":
            fail(f"{message}\nThe mask was a {kind} tensor ({mask.dtype}). A mask may be bool or 0/1 "
                 "numbers: turn it into what you need first, e.g. mask.bool() or mask.to(H.dtype).")
        if "must match the size" in message or "shape" in message:
            fail(f"{message}\nA (B, n) mask must be lined up with H's position axis: mask[:, :, None] "
                 "has shape (B, n, 1) and broadcasts over the d features. mask[:, None, :] lines it "
                 "up with the feature axis instead.")
        raise
    if not torch.equal(H, H_before):
        fail(f"{name} changed the H it was given (an in-place fill or multiply); pooling must only read "
             "H: build new tensors, e.g. with masked_fill (no underscore) or torch.where.")
    if not torch.equal(mask, mask_before):
        fail(f"{name} changed the mask it was given; leave the inputs untouched.")
    return out


def _check_masked_pool(fn: Callable, name: str, cases: Sequence, diagnose: Callable) -> None:
    """Run `fn(H, mask)` on each (H, mask, expected) case, with the mask as bool, 0/1 integer and 0/1
    float, and let `diagnose(out, H, mask, expected, kind)` name the mistake if a result is wrong."""
    require_function(fn, name)
    for H, mask, expected in cases:
        H = torch.as_tensor(H, dtype=torch.float32)
        mask = torch.as_tensor(mask, dtype=torch.bool)
        expected = torch.as_tensor(expected, dtype=torch.float32)
        for kind, m in _mask_variants(mask):
            out = _run_masked(fn, name, H, m, kind)
            diagnose(out, H, mask, expected, kind)
    passed(name, len(cases))


def mean_pool(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(H, mask)` on each case, with bool and 0/1 masks, and name the mistake if it is wrong."""
    _check_masked_pool(fn, "mean_pool", MEAN_CASES if cases is None else cases, _diagnose_mean)


def _diagnose_mean(out, H: torch.Tensor, mask: torch.Tensor, expected: torch.Tensor, kind: str) -> None:
    B, n, d = H.shape
    where = _where(H, mask)
    m = mask.float()
    count = m.sum(1, keepdim=True)
    if isinstance(out, torch.Tensor) and tuple(out.shape) != (B, d):
        if tuple(out.shape) == (B, n):
            fail(f"mean_pool returned shape (B, n) = {tuple(out.shape)}{where}: it averaged over the "
                 "feature axis. Average over the positions (dim=1) to get one d-vector per sequence.")
        if tuple(out.shape) == (B, 1, d):
            fail(f"mean_pool returned shape {tuple(out.shape)}{where}: it kept the position axis "
                 "(keepdim=True on the sum over positions). The result is (B, d).")
    require_tensor(out, "mean_pool", (B, d), meaning=f" (one vector per sequence){where}")
    if not out.is_floating_point():
        fail(f"mean_pool returned dtype {out.dtype}; a mean of float vectors is a float tensor.")
    if _close(out, expected):
        return
    hint = f" (the mask was a {kind} tensor)" if kind != "bool" else ""
    if _close(out, H.mean(1)):
        fail(f"mean_pool averaged over every position, padding included{where}{hint}. Only real tokens "
             "count: sum H over the positions where mask is True and divide by their number.")
    masked_sum = (H * m[:, :, None]).sum(1)
    if _close(out, masked_sum / n):
        fail(f"mean_pool divided by n = {n}, the padded length{where}{hint}. Divide each row by its own "
             "number of real tokens, mask.sum(1).")
    if _close(out, masked_sum):
        fail(f"mean_pool summed the real tokens but did not divide{where}{hint}: a mean divides by the "
             "number of real tokens of the row.")
    if _close(out, H.sum(1) / count):
        fail(f"mean_pool divided by the number of real tokens but summed over every position, "
             f"padding included{where}{hint}. Zero the padding (multiply by the mask) before summing.")
    by_feature = (H.mean(2), (H * m[:, :, None]).sum(2) / count, (H * m[:, :, None]).mean(2))
    if n == d and any(_close(out, x) for x in by_feature):
        fail(f"mean_pool averaged over the feature axis{where}{hint}: average over the positions "
             "(dim=1) to get one d-vector per sequence.")
    if n == d:
        wrong_axis = (H * m[:, None, :]).sum(1)
        if _close(out, wrong_axis / count) or _close(out, wrong_axis / n) or _close(out, wrong_axis):
            fail(f"mean_pool lined the mask up with the feature axis{where}{hint}: mask[:, None, :] (or "
                 "multiplying on the wrong axis) zeroes features, not padding positions. Use "
                 "mask[:, :, None], shape (B, n, 1), so it broadcasts over the d features.")
    for b in range(B):
        if not _close(out[b], expected[b]):
            length = int(mask[b].sum())
            fail(f"mean_pool row {b} (length {length}) is {[round(v, 4) for v in out[b].tolist()]}; the mean "
                 f"of its {length} real vectors is {expected[b].tolist()}{where}{hint}.")


def max_pool(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(H, mask)` on each case, with bool and 0/1 masks, and name the mistake if it is wrong."""
    _check_masked_pool(fn, "max_pool", MAX_CASES if cases is None else cases, _diagnose_max)


def _diagnose_max(out, H: torch.Tensor, mask: torch.Tensor, expected: torch.Tensor, kind: str) -> None:
    B, n, d = H.shape
    where = _where(H, mask)
    if isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out):
        fail(f"max_pool returned a pair (values, indices){where}: H.max(dim=1) gives both. Return only "
             "the values: .values (or use H.amax(dim=1)).")
    if isinstance(out, torch.Tensor) and tuple(out.shape) != (B, d):
        if tuple(out.shape) == (B, n):
            fail(f"max_pool returned shape (B, n) = {tuple(out.shape)}{where}: it took the maximum over the "
                 "features. Take it over the positions (dim=1).")
        if tuple(out.shape) == (B, 1, d):
            fail(f"max_pool returned shape {tuple(out.shape)}{where}: it kept the position axis. "
                 "The result is (B, d).")
    require_tensor(out, "max_pool", (B, d), meaning=f" (one vector per sequence){where}")
    if _close(out, expected):
        return
    hint = f" (the mask was a {kind} tensor)" if kind != "bool" else ""
    m = mask[:, :, None]
    if _close(out, (H * m).amax(1)) or _close(out, H.masked_fill(~m, 0.0).amax(1)):
        fail(f"max_pool filled the padding with zeros{where}{hint}. When every real value of a feature "
             "is negative, the 0 of a padding position wins the max. Fill padding with -inf (or "
             "torch.finfo(H.dtype).min) before taking the max.")
    if _close(out, H.amax(1)):
        fail(f"max_pool took the max over every position, padding included{where}{hint}; padding "
             "positions must never win. Fill them with -inf before the max.")
    if n == d:
        wrong = H.masked_fill(~mask[:, None, :], float("-inf")).amax(1)
        wrong_zero = (H * mask[:, None, :]).amax(1)
        if _close(out, wrong) or _close(out, wrong_zero):
            fail(f"max_pool lined the mask up with the feature axis{where}{hint}: mask[:, None, :] hides "
                 "features, not padding positions. Use mask[:, :, None], shape (B, n, 1).")
    if n == d:
        filled = H.masked_fill(~m, float("-inf"))
        if any(_close(out, x) for x in (filled.amax(2), H.amax(2), (H * m).amax(2))):
            fail(f"max_pool took the maximum over the features (dim=2){where}{hint}; take it over the "
                 "positions (dim=1), so that each of the d features keeps its own maximum.")
    if bool(torch.isinf(out).any()):
        fail(f"max_pool returned -inf or inf{where}{hint}: a row's maximum came from a filled position. "
             "Every row has real tokens, so its max must be a real value.")
    for b in range(B):
        if not _close(out[b], expected[b]):
            length = int(mask[b].sum())
            fail(f"max_pool row {b} (length {length}) is {out[b].tolist()}; the feature-wise max of its "
                 f"{length} real vectors is {expected[b].tolist()}{where}{hint}.")


__all__ = ["cls_pool", "Pooler", "mean_pool", "max_pool", "CheckFailed"]
