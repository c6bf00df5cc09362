"""Checks for lesson 08: sentence_embedding and align_labels.

Visible cases carry expected values written out by hand. When a result is wrong, the checks compare it
with what the usual mistakes give (padding in the mean, no normalisation, normalising each token
before the mean, [CLS] instead of the mean, every piece labelled, the label on the last piece, special
tokens labelled, word 0 taken for a special token, …) and say which one it looks like.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F

from .core import CheckFailed, call, call_raw, explain, fail, passed, require_function

T, F_ = True, False
IGNORE = -100

# --- sentence_embedding: (H, mask, expected) -------------------------------------------------------
# Each row's real vectors average to a vector with a whole-number length (3-4-5, 2-3-6-7, 1-2-2-3,
# 0-4-3-5), so the expected unit vectors can be written out; padding holds large values, so any
# padding that enters the mean shows.
EMBED_CASES = [
    ([[[1., 2.], [5., 6.], [-40., 0.], [-40., 0.]],          # 2 real: mean (3, 4), length 5
      [[8., 1.], [2., -4.], [2., 12.], [0., 50.]]],         # 3 real: mean (4, 3), length 5
     [[T, T, F_, F_], [T, T, T, F_]],
     [[0.6, 0.8], [0.8, 0.6]]),
    ([[[1., 0., 0.], [3., 6., 6.], [2., 3., 6.], [0., 3., 12.], [6., 3., 6.], [0., 3., 6.]],   # mean (2, 3, 6)
      [[3., 0., 4.], [0., 6., 0.], [0., 0., 2.], [50., -50., 0.], [50., -50., 0.], [50., -50., 0.]],
      [[0., -4., 3.], [9., 9., 9.], [9., 9., 9.], [9., 9., 9.], [9., 9., 9.], [9., 9., 9.]]],
     [[T, T, T, T, T, T], [T, T, T, F_, F_, F_], [T, F_, F_, F_, F_, F_]],
     [[2 / 7, 3 / 7, 6 / 7], [1 / 3, 2 / 3, 2 / 3], [0., -0.8, 0.6]]),
]


def _close(a: Any, b: torch.Tensor, atol: float = 1e-4) -> bool:
    return (isinstance(a, torch.Tensor) and tuple(a.shape) == tuple(b.shape)
            and bool(torch.allclose(a.detach().float(), b.float(), atol=atol)))


def _unit(z: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return z / z.norm(dim=dim, keepdim=True).clamp(min=1e-12)


def _mask_variants(mask: torch.Tensor):
    """The same mask as bool, 0/1 long (what a Hugging Face tokenizer returns) and 0/1 float."""
    return [("bool", mask), ("0/1 integer", mask.long()), ("0/1 float", mask.float())]


def sentence_embedding(fn: Callable, cases: Sequence | None = None, atol: float = 1e-4) -> None:
    """Run `fn(H, attention_mask)` on each case, with bool and 0/1 masks, and name the mistake."""
    require_function(fn, "sentence_embedding")
    cases = EMBED_CASES if cases is None else cases
    for H, mask, expected in cases:
        H = torch.as_tensor(H, dtype=torch.float32)
        mask = torch.as_tensor(mask).bool()
        expected = torch.as_tensor(expected, dtype=torch.float32)
        for kind, m in _mask_variants(mask):
            out = _run_embedding(fn, H, m, kind)
            try:
                _diagnose_embedding(out, H, mask, expected, kind, atol)
            except CheckFailed as err:
                if kind == "bool":
                    raise
                fail(f"{err}\nYour function is right with a bool mask but not with a {kind} mask ({m.dtype}), "
                     "which is what a tokenizer returns. Indexing with a 0/1 integer tensor picks positions 0 "
                     "and 1 instead of selecting; convert first: mask.bool(), or mask.to(H.dtype) to multiply.")
    passed("sentence_embedding", len(cases))


def _run_embedding(fn: Callable, H: torch.Tensor, mask: torch.Tensor, kind: str):
    H_before, mask_before = H.clone(), mask.clone()
    try:
        out = call(fn, "sentence_embedding", H, mask)
    except CheckFailed as err:
        message = str(err)
        if kind != "bool":
            fail(f"{message}\nThe mask was a {kind} tensor ({mask.dtype}), as a tokenizer returns it. A mask "
                 "may be bool or 0/1 numbers: convert it first, e.g. mask.bool() or mask.to(H.dtype).")
        if "size of tensor" in message or "shape" in message:
            fail(f"{message}\nLine the (B, n) mask up with H's position axis: mask[:, :, None] has shape "
                 "(B, n, 1) and broadcasts over the d features.")
        raise
    if not torch.equal(H, H_before) or not torch.equal(mask, mask_before):
        fail("sentence_embedding changed the tensors it was given (H or attention_mask, e.g. with `*=` or "
             "masked_fill_); compute new tensors instead, the caller still needs H.")
    return out


def _where(H: torch.Tensor, mask: torch.Tensor, kind: str) -> str:
    B, n, d = H.shape
    text = f" (H of shape ({B}, {n}, {d}), rows with {mask.sum(1).tolist()} real tokens"
    return text + (f", a {kind} mask)" if kind != "bool" else ")")


def _diagnose_embedding(out: Any, H: torch.Tensor, mask: torch.Tensor, expected: torch.Tensor,
                        kind: str, atol: float) -> None:
    B, n, d = H.shape
    where = _where(H, mask, kind)
    if not isinstance(out, torch.Tensor):
        fail(f"sentence_embedding returned a {type(out).__name__}; return a torch.Tensor of shape (B, d){where}.")
    if tuple(out.shape) != (B, d):
        if tuple(out.shape) == (B, n, d):
            fail(f"sentence_embedding returned shape (B, n, d) = {tuple(out.shape)}{where}: one vector per "
                 "token, not per sentence. Pool over the positions (dim=1) first, then normalise.")
        if tuple(out.shape) == (B, 1, d):
            fail(f"sentence_embedding returned shape {tuple(out.shape)}{where}: it kept the position axis "
                 "(keepdim=True on the sum over positions). The result is (B, d).")
        if tuple(out.shape) == (B, n):
            fail(f"sentence_embedding returned shape (B, n) = {tuple(out.shape)}{where}: it reduced the "
                 "feature axis. Average over the positions (dim=1) to get one d-vector per sentence.")
        fail(f"sentence_embedding returned shape {tuple(out.shape)}; expected (B, d) = {(B, d)}{where}.")
    if not out.is_floating_point():
        fail(f"sentence_embedding returned dtype {out.dtype}; an embedding is a float tensor{where}.")
    out = out.detach()
    if _close(out, expected, atol):
        return
    m = mask.float()[:, :, None]
    count = m.sum(1)
    masked_mean = (H * m).sum(1) / count
    mean_all = H.mean(1)
    unit_tokens = _unit(H)
    norms = out.norm(dim=-1)
    short = next((b for b in range(B) if int(count[b]) < n), 0)
    said_pad = (f"row {short} has {int(count[short])} real tokens, but your mean averaged all {n} positions: "
                "padding positions were averaged in")
    # no normalisation (the direction may still be right)
    if not torch.allclose(norms, torch.ones(B), atol=1e-3):
        if _close(out, masked_mean, atol) or _close(out, (H * m).sum(1), atol):
            fail(f"sentence_embedding is not L2-normalised: row 0 has length {norms[0]:.4g}, not 1{where}. The "
                 "masked mean is right; divide each row by its L2 norm (z / z.norm(dim=-1, keepdim=True), or "
                 "F.normalize(z, dim=-1)), so that a dot product of two embeddings is their cosine.")
        if _close(out, mean_all, atol) or _close(out, H.sum(1) / count, atol):
            fail(f"sentence_embedding is not L2-normalised (row 0 has length {norms[0]:.4g}), and {said_pad}{where}. "
                 "Zero the padding with the mask, divide by the real count, then divide by the L2 norm.")
        if _close(out, H[:, 0], atol):
            fail(f"sentence_embedding returned H[:, 0], the [CLS] position, not normalised{where}. The sentence "
                 "embedding is the mean over the real tokens, divided by its L2 norm.")
        if _close(out, F.normalize(masked_mean, p=1, dim=-1), atol):
            fail(f"sentence_embedding divided by the L1 norm (the sum of absolute values){where}: row 0 has "
                 f"L2 length {norms[0]:.4g}. Use the L2 norm, sqrt(sum of squares): F.normalize(z, dim=-1) (p=2).")
        if _close(out, _unit(masked_mean, dim=0), atol) or _close(out, _unit(mean_all, dim=0), atol):
            fail(f"sentence_embedding normalised over the batch axis (dim=0): each column has length 1, not "
                 f"each sentence{where}. Normalise every row: dim=-1.")
        if _close(out, (unit_tokens * m).sum(1) / count, atol):
            fail(f"sentence_embedding normalised each token vector before averaging, and the average of unit "
                 f"vectors is shorter than 1 (row 0: {norms[0]:.4g}){where}. Average the raw vectors of the "
                 "real tokens first, then normalise the mean once.")
        fail(f"sentence_embedding is not L2-normalised: row 0 has length {norms[0]:.4g}, not 1{where}. "
             "Divide each row by its L2 norm.")
    if _close(out, _unit(mean_all), atol):
        fail(f"sentence_embedding: {said_pad}{where}. Only real tokens count: multiply H by the mask, sum "
             "over positions and divide by mask.sum(1), then normalise.")
    if _close(out, _unit(H[:, 0]), atol):
        fail(f"sentence_embedding returned the normalised [CLS] vector H[:, 0] (the first position){where}. "
             "This model was trained with mean pooling: average the real tokens, then normalise.")
    if _close(out, _unit((unit_tokens * m).sum(1)), atol):
        fail(f"sentence_embedding normalised each token vector before averaging{where}: that weighs every "
             "token the same, whatever its length, and gives another direction. Average the raw vectors of "
             "the real tokens first, then normalise the mean once.")
    last = (count.squeeze(1).long() - 1)
    if _close(out, _unit(H[torch.arange(B), last]), atol):
        fail(f"sentence_embedding returned the normalised last real token{where}; an encoder's sentence "
             "embedding here is the mean over all real tokens.")
    masked_max = H.masked_fill(~mask[:, :, None], float("-inf")).amax(1)
    if _close(out, _unit(masked_max), atol) or _close(out, _unit(H.amax(1)), atol):
        fail(f"sentence_embedding took the maximum over positions{where}; this model pools with the mean.")
    for b in range(B):
        if not _close(out[b], expected[b], atol):
            fail(f"sentence_embedding row {b} ({int(count[b])} real tokens) is "
                 f"{[round(v, 4) for v in out[b].tolist()]}; the normalised mean of its real vectors is "
                 f"{[round(v, 4) for v in expected[b].tolist()]}{where}.")


# --- align_labels: (word_ids, word_labels, expected) -----------------------------------------------
# None marks [CLS], [SEP] and padding. Written out by hand: the word's label on its first piece,
# -100 on its other pieces and on every None.
ALIGN_CASES = [
    ([None, 0, 1, 1, 2, None], [3, 0, 5],
     [IGNORE, 3, 0, IGNORE, 5, IGNORE]),
    ([None, 0, 0, 0, 1, 2, 2, None, None, None], [1, 0, 2],
     [IGNORE, 1, IGNORE, IGNORE, 0, 2, IGNORE, IGNORE, IGNORE, IGNORE]),
    ([None, 0, 1, 2, 3, None], [4, 0, 6, 0],
     [IGNORE, 4, 0, 6, 0, IGNORE]),
    ([0, 0, 1, 2, 2, 2], [2, 7, 1],
     [2, IGNORE, 7, 1, IGNORE, IGNORE]),
]


def align_labels(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(word_ids, word_labels)` on each case and name the mistake if the labels are wrong."""
    require_function(fn, "align_labels")
    cases = ALIGN_CASES if cases is None else cases
    for word_ids, word_labels, expected in cases:
        word_ids, word_labels, expected = list(word_ids), list(word_labels), list(expected)
        ids_before, labels_before = list(word_ids), list(word_labels)
        out = _run_align(fn, word_ids, word_labels)
        _diagnose_align(out, word_ids, word_labels, expected)
        if word_ids != ids_before or word_labels != labels_before:
            fail("align_labels changed the lists it was given (word_ids or word_labels); build a new list.")
    passed("align_labels", len(cases))


def _run_align(fn: Callable, word_ids: list, word_labels: list):
    try:
        return call_raw(fn, "align_labels", list(word_ids), list(word_labels))
    except NotImplementedError as err:
        explain(err, "align_labels", word_ids, word_labels)
    except TypeError as err:
        if "NoneType" in str(err):
            fail(f"align_labels raised TypeError ({err}) for word_ids={word_ids}: an entry of word_ids is None "
                 "at special tokens ([CLS], [SEP]) and padding, which belong to no word. Give those tokens "
                 "-100 before looking anything up.")
        explain(err, "align_labels", word_ids, word_labels)
    except IndexError as err:
        fail(f"align_labels raised IndexError ({err}) for word_ids={word_ids} and word_labels={word_labels}: "
             f"word_labels has one label per WORD ({len(word_labels)}), word_ids one entry per TOKEN "
             f"({len(word_ids)}). Look a token's label up by its word id, word_labels[word_ids[i]], not by "
             "the token position i.")
    except Exception as err:
        explain(err, "align_labels", word_ids, word_labels)


def _pieces(word_ids: list) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, w in enumerate(word_ids):
        if w is not None:
            out.setdefault(w, []).append(i)
    return out


def _diagnose_align(out: Any, word_ids: list, word_labels: list, expected: list) -> None:
    where = f" for word_ids={word_ids} and word_labels={word_labels}"
    if isinstance(out, torch.Tensor):
        fail(f"align_labels returned a tensor; return a plain list of ints, one per token{where} "
             "(e.g. build it with append, or call .tolist()).")
    if isinstance(out, tuple):
        out = list(out)
    if not isinstance(out, list):
        fail(f"align_labels returned a {type(out).__name__}; return a list of ints, one per token{where}.")
    if len(out) != len(word_ids):
        extra = (" That is one per word: every token needs an entry, special tokens and padding included."
                 if len(out) == len(word_labels) else "")
        fail(f"align_labels returned {len(out)} labels; expected one per token, len(word_ids) = "
             f"{len(word_ids)}{where}.{extra}")
    bad_type = [x for x in out if isinstance(x, bool) or not isinstance(x, int)]
    if bad_type:
        fail(f"align_labels returned {bad_type[0]!r} (a {type(bad_type[0]).__name__}) in its list; every "
             f"entry must be a plain int (a label id, or -100){where}.")
    if out == expected:
        return
    pieces = _pieces(word_ids)
    got = f"you returned {out}; expected {expected}"
    specials = [i for i, w in enumerate(word_ids) if w is None]
    labelled_special = [i for i in specials if out[i] != IGNORE]
    if labelled_special:
        i = labelled_special[0]
        fail(f"align_labels gave position {i}, a special token or padding (word_ids[{i}] is None), the label "
             f"{out[i]}{where}: {got}. Special tokens and padding belong to no word; they get -100 so the "
             "loss ignores them.")
    every = [word_labels[w] if w is not None else IGNORE for w in word_ids]
    if out == every:
        w, pos = next((w, p) for w, p in pieces.items() if len(p) > 1)
        fail(f"align_labels labelled every piece of a split word{where}: word {w} is split into tokens {pos}, "
             f"and you gave all of them {word_labels[w]}. Only the first piece carries the word's label; its "
             f"other pieces get -100, so each word is counted once by the loss. ({got})")
    last_piece = list(expected)
    for w, pos in pieces.items():
        last_piece[pos[0]] = IGNORE
        last_piece[pos[-1]] = word_labels[w]
    if out == last_piece:
        w, pos = next((w, p) for w, p in pieces.items() if len(p) > 1)
        fail(f"align_labels put each word's label on its LAST piece{where}: word {w} is tokens {pos}, and the "
             f"label belongs on the first one, {pos[0]}, with -100 on the rest. ({got})")
    if 0 in pieces:
        first0 = pieces[0][0]
        zero_as_none = list(expected)
        zero_as_none[first0] = IGNORE
        if out == zero_as_none:
            fail(f"align_labels gave -100 to the first piece of word 0 (position {first0}){where}. A test like "
                 "`if not word_id` or `if word_id:` is false for word 0 as well as for None: test "
                 f"`word_id is None`. ({got})")
    for w, pos in pieces.items():
        if out[pos[0]] != word_labels[w]:
            fail(f"align_labels gave position {pos[0]}, the first piece of word {w}, the label {out[pos[0]]}; "
                 f"word {w}'s label is word_labels[{w}] = {word_labels[w]}{where}. ({got})")
        for i in pos[1:]:
            if out[i] != IGNORE:
                fail(f"align_labels gave position {i}, a continuation piece of word {w} (tokens {pos}), the label "
                     f"{out[i]}{where}: only the first piece is labelled, the others get -100. (The other "
                     f"convention, B- on the first piece and I- on the rest, is shown in the lesson; it is not "
                     f"this function's contract.) ({got})")
    fail(f"align_labels{where}: {got}.")


__all__ = ["sentence_embedding", "align_labels", "CheckFailed"]
