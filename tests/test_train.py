"""headlab.train.fit: it trains modules, in train mode, each Parameter once, and leaves them in eval mode."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from headlab.train import fit, minibatches

torch.set_num_threads(1)


class Tied(nn.Module):
    """A head whose output matrix is the embedding's own Parameter (weight tying), with dropout."""

    def __init__(self, embedding: nn.Embedding):
        super().__init__()
        self.embedding, self.drop = embedding, nn.Dropout(0.5)

    def forward(self, h):
        return self.drop(h) @ self.embedding.weight.T


def tied_pair(seed=0):
    torch.manual_seed(seed)
    embedding = nn.Embedding(7, 4)
    return embedding, Tied(embedding)


def loss_of(embedding, head):
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    return lambda step: F.cross_entropy(head(embedding(ids)).flatten(0, 1), ids.flatten())


def test_modules_train_while_stepping_and_are_in_eval_mode_after():
    embedding, head = tied_pair()
    seen = []

    def loss(step):
        seen.append((embedding.training, head.training, head.drop.training))
        return loss_of(embedding, head)(step)

    fit([embedding, head], loss, 3, progress=False)
    assert seen == [(True, True, True)] * 3
    assert not any(m.training for m in [*embedding.modules(), *head.modules()]), "dropout is off after fit"


def test_a_single_module_is_accepted_and_evaluate_runs_in_eval_mode():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Dropout(0.5), nn.Linear(3, 1))
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    history = fit(model, lambda step: F.mse_loss(model(x), y), 4, progress=False,
                  evaluate={"training": lambda: float(model.training)}, eval_every=2)
    assert history.evals["training"] == [(2, 0.0), (4, 0.0)]
    assert len(history.losses) == 4 and not model.training


def test_a_parameter_shared_by_two_modules_is_optimised_once():
    embedding, head = tied_pair()
    start = copy.deepcopy(embedding.weight.detach())

    def reference(duplicated):
        # The same steps by hand, with AdamW given the tied Parameter once (or, wrongly, twice).
        ref_embedding, ref_head = tied_pair()
        ref_head.train()
        params = [ref_embedding.weight, *([ref_head.embedding.weight] if duplicated else [])]
        opt = torch.optim.AdamW(params, lr=3e-3, weight_decay=0.01)
        loss = loss_of(ref_embedding, ref_head)
        torch.manual_seed(1)                    # the same dropout masks as fit's run below
        for step in range(5):
            value = loss(step)
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
        return ref_embedding.weight.detach()

    torch.manual_seed(1)
    fit([embedding, head], loss_of(embedding, head), 5, lr=3e-3, weight_decay=0.01, progress=False)
    assert head.embedding.weight is embedding.weight
    assert not torch.equal(embedding.weight, start)
    assert torch.equal(embedding.weight.detach(), reference(duplicated=False)), "bit-identical to AdamW on it once"
    with pytest.warns(UserWarning):             # torch warns about a duplicated parameter, then steps it twice
        twice = reference(duplicated=True)
    assert not torch.equal(twice, embedding.weight.detach())


def test_only_parameters_that_require_grad_move():
    torch.manual_seed(0)
    frozen, head = nn.Linear(3, 3), nn.Linear(3, 1)
    frozen.requires_grad_(False)
    before = copy.deepcopy(frozen.state_dict())
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    fit([frozen, head], lambda step: F.mse_loss(head(frozen(x)), y), 3, progress=False)
    assert all(torch.equal(before[k], v) for k, v in frozen.state_dict().items())
    assert not frozen.training


@pytest.mark.parametrize("wrong", [lambda m: m.parameters(), lambda m: list(m.parameters()), lambda m: None])
def test_parameters_instead_of_modules_is_a_clear_error(wrong):
    model = nn.Linear(3, 1)
    with pytest.raises(TypeError, match="module or a list of modules"):
        fit(wrong(model), lambda step: model(torch.ones(1, 3)).sum(), 1, progress=False)


def test_minibatches_cover_every_index_once_per_epoch():
    batches = minibatches(10, 5, seed=0)
    first_epoch = torch.cat([next(batches), next(batches)])
    assert sorted(first_epoch.tolist()) == list(range(10))


@pytest.mark.parametrize("lr, weight_decay", [(3e-3, 0.01), (0.5, 0.0), (4e-3, 0.01)])
def test_fit_steps_exactly_like_torch_adamw(lr, weight_decay):
    """fit's own AdamW (it spares every lesson torch.optim's import of torch._dynamo) gives torch.optim.AdamW's
    weights to the last bit, with a frozen parameter, a tied one and dropout in the way."""
    def train(optimiser):
        embedding, head = tied_pair(seed=3)
        layer = nn.Linear(4, 4)
        layer.bias.requires_grad_(False)
        modules = [embedding, head, layer]
        params = list({id(p): p for m in modules for p in m.parameters() if p.requires_grad}.values())
        opt = optimiser(params, lr=lr, weight_decay=weight_decay)
        g = torch.Generator().manual_seed(1)
        torch.manual_seed(2)                          # the dropout's draws
        for _ in range(40):
            ids = torch.randint(0, 7, (5,), generator=g)
            loss = F.cross_entropy(head(layer(embedding(ids))), torch.randint(0, 7, (5,), generator=g))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return [p.detach().clone() for m in modules for p in m.parameters()]

    from headlab.train import AdamW
    ours, theirs = train(AdamW), train(torch.optim.AdamW)
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))
