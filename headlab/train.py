"""One small training loop for every lesson: it shows progress and returns what happened."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch
from tqdm.auto import tqdm


@dataclass
class History:
    losses: list[float] = field(default_factory=list)
    evals: dict[str, list[tuple[int, float]]] = field(default_factory=dict)

    @property
    def final_loss(self) -> float:
        return self.losses[-1]

    def smoothed(self, window: int = 20) -> list[float]:
        out, total = [], 0.0
        for i, x in enumerate(self.losses):
            total += x - (self.losses[i - window] if i >= window else 0.0)
            out.append(total / min(i + 1, window))
        return out


def fit(
    modules: torch.nn.Module | list[torch.nn.Module] | tuple[torch.nn.Module, ...],
    loss_fn: Callable[[int], torch.Tensor],
    steps: int,
    lr: float = 3e-3,
    weight_decay: float = 0.01,
    evaluate: dict[str, Callable[[], float]] | None = None,
    eval_every: int = 0,
    desc: str = "training",
    progress: bool = True,
) -> History:
    """Train `modules` (a module or a list of them): minimise `loss_fn(step)` with AdamW for `steps` steps.

    The optimiser gets the modules' parameters that have `requires_grad`, each Parameter once (a tied
    embedding shared by two modules is one Parameter, so it gets one update per step, not two). The same
    modules are in train mode while stepping and back in eval mode at the end, so dropout is never left
    on by accident; `evaluate` callbacks run in eval mode every `eval_every` steps.
    """
    modules = _as_modules(modules)
    params = _trainable_parameters(modules)
    opt = AdamW(params, lr=lr, weight_decay=weight_decay)
    history = History(evals={k: [] for k in (evaluate or {})})
    bar = tqdm(range(steps), desc=desc, disable=not progress, mininterval=0.5)
    for step in bar:
        _set_mode(modules, train=True)
        loss = loss_fn(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        history.losses.append(loss.item())
        if evaluate and eval_every and ((step + 1) % eval_every == 0 or step + 1 == steps):
            _set_mode(modules, train=False)
            with torch.no_grad():
                for name, fn in evaluate.items():
                    history.evals[name].append((step + 1, float(fn())))
        if step % 10 == 0 or step + 1 == steps:
            bar.set_postfix(loss=f"{history.smoothed(10)[-1]:.3f}")
    _set_mode(modules, train=False)
    return history


class AdamW:
    """torch.optim.AdamW's update (its defaults, the single-tensor path torch takes on CPU), step for step the
    same floating-point operations, so training gives the same weights to the last bit (tests/test_train.py).

    Why not torch.optim.AdamW itself: constructing any torch optimiser imports torch._dynamo, the compiler,
    which cost every lesson that trains about 0.5 s and 70 MiB of its kernel before the first step
    (measured 5 Dec, torch 2.13: `python -X importtime`), for a loop that never compiles anything.
    """

    def __init__(self, params: list[torch.nn.Parameter], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01):
        self.params, self.lr, self.betas, self.eps, self.weight_decay = list(params), lr, betas, eps, weight_decay
        self.state: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.steps = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.steps += 1
        (beta1, beta2), lr, step = self.betas, self.lr, float(self.steps)
        bias_correction1, bias_correction2 = 1 - beta1 ** step, 1 - beta2 ** step
        step_size, bias_correction2_sqrt = lr / bias_correction1, bias_correction2 ** 0.5
        for p in self.params:
            if p.grad is None:
                continue
            if id(p) not in self.state:
                self.state[id(p)] = (torch.zeros_like(p, memory_format=torch.preserve_format),
                                     torch.zeros_like(p, memory_format=torch.preserve_format))
            exp_avg, exp_avg_sq = self.state[id(p)]
            if self.weight_decay != 0:
                p.mul_(1 - lr * self.weight_decay)
            exp_avg.lerp_(p.grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)
            p.addcdiv_(exp_avg, denom, value=-step_size)


def _trainable_parameters(modules: list[torch.nn.Module]) -> list[torch.nn.Parameter]:
    """The modules' parameters with `requires_grad`, each Parameter object once, in first-seen order."""
    unique = {id(p): p for m in modules for p in m.parameters() if p.requires_grad}
    return list(unique.values())


def _as_modules(modules) -> list[torch.nn.Module]:
    # The modules are what fit trains and switches between train and eval mode; parameters alone would
    # leave no module to switch, which is how a model once trained with dropout left on.
    listed = [modules] if isinstance(modules, torch.nn.Module) else modules
    if not isinstance(listed, (list, tuple)) or not all(isinstance(m, torch.nn.Module) for m in listed):
        raise TypeError(f"fit takes a module or a list of modules, e.g. fit([encoder, head], loss_fn, steps); "
                        f"got {type(modules).__name__}. Not their .parameters(): fit needs the modules "
                        "to switch them between train and eval mode")
    return list(listed)


def _set_mode(modules: list[torch.nn.Module], train: bool) -> None:
    for m in modules:
        m.train(train)


def minibatches(n: int, batch_size: int, seed: int = 0) -> Iterator[torch.Tensor]:
    """Endless shuffled index batches over range(n), reproducible from `seed`."""
    g = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(n, generator=g)
        for start in range(0, n - batch_size + 1, batch_size):
            yield order[start:start + batch_size]
