"""Checks for lesson 00: padding_mask and causal_mask."""
from __future__ import annotations

from typing import Callable, Sequence

import torch

from .core import CheckFailed, call, fail, passed, positions, require_function, require_tensor

# (lengths, n, expected mask) written out by hand: row b is True at positions 0 … ℓ_b − 1.
T, F = True, False
PADDING_CASES = [
    ([3, 1, 4], 5, [[T, T, T, F, F], [T, F, F, F, F], [T, T, T, T, F]]),
    ([2, 2], 2, [[T, T], [T, T]]),
    ([1, 3], 4, [[T, F, F, F], [T, T, T, F]]),
]
# n = 1 comes last: there, several different mistakes give the same 1 × 1 answer.
CAUSAL_CASES = [
    (3, [[T, F, F], [T, T, F], [T, T, T]]),
    (4, [[T, F, F, F], [T, T, F, F], [T, T, T, F], [T, T, T, T]]),
    (1, [[T]]),
]


def padding_mask(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(lengths, n)` on each case and name the mistake if a mask is wrong."""
    require_function(fn, "padding_mask")
    cases = PADDING_CASES if cases is None else cases
    for lengths, n, expected in cases:
        lengths = torch.as_tensor(lengths, dtype=torch.long)
        expected = torch.as_tensor(expected, dtype=torch.bool)
        before = lengths.clone()
        out = call(fn, "padding_mask", lengths, n)
        _diagnose_padding(out, lengths, n, expected)
        if not torch.equal(lengths, before):
            fail("padding_mask changed the `lengths` tensor it was given; build a new tensor instead.")
    passed("padding_mask", len(cases))


def _diagnose_padding(out, lengths: torch.Tensor, n: int, expected: torch.Tensor) -> None:
    B = len(lengths)
    where = f" for lengths={lengths.tolist()}, n={n}"
    if isinstance(out, torch.Tensor) and tuple(out.shape) != (B, n):
        if tuple(out.shape) == (n, B):
            fail(f"padding_mask returned shape {tuple(out.shape)}{where}: rows and columns are swapped. "
                 f"Rows are sequences, so the mask is (B, n) = ({B}, {n}).")
        if out.dim() == 2 and out.shape[1] == int(lengths.max()):
            fail(f"padding_mask returned {out.shape[1]} columns{where}: it padded to the longest "
                 f"length, not to n. The mask must have n = {n} columns.")
    require_tensor(out, "padding_mask", (B, n), meaning=f" (B, n){where}")
    if out.dtype != torch.bool:
        values_ok = set(out.unique().tolist()) <= {0, 1} and torch.equal(out.bool(), expected)
        hint = " Your True/False pattern is right; return it as bool." if values_ok else ""
        fail(f"padding_mask returned dtype {out.dtype}; a mask is a bool tensor (True on real tokens).{hint}")
    if torch.equal(out, expected):
        return
    if torch.equal(out, ~expected):
        fail(f"padding_mask is inverted{where}: it is True on padding and False on real tokens. "
             "True must mark the real tokens.")
    for b in range(B):
        if torch.equal(out[b], expected[b]):
            continue
        length, got = int(lengths[b]), positions(out[b])
        real = list(range(length))
        said = f"row {b} has length {length}, so its real tokens are positions {real}; you marked {got}"
        if got == list(range(n - length, n)):
            fail(f"{said}. That is left padding: this course's batches are right-padded, "
                 "real tokens first and padding after them.")
        if got == list(range(length + 1)):
            fail(f"{said}: one position too many (off by one; compare with <, not <=).")
        if got == list(range(max(length - 1, 0))):
            fail(f"{said}: one position too few (off by one; position ℓ − 1 is still a real token).")
        if got == list(range(n)):
            fail(f"{said}: every position is marked, so padding is counted as real text.")
        fail(f"{said}.")


def causal_mask(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(n)` on each case and name the mistake if a mask is wrong."""
    require_function(fn, "causal_mask")
    cases = CAUSAL_CASES if cases is None else cases
    for n, expected in cases:
        expected = torch.as_tensor(expected, dtype=torch.bool)
        out = call(fn, "causal_mask", n)
        _diagnose_causal(out, n, expected)
    passed("causal_mask", len(cases))


def _diagnose_causal(out, n: int, expected: torch.Tensor) -> None:
    where = f" for n={n}"
    require_tensor(out, "causal_mask", (n, n), meaning=f" (query positions × key positions){where}")
    additive = out.is_floating_point() and bool(((out == 0) | (out == float("-inf"))).all())
    if additive and torch.equal(out == 0, expected):
        fail("causal_mask returned an additive float mask (0 and -inf). The contract asks for a bool "
             "mask, True where query i may see key j; attention code turns it into -inf itself.")
    if out.dtype != torch.bool:
        hint = (" Your pattern is right; return it as bool."
                if set(out.unique().tolist()) <= {0, 1} and torch.equal(out.bool(), expected) else "")
        fail(f"causal_mask returned dtype {out.dtype}; it must be a bool mask.{hint}")
    if torch.equal(out, expected):
        return
    eye = torch.eye(n, dtype=torch.bool)
    if torch.equal(out, expected.T):
        fail(f"causal_mask lets query i see keys j ≥ i, the future{where}: that is the upper "
             "triangle. A causal model sees the past and itself: [i, j] True iff j ≤ i (lower triangle).")
    if torch.equal(out, expected & ~eye):
        fail(f"causal_mask leaves out the diagonal{where}: a position must see itself "
             "(j ≤ i, not j < i); without it the first position sees nothing at all.")
    if torch.equal(out, ~expected):
        fail(f"causal_mask is inverted{where}: it is True on the positions a query must NOT see. "
             "True marks what query i may see: keys j ≤ i.")
    if bool(out.all()):
        fail(f"causal_mask is True everywhere{where}: every query sees every key. That is an "
             "encoder's bidirectional pattern, not a causal one.")
    bad = (out != expected).nonzero()[0].tolist()
    i, j = bad
    should = "may" if expected[i, j] else "may not"
    fail(f"causal_mask[{i}, {j}] is {bool(out[i, j])}{where}, but query {i} {should} see key {j}.")


__all__ = ["padding_mask", "causal_mask", "CheckFailed"]
