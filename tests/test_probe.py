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


@pytest.mark.parametrize("seed, max_iter, history_size", [(0, 200, 100), (1, 7, 100), (2, 60, 3)])
def test_lbfgs_steps_exactly_like_torch_lbfgs(seed, max_iter, history_size):
    """The probe's own L-BFGS (it spares the lessons torch.optim's import of torch._dynamo) gives
    torch.optim.LBFGS's weights to the last bit: converged, stopped early, and with a short history."""
    import torch.nn.functional as F

    from headlab.probe import lbfgs

    g = torch.Generator().manual_seed(seed)
    X, y = torch.randn(300, 12, generator=g).double(), torch.randint(0, 3, (300,), generator=g)

    def fit(run):
        W = torch.zeros(12, 3, dtype=torch.double, requires_grad=True)
        b = torch.zeros(3, dtype=torch.double, requires_grad=True)

        def closure():
            W.grad = b.grad = None
            loss = F.cross_entropy(X @ W + b, y) + 1e-2 * (W ** 2).sum()
            loss.backward()
            return loss
        run([W, b], closure)
        return W.detach(), b.detach()

    ours = fit(lambda params, closure: lbfgs(params, closure, max_iter=max_iter, history_size=history_size))
    theirs = fit(lambda params, closure: torch.optim.LBFGS(params, max_iter=max_iter, history_size=history_size,
                                                           line_search_fn="strong_wolfe").step(closure))
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))
