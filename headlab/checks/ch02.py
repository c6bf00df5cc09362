"""Checks for lesson 02: cls_pool, Pooler, mean_pool and max_pool."""
from __future__ import annotations

from functools import partial
from typing import Callable

import torch

from . import heads
from .core import CheckFailed, fail, passed, require_module_class
from .engine import Exercise, backward_through, clashing_sizes, inputs_as, judge_gradients, show
from .shared import table

T, F = True, False

# --- cls_pool(H) → (B, d) ----------------------------------------------------------------------------
# (H, expected). The hundreds say the row and the tens the position, so every entry shows where it comes
# from; the positions are not evenly spaced, so the mean of a row is none of its positions.
CLS_CASES = [
    ([[[0., 1., 2., 3.], [10., 11., 12., 13.], [50., 51., 52., 53.]],
      [[100., 101., 102., 103.], [110., 111., 112., 113.], [150., 151., 152., 153.]]],
     [[0., 1., 2., 3.], [100., 101., 102., 103.]]),
    ([[[1.5, -2.0, 0.5], [7.0, 8.0, 9.0]]], [[1.5, -2.0, 0.5]]),
    ([[[3., 1.], [0., 0.], [5., 5.], [-1., 2.]], [[-4., 4.], [9., 9.], [0., 1.], [2., 2.]],
      [[6., -6.], [1., 1.], [1., 1.], [7., 7.]]], [[3., 1.], [-4., 4.], [6., -6.]]),
]
# A pooled vector must carry the graph back to H, or a classifier on it trains the head alone (a simulated student's
# `H[:, 0].detach()` passed, then `mean_pool(...).detach()` and `max_pool(...).detach()`). The gradient the right
# vectors' sum gives one fixed H, stored as data: 1 at [CLS]; 1/length at every real position; 1 where each real
# feature's max is (row 0's padding holds the largest values, which must get nothing).
GRADIENT_H = [[[1., 4.], [3., 2.], [9., 9.]], [[5., -1.], [2., 6.], [7., 0.]]]
GRADIENT_MASK = [[True, True, False], [True, True, True]]
POOLED_GRADIENTS = {
    "cls_pool": [[[1., 1.], [0., 0.], [0., 0.]], [[1., 1.], [0., 0.], [0., 0.]]],
    "mean_pool": [[[.5, .5], [.5, .5], [0., 0.]], [[1 / 3] * 2, [1 / 3] * 2, [1 / 3] * 2]],
    "max_pool": [[[0., 1.], [1., 0.], [0., 0.]], [[0., 0.], [0., 1.], [1., 0.]]],
}


def _carries_the_graph(name: str, fn: Callable) -> None:
    """Once the values are right, the same call whatever the answer: a gradient must reach H through `name`."""
    H = torch.tensor(GRADIENT_H).requires_grad_()
    inputs = (H,) if name == "cls_pool" else (H, torch.tensor(GRADIENT_MASK))
    backward_through(fn, name, *inputs, want=[torch.tensor(POOLED_GRADIENTS[name])], said=(
        "{name} passes no gradient back to H: its output is computed with `.detach()`, under `torch.no_grad()`, "
        "or from a new tensor made of H's values. A classifier trained on the pooled vector then trains the "
        "head alone, never the encoder below it: compute it from H itself.",
        "{name} returns the right vectors, but the gradient that reaches H is not theirs: part of the output is "
        "computed outside autograd (`.detach()`, `.data`, `.item()`), so training would follow another function "
        "than the one it returns."))

cls_pool = Exercise(
    "cls_pool", CLS_CASES, then=partial(_carries_the_graph, "cls_pool"), read=inputs_as(torch.float32, torch.float32),
    shape=lambda H: (H.shape[0], H.shape[2]),
    meaning=" (one vector per sequence)", where=lambda H: f" for H of shape {tuple(H.shape)}",
    fields=lambda H: dict(zip("Bnd", H.shape)),
    unchanged="cls_pool changed the H it was given; pooling must only read H.",
    mistakes=table([
        ("first-sequence", "cls_pool returned `H[0]`, shape ({n}, {d}){where}: that is the first sequence of the batch "
         "with all its positions. [CLS] is position 0 of every sequence: index the position axis.", "`H[:, 0]`."),
        # one sequence's [CLS] for the batch's: only "returned shape (d,)" before
        ("first-sequence-only", "cls_pool returned one vector, shape ({d},){where}: `H[0, 0]` (or `H[0][0]`) is the "
         "[CLS] vector of the first sequence alone. Every sequence of the batch has its own [CLS] at position 0: keep "
         "the batch axis.", "`H[:, 0]`: every sequence, position 0."),
        ("squeeze-drops-batch-axis", "cls_pool returned shape ({d},){where}: `.squeeze()` without an axis drops the "
         "batch axis too when the batch holds one sequence.",
         "Squeeze only the axis you mean, e.g. `.squeeze(1)`, or index position 0 directly."),
        ("keeps-position-axis", "cls_pool returned shape ({B}, 1, {d}){where}: it kept the position axis. Index "
         "position 0 so that the result is (B, d) = ({B}, {d}).",
         "An integer index drops its axis: `[:, 0]`, not the slice `[:, :1]`."),
        ("feature-axis", "cls_pool indexed the feature axis, `H[:, :, 0]`{where}: that is feature 0 of every position, "
         "not the vector at position 0. H is (B, n, d): index its position axis.", "Position 0 is `H[:, 0]`."),
        ("last-position", "cls_pool took the last position, `H[:, -1]`{where}. [CLS] is the first token: position 0. "
         "(In a padded batch the last position is usually padding.)", "Index position 0 of the position axis, not -1."),
        *[("later-position", f"cls_pool took position {i}{{where}}; [CLS] sits at position 0 (counting starts at 0).",
           "Index position 0, not 1 or 2.") for i in (1, 2)],
        ("mean-pooling", "cls_pool averaged over the positions{where}: that is mean pooling (and it counts padding "
         "too). [CLS] pooling takes the vector at position 0 only.",
         "Index position 0 of the position axis instead of taking a mean over it."),
        ("max-pooling", "cls_pool took a maximum over the positions{where}; [CLS] pooling takes position 0 only.",
         "Index position 0 of the position axis instead of a max over it."),
    ]))

# --- Pooler(d): forward(c) = tanh(W c + b) -----------------------------------------------------------
# (d, W, b, c, expected). W is symmetric, so a layer that computes c @ W and one that computes W @ c agree:
# a raw (d, d) Parameter may be used either way round.
POOLER_CASES = [
    (2, [[0.5, 1.0], [1.0, -0.5]], [0.25, -0.25], [[1.0, 0.0], [0.0, -1.0], [2.0, 1.0]],
     [[0.6351, 0.6351], [-0.6351, 0.2449], [0.9780, 0.8483]]),
    (3, [[2.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 0.5]], [0.0, 1.0, -1.0], [[0.5, 1.0, 2.0], [-1.0, 0.0, 4.0]],
     [[0.7616, 0.0, 0.0], [-0.9640, 0.7616, 0.7616]]),
    # A batch of one: tanh([1.75, 0.25]); `.squeeze()` would drop the batch axis here
    (2, [[0.5, 1.0], [1.0, -0.5]], [0.25, -0.25], [[1.0, 1.0]], [[0.9414, 0.2449]]),
]
# nn.Linear fixes the layout: its weight is (out, in), used as c @ weight.T. A pooler built on one must get
# tanh([1, 0]), tanh([2, 1]) and tanh([3, 1]) from this W, not their transposed map.
LINEAR_LAYOUT_CASE = (2, [[1.0, 2.0], [0.0, 1.0]], [0.0, 0.0], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
                      [[0.7616, 0.0], [0.9640, 0.7616], [0.9951, 0.7616]])
TANH_FIX = "Wrap the dense layer's output in `torch.tanh`, and nothing else."
_pooler = Exercise(
    "Pooler.forward", [*POOLER_CASES, LINEAR_LAYOUT_CASE], read=inputs_as(None, *[torch.float32] * 4),
    shape=lambda d, W, b, c: (len(c), d),
    meaning=" (B, d)", where=lambda d, W, b, c: f" for c of shape {tuple(c.shape)}",
    explain=lambda out, want, d, W, b, c: f"Pooler.forward returned {show(out.double().round(decimals=4))} for c of "
    f"shape {tuple(c.shape)}; with the weights loaded, tanh(W c + b) is {show(want.double().round(decimals=4))}.",
    mistakes=table([
        ("no-tanh", "Pooler.forward returns W c + b with no tanh{where}. BERT's pooler squashes the dense layer's "
         "output with tanh: tanh(W c + b).", TANH_FIX),
        ("relu-not-tanh", "Pooler.forward uses ReLU instead of tanh{where}. The pooler is tanh(W c + b): its outputs "
         "lie in (−1, 1) and keep their sign.", TANH_FIX),
        ("sigmoid-not-tanh", "Pooler.forward uses a sigmoid instead of tanh{where}. The pooler is tanh(W c + b), "
         "centred on 0 with outputs in (−1, 1); a sigmoid gives (0, 1).", TANH_FIX),
        ("gelu-not-tanh", "Pooler.forward uses GELU instead of tanh{where}; the pooler is tanh(W c + b).", TANH_FIX),
        # Found by a simulated student: each got only "returned X; tanh(W c + b) is Y" before.
        ("hardtanh-not-tanh", "Pooler.forward clips W c + b to [−1, 1] instead of squashing it with tanh{where}: "
         "`F.hardtanh` or `.clamp(-1, 1)` passes the values inside (−1, 1) unchanged and cuts all beyond to ±1, where "
         "no gradient flows. The pooler is tanh(W c + b), smooth everywhere.", TANH_FIX),
        ("no-bias", "Pooler.forward leaves out the bias{where}: the pooler is tanh(W c + b).",
         "Keep nn.Linear's bias: drop `bias=False` (or add a (d,) bias parameter)."),
        ("bias-outside-tanh", "Pooler.forward adds the bias after the tanh{where}: tanh(W c) + b, whose outputs can "
         "leave (−1, 1). The bias belongs inside: tanh(W c + b).", TANH_FIX),
        ("tanh-before-dense", "Pooler.forward applies tanh before the dense layer{where}; it comes after: "
         "tanh(W c + b).", "Swap the two: apply the dense layer to c, then tanh to its output."),
        ("linear-weight-not-transposed", "Pooler.forward multiplies c by the nn.Linear's weight as it is "
         "stored{where}: nn.Linear keeps it as (out, in) and computes c Wᵀ + b. Call the nn.Linear module itself on c "
         "rather than using its weight.",
         "Call the layer itself on c, as a function, instead of multiplying c by its weight."),
        ("no-dense-layer", "Pooler.forward returns tanh(c){where}: the dense layer W c + b is missing.",
         "Apply the d → d linear layer made in __init__ to c before the tanh."),
        ("squeeze-drops-batch-axis", "Pooler.forward returned shape (d,) for a batch of one{where}: `.squeeze()` "
         "without an axis drops the batch axis too when B = 1. The pooler keeps (B, d) for every B.",
         "Remove the `.squeeze()`."),
        ("tanh-twice", "Pooler.forward applies tanh twice{where}: tanh(tanh(W c + b)) squashes the values a second "
         "time (tanh(0.76) = 0.64), so every output is closer to 0 than the pooler's tanh(W c + b).",
         "Keep one tanh: an `nn.Tanh()` in a Sequential or `torch.tanh` in forward, not both."),
    ]))

def Pooler(cls, cases=None) -> None:
    """Build `cls(d)`, load known weights into it and name the mistake if `forward(c)` is wrong."""
    require_module_class(cls, "Pooler", "Pooler")
    # The layout case, a non-symmetric W, for every head: the lesson's tanh(W_p c + b_p) reads W as (out, in),
    # as nn.Linear stores it. No fact of structure decides whether it runs (a red team's `c @ self.dense.weight`
    # hid its nn.Linear by overriding modules(), and was judged on the symmetric cases alone).
    cases = [*(POOLER_CASES if cases is None else cases), LINEAR_LAYOUT_CASE]
    for case in cases:
        _judge_pooler(cls, case)
    passed("Pooler", len(cases))


def _judge_pooler(cls, case) -> None:
    """Judge `cls` on one case, its (d, d) weight W and (d,) bias b loaded into its state_dict (kernel.load)."""
    (d, W, b, c), expected = _pooler.read(case)
    B = len(c)
    column = (f"The formula W c + b is written for one vector c, a column; here c is a batch, one [CLS] vector per "
              f"ROW, shape (B, d) = {tuple(c.shape)}. For rows the same map is c Wᵀ + b, which is what calling the "
              "nn.Linear layer on c computes.")   # weight-times-batch
    ran = heads.run(cls, "Pooler", "c", (d,), d, [c], [W, b], step=True, crashes=[
        # torch's "1xB and dxd": B numbers, one per sequence, reached the d → d layer, so c was indexed again
        (f"1x{B} and {d}x{d}", f"Pooler.forward receives c, the [CLS] vectors cls_pool already took, shape (B, d) = "
         f"{tuple(c.shape)}: do not index it again; apply the dense layer to c itself.", "indexes-c-again"),
        # torch's words for `W @ c`, then for `W @ c.T + b` (raised-RuntimeError, "print the .shape", before)
        (f"({d}x{d} and {B}x{d})", column, "weight-times-batch"),
        (f"size of tensor a ({B}) must match the size of tensor b ({d})", column, "weight-times-batch")])
    # Random with every weight at zero, which a dropout on c or on the output is not: a layer made in forward
    zeroed = heads.run(cls, "Pooler", "c", **{**ran["asked"], "fill": "zeros", "passes": 2, "step": False})["outs"][0]
    heads.layer_built_in_forward(all(isinstance(o, torch.Tensor) for o in zeroed) and not torch.equal(*zeroed),
                                 "Pooler", f" for Pooler({d}) on c of shape {tuple(c.shape)}")
    out = ran["outs"][0][0]
    # The grader's weights or zeros loaded, the same output: forward reads no entry of the state_dict
    unmoved = all(isinstance(o, torch.Tensor) for o in (out, zeroed[0])) and torch.equal(out, zeroed[0])
    try:
        _pooler.judge(out, expected, (d, W, b, c))
    except CheckFailed as err:
        if not unmoved or err.mistake not in ("wrong-values", ""):   # a named mistake says more
            raise
        fail(f"Pooler's output is the same whether the check loads its weights or zeros into its state_dict, for c "
             f"of shape {tuple(c.shape)}: forward uses no parameter. Tensors kept as plain attributes "
             "(`self.W = torch.randn(d, d)`) are not parameters: nothing loads or trains them.", "no-parameters",
             "Wrap them in `nn.Parameter(...)`, or use `nn.Linear(d, d)`.")
    trained = heads.run(cls, "Pooler", "c", **{**ran["asked"], "train": True, "step": False})
    heads.no_train_only_layer(not torch.allclose(trained["outs"][0][0], ran["outs"][0][0], atol=1e-6), "Pooler",
                              "The pooler computes tanh(W c + b)", f" for Pooler({d}) on c of shape {tuple(c.shape)}")
    judge_gradients(ran["gradients"], f"Pooler({d})", "c", c, "Pooler", d, [W, b])


# --- mean_pool(H, mask) and max_pool(H, mask) → (B, d) -----------------------------------------------
# (H, mask, expected). In every case B, n and d differ, so a mask or a count on the wrong axis raises an
# error whose sizes say which; padding holds loud values, so any padding in a result shows.
MEAN_CASES = [
    ([[[1., -1.], [2., -2.], [3., -3.], [6., -6.]], [[-5., 5.], [40., 40.], [40., 40.], [40., 40.]],
      [[2., 0.], [0., 2.], [-70., -70.], [-70., -70.]]],
     [[T, T, T, T], [T, F, F, F], [T, T, F, F]], [[3., -3.], [-5., 5.], [1., 1.]]),
    ([[[1., 2., 3.], [3., 6., -3.], [90., 90., 90.], [90., 90., 90.]],
      [[0., 3., 6.], [3., 0., -6.], [-3., -3., 3.], [70., 70., 70.]]],
     [[T, T, F, F], [T, T, T, F]], [[2., 4., 0.], [0., 0., 1.]]),
    # A batch of one, so a `.squeeze()` drops its batch axis; left-padded, so slicing the first ℓ positions
    # instead of using the mask takes the padding; a mean that is not a whole number, so `//` shows.
    ([[[50., 50.], [2., 4.], [5., 0.]]], [[F, T, T]], [[3.5, 2.]]),
]
# Row 0 of each case has only negative real features, so a zero fill at the padding wins the max.
MAX_CASES = [
    ([[[-7., -8.], [5., 5.], [5., 5.], [5., 5.]], [[1., -1.], [-2., 2.], [0., 0.], [3., -3.]],
      [[-1., -9.], [-6., -2.], [0., 0.], [0., 0.]]],
     [[T, F, F, F], [T, T, T, T], [T, T, F, F]], [[-7., -8.], [3., 2.], [-1., -2.]]),
    ([[[-3., -1., -4.], [-2., -5., -6.], [9., 9., 9.], [9., 9., 9.]],
      [[1., -2., -8.], [-1., -3., -7.], [0., -4., -9.], [9., 9., 9.]]],
     [[T, T, F, F], [T, T, T, F]], [[-2., -1., -4.], [1., -2., -7.]]),
    ([[[9., 9.], [-1., -6.], [-3., -5.]]], [[F, T, T]], [[-1., -5.]]),   # a batch of one, left-padded
    # Real values far below 0 (a model's features can reach the thousands): a finite fill such as -100, -1000 or
    # -10000, which the cases above let pass, wins here. Row 0's maxima: -150 above -700, -1 above -4, -25000 above
    # -40000; row 1's: 2 above -8 and 0, -200 above -300 and -1200, 5 above 1 and -3.
    ([[[-150., -4., -25000.], [-700., -1., -40000.], [50., 50., 50.], [50., 50., 50.]],
      [[2., -300., 1.], [-8., -200., 5.], [0., -1200., -3.], [60., 60., 60.]]],
     [[T, T, F, F], [T, T, T, F]], [[-150., -1., -25000.], [2., -200., 5.]]),
]
# The contract accepts a bool mask or 0/1 numbers: every case runs with each, bool first.
_KINDS = {torch.bool: "", torch.long: " (the mask was a 0/1 integer tensor)",
          torch.float32: " (the mask was a 0/1 float tensor)"}


def _where(H, mask) -> str:
    real, lengths = mask.bool(), mask.bool().sum(1)
    right_padded = torch.equal(real, torch.arange(real.shape[1])[None, :] < lengths[:, None])
    rows = f"lengths {lengths.tolist()}" if right_padded else f"mask {real.long().tolist()} (1 = real token)"
    return f" for H of shape {tuple(H.shape)} with {rows}{_KINDS[mask.dtype]}"


def _raised(err, H, mask) -> tuple[str, str, str] | None:
    """The mistake an error shows, as the engine's hint (words, key, fix); None where it shows none."""
    B, n, d = H.shape
    sizes = clashing_sizes(err) if len({B, n, d}) == 3 else ()   # sizes that say which axis
    for key, found, said, fix in [
        # `H[mask].view(B, -1, d)`: the gathered real tokens put back into rows (raised-RuntimeError before)
        ("ragged-rows-reshaped", "is invalid for input of size" in str(err), "The real tokens of a batch do not fill "
         f"a (B, ?, d) block: its rows hold different numbers of them, {mask.bool().sum(1).tolist()}, so the real "
         "vectors a boolean index gathers, one flat (tokens, d) tensor, cannot be reshaped back into rows.",
         ROW_BY_ROW),
        ("bool-mask-only", mask.dtype != torch.bool, "It worked with a bool mask; a mask may be bool or 0/1 numbers: "
         "turn it into what you need first.", "E.g. `mask.bool()` or `mask.to(H.dtype)`."),
        ("count-without-keepdim", sizes == (d, B), f"A value with one entry per row, shape (B,) = ({B},), met the "
         f"d = {d} features: keep the axis of a per-row count, so that a (B, 1) count divides each row.",
         "`mask.sum(dim=1, keepdim=True)` has shape (B, 1)."),
        # `mask.sum(0)[:, None]` or a (B, n, 1) mask summed over dim 0: the generic "print their .shape" before
        ("count-over-batch-axis", sizes == (B, n), f"A value with one entry per position, n = {n}, met the B = {B} "
         "rows: the mask was summed over the batch axis (dim=0). The count that divides a row is that row's number "
         "of real tokens, its mask summed over the positions.", "`mask.sum(dim=1, keepdim=True)` has shape (B, 1)."),
        ("mask-on-feature-axis", set(sizes) == {n, d}, f"The mask's n = {n} positions met H's d = {d} features: a "
         "(B, n) mask must be lined up with H's position axis, and broadcast over the d features.",
         "`mask[:, :, None]` has shape (B, n, 1).")]:
        if found:
            return said, key, fix


class _MaxPool(Exercise):
    def judge(self, out, expected, inputs) -> None:
        # H.max(dim=1) returns a pair; the engine compares tensors only.
        if isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out):
            fail(f"max_pool returned a pair (values, indices){_where(*inputs)}: `H.max(dim=1)` gives both. Return only "
                 "the values.", "values-and-indices", "Take .values, or use `H.amax(dim=1)`.")
        try:
            super().judge(out, expected, inputs)
        except CheckFailed as err:
            fill = _finite_fill(out, expected, *inputs) if err.mistake == "wrong-values" else None
            if fill is None:
                raise
            fail(_fill_won(fill, out, *inputs), "zero-fill", FILL_FIX)


def _finite_fill(out, expected, H, mask) -> float | None:
    """The finite fill a wrong max shows, whatever its value: `out` is the max of each row with its padding set to
    one number, which is none of the padding's own values (that would be the padding itself taken); None where it
    is not."""
    fill = out[~torch.isclose(out, expected, atol=1e-4)].unique()
    if len(fill) != 1 or not bool(fill.isfinite()) or bool((H[~mask.bool()] == fill).any()):
        return None
    padded = ~mask.bool().all(1, keepdim=True)
    return float(fill) if torch.equal(out, torch.where(padded, expected.maximum(fill), expected)) else None


def _pool(kind: type, name: str, cases, what: str, rows: list[tuple]):
    """The check of `name`: every (H, mask, expected) case once with each kind of mask; its mistakes, the rows both
    poolings share, then `rows`."""
    def read(case):
        H, mask, expected, dtype = case
        H, mask = torch.as_tensor(H, dtype=torch.float32).clone(), torch.as_tensor(mask, dtype=torch.bool)
        return (H, mask.to(dtype)), torch.as_tensor(expected, dtype=torch.float32)

    def explain(out, expected, H, mask):   # the first wrong row, which a large tensor would hide
        b = next(b for b in range(len(out)) if not torch.allclose(out[b].double(), expected[b].double(), atol=1e-4))
        length = int(mask.bool()[b].sum())
        return (f"{name} row {b} (length {length}) is {show(out[b])}; the {what} of its {length} real vectors is "
                f"{show(expected[b])}{_where(H, mask)}.")
    exercise = kind(
        name, cases, read=read, shape=lambda H, mask: (H.shape[0], H.shape[2]), where=_where,
        mistakes=table([*_shared(name), *rows]), then=partial(_carries_the_graph, name),
        dtype=torch.float32,   # H's dtype in every case, visible and hidden: a pooled vector keeps it
        meaning=" (one vector per sequence)", fields=lambda H, mask: dict(zip("Bnd", H.shape)),
        hints=[(Exception, _raised)], explain=explain,
        dtype_message="{name} returned dtype {got}{where}, but H is {wanted}: a " + what + " of H's vectors keeps "
                      "H's dtype (a count or mask of another dtype, float64 say, changes it when it meets H).",
        unchanged=f"{name} changed the H it was given or its mask (an in-place fill or multiply); pooling must only "
                  "read them: build new tensors, e.g. with masked_fill (no underscore) or torch.where.")

    def check(fn, cases=None) -> None:
        exercise(fn, [(*case, dtype) for case in (exercise.cases if cases is None else cases) for dtype in _KINDS])
    check.__name__ = check.__qualname__ = name
    check.__doc__ = "Run `fn(H, mask)` on each case, with bool and 0/1 masks, and name the mistake if it is wrong."
    return check


FILL_FIX = "Fill padding with `-torch.inf` (or `torch.finfo(H.dtype).min`) before taking the max."
ROW_BY_ROW = "Keep the (B, n, d) shape: zero or fill the padding through `mask[:, :, None]`, then reduce dim=1."


def _fill_won(fill: float, out, H, mask) -> str:
    """The message of a padding fill that a real feature's values all lie below: which row and feature it won."""
    real = mask.bool()
    b, j = next((b, j) for b in range(len(H)) for j in range(H.shape[2])
                if not bool(real[b].all()) and bool((H[b][real[b], j] < fill).all()))
    return (f"max_pool filled the padding with {fill:g}{_where(H, mask)}: in row {b} every real value of feature "
            f"{j} is below {fill:g}, so the fill value won the max there. Real values can lie below any finite fill "
            "you pick (LayerNorm outputs are often below -1, a model's features can reach the thousands): the fill "
            "must be lower than every possible value.")


def _shared(name: str) -> list[tuple[str, str, str]]:
    """The first two rows of both poolings' mistakes: a squeeze that drops the batch axis, and each row pooled from
    `H[b][mask[b]]`, an index that, with a 0/1 integer mask, picks positions 0 and 1."""
    return [("squeeze-drops-batch-axis", f"{name} returned shape ({{d}},){{where}}: `.squeeze()` without an axis drops "
             "the batch axis too when the batch holds one sequence.",
             "Squeeze only the axis you mean, e.g. `.squeeze(1)`."),
            ("integer-mask-as-index", f"{name} used the mask as an index{{where}}: a bool mask keeps the positions "
             "where it is True, but an integer tensor is read as a list of positions, so its 0s and 1s pick positions "
             "0 and 1.", "Turn it into a bool mask first, `mask.bool()`.")]


mean_pool = _pool(Exercise, "mean_pool", MEAN_CASES, "mean", [
    ("keeps-position-axis", "mean_pool returned shape ({B}, 1, {d}){where}: it kept the position axis (keepdim=True on "
     "the sum over positions). The result is (B, d) = ({B}, {d}).", "Drop `keepdim=True` from the sum over positions."),
    ("padding-included", "mean_pool averaged over every position, padding included{where}. Only real tokens count: sum "
     "H over the positions where mask is True and divide by their number.",
     "Multiply H by `mask[:, :, None]` before summing, and divide by `mask.sum(dim=1, keepdim=True)`."),
    ("divides-by-n", "mean_pool divided by n = {n}, the padded length{where}. Divide each row by its own number of "
     "real tokens.", "`mask.sum(dim=1, keepdim=True)` counts them, one per row."),
    ("floor-division", "mean_pool rounded each mean down to a whole number{where}: that is what `//`, floor division, "
     "does. A mean is rarely a whole number.", "Divide with `/`."),
    ("divides-by-batch-count", "mean_pool divided every row by the number of real tokens in the whole batch{where}. "
     "Divide each row by its own number of real tokens.", "`mask.sum(dim=1, keepdim=True)` counts them, one per row."),
    ("pools-whole-batch", "mean_pool returned one vector for the whole batch{where}: indexing H with the (B, n) mask "
     "gathers the real tokens of every row into one (tokens, d) tensor, so their mean mixes the sequences. Pool each "
     "row over its own positions, (B, d) = ({B}, {d}).", ROW_BY_ROW),
    # the one-sequence formula, mask @ H, on a batch: only "returned shape (B, B, d)" before
    ("mask-against-every-sequence", "mean_pool returned shape ({B}, {B}, {d}){where}: `mask.to(H.dtype) @ H` "
     "multiplies the whole (B, n) mask with each sequence's (n, d) block, every row's weights against every "
     "sequence. Each row's weights belong to its own sequence alone.", "Give the mask a middle axis, (B, 1, n) @ "
     "(B, n, d): "
     "`(mask.to(H.dtype)[:, None, :] @ H)[:, 0]`, then divide by each row's count."),
    ("sum-not-mean", "mean_pool summed the real tokens but did not divide{where}: a mean divides by the number of real "
     "tokens of the row.", "Divide by `mask.sum(dim=1, keepdim=True)`, the real tokens of each row."),
    ("sums-padding", "mean_pool divided by the number of real tokens but summed over every position, padding "
     "included{where}. Zero the padding (multiply by the mask) first.", "Sum `H * mask[:, :, None]` rather than H."),
    ("inverted-mask", "mean_pool averaged the padding and left out the real tokens{where}: the mask is True (or 1) on "
     "real tokens.", "Weight by the mask itself, not by its inverse."),
    *[("over-features", "mean_pool averaged over the feature axis{where}: average over the positions (dim=1) to get "
       "one d-vector per sequence.", "Sum and count over dim=1, not dim=2.")] * 3,
    # Before only a row's values (tests/grading/test_grade_02_pooling.py); lesson 08's sentence_embedding names it too
    ("assumes-right-padding", "mean_pool averaged the first ℓ positions of each row, ℓ its number of real "
     "tokens{where}: the real ones only when the padding comes last. Here a row is left-padded, its real tokens last: "
     "select them with the mask itself, not by their count.", "Multiply H by `mask[:, :, None]` before summing, and "
     "divide by `mask.sum(dim=1, keepdim=True)`.")])
max_pool = _pool(_MaxPool, "max_pool", MAX_CASES, "feature-wise max", [
    ("pools-whole-batch", "max_pool returned one vector for the whole batch{where}: indexing H with the (B, n) mask "
     "gathers the real tokens of every row into one (tokens, d) tensor, so their max mixes the sequences. Pool each "
     "row over its own positions, (B, d) = ({B}, {d}).", ROW_BY_ROW),
    ("keeps-position-axis", "max_pool returned shape ({B}, 1, {d}){where}: it kept the position axis. The result is "
     "(B, d) = ({B}, {d}).", "Drop `keepdim=True` from the max over positions."),
    ("zero-fill", "max_pool filled the padding with zeros{where}. When every real value of a feature is negative, the "
     "0 of a padding position wins the max: padding must never win.", FILL_FIX),
    ("padding-included", "max_pool took the max over every position, padding included{where}; padding positions must "
     "never win.", "Fill them with -inf before the max."),
    ("inverted-mask", "max_pool filled the real tokens and kept the padding{where}: the mask is True (or 1) on real "
     "tokens, so fill where it is False (or 0).", "Fill where `~mask.bool()` is True, the padding."),
    *[("over-features", "max_pool took the maximum over the features (dim=2){where}; take it over the positions "
       "(dim=1), so that each of the d features keeps its own maximum.", "Use `.amax(dim=1)`.")] * 3,
    ("assumes-right-padding", "max_pool took the max over the first ℓ positions of each row, ℓ its number of real "
     "tokens{where}: the real ones only when the padding comes last. Here a row is left-padded, its real tokens last: "
     "select them with the mask itself, not by their count.", "Fill the positions where the mask is False with "
     "`-torch.inf`, then take the max over dim=1."),
    # `H * mask + (1 - mask) * -inf`, an additive mask made by multiplying: a row of NaN (wrong-values) before
    ("nan-from-zero-times-inf", "max_pool returned NaN in every row{where}: 0 · (−inf) is NaN, not 0, so a −inf "
     "multiplied by the mask or by 1 − mask, as in `H + (1 - mask.float()[:, :, None]) * float('-inf')`, puts NaN at "
     "every real position, and a NaN wins every max. Put −inf at the padding positions without multiplying by it.",
     "`H.masked_fill(~mask.bool()[:, :, None], float('-inf'))` (or `torch.where`), then `.amax(dim=1)`."),
    # `_, pooled = H.max(1)`, the classifier's `_, predicted = torch.max(outputs, 1)`: "keeps H's dtype" before
    ("returns-indices", "max_pool returned the positions of the maxima, not their values{where}: `.max(dim=1)` gives "
     "the pair (values, indices), and its second part, `.indices` or `argmax`, says where each maximum is.",
     "Return the values: `.max(dim=1).values`, or `.amax(dim=1)`.")])

__all__ = ["cls_pool", "Pooler", "mean_pool", "max_pool", "CheckFailed"]
