"""Dropout → Linear in train mode, judged from what the Linear layer received (lessons 03 and 04).

The check loads W = [I; R] into the head's Linear layer (K ≥ d rows, the first d of them the identity) and
feeds inputs in [1, 2), away from 0. The first d logits minus the bias are then exactly what the Linear layer
received, so one train-mode pass shows where dropout sits, what share it zeroes, how it scales the rest and
whether it drops features one by one, whatever the head's code.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F

from . import heads
from .core import fail
from .engine import show


def identity_on_top(d: int, K: int, g: torch.Generator) -> torch.Tensor:
    """A (K, d) weight whose first d rows are the identity, the others random."""
    return torch.cat([torch.eye(d), torch.randn(K - d, d, generator=g) / math.sqrt(d)])


def train_pass(cls, name: str, given: str, x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, p: float | None,
               seed: int, shape: tuple, meaning: str, crashes: Sequence[tuple[str, str, str]] = ()) -> None:
    """Two train-mode passes of `cls(d, K, dropout=p)` (no dropout argument if p is None) holding W =
    identity_on_top(d, K) and b, on x (..., d) in [1, 2): each must have `shape` (`meaning` says it in words), and
    then `judge_train_pass` reads dropout from them."""
    d, K = x.shape[-1], len(b)
    head = f"{name}({d}, {K}" + (")" if p is None else f", dropout={p})")
    out, again = heads.run(cls, name, given, (d, K), seed, [x], [W, b], {} if p is None else {"dropout": p}, True,
                           passes=2, crashes=crashes)["outs"][0]
    if not all(isinstance(o, torch.Tensor) and tuple(o.shape) == shape for o in (out, again)):
        fail(f"in train mode {head} returned {show(out)}; expected {meaning}.", "wrong-shape",
             "In train mode too, forward is dropout then the Linear layer on the input as it is, with no reshape or "
             "pooling: `self.linear(self.dropout(x))`.")
    judge_train_pass(out.reshape(-1, K), again.reshape(-1, K), x.reshape(-1, d), W, b, p, head)


def judge_train_pass(out: torch.Tensor, again: torch.Tensor, x: torch.Tensor, W: torch.Tensor, b: torch.Tensor,
                     p: float | None, head: str) -> None:
    """Two train-mode passes `out`, `again` (N, K) of a head holding W = identity_on_top(d, K) and b, on x (N, d)
    in [1, 2); `p` the dropout it was built with (None: the default, 0.1); `head` names it in messages."""
    d = x.shape[1]
    if torch.equal(out, again):
        fail(f"in train mode two passes of {head} on the same input gave identical outputs: no dropout at all "
             "in training mode. The head is dropout → Linear, a fresh mask on every pass.", "no-dropout-in-training",
             "Build `self.dropout = nn.Dropout(dropout)` in __init__ and apply it in forward, "
             "`self.linear(self.dropout(x))`; nn.Dropout draws a fresh mask on every pass.")
    out, W, b = out.detach().double(), W.double(), b.double()
    seen = out[:, :d] - b[:d]  # what the Linear layer received, if the head is dropout → Linear
    if not torch.allclose(F.linear(seen, W, b), out, atol=1e-4):
        if (zeros := (out == 0).double().mean().item()) > 0.01:  # class scores zeroed: dropout after the Linear
            fail(f"in train mode {zeros:.0%} of the logits of {head} are exactly 0: that is dropout AFTER the "
                 "linear layer, which zeroes class scores; the head applies dropout to its input BEFORE "
                 "the linear layer.", "dropout-after-linear",
                 "Swap the two in forward: `self.linear(self.dropout(x))`, not `self.dropout(self.linear(x))`.")
        fail(f"in train mode the output of {head} is not its Linear layer applied to the (dropped-out) input: "
             "the head is dropout on its input, then the Linear layer, nothing after it.", "not-dropout-then-linear",
             "forward returns `self.linear(self.dropout(x))` and nothing more: no activation, norm or scaling after it.")
    ratio = seen / x.double()
    kept = ratio.abs() > 1e-3
    frac, scales, want = 1 - kept.double().mean().item(), ratio[kept], 0.1 if p is None else p
    if scales.numel() and (scales.max() - scales.min()).item() > 1e-3:
        fail(f"in train mode the features reaching the Linear layer of {head} are not the input times one common "
             "factor (0 or 1/(1 − p)); apply dropout once, to the input, before the Linear.", "uneven-scaling",
             "Use one `nn.Dropout(dropout)` on the input, once, with no scaling or second dropout of your own.")
    # nn.Dropout drops each feature on its own: a whole vector goes with chance p^d. Dropout1d and Dropout2d
    # drop whole channels, which on these shapes are whole vectors (or whole examples).
    whole = (~kept).all(dim=1).double().mean().item()
    # `nn.Dropout(1 - p)`, TensorFlow 1's keep_prob: 1 − p zeroed, each feature on its own, so whole vectors go with
    # chance (1 − p)^d (0.42 at p = 0.25, d = 3: drops-whole-vectors, before). Away from p = 0.5, where 1 − p is p.
    if (p is not None and abs(frac - (1 - want)) < 0.04 and abs(frac - want) > 0.04
            and whole < (frac + frac ** d) / 2):
        fail(f"in train mode {head} zeroed {frac:.2f} of the input features, about 1 − p = {1 - want:.2f}: the "
             "dropout argument is the probability of DROPPING a feature (PyTorch's p), not of keeping it (TensorFlow 1's "
             "keep_prob).", "keep-probability-as-rate", "`nn.Dropout(dropout)`, not `nn.Dropout(1 - dropout)`.")
    if d > 1 and frac > 0.02 and whole > 0.5 * frac:
        fail(f"in train mode {head} dropped whole vectors: {whole:.0%} of its input vectors reached the Linear "
             f"layer as all zeros, while dropout drops each feature on its own (a whole vector of {d} with chance "
             f"p^{d}). nn.Dropout1d and nn.Dropout2d drop whole channels; use nn.Dropout(dropout).",
             "drops-whole-vectors", "Replace `nn.Dropout1d` or `nn.Dropout2d` with `nn.Dropout(dropout)`.")
    if abs(frac - want) > 0.04:
        fixed = p is not None and abs(frac - 0.1) <= 0.04  # the default rate, whatever dropout says
        fail(f"in train mode {head} zeroed {frac:.2f} of the input features; " + (
            "without a dropout argument the default is dropout=0.1: about 0.10 zeroed." if p is None else
            f"with dropout={p} about {p:.2f} should be zeroed" + (
                ". 0.1 is the default: use the dropout argument, `nn.Dropout(dropout)`, not a fixed rate."
                if fixed else ", once, by `nn.Dropout(dropout)` on the head's input.")),
            "wrong-default-dropout" if p is None else "fixed-dropout-rate" if fixed else "wrong-dropout-rate",
            "Give __init__ the parameter `dropout=0.1` and build `nn.Dropout(dropout)` from it, applied once to the "
            "input.")
    scale, unscaled = scales.mean().item(), abs(scales.mean().item() - 1) < 1e-3
    if abs(scale - 1 / (1 - want)) > 1e-3:
        fail(f"in train mode {head} scaled the surviving features by {scale:.3f}; dropout scales them by "
             f"1/(1 − p) = {1 / (1 - want):.3f}" + (", so that their expected value is the same in training and "
             "at inference. nn.Dropout does the scaling for you." if unscaled else "."),
             "unscaled-dropout" if unscaled else "wrong-scale",
             "Use `nn.Dropout(dropout)`, which multiplies the kept features by 1/(1 − p) in train mode, instead of "
             "a dropout of your own.")


__all__ = ["identity_on_top", "train_pass", "judge_train_pass"]
