"""Checks for lesson 07: predict_or_reject, expected_calibration_error and restrict_to_labels.

Every probability below is a sum of powers of two (0.5, 0.25, 0.75, 0.5625, …), so float32 holds it
exactly and a comparison with a threshold, or a confidence on a bin edge, is decided without rounding.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch

from .core import CheckFailed, call, fail, passed, require_function, require_tensor

# --- predict_or_reject ---------------------------------------------------------------------------
# (probs, threshold, reject, expected) written out by hand. Rows marked "= t" have a top probability
# exactly equal to the threshold: they are accepted.
REJECT_CASES = [
    ([[0.5, 0.25, 0.25],         # top 0.5  = t  -> class 0
      [0.25, 0.75, 0.0],         # top 0.75 ≥ t  -> class 1
      [0.375, 0.3125, 0.3125],   # top 0.375 < t -> reject
      [0.125, 0.375, 0.5]],      # top 0.5  = t  -> class 2
     0.5, -1, [0, 1, -1, 2]),
    ([[0.75, 0.25],              # = t -> 0
      [0.375, 0.625],            # < t -> reject
      [0.0625, 0.9375],          # > t -> 1
      [0.25, 0.75],              # = t -> 1
      [0.5625, 0.4375]],         # < t -> reject
     0.75, 99, [0, 99, 1, 1, 99]),
    ([[0.0, 1.0, 0.0],           # = t (a certain prediction) -> 1
      [0.125, 0.125, 0.75]],     # < t -> reject
     1.0, -1, [1, -1]),
]


def predict_or_reject(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(probs, threshold, reject=...)` on each case and name the mistake if a row is wrong."""
    require_function(fn, "predict_or_reject")
    cases = REJECT_CASES if cases is None else cases
    for probs, threshold, reject, expected in cases:
        probs = torch.as_tensor(probs, dtype=torch.float32)
        expected = torch.as_tensor(expected, dtype=torch.long)
        before = probs.clone()
        out = call(fn, "predict_or_reject", probs, threshold, reject=reject)
        _diagnose_reject(out, probs, threshold, reject, expected)
        if not torch.equal(probs, before):
            fail("predict_or_reject changed the `probs` tensor it was given; build a new tensor instead.")
    passed("predict_or_reject", len(cases))


def _diagnose_reject(out, probs: torch.Tensor, threshold: float, reject: int, expected: torch.Tensor) -> None:
    B, C = probs.shape
    where = f" (threshold={threshold}, reject={reject}, probs of shape {B} × {C})"
    if isinstance(out, torch.Tensor) and tuple(out.shape) == (C,) and C != B:
        fail(f"predict_or_reject returned shape {tuple(out.shape)}{where}: one value per class. You took "
             "the argmax or max over dim 0, the batch axis; the classes are along the last axis (dim=-1).")
    require_tensor(out, "predict_or_reject", (B,), meaning=f", one answer per row{where}")
    if out.is_floating_point():
        fail(f"predict_or_reject returned dtype {out.dtype}{where}: it must return class indices as a long "
             "tensor (the argmax, or `reject`), not probabilities.")
    if out.dtype != torch.long:
        fail(f"predict_or_reject returned dtype {out.dtype}{where}; return a long tensor of class indices.")
    if torch.equal(out, expected):
        return
    top = probs.max(dim=-1).values
    rejected = expected == reject
    accepted = ~rejected
    # the answer on accepted rows, and what happened on the rows that must be rejected
    if reject != -1 and bool((out[rejected] == -1).all()) and torch.equal(out[accepted], expected[accepted]):
        fail(f"the rejected rows hold -1{where}, but the caller asked for reject={reject}: use the `reject` "
             "argument instead of writing -1 into the function.")
    at_edge = accepted & (top == threshold)
    if at_edge.any() and bool((out[at_edge] == reject).all()) and torch.equal(out[~at_edge], expected[~at_edge]):
        rows = at_edge.nonzero().flatten().tolist()
        fail(f"rows {rows} have a top probability exactly equal to the threshold {threshold} and you rejected "
             f"them{where}. A prediction is kept when its top probability is ≥ the threshold: compare with "
             ">=, not >.")
    if rejected.any() and not bool((out == reject).any()) and torch.equal(out[accepted], expected[accepted]):
        rows = rejected.nonzero().flatten().tolist()
        fail(f"you never rejected anything{where}: rows {rows} have a top probability below the threshold "
             f"({', '.join(f'{top[r].item():g}' for r in rows)}) and must be answered with reject={reject}.")
    if torch.equal(out == reject, accepted) and rejected.any():
        fail(f"the rejection is the wrong way round{where}: you rejected the confident rows and kept the "
             "unsure ones. Reject a row when its top probability is below the threshold.")
    if torch.equal(out == reject, rejected):
        rows = (out != expected).nonzero().flatten().tolist()
        fail(f"the rows you kept hold the wrong classes{where}: rows {rows} should be "
             f"{expected[rows].tolist()}, you returned {out[rows].tolist()}. A kept row is the argmax of its "
             "probabilities (the class with the top probability).")
    b = int((out != expected).nonzero()[0])
    fail(f"row {b} has probabilities {probs[b].tolist()} and threshold {threshold}{where}: expected "
         f"{int(expected[b])}, you returned {int(out[b])}.")


# --- expected_calibration_error --------------------------------------------------------------------
# (probs, labels, n_bins, expected, what common mistakes give) written out by hand.
# Case A, 10 bins: confidences 0.5, 0.5625, 1.0, 0.9375, 0.75, 0.875, 0.75, 0.75 with correct
# predictions 1, 0, 1, 0, 1, 1, 0, 1 (N = 8).
#   bin (0.4, 0.5]: {0.5 ✓}                 gap 0.5     weight 1/8
#   bin (0.5, 0.6]: {0.5625 ✗}              gap 0.5625  weight 1/8
#   bin (0.7, 0.8]: {0.75 ✓, 0.75 ✗, 0.75 ✓} gap 1/12   weight 3/8
#   bin (0.8, 0.9]: {0.875 ✓}               gap 0.125   weight 1/8
#   bin (0.9, 1.0]: {1.0 ✓, 0.9375 ✗}       gap 0.46875 weight 2/8
#   ECE = 0.0625 + 0.0703125 + 0.03125 + 0.015625 + 0.1171875 = 0.296875
# Case B, 4 bins: confidences 1.0 ✓, 0.5 ✓, 0.75 ✓, 0.5 ✓, 0.6875 ✗, 0.6875 ✗ (N = 6).
#   bin (0.25, 0.5]: {0.5 ✓, 0.5 ✓}                  gap 0.5   weight 2/6
#   bin (0.5, 0.75]: {0.75 ✓, 0.6875 ✗, 0.6875 ✗}    gap 0.375 weight 3/6
#   bin (0.75, 1.0]: {1.0 ✓}                         gap 0     weight 1/6
#   ECE = 1/6 + 0.1875 = 0.3541666…
ECE_CASES = [
    ([[0.5, 0.25, 0.25], [0.1875, 0.5625, 0.25], [0.0, 0.0, 1.0], [0.0625, 0.9375, 0.0],
      [0.25, 0.0, 0.75], [0.875, 0.0625, 0.0625], [0.25, 0.75, 0.0], [0.125, 0.125, 0.75]],
     [0, 0, 2, 0, 2, 0, 0, 2], 10, 0.296875,
     {"left_closed": 0.171875, "unweighted": 0.3479166666666667, "global": 0.140625}),
    ([[0.0, 1.0, 0.0], [0.5, 0.25, 0.25], [0.125, 0.125, 0.75], [0.25, 0.25, 0.5],
      [0.6875, 0.25, 0.0625], [0.0625, 0.6875, 0.25]],
     [1, 0, 2, 2, 1, 0], 4, 0.3541666666666667,
     {"left_closed": 0.10416666666666667, "unweighted": 0.2916666666666667, "global": 0.020833333333333372,
      "ten_bins": 0.4375}),
]
TOLERANCE = 1e-5


def expected_calibration_error(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(probs, labels, n_bins=...)` on each case and name the mistake if the ECE is wrong.

    A case is (probs, labels, n_bins, expected, mistakes) where `mistakes` maps a known mistake
    ("left_closed", "unweighted", "unweighted_all", "global", "ten_bins") to the value it gives.
    """
    require_function(fn, "expected_calibration_error")
    cases = ECE_CASES if cases is None else cases
    for probs, labels, n_bins, expected, mistakes in cases:
        probs = torch.as_tensor(probs, dtype=torch.float32)
        labels = torch.as_tensor(labels, dtype=torch.long)
        before = (probs.clone(), labels.clone())
        out = call(fn, "expected_calibration_error", probs, labels, n_bins=n_bins)
        _diagnose_ece(out, probs, n_bins, float(expected), mistakes)
        if not (torch.equal(probs, before[0]) and torch.equal(labels, before[1])):
            fail("expected_calibration_error changed the tensors it was given; leave probs and labels untouched.")
    passed("expected_calibration_error", len(cases))


def _diagnose_ece(out, probs: torch.Tensor, n_bins: int, expected: float, mistakes: dict) -> None:
    where = f" (N = {probs.shape[0]} predictions, n_bins={n_bins})"
    if isinstance(out, torch.Tensor):
        fail(f"expected_calibration_error returned a torch.Tensor{where}; the contract is a plain Python "
             "float: convert the result with float(...) or .item().")
    if not isinstance(out, float):
        fail(f"expected_calibration_error returned a {type(out).__name__}{where}; it must return a float.")
    if math.isnan(out):
        fail(f"expected_calibration_error returned nan{where}. Some bins are empty here; the accuracy or "
             "confidence of an empty bin is a mean of nothing (nan). Empty bins add nothing: skip them.")
    if abs(out - expected) <= TOLERANCE:
        return
    near = lambda key: key in mistakes and abs(out - float(mistakes[key])) <= TOLERANCE
    said = f"expected ECE {expected:.6f}, you returned {out:.6f}{where}"
    if near("left_closed"):
        fail(f"{said}. A confidence exactly on a bin edge (0.5, 0.75 or 1.0 here) went to the wrong bin: "
             f"your bins are [k/n, (k+1)/n), the wrong closed side. Bin k holds confidences in "
             f"(k/n, (k+1)/n], so 0.5 belongs with the bin that ends at 0.5 and 1.0 with the last bin.")
    if near("unweighted") or near("unweighted_all"):
        fail(f"{said}. That is a plain mean of the per-bin gaps: the bins are not weighted. Each bin's gap "
             "|accuracy − confidence| counts in proportion to its share of the predictions, count_bin / N.")
    if near("global"):
        fail(f"{said}. That is a single global gap |mean accuracy − mean confidence| over all predictions. "
             "Over- and under-confident predictions cancel in it; compute the gap inside each bin, then "
             "weight it by count_bin / N.")
    if near("ten_bins"):
        fail(f"{said}. That is the ECE with 10 bins: use the n_bins argument ({n_bins}) instead of a "
             "fixed number of bins.")
    if out < 0 or out > 1:
        fail(f"{said}. An ECE is a weighted mean of gaps between two numbers in [0, 1], so it lies in [0, 1].")
    fail(f"{said}. Confidence is the top probability of each row, a prediction is correct when its argmax "
         "equals the label, and ECE = Σ over non-empty bins of (count_bin / N) · |accuracy_bin − confidence_bin|.")


# --- restrict_to_labels --------------------------------------------------------------------------
LN = math.log
# (logits (B, V), label_token_ids, expected (B, C)) written out by hand. The label tokens' logits are
# logarithms, so the softmax over them is a simple fraction: softmax(ln a, ln b) = (a, b) / (a + b).
# Other tokens carry large logits, so a softmax over the whole vocabulary gives very different numbers.
RESTRICT_CASES = [
    ([[0.0, LN(3), 2.0, -1.0, 0.0, 5.0],         # label tokens 4 and 1: logits ln 1, ln 3
      [1.0, 0.0, 3.0, 3.0, LN(7), 0.5]],         # label tokens 4 and 1: logits ln 7, ln 1
     [4, 1], [[0.25, 0.75], [0.875, 0.125]]),
    ([[LN(1), 4.0, LN(5), 3.0, -2.0, LN(2)]],    # label tokens 5, 0, 2: logits ln 2, ln 1, ln 5
     "tensor:5,0,2", [[0.25, 0.125, 0.625]]),
    ([[2.0, LN(1), LN(3), 6.0],                  # label tokens 2, 1 in three rows
      [2.0, LN(5), LN(3), 1.0],
      [2.0, LN(1), LN(1), 0.0]],
     [2, 1], [[0.75, 0.25], [0.375, 0.625], [0.5, 0.5]]),
]


def _label_ids(ids):
    if isinstance(ids, str) and ids.startswith("tensor:"):
        return torch.tensor([int(x) for x in ids.split(":")[1].split(",")], dtype=torch.long)
    return ids


def restrict_to_labels(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(next_token_logits, label_token_ids)` on each case and name the mistake if it is wrong.

    `label_token_ids` is a list of ints, or a long tensor (written "tensor:5,0,2" in the visible cases).
    """
    require_function(fn, "restrict_to_labels")
    cases = RESTRICT_CASES if cases is None else cases
    for logits, ids, expected in cases:
        logits = torch.as_tensor(logits, dtype=torch.float32)
        ids = _label_ids(ids)
        expected = torch.as_tensor(expected, dtype=torch.float32)
        before = logits.clone()
        out = call(fn, "restrict_to_labels", logits, ids)
        _diagnose_restrict(out, logits, ids, expected)
        if not torch.equal(logits, before):
            fail("restrict_to_labels changed the logits tensor it was given (an in-place operation such as "
                 "masked_fill_ or a slice assignment); build a new tensor instead.")
    passed("restrict_to_labels", len(cases))


def _diagnose_restrict(out, logits: torch.Tensor, ids, expected: torch.Tensor) -> None:
    B, V = logits.shape
    C = expected.shape[1]
    shown = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
    where = f" for label_token_ids={shown} and logits of shape ({B}, {V})"
    if isinstance(out, torch.Tensor) and tuple(out.shape) == (B, V):
        fail(f"restrict_to_labels returned shape ({B}, {V}){where}: a distribution over the whole vocabulary. "
             f"It must return one probability per label, (B, C) = ({B}, {C}).")
    require_tensor(out, "restrict_to_labels", (B, C), meaning=f", one column per label token{where}")
    if not out.is_floating_point():
        fail(f"restrict_to_labels returned dtype {out.dtype}{where}; it returns probabilities, a float tensor.")
    out = out.detach().float()
    if torch.allclose(out, expected, atol=1e-5):
        return
    selected = logits[:, torch.as_tensor(shown)]
    if torch.allclose(out, selected, atol=1e-5):
        fail(f"restrict_to_labels returned the label tokens' logits{where}, not probabilities: rows hold "
             f"{out[0].tolist()}. Apply a softmax over the C selected logits.")
    sums = out.sum(dim=-1)
    if bool((out >= 0).all()) and torch.allclose(sums, torch.ones(B), atol=1e-4):
        for perm in _permutations(C):
            if perm != list(range(C)) and torch.allclose(out[:, perm], expected, atol=1e-5):
                fail(f"the columns are in the wrong order{where}: column c must be the probability of "
                     f"label_token_ids[c] (here token {shown[0]} first), in the order the caller gave. "
                     "Sorting the ids, or selecting them with a boolean mask over the vocabulary, returns "
                     "them in vocabulary order instead.")
    if bool((out >= 0).all()) and B > 1 and torch.allclose(out.sum(dim=0), torch.ones(C), atol=1e-4) \
            and not torch.allclose(sums, torch.ones(B), atol=1e-4):
        fail(f"each column sums to 1, not each row{where}: the softmax ran over dim 0, the batch. "
             "Normalise over the labels, the last axis (dim=-1).")
    if bool((out >= 0).all()) and bool((sums < 1 - 1e-3).all()):
        fail(f"the rows sum to {[round(s, 4) for s in sums.tolist()]}, not 1{where}. You took the softmax over "
             "the whole vocabulary and then selected the label columns, so the mass of every other token is "
             "missing. Select the C label logits first, then apply the softmax over those C values only.")
    if bool((out < 0).any()) or not torch.allclose(sums, torch.ones(B), atol=1e-4):
        fail(f"restrict_to_labels returned {out.tolist()}{where}: these are not probabilities (each row must "
             "be ≥ 0 and sum to 1). Apply a softmax over the C selected logits.")
    fail(f"restrict_to_labels returned {[[round(x, 4) for x in r] for r in out.tolist()]}{where}; expected "
         f"{expected.tolist()}. Select the logits of the label tokens, in the given order, then softmax.")


def _permutations(n: int) -> list[list[int]]:
    if n <= 1:
        return [list(range(n))]
    out = []
    for p in _permutations(n - 1):
        for i in range(n):
            out.append(p[:i] + [n - 1] + p[i:])
    return out


__all__ = ["predict_or_reject", "expected_calibration_error", "restrict_to_labels", "CheckFailed"]
