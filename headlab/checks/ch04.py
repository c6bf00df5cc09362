"""Checks for lesson 04: TokenClassifier, token_loss and bio_to_spans. Expected values are written out by hand
(losses as sums of logarithms, spans as lists) or follow from the weights the check loads into the learner's head."""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch

from . import heads
from .core import CheckFailed, call, call_raw, explain, fail, passed, require_function, require_module_class
from .dropout import identity_on_top, train_pass
from .engine import Exercise, Mistake, backward_through, judge_gradients, reference, same, show
from .shared import table

# --- TokenClassifier(d, num_labels, dropout) ------------------------------------------------------------------
HEAD_CASES = [(8, 5, 2, 6), (16, 3, 2, 4), (4, 7, 1, 9)]   # (d, L, B, n), n ≠ L: (B, L, n) is not (B, n, L)


def TokenClassifier(cls: Callable, cases: Sequence | None = None, seed: int = 0) -> None:
    """`seed` moves every weight and input the check draws (the hidden test passes its run's seed)."""
    require_module_class(cls, "TokenClassifier", "TokenClassifier")
    cases = HEAD_CASES if cases is None else cases
    for k, (d, L, B, n) in enumerate(cases):
        g = torch.Generator().manual_seed(seed + 100 + k)
        H, W = torch.randn(B, n, d, generator=g), torch.randn(L, d, generator=g) / math.sqrt(d)
        b = torch.randn(L, generator=g)   # nonzero, so "only the bias" is visible
        # H, then each position H[:, i:i+1] alone, twice each in eval mode; then a step from H
        ran = heads.run(cls, "TokenClassifier", "H", (d, L), seed + 300 + k, [H, *(H[:, i:i + 1] for i in range(n))],
                        [W, b], passes=2, step=True, crashes=_crashes(H, L))
        right = reference("TokenClassifier", H, W, b)
        (out, again), where = ran["outs"][0], _logits.where(H, W, b)
        heads.random_at_eval(same(out, right, math.inf) and not same(again, out, 0), cls, ran, "TokenClassifier", "H",
                             where)
        moved = [i for i, (o, _) in enumerate(ran["outs"][1:]) if not same(o, out[:, i:i + 1], 1e-6)] \
            if isinstance(out, torch.Tensor) and out.shape == right.shape else []
        if moved:
            fail(f"Fed alone, position {moved[0]} got other logits than inside H{where}: the logits of one position "
                 "must not depend on the other positions (no mean or sum over dim 1).", "mixes-positions",
                 "Apply the Linear layer to H as it is, (B, n, d) → (B, n, L): `nn.Linear` acts on the last axis of "
                 "each position, with no reduction over dim 1.")
        _logits.judge(out, right, (H, W, b))
        judge_gradients(ran["gradients"], f"TokenClassifier({d}, {L})", "H", H, "TokenClassifier", seed + 300 + k,
                        [W, b])
        # At p = 1 every feature is dropped; the train-mode cases below judge dropout's place, rate and scale
        (train,) = heads.run(cls, "TokenClassifier", "H", (d, L), seed + 400 + k, [H], [W, b], {"dropout": 1.0}, True,
                             crashes=_crashes(H, L))["outs"][0]
        if isinstance(train, torch.Tensor) and not bool(train.isfinite().all()):
            fail(f"TokenClassifier({d}, {L}, dropout=1.0) in train mode returned NaN or infinite logits: a dropout "
                 "written by hand divides by 1 − p, which is 0 at p = 1. At p = 1 every feature is dropped, so the "
                 "Linear layer sees zeros and only the bias is left; `nn.Dropout(dropout)` does exactly that.",
                 "nan-at-full-dropout",
                 "Replace the hand-written dropout with `nn.Dropout(dropout)`, built in __init__.")
    for k, (d, L, p) in enumerate(TRAIN_CASES):   # dropout's rate, scale and grain, from 50 × 40 positions
        g = torch.Generator().manual_seed(seed + 500 + k)
        H, W = torch.rand(50, 40, d, generator=g) + 1.0, identity_on_top(d, L, g)   # away from 0: a zero is dropout's
        train_pass(cls, "TokenClassifier", "H", H, W, torch.randn(L, generator=g), p, seed + 600 + k, (50, 40, L),
                   f"(B, n, num_labels) = {(50, 40, L)}", _crashes(H, L))
    passed("TokenClassifier", len(cases) + len(TRAIN_CASES))


# Train mode at rates below 1 (d, L, dropout; None: the default): dropout's rate, scale and grain show in
# what the Linear layer received (checks/dropout.py).
TRAIN_CASES = [(4, 9, 0.5), (3, 6, 0.25), (4, 9, None)]


def _crashes(H: torch.Tensor, L: int) -> list[tuple[str, str, str]]:
    """torch's words for a Linear fed H transposed, (B, d, n), and for nn.Linear(num_labels, d), each with the hint that
    names it."""
    B, n, d = H.shape
    return [(f"({B * d}x{n} and", f"nn.Linear acts on the last axis of its input, which must hold the d = {d} "
             "features: apply it to H of shape (B, n, d) as it is, not to a transposed H.", "linear-on-wrong-axis"),
            # only "a shape does not fit the operation" (raised-RuntimeError) before
            *heads.linear_swapped(d, L, "num_labels")]


_logits = Exercise(
    "TokenClassifier",   # judged only: the drivers run the class
    shape=lambda H, W, b: (*H.shape[:2], len(b)),
    meaning=" (B, n, num_labels): one row of num_labels scores per position",
    where=lambda H, W, b: f" for H of shape {tuple(H.shape)} and num_labels = {len(b)}",
    fields=lambda H, W, b: {"got": (H.shape[0], len(b), H.shape[1]), "want": (*H.shape[:2], len(b))},
    explain=lambda out, right, H, W, b: (
        f"In eval mode the head must apply its Linear layer to every position: `logits[:, i] == H[:, i] @ W.T + bias`"
        f"{_logits.where(H, W, b)}, with W and bias the check loads into its state_dict's one (num_labels, d) weight "
        f"and (num_labels,) bias, and nothing else changing the output. At [0, 0] you returned {show(out[0, 0])}; the Linear layer gives "
        f"{show(right[0, 0])}."),
    mistakes=table([
        ("no-bias",
         "logits without a bias{where}: its Linear layer has bias=False, so no (num_labels,) bias was there to load. "
         "A token head is one `nn.Linear(d, num_labels)` with its bias."),
        ("labels-axis-second",
         "shape {got}{where}: that is (B, L, n), the labels axis second. The contract is (B, n, L) = {want}, labels "
         "axis last. (Moving L to dim 1 is the loss's business, not the head's.)"),
        ("returns-label-ids",
         "label ids (an argmax over the labels){where}. The head returns the raw logits, (B, n, num_labels) = {want}; "
         "predictions take the argmax later."),
        ("softmax-inside-head",
         "probabilities{where}: you applied softmax inside the head. A head returns raw logits; cross-entropy applies "
         "log-softmax itself, and argmax needs no softmax."),
        ("log-softmax-inside-head",
         "log-probabilities{where} (log_softmax inside the head). A head returns raw logits; the loss normalises them "
         "itself."),
        # Lessons 03 and 05 name these; here they got only "the Linear layer gives ..." or "expected (B, n, L)" before
        ("sigmoid-output", "sigmoid(logits){where}: each label's score squashed into (0, 1) on its own. A head returns "
         "raw logits; the loss takes the softmax over the labels itself."),
        ("relu-on-logits", "logits through a ReLU{where}: negative scores became 0. A head returns raw logits, "
         "negative ones too."),
        ("tanh-on-logits", "logits through a tanh{where}: every score squashed into (−1, 1). A head returns its Linear "
         "layer's output as it is."),
        ("scores-one-position", "one row of scores per sentence{where}: the Linear layer scored one vector per example "
         "(`H[:, 0]`, the [CLS] position, or a pooled one). A token head scores every position: (B, n, num_labels) = "
         "{want}.", "Apply the Linear layer to the whole H, (B, n, d), not to `H[:, 0]`."),
        # the flattening for F.cross_entropy done inside forward: only "returned shape (B·n, L)" before
        ("flattened-in-head", "logits flattened to (B·n, num_labels){where}: the positions of every sentence in one "
         "axis, as F.cross_entropy takes them. The head returns (B, n, num_labels) = {want}, one row per sentence, "
         "so that a prediction can be read per sentence and position; flattening is token_loss's business.",
         "Return the Linear layer's output as it is, (B, n, num_labels), without `.view(-1, ...)` or `.reshape`."),
    ], says="TokenClassifier returned "),
)

# --- token_loss(logits, labels) → 0-d tensor ------------------------------------------------------------------
L2, L3, L5, X = math.log(2), math.log(3), math.log(5), -100   # X: the label of [CLS], [SEP] and [PAD]
# (logits, labels, mean over labelled positions). Unlabelled logits favour class 1, so counting them shows.
LOSS_CASES = [
    ([[[0, 5, 0], [0, 0, L2], [0, L2, 0]]], [[X, 2, 0]], (L2 + 2 * L2) / 2),   # n = L: a wrong axis runs
    ([[[0, 5, 0], [L2, 0, 0], [0, 0, 0], [0, 5, 0]], [[0, 5, 0], [L2, 0, L2], [0, 5, 0], [0, 5, 0]]],
     [[X, 0, 2, X], [X, 1, X, X]], (L2 + L3 + L5) / 3),   # [CLS] w w [SEP]; [CLS] w [SEP] [PAD]
]
GRAD_LABELS = [[X, 1, 2, X], [X, 0, X, X]]


def _no_gradient_where_unlabelled(logits: torch.Tensor, labels: torch.Tensor) -> None:
    if bool((logits.grad[labels == X] != 0).any()):
        fail(f"unlabelled positions must get no gradient from token_loss: with labels {GRAD_LABELS}, "
             "`loss.backward()` gave the logits of positions labelled -100 ([CLS], [SEP], padding) a nonzero "
             "gradient, so training would still push them. Leave them out of the computation itself "
             "(ignore_index=-100, or select the labelled positions), not only out of the value.",
             "gradient-reaches-unlabelled", "`F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), "
             "ignore_index=-100)` leaves them out of the graph.")


def _crash_hint(err: Exception, logits: torch.Tensor, labels: torch.Tensor) -> tuple[str, str, str] | None:
    B, n, L = logits.shape
    if "Expected target size" in str(err):
        return (f"F.cross_entropy reads the classes from dim 1, so on logits of shape (B, n, L) = {(B, n, L)} it "
                f"took the sequence axis n = {n} for the classes.", "classes-on-sequence-axis",
                "Flatten to (B·n, L) and (B·n,), or move L to dim 1 with `logits.transpose(1, 2)`.")
    # F.one_hot of the labels (for a squared error or a BCE) meets -100 too: torch's words alone before
    if "-100 is out of bounds" in str(err) or "Class values must be non-negative" in str(err):
        return ("The label -100 is not a class: positions labelled -100 ([CLS], [SEP], padding) must be left "
                "out of the loss.", "minus-100-used-as-class", "Use ignore_index=-100, or a mask.")
    # only one of the two flattened: the generic "print both shapes" (raised-ValueError) before
    if "Expected input batch_size" in str(err):
        return (f"Only one of logits and labels was flattened: F.cross_entropy pairs row k of its input with target "
                f"k, so the logits must be (B·n, L) = ({B * n}, {L}) and the labels (B·n,) = ({B * n},), both.",
                "flattened-one-not-the-other", "`F.cross_entropy(logits.reshape(-1, logits.shape[-1]), "
                "labels.reshape(-1), ignore_index=-100)`.")


def _loss_message(why: str) -> Callable[..., str]:
    """A message of token_loss's table: the loss returned, then `why`, which may name the number of positions
    ({all}) and of labelled ones ({kept})."""
    return lambda out, logits, labels: (f"token_loss gave {out.item():.4f}{token_loss.where(logits, labels)}: "
                                        + why.format(all=labels.numel(), kept=int((labels != X).sum())))


token_loss = Exercise(
    "token_loss", LOSS_CASES,
    read=lambda case: ((torch.as_tensor(case[0], dtype=torch.float32).detach().clone().requires_grad_(),
                        torch.as_tensor(case[1], dtype=torch.long)), torch.tensor(float(case[2]))),
    shape=lambda logits, labels: (),
    unchanged="token_loss changed the labels tensor it was given (for example by writing 0 over the -100 entries). "
              "Leave the labels as they are; the -100 entries must be ignored.",
    hints=[(Exception, _crash_hint)],
    # after the values: the loss carries the graph, and no gradient reaches a position labelled -100
    then=lambda fn: backward_through(
        fn, "token_loss", torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(4)).requires_grad_(),
        torch.tensor(GRAD_LABELS), rules=_no_gradient_where_unlabelled),
    meaning=" (0-d, still carrying the graph so that `loss.backward()` works; do not call .item())",
    where=lambda logits, labels: f" for labels {labels.tolist()}",
    explain=lambda out, right, logits, labels: (
        f"token_loss gave {out.item():.4f}{token_loss.where(logits, labels)}; the mean cross-entropy over the positions "
        f"whose label is not -100 is {float(right):.4f}."),
    mistakes=table([
        ("minus-100-as-class-0",
         "you replaced the -100 labels by a class (0), so [CLS], [SEP] and padding positions count in the loss. "
         "Positions labelled -100 must be left out.", "Use ignore_index=-100."),
        ("divides-by-all-positions",
         "you divided by all B·n = {all} positions, padding and specials included; divide by the {kept} labelled "
         "positions (label ≠ -100)."),
        ("sum-not-mean", "you returned the sum over labelled positions; the loss is their mean."),
        # `reduction="sum"` then `/ batch_size`, as per-sentence losses are averaged: only "expected ..." before
        ("divides-by-batch-size", "you divided the sum over the labelled positions by the number of sentences (the "
         "batch size); the loss is the mean over the {kept} labelled positions: divide by their count.",
         "Drop `reduction=\"sum\"` and the division: F.cross_entropy with ignore_index=-100 takes that mean."),
        ("mean-per-sentence",
         "you averaged within each sentence and then over sentences; the loss is the mean over all labelled "
         "positions of the batch, so a long sentence weighs more."),
        ("labels-shifted-left",
         "label i is scored with the logits of position i + 1, but labels are already aligned to the token "
         "positions, [CLS] included (word w at w + 1): do not shift them."),
        ("labels-shifted-right",
         "label i + 1 is scored with the logits of position i, as if [CLS] were not there; labels are already "
         "aligned to the token positions, [CLS] included: do not shift them."),
        ("softmax-first",
         "you applied softmax to the logits before cross_entropy, which applies log-softmax itself: cross_entropy "
         "takes raw logits."),
        ("classes-on-sequence-axis",
         "F.cross_entropy read the classes from the sequence axis (here of size L, so nothing crashed): with more "
         "than two axes it reads them from dim 1.",
         "Either flatten the logits as they are, `logits.flatten(0, 1)` with `labels.flatten()` (no transpose before "
         "it), or keep the batch shape and move L to dim 1: `logits.transpose(1, 2)`, not flattened."),
        # log_softmax(dim=1), as for (N, C) scores, on (B, n, L) logits: only "the mean cross-entropy ... is" before
        ("classes-on-sequence-axis", "your log_softmax ran over dim 1, which holds the n positions of (B, n, L) logits, "
         "not the L labels: each label's probabilities were normalised across the sentence.",
         "Normalise over the labels, the last axis: `logits.log_softmax(dim=-1)`."),
        ("nll-on-logits", "you used nll_loss on raw logits; it expects log-probabilities.",
         "Use F.cross_entropy, which applies log-softmax itself."),
        # span_loss's words for the same losses; here they got only "the mean cross-entropy ... is" before
        ("binary-cross-entropy", "that is a binary cross-entropy against one-hot targets (`F.binary_cross_entropy_with_"
         "logits`): it treats each label as a yes/no question of its own. A token has one label among the L: its loss "
         "is −log P(label), with P a softmax over the labels.", "Use F.cross_entropy with ignore_index=-100."),
        ("mse-not-cross-entropy", "that is a mean squared error of the logits against one-hot targets, not a "
         "cross-entropy: a token's label is one choice among the L labels, and its loss is −log P(label), with P a "
         "softmax over them.", "Use F.cross_entropy with ignore_index=-100."),
        ("label-smoothing", "that is a cross-entropy with label smoothing 0.1 (`label_smoothing=0.1`): its target "
         "spreads 0.1 over all L labels. The token loss's target is the label alone, probability 1.",
         "Drop `label_smoothing=...` from F.cross_entropy."),
        # 0 taken for padding's id (`labels > 0`, or -100 mapped to 0 then ignore_index=0): only "the mean ..." before
        ("class-0-ignored", "you left out the positions labelled 0 as well as those labelled -100, as if 0 marked "
         "padding. Label 0 is a class (O, outside every entity, the most frequent tag): only -100 marks a position "
         "to ignore.", "Keep every position whose label is not -100: `labels != -100`, not `labels > 0`."),
        # a masked mean by hand whose sum forgot the mask (-100 clamped to class 0 so that gather runs): only "the
        # mean ..." before
        ("mask-only-in-the-count", "you divided by the {kept} labelled positions, but summed the loss over all {all}, "
         "the unlabelled ones too (read as class 0 once -100 is clamped): the mask must weigh the sum as well as "
         "count the positions.", "Sum the loss only where `labels != -100`, then divide by that count."),
    ], says=_loss_message),
)

# --- bio_to_spans(tags) → [(type, start, end)] ----------------------------------------------------------------
BIO_CASES = [   # (tags, entities), end exclusive; each case isolates one rule
    (["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O"], [("PER", 0, 2), ("LOC", 3, 5)]),
    (["O", "I-ORG", "I-ORG", "O", "B-PER"], [("ORG", 1, 3), ("PER", 4, 5)]),
    (["B-PER", "I-LOC", "O"], [("PER", 0, 1), ("LOC", 1, 2)]),
    (["I-LOC", "O", "B-LOC", "B-LOC", "I-LOC"], [("LOC", 0, 1), ("LOC", 2, 3), ("LOC", 3, 5)]),
    (["B-ORG", "I-ORG", "I-ORG"], [("ORG", 0, 3)]), (["O", "O"], []), ([], []),
]


def bio_to_spans(fn: Callable, cases: Sequence | None = None) -> None:
    require_function(fn, "bio_to_spans")
    cases = BIO_CASES if cases is None else cases
    for tags, expected in cases:
        tags, given, expected = list(tags), list(tags), [tuple(s) for s in expected]
        try:
            out = call_raw(fn, "bio_to_spans", given)
        except Exception as err:
            if isinstance(err, ValueError) and "not enough values to unpack" in str(err):
                fail(f"bio_to_spans({tags}) raised ValueError: {err}. An O tag has no '-' to split on: `'O'.split('-')` "
                     "is ['O'], one part, which cannot be unpacked into a prefix and a type.", "splits-the-o-tag",
                     "Handle O before splitting (`if tag == 'O':` closes the open entity); split only B- and I- tags, "
                     "or slice them: `tag[:2]`, `tag[2:]`.")
            explain(err, "bio_to_spans", given)
        if given != tags:
            fail("bio_to_spans changed the list of tags it was given; read it without editing it.", "changed-input",
                 "Only read the tags (index them, loop over them); if you must edit, edit a copy, `list(tags)`.")
        if not isinstance(out, (list, tuple)) or not all(isinstance(s, (list, tuple)) and len(s) == 3 for s in out):
            fail(f"bio_to_spans returned {out!r}; return a list of (type, start, end) tuples, e.g. [('PER', 0, 2)].",
                 "not-a-list-of-triples", "Start from an empty list, add one `(type, start, end)` tuple per entity "
                 "with .append, and return the list.")
        # The engine judges tensors, so spans are judged here by its rule: a mistake is named only when the output
        # equals what it returns, derived from the right spans (a wrong decoder would be most of the answer). Each
        # mistake's output is looked up on every case, right or wrong, so that dev/record_mistakes.py records it.
        got = [tuple(s) for s in out]
        wrong = [(mistake, SPANS.output(mistake, (tags, expected))) for mistake in SPANS.mistakes]
        if got == expected:
            continue
        said = f"For tags {tags} the entities are {expected}; you returned {got}."
        for mistake, output in wrong:
            if output is not None and got == [tuple(s) for s in output]:
                fail(f"{said} {mistake.message(tags, expected)}", mistake.key, mistake.fix)
        if sorted(got, key=repr) == sorted(expected, key=repr):
            fail(f"{said} Same entities, different order: list them in order of their start.", "wrong-order",
                 "Sort them by their start before returning: `sorted(spans, key=lambda span: span[1])`.")
        fail(said, "wrong-values")
    passed("bio_to_spans", len(cases))


def _at(tags: list[str], spans: list[tuple], prefix: str, glued: bool, then: str) -> str:
    """`then` about the first entity whose first tag has `prefix` and, if `glued`, follows a tag that is not O."""
    p = next(s for _, s, _ in spans if tags[s][:2] == prefix and (not glued or s and tags[s - 1] != "O"))
    after = "the start of the sentence" if p == 0 else tags[p - 1]
    return then.format(p=p, tag=tags[p], open=tags[p - 1][2:], new=tags[p][2:], after=after)


SPANS = Exercise("bio_to_spans", mistakes=[   # judged by bio_to_spans: the engine holds its table
    Mistake("keeps-the-prefix",
            lambda tags, spans: "The type is the tag without its B-/I- prefix: 'PER', not 'B-PER'."),
    # `tag[1:]`: only "you returned X" before
    Mistake("keeps-the-prefix",
            lambda tags, spans: "The type is the tag without its B-/I- prefix, both characters of it: 'PER', not "
                                "'-PER' (`tag[2:]`, not `tag[1:]`)."),
    Mistake("inclusive-ends",
            lambda tags, spans: "Your ends are inclusive (the index of the last word); the end is exclusive, one "
                                "past the last word, so that `tags[start:end]` is the entity."),
    Mistake("drops-orphan-inside-tag",
            lambda tags, spans: _at(tags, spans, "I-", False, "The {tag} at position {p} comes after {after}: there "
                                    "is no open {new} entity to continue, so it starts a new one. You dropped it; an "
                                    "I-X that does not continue an open X entity starts a new entity.")),
    Mistake("type-change-continues-entity",
            lambda tags, spans: _at(tags, spans, "I-", True, "At position {p} the tag {tag} has a different type "
                                    "from the open {open} entity: the type changes, so {tag} starts a new {new} "
                                    "entity. An I-X only continues an open X entity.")),
    Mistake("begin-continues-same-type",
            lambda tags, spans: _at(tags, spans, "B-", True, "At position {p} the tag {tag} begins a new entity "
                                    "even though the previous word has the same type: B- always starts a new one.")),
    Mistake("last-entity-not-closed",
            lambda tags, spans: "The entity that reaches the end of the sentence was never closed: after the last "
                                "tag, close the open entity too."),
    # every tagged word an entity of its own, the B-/I- prefixes read as nothing: only "you returned X" before
    Mistake("each-tag-its-own-entity",
            lambda tags, spans: "You made one entity of every tagged word: an I- tag continues the open entity of its "
                                "type, so B-PER I-PER is one PER entity two words long."),
    # spaCy's order (`doc.ents`, its training data): only "you returned X" before
    Mistake("fields-out-of-order",
            lambda tags, spans: "Your entities hold the right type, start and end, but as (start, end, type), "
                                "spaCy's order; the contract's order is (type, start, end), e.g. ('PER', 0, 2).",
            "Append `(kind, start, end)`: the type first, then the start, then the end."),
    # an O read as nothing, so the open entity runs on through it: only "you returned X" before
    Mistake("o-does-not-close",
            lambda tags, spans: "Your entities run on through the O tags after them, up to the next entity or the "
                                "end of the sentence: an O is outside every entity, so it closes the open one (and an "
                                "I-X after it starts a new X entity).",
            "When the tag is O, close the open entity there, ending at this position, and leave nothing open."),
])

__all__ = ["TokenClassifier", "token_loss", "bio_to_spans", "CheckFailed"]
