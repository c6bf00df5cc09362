"""Checks for lesson 00: padding_mask and causal_mask."""
from __future__ import annotations

import torch

from .core import CheckFailed, positions
from .engine import Exercise, clashing_sizes, inputs_as
from .shared import table

T, F = True, False


# --- padding_mask(lengths, n) → (B, n) bool ----------------------------------------------------------
def _padding_row(out, expected, lengths, n) -> str:
    b = next(b for b in range(len(lengths)) if not torch.equal(out[b], expected[b]))
    length = int(lengths[b])
    return (f"row {b} has length {length} (lengths={lengths.tolist()}, n={n}), so its real tokens are "
            f"positions {list(range(length))}; you marked {positions(out[b])}.")


# torch's and Python's words when lengths, one length per row, is used as one number: a slice's end, range(...),
# torch.arange(...), int(...) or .item() (raised-TypeError and the like, torch's words alone, before)
_ONE_NUMBER = ("single element", "must be Number, not Tensor", "only one element tensors",
               "cannot be converted to Scalar")


def _lengths_hint(err, lengths, n) -> tuple[str, str, str] | None:
    """The mistake a crash shows: `lengths` (B,) met the positions (n,) as they are (the sizes that clashed are B and
    n; only the generic "print their .shape" hint, raised-RuntimeError, named it before), or it was used as one
    number (`_ONE_NUMBER`)."""
    if sorted(clashing_sizes(err)) == sorted((len(lengths), n)):
        return (f"lengths has shape (B,) = ({len(lengths)},): compared with the positions, (n,) = ({n},), it lines up "
                "with their axis, not a row axis of its own. Give lengths a column axis, so that (B, 1) against (1, n) "
                "broadcasts to (B, n).",
                "lengths-not-unsqueezed", "`torch.arange(n)[None, :] < lengths[:, None]`.")
    if any(words in str(err) for words in _ONE_NUMBER):
        return (f"lengths holds one length per row, {lengths.tolist()}: it is not one number, so it cannot end a "
                "slice or a range, or be turned into an int, for the whole batch at once. Each row has its own length.",
                "lengths-as-one-number", "Compare every position with every row's length at once, `torch.arange(n)"
                "[None, :] < lengths[:, None]`, or loop over the rows and use `int(lengths[b])` for row b.")


padding_mask = Exercise(
    "padding_mask",
    # (lengths, n, expected mask) written out by hand: row b is True at positions 0 … ℓ_b − 1.
    cases=[
        # n is not the longest length + 1, so an n − 1 slip is not told it padded to the longest length
        ([3, 1, 4], 6, [[T, T, T, F, F, F], [T, F, F, F, F, F], [T, T, T, T, F, F]]),
        ([3, 3], 3, [[T, T, T], [T, T, T]]),
        ([1, 3], 4, [[T, F, F, F], [T, T, T, F]]),
    ],
    read=inputs_as(torch.long, None, torch.bool),
    shape=lambda lengths, n: (len(lengths), n),
    dtype=torch.bool,
    meaning=" (B, n)",
    where=lambda lengths, n: f" for lengths={lengths.tolist()}, n={n}",
    fields=lambda lengths, n: {"B": len(lengths), "n": n},
    dtype_message="{name} returned dtype {got}{where}; a mask is a bool tensor (True on real tokens).",
    unchanged="padding_mask changed the `lengths` tensor it was given; build a new tensor instead.",
    hints=[((RuntimeError, TypeError, ValueError), _lengths_hint)],
    explain=_padding_row,
    mistakes=table([
        ("rows-and-columns-swapped",
         "padding_mask returned shape (n, B){where}: rows and columns are swapped. Rows are sequences, so the mask "
         "is (B, n) = ({B}, {n})."),
        ("pads-to-longest",
         "padding_mask returned as many columns as the longest length{where}: it padded to the longest length, not "
         "to n. The mask must have n = {n} columns."),
        ("inverted",
         "padding_mask is inverted{where}: it is True on padding and False on real tokens. True must mark the real "
         "tokens."),
        ("left-padding",
         "padding_mask marked the last ℓ positions of each row{where}. That is left padding: this course's batches "
         "are right-padded, real tokens first and padding after them."),
        ("one-too-many",
         "padding_mask marks one position too many in each row{where}: off by one. A row of ℓ tokens holds positions "
         "0 … ℓ − 1; position ℓ is already padding.", "Compare with <, not <=."),
        ("one-too-few",
         "padding_mask marks one position too few in each row{where}: off by one. Position ℓ − 1 is still a real "
         "token.", "Compare with <= ℓ − 1, or < ℓ."),
        ("all-real", "padding_mask marks every position{where}, so padding is counted as real text."),
        # `pad_sequence` of each row's ones without batch_first=True: only "returned shape (4, 3)" before
        ("batch-first-forgotten",
         "padding_mask returned shape (longest length, B){where}: that is what `pad_sequence` gives without "
         "batch_first=True, one column per sequence, padded only to the longest length. The mask is (B, n) = "
         "({B}, {n}): one row per sequence, n columns.", "Compare the positions with the lengths, "
         "`torch.arange(n)[None, :] < lengths[:, None]`: pad_sequence pads to the longest length, not to n."),
        # BERT's extended attention mask, `mask[:, None, None, :]`: only "returned shape (B, 1, 1, n)" before
        ("attention-axes-added",
         "padding_mask returned the mask with axes of size 1 added{where}: (B, 1, 1, n) is the form BERT's attention "
         "broadcasts over its heads and queries. The contract's mask is (B, n) = ({B}, {n}); attention code adds "
         "those axes itself where it applies the mask.", "Return the (B, n) mask, without `[:, None, None, :]`."),
    ]),
)


# --- causal_mask(n) → (n, n) bool --------------------------------------------------------------------
def _causal_entry(out, expected, n) -> str:
    i, j = (out != expected).nonzero()[0].tolist()
    should = "may" if expected[i, j] else "may not"
    return f"causal_mask[{i}, {j}] is {bool(out[i, j])} for n={n}, but query {i} {should} see key {j}."


# An additive mask's value where a key is blocked: -inf, or a large finite number in its place (finfo's, the 1e9 of
# many tutorials, BERT's -10000), which softmax turns into a weight of 0 all the same: one row of the table each
ADDITIVE_FILLS = [("-inf", float("-inf")), ("`torch.finfo(torch.float32).min`", torch.finfo(torch.float32).min),
                  ("-1e9", -1e9), ("-10000", -1e4)]


causal_mask = Exercise(
    "causal_mask",
    # (n, expected) by hand. n = 1 comes last: there, several mistakes give the same 1 × 1 answer.
    cases=[
        (3, [[T, F, F], [T, T, F], [T, T, T]]),
        (4, [[T, F, F, F], [T, T, F, F], [T, T, T, F], [T, T, T, T]]),
        (1, [[T]]),
    ],
    read=inputs_as(None, torch.bool),
    shape=lambda n: (n, n),
    dtype=torch.bool,
    meaning=" (query positions × key positions)",
    where=lambda n: f" for n={n}",
    dtype_message="{name} returned dtype {got}{where}; it must be a bool mask.",
    explain=_causal_entry,
    mistakes=table([
        *[("additive-float",
           f"causal_mask returned an additive float mask, 0 where a key may be seen and {fill} where not{{where}}. "
           "The contract asks for a bool mask, True where query i may see key j; attention code turns it into the "
           "additive form itself.") for fill, _ in ADDITIVE_FILLS],
        ("sees-the-future",
         "causal_mask lets query i see keys j ≥ i, the future{where}: that is the upper triangle. A causal model "
         "sees the past and itself: [i, j] True iff j ≤ i (lower triangle)."),
        ("without-diagonal",
         "causal_mask leaves out the diagonal{where}: a position must see itself (j ≤ i, not j < i); without it the "
         "first position sees nothing at all."),
        ("inverted",
         "causal_mask is inverted{where}: it is True on the positions a query must NOT see. True marks what query i "
         "may see: keys j ≤ i."),
        ("bidirectional",
         "causal_mask is True everywhere{where}: every query sees every key. That is an encoder's bidirectional "
         "pattern, not a causal one."),
        # `tril(diagonal=1)`, triu's offset for the blocked keys: only "query 0 may not see key 1" before
        ("sees-one-future-key",
         "causal_mask lets query i see key i + 1 too{where}: the edge of the lower triangle sits one above the "
         "diagonal. diagonal=1 is the offset of `triu` when it marks the blocked keys; the keys a query may see are "
         "j ≤ i, tril's default edge.", "`torch.ones(n, n, dtype=torch.bool).tril()`, with diagonal left at 0."),
        # GPT-2's causal buffer, nanoGPT's `torch.tril(torch.ones(n, n)).view(1, 1, n, n)` (bool or, as there,
        # float): only "returned shape (1, 1, n, n)" before
        *[("attention-axes-added",
           "causal_mask returned the mask with axes of size 1 added{where}: (1, 1, n, n) is the form of GPT-2's "
           "causal buffer, which attention broadcasts over the batch and the heads. The contract's mask is (n, n), "
           "query positions × key positions; attention code adds those axes itself where it applies the mask.",
           "Return the (n, n) mask, without `.view(1, 1, n, n)` or `[None, None]`.")] * 2,
    ]),
)

__all__ = ["padding_mask", "causal_mask", "CheckFailed"]
