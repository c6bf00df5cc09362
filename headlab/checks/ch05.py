"""Checks for lesson 05: SpanHead, best_span and span_loss.

Every expected value below is written out by hand (small logits whose best span can be found by
listing the few candidate pairs). The checks compare results and test properties; they never search
for a span themselves.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
from torch import nn

from .core import CheckFailed, call, call_raw, drive, explain, fail, passed

# --- best_span -------------------------------------------------------------------------------------
# One layout for the visible cases: [CLS] q q [SEP] p p p [SEP], so the passage is positions 4, 5, 6.
F_, T_ = False, True
ROW = ["[CLS]", "where", "?", "[SEP]", "rosa", "lives", "paris", "[SEP]"]
SHORT = ["[CLS]", "where", "?", "[SEP]", "in", "paris", "[SEP]", "[PAD]"]
PASSAGE = [F_, F_, F_, F_, T_, T_, T_, F_]
PASSAGE_SHORT = [F_, F_, F_, F_, T_, T_, F_, F_]

# (name, start_logits, end_logits, allowed, max_len, expected (B, 2), tokens per row)
# Scores are start_logit + end_logit (the same order as P_start · P_end, see the lesson).
BEST_SPAN_CASES = [
    # Two rows whose probabilities must be computed each within its own row:
    # row 0: (4,6)=4 beats (5,6)=3; row 1: (4,5)=6.
    ("two rows",
     [[0, 0, 0, 0, 2, 1, 0, 0], [0, 0, 0, 0, 5, 0, 0, 0]],
     [[0, 0, 0, 0, 0, 0, 2, 0], [0, 0, 0, 0, 0, 1, 0, 0]],
     [PASSAGE, PASSAGE], 3, [[4, 6], [4, 5]], [ROW, ROW]),
    # (4,4)=1 (4,5)=4 (4,6)=2 (5,5)=3 (5,6)=1 (6,6)=3.5 → (4, 5); the two argmaxes alone give 6 and 5.
    ("crossing argmaxes",
     [[0, 0, 0, 0, 1, 0, 2.5, 0]], [[0, 0, 0, 0, 0, 3, 1, 0]], [PASSAGE], 3, [[4, 5]], [ROW]),
    # Row 0 peaks in the question, row 1 at [CLS], row 2 on [SEP] and [PAD]; inside the passages
    # row 0: (5,6)=3.5 is best, row 1: (4,5)=3, row 2: (4,5)=2.
    ("peaks outside the passage",
     [[0, 6, 1, 0, 0.5, 2, 0, 0], [5, 0, 0, 0, 1, 0, 0.2, 0], [0, 0, 0, 0, 1, 0.5, 4, 4]],
     [[0, 1, 6, 0, 0, 0, 1.5, 0], [5, 0, 0, 0, 0.3, 2, 0, 0], [0, 0, 0, 0, 0.2, 1, 4, 4]],
     [PASSAGE, PASSAGE, PASSAGE_SHORT], 3, [[5, 6], [4, 5], [4, 5]], [ROW, ROW, SHORT]),
    # max_len 2: (4,6)=5.8 is three tokens long, too long; (4,5)=4 is exactly two tokens and best.
    ("max_len 2",
     [[0, 0, 0, 0, 3, 0, 0, 0]], [[0, 0, 0, 0, 0, 1, 2.8, 0]], [PASSAGE], 2, [[4, 5]], [ROW]),
]


def best_span(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(start_logits, end_logits, allowed, max_len)` on each case; name the mistake if wrong."""
    _require_callable(fn, "best_span")
    cases = BEST_SPAN_CASES if cases is None else cases
    for case in cases:
        name, start, end, allowed, max_len, expected = case[:6]
        tokens = case[6] if len(case) > 6 else None
        start = torch.as_tensor(start, dtype=torch.float32)
        end = torch.as_tensor(end, dtype=torch.float32)
        allowed = torch.as_tensor(allowed, dtype=torch.bool)
        expected = torch.as_tensor(expected, dtype=torch.long)
        _check_best_span_case(fn, start, end, allowed, max_len, expected, tokens)
    # The contract accepts a 0/1 mask too: every case again, with allowed as integers.
    for case in cases:
        name, start, end, allowed, max_len, expected = case[:6]
        start = torch.as_tensor(start, dtype=torch.float32)
        end = torch.as_tensor(end, dtype=torch.float32)
        allowed_int = torch.as_tensor(allowed).long()
        try:
            out = call(fn, "best_span", start, end, allowed_int, max_len)
        except CheckFailed as err:
            fail(f"best_span works when allowed is a bool mask but not when the same mask comes as 0/1 "
                 f"integers, which the contract accepts: {err} Turn the mask into bool first, e.g. "
                 "`allowed = allowed.bool()`.")
        if not (isinstance(out, torch.Tensor) and torch.equal(out, torch.as_tensor(expected, dtype=torch.long))):
            shown = out.tolist() if isinstance(out, torch.Tensor) else out
            fail(f"best_span gives the right answer when allowed is a bool mask, but returns {shown} when "
                 "the same mask comes as 0/1 integers. `~` on an integer tensor is not a logical not "
                 "(~1 == -2): turn the mask into bool first, e.g. `allowed = allowed.bool()`.")
    passed("best_span", len(cases))


def _require_callable(fn, name: str) -> None:
    if isinstance(fn, type) or not callable(fn):
        fail(f"this check takes your function {name} itself, e.g. check.{name}({name}); "
             f"you passed a {type(fn).__name__}.")


def _describe(position: int, allowed_row: torch.Tensor, tokens: list[str] | None) -> str:
    word = f" ({tokens[position]!r})" if tokens else ""
    if tokens:
        token = tokens[position]
        sep = tokens.index("[SEP]") if "[SEP]" in tokens else -1
        if token in ("[CLS]", "[SEP]", "[PAD]"):
            kind = f"the special token {token}"
        elif 0 < position < sep:
            kind = "a word of the question"
        else:
            kind = "outside the passage"
        return f"position {position}{word} is {kind}"
    return f"position {position} is outside the passage"


def _check_best_span_case(fn, start, end, allowed, max_len, expected, tokens) -> None:
    B, n = start.shape
    where = f" (max_len={max_len}, allowed rows {[_span_list(r) for r in allowed]})"
    originals = (start.clone(), end.clone(), allowed.clone())
    out = call(fn, "best_span", start, end, allowed, max_len)
    if not torch.equal(start, originals[0]) or not torch.equal(end, originals[1]) \
            or not torch.equal(allowed, originals[2]):
        fail("best_span changed a tensor it was given (an in-place masked_fill_ or similar); "
             "work on new tensors: masked_fill without the underscore returns a copy.")
    if not isinstance(out, torch.Tensor):
        fail(f"best_span returned a {type(out).__name__}; it must return a long tensor of shape (B, 2), "
             "one (i, j) pair per row.")
    if tuple(out.shape) != (B, 2):
        hint = ""
        if tuple(out.shape) == (2, B) and B != 2:
            hint = " Rows and columns are swapped: stack i and j on the last axis, torch.stack([i, j], dim=-1)."
        elif tuple(out.shape) == (2,):
            hint = " Keep the batch axis, even for one row: shape (B, 2)."
        fail(f"best_span returned shape {tuple(out.shape)}; expected (B, 2) = ({B}, 2).{hint}")
    if out.dtype != torch.long:
        fail(f"best_span returned dtype {out.dtype}; positions are indices, so return a long tensor "
             "(e.g. .long()).")
    if B > 1:  # each row's answer must not depend on the other rows of the batch
        for b in range(B):
            alone = call(fn, "best_span", start[b:b + 1].clone(), end[b:b + 1].clone(),
                         allowed[b:b + 1].clone(), max_len)
            if not (isinstance(alone, torch.Tensor) and alone.shape == (1, 2)
                    and torch.equal(alone[0].long(), out[b])):
                shown = alone.tolist() if isinstance(alone, torch.Tensor) else alone
                fail(f"row {b}'s answer depends on the other rows: in the batch you return "
                     f"{out[b].tolist()}, for row {b} alone {shown}. A softmax (or max) over the batch "
                     "axis (dim 0) mixes rows; P_start and P_end are each normalised over the positions "
                     "of ONE row (dim -1).")
    for b in range(B):
        i, j = out[b].tolist()
        span = f"row {b}: you returned (i, j) = ({i}, {j})"
        if not (0 <= i < n and 0 <= j < n):
            fail(f"{span}, but positions run from 0 to {n - 1}.")
        if j < i:
            fail(f"{span}: the end comes before the start. This is what two independent argmaxes "
                 "(one for the start, one for the end) can give. Search over pairs with i ≤ j and "
                 "keep the best pair.")
        for k in (i, j):
            if not bool(allowed[b, k]):
                fail(f"{span}, but {_describe(k, allowed[b], tokens[b] if tokens else None)}: allowed is "
                     f"False there. The answer must lie inside the passage: both i and j must be "
                     f"positions where allowed is True (row {b}: {_span_list(allowed[b])}). "
                     "Mask the other positions before choosing.")
        length = j - i + 1
        if length > max_len:
            if length == max_len + 1:
                fail(f"{span}, a span of {length} tokens with max_len={max_len}: one token too long "
                     f"(off by one). A span may end at j ≤ i + max_len − 1, not at i + max_len.")
            fail(f"{span}, a span of {length} tokens, longer than max_len={max_len}. "
                 "Only pairs with j ≤ i + max_len − 1 are candidates.")
        if (i, j) != tuple(expected[b].tolist()):
            ei, ej = expected[b].tolist()
            yours = float(start[b, i] + end[b, j])
            best = float(start[b, ei] + end[b, ej])
            hint = ""
            if ej - ei + 1 == max_len:
                hint = (f" That span is exactly max_len={max_len} tokens long, which is allowed "
                        "(j = i + max_len − 1): check the upper bound of your band.")
            fail(f"{span}{where}: its start logit + end logit is {yours:.2f}, but ({ei}, {ej}) is a valid "
                 f"span scoring {best:.2f}, so P_start(i)·P_end(j) is larger there.{hint}")


def _span_list(row: torch.Tensor) -> str:
    pos = torch.nonzero(row.bool()).flatten().tolist()
    if pos and pos == list(range(pos[0], pos[-1] + 1)):
        return f"positions {pos[0]}…{pos[-1]}"
    return f"positions {pos}"


# --- span_loss -------------------------------------------------------------------------------------
L = math.log
# Logits are logs of small integers, so each probability is a fraction: row [ln 1, ln 3, ln 4] gives
# P = [1/8, 3/8, 4/8]. Per case: (start_logits, end_logits, start, end, and by hand:
# CE(start_logits, start), CE(end_logits, end), CE(start_logits, end), CE(end_logits, start)).
SPAN_LOSS_CASES = [
    ([[0.0, L(7), 0.0], [L(2), L(2), L(4)], [L(1), L(2), L(1)]],
     [[L(3), 0.0, 0.0], [0.0, 0.0, L(2)], [L(5), L(2), L(3)]],
     [1, 2, 0], [0, 2, 2],
     (L(9 / 7) + L(8 / 4) + L(4 / 1)) / 3,
     (L(5 / 3) + L(4 / 2) + L(10 / 3)) / 3,
     (L(9 / 1) + L(8 / 4) + L(4 / 1)) / 3,
     (L(5 / 1) + L(4 / 2) + L(10 / 5)) / 3),
    ([[L(1), L(3), L(4)], [L(2), L(1), L(1)]],
     [[L(1), L(1), L(2)], [L(1), L(6), L(1)]],
     [1, 0], [2, 1],
     (L(8 / 3) + L(4 / 2)) / 2,          # start: P = 3/8 and 2/4
     (L(4 / 2) + L(8 / 6)) / 2,          # end:   P = 2/4 and 6/8
     (L(8 / 4) + L(4 / 1)) / 2,          # start logits read at the end positions: 4/8 and 1/4
     (L(4 / 1) + L(8 / 1)) / 2),         # end logits read at the start positions: 1/4 and 1/8
    ([[L(1), L(1), L(1), L(5)]],
     [[L(2), L(3), L(4), L(1)]],
     [3], [2],
     L(8 / 5), L(10 / 4), L(8 / 1), L(10 / 1)),
]


def span_loss(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(start_logits, end_logits, start, end)` on each case; name the mistake if wrong."""
    _require_callable(fn, "span_loss")
    cases = SPAN_LOSS_CASES if cases is None else cases
    for start_logits, end_logits, start, end, ce_s, ce_e, ce_s_swap, ce_e_swap in cases:
        start_logits = torch.as_tensor(start_logits, dtype=torch.float32)
        end_logits = torch.as_tensor(end_logits, dtype=torch.float32)
        start = torch.as_tensor(start, dtype=torch.long)
        end = torch.as_tensor(end, dtype=torch.long)
        _check_span_loss_case(fn, start_logits, end_logits, start, end,
                              float(ce_s), float(ce_e), float(ce_s_swap), float(ce_e_swap))
    passed("span_loss", len(cases))


def _loss_value(out, B: int) -> float:
    if not isinstance(out, torch.Tensor):
        fail(f"span_loss returned a {type(out).__name__}; it must return a scalar torch.Tensor, so that "
             "loss.backward() can train the head.")
    if out.numel() != 1:
        hint = (" One loss per example: average them over the batch."
                if out.numel() in (B, 2 * B) else "")
        fail(f"span_loss returned shape {tuple(out.shape)}; a loss is one number (a 0-dim tensor).{hint}")
    return float(out.detach())


def _quiet_call(fn, *args) -> tuple:
    """(what span_loss returned, None) or (None, (the error, the arguments)): `_called` says it later."""
    try:
        return call_raw(fn, "span_loss", *args), None
    except Exception as err:
        return None, (err, args)


def _called(result: tuple):
    value, error = result
    if error is not None:
        explain(error[0], "span_loss", *error[1])   # what `call` would have said
    return value


def _check_span_loss_case(fn, start_logits, end_logits, start, end, ce_s, ce_e, ce_s_swap, ce_e_swap):
    B = start_logits.shape[0]
    given = [t.clone() for t in (start_logits, end_logits, start, end)]
    logits = [start_logits.clone().requires_grad_(), end_logits.clone().requires_grad_()]
    out = call(fn, "span_loss", logits[0], logits[1], start, end)
    got = _loss_value(out, B)
    if not all(torch.equal(a, b) for a, b in zip(given, (start_logits, end_logits, start, end))):
        fail("span_loss changed a tensor it was given; compute the loss without modifying the inputs.")
    # Each row alone, asked every time (right or wrong) so that the grader's replay makes the same calls;
    # looked at only to diagnose a wrong value.
    rows = [_quiet_call(fn, start_logits[b:b + 1].clone(), end_logits[b:b + 1].clone(),
                        start[b:b + 1].clone(), end[b:b + 1].clone()) for b in range(B)] if B > 1 else []
    expected = (ce_s + ce_e) / 2
    if math.isclose(got, expected, rel_tol=1e-4, abs_tol=1e-5):
        if out.requires_grad:
            out.backward()
            for name, t in zip(("start_logits", "end_logits"), logits):
                if t.grad is None or not bool(t.grad.abs().sum() > 0):
                    fail(f"span_loss has the right value but no gradient reaches {name}: keep the "
                         "computation in torch (no .item(), .detach() or Python floats).")
        else:
            fail("span_loss has the right value but is not connected to the logits (no gradient): "
                 "keep the computation in torch (no .item(), .detach() or Python floats).")
        return
    close = lambda a: math.isclose(got, a, rel_tol=1e-4, abs_tol=1e-5)  # noqa: E731
    said = f"span_loss gave {got:.4f}; expected (CE(start) + CE(end)) / 2 = {expected:.4f}"
    if close(ce_s):
        fail(f"{said}. Your value is the start loss alone: the end logits get no training signal. "
             "Add the end loss and halve the sum.")
    if close(ce_e):
        fail(f"{said}. Your value is the end loss alone: the start logits get no training signal. "
             "Add the start loss and halve the sum.")
    if close(ce_s + ce_e):
        fail(f"{said}. You added the two losses without halving the sum.")
    if close((ce_s_swap + ce_e_swap) / 2):
        fail(f"{said}. You swapped the targets: start logits must be scored against the start "
             "positions, end logits against the end positions.")
    if close(B * expected):
        fail(f"{said}. That is {B} × the expected value: you summed over the {B} examples; average them.")
    if B > 1:
        rows = [_loss_value(_called(row), 1) for row in rows]
        if not math.isclose(got, sum(rows) / B, rel_tol=1e-4, abs_tol=1e-5):
            fail(f"{said}. The loss of the batch is not the mean of its rows' losses "
                 f"({[round(r, 4) for r in rows]}): a softmax over the batch axis (dim 0) mixes the "
                 "examples. Each row's softmax runs over its own positions; F.cross_entropy(logits, "
                 "targets) with logits (B, n) and targets (B,) does exactly that.")
    fail(f"{said}.")


# --- SpanHead ----------------------------------------------------------------------------------------
HEAD_SIZES = [(8, 2, 5), (64, 3, 7)]  # (d, B, n)


def span_head(cls, sizes: Sequence | None = None, seed: int = 0) -> None:
    """Build `cls(d)` and check what its forward returns for H of shape (B, n, d)."""
    if not isinstance(cls, type):
        fail(f"this check takes your class SpanHead itself, e.g. check.span_head(SpanHead); "
             f"you passed a {type(cls).__name__}.")
    sizes = HEAD_SIZES if sizes is None else sizes
    g = torch.Generator().manual_seed(seed)
    gw = torch.Generator().manual_seed(10_000 + seed)   # the weights loaded into the head
    for d, B, n in sizes:
        H = torch.randn(B, n, d, generator=g)
        perm = torch.randperm(n, generator=g)
        values = torch.randn(2 * d + 2, generator=gw)
        ran = drive(drive_span_head, cls, d, seed, H, perm, values)
        start, end = ran["start"], ran["end"]
        _check_not_probabilities(start, end)
        _check_two_scorers(ran)
        s2, e2 = _ran_output(ran["shuffled"])
        if not (torch.allclose(s2, start[:, perm], atol=1e-5) and torch.allclose(e2, end[:, perm], atol=1e-5)):
            fail("SpanHead's score at a position depends on the other positions: shuffling the "
                 "positions of H did not shuffle the logits the same way. Each position's start and "
                 "end logit come from that position's vector alone: s_i = w_s·h_i + b_s.")
        s1, e1 = _ran_output(ran["first_row"])
        if not (torch.allclose(s1, start[:1], atol=1e-5) and torch.allclose(e1, end[:1], atol=1e-5)):
            fail("SpanHead's logits for one example change with the rest of the batch: score each "
                 "example on its own (no normalisation over the batch axis).")
        count = ran["n_params"]
        if count not in (2 * d, 2 * d + 2):
            fail(f"SpanHead({d}) has {count} trainable parameters. A span head is one Linear(d, 2) "
                 f"(2·d + 2 = {2 * d + 2}) or two vectors s and e (2·d = {2 * d}): a start score and an "
                 "end score per position, nothing more.")
        _check_known_weights(ran, H, values, d)
    passed("SpanHead", len(sizes))


def drive_span_head(cls, d: int, seed: int, H: torch.Tensor, perm: torch.Tensor, values: torch.Tensor) -> dict:
    """Build `cls(d)` (global RNG seeded with `seed`), run it on H, backpropagate start − end, run it on
    H with its positions shuffled by `perm` and on H's first row, then load `values` into its trainable
    parameters (in order) and run it on H again. Returns the logits and what it found, as data."""
    torch.manual_seed(seed)
    head = call(cls, "SpanHead", d)
    if not isinstance(head, nn.Module):
        fail(f"SpanHead({d}) is a {type(head).__name__}; make SpanHead a subclass of nn.Module "
             "(class SpanHead(nn.Module): … with super().__init__() first).")
    head.eval()
    B, n, _ = H.shape
    start, end = _head_output(call(head, "SpanHead.forward", H), B, n, d)
    params = [p for p in head.parameters() if p.requires_grad]
    connected = bool(start.requires_grad and end.requires_grad)
    grads: list[bool] = []
    if params and connected:
        head.zero_grad(set_to_none=True)
        (start - end).sum().backward()
        grads = [p.grad is not None and bool(p.grad.abs().sum() > 0) for p in params]
        head.zero_grad(set_to_none=True)
    ran = {"start": start.detach(), "end": end.detach(), "has_params": bool(params), "connected": connected,
           "grads": grads, "n_params": sum(p.numel() for p in params)}
    with torch.no_grad():
        ran["shuffled"] = _later_output(head, H[:, perm], B, n, d)
        ran["first_row"] = _later_output(head, H[:1], 1, n, d)
        if sum(p.numel() for p in params) <= values.numel():
            at = 0
            for p in params:
                p.copy_(values[at:at + p.numel()].reshape(p.shape).to(p.dtype))
                at += p.numel()
            ran["loaded"] = _later_output(head, H, B, n, d)
            ran["loaded"]["shapes"] = [list(p.shape) for p in params]
    return ran


def _later_output(head, H: torch.Tensor, B: int, n: int, d: int) -> dict:
    """The head's logits for H, or what is wrong with them: the check reports it in its own order."""
    try:
        start, end = _head_output(call(head, "SpanHead.forward", H), B, n, d)
    except CheckFailed as err:
        return {"failed": str(err)}
    return {"start": start.detach(), "end": end.detach()}


def _ran_output(ran: dict):
    if "failed" in ran:
        fail(ran["failed"])
    return ran["start"], ran["end"]


def _head_output(out, B: int, n: int, d: int):
    if isinstance(out, torch.Tensor):
        if tuple(out.shape) == (B, n, 2):
            fail(f"SpanHead returned one tensor of shape {tuple(out.shape)}; return two, "
                 "(start_logits, end_logits), each (B, n): e.g. `start, end = logits.unbind(-1)`.")
        fail(f"SpanHead returned one tensor of shape {tuple(out.shape)}; it must return a pair "
             f"(start_logits, end_logits), each of shape (B, n) = ({B}, {n}).")
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        kind = f"a {type(out).__name__} of {len(out)} items" if isinstance(out, (tuple, list)) else \
            f"a {type(out).__name__}"
        fail(f"SpanHead returned {kind}; it must return a pair (start_logits, end_logits).")
    for name, t in zip(("start_logits", "end_logits"), out):
        if not isinstance(t, torch.Tensor):
            fail(f"SpanHead's {name} is a {type(t).__name__}; it must be a tensor of shape (B, n).")
        if tuple(t.shape) == (B, n, 1):
            fail(f"SpanHead's {name} has shape {tuple(t.shape)}; drop the last axis (.squeeze(-1)) "
                 f"so it is (B, n) = ({B}, {n}).")
        if tuple(t.shape) != (B, n):
            fail(f"SpanHead's {name} has shape {tuple(t.shape)} for H of shape ({B}, {n}, {d}); "
                 f"expected (B, n) = ({B}, {n}).")
    return out[0], out[1]


def _check_not_probabilities(start, end) -> None:
    for name, t in (("start_logits", start), ("end_logits", end)):
        t = t.detach()
        if bool((t >= 0).all()):
            for dim, axis in ((-1, "the positions"), (0, "the batch axis")):
                if torch.allclose(t.sum(dim), torch.ones(()), atol=1e-4):
                    fail(f"SpanHead's {name} are probabilities (a softmax over {axis}); the head returns "
                         "raw logits. The softmax over the allowed positions belongs in best_span "
                         "and in the loss.")


def _check_two_scorers(ran: dict) -> None:
    if not ran["has_params"]:
        fail("SpanHead has no trainable parameters: create them in __init__ (e.g. nn.Linear(d, 2)) "
             "so that training can learn the start and end scores.")
    if not ran["connected"]:
        fail("SpanHead's logits are not connected to its parameters (no gradient can reach them): "
             "compute them with the head's layers, in torch, without .detach() or torch.no_grad().")
    if not any(ran["grads"]):   # which parameters (start_logits − end_logits).sum() gave a gradient
        fail("SpanHead scores the start and the end with the same parameters: start_logits and "
             "end_logits are one shared vector (or layer) used twice, so they can never differ. "
             "Learn two scorers, s and e: one Linear(d, 2) whose two outputs you split, or two vectors.")


def _check_known_weights(ran: dict, H: torch.Tensor, values: torch.Tensor, d: int) -> None:
    """With the grader's `values` loaded into the head's trainable parameters (in order), its logits
    must be w_s·h_i + b_s and w_e·h_i + b_e for the scorers those parameters hold."""
    loaded = ran.get("loaded")   # absent only when the head has more parameters than the count allows
    if loaded is None:
        fail("SpanHead's parameters could not be set to known values: they hold more numbers than a "
             f"span head has (2·d + 2 = {2 * d + 2}).")
    start, end = _ran_output(loaded)
    shapes = [tuple(int(s) for s in shape) for shape in loaded["shapes"]]
    candidates = _scorers(shapes, values, d)
    if not candidates:
        fail(f"SpanHead's trainable parameters have shapes {[list(s) for s in shapes]}, in which the check "
             "cannot find a start scorer and an end scorer: use one nn.Linear(d, 2) (weight (2, d), bias "
             "(2,)), or two vectors s and e of d numbers each (with one bias each, or none).")
    if not any(_same(start, H @ w[a] + b[c]) and _same(end, H @ w[1 - a] + b[1 - c])
               for w, b in candidates for a in (0, 1) for c in (0, 1)):
        fail("With its parameters set to known values (found in order, by their shapes), SpanHead's logits "
             "are not start_logits = H·w_s + b_s and end_logits = H·w_e + b_e for the two scorers those "
             "parameters hold. Each position's start and end logit come from that position's vector and "
             "the head's own parameters alone, through one linear map: s_i = w_s·h_i + b_s, "
             "e_i = w_e·h_i + b_e (no softmax, no scaling, no fixed tensor outside the parameters).")


def _scorers(shapes: list[tuple], values: torch.Tensor, d: int) -> list[tuple]:
    """The ways to read (w, b) = ((w_0, w_1), (b_0, b_1)) from parameters of these shapes holding
    `values` in order: one (2, d) matrix (or (d, 2), or with extra axes of size 1) and an optional
    bias of 2 numbers, one (2, d + 1) matrix holding the biases too, or two vectors of d numbers and
    optionally two single biases."""
    chunks, at = [], 0
    for shape in shapes:
        size = math.prod(shape)
        chunks.append(values[at:at + size].reshape(shape))
        at += size
    zero = (torch.zeros(()), torch.zeros(()))
    mats = [k for k, c in enumerate(chunks) if c.numel() == 2 * d and c.dim() >= 2 and 2 in (c.shape[0], c.shape[-1])]
    if len(mats) == 1:
        m = chunks[mats[0]]
        rest = [c.flatten() for k, c in enumerate(chunks) if k != mats[0]]
        if not rest:
            biases = [zero]
        elif len(rest) == 1 and rest[0].numel() == 2:
            biases = [(rest[0][0], rest[0][1])]
        else:
            return []
        rows = []
        if m.shape[0] == 2:
            rows.append(tuple(m.reshape(2, d)))
        if m.shape[-1] == 2:
            rows.append(tuple(m.reshape(d, 2).T))
        return [(w, b) for w in rows for b in biases]
    folded = [c for c in chunks if c.numel() == 2 * d + 2 and c.dim() >= 2 and 2 in (c.shape[0], c.shape[-1])]
    if len(chunks) == 1 and folded:   # the biases as one more column, after the weights or before them
        m = folded[0]
        ways = (([m.reshape(2, d + 1)] if m.shape[0] == 2 else [])
                + ([m.reshape(d + 1, 2).T] if m.shape[-1] == 2 else []))
        return [(tuple(w[:, cols]), tuple(w[:, bias])) for w in ways
                for cols, bias in ((slice(0, d), d), (slice(1, d + 1), 0))]
    if d == 1:   # every parameter is one number: (w_s, w_e), (w_s, b_s, w_e, b_e) or (w_s, w_e, b_s, b_e)
        c = [chunk.flatten()[0] for chunk in chunks if chunk.numel() == 1]
        if len(c) != len(chunks) or len(c) not in (2, 4):
            return []
        return [((c[0], c[1]), zero)] if len(c) == 2 else [((c[0], c[2]), (c[1], c[3])), ((c[0], c[1]), (c[2], c[3]))]
    vectors = [c.flatten() for c in chunks if c.numel() == d]
    singles = [c.flatten()[0] for c in chunks if c.numel() == 1]
    if len(vectors) == 2 and len(singles) in (0, 2) and len(chunks) == 2 + len(singles):
        return [(tuple(vectors), tuple(singles) if singles else zero)]
    return []


def _same(got: torch.Tensor, expected: torch.Tensor) -> bool:
    return got.shape == expected.shape and torch.allclose(got.float(), expected, rtol=1e-4, atol=1e-4)


__all__ = ["span_head", "best_span", "span_loss", "CheckFailed"]
