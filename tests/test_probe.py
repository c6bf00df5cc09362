import pytest
import torch

from headlab.probe import linear_probe


def separable(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(200, 16, generator=g)
    y = (X[:, 0] > 0).long()
    return X[:100], y[:100], X[100:], y[100:]


def test_a_converged_probe_reads_a_linear_label():
    assert linear_probe(*separable()).balanced_accuracy > 0.85


def test_a_probe_stopped_before_convergence_is_an_error():
    """Its score would describe the fit, not the features (the lessons say "fitted to convergence")."""
    with pytest.raises(RuntimeError, match="did not converge"):
        linear_probe(*separable(), steps=3)
