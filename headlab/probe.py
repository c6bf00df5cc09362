"""A linear probe: how much of a label can a straight line read off frozen features?

The probe is a class-balanced, L2-regularised logistic regression on standardised features, fitted
to convergence with L-BFGS (checked: an unconverged fit is an error), with nothing random, so its score
does not depend on a training budget. Its L2 penalty makes it a strong reading of the features, not an
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
                 test_y: torch.Tensor, l2: float = 1e-2, steps: int = 200) -> ProbeResult:
    """Fit on (train_X (N, d), train_y (N,)), score on the test pair."""
    train_X, test_X = train_X.detach().double(), test_X.detach().double()
    mu, sigma = train_X.mean(0), train_X.std(0) + 1e-6
    Xtr, Xte = (train_X - mu) / sigma, (test_X - mu) / sigma
    K = int(max(train_y.max(), test_y.max())) + 1
    counts = torch.bincount(train_y, minlength=K).double()
    class_weight = counts.sum() / (K * counts.clamp(min=1))  # each class weighs the same in the loss
    W = torch.zeros(Xtr.shape[1], K, dtype=torch.double, requires_grad=True)
    b = torch.zeros(K, dtype=torch.double, requires_grad=True)
    opt = torch.optim.LBFGS([W, b], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(Xtr @ W + b, train_y, weight=class_weight) + l2 * (W ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
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
