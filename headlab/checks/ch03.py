"""Checks for lesson 03: SequenceClassifier, head_param_count and untrained_loss.

SequenceClassifier is checked by its behaviour, never against a reference head: a driver
(`drive_sequence_classifier`) builds the head, loads weights W, b chosen by the check into its one
Linear layer and returns its outputs as data. In eval mode the output must be x Wᵀ + b; in train mode
it must be that Linear applied to the input with some features zeroed and the survivors scaled by
1 / (1 − p). The zeroed features are recovered from the output by solving the Linear layer's equations,
which is possible when the layer has more outputs than inputs (K > d).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from .core import CheckFailed, call, call_raw, drive, fail, passed, require_tensor

# (d, num_classes, batch) for the shape and logits checks.
CLASSIFIER_CASES = [(6, 3, 5), (4, 2, 7), (5, 1, 4)]
# (d, K, expected K·d + K), written out by hand.
PARAM_CASES = [(64, 2, 130), (768, 2, 1538), (512, 5, 2565), (3, 1, 4)]
# (K, ln K), written out by hand.
LOSS_CASES = [(2, 0.6931471805599453), (5, 1.6094379124341003), (10, 2.302585092994046)]


# --- SequenceClassifier -----------------------------------------------------------------------------
def sequence_classifier(cls, cases: Sequence | None = None, seed: int = 0) -> None:
    """Build `cls(d, K, dropout=...)` heads and name the mistake if one behaves wrongly."""
    if isinstance(cls, nn.Module):
        fail("this check takes the class SequenceClassifier itself, e.g. "
             "check.sequence_classifier(SequenceClassifier), not a head built from it.")
    if not isinstance(cls, type):
        fail(f"this check takes your class SequenceClassifier itself; you passed a {type(cls).__name__}.")
    cases = CLASSIFIER_CASES if cases is None else cases
    g = torch.Generator().manual_seed(seed)
    for d, K, B in cases:
        _check_eval(cls, d, K, B, g)
    _check_train_dropout(cls, d=4, K=9, p=0.5, g=g)
    _check_train_dropout(cls, d=3, K=6, p=0.25, g=g)
    _check_default_dropout(cls, g)
    passed("SequenceClassifier", len(cases) + 3)


def _weights(d: int, K: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Weights the grader loads into the head's Linear layer, and a seed for its dropout draws."""
    W = torch.randn(K, d, generator=g) / math.sqrt(d)
    b = torch.randn(K, generator=g)
    return W, b, int(torch.randint(0, 2**31 - 1, (1,), generator=g))


def drive_sequence_classifier(cls, d: int, K: int, dropout: float | None, train: bool, x: torch.Tensor,
                              W: torch.Tensor, b: torch.Tensor, seed: int, passes: int) -> dict:
    """Build `cls(d, K, dropout=dropout)` (no dropout argument when it is None), check that it holds one
    nn.Linear(d, K) with a bias and K·d + K parameters, load W and b into that Linear, switch to train
    or eval mode and run `forward(x)` `passes` times without gradients, the global RNG seeded with
    `seed` (and restored afterwards). Returns {"outs": [the outputs], "x_after": x after the passes}."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        head = _build(cls, d, K) if dropout is None else _build(cls, d, K, dropout=dropout)
        lin = _linear(head, d, K)
        with torch.no_grad():
            lin.weight.copy_(W)
            lin.bias.copy_(b)
        head.train(train)
        with torch.no_grad():
            outs = [call(head, "SequenceClassifier.forward", x) for _ in range(passes)]
    return {"outs": outs, "x_after": x}


def _build(cls, d: int, K: int, **kw) -> nn.Module:
    head = call(cls, "SequenceClassifier", d, K, **kw)
    if not isinstance(head, nn.Module):
        fail("SequenceClassifier(...) must build an nn.Module (class SequenceClassifier(nn.Module)), "
             f"got a {type(head).__name__}.")
    return head


def _linear(head: nn.Module, d: int, K: int) -> nn.Linear:
    linears = [m for m in head.modules() if isinstance(m, nn.Linear)]
    if len(linears) != 1:
        fail(f"SequenceClassifier({d}, {K}) holds {len(linears)} nn.Linear layers; the head is "
             f"dropout then ONE nn.Linear(d, num_classes) = nn.Linear({d}, {K}).")
    lin = linears[0]
    if (lin.in_features, lin.out_features) != (d, K):
        fail(f"SequenceClassifier({d}, {K}) has nn.Linear({lin.in_features}, {lin.out_features}); "
             f"it maps d = {d} features to num_classes = {K} scores: nn.Linear({d}, {K}).")
    if lin.bias is None:
        fail(f"the Linear layer of SequenceClassifier({d}, {K}) has no bias (bias=False): a head "
             f"computes W c + b, with K·d + K = {K * d + K} parameters, not {K * d}.")
    n_params = sum(p.numel() for p in head.parameters())
    if n_params != K * d + K:
        fail(f"SequenceClassifier({d}, {K}) has {n_params} parameters; dropout → Linear has "
             f"K·d + K = {K * d + K}.")
    if tuple(lin.weight.shape) != (K, d) or tuple(lin.bias.shape) != (K,):
        fail(f"the Linear layer of SequenceClassifier({d}, {K}) has a weight of shape "
             f"{tuple(lin.weight.shape)} and a bias of shape {tuple(lin.bias.shape)}; "
             f"nn.Linear({d}, {K}) has ({K}, {d}) and ({K},).")
    return lin


def _check_eval(cls, d: int, K: int, B: int, g: torch.Generator) -> None:
    x = torch.randn(B, d, generator=g) * 3
    W, b, seed = _weights(d, K, g)
    before = x.clone()
    ran = drive(drive_sequence_classifier, cls, d, K, 0.5, False, x, W, b, seed, 2)
    out1, out2 = ran["outs"]
    if not _same(ran["x_after"], before):
        fail("SequenceClassifier changed the pooled vectors it was given (an in-place dropout?); "
             "the head must leave its input untouched.")
    shape = (B, K) if K > 1 else (B,)
    where = f" for SequenceClassifier({d}, {K}) on a batch of {B}"
    if K == 1 and isinstance(out1, torch.Tensor) and tuple(out1.shape) == (B, 1):
        fail(f"the regression head (num_classes = 1) returned shape (B, 1) = ({B}, 1){where}; it must "
             f"return (B,) = ({B},), one number per example, to match targets of shape (B,): "
             "squeeze the last dimension (a (B, 1) output against (B,) targets broadcasts to (B, B) in MSE).")
    require_tensor(out1, "SequenceClassifier", shape,
                   meaning=(" (B, K) logits" if K > 1 else " (B,): one score per example") + where)
    if not _same(out1, out2):
        fail(f"in eval mode two passes on the same input gave different outputs{where}: dropout is "
             "still on in eval mode. Use nn.Dropout (it follows head.train()/head.eval()) or "
             "F.dropout(x, p, training=self.training), never training=True.")
    out1 = out1.detach()
    z = F.linear(before, W, b)  # the loaded Linear layer applied to the input
    expected = z if K > 1 else z.squeeze(-1)
    if torch.allclose(out1, expected, atol=1e-5):
        return
    if K > 1:
        if torch.allclose(out1, z.softmax(-1), atol=1e-5) or torch.allclose(out1.sum(-1), torch.ones(B), atol=1e-4):
            fail(f"SequenceClassifier returned probabilities (each row sums to 1){where}: softmax "
                 "inside the head. A head returns raw logits (any real numbers, negative too); "
                 "F.cross_entropy applies log-softmax itself, and a second softmax flattens the gradients.")
        if torch.allclose(out1, z.log_softmax(-1), atol=1e-5):
            fail(f"SequenceClassifier returned log-probabilities (log_softmax){where}. A head returns "
                 "raw logits; F.cross_entropy normalises them itself.")
    if torch.allclose(out1, torch.sigmoid(expected), atol=1e-5):
        fail(f"SequenceClassifier applied a sigmoid{where}: it returns probabilities in (0, 1), "
             "not raw scores. Return the Linear layer's output as it is.")
    if bool((out1 >= 0).all()) and bool((expected < 0).any()):
        fail(f"every output is ≥ 0{where}, yet the Linear layer gives negative scores for this input: "
             "something squashes the logits (ReLU, softmax, abs?). Return raw logits.")
    fail(f"in eval mode SequenceClassifier must return its Linear layer applied to the input "
         f"(dropout does nothing at inference){where}; it returned something else.")


def _same(a, b) -> bool:
    """Two tensors of the same shape and dtype with equal values."""
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape \
        and a.dtype == b.dtype and torch.equal(a, b)


def _check_default_dropout(cls, g: torch.Generator) -> None:
    """dropout=0.1 by default: a zeroed fraction of about 0.1 in train mode."""
    d, K = 4, 9
    x = torch.rand(2000, d, generator=torch.Generator().manual_seed(1)) + 1.0
    W, b, seed = _weights(d, K, g)
    before = x.clone()
    ran = drive(drive_sequence_classifier, cls, d, K, None, True, x, W, b, seed, 1)
    keep, scale = _recover_mask(ran["outs"][0], W, b, before, "SequenceClassifier(4, 9)")
    frac = 1 - keep.float().mean().item()
    if not 0.06 <= frac <= 0.14 or abs(scale - 1 / 0.9) > 1e-3:
        fail(f"SequenceClassifier(d, K) without a dropout argument zeroed {frac:.2f} of the inputs "
             f"(scale {scale:.3f}) in train mode; the default is dropout=0.1: about 0.10 zeroed, "
             "survivors scaled by 1/0.9.")


def _recover_mask(out, W: torch.Tensor, b: torch.Tensor, x: torch.Tensor, where: str):
    """Solve the loaded Linear layer (W, b) for the features it actually received, given the head's
    train-mode output `out` on `x`; return (kept mask, scale)."""
    K = W.shape[0]
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (x.shape[0], K):
        require_tensor(out, "SequenceClassifier", (x.shape[0], K),
                       meaning=f" (B, K) logits in train mode for {where}")
    out = out.detach()
    W, b = W.double(), b.double()
    seen = torch.linalg.lstsq(W, (out.double() - b).T).solution.T  # (B, d): what the Linear got
    residual = (seen @ W.T + b - out.double()).abs().max().item()
    if residual > 1e-3:
        zeroed_logits = (out == 0).float().mean().item()
        if zeroed_logits > 0.01:
            fail(f"in train mode, the output of {where} is not the Linear layer applied to (dropped-out) "
                 f"input features: {zeroed_logits:.0%} of the logits are exactly 0. That is dropout AFTER "
                 "the linear layer, which zeroes class scores; the head applies dropout to the pooled "
                 "vector BEFORE the linear layer.")
        fail(f"in train mode, the output of {where} is not its Linear layer applied to the (dropped-out) "
             "input: the head is dropout on the pooled vector, then the Linear layer, nothing after it.")
    ratio = seen / x.double()
    kept = ratio.abs() > 1e-3
    scales = ratio[kept]
    if kept.all():
        if torch.allclose(ratio, torch.ones_like(ratio), atol=1e-3):
            fail(f"in train mode {where} zeroed nothing: no dropout at all in training mode. "
                 "The head is dropout → Linear: apply nn.Dropout(dropout) to the pooled vector first.")
    if scales.numel() and (scales.max() - scales.min()).item() > 1e-3:
        fail(f"in train mode the features reaching the Linear layer of {where} are not the input "
             "times one common factor (0 or 1/(1 − p)); apply dropout once, to the input, before the Linear.")
    scale = scales.mean().item() if scales.numel() else float("nan")
    return kept, scale


def _check_train_dropout(cls, d: int, K: int, p: float, g: torch.Generator) -> None:
    where = f"SequenceClassifier({d}, {K}, dropout={p})"
    x = torch.rand(2000, d, generator=g) + 1.0  # positive and away from 0, so zeros are dropout's
    W, b, seed = _weights(d, K, g)
    before = x.clone()
    ran = drive(drive_sequence_classifier, cls, d, K, p, True, x, W, b, seed, 2)
    a, b_out = ran["outs"]
    if not _same(ran["x_after"], before):
        fail(f"in train mode {where} changed the pooled vectors it was given (an in-place dropout, "
             "inplace=True?); the head must leave its input untouched.")
    if isinstance(a, torch.Tensor) and isinstance(b_out, torch.Tensor) and torch.equal(a, b_out):
        fail(f"in train mode two passes of {where} on the same input gave identical outputs: no "
             "dropout at all in training mode (or p ignored). The head is dropout → Linear.")
    keep, scale = _recover_mask(a, W, b, before, where)
    frac = 1 - keep.float().mean().item()
    if abs(frac - p) > 0.05:
        fail(f"in train mode {where} zeroed {frac:.2f} of the input features; with dropout={p} about "
             f"{p:.2f} should be zeroed. Use the dropout argument: nn.Dropout(dropout), not a fixed rate.")
    if abs(scale - 1.0) < 1e-3:
        fail(f"in train mode {where} zeroed features but did not scale the survivors by 1/(1 − p) = "
             f"{1 / (1 - p):.3f}: the expected input of the Linear layer then shrinks by (1 − p) in "
             "training only. nn.Dropout does the scaling for you.")
    if abs(scale - 1 / (1 - p)) > 1e-3:
        fail(f"in train mode {where} scaled the surviving features by {scale:.3f}; dropout scales "
             f"them by 1/(1 − p) = {1 / (1 - p):.3f}.")


# --- head_param_count ------------------------------------------------------------------------------
def head_param_count(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(d, K)` and name the mistake if the count is wrong."""
    _require_plain_function(fn, "head_param_count")
    cases = PARAM_CASES if cases is None else cases
    for d, K, expected in cases:
        out = call(fn, "head_param_count", d, K)
        where = f"head_param_count(d={d}, K={K})"
        if isinstance(out, bool) or not isinstance(out, int):
            hint = " (your number is right: return it as an int)" if _as_number(out) == expected else ""
            fail(f"{where} returned a {type(out).__name__}; it must return an int{hint}.")
        if out == expected:
            continue
        if out == K * d:
            fail(f"{where} returned {out} = K·d: the bias is left out. The head also has one bias "
                 f"per class, so K·d + K = {expected}.")
        if out == (d + 1) * (K + 1):
            fail(f"{where} returned {out} = (d + 1)·(K + 1): one row and one column too many. The "
                 f"weight matrix has one row per class (K = {K}) and one column per input feature "
                 f"(d = {d}), and the bias one entry per class: K·d + K = K·(d + 1) = {expected}.")
        if out == K * d + d:
            fail(f"{where} returned {out} = K·d + d: the bias has one entry per class (K = {K}), "
                 f"not one per feature; K·d + K = {expected}.")
        if out == K * d + 1:
            fail(f"{where} returned {out} = K·d + 1: a single bias shared by all classes. Each class "
                 f"has its own bias, so K·d + K = {expected}.")
        if out == d + K:
            fail(f"{where} returned {out} = d + K: the sizes are added, not multiplied. The weight "
                 f"matrix holds one weight per (class, feature) pair, K·d of them, plus K biases: {expected}.")
        if out == d * d + K or out == d * d + d:
            fail(f"{where} returned {out}: that counts a d × d matrix. The head's matrix is "
                 f"K × d (one row per class), plus K biases: {expected}.")
        fail(f"{where} returned {out}; a Linear(d, K) head has K·d weights and K biases: {expected}.")
    passed("head_param_count", len(cases))


# --- untrained_loss --------------------------------------------------------------------------------
def untrained_loss(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(K)` and name the mistake if the value is not ln K."""
    _require_plain_function(fn, "untrained_loss")
    cases = LOSS_CASES if cases is None else cases
    # The learner's values at two more K, only to tell two mistakes apart. Asked for on every run, not
    # only after a wrong value: the grader replays exactly the calls it recorded on the solution.
    extra = {k: _as_number(_quiet_call(fn, k)) for k in (3, 7)}
    for K, expected in cases:
        out = call(fn, "untrained_loss", K)
        where = f"untrained_loss({K})"
        if isinstance(out, torch.Tensor):
            fail(f"{where} returned a tensor; it must return a Python float (use math.log, or .item()).")
        if isinstance(out, bool) or not isinstance(out, (int, float)):
            fail(f"{where} returned a {type(out).__name__}; it must return a float.")
        out = float(out)
        if math.isclose(out, expected, rel_tol=1e-6, abs_tol=1e-9):
            continue
        # Name the formula the function follows: it must match at this K and at two more, so
        # that K = 2 (where 1/K = 1 − 1/K and ln 2 is right) does not blur two mistakes together.
        others = {k: v for k, v in extra.items() if k != K}

        def follows(formula) -> bool:
            return math.isclose(out, formula(K), rel_tol=1e-6, abs_tol=1e-12) and all(
                v is not None and math.isclose(v, formula(k), rel_tol=1e-6, abs_tol=1e-12)
                for k, v in others.items())

        if follows(math.log2):
            fail(f"{where} returned {out:.4f} = log₂ {K}: log base 2 (bits). Cross-entropy in PyTorch "
                 f"uses the natural log (nats): ln {K} = {expected:.4f}.")
        if follows(math.log10):
            fail(f"{where} returned {out:.4f} = log₁₀ {K}: log base 10. Cross-entropy uses the "
                 f"natural log: ln {K} = {expected:.4f}.")
        if follows(lambda k: -math.log(k)):
            fail(f"{where} returned {out:.4f} = −ln {K}: the sign is wrong. A loss is never negative: "
                 f"−ln(1/K) = +ln K = {expected:.4f}.")
        if follows(lambda k: 1 / k):
            fail(f"{where} returned {out:.4f} = 1/K: that is the probability an untrained head gives "
                 f"each class, not the loss. The loss is −ln(1/K) = ln K = {expected:.4f}.")
        if follows(lambda k: 1 - 1 / k):
            fail(f"{where} returned {out:.4f} = 1 − 1/K: that is the error rate of a uniform guess, "
                 f"not its cross-entropy. The loss is −ln(1/K) = ln K = {expected:.4f}.")
        if follows(lambda k: math.log(2)):
            fail(f"{where} returned {out:.4f} = ln 2 for every K: that is the value for two classes only. "
                 f"With K classes each gets probability 1/K, so the loss is ln K = {expected:.4f}.")
        if K >= 2 and follows(lambda k: math.log(k - 1)):
            fail(f"{where} returned ln(K − 1); with K classes each gets probability 1/K, so the loss is ln K.")
        if math.isclose(out, -expected, rel_tol=1e-6):
            fail(f"{where} returned {out:.4f}: the sign is wrong. The loss is −ln(1/K) = +ln K = {expected:.4f}.")
        fail(f"{where} returned {out:.4f}; an untrained head spreads probability 1/K over the K classes, "
             f"so its cross-entropy is −ln(1/K) = ln K = {expected:.4f}.")
    passed("untrained_loss", len(cases))


def _require_plain_function(fn, name: str) -> None:
    if not callable(fn) or isinstance(fn, (type, nn.Module)):
        fail(f"this check takes your function {name} itself, e.g. check.{name}({name}); "
             f"you passed a {type(fn).__name__}.")


def _quiet_call(fn, *args):
    """The learner's value for other inputs, only to tell two mistakes apart; None if it fails."""
    try:
        return call_raw(fn, "untrained_loss", *args)
    except Exception:
        return None


def _as_number(value):
    try:
        return float(value)
    except Exception:
        return None


__all__ = ["sequence_classifier", "head_param_count", "untrained_loss", "CheckFailed"]
