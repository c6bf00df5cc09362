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


def plain_fit(X, y, K, run):
    """(W, b) of the L2-regularised (1e-2), unweighted logistic regression on double X (N, d) and y (N,),
    both starting at zero, fitted by run(params, closure)."""
    import torch.nn.functional as F

    W = torch.zeros(X.shape[1], K, dtype=torch.double, requires_grad=True)
    b = torch.zeros(K, dtype=torch.double, requires_grad=True)

    def closure():
        W.grad = b.grad = None
        loss = F.cross_entropy(X @ W + b, y) + 1e-2 * (W ** 2).sum()
        loss.backward()
        return loss
    run([W, b], closure)
    return W.detach(), b.detach()


@pytest.mark.parametrize("seed, max_iter, history_size", [(0, 200, 100), (1, 7, 100), (2, 60, 3)])
def test_lbfgs_steps_exactly_like_torch_lbfgs(seed, max_iter, history_size):
    """The probe's own L-BFGS (it spares the lessons torch.optim's import of torch._dynamo) gives
    torch.optim.LBFGS's weights to the last bit: converged, stopped early, and with a short history."""
    from headlab.probe import lbfgs

    g = torch.Generator().manual_seed(seed)
    X, y = torch.randn(300, 12, generator=g).double(), torch.randint(0, 3, (300,), generator=g)

    ours = plain_fit(X, y, 3, lambda params, closure: lbfgs(params, closure, max_iter=max_iter,
                                                             history_size=history_size))
    theirs = plain_fit(X, y, 3, lambda params, closure: torch.optim.LBFGS(
        params, max_iter=max_iter, history_size=history_size, line_search_fn="strong_wolfe").step(closure))
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))


def imbalanced(seed: int = 0):
    """About one example in five of class 1, and the classes overlap, so the weighting matters."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(1000, 8, generator=g)
    y = (X[:, 0] + 0.8 * torch.randn(1000, generator=g) > 1.0).long()
    return X[:500], y[:500], X[500:], y[500:]


def test_the_unweighted_probe_fits_the_plain_cross_entropy():
    """class_weight=None is the loss a head trained with F.cross_entropy minimises: the same fit by
    torch.optim.LBFGS on that loss predicts exactly the same test labels."""
    from headlab.metrics import accuracy, balanced_accuracy, f1_score

    train_X, train_y, test_X, test_y = imbalanced()
    mu, sigma = train_X.double().mean(0), train_X.double().std(0) + 1e-6   # the probe standardises
    Xtr, Xte = (train_X.double() - mu) / sigma, (test_X.double() - mu) / sigma
    W, b = plain_fit(Xtr, train_y, 2, lambda params, closure: torch.optim.LBFGS(
        params, max_iter=200, line_search_fn="strong_wolfe").step(closure))
    pred = (Xte @ W + b).argmax(-1)
    expected = (accuracy(pred, test_y), balanced_accuracy(pred, test_y), f1_score(pred, test_y))
    r = linear_probe(train_X, train_y, test_X, test_y, class_weight=None)
    assert (r.accuracy, r.balanced_accuracy, r.minority_f1) == expected


def test_weighting_the_classes_trades_accuracy_for_balanced_accuracy():
    """What lesson 03 measures on its reviews, here on data built for it: the balanced probe finds more of
    the minority class, so its balanced accuracy rises and its accuracy falls."""
    data = imbalanced()
    balanced, plain = linear_probe(*data), linear_probe(*data, class_weight=None)
    assert balanced.balanced_accuracy > plain.balanced_accuracy + 0.05
    assert balanced.accuracy < plain.accuracy


def test_an_unknown_class_weight_is_an_error():
    with pytest.raises(ValueError, match="class_weight"):
        linear_probe(*separable(), class_weight="inverse")
