"""Checks for lesson 01: mask_tokens, MLMHead, mlm_loss and tying_savings.

mask_tokens is random, so no table can say what a mistake returns on the same draw. Its checks are rules
that hold for every draw (the caller's ids untouched, specials never chosen, labels −100 off the chosen
positions, p = 0 and p = 1, a generator in the same state giving the same result and one in another state
another) and frequencies over a large seeded batch with tolerances many standard deviations wide; each rule
names its mistake. The five special tokens have ids 0 … 4, so a random replacement is a word id in
[5, vocab_size); special_mask, not the id, says which positions are protected.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Sequence

import torch

from . import heads
from .core import CheckFailed, a_type, call, fail, passed, require_function, require_module_class
from .engine import (Exercise, Mistake, backward_through, close_gradient, inputs_as, judge_gradients, reference,
                     reference_step, same, show)
from .shared import table

NUM_SPECIAL = 5                     # [PAD] [CLS] [SEP] [MASK] [UNK] are ids 0 … 4
PAD, CLS, SEP, MASK, UNK = range(NUM_SPECIAL)
T, F_ = True, False

# (ids, special_mask, p, expected labels) written out by hand; vocab_size 12, mask_id 3.
EXACT_CASES = [
    ([[1, 7, 8, 9, 2, 0]], [[T, F_, F_, F_, T, T]], 0.0, [[-100] * 6]),
    ([[1, 7, 8, 9, 2, 0]], [[T, F_, F_, F_, T, T]], 1.0, [[-100, 7, 8, 9, -100, -100]]),
    # The caller protects the word 11 too: special_mask, not the id, says which positions may be chosen.
    ([[1, 5, 11, 2], [1, 6, 2, 0]], [[T, F_, T, T], [T, F_, T, T]], 1.0,
     [[-100, 5, -100, -100], [-100, 6, -100, -100]]),
]
# Statistical cases: (vocab_size, p, seed[, mask_id]); p None means "call without p" (the default, 0.15).
# mask_id defaults to [MASK] = 3; the second case passes [UNK] = 4, still special (so never a random word),
# and an answer must write the id it is given.
STAT_CASES = [(60, None, 0), (60, 0.4, 1, UNK)]


# --- mask_tokens ------------------------------------------------------------------------------
def synthetic_batch(rows: int, n: int, vocab_size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A right-padded batch [CLS] w … w [SEP] [PAD] … with word ids in [5, vocab_size), and its special mask."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, n - 1, (rows,), generator=g)[:, None]       # words per row
    ids, pos = torch.randint(NUM_SPECIAL, vocab_size, (rows, n), generator=g), torch.arange(n)[None, :]
    ids = torch.where(pos == 0, CLS, torch.where(pos == lengths + 1, SEP, torch.where(pos > lengths + 1, PAD, ids)))
    return ids, (pos == 0) | (pos > lengths)


def mask_tokens(fn: Callable, cases: Sequence | None = None, exact: Sequence | None = None) -> None:
    """Check `fn(ids, special_mask, vocab_size, mask_id, p, generator)` and name the mistake."""
    require_function(fn, "mask_tokens")
    cases = STAT_CASES if cases is None else cases
    exact = [(torch.as_tensor(ids, dtype=torch.long), torch.as_tensor(special, dtype=torch.bool), p, expected)
             for ids, special, p, expected in (EXACT_CASES if exact is None else exact)]
    # Every exact case's call first: at p = 0 labels whose torch.where values are swapped hold an id at every position,
    # as labels-everywhere's do, and only a case with p = 1 tells them apart.
    calls = [_call_mask(fn, ids, special, 12, MASK, p, seed=0) for ids, special, p, _ in exact]
    swapped = any(p == 1.0 and _labels_swapped(out, ids, special)
                  for (ids, special, p, _), (out, _) in zip(exact, calls))
    for (ids, special, p, expected), called in zip(exact, calls):
        _, labels = _run_mask(fn, ids, special, 12, MASK, p, 0, called, swapped)
        expected, chosen = torch.as_tensor(expected, dtype=torch.long), labels != -100
        where = f"your labels are {labels.tolist()} for ids={ids.tolist()}, special_mask={special.tolist()}, p={p}"
        _first([
            ("comparison-reversed", (p == 0.0 and bool(chosen[~special].all())) or (p == 1.0 and not chosen.any()),
             f"with p={p} you chose {'every' if p == 0.0 else 'no'} non-special position, the opposite of what p "
             f"asks ({where}). Is your comparison reversed? A position is chosen when its uniform draw is below p.",
             "`torch.rand(ids.shape, generator=generator) < p`."),
            ("p-ignored", p == 0.0 and bool(chosen.any()), f"with p=0.0 nothing may be chosen, but {where}. Does "
             "your code use the argument p, or a fixed 0.15?"),
            ("not-all-chosen", p == 1.0 and not bool(chosen[expected != -100].all()), f"with p=1.0 every "
             f"non-special position must be chosen, but {where}. Each one is chosen with probability p: use the "
             "argument p as it is."),
            ("wrong-labels", not torch.equal(labels, expected), f"{where}; expected {expected.tolist()}: the "
             "original id at each chosen position, −100 everywhere else."),
        ])
    for vocab_size, p, seed, *given in cases:
        _statistics(fn, vocab_size, p, seed, *given or [MASK])
    # The converse of "same state, same result": generators in two states must give two draws, else the answer
    # seeds its own. 100 rows hold some 200 chosen positions: two right draws never agree on all of them.
    ids, special = synthetic_batch(100, 32, 60, 2)
    draws = [_run_mask(fn, ids, special, 60, MASK, None, seed) for seed in (0, 1)]
    if all(torch.equal(a, b) for a, b in zip(*draws)):
        fail("two calls with generators in different states gave the same result: your draws come from a fixed "
             "seed, not from the generator the caller passed. Do not seed anything inside mask_tokens (no "
             "`torch.manual_seed(...)`, `generator.manual_seed(...)` or new `torch.Generator()`).", "fixed-seed",
             "Draw every random number with `generator=generator`, the generator as it is given.")
    passed("mask_tokens", len(exact) + len(cases))


def _first(rules: list[tuple]) -> None:
    """Fail with the first broken rule (key, broken, message[, fix])."""
    for key, broken, message, *fix in rules:
        if broken:
            fail(message, key, *fix)


def _at(mask: torch.Tensor) -> tuple[int, int]:
    """The first True position of a 2-D mask, as (row, column); (0, 0) when there is none."""
    return tuple(mask.nonzero()[0].tolist()) if bool(mask.any()) else (0, 0)


def _call_mask(fn, ids, special, vocab_size, mask_id, p, seed: int) -> tuple:
    """fn's output with a generator seeded with `seed`, and the names of the caller's tensors it changed in place."""
    before = ids.clone(), special.clone()
    out = call(fn, "mask_tokens", ids, special, vocab_size, mask_id, generator=torch.Generator().manual_seed(seed),
               **({} if p is None else {"p": p}))
    return out, [name for name, now, was in (("ids", ids, before[0]), ("special_mask", special, before[1]))
                 if not torch.equal(now, was)]


def _run_mask(fn, ids, special, vocab_size, mask_id, p, seed: int, called: tuple | None = None, swapped=False):
    """Call fn with a generator seeded with `seed` (or take `called`, what `_call_mask` gave) and check the rules that
    hold for every draw; returns (inputs, labels). `swapped`: fn's labels at p = 1 were the right ones' opposite."""
    out, changed = _call_mask(fn, ids, special, vocab_size, mask_id, p, seed) if called is None else called
    for name in changed[:1]:
        fail(f"mask_tokens modified the caller's `{name}` tensor in place. Work on a copy and return new tensors: "
             "the caller still needs it.", "changed-input", f"`{name}.clone()` is a copy.")
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        fail(f"mask_tokens must return a pair (inputs, labels); it returned {a_type(out)}.", "not-a-pair",
             "Return the two tensors together, inputs first: `(inputs, labels)`.")
    if isinstance(out[0], torch.Tensor) and bool((out[0] == -100).any()):
        # both hold −100: the inputs were copied from the labels (`labels.clone()`), not swapped with them
        if isinstance(out[1], torch.Tensor) and bool((out[1] == -100).any()):
            fail("the inputs mask_tokens returned hold −100 where a position was not chosen: they were built from the "
                 "labels (a copy of them), so the model would read −100 as a token id. The inputs are the caller's "
                 "ids with only the chosen positions corrupted.", "inputs-from-labels",
                 "Build the inputs from a copy of ids, `ids.clone()`, not of labels.")
        fail("the first tensor mask_tokens returned holds −100s, so it is the labels: return the pair in the order "
             "(inputs, labels).", "pair-swapped", "Swap the two: return `(inputs, labels)`, not `(labels, inputs)`.")
    for x, what in zip(out, ("inputs", "labels")):
        key = ("not-a-tensor" if not isinstance(x, torch.Tensor) else "wrong-shape" if x.shape != ids.shape
               else "wrong-dtype" if x.dtype != torch.long else "")
        if key:
            kind = f"as {a_type(x)}" if key == "not-a-tensor" else f"of shape {tuple(x.shape)}, {x.dtype}"
            fail(f"mask_tokens returned {what} {kind}; it must be a torch.int64 tensor of the shape of ids, "
                 f"{tuple(ids.shape)}.", key, "Build both from a copy of ids, `ids.clone()`, which has its shape and "
                 "dtype, and change its entries with torch operations (`torch.where`, a boolean index).")
        if x.data_ptr() == ids.data_ptr():
            fail(f"mask_tokens returned the caller's `ids` tensor itself as `{what}`; return a new tensor, so that "
                 "corrupting the inputs never modifies the caller's tensor in place.", "returns-ids",
                 "Start from a copy, `ids.clone()`.")
    inputs, labels = out
    chosen, changed = labels != -100, inputs != ids
    drawn = inputs[chosen & changed & (inputs != mask_id)]                # the random replacements
    special_id = (drawn[(drawn >= 0) & (drawn < NUM_SPECIAL)].tolist() + [None])[0]
    outside_id = (drawn[(drawn < 0) | (drawn >= vocab_size)].tolist() + [None])[0]
    (b, i), (c, j) = _at(chosen & special), _at(~chosen & changed)
    # One id that no random word may be (a special or outside the vocabulary) in most of the corrupted positions,
    # more than one of them: what the answer writes for [MASK]
    corrupted = inputs[chosen & changed]
    fixed_id = int(corrupted.mode().values) if len(corrupted) > 1 else mask_id
    if NUM_SPECIAL <= fixed_id < vocab_size or (corrupted == fixed_id).double().mean() <= 0.5:
        fixed_id = mask_id   # a word a random draw may give, or no id in most of them: none written for [MASK]
    # One value other than −100 (and than the ids) at every protected position: what the labels meant to be ignored
    unchosen = labels[special].unique()
    ignored = int(unchosen[0]) if len(unchosen) == 1 and not torch.equal(labels[special], ids[special]) else -100
    everywhere = bool(chosen.all()) and bool(special.any()) and p != 1.0   # labels-everywhere's sign
    _first([
        # -1 (pytorch-transformers 1.x's ignore value) or 0: labels-everywhere, "an id at every position", before
        ("wrong-ignore-value", ignored != -100, f"your labels hold {ignored} at the positions that were not chosen "
         "(the special ones, for a start): an unchosen position is marked −100, the `ignore_index` of "
         "F.cross_entropy, which leaves it out of the loss. Any other value is read as a class to predict there (or, "
         "below 0 and not −100, makes the loss raise).", "Start the labels from `torch.full_like(ids, -100)` and "
         "copy the original ids at the chosen positions: `torch.where(chosen, ids, -100)`."),
        # before labels-everywhere, which is what the swap looks like at p = 0 (mask_tokens: `swapped`)
        ("labels-where-swapped", everywhere and swapped,
         "your labels are the original ids where a position was NOT chosen (the specials included) and −100 where it "
         "was: the two values of the labels' `torch.where` are swapped. With p=1.0 every non-special position is "
         "chosen, and your labels are −100 on all of them.", "`torch.where(chosen, ids, -100)`: the condition's True "
         "positions take the second argument, the original id."),
        ("labels-everywhere", everywhere, "your labels hold an id at "
         "every position, specials included: labels must be −100 wherever a position was not chosen, so that "
         "the loss is taken over the chosen positions only."),
        # `ids.masked_fill(special_mask, -100)`: at p = 0 told comparison-reversed before, though nothing was corrupted
        ("labels-everywhere",
         p != 1.0 and bool(chosen[~special].all()) and (inputs == ids)[chosen].double().mean() > 0.5,
         "your labels hold the original id at every non-special position, chosen or not, and most of them kept their "
         "id in the inputs: labels must be −100 wherever a position was not chosen, so that the loss is taken over "
         "the chosen positions only.", "`torch.where(chosen, ids, -100)`: the id at the chosen positions alone."),
        ("special-chosen", bool((chosen & special).any()), f"mask_tokens chose a protected position: row {b}, "
         f"position {i} (id {int(ids[b, i])}) is True in special_mask and got a label. A position where "
         "special_mask is True must never be chosen, whatever its id (the caller may protect any position): "
         "exclude them with special_mask itself, not with a test on the ids.", "Add `& ~special_mask` to the choice."),
        ("special-corrupted", bool(changed[special].any()), "mask_tokens changed a position where special_mask "
         "is True in the inputs. Those positions must never be chosen or corrupted."),
        ("labels-hold-inputs", bool((labels != ids)[chosen].any()) and torch.equal(labels[chosen], inputs[chosen]),
         "your labels hold the corrupted inputs ([MASK] or the random word); a label must be the ORIGINAL id, "
         "the word the model has to recover."),
        ("wrong-labels", bool((labels != ids)[chosen].any()), "at a chosen position the label must be the "
         "original id; some of your labels are other ids."),
        # `labels = torch.where(masked, ids, -100)`: told split-over-all-positions before, as the random words and the
        # unchanged ids lie at positions labelled −100
        ("labels-only-where-masked", bool((~chosen & changed).any()) and bool((inputs[chosen] == mask_id).all()),
         "your labels mark only the positions that became [MASK]: the chosen positions given a random word or left "
         "unchanged (20 % of them) must carry their label too, the original id, or the model is never asked to "
         "correct a word it sees.", "Build the labels from every chosen position, `torch.where(chosen, ids, -100)`, "
         "before the 80/10/10 split decides what the inputs hold there."),
        ("split-over-all-positions", bool((~chosen & changed).any()), f"mask_tokens changed position ({c}, {j}), "
         "whose label is −100. Only chosen positions may be corrupted (and each corrupted position needs its "
         "label); the 80/10/10 split is taken among the chosen positions, not among all positions."),
        # Before random-draws-specials and random-outside-vocabulary: a fixed id written instead of mask_id (3 where
        # another is given, BERT's 103) looks like a drawn special or a word outside the vocabulary.
        ("mask-id-ignored", fixed_id != mask_id and not bool((inputs[chosen] == mask_id).any()),
         f"mask_tokens was given mask_id={mask_id}, but the positions it masked hold {fixed_id}: write the mask_id "
         "argument itself there, not a fixed id (the caller's tokenizer decides which id [MASK] has)."),
        ("random-draws-specials", special_id is not None, f"a random replacement drew the special "
         f"token id {special_id}: random replacements must be non-special words, ids in [{NUM_SPECIAL}, vocab_size) "
         f"(the special tokens are ids 0 … {NUM_SPECIAL - 1})."),
        ("random-outside-vocabulary", outside_id is not None, f"a random replacement is outside the "
         f"vocabulary (id {outside_id}, vocab_size={vocab_size}); draw ids in [{NUM_SPECIAL}, vocab_size)."),
    ])
    return inputs, labels


def _labels_swapped(out, ids, special) -> bool:
    """Whether the labels of `out`, fn's output with p = 1, are −100 at every non-special position and the original id
    at every special one: the right labels' opposite, what `torch.where(chosen, -100, ids)` gives."""
    labels = out[1] if isinstance(out, (tuple, list)) and len(out) == 2 else None
    return (isinstance(labels, torch.Tensor) and labels.shape == ids.shape and bool(special.any())
            and torch.equal(labels[special], ids[special]) and bool((labels[~special] == -100).all()))


def _statistics(fn, vocab_size: int, p: float | None, seed: int, mask_id: int) -> None:
    ids, special = synthetic_batch(1500, 32, vocab_size, seed)
    inputs, labels = _run_mask(fn, ids, special, vocab_size, mask_id, p, seed)
    target, chosen = 0.15 if p is None else p, labels != -100
    called = f"(vocab_size={vocab_size}, p={'default' if p is None else p}, 1500 rows)"
    fraction, k = chosen.sum().item() / (~special).sum().item(), max(1, chosen.sum().item())
    masked, unchanged = (((inputs == x) & chosen).sum().item() / k for x in (mask_id, ids))
    random = 1 - masked - unchanged
    split = f"[MASK] {masked:.1%}, random word {random:.1%}, unchanged {unchanged:.1%}"
    drawn = inputs[chosen & (inputs != mask_id) & (inputs != ids)]       # the random replacements
    kinds = drawn.unique().numel()
    # With at least 12 draws per word id, a uniform draw misses one given end of the range with chance ~e^-12.
    unseen = [x for x in (NUM_SPECIAL, vocab_size - 1) if not bool((drawn == x).any())]
    # Each position is drawn on its own, so rows of as many words choose unequal numbers of them: the ~50 rows of
    # each length all choosing one number has a chance far below 1e-20. A fixed count per row chooses one number.
    words, picked = (~special).sum(1), chosen.sum(1)
    fixed = 0 < target < 1 and all(picked[words == w].unique().numel() == 1 for w in words.unique())
    # One draw per row, `torch.rand(B, 1) < p`: every row chose all of its words or none. A right draw leaves one of
    # the ~1400 rows of two words or more half chosen with chance far above 1 − 1e-20.
    whole = 0 < target < 1 and bool(((picked == 0) | (picked == words))[words > 1].all())
    _first([
        ("comparison-reversed", abs(target - 0.5) > 0.1 and abs(fraction - (1 - target)) < 0.025,
         f"you chose {fraction:.1%} of the non-special positions {called}, about 1 − p: is your comparison "
         "reversed? A position is chosen when its uniform draw is below p."),
        ("p-ignored", abs(fraction - target) > 0.025 and p is not None and abs(fraction - 0.15) < 0.025,
         f"you chose {fraction:.1%} of the non-special positions with p={p}: your code ignores the argument p "
         "(it looks like a fixed 0.15)."),
        # Labels only where the input changed: [MASK] and random words keep their 8 : 1 ratio, the 10 % left
        # unchanged vanish from the labels (an 80 / 20 split with none unchanged is none-unchanged). Before
        # wrong-fraction, as the labelled share of the positions is then 0.9 p.
        ("unchanged-not-labelled", unchanged < 0.03 and abs(masked - 8 / 9) < 0.04, f"only the positions you "
         f"changed carry a label ({split} of the labelled ones): the chosen positions left unchanged (10 % of "
         "them) must get their label too, the original id. Build labels from every chosen position, before the "
         "80/10/10 split decides what the inputs hold there."),
        ("whole-rows-chosen", whole, f"each row chose all of its non-special positions or none of them {called}: "
         f"{int((picked > 0).sum())} of the 1500 rows were chosen whole, the others not at all. That is one draw per "
         "row, such as `torch.rand(len(ids), 1) < p`; each non-special position is chosen on its own with "
         "probability p.", "Draw one number per position, `torch.rand(ids.shape, generator=generator)`, and choose "
         "the positions where it is below p."),
        # Before wrong-fraction: a count rounded down per row also chooses fewer than p of the positions.
        ("fixed-count-per-row", fixed, f"rows of as many words always chose as many positions {called}: each row "
         f"of {int(words.max())} words chose {int(picked[words == words.max()][0])}. That is a fixed count per row, "
         "such as round(p · length) positions picked with `randperm`; each non-special position is chosen on its own "
         "with probability p, so the number chosen varies from row to row.",
         "Draw one number per position, `torch.rand(ids.shape, generator=generator)`, and choose the positions "
         "where it is below p."),
        ("wrong-fraction", abs(fraction - target) > 0.025, f"you chose {fraction:.1%} of the non-special "
         f"positions {called}; each non-special position must be chosen with probability p = {target}."),
        # `inputs[chosen][u < 0.8] = mask_id` writes into the copy a boolean index returns: no-random-words before
        ("inputs-not-corrupted", unchanged > 0.97, f"every chosen position kept its id in your inputs ({split}): "
         "nothing was replaced by [MASK] or a random word. If you wrote into `inputs[chosen][...]`, that assignment "
         "changed a copy: indexing with a boolean mask returns a new tensor, so the second index writes into it, not "
         "into inputs.", "Index once with the combined mask, `inputs[chosen & (u < 0.8)] = mask_id`, or build the "
         "inputs with `torch.where(chosen & (u < 0.8), mask_id, ids)`."),
        ("all-become-mask", masked > 0.97, f"every chosen token became [MASK] ({split}). The recipe: of the "
         "chosen positions, 80 % → [MASK], 10 % → a random word, 10 % unchanged."),
        # Sequential draws, [MASK] with 0.8 and then a random word with 0.1 of the rest: 0.2 · 0.1 = 2 %, told "no
        # chosen token was replaced by a random word" (no-random-words) or wrong-split before
        ("random-share-of-the-rest", abs(random - 0.02) < 0.012 and abs(masked - 0.8) < 0.04, f"only {random:.1%} "
         f"of the chosen tokens became a random word ({split}), about 0.1 of the 20 % left after masking: the 10 % "
         "is a share of all chosen positions, so half of those not masked get a random word (0.5 · 20 % = 10 %).",
         "Draw the random words among the chosen positions not masked with probability 0.5, or decide all three "
         "with one uniform draw per position: below 0.8 [MASK], from 0.8 to 0.9 a random word."),
        ("no-random-words", random < 0.02 and unchanged > 0.15, f"no chosen token was replaced by a random word "
         f"({split}); 10 % of the chosen ones must be."),
        ("none-unchanged", unchanged < 0.03, f"no chosen token was left unchanged ({split}); 10 % of the chosen "
         "ones must keep their id."),
        # The random words' condition covering the [MASK] draws too (`u < 0.9`), or a draw of its own (HuggingFace's
        # 0.1 without `& ~masked`): random words written over [MASK], so 0 % or 72 % masked ("wrong-split" before)
        ("random-overwrites-mask", abs(random - 0.1) < 0.03 and abs(masked - 0.72) < 0.04
         or masked < 0.03 and random > 0.8,
         f"fewer chosen tokens kept [MASK] than the recipe's 80 % ({split}): random words were written over positions "
         "already masked. The three outcomes exclude one another: a position that became [MASK] keeps it.",
         "Draw the random words only among the chosen positions not masked (`& (u >= 0.8) & (u < 0.9)`, or "
         "`& ~masked`), or decide all three with one uniform draw per position."),
        ("wrong-split", abs(masked - 0.8) > 0.05 or abs(random - 0.1) > 0.04 or abs(unchanged - 0.1) > 0.04,
         f"the split of the chosen positions is {split} {called}; it should be about 80 % / 10 % / 10 %. Decide it "
         "with one uniform draw per position: below 0.8 → [MASK], from 0.8 to 0.9 → a random word, above → "
         "unchanged (separate draws that overwrite one another skew the shares)."),
        ("few-random-words", drawn.numel() >= 100 and kinds < min(vocab_size - NUM_SPECIAL, 20) // 2,
         f"your random replacements use only {kinds} different ids; draw them uniformly from "
         f"[{NUM_SPECIAL}, vocab_size)."),
        ("random-range-cut", drawn.numel() >= 12 * (vocab_size - NUM_SPECIAL) and bool(unseen), f"in "
         f"{drawn.numel()} random replacements {called} the word id {unseen[0] if unseen else ''} never came up: "
         f"random words are uniform over all of [{NUM_SPECIAL}, vocab_size), and `torch.randint(low, high, ...)` "
         "never returns `high` itself.", "So `high` is vocab_size, not vocab_size − 1."),
    ])
    again = _run_mask(fn, ids, special, vocab_size, mask_id, p, seed)
    if not (torch.equal(again[0], inputs) and torch.equal(again[1], labels)):
        fail("two calls with generators in the same state gave different results: every random draw (choice, "
             "split and random words) must use the `generator` argument, not the global random state.",
             "ignores-generator", "Pass it to every draw: `torch.rand(..., generator=generator)`.")


# --- MLMHead ----------------------------------------------------------------------------------
# Judged by behaviour: the head is built on an nn.Embedding holding the grader's E, and drive_head loads the
# grader's transform and bias into its state_dict by shape (kernel.load): the (d, d) dense weight W, the (V,) output
# bias b, and one vector v into every (d,) entry (the dense bias, the LayerNorm's weight and bias), so that the
# order in which a head registers them does not matter. Its logits must then be LN(GELU(h Wᵀ + v)) @ E.T + b, they
# must follow E when the embedding's values change in place (a tied projection), and every weight must train.
HEAD_CASES = [(23, 8, 0), (40, 12, 1)]   # (V, d, seed)
CONTRACT = ("the check loads its (d, d) weight into the dense layer, one vector into each (d,) entry of the head's "
            "state_dict (the dense bias, the LayerNorm's weight and bias) and its (V,) bias into the output bias")


def _head_inputs(V: int, d: int, seed: int) -> tuple:
    """The grader's inputs for one case: the embedding's values E, the weights to load W, v, b (far from the
    defaults, so that every part shows), hidden states h and the embedding's second values E2."""
    E = torch.randn(V, d, generator=torch.Generator().manual_seed(seed))
    g = torch.Generator().manual_seed(seed + 100)
    r = lambda *shape: torch.randn(*shape, generator=g)    # noqa: E731
    return E, r(d, d) / 2, 1 + r(d) / 3, r(V) / 2, r(2, 3, d), r(V, d)


def _crashes(V: int, d: int) -> list[tuple[str, str, str]]:
    """The crashes this exercise invites: (torch's or Python's words, hint, mistake key)."""
    bias = (f"The output bias adds one number to each of the V = {V} word scores: its shape is (V,), not (d,) = ({d},) "
            "like the dense layer's.", "output-bias-of-size-d")
    return [
        (f"and {V}x{d})", f"embedding.weight has shape (V, d) = ({V}, {d}): to score the d features against each "
         "of the V words, multiply by its transpose, `h @ embedding.weight.T`, so that the logits come out (…, V); "
         "`F.linear(h, embedding.weight)` transposes the weight itself, so it takes the (V, d) weight as it is.",
         "projection-not-transposed"),   # torch's words for a matmul by the (V, d) weight itself
        # Python's words for `B, n, d = h.shape` on the check's 2-D h (or `N, d = h.shape` on its 3-D h)
        ("values to unpack", "MLMHead.forward must accept h of any leading shape (…, d), a batch (B, n, d) or "
         "flat positions (N, d): do not unpack h.shape into a fixed number of sizes. Take `h.shape[-1]` if you "
         "need d; nn.Linear and nn.LayerNorm act on the last axis whatever comes before it.", "fixed-rank-input"),
        # torch's words for an output bias of d entries, in F.linear, then added (raised-RuntimeError before)
        (f"expanded size of the tensor ({V}) must match the existing size ({d})", *bias),
        (f"size of tensor a ({V}) must match the size of tensor b ({d})", *bias),
        # torch's words for `self.embedding(t)`: "tied to the embedding" taken for calling it (raised-RuntimeError)
        ("'indices' to have one of the following scalar types", "The head called the nn.Embedding itself on float "
         "features: an embedding looks rows up by token id, it does not score features. Tying shares its weight: "
         "multiply the transformed features by `embedding.weight` transposed (or use `F.linear(t, "
         "embedding.weight, bias)`).", "embedding-called-on-features"),
    ]


# The usual wrong heads (what each returns: heads_mistakes.ch01).
HEAD_MISTAKES = table(says=lambda text: "MLMHead's logits are wrong{where}: " + text + ".", rows=[
    ("no-output-bias",
     "they hold no output bias. The head needs its own (V,) bias, `nn.Parameter(torch.zeros(V))`, added to the "
     "logits (a plain tensor is neither loaded nor trained, and the tied embedding gives the weight, not the bias)"),
    ("layernorm-before-gelu",
     "LayerNorm comes before GELU in your transform; the order is Linear → GELU → LayerNorm"),
    # the pre-LN order of a transformer block (GPT-2's), LayerNorm → Linear → GELU: "the logits differ" before
    ("layernorm-first",
     "your transform normalises h first, LayerNorm → Linear → GELU, the pre-LN order of a transformer block; the "
     "MLM transform normalises last: Linear → GELU → LayerNorm"),
    ("no-gelu",
     "your transform has no GELU between the Linear and the LayerNorm"),
    ("no-layernorm",
     "your transform has no LayerNorm after GELU"),
    ("relu-not-gelu",
     "you used ReLU where the transform has GELU"),
    ("tanh-gelu",
     "you used the tanh approximation of GELU; use the exact GELU (`nn.GELU()`)"),
    ("no-transform",
     "you skipped the transform: logits must come from LN(GELU(Linear(h)))"),
    ("dense-without-bias",
     "your dense layer adds no bias (bias=False): the transform is `nn.Linear(d, d)` with its bias, which "
     "pre-trained weights fill too"),
    *[("layernorm-without-affine",
       "your LayerNorm has no learnable " + ("bias (bias=False)" if w else "weight and bias (elementwise_affine="
       "False)") + ": the transform's `nn.LayerNorm(d)` scales and shifts each feature with its own trained weight "
       "and bias, which pre-trained weights fill too. Keep its defaults") for w in (False, True)],
    ("softmax-inside-head",
     "you return probabilities; return raw logits"),
    ("softmax-inside-head",
     "you return probabilities (softmax); return raw logits"),
    ("log-softmax-inside-head",
     "you return log-probabilities; return raw logits"),
    # BERT's config (`layer_norm_eps=1e-12`): "after one step ... a weight did not move" (parameters-without-gradient)
    # before, or "the logits differ" where the eps moved them by more than the tolerance
    # 1e-6 too, which was told "your eps is 1e-12"
    ("layernorm-eps", "your LayerNorm's eps is far below nn.LayerNorm's default 1e-5 (BERT's `layer_norm_eps` is "
     "1e-12). It changes the logits little where a position's features vary a lot, more where they vary little, and "
     "their gradients more still: the lesson's transform is `nn.LayerNorm(d)`, its eps left as it is",
     "Build the LayerNorm as `nn.LayerNorm(d)`, without `eps=...`."),
])


# The grader's head for each mistake a step shows: BERT's eps moves the logits by less than the tolerance on most
# inputs and a step by more; a projection through a detached embedding.weight gives the right logits, but the
# embedding it is tied to learns nothing from the head ("a weight did not move", parameters-without-gradient, before)
STEP_MISTAKES = [("MLMHead eps=1e-12", HEAD_MISTAKES[-1]), ("MLMHead E detached", Mistake(
    "projection-detached", "MLMHead's projection uses embedding.weight detached (`.detach()` or `.data`){where}: "
    "its logits are right, but after a step of training the embedding has learnt nothing from the head. Tying "
    "shares one Parameter that both uses train: the MLM loss must reach the embedding through the projection.",
    "Use `embedding.weight` itself in the projection, with no `.detach()` or `.data`."))]


def _head_where(h, W, v, E, b) -> str:
    return f" for h of shape {tuple(h.shape)} (embedding of V={E.shape[0]} words, d={E.shape[1]})"


_logits = Exercise(
    "MLMHead(h)", shape=lambda h, W, v, E, b: (*h.shape[:-1], E.shape[0]),   # judged only: the driver runs the class
    meaning=": logits (…, V)", where=_head_where, mistakes=HEAD_MISTAKES,
    explain=lambda out, expected, *inputs: (
        f"MLMHead's logits differ from LayerNorm(GELU(Linear(h))) @ E.T + bias{_head_where(*inputs)} "
        f"(largest difference {(out - expected).abs().max().item():.3g}): {CONTRACT}."))


def _close(a, b) -> bool:
    return same(a, b, 1e-4, rtol=1e-4, kind=False)


def _off(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest difference between two tensors of one shape."""
    return float((a.double() - b.double()).abs().max())


def mlm_head(cls, cases: Sequence | None = None) -> None:
    """Build `cls(embedding)` on each case (V, d, seed) and compare it with LN(GELU(Linear(h))) @ E.T + bias."""
    require_module_class(cls, "MLMHead", "mlm_head")
    cases = HEAD_CASES if cases is None else cases
    for V, d, seed in cases:
        E, W, v, b, h, E2 = _head_inputs(V, d, seed)
        ran = heads.run(cls, "MLMHead", "h", (), seed, [h, h[0]], [W, v, b], passes=2, step=True, embedding=[E, E2],
                        crashes=_crashes(V, d))
        (out, again), (flat, _) = ran["outs"]
        # The head holds no dropout: two passes that differ come from a layer (or random numbers) made in forward
        heads.layer_built_in_forward(not _close(again, out), "MLMHead", _head_where(h, W, v, E, b),
                                     " (the head holds no dropout)")

        # The right head (a weight and bias of its own per layer) under the grader's weights: v in each (d,) entry
        R = reference("MLMHead", h, W, v, v, v, E, b)
        if _close(ran["swapped"], out) and not _close(out, R):
            fail("MLMHead's logits do not change when embedding.weight is given new values in place: the projection "
                 "to the vocabulary is a new matrix, not the embedding's. It must be tied to the embedding (the same "
                 "Parameter object, not a copy or a new matrix).", "not-tied",
                 "Share the Parameter itself, `self.decoder.weight = embedding.weight`, or keep the embedding and "
                 "multiply by its `.weight`, transposed.")
        _logits.judge(out, R, (h, W, v, E, b))
        _logits.judge(flat, R[0], (h[0], W, v, E, b))
        if not _close(ran["swapped"], reference("MLMHead", h, W, v, v, v, E2, b)):
            fail("after embedding.weight was given new values in place, MLMHead's logits are not LayerNorm(GELU("
                 f"Linear(h))) @ E.T + bias with the new E (embedding of V={V} words, d={d}): your output projection "
                 "is a copy (clone) of embedding.weight, not tied to it, and a copy drifts apart as soon as training "
                 "updates one of them. Use the same Parameter object, e.g. `self.decoder.weight = embedding.weight`, "
                 "or keep the embedding and use its weight.", "cloned-projection",
                 "Drop the `.clone()` (or the new `nn.Parameter`) around embedding.weight: assign the Parameter "
                 "itself.")
        # No dropout in train mode either, where the lesson pre-trains through the head (a dropout passed before)
        trained = heads.run(cls, "MLMHead", "h", **{**ran["asked"], "inputs": [h], "passes": 1, "train": True,
                                                     "step": False})["outs"][0][0]
        heads.no_train_only_layer(not _close(trained, out), "MLMHead", "The head computes LayerNorm(GELU(Linear(h)))"
                                  " @ E.T + bias", _head_where(h, W, v, E, b))
        # A mistake that a step of training shows better than the logits (STEP_MISTAKES), which judge_gradients took
        # for a weight that did not train: named wherever the outputs after the public step are that head's and far
        # nearer to them (4×) than to the right head's, whatever the tolerance says
        stepped, weights = ran["gradients"]["stepped"], [W, v, v, v, E, b]
        right_step = reference_step("MLMHead", h, weights, seed)[1]
        for name, said in STEP_MISTAKES:
            other = reference_step(name, h, weights, seed)[1]
            if close_gradient(stepped, other) and 4 * _off(stepped, other) < _off(stepped, right_step):
                fail(said.message.format(where=_head_where(h, W, v, E, b)), said.key, said.fix)
        # Every weight trains, the tied embedding's too, and the encoder below through h.
        judge_gradients(ran["gradients"], "MLMHead", "h", h, "MLMHead", seed, weights)
    passed("MLMHead", len(cases))


# --- mlm_loss ---------------------------------------------------------------------------------
L2, L3, L5, L8 = (math.log(x) for x in (2, 3, 5, 8))
# (logits, labels, expected) by hand: with logits [ln 3, 0, 0, 0] the true class 0 has probability
# 3/6, a loss of ln 2; with [ln 5, 0, 0, 0] class 1 has probability 1/8, a loss of ln 8.
LOSS_CASES = [
    ([[L3, 0, 0, 0], [0, 0, 0, 10.0], [L5, 0, 0, 0]], [0, -100, 1], (L2 + L8) / 2),
    ([[[L3, 0, 0, 0], [0, 0, 0, 10.0], [0, 0, 0, 10.0]], [[0, 4.0, 0, 0], [L5, 0, 0, 0], [0, 0, 10.0, 0]]],
     [[0, -100, -100], [-100, 1, -100]], (L2 + L8) / 2),
    ([[[0.0, 0, 0, 0], [L3, 0, 0, 0], [0, 0, 0, -7.0]]], [[2, -100, -100]], math.log(4)),
    # Two chosen positions in row 0, one in row 1: the mean over the three, not the mean of the rows' means
    ([[[L3, 0, 0, 0], [L5, 0, 0, 0], [0, 0, 0, 10.0]], [[0, 0, 0, 10.0], [0, 0, 0, 10.0], [L3, 0, 0, 0]]],
     [[0, 1, -100], [-100, -100, 0]], (2 * L2 + L8) / 3),
]


def _loss_where(logits, labels) -> str:
    return f" for logits of shape {tuple(logits.shape)} and labels {labels.tolist()}"


def _loss_said(text: str) -> Callable[..., str]:
    return lambda out, *inputs: f"mlm_loss returned {float(out):.4f}{_loss_where(*inputs)}: {text}."


mlm_loss = Exercise(
    "mlm_loss", LOSS_CASES,
    read=inputs_as(torch.float32, torch.long, torch.float64),
    shape=lambda logits, labels: (), where=_loss_where,
    meaning=" (a 0-dimensional loss that still carries the graph: do not call .item(), so that `loss.backward()` "
            "works)",
    unchanged="mlm_loss changed the logits or labels it was given; leave them as they are.",
    explain=lambda out, expected, *inputs: (
        f"mlm_loss returned {float(out):.4f}{_loss_where(*inputs)}; expected {float(expected):.4f}, the mean "
        "cross-entropy over the positions whose label is not −100."),
    then=lambda fn: backward_through(
        fn, "mlm_loss", torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(1)).requires_grad_(),
        torch.tensor([[1, -100, 2], [-100, 0, -100]])),
    # First: torch's "Target -100 is out of bounds" was told to print shapes, and under (B, n, V) to move axes
    hints=[((IndexError, RuntimeError), lambda err, logits, labels: ("Your loss used the label −100 as a class "
            "index: −100 marks the positions that were not chosen, which the loss leaves out.",
            "minus-100-used-as-class",
            "F.cross_entropy leaves them out by default (ignore_index=-100); or keep only the positions where "
            "`labels != -100`.") if "-100" in str(err) else None),
           # `logits[keep]` with every label, or the reverse: the generic "print both shapes" (raised-ValueError) before
           (ValueError, lambda err, logits, labels: ("Only one of logits and labels was filtered to the chosen "
            "positions: F.cross_entropy pairs row k of its input with target k, so both must keep the same positions.",
            "filtered-one-not-the-other", "Filter both with one mask: `keep = labels != -100`, then "
            "`F.cross_entropy(logits[keep], labels[keep])`.")
            if {int(n) for n in re.findall(r"batch_size \((\d+)\)", str(err))} == {int((labels != -100).sum()),
                                                                                 labels.numel()} else None),
           ((RuntimeError, ValueError), lambda err, logits, labels: ("F.cross_entropy wants the classes in "
            "dimension 1.", "classes-on-sequence-axis", "Flatten logits to (-1, V) and labels to (-1,).")
            if logits.dim() == 3 else None),
           (IndexError, lambda err, logits, labels: ("mlm_loss takes logits of any leading shape (…, V): flat "
            "positions (N, V) as well as a batch (B, n, V): do not move axes.", "fixed-rank-input",
            "Flatten logits to (-1, V) and labels to (-1,).")
            if logits.dim() == 2 and "Dimension out of range" in str(err) else None)],
    mistakes=table(says=_loss_said, rows=[
        ("divides-by-all-positions", "you averaged over every position, the unchosen ones (label −100) included; "
         "divide by the number of chosen positions only"),
        ("minus-100-as-class-0", "you computed the loss at every position, treating label −100 as a word; only "
         "positions whose label is not −100 count"),
        ("sum-not-mean", "you summed the losses; mlm_loss is the mean over the chosen positions"),
        ("softmax-first", "you applied softmax before cross-entropy, which applies its own log-softmax: pass the raw "
         "logits"),
        ("nll-on-logits", "you used nll_loss on raw logits; it expects log-probabilities (use F.cross_entropy)"),
        # softmax, then nll_loss: what the two give is minus the mean probability, negative ("wrong-values" before)
        ("nll-on-probabilities", "you gave nll_loss probabilities (a softmax): it expects log-probabilities, and "
         "returns minus the mean of the values it picks, here of the original words' probabilities",
         "Use F.cross_entropy on the raw logits, or nll_loss on their `log_softmax`."),
        ("mean-divided-again", "you divided F.cross_entropy's mean by the number of chosen positions once more: with "
         "its default reduction='mean' (and ignore_index=-100) it already is the mean over them",
         "Return F.cross_entropy's result as it is."),
        # span_loss's key for an unreduced loss ("returned shape (N,)" before)
        ("one-loss-per-example", lambda out, *inputs: f"mlm_loss returned one loss per position, {show(out)}"
         f"{_loss_where(*inputs)}: reduction='none' keeps them apart. mlm_loss is their mean over the chosen "
         "positions, one number (a 0-dim tensor).", "Drop `reduction=\"none\"`: F.cross_entropy's default takes the "
         "mean, and its ignore_index=-100 leaves the unchosen positions out."),
        # lesson 04's words for the same mistakes of a masked loss ("wrong-values" before)
        ("divides-by-batch-size", "you divided the sum over the chosen positions by len(labels), a batch's number "
         "of sequences; mlm_loss is the mean over the chosen positions: divide by their count"),
        ("label-smoothing", "that is a cross-entropy with label smoothing 0.1 (`label_smoothing=0.1`): its target "
         "spreads 0.1 over all V words. The MLM target is the original word alone, probability 1",
         "Drop `label_smoothing=...` from F.cross_entropy."),
        ("mean-per-sentence", "you took each sequence's mean loss, then the mean of those means: a sequence with "
         "one chosen position then weighs as much as one with many. mlm_loss is the mean over every chosen position "
         "of the batch at once", "Flatten logits to (-1, V) and labels to (-1,), and take one cross-entropy over "
         "all of them."),
    ]),
)


# --- tying_savings ------------------------------------------------------------------------------
tying_savings = Exercise(
    "tying_savings",
    # Sizes where the usual wrong counts all differ from V·d and from each other.
    [((30522, 768), 23_440_896), ((222, 64), 14_208), ((10, 3), 30)],
    returns=int, read=lambda case: (tuple(case[0]), case[1]), where=lambda V, d: f" for V={V}, d={d}",
    explain=lambda out, expected, V, d: (
        f"tying_savings returned {out} for V={V}, d={d}; count what the untied head owns that the tied one does "
        "not (compare the two parameter counts measured in the notebook)."),
    # {out}{where}: "… returned 46881792 for V=30522, d=768"
    mistakes=table(says=lambda text: "tying_savings returned {out}{where}, " + text + ".", rows=[
        ("both-matrices", "2·V·d: tying removes ONE V × d matrix (the output projection); the embedding matrix is "
         "still there, now doing both jobs"),
        ("bias-counted", "V·d + V: the output bias is not shared, the head keeps its own (V,) bias, so only the V × d "
         "weight is saved"),
        ("whole-untied-head", "every parameter of an untied head: tying removes only its V × d output matrix; the "
         "transform and the bias stay"),
        ("linear-counted", "the transform's Linear(d, d) is kept; only the V × d projection is saved"),
        ("adds-the-sizes", "V + d: you added the two sizes, but a V × d matrix has V rows of d numbers each"),
        ("only-the-bias", "V, one number per word: that is the size of the output bias, which tying keeps"),
        ("only-the-linear", "d·d + d, the transform's Linear(d, d): tying keeps it"),
        ("only-the-square", "d·d, the size of the transform's square matrix: tying keeps it"),
        ("one-row", "d, the length of one embedding row: the saved matrix has one such row per word"),
    ]),
)

__all__ = ["NUM_SPECIAL", "mask_tokens", "mlm_head", "mlm_loss", "tying_savings", "synthetic_batch", "CheckFailed"]
