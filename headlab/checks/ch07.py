"""Checks for lesson 07: predict_or_reject, expected_calibration_error and restrict_to_labels.

Every probability below is a sum of powers of two (0.5, 0.25, 0.75, 0.5625, …), so float32 holds it
exactly and a comparison with a threshold, or a confidence on a bin edge, is decided without rounding.
"""
from __future__ import annotations

import math
import torch

from .core import CheckFailed
from .engine import Exercise, inputs_as
from .shared import table


# --- predict_or_reject(probs, threshold, reject) → (B,) long ------------------------------------------
def _against_threshold(probs, t, r) -> dict:
    """The rows whose top probability is at the threshold t and below it, for the messages."""
    top = probs.max(-1).values
    edge, low = [rows.nonzero().flatten().tolist() for rows in (top == t, top < t)]
    return {"t": t, "r": r, "edge": edge, "low": low, "tops": [f"{x:g}" for x in top.tolist() if x < t]}


predict_or_reject = Exercise(
    "predict_or_reject",
    # (probs, threshold, reject, expected) by hand. A row whose top probability equals the threshold is kept.
    cases=[([[0.5, 0.25, 0.25], [0.25, 0.75, 0.0], [0.375, 0.3125, 0.3125], [0.125, 0.375, 0.5]],  # =t >t <t =t
            0.5, -1, [0, 1, -1, 2]),
           ([[0.75, 0.25], [0.375, 0.625], [0.0625, 0.9375], [0.25, 0.75], [0.5625, 0.4375]],  # =t <t >t =t <t
            0.75, 99, [0, 99, 1, 1, 99]),
           ([[0.0, 1.0, 0.0], [0.125, 0.125, 0.75]], 1.0, -1, [1, -1]),                       # =t (certain) <t
           # t < 0.5: several classes of a row reach it; the answer is still the row's argmax
           ([[0.3125, 0.375, 0.3125, 0.0], [0.25, 0.25, 0.0, 0.5], [0.125, 0.125, 0.5, 0.25]], 0.25, -1, [1, 3, 2]),
           # 2^-11 below t, then =t twice: a tolerance on the threshold (a simulated student's `>= t - 1e-3`) keeps row 0
           ([[0.49951171875, 0.25048828125, 0.25, 0.0], [0.5, 0.0, 0.25, 0.25], [0.0, 0.25, 0.25, 0.5]], 0.5, -1,
            [-1, 0, 3])],
    read=inputs_as(torch.float32, None, None, torch.long),
    shape=lambda probs, t, r: (probs.shape[0],),
    dtype=torch.long,
    meaning=", one class index (or `reject`) per row",
    where=lambda probs, t, r: f" (threshold={t}, reject={r}, probs of shape {probs.shape[0]} × {probs.shape[1]})",
    fields=_against_threshold,
    dtype_message="{name} returned dtype {got}{where}; return class indices (the argmax of each row, or `reject`) "
                  "as a long tensor.",
    explain=lambda out, expected, probs, t, r: next(
        f"row {b} has probabilities {probs[b].tolist()} and threshold {t} (reject={r}): expected {int(expected[b])}, "
        f"you returned {int(out[b])}. A row is answered with the argmax of its probabilities when its top "
        "probability is ≥ the threshold, with `reject` otherwise." for b in range(len(out)) if out[b] != expected[b]),
    mistakes=table([
        # two rows: the argmax, and the max with its indices, over dim 0 (heads_mistakes.ch07)
        *[("argmax-over-batch",
           "predict_or_reject returned one value per class{where}: you took the argmax or max over dim 0, the batch "
           "axis; the classes are along the last axis (dim=-1).",
           "`probs.max(dim=-1)` gives each row's top probability and its class.")] * 2,
        ("returns-top-probability",
         "predict_or_reject returned the top probabilities{where}: return class indices as a long tensor "
         "(the argmax, or `reject`), not probabilities.",
         "`top, prediction = probs.max(dim=-1)` gives both: return the prediction, not the top."),
        ("hardcoded-minus-one",
         "the rejected rows hold -1{where}, but the caller asked for reject={r}: use the `reject` argument "
         "instead of writing -1 into the function.", "Write `reject` where your code writes -1."),
        ("strict-greater",
         "rows {edge} have a top probability exactly equal to the threshold {t} and you rejected them"
         "{where}. A prediction is kept when its top probability is ≥ the threshold.", "Use >=, not >."),
        ("never-rejects",
         "you never rejected anything{where}: rows {low} have top probabilities {tops}, below the threshold, "
         "and must be answered with reject={r}.",
         "Choose per row with `torch.where`: the argmax where the top probability reaches the "
         "threshold, `reject` elsewhere."),
        ("first-over-threshold",
         "you answered with the first class whose probability reaches the threshold{where}; below 0.5 several "
         "classes of a row can reach it. Answer with the row's argmax, the class of its top probability, "
         "whenever that top probability is ≥ the threshold.",
         "`top, prediction = probs.max(dim=-1)`, then compare `top` with the threshold."),
        ("rejects-the-confident",
         "the rejection is the wrong way round{where}: you rejected the confident rows and kept the unsure "
         "ones. Reject a row when its top probability is below the threshold.",
         "Swap the two branches of your `torch.where` (or compare with >= instead of <)."),
        # Found by simulated students: each got only "expected 0, you returned -1" before.
        ("confidence-of-class-one",
         "predict_or_reject compared the threshold {t} with every row's probability of class 1{where}: a row "
         "predicting another class is then kept or rejected by a probability it does not predict. A row's "
         "confidence is its top probability, that of the class it predicts.",
         "`top, prediction = probs.max(dim=-1)`, then compare `top`, not `probs[:, 1]`, with the "
         "threshold."),
        ("threshold-on-class-index",
         "predict_or_reject compared the threshold {t} with each row's predicted class index{where}, not with "
         "its top probability: with a threshold in (0, 1], a prediction of class 0 is then always rejected "
         "and every other class always kept, whatever the model's confidence. The threshold is a probability: "
         "it applies to the row's top probability.",
         "Compare `probs.max(dim=-1).values >= threshold`, and answer with the argmax where it holds."),
        # Found by a simulated student: got only "expected 0, you returned -1" before.
        ("softmax-of-probabilities",
         "predict_or_reject applied a softmax to `probs`{where}, which are probabilities already: a second "
         "softmax flattens each row towards uniform (0.5, 0.25, 0.25 becomes about 0.39, 0.31, 0.31), so "
         "confident rows fall below the threshold {t}. A softmax turns logits into probabilities, once.",
         "Use `probs` as given: `top, prediction = probs.max(dim=-1)`, with no `.softmax`."),
        # Found by a simulated student: got only "expected -1, you returned 0" before.
        ("threshold-tolerance",
         "predict_or_reject kept a row whose top probability lies just below the threshold {t}{where}: rows {low} "
         "are below it, with top probabilities {tops}. A tolerance on the comparison (`top >= threshold - 1e-3`, "
         "`torch.isclose`) moves the threshold; a row is kept only when its top probability is ≥ the threshold "
         "itself, and a comparison of two floats needs no tolerance for that.",
         "Compare `top >= threshold` as it is, with no margin subtracted."),
        # Found by probing the check: got only "expected 0, you returned 4" before.
        ("max-over-whole-batch",
         "predict_or_reject answered every row with `probs.argmax()` taken without a dim{where}: the index of the "
         "largest probability of the whole batch in the flattened (B, C) tensor, one number for all rows and not a "
         "class. Each row's prediction is the argmax of its own row.",
         "`top, prediction = probs.max(dim=-1)`: one of each per row."),
        # Found by probing the check: a rule of its own, it got only "expected 0, you returned -1" before.
        ("margin-not-top-probability",
         "predict_or_reject compared the threshold {t} with each row's margin, its top probability minus the runner-up"
         "{where}: a row of 0.5, 0.25, 0.25 has margin 0.25 and was rejected, yet the model gives its prediction "
         "probability 0.5. The contract's confidence is the top probability itself.",
         "Compare `probs.max(dim=-1).values >= threshold`, with no second probability subtracted."),
        # Found by probing the check: got only "expected -1, you returned 3" before.
        ("reject-as-new-class",
         "the rejected rows hold the number of classes C, the index one past the last class, as a rejection class "
         "of its own{where}; the caller asked for reject={r}. A rejection class needs no index of its own here: "
         "write the `reject` argument.", "Write `reject` where your code writes the number of classes."),
    ]),
)


# --- expected_calibration_error(probs, labels, n_bins) → float ---------------------------------------
def _edges(probs, n_bins) -> str:
    conf = sorted(set(probs.max(-1).values.tolist()))
    return ", ".join(str(c) for c in conf if c > 0 and math.isclose(c * n_bins, round(c * n_bins)))


SAID = "expected ECE {expected:.6f}, you returned {out:.6f}{where}. "   # every ECE message begins so
UNWEIGHTED_FIX = "Add (count_bin / N) · gap over the non-empty bins, rather than averaging the gaps."
expected_calibration_error = Exercise(
    "expected_calibration_error",
    # (probs, labels, n_bins, expected), the ECE worked out by hand (tests/test_07_checks.py redoes it exactly).
    # A, 10 bins: confidences 0.5 ✓ 0.5625 ✗ 1.0 ✓ 0.9375 ✗ 0.75 ✓ 0.875 ✓ 0.75 ✗ 0.75 ✓ (0.5 and 1.0 on bin
    #   edges): ECE = 1/8·0.5 + 1/8·0.5625 + 3/8·1/12 + 1/8·0.125 + 2/8·0.46875 = 0.296875
    # B, 4 bins: confidences 1.0 ✓ 0.5 ✓ 0.75 ✓ 0.5 ✓ 0.6875 ✗ 0.6875 ✗: ECE = 2/6·0.5 + 3/6·0.375 = 0.35416…
    # C, 3 bins: confidences 0.75 ✗ 0.625 ✓ 0.5 ✓ 0.875 ✗ 0.5625 ✓: ECE = 3/5·0.4375 + 2/5·0.8125 = 0.5875, where
    #   2 bins (edges from `torch.linspace(0, 1, n_bins)`) give 0.2625; A and B give their ECE with one bin less too
    cases=[([[0.5, 0.25, 0.25], [0.1875, 0.5625, 0.25], [0.0, 0.0, 1.0], [0.0625, 0.9375, 0.0],
             [0.25, 0.0, 0.75], [0.875, 0.0625, 0.0625], [0.25, 0.75, 0.0], [0.125, 0.125, 0.75]],
            [0, 0, 2, 0, 2, 0, 0, 2], 10, 0.296875),
           ([[0.0, 1.0, 0.0], [0.5, 0.25, 0.25], [0.125, 0.125, 0.75], [0.25, 0.25, 0.5],
             [0.6875, 0.25, 0.0625], [0.0625, 0.6875, 0.25]],
            [1, 0, 2, 2, 1, 0], 4, 0.3541666666666667),
           ([[0.75, 0.125, 0.0625, 0.0625], [0.125, 0.625, 0.25, 0.0], [0.25, 0.25, 0.5, 0.0],
             [0.0625, 0.0625, 0.0, 0.875], [0.5625, 0.25, 0.125, 0.0625]],
            [1, 1, 2, 0, 0], 3, 0.5875)],
    read=inputs_as(torch.float32, torch.long, None, None),
    returns=float,
    atol=1e-5,
    where=lambda probs, labels, n_bins: f" (N = {probs.shape[0]} predictions, n_bins={n_bins})",
    fields=lambda probs, labels, n_bins: {"edges": _edges(probs, n_bins)},
    explain=lambda out, expected, *inputs: (
        SAID.format(expected=expected, out=out, where=expected_calibration_error.where(*inputs))
        + "An ECE is a weighted mean of gaps between numbers in [0, 1], so it lies in [0, 1]. " * (not 0 <= out <= 1)
        + "Confidence is the top probability of each row, a prediction is correct when its argmax equals the "
        "label, and ECE = Σ over non-empty bins of (count_bin / N) · |accuracy_bin − confidence_bin|."),
    mistakes=table([
        ("nan-from-empty-bins",
         "Some bins are empty here; the accuracy or confidence of an empty bin is a mean of nothing (nan). Empty bins "
         "add nothing: skip them.",
         "Skip a bin whose count is 0 (a `continue` in your loop)."),
        ("left-closed-bins",
         "A confidence exactly on a bin edge ({edges} here) went to the wrong bin: your bins are [k/n, (k+1)/n), the "
         "wrong closed side. Bin k holds confidences in (k/n, (k+1)/n], so 0.5 belongs with the bin that ends at 0.5 "
         "and 1.0 with the last bin.",
         "Put a confidence c in bin k when k / n_bins < c ≤ (k + 1) / n_bins: use > on the lower edge and ≤ on the "
         "upper."),
        ("unweighted-bins",
         "That is a plain mean of the per-bin gaps: the bins are not weighted. Each bin's gap |accuracy − confidence| "
         "counts in proportion to its share of the predictions, count_bin / N.", UNWEIGHTED_FIX),
        ("unweighted-bins",
         "That is a plain mean of the per-bin gaps over all n_bins bins: the bins are not weighted. Each bin's gap "
         "counts in proportion to its share of the predictions, count_bin / N.", UNWEIGHTED_FIX),
        # Found by a simulated student: got only the recipe before.
        ("unweighted-bins",
         "That is a plain sum of the per-bin gaps: the bins are not weighted, so the sum can exceed 1. Each bin's gap "
         "|accuracy − confidence| counts in proportion to its share of the predictions, count_bin / N, which makes "
         "the ECE a weighted mean, between 0 and 1.", "Multiply each bin's gap by count_bin / N before adding it."),
        ("single-global-gap",
         "That is |mean accuracy − mean confidence| over all predictions: one global gap, which is also what per-bin "
         "gaps add up to when they keep their signs (no absolute value). Over- and under-confident bins cancel in it; "
         "take each bin's gap |accuracy − confidence| before weighting it by count_bin / N.",
         "Loop over the bins: for each non-empty one add (count_bin / N) · |accuracy_bin − confidence_bin|."),
        # Two rows: without and with 0 in bin 0.
        *[("confidence-of-class-one",
           "That is the ECE with the probability of class 1 as every row's confidence. A prediction's confidence is "
           "the probability of the class it predicts: the top probability of its row.",
           "`probs.max(dim=-1).values` holds the top probability of each row.")] * 2,
        # Found by a simulated student: got only the recipe before. Two rows: without and with 0 in bin 0.
        *[("confidence-of-class-one",
           "That is the ECE with `probs[:, 1]`, the probability of class 1, as every row's confidence and class 1 "
           "predicted where it exceeds 0.5, as if there were two classes. Here a row may have any number of classes: "
           "its prediction is its argmax, and its confidence the top probability.",
           "`confidence, prediction = probs.max(dim=-1)`: the top probability and its class, per row.")] * 2,
        ("counts-not-shares",
         "That is N × the ECE: each bin's gap was weighted by its count of predictions. Weight it by the bin's share "
         "of them, count_bin / N, so that the ECE stays between 0 and 1.",
         "Multiply each gap by count_bin / N, not by count_bin alone."),
        ("fixed-ten-bins", "That is the ECE with 10 bins: use the n_bins argument instead of a fixed number of bins.",
         "Write `n_bins` wherever your code says 10."),
        # Found by a simulated student: both got only the recipe before.
        ("rms-of-gaps",
         "That is a root mean square of the per-bin gaps, √Σ (count_bin / N) · gap², which weighs large gaps more. "
         "The ECE is the weighted mean of the absolute gaps themselves, Σ (count_bin / N) · |accuracy_bin − "
         "confidence_bin|.",
         "Add (count_bin / N) · |gap| for each bin, with no square and no square root."),
        # Found by a simulated student: each got only the recipe before.
        ("squared-gaps",
         "That is Σ (count_bin / N) · gap², the per-bin gaps squared: a gap of 0.1 then counts 0.01, and every ECE "
         "shrinks. The ECE weighs each bin's absolute gap |accuracy_bin − confidence_bin| as it is.",
         "Take `.abs()` of each bin's gap instead of `** 2`."),
        ("global-accuracy-per-bin",
         "That is the ECE with the accuracy of all N predictions in every bin: each bin compares its mean confidence "
         "with the accuracy of its own predictions, the rows whose confidence falls in it.",
         "Average the correctness over the bin's own rows, as you average their confidence, not over all N rows."),
        ("integer-division-weights",
         "Each bin's weight count_bin // N is an integer division: 0 for every bin that holds fewer than all N "
         "predictions, so every gap is multiplied by 0. The weight is the fraction count_bin / N.",
         "Divide with /, not // (an integer division): the weight count_bin / N is a fraction."),
        # one row per way of taking them over the batch (heads_mistakes.ch07: WHOLE_BATCH_WAYS)
        *[("max-over-whole-batch",
           "That is the ECE with a confidence or a prediction taken over the whole batch: `probs.max()` or "
           "`probs.argmax()` without a dim gives the largest probability of all rows, or its index in the flattened "
           "(N, C) tensor, which is not a class. Each row has its own confidence, its top probability, and its own "
           "prediction, the class of that probability.",
           "`confidence, prediction = probs.max(dim=-1)`: one of each per row.")] * 5,
        # Found by probing the check: the first passed both cases A and B, the second got only the recipe.
        ("one-bin-too-few",
         "That is the ECE with n_bins − 1 bins: `torch.linspace(0, 1, n_bins)` gives n_bins edges, which bound "
         "n_bins − 1 bins. n_bins bins need n_bins + 1 edges, from 0 to 1.",
         "`torch.linspace(0, 1, n_bins + 1)` gives the edges of n_bins bins."),
        ("edge-in-two-bins",
         "A confidence exactly on the edge between two bins was counted in both ({edges} lie on bin edges here): your "
         "bins are [k/n, (k+1)/n], closed on both sides, so an inner edge belongs to the bin it ends and to the bin "
         "it starts. Bin k holds confidences in (k/n, (k+1)/n]: each confidence counts in one bin only.",
         "Use > on the lower edge and ≤ on the upper: a confidence c is in bin k when k / n_bins < c ≤ (k + 1) / "
         "n_bins."),
        # Found by probing the check: the three rows below got only the recipe before.
        ("confidence-of-true-label",
         "That is the ECE with the probability of each row's label, `probs[torch.arange(len(labels)), labels]`, as its "
         "confidence. A prediction's confidence is how sure the model is of what it predicts: the probability of the "
         "class it predicts, its row's top probability, whether that class is the label or not. The labels only say "
         "which predictions are correct.",
         "`confidence, prediction = probs.max(dim=-1)`; use `labels` only to say which predictions are correct."),
        ("bin-centre-as-confidence",
         "That is the ECE with each bin's centre, (k + ½) / n_bins, as the confidence of its predictions: a bin's gap "
         "compares its accuracy with the mean confidence of the predictions that fall in it, which can lie anywhere "
         "in the bin.",
         "Compare each bin's accuracy with the mean top probability of the bin's own rows, not with the bin's centre."),
        ("single-global-gap",
         "That is mean accuracy − mean confidence over all predictions, negative here, which an ECE never is: it is "
         "what the per-bin gaps weighted by count_bin / N add up to when each keeps its sign (no absolute value), "
         "and over- and under-confident bins cancel in it. Take each bin's gap |accuracy − confidence| before "
         "weighting it.",
         "Take `.abs()` of each bin's gap: Σ (count_bin / N) · |accuracy_bin − confidence_bin|."),
        # Found by probing the check: got only the recipe before.
        ("per-prediction-gaps",
         "That is the mean over the predictions of |correct − confidence|, each prediction's own gap between its "
         "0/1 correctness and its confidence (within a bin or not, the same mean): it measures how far each "
         "confidence is from 0 or 1, not calibration. The ECE compares a bin's accuracy, the mean of its 0/1 "
         "correctness, with its mean confidence, then takes the absolute value of that gap.",
         "Average within each bin first: the bin's accuracy minus its mean confidence, in absolute value, then "
         "weighted by count_bin / N."),
        # Found by probing the check: both got only the recipe before.
        ("weights-over-n-bins",
         "Each bin's gap was weighted by count_bin / n_bins, its count over the number of bins: the weight is its "
         "share of the N predictions, count_bin / N.", "Divide each bin's count by `len(labels)`, not by n_bins."),
        ("bin-accuracy-as-count",
         "Each bin's accuracy was its number of correct predictions (a sum of the 0/1 correctness), not their "
         "fraction: a bin's accuracy is the mean of its rows' correctness, a number in [0, 1] like its confidence.",
         "Take the mean of the bin's 0/1 correctness, not its sum."),
        # `torch.bucketize` or `ceil` without the − 1: got only the recipe before
        ("top-bin-dropped",
         "The most confident bin, ((n_bins − 1)/n_bins, 1], is missing from the sum: your bin indices run from 1 to "
         "n_bins (`torch.bucketize` against the n_bins + 1 edges, or `ceil(confidence · n_bins)`, without − 1), so a "
         "loop over range(n_bins) never reaches the last bin. Bin k of 0 … n_bins − 1 holds (k/n, (k+1)/n].",
         "Subtract 1 from the bin index, so that it runs from 0 to n_bins − 1."),
        # the softmax of the widely copied ECE code, which takes logits, applied to probabilities: only the recipe
        # before. predict_or_reject's key for the same mistake.
        ("softmax-of-probabilities",
         "That is the ECE of softmax(probs): `probs` are probabilities already, and a second softmax flattens each "
         "row towards uniform, so every confidence falls. ECE code written for logits applies the softmax first; "
         "here it is done.", "Use `probs` as given: `probs.max(dim=-1)`, with no `.softmax`."),
    ], says=SAID),
)


# --- restrict_to_labels(next_token_logits, label_token_ids) → (B, C) ---------------------------------
def _ids(ids) -> list[int]:
    return [int(i) for i in ids]


def _round(x) -> list:
    return [[round(v, 4) for v in row] for row in x.tolist()]


def _probabilities(out) -> bool:
    return bool((out >= 0).all()) and torch.allclose(out.sum(-1), torch.ones(out.shape[0]), atol=1e-4)


RECIPE = "Select the logits of the label tokens, in the given order, then apply a softmax over those C values."
SELECT = "Select the C label columns, `[:, label_token_ids]`, before the softmax."
SOFTMAX = "Apply `.softmax(dim=-1)` to the C selected logits."
COLUMNS = "Select the columns: `next_token_logits[:, label_token_ids]`."
GATHER_FIX = ("`torch.gather(next_token_logits, 1, torch.as_tensor(label_token_ids).expand(len(next_token_logits), -1))`, "
              "or select the columns directly: `next_token_logits[:, label_token_ids]`.")


def _gather_index(err, z, ids):
    """The hint when `torch.gather` got the (C,) ids, or a list, as its index: it needs a (B, C) tensor."""
    if "Index tensor must have the same number of dimensions" in str(err) or "gather(): argument 'index'" in str(err):
        return (f"`torch.gather` along dim 1 needs its index as a tensor of the same number of dimensions as the "
                f"logits, shape (B, C) = ({z.shape[0]}, {len(_ids(ids))}): one row of label ids per example; it got "
                f"the {len(_ids(ids))} ids themselves, shape (C,).", "gather-index-shape", GATHER_FIX)


def _index_select_list(err, z, ids):
    """The hint when `torch.index_select` got the ids as a list, as a caller may pass them: it takes a tensor."""
    if "index_select(): argument 'index'" in str(err):
        return ("`torch.index_select` takes its index as a 1-D tensor, and label_token_ids came as a Python list: "
                "a caller may pass the ids either way.", "index-not-a-tensor",
                "Convert them first, `torch.as_tensor(label_token_ids)`, or index directly: "
                "`next_token_logits[:, label_token_ids]` takes a list or a tensor.")


def _indexes_rows(err, z, ids):
    """The hint when the ids went past the batch axis: `next_token_logits[label_token_ids]`."""
    if f"dimension 0 with size {z.shape[0]}" in str(err) and max(_ids(ids)) >= z.shape[0]:
        return ("It indexed the rows: the label token ids picked examples (dimension 0) instead of vocabulary "
                "columns (dimension 1).", "indexes-rows", COLUMNS)


LN = math.log
restrict_to_labels = Exercise(
    "restrict_to_labels",
    # (logits (B, V), label_token_ids, expected (B, C)) by hand. The label tokens' logits are logarithms, so
    # their softmax is a fraction, softmax(ln a, ln b) = (a, b) / (a + b); the other tokens' logits are large,
    # so a softmax over the whole vocabulary gives very different numbers.
    cases=[([[0.0, LN(3), 2.0, -1.0, 0.0, 5.0], [1.0, 0.0, 3.0, 3.0, LN(7), 0.5],   # tokens 4, 1: ln 1, ln 3 …
             [2.0, LN(4), 0.0, 4.0, LN(1), -3.0]],
            [4, 1], [[0.25, 0.75], [0.875, 0.125], [0.2, 0.8]]),
           ([[LN(1), 4.0, LN(5), 3.0, -2.0, LN(2)]],                               # tokens 5, 0, 2: ln 2, ln 1, …
            torch.tensor([5, 0, 2]), [[0.25, 0.125, 0.625]]),
           ([[2.0, LN(1), LN(3), 6.0], [2.0, LN(5), LN(3), 1.0], [2.0, LN(1), LN(1), 0.0]],   # tokens 2, 1
            [2, 1], [[0.75, 0.25], [0.375, 0.625], [0.5, 0.5]]),
           # Logits near 100, as a language model's can be: exp(100) overflows float32 to inf, so a softmax written
           # as exp(z) / Σ exp(z) without subtracting the row's max gives inf / inf = nan. Tokens 3, 0.
           ([[100.0, 7.0, -2.0, 100.0 + LN(3), 50.0], [100.0, 0.0, 1.0, 100.0, 2.0],
             [100.0 + LN(7), 3.0, 99.0, 100.0, -1.0]],
            [3, 0], [[0.75, 0.25], [0.5, 0.5], [0.125, 0.875]])],
    read=inputs_as(torch.float32, None, torch.float32),
    shape=lambda logits, ids: (logits.shape[0], len(ids)),
    meaning=" (B, C), one column per label token",
    atol=1e-5,
    where=lambda logits, ids: f" for label_token_ids={_ids(ids)} and logits of shape {tuple(logits.shape)}",
    fields=lambda logits, ids: {"B": logits.shape[0], "C": len(ids), "first": _ids(ids)[0],
                                "sums": [round(s, 4) for s in logits.softmax(-1)[:, _ids(ids)].sum(-1).tolist()]},
    unchanged="restrict_to_labels changed the logits tensor it was given (an in-place operation such as "
              "masked_fill_ or a slice assignment); build a new tensor instead.",
    explain=lambda out, expected, z, ids: (
        f"restrict_to_labels returned {_round(out)} for label_token_ids={_ids(ids)}; expected {_round(expected)}."
        + " These are not probabilities: each row must be ≥ 0 and sum to 1." * (not _probabilities(out)), RECIPE),
    hints=[(IndexError, _indexes_rows), ((RuntimeError, TypeError), _gather_index), (TypeError, _index_select_list)],
    mistakes=table([
        ("whole-vocabulary-distribution",
         "restrict_to_labels returned a distribution over the whole vocabulary{where}. It must return one "
         "probability per label, (B, C) = ({B}, {C}).", SELECT),
        ("whole-vocabulary-distribution",
         "restrict_to_labels returned a distribution over the whole vocabulary{where} (zero outside the "
         "labels). It must return one probability per label, (B, C) = ({B}, {C}).", SELECT),
        ("returns-logits",
         "restrict_to_labels returned the label tokens' logits{where}, not probabilities. Apply a softmax "
         "over the C selected logits.", SOFTMAX),
        # Found by a simulated student: both got only the expected rows before.
        ("one-hot-not-probabilities",
         "restrict_to_labels returned a one-hot row per example{where}: 1 at the label with the largest logit "
         "and 0 elsewhere, a decision rather than a distribution. Every label keeps the probability the "
         "softmax over the C label logits gives it, so a close second shows as close.", SOFTMAX),
        ("logits-divided-by-sum",
         "restrict_to_labels divided the label logits by their sum{where}: each row then sums to 1, but a ratio "
         "of logits is no distribution: a logit of 0 gets probability 0, a negative one a negative probability, "
         "and a row whose logits sum to 0 divides by 0. Logits are log-scores: a softmax exponentiates them, "
         "exp(z_c) / Σ_k exp(z_k), and then normalises.", SOFTMAX),
        ("vocabulary-order",
         "the columns are in the wrong order{where}: column c must be the probability of `label_token_ids[c]` "
         "(here token {first} first), in the order the caller gave. Sorting the ids, or selecting them with "
         "a boolean mask over the vocabulary, returns them in vocabulary order instead.",
         "Index with `label_token_ids` as given: `[:, label_token_ids]`, unsorted and without a mask."),
        ("softmax-over-batch",
         "each column sums to 1, not each row{where}: the softmax ran over dim 0, the batch. Normalise over "
         "the labels, the last axis (dim=-1).", "Use `.softmax(dim=-1)` instead of `.softmax(dim=0)`."),
        ("indexes-rows",
         "restrict_to_labels indexed the rows{where}: the label token ids picked examples, on dimension 0 (the B = "
         "{B} examples), but each label token is a column, on the vocabulary axis (dimension 1).", COLUMNS),
        ("sigmoid-not-softmax",
         "restrict_to_labels applied a sigmoid to each label logit on its own{where}: the rows do not sum to "
         "1, because the C labels do not share one distribution.", SOFTMAX),
        ("log-probabilities",
         "restrict_to_labels returned log-probabilities{where}: every entry is ≤ 0, and it is their "
         "exponentials that sum to 1 in each row. The function returns probabilities.",
         "Use `.softmax(dim=-1)` instead of `.log_softmax(dim=-1)`."),
        # Found by a simulated student: passed before the case of logits near 100.
        ("exp-overflow",
         "restrict_to_labels returned nan{where}: the logits are near 100, and exp(100) overflows float32 to "
         "inf, so exp(z) / Σ exp(z) is inf / inf. A softmax subtracts each row's largest logit before the exp "
         "(the result is the same, and no exp exceeds 1); torch's softmax does so.",
         "Use `.softmax(dim=-1)` on the selected logits, or subtract `.amax(dim=-1, keepdim=True)` from "
         "them before `.exp()`."),
        # Found by a simulated student: `torch.gather` with a (1, C) index gathers from the first row only.
        ("gather-index-shape",
         "restrict_to_labels returned one row, shape (1, {C}){where}: `torch.gather` returns a tensor of its "
         "index's shape, and a (1, C) index gathers from row 0 alone. The index must be (B, C) = ({B}, {C}): "
         "one row of label ids per example.", GATHER_FIX),
        ("softmax-before-selecting",
         "the rows sum to {sums}, not 1{where}. You took the softmax over the whole vocabulary and then "
         "selected the label columns, so the mass of every other token is missing. Select the C label "
         "logits first, then apply the softmax over those C values only.",
         "Move the `.softmax(dim=-1)` after the selection of the label columns."),
        # A softmax written by hand, its sum with no dim: before only the expected rows ("not probabilities")
        ("softmax-over-batch",
         "the entries of the whole output sum to 1, not each row{where}: your softmax divides by one sum over the "
         "whole batch (`.sum()` with no dim), so the B = {B} rows share one distribution. Normalise each row over its "
         "C labels, the last axis (dim=-1).", "Divide by a sum over the last axis, `.sum(dim=-1, keepdim=True)`, or "
         "use `.softmax(dim=-1)`."),
        # Found by probing the check: got only the expected rows before (its nan on logits near 100 ruled out the
        # softmax over dim 0 of the row above)
        ("softmax-over-batch",
         "each column sums to 1, not each row{where}: your softmax divides by a sum over dim 0, the B = {B} examples "
         "of the batch. Normalise each row over its C labels, the last axis (dim=-1).",
         "Divide by a sum over the last axis, `.sum(dim=-1, keepdim=True)`, or use `.softmax(dim=-1)`."),
    ]),
)

__all__ = ["predict_or_reject", "expected_calibration_error", "restrict_to_labels", "CheckFailed"]
