"""Checks for lesson 05: SpanHead, best_span and span_loss. Every expected value is written out by hand;
the checks search for spans only under the mistakes' wrong rules."""
from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Any, Callable, Sequence

import torch

from ..codec import GraderError
from . import heads
from .core import CheckFailed, a_type, call_raw, fail, passed, positions, require_module_class
from ..kernel import STEP_LR, weighted_backward
from .engine import (Exercise, backward_through, close_gradient, grader_side, judge_gradients, same,
                     secret_sizes, secret_sizes_drawn, show)
from .shared import table

# --- best_span(start_logits, end_logits, allowed, max_len) → (B, 2) long ----------------------------
# The visible cases' layout: [CLS] q q [SEP] p p p [SEP], so the passage is positions 4, 5, 6.
F_, T_ = False, True
PASSAGE, PASSAGE_SHORT = [F_, F_, F_, F_, T_, T_, T_, F_], [F_, F_, F_, F_, T_, T_, F_, F_]
# (name, start_logits, end_logits, allowed, max_len, expected (B, 2)); a span scores start + end logit.
BEST_SPAN_CASES = [
    # Each row normalised in its own row: row 0: (4,6)=4 beats (5,6)=3; row 1: (4,5)=6; row 2, allowed 1…7:
    # (2,2)=6. In row 2 the two argmaxes give (6,2), and a band without i ≤ j (|j − i| < max_len) takes (6,5)=7.
    # Three rows, so that pairs stacked as (2, B) cannot pass for (B, 2).
    ("three rows", [[0, 0, 0, 0, 2, 1, 0, 0], [0, 0, 0, 0, 5, 0, 0, 0], [0, 0, 1, 0, 0, 0, 4, 0]],
     [[0, 0, 0, 0, 0, 0, 2, 0], [0, 0, 0, 0, 0, 1, 0, 0], [0, 0, 5, 0, 0, 3, 0, 0]],
     [PASSAGE, PASSAGE, [F_, T_, T_, T_, T_, T_, T_, T_]], 3, [[4, 6], [4, 5], [2, 2]]),
    # (4,4)=1 (4,5)=4 (4,6)=2 (5,5)=3 (5,6)=1 (6,6)=3.5 → (4, 5); the two argmaxes alone give 6 and 5.
    ("crossing argmaxes", [[0, 0, 0, 0, 1, 0, 2.5, 0]], [[0, 0, 0, 0, 0, 3, 1, 0]], [PASSAGE], 3, [[4, 5]]),
    # Peaks in the question (row 0), at [CLS] (row 1), on [SEP] and [PAD] (row 2); inside the passages
    # row 0: (5,6)=3.5 is best, row 1: (4,5)=3, row 2: (4,5)=2.
    ("peaks outside the passage",
     [[0, 6, 1, 0, 0.5, 2, 0, 0], [5, 0, 0, 0, 1, 0, 0.2, 0], [0, 0, 0, 0, 1, 0.5, 4, 4]],
     [[0, 1, 6, 0, 0, 0, 1.5, 0], [5, 0, 0, 0, 0.3, 2, 0, 0], [0, 0, 0, 0, 0.2, 1, 4, 4]],
     [PASSAGE, PASSAGE, PASSAGE_SHORT], 3, [[5, 6], [4, 5], [4, 5]]),
    # max_len 2: (4,6)=5.8 is three tokens long, too long; (4,5)=4 is exactly two tokens and best.
    ("max_len 2", [[0, 0, 0, 0, 3, 0, 0, 0]], [[0, 0, 0, 0, 0, 1, 2.8, 0]], [PASSAGE], 2, [[4, 5]]),
    # A four-token passage, max_len 2: (4,5)=3.5 is best; a band one too long takes (4,6)=6, two
    # argmaxes (7,6), which crosses, and a band one too short (7,7)=3.2.
    ("max_len 2, longer passage", [[0, 0, 0, 0, 3, 0, 0, 3.2, 0]], [[0, 0, 0, 0, 0, 0.5, 3, 0, 0]],
     [[F_, F_, F_, F_, T_, T_, T_, T_, F_]], 2, [[4, 5]]),
    # max_len 2: (7,7)=2.5 is best; a band one too long (or with no cap) takes (4,6)=4, an exclusive end (7,8),
    # and two argmaxes cross at (7,6): here a missing or loose cap is told from an exclusive end.
    ("max_len 2, long span best", [[0, 0, 0, 0, 2, 0, 0, 2.5, 0]], [[0, 0, 0, 0, 0, 0.3, 2, 0, 0]],
     [[F_, F_, F_, F_, T_, T_, T_, T_, F_]], 2, [[7, 7]]),
    # Every span of the passage scores below 0: (4,4)=-0.5 is best; a search whose best score starts at 0 keeps its
    # first pair (0,0); multiplied by the mask, the logits outside the passage become 0 and (2,4)=0.5 wins;
    # unmasked, the question's (1,2)=5 does.
    ("negative passage logits", [[0, 2, 0, 0, -1, -3, -2, 0]], [[0, 0, 3, 0, 0.5, -1, -3, 0]], [PASSAGE], 3,
     [[4, 4]]),
    # Allowed positions 1, 3, 4: not one block, position 2 between them is not allowed. (1,1)=1 (1,3)=4
    # (3,3)=3 (3,4)=1.5 (4,4)=3.5 → (1, 3), which spans position 2 but neither starts nor ends there. A search
    # over the block from the first to the last allowed position takes (2,3)=7; over all positions (0,0)=8.
    ("allowed positions not one block", [[5, 1, 4, 0, 2.5, 0]], [[3, 0, 0, 3, 1, 0]], [[F_, T_, F_, T_, T_, F_]], 3,
     [[1, 3]]),
]


def _positions(row: torch.Tensor) -> str:
    pos = positions(row.bool())
    return f"positions {pos[0]}…{pos[-1]}" if pos and pos == list(range(pos[0], pos[-1] + 1)) else f"positions {pos}"


def _backward(out, s, e, allowed, max_len) -> str:
    b, (i, j) = next((b, (i, j)) for b, (i, j) in enumerate(out.tolist()) if j < i)
    return (f"best_span returned {out.tolist()} (max_len={max_len}): row {b} ends before it starts (j={j} < i={i}). "
            "A span runs forward from its start: your search keeps pairs with |j − i| < max_len, in either order.")


def _not_allowed(which: str, out, s, e, allowed, max_len) -> str:
    """The message of a `which` ("start" or "end") outside the allowed positions, in the first row that has one."""
    k = ("start", "end").index(which)
    b = next(b for b, pair in enumerate(out.tolist()) if not allowed[b, pair[k]])
    return (f"best_span returned {out.tolist()} (max_len={max_len}): row {b} {which}s at position {int(out[b, k])}, "
            f"which is not allowed ({_positions(allowed[b])} are): the {which} is not restricted to the allowed "
            "positions.")


def _spans(text: str) -> Callable[..., str]:
    return lambda out, s, e, allowed, max_len: f"best_span returned {out.tolist()} (max_len={max_len}): {text}"


MULTIPLIED = ("these spans maximise s_i × e_j, the start and end logits multiplied. Logits are log-scores: "
              "P_start(i)·P_end(j) is proportional to exp(s_i + e_j), so multiplying the probabilities adds the "
              "logits. A product of logits ranks spans otherwise: two negative logits make a large positive score, "
              "and a logit of 0 cancels the other.")
ADD_LOGITS = ("Add the logits, `start_logits[:, :, None] + end_logits[:, None, :]`, or multiply softmax "
              "probabilities, not logits.")
BAND_FIX = "Score every pair i ≤ j ≤ i + max_len − 1 and keep the best."
MASK_FIX = "`start_logits.masked_fill(~allowed, float('-inf'))`, and the same for end_logits."


def best_span(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(start_logits, end_logits, allowed, max_len)` on each case, on each of its rows alone, and
    with `allowed` as 0/1 integers. BEST_SPAN itself is the engine's, case by case (as tests/test_engine.py replays
    it)."""
    cases = BEST_SPAN_CASES if cases is None else cases
    replace(BEST_SPAN, then=lambda fn: _integer_mask(fn, cases), rows=(
        "A softmax (or max) over the batch axis (dim 0) mixes rows; P_start and P_end are each normalised over the "
        "positions of ONE row (dim -1)."))(fn, cases)


def _integer_mask(fn: Callable, cases: Sequence) -> None:
    """Fail unless `fn` gives each case's answer with `allowed` as 0/1 integers too, which the contract accepts."""
    for case in cases:
        (start, end, allowed, max_len), expected = BEST_SPAN.read(case)
        try:
            out = call_raw(fn, "best_span", start, end, allowed.long(), max_len)
            said = "" if isinstance(out, torch.Tensor) and out.tolist() == expected.tolist() else f"returns {show(out)}"
        except GraderError:
            raise
        except Exception as err:
            said = f"raises {type(err).__name__} ({err})"
        if said:
            fail(f"best_span gives the right answer when allowed is a bool mask, but {said} when the same mask comes "
                 "as 0/1 integers, which the contract accepts. `~` on an integer tensor is not a logical not "
                 "(~1 == -2): turn the mask into bool first.", "integer-mask", "E.g. `allowed = allowed.bool()`.")


BEST_SPAN = Exercise(
    "best_span", BEST_SPAN_CASES,
    read=lambda case: ((*(torch.as_tensor(x, dtype=torch.float32) for x in case[1:3]), torch.as_tensor(
        case[3], dtype=torch.bool), case[4]), torch.as_tensor(case[5], dtype=torch.long)),
    shape=lambda start, end, allowed, max_len: (start.shape[0], 2), dtype=torch.long,
    meaning=" (B, 2): one (i, j) pair per row, the pairs stacked on the last axis",
    where=lambda start, end, allowed, max_len: f" (max_len={max_len}, allowed rows {[_positions(r) for r in allowed]})",
    dtype_message="{name} returned dtype {got}{where}; positions are indices, so return a long tensor (e.g. .long()).",
    unchanged="best_span changed a tensor it was given (an in-place masked_fill_ or similar); work on new "
              "tensors: masked_fill without the underscore returns a copy.",
    # a loop whose band runs past the row's end: torch's words and the generic "print the shape" hint before
    hints=[(IndexError, lambda err, start, end, allowed, max_len: (
        f"A span's end runs up to i + max_len − 1, past the last position, n − 1 = {start.shape[1] - 1}, for the "
        "starts near the end of the row: stop the band at the end of the row.", "band-past-the-end",
        "`for j in range(i, min(i + max_len, n)):`") if f"for dimension 1 with size {start.shape[1]}" in str(err)
        else None)],
    # Where two mistakes give the same spans (a band one too long agrees with two argmaxes on "max_len 2", and
    # with an exclusive end on the longer passage) the engine names neither; "long span best" tells them apart.
    mistakes=table(says=_spans, rows=[
        ("one-too-long", "a span here is max_len + 1 tokens long, one more than allowed: a span may end at j ≤ i + "
         "max_len − 1 (is your upper bound off by one, or missing?).", "Keep only the pairs with j ≤ i + max_len − 1."),
        ("independent-argmax", "the best start and, on its own, the best end (two independent argmaxes). That can put "
         "the end before the start, or make the span too long.", BAND_FIX),
        ("backward-spans", _backward, "Keep only the pairs with i ≤ j as well as j ≤ i + max_len − 1."),
        # Found by a simulated student: both got only "returned X; expected Y" before.
        ("backward-spans", "every span here ends at or before its start (j ≤ i): your band holds the pairs i − max_len "
         "< j ≤ i, the transpose of the right one (`tril` where `triu` belongs, or i and j swapped). A span runs "
         "forward from its start: i ≤ j ≤ i + max_len − 1.",
         "Keep the upper triangle: `.triu()` keeps j ≥ i, then `.tril(max_len - 1)` keeps j ≤ i + max_len − 1."),
        ("one-token-spans-excluded", "no span here is one token long, yet a one-token span (i = j) is the best in a "
         "row: your band keeps only i < j. A span may start and end on the same token.",
         "Compare i and j with ≤, not <, in the band: the pair (i, i) is a span."),
        ("end-not-restricted", partial(_not_allowed, "end"), "Set the end logits to −inf where allowed is False too."),
        ("start-not-restricted", partial(_not_allowed, "start"),
         "Set the start logits to −inf where allowed is False too."),
        ("nan-from-softmax-over-batch", "a softmax over the batch axis (dim 0) of logits masked with −inf is NaN (0/0) "
         "at a position masked in every row, and argmax takes NaN for the largest value. P_start and P_end are each "
         "normalised over the positions of ONE row (dim -1).",
         "Take the softmax (or log_softmax) over dim=-1 after masking."),
        ("pairs-on-first-axis", lambda out, s, e, allowed, m: (
            f"best_span returned shape {tuple(out.shape)}: the starts in one row and the ends in another, (2, B) = "
            f"(2, {len(s)}). Return one (i, j) pair per row, (B, 2) = ({len(s)}, 2)."),
         "Stack the starts and the ends on the last axis (dim=-1)."),
        ("outside-the-passage", "these spans are chosen among all positions: in the question, on [CLS], [SEP] and "
         "padding too. The answer lies inside the passage: mask where allowed is False before choosing.", MASK_FIX),
        ("mask-multiplied", "the logits were multiplied by the mask, which turns the positions outside the passage "
         "into 0, and 0 beats negative logits inside it. Exclude positions by setting their logits to −inf instead.",
         MASK_FIX),
        ("start-end-swapped", "each pair is (end, start): the span's end came first. Return (i, j), the start first.",
         "Stack the start index first: `torch.stack([i, j], dim=-1)`."),
        ("probabilities-added", "these spans maximise P_start(i) + P_end(j): the two probabilities were added. A "
         "span's probability is their product, P_start(i)·P_end(j); a large P_start alone must not make a span win.",
         "Multiply the probabilities, or add their logarithms (log_softmax)."),
        ("greedy-start-first", "each span takes the best start first, then the best end after it: a greedy search. A "
         "weaker start with a much better end can make a more probable span.", BAND_FIX),
        ("exclusive-end", "each end is one past the answer's last token (exclusive, as bio_to_spans's ends are). "
         "best_span returns the last token itself, j, so that the answer is tokens i … j.",
         "Drop the `+ 1` on the end index."),
        ("one-too-short", "spans of exactly max_len tokens are left out, and they are allowed (j = i + max_len − 1): "
         "check the upper bound of your band.", "Keep the pairs with j ≤ i + max_len − 1, that is j < i + max_len."),
        ("searches-between-allowed", "a span here starts or ends between two allowed positions, at one that is not "
         "allowed: the search ran over every position from the first allowed to the last. The allowed positions need "
         "not be one block: keep only the pairs whose i and j are both allowed.",
         "Mask the logits with `allowed` itself, position by position, instead of a first-to-last range."),
        # Found by a simulated student: only "returned X; expected Y" before.
        ("logits-multiplied", MULTIPLIED, ADD_LOGITS),
        ("logits-multiplied", MULTIPLIED + " With −inf at the excluded positions, −inf × −inf = +inf (and −inf × 0 is "
         "NaN, which argmax takes for the largest), so a pair outside the allowed positions wins.", ADD_LOGITS),
        # Found by a simulated student: only "returned X; expected Y" before. A table of logits, then of
        # log-probabilities (heads_mistakes.ch05 computes both).
        *[("zeros-outside-band", "these spans lie outside the band i ≤ j ≤ i + max_len − 1: `triu` and `tril` set "
           "the pairs they drop to 0, not −inf, so a dropped pair beats every span whose score is below 0 (a sum of "
           "log-probabilities always is). A dropped pair must lose to every span.",
           "Cut the scores with −inf: `scores.masked_fill(~band, float('-inf'))`, where `band = "
           "torch.ones(n, n, dtype=torch.bool).triu().tril(max_len - 1)`.")] * 2,
        # argmax over the flattened (B, n·n) table of span scores: only "returned shape (B,)" before
        ("flat-index", "one number per row, i·n + j, the argmax of the flattened table of span scores, not the pair "
         "(i, j) it stands for. Turn it back into a pair: i = k // n, j = k % n, with n the number of positions.",
         "`i, j = k // n, k % n`, then `torch.stack([i, j], dim=-1)`."),
        # the band searched as a (B, n, max_len) table of (start, offset) scores, its offset k returned as the end:
        # only "returned X; expected Y" before
        ("end-as-offset", "each end here is j − i, the span's offset from its start (as a table of scores indexed by "
         "start and offset gives it), not the end's position: the answer is tokens i … j, with j = i + offset.",
         "Add the start back before returning: `torch.stack([i, i + k], dim=-1)`, k the offset."),
        # a loop whose best score starts at 0, not −inf: was told mask-multiplied, whose (0, 0) it shared
        ("best-starts-at-zero", "a row whose best span scores below 0 got (0, 0): your search starts its best score "
         "at 0, so no span beats it there and the first pair is kept. Scores are logits or log-probabilities, often "
         "negative (a sum of log-probabilities always is).",
         "Start the best score at `float('-inf')`, so that the first allowed span in the band replaces it."),
    ]))


# --- span_loss(start_logits, end_logits, start, end) → 0-d tensor ---------------------------------
L = math.log
# Logits are logs of small integers, so each probability is a fraction: [ln 1, ln 3, ln 4] gives P = [1/8,
# 3/8, 4/8]. (start_logits, end_logits, start, end, CE(start_logits, start), CE(end_logits, end)), the last
# two by hand; a hidden case may carry two more values, not used.
SPAN_LOSS_CASES = [
    ([[0.0, L(7), 0.0, 0.0], [L(2), L(2), L(4), 0.0], [L(1), L(2), L(1), 0.0]],   # B = 3 rows of n = 4
     [[L(3), 0.0, 0.0, 0.0], [0.0, 0.0, L(2), 0.0], [L(5), L(2), L(3), 0.0]], [1, 2, 0], [0, 2, 2],
     (L(10 / 7) + L(9 / 4) + L(5 / 1)) / 3, (L(6 / 3) + L(5 / 2) + L(11 / 3)) / 3),
    ([[L(1), L(3), L(4)], [L(2), L(1), L(1)]], [[L(1), L(1), L(2)], [L(1), L(6), L(1)]], [1, 0], [2, 1],
     (L(8 / 3) + L(4 / 2)) / 2, (L(4 / 2) + L(8 / 6)) / 2),   # P = 3/8 and 2/4, then 2/4 and 6/8
    ([[L(1), L(1), L(1), L(5)]], [[L(2), L(3), L(4), L(1)]], [3], [2], L(8 / 5), L(10 / 4)),
]


MSE = ("that is a mean squared error {what}, not a cross-entropy. The start (and the end) is one choice among the n "
       "positions: its loss is −log P(target), with P a softmax over the row's positions, which a squared error "
       "neither normalises nor weighs like a log (a confident wrong position costs it little).")
MSE_FIX = ("Replace the squared error with `F.cross_entropy(start_logits, start)`, and the same for the ends: it "
           "takes the raw (B, n) logits and the (B,) positions.")


SMOOTHING = (0.1, 0.05, 0.2)   # the label smoothings named, one row each (heads_mistakes.ch05 computes them)


def _loss(text: str) -> Callable[..., str]:
    return lambda out, s, e, start, end: f"span_loss gave {float(out.detach()):.4f}: " + text.format(B=len(start))


span_loss = Exercise(
    "span_loss", SPAN_LOSS_CASES, shape=lambda *inputs: (),
    read=lambda case: ((*(torch.as_tensor(x, dtype=torch.float32).detach().clone() for x in case[:2]),
                        *(torch.as_tensor(x, dtype=torch.long) for x in case[2:4])),
                       torch.tensor((float(case[4]) + float(case[5])) / 2)),
    meaning=" (one number for the batch, a 0-dim tensor that still carries the graph so that `loss.backward()` "
            "can train the head: do not call .item())",
    unchanged="span_loss changed a tensor it was given; compute the loss without modifying the inputs.",
    # one-hot (integer) targets, as Keras's categorical cross-entropy wants them: torch's words alone before
    hints=[(RuntimeError, lambda err, *inputs: (
        "F.cross_entropy takes the target positions themselves, (B,) integers: a (B, n) target is read as "
        "probabilities over the positions, which must be floats, and one-hot targets are not needed at all.",
        "one-hot-targets", "`F.cross_entropy(start_logits, start)`: pass `start` as it is, without F.one_hot.")
        if "target with class probabilities" in str(err) else None)],
    then=lambda fn: backward_through(fn, "span_loss",
                                     *(torch.tensor(x, requires_grad=True) for x in SPAN_LOSS_CASES[0][:2]),
                                     *map(torch.tensor, SPAN_LOSS_CASES[0][2:4])),
    explain=lambda out, expected, *inputs: (f"span_loss gave {float(out.detach()):.4f}; expected "
                                            f"(CE(start) + CE(end)) / 2 = {float(expected):.4f}."),
    mistakes=table(says=_loss, rows=[
        ("one-loss-per-example", lambda out, *inputs: f"span_loss returned one loss per example, {show(out)}: average "
         "them over the batch, so that the loss is one number (a 0-dim tensor).",
         "Drop `reduction=\"none\"`: F.cross_entropy's default takes the mean over the batch."),
        ("start-only", "that is the start loss alone: the end logits get no training signal. Add the end loss, halve "
         "the sum.", "Add `F.cross_entropy(end_logits, end)` and divide the sum by 2."),
        ("end-only", "that is the end loss alone: the start logits get no training signal. Add the start loss, halve "
         "the sum.", "Add `F.cross_entropy(start_logits, start)` and divide the sum by 2."),
        # On any one case the larger loss equals the start or the end loss alone; across the cases only this
        # row fits such an answer (the engine names a mistake only if the other cases agree with it).
        ("larger-of-the-two", "that is the larger of the start and end losses; the loss is their mean: add them, halve "
         "the sum.", "Replace the maximum of the two losses with their sum divided by 2."),
        ("not-halved", "you added the start and end losses without halving the sum.", "Divide the sum by 2."),
        # `a + b / 2`: only "expected (CE(start) + CE(end)) / 2" before
        ("operator-precedence", "that is CE(start) + CE(end) / 2: `/` binds before `+`, so only the end loss was "
         "halved.", "Put the sum in parentheses before dividing: `(F.cross_entropy(start_logits, start) + "
         "F.cross_entropy(end_logits, end)) / 2`."),
        ("nll-on-logits", "that is minus the target's raw logit, what `F.nll_loss` gives when it is handed logits: a "
         "cross-entropy needs log-probabilities, so the log-softmax over the positions is missing.",
         "Apply log_softmax(dim=-1) to the logits first, or use `F.cross_entropy`, which does both."),
        ("softmax-first", "you applied softmax before the cross-entropy, which applies log-softmax itself: pass the "
         "raw logits.", "Remove the `.softmax(...)`: give F.cross_entropy the logits as they are."),
        ("targets-swapped", "you swapped the targets: score start logits against the start positions, end logits "
         "against the ends.", "Pair `start_logits` with `start` and `end_logits` with `end`."),
        # a line copied and half edited, one scorer's logits read twice: only "expected (CE(start) + ...)" before
        *[("same-logits-twice", f"the {other} loss reads {which}_logits: both targets were scored against the {which} "
           f"logits. The {other} positions are scored by {other}_logits.",
           f"Use `F.cross_entropy({other}_logits, {other})` for the {other} loss.")
          for which, other in [("start", "end"), ("end", "start")]],
        ("summed-over-batch", "that is {B} × the expected value: you summed over the {B} examples; average them.",
         "Drop `reduction=\"sum\"` (the default is the mean), or divide by the batch size."),
        ("softmax-over-batch", "that is a softmax over the batch axis (dim 0), which mixes the examples. Each row's "
         "softmax runs over its own positions.",
         "`F.cross_entropy(start_logits, start)` does, with logits (B, n) and targets (B,)."),
        # Found by a simulated student: each got only "expected (CE(start) + CE(end)) / 2" before.
        *[("mse-not-cross-entropy", MSE.format(what=what), MSE_FIX) for what in [
            "of the logits against one-hot targets", "of the softmax against one-hot targets",
            "of the argmax positions against the targets"]],
        *[("label-smoothing", f"that is a cross-entropy with label smoothing {eps} (`label_smoothing={eps}`): its "
           f"target puts {1 - eps:g} on the answer position and spreads {eps} over all n positions. The span loss's "
           "target is the answer position alone, probability 1.", "Drop `label_smoothing=...` from F.cross_entropy.")
          for eps in SMOOTHING],
        # the start and the end as n yes/no questions (a sigmoid per position): only "expected ..." before
        ("binary-cross-entropy", "that is a binary cross-entropy (`F.binary_cross_entropy_with_logits` against "
         "one-hot targets): it treats every position as a yes/no question of its own. The start is one choice among "
         "the n positions of its row: its loss is −log P(start), with P a softmax over the row.",
         "Replace it with `F.cross_entropy(start_logits, start)`, and the same for the ends: it takes the raw (B, n) "
         "logits and the (B,) positions."),
    ]),
)

# --- SpanHead(d): H (B, n, d) → (start_logits, end_logits), each (B, n) ------------------------------
HEAD_SIZES = [(8, 2, 5), (64, 3, 7)]  # (d, B, n)


def span_head(cls, sizes: Sequence | None = None, seed: int = 0) -> None:
    """Build `cls(d)` and judge what it returns, also under weights the grader sets, whatever their layout."""
    require_module_class(cls, "SpanHead", "span_head")
    sizes, g = HEAD_SIZES if sizes is None else sizes, torch.Generator().manual_seed(seed)
    for d, B, n in sizes:
        _judge_head(cls, torch.randn(B, n, d, generator=g), d, seed)
    passed("SpanHead", len(sizes))


POSITION_AXIS = ("SpanHead.forward split its (B, n, 2) scores on the position axis (dimension 1), which holds the n "
                 "positions, not the start and end scorers:")
SPLIT_LAST = "Split the last axis instead: `start_logits, end_logits = logits.unbind(-1)`."


def _drive(cls, H: torch.Tensor, d: int, seed: int, **asked) -> dict:
    """The facts of `cls(d)` (kernel.drive_head) in eval mode on H and on the probes 0, e_1, …, e_d, its outputs read
    as (start, end) pairs."""
    probes = _probes(d)
    B, n, _ = H.shape
    # torch's words when forward splits start from end on the batch axis: the probes are a batch of one
    ran = heads.run(cls, "SpanHead", "H", (d,), seed, [H, probes], stepped_on=1, **asked, crashes=[(
        "out of bounds for dimension 0 with size 1", "SpanHead.forward indexes the batch axis (dimension 0) of its "
        "scores: it picks examples, not the start and end scorers. Those are on the last axis of the (B, n, 2) "
        "scores; split them there.", "splits-batch-axis"),
        # Where B ≤ 2, only the position axis of the (B, n, 2) scores holds more than two entries (n > 2)
        *[("too many values to unpack (expected 2)", f"{POSITION_AXIS} `unbind(1)` gives one (B, 2) tensor per "
           f"position, n = {n} of them, too many to unpack into two. {SPLIT_LAST}", "splits-position-axis")]
        * (B <= 2), *heads.linear_swapped(d, 2)])
    ran["outs"] = [[_logits(o, x.shape) for o in outs] for outs, x in zip(ran["outs"], [H, probes])]
    if "gradients" in ran:
        ran["gradients"]["stepped"] = _logits(ran["gradients"]["stepped"], probes.shape)
    return ran


def _probes(d: int) -> torch.Tensor:
    """(1, d + 1, d): the vectors 0, e_1, …, e_d, on which a linear head's logits read off its weights and biases."""
    return torch.cat([torch.zeros(1, d), torch.eye(d)])[None]


def _logits(out, shape) -> tuple[torch.Tensor, torch.Tensor]:
    B, n, d = shape
    if isinstance(out, (tuple, list)) and len(out) == n != 2 and all(
            isinstance(t, torch.Tensor) and tuple(t.shape) == (B, 2) for t in out):
        fail(f"{POSITION_AXIS} it returned {n} tensors of shape ({B}, 2), one per position, for H of shape "
             f"({B}, {n}, {d}).", "splits-position-axis", SPLIT_LAST)
    if not (isinstance(out, (tuple, list)) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out)):
        got = f"one tensor of shape {tuple(out.shape)}" if isinstance(out, torch.Tensor) else a_type(out)
        fail(f"SpanHead returned {got}; it must return a pair of tensors (start_logits, end_logits), each (B, n) = "
             f"({B}, {n})" + (": split the last axis, e.g. `.unbind(-1)`." if got.endswith(", 2)") else "."),
             "one-tensor" if isinstance(out, torch.Tensor) else "not-a-pair",
             "Split the (B, n, 2) scores on the last axis and return the two halves: "
             "`start_logits, end_logits = logits.unbind(-1)`.")
    for name, t in zip(("start_logits", "end_logits"), out):
        if tuple(t.shape) != (B, n):
            key, why, fix = _shapes(B, n).get(tuple(t.shape), ("wrong-shape", ".", ""))
            fail(f"SpanHead's {name} has shape {tuple(t.shape)} for H of shape ({B}, {n}, {d}); expected (B, n) = "
                 f"({B}, {n})" + why, key, fix)
    return out[0], out[1]


def _shapes(B: int, n: int) -> dict[tuple | None, tuple[str, str, str]]:
    """A wrong shape of start_logits or end_logits for H (B, n, d) → (key, what it says, the fix); None for a shape
    that would not tell the mistake (B = n)."""
    return {(B, n, 1): ("keeps-last-axis", ": drop the last axis (`.squeeze(-1)`).",
                        "Squeeze only the last axis of each scorer's output, `.squeeze(-1)`, or unbind a (B, n, 2) "
                        "output."),
            (n,) if B == 1 else None: ("squeeze-drops-batch-axis", ": `.squeeze()` without an axis drops the batch "
                                       "axis too when B = 1; squeeze only the last one, `.squeeze(-1)`.",
                                       "Replace `.squeeze()` by `.squeeze(-1)`."),
            # Found by a simulated student: both got only the expected shape before.
            (n, B) if n != B else None: ("logits-transposed", ": (n, B), the transpose. `.T` reverses every axis of a "
                                         "3-D tensor: the (B, n, 2) scores' `.T` is (2, n, B), and unpacking it gives "
                                         "two (n, B) tensors.", SPLIT_LAST),
            (B, 2) if n != 2 else None: ("splits-position-axis", f": (B, 2), the scores of one position. "
                                         f"{POSITION_AXIS} `logits[:, 0]` is position 0's (start, end) pair.",
                                         SPLIT_LAST),
            (B,) if B != n else None: ("scores-one-position", ": one logit per example, as if the head scored one "
                                       "vector per example (`H[:, 0]`, the [CLS] position, or a pooled mean). Any "
                                       "position may start or end the answer: score every position.",
                                       "Apply the linear layer to the whole H, (B, n, d), not to `H[:, 0]`.")}


def _close(got: tuple, want: tuple) -> bool:
    return all(same(a, b, 1e-4, rtol=1e-4, kind=False) for a, b in zip(got, want))


def _scorers(probed) -> list:
    """(w, b) of the start and the end scorer, from a linear head's logits on the probes 0, e_1, …, e_d."""
    return [(p[0, 1:].float() - p[0, 0].float(), p[0, 0].float()) for p in probed]


def _linear(X: torch.Tensor, scorers) -> tuple:
    """A linear head's (start_logits, end_logits) on X, from its scorers [(w, b) of the start, (w, b) of the end]."""
    return tuple(X @ w + b for w, b in scorers)


def _secret_step_taken(facts: dict, H: torch.Tensor, scorers: list, seed: int) -> bool:
    """Whether SpanHead's outputs on the probes after the kernel's secret step (engine._secret_step_right's, whose
    size a hook cannot foresee: issue 25, K1G) are a linear head's after that step. The head holds its scorers in a
    layout of its own, and the kernel's sizes are keyed by a state entry's numel: the usual layouts are the two
    scorers apart (weights of d, biases of 1), together (2d and 2, as nn.Linear(d, 2)), or all in one tensor
    (2d + 2). A layout whose public step (STEP_LR) gives the head's outputs after it must give them after the secret
    step too. A head whose public step no usual layout gives (its scorers are sums of parameters, say) moves by
    dynamics of its own, which the grader cannot foresee either: it is not judged here. On the grader's side only."""
    secret = facts.get("secret")
    if grader_side() is None or not isinstance(secret, dict):
        return True
    sizes, d = secret_sizes(secret), H.shape[-1]
    leaves = [[t.detach().clone().double().requires_grad_() for t in pair] for pair in scorers]
    with torch.enable_grad():
        weighted_backward(_linear(H.double(), leaves), seed)

    def explains(got: Any, size: dict[int, float]) -> bool:
        with torch.no_grad():
            right = _linear(_probes(d).double(), [[t - size[t.numel()] * t.grad for t in pair] for pair in leaves])
        return isinstance(got, (tuple, list)) and len(got) == 2 and all(map(close_gradient, got, right))

    no_bias = all(float(b.abs()) == 0 for _, b in scorers)   # right: a softmax over positions ignores it
    usual = [(w, b) for w, b in ((d, 1), (2 * d, 2), (2 * d + 2, 2 * d + 2)) if w in sizes and (b in sizes or no_bias)]
    public = [(w, b) for w, b in usual if explains(facts.get("stepped"), {d: STEP_LR, 1: STEP_LR * (b in sizes)})]
    return not public or secret_sizes_drawn(sizes) and any(
        explains(secret.get("stepped"), {d: sizes[w], 1: sizes.get(b, 0.0)}) for w, b in public)


# The squashing functions a head may put on its scores: (key, name, function, its inverse, the low end of its range).
# A tanh on the scores (the pooler's of lesson 02, tests/grading: SpanHead-tanh-on-the-logits) was only "not a
# linear map" before.
SQUASHES = [("sigmoid-output", "sigmoid", torch.sigmoid, torch.logit, 0),
            ("tanh-on-logits", "tanh", torch.tanh, torch.atanh, -1)]


def _squashed_linear(H: torch.Tensor, on_H: tuple, probed: tuple, f: Callable, inverse: Callable, low: int) -> bool:
    """Whether the logits on H, all in [low, 1], are f(H·w + b), each w and b read from the logits on the probes
    0, e_1, …, e_d (in (low, 1): small inputs) through f's inverse. A large H·w rounds to 1 in float32."""
    return all(bool(((t >= low) & (t <= 1)).all()) for t in on_H) and all(
        bool(((t > low) & (t < 1)).all()) for t in probed) and all(
        same(t, f(x), 1e-3) for t, x in zip(on_H, _linear(H, _scorers([inverse(p.double()) for p in probed]))))


def _judge_head(cls, H: torch.Tensor, d: int, seed: int) -> None:
    # Three heads built alike: with its own initial values (run twice), with the grader's numbers in every floating
    # entry of its state_dict (then a step), and with zeros there. A head initialised at zero is right, yet its
    # zero weights pass no gradient back to H: the step starts from the grader's numbers.
    own = _drive(cls, H, d, seed, passes=2)
    trained = _drive(cls, H, d, seed, train=True)
    loaded = _drive(cls, H, d, seed, fill=10_000 + seed, step=True)
    zeroed = _drive(cls, H, d, seed, fill="zeros", passes=2)
    (start, end), again = own["outs"][0]
    # Random with every weight at zero, which a dropout on H or on the logits is not: a layer made in forward
    heads.layer_built_in_forward(not _close(*zeroed["outs"][0]), "SpanHead", f" for H of shape {tuple(H.shape)}")
    # First: with dropout left on, every later pass (the grader's weights, the probes) is random too, and
    # would be called not linear.
    heads.dropout_at_eval(not _close(again, (start, end)), "SpanHead", f" for H of shape {tuple(H.shape)}")
    heads.no_train_only_layer(not _close(trained["outs"][0][0], (start, end)), "SpanHead",
                              "A span head is one linear map of each position's vector", f" for H of shape {tuple(H.shape)}")
    # A softmax over the (B, n, 2) scores' last axis pairs each start with its end: it was told sigmoid-output
    # (start = sigmoid(s − e) is a sigmoid of a linear map), another mistake's words, before.
    pairs = torch.stack([start, end])   # (2, B, n)
    for dim, axis in ((-1, "the positions"), (1, "the batch axis"), (0, "the start and the end of each position")):
        if bool((pairs >= 0).all()) and torch.allclose(pairs.sum(dim).float(), torch.ones(()), atol=1e-4):
            fail(f"SpanHead's start_logits and end_logits are probabilities (a softmax over {axis}); the head returns "
                 "raw logits. The softmax over the allowed positions belongs in best_span and in the loss.",
                 "softmax-inside-head", "Return the linear layer's two outputs as they are; remove the softmax from "
                 "forward.")
    on_H, scorers = loaded["outs"][0][0], _scorers(loaded["outs"][1][0])
    for key, name, f, inverse, low in SQUASHES:
        if _squashed_linear(H, on_H, loaded["outs"][1][0], f, inverse, low):
            fail(f"SpanHead's start_logits and end_logits all lie between {low} and 1: with the grader's weights "
                 f"loaded they are {name}(H·w + b), a {name} on each score. A span head returns raw logits, any real "
                 f"numbers: best_span and the loss take the softmax over the positions, and a {name} squashes every "
                 f"score into ({low}, 1), so that no position can stand out from the others by more than {1 - low}.",
                 key, f"Return the linear layer's outputs as they are, without the {name}.")
    if _close(on_H, (start, end)) and _close(zeroed["outs"][0][0], (start, end)):
        fail("SpanHead's logits stay the same whatever values the check loads into its state_dict (its parameters "
             "and buffers): its scorers are plain tensors, which neither load nor train. Create them as parameters "
             "in __init__, e.g. `nn.Linear(d, 2)` or `nn.Parameter(...)`, and compute the logits from them.",
             "no-parameters", "In __init__, `self.qa_outputs = nn.Linear(d, 2)`; in forward, score H with it. A layer "
             "kept in a Python list is not registered either: use `nn.ModuleList`.")
    grad, stepped = loaded["gradients"]["input_grad"], _scorers(loaded["gradients"]["stepped"])
    if (grad is None or not bool(grad.abs().sum() > 0)) and all(map(_close, scorers, stepped)):
        fail("SpanHead's logits are connected to no trainable parameter and not to H: one step of gradient descent "
             "on them moves no weight and no gradient reaches H, so training cannot learn them. Compute the logits "
             "from the head's parameters with torch operations, without .detach() or `torch.no_grad()`.",
             "not-connected", "Remove the `.detach()` (or the `torch.no_grad()` block) from forward.")
    if torch.allclose(*on_H):
        fail("With the grader's weights in its parameters, SpanHead's start_logits and end_logits are equal: it "
             "scores the start and the end with the same parameters (one shared vector or layer used twice), so they "
             "can never differ. Learn two scorers: one Linear(d, 2) whose two outputs you split, or two vectors.",
             "same-scorer", "`self.qa_outputs = nn.Linear(d, 2)` in __init__; in forward, "
             "`start_logits, end_logits = self.qa_outputs(H).unbind(-1)`.")
    # Probe 0 gives each scorer's bias b, probe e_k its k-th weight plus b: whatever the layout of its
    # parameters, a linear head then gives H·w + b on H.
    linear = _linear(H, scorers)
    # Not a linear map: a log_softmax over the positions shifts each probe row by a constant, which the scorers
    # absorb, so it shows as the log_softmax of the linear map. A ReLU shows as no negative logit and exact zeros
    # (which raw scores under the grader's weights do not hit).
    if not _close(on_H, linear):
        if _close(on_H, [x.log_softmax(-1) for x in linear]):
            fail("SpanHead returned log-probabilities: with the grader's weights loaded, each row of its logits is a "
                 "log_softmax over the positions of the linear scores. A span head returns the raw scores; best_span "
                 "and the loss normalise over the allowed positions themselves.", "log-softmax-inside-head",
                 "Remove the log_softmax from forward and return the linear layer's two outputs.")
        if all(bool((t >= 0).all()) for t in on_H) and sum(int((t == 0).sum()) for t in on_H) > 1:
            fail("SpanHead's logits are never negative and many are exactly 0, with the grader's weights loaded: a "
                 "ReLU on the scores. A span head returns raw logits, negative ones too: a ReLU makes every position "
                 "with a negative score tie at 0.", "relu-on-logits", "Remove the ReLU: return the linear layer's "
                 "outputs.")
        fail("With the grader's weights in its parameters, SpanHead's logits are not a linear map of each "
             "position's own vector: scoring the vectors 0, e_1, …, e_d gives w_s, b_s, w_e, b_e, but its logits "
             "for H are not H·w_s + b_s and H·w_e + b_e. A span head computes s_i = w_s·h_i + b_s, e_i = w_e·h_i + "
             "b_e: no hidden layer, no activation, nothing from other positions or other examples.", "not-linear")
    if not _close(zeroed["outs"][0][0], [torch.zeros_like(t) for t in on_H]):
        fail("With every entry of its state_dict set to zero, SpanHead's logits are not zero: part of them comes "
             "from something that is not one of its parameters (a fixed tensor, a constant, a copy made in "
             "__init__). Compute the logits from the head's own parameters alone.", "fixed-tensor",
             "Remove the constant or fixed tensor from forward; make anything the head learns an nn.Parameter.")
    # A step of gradient descent must move both scorers' weights and biases, whatever their layout (a layout
    # changes how far they move, so the step is not compared with a reference's): the probes after the step say.
    # A head with no bias at all (its logit of the zero vector is 0) is right: a softmax over positions ignores it.
    still = [f"the {row} {part}" for row, before, after in zip(("start", "end"), scorers, stepped)
             for part, old, new in zip(("weights", "bias"), before, after)
             if torch.equal(old, new) and (part == "weights" or bool(old.abs().sum() > 0))]
    if still:
        fail(f"one step of gradient descent on SpanHead's logits leaves {' and '.join(still)} unchanged: training "
             "would never change them. Keep every parameter trainable (requires_grad=True) and compute the logits "
             "from them with torch operations, outside `torch.no_grad()` and without `.detach()`.",
             "parameters-without-gradient", "Do not set requires_grad_(False) on the head's parameters, and do not "
             "detach them or the logits.")
    if not _secret_step_taken(loaded["gradients"], H, scorers, seed):
        fail("after a second step of gradient descent, of a size the grader draws only once the backward is over, "
             "SpanHead gives other outputs than a linear head whose every weight learns by its own gradient: a "
             "weight moved by a gradient written by hand, or the outputs after a step are computed from something "
             "other than the head's parameters.", "parameters-without-gradient",
             "Keep every parameter trainable, compute the logits from them with torch operations, and write no "
             "weight or gradient in forward or in a hook.")
    # Last, as the rules above say more about what they catch (a detached output is "not-connected"): lesson
    # 05 fine-tunes the encoder through the head, so a head that passes no gradient back to H freezes it.
    judge_gradients(loaded["gradients"], "SpanHead", "H", H, lambda X: _linear(X, scorers), seed, None)


__all__ = ["span_head", "best_span", "span_loss", "CheckFailed"]
