"""One protocol for the class heads, on the model of transformers' `ModelTesterMixin`.

A head's check declares what to build and what to ask (a `spec`: constructor arguments, the weights the grader
loads, the inputs and how to run them); one kernel driver, `drive_head`, builds the learner's class, loads the
weights, runs the probes and returns plain facts: outputs, gradients, outputs after the grader's step, whether an
input changed, an exception as data. It names nothing: every message and key is written by the check, outside
the kernel, from those facts (`built`). What a head says about its structure (modules, parameters, `.grad`)
never reaches a verdict; a structural mistake shows as behaviour under the grader's weights.

The weights are loaded through one stated contract: each entry of the head's `state_dict()` that has the shape
of one of the grader's tensors (or, for a matrix, of its transpose) receives it; the others keep the values the
head was built with, under the grader's seed.
"""
from __future__ import annotations

from typing import Sequence

import torch

from .. import grading
from ..kernel import drive_head
from .core import CheckFailed, drive, explain, fail
from .engine import NO_RETURN, NO_RETURN_FIX


def spec(args: Sequence, seed: int, inputs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor] = (),
         kwargs: dict | None = None, train: bool = False, passes: int = 1, step: bool = False,
         embedding: Sequence[torch.Tensor] = (), fill: int | str | None = None, stepped_on: int = 0) -> dict:
    """What `drive_head` does: build `cls(*args, **kwargs)` with the global RNG seeded with `seed`, load
    `weights` (or `fill`), run each input `passes` times in train or eval mode, and with `step` take the step of
    kernel.gradient_facts from inputs[0], with its outputs after the step on inputs[stepped_on]. With `embedding`
    (E, E2), the first constructor argument is an nn.Embedding holding E, and inputs[0] runs once more while it
    holds E2 (a tied head follows it)."""
    return {"args": list(args), "kwargs": dict(kwargs or {}), "seed": seed, "weights": list(weights),
            "train": train, "inputs": list(inputs), "passes": passes, "step": step, "embedding": list(embedding),
            "fill": fill, "stepped_on": stepped_on}


def built(facts: dict, name: str, spec: dict, given: str, crashes: Sequence[tuple[str, str, str]] = ()) -> dict:
    """The facts of a drive, after the rules every head shares, judged on the grader's side: an exception the head
    raised (a stub says it is not written; a crash shows the call with its hint and is named `raised-<type>`, or,
    when its message holds the words of one of `crashes` (words, hint, key: torch's words for a mistake the
    exercise invites), that mistake with its hint); then a forward that returned None; then an embedding or an input
    (`given`, its name) that the head changed."""
    if facts.get("raised") is not None:
        _explain(facts["raised"], name, spec, crashes)
    if any(out is None for outs in facts["outs"] for out in outs):
        fail(f"{name}.forward returned None: {NO_RETURN}", "returned-none", NO_RETURN_FIX)
    if facts["embedding_changed"]:
        fail(f"{name} changed the values of the embedding it was given; it must reuse them as they are.",
             "changed-embedding")
    if facts["changed"]:
        fail(f"{name}.forward changed the {given} it was given (an in-place operation such as `{given} += ...`, or "
             f"dropout with inplace=True); the caller still needs {given}: build new tensors and leave it untouched.",
             "changed-input")
    return facts


def run(cls, name: str, given: str, *args, crashes: Sequence[tuple[str, str, str]] = (), **kwargs) -> dict:
    """The facts of `drive_head` on the learner's `cls` as `spec(*args, **kwargs)` asks, judged by `built`."""
    asked = spec(*args, **kwargs)
    return {**built(drive(drive_head, cls, asked), name, asked, given, crashes), "asked": asked}


def layer_built_in_forward(differ: bool, name: str, where: str = "",
                           zeroed: str = ", even with every entry of its state_dict set to zero") -> None:
    """Fail if two passes of `name` on one input `differ` where nothing random may act: with every entry of its
    state_dict set to zero (a dropout on its input or its output gives zeros there; `zeroed` says so), or in a head
    that holds no dropout. Then forward makes a new layer, or new random numbers, on every call. Before
    dropout_at_eval, which it would otherwise be taken for."""
    if differ:
        fail(f"two passes of {name} on the same input gave different outputs{where}{zeroed}: forward builds a new "
             "layer (e.g. `nn.Linear(...)` inside forward), or draws new random numbers, on every call. Such a layer "
             "is no parameter of the module: it ignores the weights loaded into the head, starts from new random "
             "weights on every call, and the optimiser never trains it.",
             "layer-built-in-forward",
             "Create the layer once in __init__ (`self.dense = nn.Linear(...)`) and only call it in forward.")


def random_at_eval(differ: bool, cls, facts: dict, name: str, given: str, where: str = "") -> None:
    """Fail if two eval-mode passes on one input `differ`, with the cause: one more drive of the same spec with every
    weight at zero tells a layer built in forward (still random) from dropout left on (zeros in, zeros out). The
    drive is made whatever the passes gave: the grader replays the calls the solution made, so a check's calls
    may not depend on the learner's outputs."""
    asked = facts["asked"]
    zeroed = run(cls, name, given, **{**asked, "inputs": asked["inputs"][:1], "fill": "zeros", "passes": 2,
                                      "step": False})["outs"][0]
    layer_built_in_forward(all(isinstance(o, torch.Tensor) for o in zeroed) and zeroed[0].shape == zeroed[1].shape
                           and not torch.equal(*zeroed), name, where)
    dropout_at_eval(differ, name, where)


def dropout_at_eval(differ: bool, name: str, where: str = "") -> None:
    """Fail if two eval-mode passes on one input `differ`: the first rule of a head with dropout, as a random
    output makes every later comparison fail for another reason."""
    if differ:
        fail(f"in eval mode two passes of {name} on the same input gave different outputs{where}: dropout is still on "
             "at inference. F.dropout does not know the module's mode: its `training` argument defaults to True.",
             "dropout-at-eval", "Use nn.Dropout, which follows `head.train()` and `head.eval()`, or call F.dropout "
             "with `training=self.training`.")


def no_train_only_layer(differ: bool, name: str, contract: str, where: str = "") -> None:
    """Fail if `name`, whose contract holds no dropout, gives other outputs in train mode than in eval mode: the
    lessons train it in train mode (and lesson 02 measures its pooler there), where such a layer changes what they
    find."""
    if differ:
        fail(f"{name} gave other outputs in train mode than in eval mode{where}: it holds a layer that acts only in "
             f"training, such as dropout. {contract}, in train mode as in eval mode; the lesson's training and "
             "its measurements rely on it.", "dropout-in-head",
             "Remove that layer from the head; dropout, where a model wants it, goes before the head.")


def linear_swapped(d: int, K: int, outputs: str = "") -> list[tuple[str, str, str]]:
    """A head's crash row (see `built`) for its Linear layer built as nn.Linear(K, d) instead of nn.Linear(d, K): torch's
    words when it meets H's d features. `outputs` names K as the constructor does (num_labels), if it does."""
    return [(f"x{d} and {K}x{d})", f"nn.Linear takes (in_features, out_features), in that order: built as "
             f"`nn.Linear({outputs or K}, d)` it expects {K} input features and meets the d = {d} features of each "
             f"position. The head maps them to {K} scores: `nn.Linear(d, {outputs or K})`.", "linear-sizes-swapped")]


def _explain(raised: dict, name: str, spec: dict, crashes: Sequence[tuple[str, str, str]]) -> None:
    stage = raised.get("stage")
    try:
        grading.reraise(raised)
    except Exception as err:
        try:
            if stage == "build":   # an embedding is shown as the nn.Embedding it was, not its values
                shown = [torch.nn.Embedding(*E.shape, _weight=E) for E in spec["embedding"][:1]]
                explain(err, name, *shown, *spec["args"], **spec["kwargs"])
            explain(err, f"{name}.forward", spec["inputs"][stage if isinstance(stage, int) else 0])
        except CheckFailed as said:
            for words, hint, key in crashes:
                if words in str(said):
                    fail(f"{said}\n{hint}", key)
            raise


__all__ = ["spec", "built", "run", "layer_built_in_forward", "random_at_eval", "dropout_at_eval",
           "no_train_only_layer", "linear_swapped"]
