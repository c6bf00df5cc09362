"""A linear probe: how much of a label can a straight line read off frozen features?

The probe is a class-balanced, L2-regularised logistic regression on standardised features, fitted
to convergence with L-BFGS (checked: an unconverged fit is an error), with nothing random, so its score
does not depend on a training budget. `class_weight=None` fits the plain, unweighted cross-entropy
instead: the loss a head trained with `F.cross_entropy` minimises, for comparing the probe with such
heads (the balanced probe trades accuracy for balanced accuracy, so it would favour the probe on that
column; lesson 03 measures both). Its L2 penalty makes it a strong reading of the features, not an
upper bound on what a straight line can read. It is the measuring instrument of the toy-world tests and
of the lessons that compare frozen and fine-tuned backbones.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .metrics import accuracy, balanced_accuracy, f1_score


@dataclass
class ProbeResult:
    accuracy: float
    balanced_accuracy: float
    minority_f1: float  # F1 of class 1


def linear_probe(train_X: torch.Tensor, train_y: torch.Tensor, test_X: torch.Tensor,
                 test_y: torch.Tensor, l2: float = 1e-2, steps: int = 200,
                 class_weight: str | None = "balanced") -> ProbeResult:
    """Fit on (train_X (N, d), train_y (N,)), score on the test pair. `class_weight`: "balanced" weighs
    each class the same in the loss (scikit-learn's name for it), None weighs each example the same."""
    if class_weight not in ("balanced", None):
        raise ValueError(f'class_weight must be "balanced" or None, not {class_weight!r}')
    train_X, test_X = train_X.detach().double(), test_X.detach().double()
    mu, sigma = train_X.mean(0), train_X.std(0) + 1e-6
    Xtr, Xte = (train_X - mu) / sigma, (test_X - mu) / sigma
    K = int(max(train_y.max(), test_y.max())) + 1
    counts = torch.bincount(train_y, minlength=K).double()
    weight = counts.sum() / (K * counts.clamp(min=1)) if class_weight else None  # each class weighs the same
    W = torch.zeros(Xtr.shape[1], K, dtype=torch.double, requires_grad=True)
    b = torch.zeros(K, dtype=torch.double, requires_grad=True)

    def closure():
        W.grad = b.grad = None
        loss = F.cross_entropy(Xtr @ W + b, train_y, weight=weight) + l2 * (W ** 2).sum()
        loss.backward()
        return loss

    lbfgs([W, b], closure, max_iter=steps)
    # A score from an unconverged fit would describe the fit, not the features: the gradient at the
    # fitted weights must be near zero.
    closure()
    gradient = max(W.grad.abs().max().item(), b.grad.abs().max().item())
    if gradient > 1e-4:
        raise RuntimeError(f"the linear probe did not converge in {steps} L-BFGS iterations "
                           f"(largest gradient {gradient:.1e})")
    with torch.no_grad():
        pred = (Xte @ W + b).argmax(-1)
    return ProbeResult(accuracy(pred, test_y), balanced_accuracy(pred, test_y), f1_score(pred, test_y))


@torch.no_grad()
def lbfgs(params: list[torch.Tensor], closure, max_iter: int, history_size: int = 100) -> None:
    """torch.optim.LBFGS(params, max_iter=max_iter, line_search_fn="strong_wolfe").step(closure), the same
    operations in the same order (bit-identical weights: tests/test_probe.py), without the optimiser object.

    Why: constructing any torch optimiser imports torch._dynamo, the compiler, which cost the lessons that
    probe about 0.5 s and 70 MiB of kernel memory (measured 5 Dec, torch 2.13) for a loop that compiles
    nothing. The line search is torch's own (`torch.optim.lbfgs._strong_wolfe`); where a torch lacks it,
    torch.optim.LBFGS itself runs.
    """
    try:
        from torch.optim.lbfgs import _strong_wolfe
    except ImportError:  # pragma: no cover - every torch >= 1.2 has it
        with torch.enable_grad():
            opt = torch.optim.LBFGS(params, max_iter=max_iter, line_search_fn="strong_wolfe",
                                    history_size=history_size)
            opt.step(closure)
        return
    closure = torch.enable_grad()(closure)
    max_eval, tolerance_grad, tolerance_change = max_iter * 5 // 4, 1e-7, 1e-9   # LBFGS's defaults

    def flat_grad() -> torch.Tensor:
        return torch.cat([p.grad.view(-1) if p.grad is not None else p.new(p.numel()).zero_() for p in params], 0)

    def add(step_size, update) -> None:
        offset = 0
        for p in params:
            p.add_(update[offset:offset + p.numel()].view_as(p), alpha=step_size)
            offset += p.numel()

    def evaluate(x, t, d):
        add(t, d)
        loss = float(closure())
        g = flat_grad()
        for p, saved in zip(params, x):
            p.copy_(saved)
        return loss, g

    loss = float(closure())
    evals = 1
    g = flat_grad()
    if g.abs().max() <= tolerance_grad:
        return
    old_dirs, old_stps, ro, al = [], [], [], [None] * history_size
    d = t = H_diag = prev_g = None
    for n_iter in range(1, max_iter + 1):
        if n_iter == 1:
            d, H_diag = g.neg(), 1
        else:
            y, s = g.sub(prev_g), d.mul(t)
            ys = y.dot(s)
            if ys > 1e-10:
                if len(old_dirs) == history_size:
                    old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                old_dirs.append(y), old_stps.append(s), ro.append(1.0 / ys)
                H_diag = ys / y.dot(y)
            q = g.neg()
            for i in range(len(old_dirs) - 1, -1, -1):
                al[i] = old_stps[i].dot(q) * ro[i]
                q.add_(old_dirs[i], alpha=-al[i])
            d = r = torch.mul(q, H_diag)
            for i in range(len(old_dirs)):
                be_i = old_dirs[i].dot(r) * ro[i]
                r.add_(old_stps[i], alpha=al[i] - be_i)
        if prev_g is None:
            prev_g = g.clone(memory_format=torch.contiguous_format)
        else:
            prev_g.copy_(g)
        prev_loss = loss
        t = min(1.0, 1.0 / g.abs().sum()) * 1 if n_iter == 1 else 1          # lr = 1, LBFGS's default
        gtd = g.dot(d)
        if gtd > -tolerance_change:
            break
        x_init = [p.clone(memory_format=torch.contiguous_format) for p in params]
        loss, g, t, ls_evals = _strong_wolfe(evaluate, x_init, t, d, loss, g, gtd, max_ls=max_eval - evals)
        add(t, d)
        evals += ls_evals
        if n_iter == max_iter or evals >= max_eval or g.abs().max() <= tolerance_grad:
            break
        if d.mul(t).abs().max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
            break
