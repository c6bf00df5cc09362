"""Checks for lesson 08: sentence_embedding and align_labels."""
from __future__ import annotations

from dataclasses import replace

import torch

from .core import CheckFailed
from .engine import Exercise, backward_through, clashing_sizes, inputs_as
from .shared import table

T, F_ = True, False
IGNORE = -100


# --- sentence_embedding(H, attention_mask) → (B, d) ------------------------------------------------
def _with_every_mask(cases):
    """Each case with a bool, a 0/1 integer (what a tokenizer returns) and a 0/1 float mask, bool first."""
    bools = [(H, torch.as_tensor(mask).bool(), e) for H, mask, e in cases]
    return [(H, m, e) for H, b, e in bools for m in (b, b.long(), b.float())]


def _kind(mask) -> str:
    return {torch.bool: "bool", torch.long: "0/1 integer"}.get(mask.dtype, f"0/1 {mask.dtype}")


def _embedding_where(H, mask) -> str:
    kind = "" if mask.dtype == torch.bool else f", a {_kind(mask)} mask"
    return f" (H of shape {tuple(H.shape)}, rows with {mask.bool().sum(1).tolist()} real tokens{kind})"


def _mask_hint(err, H, mask) -> tuple[str, str, str] | None:
    B, n, d = H.shape
    sizes = clashing_sizes(err)
    if sizes == (d, B):   # (B, d) / (B,): the two divisions of a mean and a norm, one or both without keepdim
        return (f"A value with one entry per sentence, shape (B,) = ({B},), met the d = {d} features of the (B, d) "
                "mean: the count of real tokens or the row norms lost their axis, so they line up with the features, "
                "not with the rows. Keep that axis, so that a (B, 1) value divides each row.",
                "divided-without-keepdim",
                "`attention_mask.sum(dim=1, keepdim=True)` and `z.norm(dim=-1, keepdim=True)` have shape (B, 1).")
    if mask.dtype != torch.bool:
        return (f"The mask was a {_kind(mask)} tensor, as a tokenizer returns it. A mask may be bool or 0/1 "
                "numbers: convert it first.", "bool-mask-only",
                "E.g. `attention_mask.bool()` or `attention_mask.to(H.dtype)`.")
    if set(sizes) == {n, d} or (not sizes and "shape" in str(err)):
        return ("The (B, n) mask must line up with H's position axis, and broadcast over the d features.",
                "mask-on-feature-axis", "`attention_mask[:, :, None]` has shape (B, n, 1).")


def _embedding_values(out, expected, H, mask) -> tuple[str, str]:
    where, norms = _embedding_where(H, mask), out.norm(dim=-1)
    said, fix = ("", "") if mask.dtype == torch.bool else (
        f"Your function is right with a bool mask but not with a {_kind(mask)} mask, which is what a tokenizer "
        "returns: convert it first. ", "Use `attention_mask.bool()`, or `attention_mask.to(H.dtype)` to multiply.")
    empty = [b for b, row in enumerate(out) if bool(row.isnan().any()) or not bool(row.any())]
    if empty:
        return (f"{said}sentence_embedding row {empty[0]} is {[round(v, 4) for v in out[empty[0]].tolist()]}{where}: "
                "a mean over no position. Every position where the mask is 1 counts, [CLS] and [SEP] included.", fix)
    if not torch.allclose(norms, torch.ones_like(norms), atol=1e-3):
        return f"{said}sentence_embedding is not L2-normalised: row 0 has length {norms[0]:.4g}, not 1{where}.", fix
    b = int((out - expected).abs().amax(-1).argmax())   # the row furthest from its expected value
    return (f"{said}sentence_embedding row {b} is {[round(v, 4) for v in out[b].tolist()]}; the normalised mean of "
            f"its real vectors is {[round(v, 4) for v in expected[b].tolist()]}{where}.", fix)


MASKED_MEAN = ("Multiply H by the mask, `attention_mask[:, :, None]`, sum over positions and divide by "
               "`attention_mask.sum(dim=1, keepdim=True)`.")


def _pooled(key, message, fix="", raw=True) -> list[tuple]:
    """A pooling mistake's rows as it comes normalised and (with `raw`) not normalised: the second message says so
    too. Max pooling has no raw form (heads_mistakes.ch08)."""
    unnormalised = message + " It is not L2-normalised either: divide each row by its L2 norm last."
    return [(key, message, fix)] + [(key, unnormalised, fix)] * raw


def _first_positions(out, H, mask) -> str:
    b = next(b for b, row in enumerate(mask.bool()) if not bool(row[:int(row.sum())].all()))
    real = torch.nonzero(mask.bool()[b]).flatten().tolist()
    return (f"sentence_embedding averaged the first {len(real)} positions of row {b}{_embedding_where(H, mask)}, but "
            f"that row's real tokens are at positions {real}: padding may come first (left padding). Select the real "
            "tokens with the mask itself, not by their count.")


_embedding = Exercise(
    "sentence_embedding",
    # (H, mask, expected) by hand. Each row's real vectors average to a vector with a whole-number length
    # (3-4-5, 2-3-6-7, 1-2-2-3, 0-4-3-5, 2-6-3-7), so the unit vectors can be written out; padding holds large
    # values, so any padding that enters the mean shows. B, n and d differ in every case: a (B,) count or norm
    # divided without keepdim then raises an error whose sizes say so, instead of running when B = d.
    cases=_with_every_mask([
        ([[[1., 2.], [5., 6.], [-40., 0.], [-40., 0.]],          # 2 real: mean (3, 4), length 5
          [[8., 1.], [2., -4.], [2., 12.], [0., 50.]],          # 3 real: mean (4, 3), length 5
          [[-4., 0.], [-6., 6.], [-2., 3.], [-4., 3.]]],        # 4 real: mean (-4, 3), length 5
         [[T, T, F_, F_], [T, T, T, F_], [T, T, T, T]],
         [[0.6, 0.8], [0.8, 0.6], [-0.8, 0.6]]),
        ([[[1., 0., 0.], [3., 6., 6.], [2., 3., 6.], [0., 3., 12.], [6., 3., 6.], [0., 3., 6.]],   # mean (2, 3, 6)
          [[3., 0., 4.], [0., 6., 0.], [0., 0., 2.], [50., -50., 0.], [50., -50., 0.], [50., -50., 0.]],
          [[0., -4., 3.], [9., 9., 9.], [9., 9., 9.], [9., 9., 9.], [9., 9., 9.], [9., 9., 9.]],
          [[10., 0., 0.], [0., -30., 0.], [0., 0., 15.], [0., 0., 0.], [0., 0., 0.], [-50., 50., 50.]]],
         [[T, T, T, T, T, T], [T, T, T, F_, F_, F_], [T, F_, F_, F_, F_, F_], [T, T, T, T, T, F_]],
         [[2 / 7, 3 / 7, 6 / 7], [1 / 3, 2 / 3, 2 / 3], [0., -0.8, 0.6], [2 / 7, -6 / 7, 3 / 7]]),
        # Rows 0 and 1 are left-padded (a tokenizer may pad on either side): their real tokens come last.
        ([[[-40., 0.], [-40., 0.], [1., 2.], [5., 6.]],         # 2 real: mean (3, 4), length 5
          [[30., 30.], [8., 1.], [2., -4.], [2., 12.]],         # 3 real: mean (4, 3), length 5
          [[-4., 0.], [-6., 6.], [-2., 3.], [-4., 3.]]],        # 4 real: mean (-4, 3), length 5
         [[F_, F_, T, T], [F_, T, T, T], [T, T, T, T]],
         [[0.6, 0.8], [0.8, 0.6], [-0.8, 0.6]]),
    ]),
    read=inputs_as(torch.float32, None, torch.float32),
    shape=lambda H, mask: (H.shape[0], H.shape[2]),
    meaning=" (B, d): one vector per sentence, the mean over its real positions (dim=1), normalised",
    where=_embedding_where,
    hints=[((RuntimeError, IndexError, TypeError), _mask_hint)],
    explain=_embedding_values,
    dtype_message="{name} returned dtype {got}{where}; an embedding is a float tensor.",
    unchanged="sentence_embedding changed the tensors it was given (H or attention_mask, e.g. with `*=` or "
              "masked_fill_); compute new tensors instead, the caller still needs H.",
    then=lambda fn: _carries_the_graph(fn),
    mistakes=table([
        ("integer-mask-as-index",
         "sentence_embedding indexed H with the 0/1 integer mask{where}: `H[b][attention_mask[b]]` (row b) then takes "
         "the rows numbered 0 and 1 instead of selecting the real tokens. A tokenizer returns such a mask; convert it "
         "first.",
         "Use `attention_mask.bool()`, or `attention_mask.to(H.dtype)` to multiply."),
        ("one-vector-per-token",
         "sentence_embedding returned one vector per token, (B, n, d){where}, not one per sentence. Pool over the "
         "positions (dim=1) first, then normalise."),
        ("keeps-position-axis",
         "sentence_embedding returned shape (B, 1, d){where}: it kept the position axis (keepdim=True on the sum over "
         "positions). The result is (B, d)."),
        # two rows each below: the mistake made two ways (heads_mistakes.ch08)
        *[("not-normalised",
           "sentence_embedding is not L2-normalised{where}; the direction is right: divide each row of the mean z, "
           "(B, d), by its L2 norm, so that a dot product of two embeddings is their cosine.",
           "`z / z.norm(dim=-1, keepdim=True)`, or `F.normalize(z, dim=-1)`.")] * 2,
        *_pooled("padding-in-mean",
                 "sentence_embedding summed every position of each row, padding included{where}. Only real tokens "
                 "count: sum over the real positions and divide by their number, then normalise.", MASKED_MEAN) * 2,
        *_pooled("cls-instead-of-mean",
                 "sentence_embedding returned the [CLS] vector `H[:, 0]` (the first position){where}. This model was "
                 "trained with mean pooling: average the real tokens, then normalise."),
        ("l1-norm",
         "sentence_embedding divided by the L1 norm (the sum of absolute values){where}. Use the L2 norm, sqrt(sum of "
         "squares), on the mean z.", "`F.normalize(z, dim=-1)` (p=2)."),
        *[("normalised-over-batch",
           "sentence_embedding normalised over the batch axis (dim=0){where}: each column has length 1, not each "
           "sentence. Normalise every row: dim=-1.")] * 2,
        *_pooled("normalised-tokens-before-mean",
                 "sentence_embedding normalised each token vector before averaging{where}: that weighs every token "
                 "the same, whatever its length, and gives another direction. Average the raw vectors of the real "
                 "tokens first, then normalise the mean once."),
        *_pooled("last-real-token",
                 "sentence_embedding returned the last real token{where}; an encoder's sentence embedding here is "
                 "the mean over all real tokens."),
        *_pooled("max-pooling",
                 "sentence_embedding took the maximum over positions{where}; this model pools with the mean.", raw=False),
        # it gives the right embedding on right-padded masks: a mistake only where a row is left-padded
        ("assumes-right-padding", _first_positions, MASKED_MEAN),
        # Found in tests/test_08_checks.py: got only "row 0 is [nan, nan]: a mean over no position" before.
        ("specials-left-out",
         "sentence_embedding left out [CLS] and [SEP], the first and last real token of each row{where}, so a row of "
         "two real tokens had nothing left to average. Every position where the mask is 1 counts, [CLS] and [SEP] "
         "included: this model was trained with mean pooling over all of them.",
         "Average over every position where attention_mask is 1, without changing the mask."),
        ("norm-without-dim",
         "sentence_embedding divided every row of the mean z by one number, the norm of the whole batch{where}: "
         "`z.norm()` with no dim is the norm of all B × d values together, so no row has length 1. Each sentence is "
         "divided by its own L2 norm, taken over its d features.",
         "`z / z.norm(dim=-1, keepdim=True)`, or `F.normalize(z, dim=-1)`."),
        # Found by probing the check: got only "not L2-normalised: row 0 has length 0.2" before.
        ("squared-norm",
         "sentence_embedding divided each row of the mean z by its squared L2 norm, the sum of squares Σ z² without "
         "the square root{where}: a row then has length 1 / ‖z‖, not 1.",
         "`z / z.norm(dim=-1, keepdim=True)`, or take the square root of the sum of squares before dividing."),
        # Found by probing the check: got only one row's values before.
        ("specials-left-out",
         "sentence_embedding left out the first and the last position of every row, `H[:, 1:-1]`{where}: [CLS] is at "
         "position 0, but in a padded row [SEP] is the last real token, not the last position. And neither is to be "
         "left out: every position where the mask is 1 counts, [CLS] and [SEP] included, as in this model's training.",
         "Average over every position where attention_mask is 1, without slicing positions off."),
        # Found by probing the check: was told "a mean over no position ... [CLS] and [SEP] included", another
        # mistake's words. Two rows: a row without padding divided by its norm 0 (nan), or normalised to 0.
        *[("inverted-mask",
           "sentence_embedding averaged the padding and left out the real tokens{where}: the mask is True (or 1) on "
           "real tokens, and masked_fill fills where its mask is True. A row without padding then has nothing left.",
           "Weight by the mask itself, `attention_mask[:, :, None]`, or fill where `~attention_mask.bool()` is True, "
           "the padding.")] * 2,
    ]),
)


# The gradient that the right embedding's sum gives H below, stored as data (tests/test_08_checks.py computes it
# again from the solution): each real position of a row gets its row's vector, padding none.
GRADIENT_INPUT = dict(seed=8, shape=(2, 4, 3), mask=[[1, 1, 1, 0], [1, 1, 0, 0]])
GRADIENT_ROWS = [[0.1578194, 0.09454343, -0.05508846], [0.2016619, 0.4840048, 0.531992]]


def _carries_the_graph(fn) -> None:
    """Once the values are right: lesson 08 fine-tunes the encoder through the embedding, so a gradient must
    reach H, and it must be the right embedding's (measured in the learner's process, so compared, not only seen)."""
    H = torch.randn(*GRADIENT_INPUT["shape"], generator=torch.Generator().manual_seed(GRADIENT_INPUT["seed"]))
    mask = torch.tensor(GRADIENT_INPUT["mask"])
    backward_through(fn, "sentence_embedding", H.requires_grad_(), mask,
                     want=[torch.tensor(GRADIENT_ROWS)[:, None, :] * mask[:, :, None]], said=(
        "sentence_embedding passes no gradient back to H: it is computed under `torch.no_grad()`, with "
        "`.detach()`, or from a new tensor made of H's values. Fine-tuning trains MiniLM's top layers through "
        "this function, so it would then train the head alone and nothing below the embedding: compute it from "
        "H with torch operations.",
        "sentence_embedding returns the right embedding, but the gradient that reaches H is not its gradient: "
        "part of it is computed outside autograd (a norm or a count taken with `.detach()`, `.item()` or "
        "`.data`), so fine-tuning would follow another function than the one it returns. Compute every step "
        "from H with torch operations."))


def sentence_embedding(fn, cases=None, atol: float = 1e-4) -> None:
    """Check `fn(H, attention_mask)` on `cases` (the visible ones by default), each with a bool, a 0/1 integer and
    a 0/1 float mask."""
    replace(_embedding, atol=atol)(fn, None if cases is None else _with_every_mask(cases))


# --- align_labels(word_ids, word_labels) → list of ints ---------------------------------------------
def _skipped(out, word_ids, word_labels) -> str:
    # The first labelled position whose label is not its own word's. (The rule of first pieces itself is the
    # grader's: a red team composed it into an answer.)
    got = [int(x) for x in out]
    i = next(i for i, w in enumerate(word_ids) if w is not None and got[i] not in (IGNORE, word_labels[w]))
    w = word_ids[i]
    missing = [v for v in range(w) if v not in word_ids]
    why = (f"word {missing[0]} has no token (a tokenizer can drop a word), so " if missing else "")
    return (f"align_labels labelled the words in the order it met them, not by their id, for word_ids={word_ids} and "
            f"word_labels={word_labels}: {why}position {i} is the first piece of word {w} and gets "
            f"`word_labels[{w}]` = {word_labels[w]}, not {got[i]}. Look each label up by the token's own word id.")


def _align_fields(word_ids, word_labels) -> dict:
    at = {w: [i for i, v in enumerate(word_ids) if v == w] for w in word_ids}   # word id (None too) → its positions
    split = next((w for w, p in at.items() if w is not None and len(p) > 1), None)
    return {"n": len(word_ids), "word": split, "at": at.get(split), "specials": at.get(None),
            "label": None if split is None else word_labels[split], "zero": at.get(0, [None])[0],
            "last": word_ids[-1] if word_ids else None}


def _align_values(out, expected, word_ids, word_labels) -> str:
    out, expected = out.tolist(), expected.tolist()
    i = next(i for i, (a, b) in enumerate(zip(out, expected)) if a != b)
    w = word_ids[i]
    what = (f"a special token or padding (`word_ids[{i}] is None`): it gets -100 so the loss ignores it" if w is None
            else f"the first piece of word {w}: it carries `word_labels[{w}]` = {expected[i]}" if expected[i] != IGNORE
            else f"a continuation piece of word {w}: only the first piece is labelled, the others get -100 (the other "
                 "convention, B- on the first piece and I- on the rest, is shown in the lesson; it is not this "
                 "function's contract)")
    return (f"align_labels gave position {i} the label {out[i]} for word_ids={word_ids} and word_labels="
            f"{word_labels}; position {i} is {what}. (You returned {out}; expected {expected}.)")


align_labels = Exercise(
    "align_labels",
    # (word_ids, word_labels, expected) by hand. None marks [CLS], [SEP] and padding: the word's label on its first
    # piece, -100 on its other pieces and on every None.
    cases=[
        ([None, 0, 1, 1, 2, None], [3, 0, 5], [IGNORE, 3, 0, IGNORE, 5, IGNORE]),
        ([None, 0, 0, 0, 1, 2, 2, None, None, None], [1, 0, 2],
         [IGNORE, 1, IGNORE, IGNORE, 0, 2, IGNORE, IGNORE, IGNORE, IGNORE]),
        ([None, 0, 1, 2, 3, None], [4, 0, 6, 0], [IGNORE, 4, 0, 6, 0, IGNORE]),
        ([0, 0, 1, 2, 2, 2], [2, 7, 1], [2, IGNORE, 7, 1, IGNORE, IGNORE]),
        # No special token first (add_special_tokens=False): `word_ids[i - 1]` at i = 0 would read the last entry.
        ([0, 0], [5], [5, IGNORE]),
        # Word 1 gave no token (a tokenizer can drop a word, e.g. a zero-width space): labels go by word id, not
        # by counting the words seen.
        ([None, 0, 2, 2, None], [1, 7, 3], [IGNORE, 1, 3, IGNORE, IGNORE]),
    ],
    read=lambda case: ((list(case[0]), list(case[1])), list(case[2])),
    returns=list,
    shape=lambda word_ids, word_labels: (len(word_ids),),
    dtype=torch.long,
    meaning=", one label per token, len(word_ids)",
    where=lambda word_ids, word_labels: f" for word_ids={word_ids} and word_labels={word_labels}",
    fields=_align_fields,
    hints=[(TypeError, lambda err, word_ids, word_labels: (
                "An entry of word_ids is None at special tokens ([CLS], [SEP]) and padding, which belong to no word. "
                "Give those tokens -100 before looking anything up.", "looks-up-special-tokens")
            if "NoneType" in str(err) else None),
           (IndexError, lambda err, word_ids, word_labels: (
                f"word_labels has one label per WORD ({len(word_labels)}), word_ids one entry per TOKEN "
                f"({len(word_ids)}). Look a token's label up by its word id, not by the token position i.",
                "label-by-token-position", "Look it up as `word_labels[word_ids[i]]`.")
                if "list index" in str(err) else None)],
    explain=_align_values,
    unchanged="align_labels changed the word_ids or word_labels list it was given (e.g. with .pop, .append or an "
              "assignment into it); build a new list of labels and leave both untouched: the caller still needs them.",
    mistakes=table([
        ("one-label-per-word",
         "align_labels returned one label per word{where}: every token needs an entry, special tokens and "
         "padding included, len(word_ids) = {n}."),
        ("labels-special-tokens",
         "align_labels gave the special tokens and padding (positions {specials}, where word_ids is None) the "
         "label 0{where}. They belong to no word; they get -100 so the loss ignores them."),
        ("labels-every-piece",
         "align_labels labelled every piece of a split word{where}: word {word} is split into tokens {at}, "
         "and you gave all of them {label}. Only the first piece carries the word's label; its other pieces "
         "get -100, so each word is counted once by the loss."),
        ("label-on-last-piece",
         "align_labels put each word's label on its LAST piece{where}: word {word} is tokens {at}, and the "
         "label belongs on the first one, with -100 on the rest."),
        ("word-0-taken-for-special",
         "align_labels gave -100 to the first piece of word 0 (position {zero}){where}. Looping `for word_id in "
         "word_ids`, a test like `if not word_id` or `if word_id:` is false for word 0 as well as for None.",
         "Test `word_id is None`."),
        ("previous-starts-at-0",
         "align_labels gave -100 to position 0, the first piece of word 0{where}, as if it continued a word 0 "
         "before it. Nothing comes before position 0: the word id it is compared with must start as None, "
         "not 0."),
        ("previous-wraps-around",
         "align_labels compared position 0 with `word_ids[-1]`, the LAST entry{where}: a negative index "
         "wraps around in Python, and that entry is word {last} too, so the word that starts at position "
         "0 was taken for a continuation. Nothing comes before position 0: a word there always starts (or "
         "keep the previous word id in a variable that starts as None)."),
        ("labels-by-word-count", _skipped),
        # Found by probing the check: got only "returned shape (4,); expected (6,)" before.
        ("skips-special-tokens",
         "align_labels gave the special tokens and padding (positions {specials}, where word_ids is None) no entry at "
         "all{where}: skipping them shifts every later label onto another token. The labels line up with the tokens "
         "one to one, len(word_ids) = {n}; those tokens get -100, which the loss ignores.",
         "Append -100 for a word id that is None, instead of skipping it."),
        # Found by probing the check: got only "position 1 is the first piece of word 0" before.
        ("continuation-labelled-not-first",
         "align_labels gave every continuation piece its word's label and the first piece -100{where}: the test that "
         "tells a word's first piece from the others is the wrong way round (`==` where `!=` belongs, or its two "
         "branches swapped). Only the first piece carries the label; the other pieces get -100.",
         "A token starts a new word when its word id differs from the previous token's: label it there."),
    ]),
)

__all__ = ["sentence_embedding", "align_labels", "CheckFailed"]
