"""Checks for lesson 06: last_token_pool, last_real_index and the knowledge check."""
from __future__ import annotations

import math
from typing import Any, Mapping

import torch

from ..kernel import drive_names
from .core import CheckFailed, NotWritten, a_type, drive, fail, passed, trying
from .engine import Exercise
from .shared import table

T, F = True, False


# --- last_token_pool(H, lengths) → (B, d) --------------------------------------------------------
def _read_pool(case):
    if isinstance(case[0], torch.Tensor):   # a hidden case: (H, lengths, expected)
        return (case[0], torch.as_tensor(case[1], dtype=torch.long)), case[2]
    lengths, n, d, where = case
    # entries 0 and 1 of the vector at (b, i) are b and i, so that a pooled vector tells where it came from
    H = torch.randn(len(lengths), n, d, generator=torch.Generator().manual_seed(d))
    H[:, :, 0], H[:, :, 1] = torch.arange(len(lengths))[:, None], torch.arange(n)[None, :]
    return (H, torch.tensor(lengths)), H[torch.arange(len(where)), torch.tensor(where)]


def _pool_row(out, expected, H, lengths) -> str | tuple[str, str]:
    b = next(b for b in range(len(lengths)) if not torch.allclose(out[b], expected[b]))
    length, hits = int(lengths[b]), (H == out[b]).all(-1).nonzero().tolist()
    said = (f"last_token_pool: row {b} has length {length} (lengths={lengths.tolist()}), so its last real token is "
            f"position {length - 1}")
    if not hits:
        return f"{said}; the vector you returned is not one of H's. Select that vector of H itself, unchanged."
    row, pos = hits[0]
    if row != b:
        return (f"{said}; you returned a vector from row {row} (position {pos}). Each sequence must get a vector "
                "from its own row.", "Index the batch with `torch.arange(H.shape[0])`.")
    return f"{said}; you pooled position {pos}, {'padding' if pos >= length else 'a real token but not the last'}."


def _full_row(err, H, lengths) -> str | tuple[str, str, str]:
    if f"for dimension 0 with size {H.shape[0]}" in str(err):   # H's batch axis overflowed, not a row's positions
        return (f"A row index went past the batch of {H.shape[0]}: the row indices must come from H itself, not from "
                "a fixed batch size.", "row-index-past-the-batch", "Take them with `torch.arange(H.shape[0])`.")
    full = [b for b in range(len(lengths)) if int(lengths[b]) >= H.shape[1]]
    return "" if not full else (f"Row {full[0]} is full (ℓ = n = {H.shape[1]}), and position ℓ does not exist: you "
                                "are off by one. Positions count from 0, so the last real token is at ℓ − 1.",
                                "one-too-many", "Index each row at `lengths - 1`.")


last_token_pool = Exercise(
    "last_token_pool",
    # (lengths, n, d, the position each row must use: ℓ − 1), written out by hand.
    cases=[
        ([5, 3, 4], 6, 4, [4, 2, 3]),       # the lesson's worked example
        ([2, 6, 1], 6, 2, [1, 5, 0]),       # a full row (ℓ = n) and a one-token row
        ([8, 3, 6], 9, 5, [7, 2, 5]),
    ],
    read=_read_pool,
    shape=lambda H, lengths: (H.shape[0], H.shape[2]),
    meaning=" (one vector per sequence)",
    where=lambda H, lengths: f" for lengths={lengths.tolist()} and H of shape {tuple(H.shape)}",
    hints=[(IndexError, _full_row)],
    explain=_pool_row,
    unchanged="last_token_pool changed H or lengths; select from them without writing into them.",
    mistakes=table([
        ("every-row-every-position",
         "last_token_pool returned shape (B, B, d){where}: `H[:, lengths - 1]` takes every listed position from every "
         "row. Pair each row with its own position.",
         "Index both axes with a tensor, one entry per row: `H[torch.arange(H.shape[0]), lengths - 1]`."),
        ("last-tensor-position",
         "last_token_pool pooled the last tensor position (`H[:, -1]`){where}: padding for every row shorter than n. "
         "With right padding, pick each row's own position ℓ_b − 1."),
        ("first-token",
         "last_token_pool pooled the first token (`H[:, 0]`){where}. In a causal model it has seen only itself, so it "
         "knows nothing about the rest of the text. Use the last real token, ℓ_b − 1."),
        # two rows: the mean over each row's real tokens, and over every position (heads_mistakes.ch06)
        *[("mean-pooling",
           "last_token_pool averaged over positions{where}: that is mean pooling. Last-token pooling takes one vector "
           "per row, the one at its last real position ℓ_b − 1.")] * 2,
        ("one-too-many",
         "last_token_pool pooled position ℓ of every row{where}: off by one. Positions count from 0, so a row of ℓ "
         "tokens ends at position ℓ − 1; position ℓ is padding."),
        # Found by probing the check: got only "you pooled position 4, padding" for one row before.
        ("last-tensor-position",
         "last_token_pool pooled position max(ℓ) − 1, the end of the longest row, in every row{where}: padding for "
         "every row shorter than that one. With right padding, pick each row's own position ℓ_b − 1."),
        # `torch.gather` with a (B, 1, 1) index, then squeezed: only "returned shape (3, 1); expected (3, 4)" before.
        # Lesson 07's key for the same mistake. Two rows: squeezed to (B, 1), or to (B,).
        *[("gather-index-shape",
           "last_token_pool returned feature 0 of each row's last real token alone{where}: `torch.gather` returns a "
           "tensor of its index's shape, and a (B, 1, 1) index gathers one entry per row. The index must be "
           "(B, 1, d): each row's position repeated over the d features.",
           "`H.gather(1, (lengths - 1)[:, None, None].expand(-1, 1, H.shape[-1])).squeeze(1)`, or index directly: "
           "`H[torch.arange(H.shape[0]), lengths - 1]`.")] * 2,
    ]),
)


# --- last_real_index(attention_mask) → (B,) long ---------------------------------------------------
def _index_row(out, expected, mask) -> str:
    b = int((out != expected).nonzero()[0])
    got, row = int(out[b]), mask[b].int().tolist()
    what = (f"outside the row (positions 0 … {len(row) - 1})" if not 0 <= got < len(row) else
            "a real token, but not the last one" if row[got] else "a padding position (False)")
    return (f"last_real_index returned {got} for row {b} of the mask, {row}, whose last True is at position "
            f"{int(expected[b])}: {what}.")


def _bool_first(err, mask) -> tuple[str, str, str] | None:
    return None if mask.dtype == torch.bool else (
        f"This mask is 0/1 of dtype {mask.dtype}: masks may be bool or 0/1 numbers, and your code works with "
        "True/False only.", "bool-mask-only", "Turn it into bool first: `attention_mask.bool()`.")


# Shown when the same mistake comes again (core.shown)
_FROM_THE_END = "Index i counted from the end is position n − 1 − i, where `n = attention_mask.shape[1]`."

last_real_index = Exercise(
    "last_real_index",
    # (mask, the position of each row's last True), written out by hand. First right-padded rows and a
    # left-padded one together, where the usual mistakes all give different numbers; then right padding,
    # left padding, masks with a False inside the text, and a 0/1 integer mask.
    cases=[
        ([[T, T, T, T, F, F], [F, F, T, T, T, T], [T, T, F, F, F, F]], [3, 5, 1]),
        ([[T, T, F, F], [T, T, T, T], [T, F, F, F]], [1, 3, 0]),
        ([[F, F, T, T, T], [T, T, T, T, T], [F, F, F, F, T]], [4, 4, 4]),
        ([[F, F, F, T, T, T], [F, T, T, T, T, T]], [5, 5]),
        ([[T, F, T, T, F, F], [T, T, T, T, T, F]], [3, 4]),
        ([[F, T, F, T, T], [F, F, T, T, T]], [4, 4]),
        ([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 0, 1, 1, 0]], [2, 4, 3]),
    ],
    read=lambda case: ((torch.as_tensor(case[0]),), torch.as_tensor(case[1], dtype=torch.long)),
    shape=lambda mask: (mask.shape[0],),
    dtype=torch.long,
    meaning=" (one index per row)",
    where=lambda mask: f" for the mask {mask.int().tolist()}",
    dtype_message="{name} returned dtype {got}{where}; indices are a long tensor (.long()).",
    hints=[(Exception, _bool_first)],
    explain=_index_row,
    unchanged="last_real_index changed the mask it was given; compute a new tensor instead.",
    mistakes=table([
        ("counted-across-a-hole",
         "counted the real tokens (`attention_mask.sum(1) - 1`, or first True + count − 1){where}, which assumes they "
         "sit side by side. This mask has a hole, a False inside the text: the pad id also occurs in the text and "
         "the mask was built as ids != pad_id. Find the last True."),
        ("count-assumes-right-padding",
         "returned the number of real tokens minus one (`attention_mask.sum(1) - 1`){where}: the last index only "
         "when the text starts at position 0. A row here starts with padding, so its text ends further right: find "
         "the position of the last True, do not count."),
        ("first-true",
         "returned the first True of each row{where}: argmax returns the FIRST position of the maximum, and every "
         "True is a maximum. Look for the last True instead.",
         "E.g. weight each position by its index, or flip the row before the argmax."),
        ("n-minus-length",
         "returned n − ℓ for each row (its length minus its real tokens){where}: under left padding that is where "
         "the text starts, the first real token, not where it ends."),
        ("flipped-not-mapped-back",
         "returned how far each row's last True is from the end of the row{where}, as argmax gives it on the flipped "
         "mask. Map it back to a position counted from the start.", _FROM_THE_END),
        ("count-as-index",
         "returned the number of real tokens of each row (`attention_mask.sum(1)`){where}: a count, not a position. "
         "Positions count from 0, and a count does not say where a text ends."),
        ("flip-off-by-one",
         "returned one past each row's last True{where}: off by one. Positions count from 0, at both ends of the "
         "row.", _FROM_THE_END),
        ("stopped-at-first-false",
         "returned the position before each row's first False{where}: the last real token only if the text starts "
         "at position 0 and has no gap, and here a row starts with padding or has a False inside its text. Take the "
         "last True instead."),
        ("last-tensor-position",
         "returned the last tensor position n − 1 for every row{where}: padding for a right-padded row shorter than "
         "n."),
        # Found by probing the check: got only "returned 0 for row 0 ..., a real token, but not the last one" before.
        ("len-is-batch-size",
         "mapped the flipped mask's argmax back with `len(attention_mask)`{where}: `len` of a 2-D tensor is its first "
         "dimension, the B rows, not the n positions of a row, so every index is off by n − B.",
         "Use the row length `attention_mask.shape[1]`: the last True is at n − 1 − (argmax of the flipped row)."),
    ], says="last_real_index "),
)


# --- the knowledge check -------------------------------------------------------------------------
# The package holds neither the answers nor the question's numbers: the hidden test passes both, the expected
# values and the question (lengths, n, d, K), from which the usual wrong values below are worked out.
KC_NAMES = ("kc_positions", "kc_head_params", "kc_initial_loss")


def _usual_answers(lengths: list, n: int, d: int, K: int) -> dict:
    """Per answer: its context, its usual wrong values (key, value, why), what to do when none fits. A mistake
    that lesson 03 (head_param_count, untrained_loss) or this lesson's exercises name has their key here too, so
    the class report counts it in one row."""
    return {
        "kc_positions": (f"for lengths {lengths} padded to n = {n}", [
            ("one-too-many", list(lengths), "those are the lengths themselves. A row of ℓ tokens holds "
             "positions 0 … ℓ − 1, so its last real token is one less than its length (off by one)."),
            ("last-tensor-position", [n - 1] * len(lengths), f"position {n - 1} is the last tensor position: "
             "padding for every row shorter than n. Use each row's last real token."),
            ("first-token", [0] * len(lengths), "position 0 is the first token, which in a causal model has seen "
             "only itself."),
            ("n-minus-length", [n - k for k in lengths], "n − ℓ is where a left-padded text starts. The "
             "batch is right-padded: use the last real token of each row."),
        ], "row b uses its last real token."),
        "kc_head_params": (f"for d = {d} and K = {K}", [
            ("forgets-the-bias", d * K, "that counts the weight matrix only. The head also has a bias, one per class."),
            ("one-bias-per-feature", d * K + d, "the bias has one entry per class (K of them), not one per input."),
            ("adds-the-sizes", d + K, "a linear map from d inputs to K outputs has a weight for every (class, input) "
             "pair, plus one bias per class."),
            ("square-matrix", d * d + d, "that is a d × d layer. The head maps d inputs to K classes."),
            # lesson 03's other usual counts (head_param_count), which got only the rule here before
            ("square-matrix", d * d + K, "that is a d × d matrix and K biases. The head's matrix is K × d."),
            ("shared-bias", d * K + 1, "that counts one bias shared by all classes. The head has one bias per class, "
             "K of them."),
            ("one-row-and-column-too-many", (d + 1) * (K + 1), "that is (d + 1)·(K + 1): one row and one column too "
             "many. The weight matrix has one row per class and one column per input, and the bias one entry per "
             "class."),
            ("counts-the-pooler", d * d + d + d * K + K, "that counts BERT's pooler too, lesson 02's d × d dense layer "
             "and its d biases. The head is the Linear layer alone."),
        ], "count the weight matrix (K × d) and the bias (K)."),
        "kc_initial_loss": (f"for K = {K} classes", [
            ("ln-2-for-every-k", math.log(2), f"ln 2 is the untrained loss of a two-class head. Here there are {K}."),
            ("log-base-10", math.log10(K), "that is log base 10. Cross-entropy uses the natural logarithm (nats)."),
            ("log-base-2", math.log2(K), "that is log base 2 (bits). The course measures the loss in nats, with ln."),
            ("probability-not-loss", 1 / K, "1/K is the probability an untrained head gives each class. The loss "
             "is −ln of that probability."),
            # lesson 03's other usual values (untrained_loss), which got only the rule here before
            ("error-rate-not-loss", 1 - 1 / K, "1 − 1/K is the error rate of a uniform guess, not its cross-entropy. "
             "The loss is −ln of the probability of the true class."),
            ("ln-k-minus-1", math.log(K - 1), f"ln(K − 1) counts one class too few: an untrained head spreads its "
             f"probability evenly over all {K} classes."),
        ], "an untrained head gives every class about the same probability, and the loss is −ln of the "
           "probability of the true class (rounded to two decimals)."),
    }


# What each answer is, and the conversion that makes it so (the fix, shown when the same form comes again).
PLAIN = {"kc_positions": ("a list of three ints", "`tensor.tolist()`"), "kc_head_params": ("an int", "`int(tensor)`"),
         "kc_initial_loss": ("a float rounded to two decimals", "`round(tensor.item(), 2)`")}


def knowledge_check(namespace: Mapping[str, Any], expected: Mapping[str, Any] | None = None,
                    question: Mapping[str, Any] | None = None) -> None:
    """Check the answers set in the notebook (pass `globals()`): without `expected`, only their form,
    which gives no value away; hidden tests pass the values and the `question` (lengths, n, d, K) that
    names the usual wrong ones."""
    trying(namespace, "knowledge_check")   # its failures are this check's (core.shown)
    if not isinstance(namespace, Mapping):
        fail("this check reads your answers from the notebook: call it as `check.knowledge_check(globals())`.",
             "not-a-namespace")
    answers = drive(drive_names, namespace, list(KC_NAMES))
    missing = [name for name in KC_NAMES if name not in answers]
    if missing:
        said = (f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set: the knowledge check is not "
                "written yet. Set all three variables in the answer cell above.")
        raise NotWritten(said) if len(missing) == 3 else CheckFailed(said, "not-set")
    # every answer that is not a plain value of its kind (the first problem of each); the message holds no answer
    forms = zip(KC_NAMES, (_positions_form, _params_form, _loss_form))
    _all_at_once([p for name, form in forms if (p := _tensor(name, answers[name]) or form(answers[name]))],
                 "need another form")
    if expected is None:
        print("✓ knowledge check: the three answers have the right form (their values are graded)")
        return
    n = question["n"]
    if any(not p < n for p in answers["kc_positions"]):
        fail(f"kc_positions = {list(answers['kc_positions'])} is not made of positions of a batch padded to n = {n}: "
             f"positions count from 0, so they run from 0 to {n - 1}.", "position-outside",
             f"Count from 0: the first position is 0, the last of a batch padded to n = {n} is {n - 1}.")
    wrong = []
    for name, (where, mistakes, otherwise) in _usual_answers(**question).items():
        got, want = [list(v) if name == "kc_positions" else v for v in (answers[name], expected[name])]
        same = (lambda a, b: abs(a - round(b, 2)) < 0.005) if name == "kc_initial_loss" else (lambda a, b: a == b)
        if not same(got, want):
            key, why = next(((k, why) for k, value, why in mistakes if same(got, value)), ("wrong-values", ""))
            wrong.append((f"{name} = {got} {where}: {why}" if why else
                          f"{name} = {got} is not right {where}: {otherwise}", key))
    _all_at_once(wrong, "are wrong")
    passed("knowledge check", 3)


def _all_at_once(problems: list[tuple], what: str) -> None:
    """Fail, in one line, with every problem (message, key[, fix]) of the answers: one as it is, several numbered
    (the key of the first; the fixes together), so that a learner sees all of them in one run."""
    if len(problems) == 1:
        fail(*problems[0])
    if problems:
        fail(f"{len(problems)} answers of the knowledge check {what}: "
             + " ".join(f"({i}) {said}" for i, (said, *_) in enumerate(problems, 1)), problems[0][1],
             " ".join(p[2] for p in problems if len(p) > 2))


def _tensor(name: str, value) -> tuple[str, str, str] | None:
    """The first problem of any answer: a tensor, or a list holding tensors, where a plain value is asked."""
    if isinstance(value, torch.Tensor) or isinstance(value, (list, tuple)) and any(
            isinstance(p, torch.Tensor) for p in value):
        what, conversion = PLAIN[name]
        return (f"{name} {'is' if isinstance(value, torch.Tensor) else 'holds'} a torch tensor ({value!r}). The "
                f"answers are plain Python values: make it {what}.", "tensor-answer", f"{name}: {conversion}.")


def _positions_form(positions) -> tuple[str, ...] | None:
    if not isinstance(positions, (list, tuple)) or len(positions) != 3:
        return (f"kc_positions must be a list of three positions, one per row of the batch; it is {positions!r}.",
                "not-three-positions")
    for p in positions:
        if type(p) is not int:
            return (f"kc_positions must hold whole numbers (int), one position per row; {p!r} is {a_type(p)}.",
                    "position-not-int")
    if any(p < 0 for p in positions):
        return (f"kc_positions = {list(positions)} holds a negative number: positions count from 0, the first "
                "token of a row.", "position-outside")


def _params_form(params) -> tuple[str, ...] | None:
    if type(params) is not int or params <= 0:
        return (f"kc_head_params must be a positive whole number of parameters, an int; it is {params!r} "
                f"({type(params).__name__}).", "params-not-positive" if type(params) is int else "params-not-int")


def _loss_form(loss) -> tuple[str, ...] | None:
    if isinstance(loss, bool) or not isinstance(loss, (int, float)) or not math.isfinite(loss) or loss <= 0:
        return (f"kc_initial_loss must be a positive Python float (in nats: a cross-entropy loss is −ln of a "
                f"probability below 1); it is {loss!r} ({type(loss).__name__}).", "loss-not-a-positive-number")
    if round(float(loss), 2) != float(loss):
        return (f"kc_initial_loss = {loss} is not rounded: the question asks for two decimals.", "loss-not-rounded",
                f"kc_initial_loss: round(..., 2) gives {round(float(loss), 2)}.")


__all__ = ["last_token_pool", "last_real_index", "knowledge_check", "CheckFailed"]
