"""Checks for lesson 06: last_token_pool, last_real_index and the knowledge check.

Visible cases carry their expected answers written out by hand. To tell which position a pooled
vector came from, the test states are built so that every (row, position) vector is different and
can be looked up again.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import torch

from .core import CheckFailed, call_raw, drive, explain, fail, passed, require_function, require_tensor

T, F = True, False


# --- last_token_pool -----------------------------------------------------------------------------
def _states(B: int, n: int, d: int, seed: int) -> torch.Tensor:
    """H whose vector at (b, i) is unique: entry 0 holds b, entry 1 holds i, the rest is noise."""
    g = torch.Generator().manual_seed(seed)
    H = torch.randn(B, n, d, generator=g)
    H[:, :, 0] = torch.arange(B, dtype=torch.float32)[:, None]
    H[:, :, 1] = torch.arange(n, dtype=torch.float32)[None, :]
    return H


# (lengths, n, d, the position each row must use) written out by hand: ℓ − 1.
POOL_CASES = [
    ([5, 3, 4], 6, 4, [4, 2, 3]),       # the lesson's worked example
    ([2, 6, 1], 6, 3, [1, 5, 0]),       # a full row (ℓ = n) and a one-token row
    ([7, 4, 9], 10, 5, [6, 3, 8]),
]


def last_token_pool(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(H, lengths)` on each case and name the mistake if a pooled row is wrong.

    A case is (lengths, n, d, expected positions) or, for hidden tests, (H, lengths, expected (B, d)).
    """
    require_function(fn, "last_token_pool")
    cases = POOL_CASES if cases is None else cases
    for k, case in enumerate(cases):
        if isinstance(case[0], torch.Tensor) and case[0].dim() == 3:
            H, lengths, expected = case
            lengths = torch.as_tensor(lengths, dtype=torch.long)
        else:
            lengths_list, n, d, where = case
            lengths = torch.tensor(lengths_list, dtype=torch.long)
            H = _states(len(lengths_list), n, d, seed=k)
            expected = H[torch.arange(len(where)), torch.tensor(where)]
        H_before, lengths_before = H.clone(), lengths.clone()
        out = _call_pool(fn, H, lengths)
        _diagnose_pool(out, H, lengths, expected)
        if not torch.equal(H, H_before) or not torch.equal(lengths, lengths_before):
            fail("last_token_pool changed the tensors it was given (H or lengths); "
                 "select from them without writing into them.")
    passed("last_token_pool", len(cases))


def _call_pool(fn: Callable, H: torch.Tensor, lengths: torch.Tensor):
    try:
        return call_raw(fn, "last_token_pool", H, lengths)
    except IndexError as err:
        B, n, _ = H.shape
        full = [b for b in range(B) if int(lengths[b]) >= n]
        if full:
            b = full[0]
            fail(f"last_token_pool raised IndexError ({err}) for lengths={lengths.tolist()}, n={n}. "
                 f"Row {b} is full (ℓ = {int(lengths[b])} = n), and position ℓ does not exist: you are "
                 f"off by one. Positions count from 0, so the last real token is at ℓ − 1 = {int(lengths[b]) - 1}.")
        explain(err, "last_token_pool", H, lengths)
    except Exception as err:
        explain(err, "last_token_pool", H, lengths)


def _source_position(vec: torch.Tensor, H: torch.Tensor) -> tuple[int, int] | None:
    """(row, position) of H whose vector equals `vec`, or None."""
    hits = (H == vec).all(-1).nonzero()
    return (int(hits[0, 0]), int(hits[0, 1])) if len(hits) else None


def _diagnose_pool(out: Any, H: torch.Tensor, lengths: torch.Tensor, expected: torch.Tensor) -> None:
    B, n, d = H.shape
    where = f" for lengths={lengths.tolist()} and H of shape {(B, n, d)}"
    if isinstance(out, torch.Tensor) and out.dim() == 3 and tuple(out.shape) == (B, B, d):
        fail(f"last_token_pool returned shape {tuple(out.shape)}{where}: `H[:, lengths - 1]` takes every "
             "listed position from every row. Pair each row with its own position: "
             "H[torch.arange(B), lengths - 1] gives (B, d).")
    require_tensor(out, "last_token_pool", (B, d), meaning=f" (one vector per sequence){where}")
    if torch.allclose(out, expected):
        return
    mean = torch.stack([H[b, : int(lengths[b])].mean(0) for b in range(B)])
    if torch.allclose(out, mean, atol=1e-5) or torch.allclose(out, H.mean(1), atol=1e-5):
        fail(f"last_token_pool averaged over positions{where}: that is mean pooling. "
             "Last-token pooling takes one vector per row, H[b, ℓ_b − 1].")
    sources = [_source_position(out[b], H) for b in range(B)]
    if all(src is not None and src[0] == b for b, src in enumerate(sources)):
        pos = torch.tensor([src[1] for src in sources])
        b = int((pos != lengths - 1).nonzero()[0])
        said = (f"row {b} has length {int(lengths[b])}, so its last real token is position "
                f"{int(lengths[b]) - 1}; you pooled position {int(pos[b])}")
        if torch.equal(pos, lengths):
            fail(f"{said} = ℓ: off by one, for every row{where}. Positions count from 0, so a row of "
                 "ℓ tokens ends at position ℓ − 1; position ℓ is padding (or, for a full row, past the end).")
        if bool((pos == n - 1).all()):
            fail(f"{said}, the last tensor position (H[:, -1]), which is padding for every row shorter "
                 "than n. With right padding, pick each row's own position ℓ_b − 1.")
        if bool((pos == 0).all()):
            fail(f"{said}, the first token (H[:, 0]). In a causal model the first position has seen only "
                 "itself, so it knows nothing about the rest of the text. Use the last real token, ℓ_b − 1.")
    for b in range(B):
        if torch.allclose(out[b], expected[b]):
            continue
        length, want = int(lengths[b]), int(lengths[b]) - 1
        src = _source_position(out[b], H)
        said = f"row {b} has length {length}, so its last real token is position {want}"
        if src is None:
            fail(f"{said}; the vector you returned for it is not any row of H{where}. "
                 "Select H[b, ℓ_b − 1] itself, unchanged.")
        rb, pos = src
        if rb != b:
            fail(f"{said}; you returned a vector from row {rb} (position {pos}). Each sequence must get "
                 "a vector from its own row: index the batch with torch.arange(B).")
        kind = "a padding position" if pos >= length else "a real token, but not the last one"
        if pos == n - 1 and pos >= length:
            fail(f"{said}; you pooled position {pos}, the last tensor position, which is {kind} "
                 f"(H[:, -1]). With right padding the last tensor position is padding for every row "
                 "shorter than n: pick each row's own position ℓ_b − 1.")
        if pos == 0:
            fail(f"{said}; you pooled position 0, the first token (H[:, 0]). In a causal model the "
                 "first position has seen only itself, so it knows nothing about the rest of the text. "
                 "Use the last real token, ℓ_b − 1.")
        if pos == length:
            fail(f"{said}; you pooled position {pos} = ℓ, {kind}: off by one. Positions count from 0, "
                 "so a row of ℓ tokens ends at position ℓ − 1.")
        if pos == length - 2:
            fail(f"{said}; you pooled position {pos} = ℓ − 2: off by one in the other direction.")
        fail(f"{said}; you pooled position {pos}, {kind}{where}.")


# --- last_real_index -----------------------------------------------------------------------------
# (mask, expected index of the last True per row), written out by hand. Right padding first, then
# left padding, then masks with a False inside the text, then 0/1 integer masks.
INDEX_CASES = [
    ([[T, T, T, T, T, F], [T, T, T, F, F, F], [T, T, T, T, F, F]], [4, 2, 3]),
    ([[T, T, F, F], [T, T, T, T], [T, F, F, F]], [1, 3, 0]),
    ([[F, F, T, T, T], [T, T, T, T, T], [F, F, F, F, T]], [4, 4, 4]),
    ([[F, F, F, T, T, T], [F, T, T, T, T, T]], [5, 5]),
    ([[T, F, T, T, F, F], [T, T, T, T, T, F]], [3, 4]),
    ([[F, T, F, T, T], [F, F, T, T, T]], [4, 4]),
    ([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 0, 1, 1, 0]], [2, 4, 3]),
]


def last_real_index(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(attention_mask)` on each case and name the mistake if an index is wrong.

    A case is (mask, expected) with mask as nested lists of bools or 0/1 ints, or as a tensor.
    """
    require_function(fn, "last_real_index")
    cases = INDEX_CASES if cases is None else cases
    for mask, expected in cases:
        mask = _as_mask(mask)
        expected = torch.as_tensor(expected, dtype=torch.long)
        before = mask.clone()
        out = _call_index(fn, mask)
        _diagnose_index(out, mask, expected)
        if not torch.equal(mask, before):
            fail("last_real_index changed the mask it was given; compute a new tensor instead.")
    passed("last_real_index", len(cases))


def _as_mask(mask) -> torch.Tensor:
    if isinstance(mask, torch.Tensor):
        return mask
    flat = [v for row in mask for v in row]
    if all(isinstance(v, bool) for v in flat):
        return torch.tensor(mask, dtype=torch.bool)
    return torch.tensor(mask, dtype=torch.long)


def _call_index(fn: Callable, mask: torch.Tensor):
    try:
        return call_raw(fn, "last_real_index", mask)
    except NotImplementedError as err:
        explain(err, "last_real_index", mask)
    except Exception as err:
        if mask.dtype != torch.bool:
            fail(f"last_real_index raised {type(err).__name__} ({err}) on a 0/1 mask of dtype "
                 f"{mask.dtype}: {mask.tolist()}. Masks may be bool or 0/1 integers; turn the mask into "
                 "bool first (mask.bool()) if your code needs True/False.")
        explain(err, "last_real_index", mask)


def _diagnose_index(out: Any, mask: torch.Tensor, expected: torch.Tensor) -> None:
    B, n = mask.shape
    where = f" for the mask {mask.int().tolist()}"
    require_tensor(out, "last_real_index", (B,), meaning=f" (one index per row){where}")
    if out.dtype != torch.long:
        hint = " Your indices are right; return them as long (.long())." if torch.equal(
            out.long() if not out.is_floating_point() else out.round().long(), expected) else ""
        fail(f"last_real_index returned dtype {out.dtype}; indices are a long tensor{where}.{hint}")
    if torch.equal(out, expected):
        return
    real = mask.bool()
    count = real.sum(1)
    first = real.long().argmax(1)
    left = real[:, -1] & ~real[:, 0]                   # rows that start with padding and end real
    starts = first
    has_hole = torch.tensor([bool((~real[b, int(starts[b]):int(expected[b]) + 1]).any()) for b in range(B)])
    first_false = torch.tensor([int((~real[b]).long().argmax()) if (~real[b]).any() else n for b in range(B)])
    bad = int((out != expected).nonzero()[0])
    got, want = int(out[bad]), int(expected[bad])
    said = f"in row {bad} of the mask {real[bad].int().tolist()}, the last True is at position {want}; you returned {got}"
    if bool(has_hole[bad]) and (torch.equal(out, count - 1) or torch.equal(out, first + count - 1)):
        hole = int((~real[bad, int(starts[bad]):want + 1]).long().argmax()) + int(starts[bad])
        fail(f"{said}. You counted the real tokens (mask.sum(1) − 1, or first True + count − 1), which "
             f"assumes they are contiguous. This row has a hole: a False inside the text, at position "
             f"{hole}, because the pad id also occurs inside the text and the mask was built as "
             "ids != pad_id. Counting then falls short; find the position of the last True itself.")
    if torch.equal(out, count - 1) and bool(left[bad] | (~real[bad, 0])):
        fail(f"{said}. You counted the real tokens (mask.sum(1) − 1), which is the last index only "
             "under right padding. This row is left-padded: its text ends at the last position. "
             "Find the position of the last True instead of counting.")
    if torch.equal(out, first):
        fail(f"{said}: that is the first True (the first real token). argmax returns the FIRST position of "
             "the maximum, and every True is a maximum. Look for the last True: e.g. weight each "
             "position by its index, or flip the row.")
    if torch.equal(out, n - count):
        fail(f"{said}. You computed n − ℓ = {n} − {int(count[bad])}: under left padding that is where the "
             "text starts, the first real token, not where it ends. The last real token is the last True.")
    if torch.equal(out, first_false - 1) and bool(has_hole[bad]):
        fail(f"{said}: you stopped at the first False, but this row's first False is a hole inside the "
             "text (the pad id also occurs in the text). Take the last True, not the position before "
             "the first False.")
    if bool((out == n - 1).all()):
        fail(f"{said}: you returned the last tensor position n − 1 = {n - 1} for every row. That is "
             "padding for a right-padded row shorter than n.")
    if torch.equal(out, expected + 1) or torch.equal(out, count):
        fail(f"{said}: one past the last True, off by one. Positions count from 0.")
    if not 0 <= got < n:
        fail(f"{said}, which is outside the row (positions are 0 … {n - 1}).")
    if not bool(real[bad, got]):
        fail(f"{said}, which is a padding position (False).")
    fail(f"{said}: a real token, but not the last one.")


# --- the knowledge check -------------------------------------------------------------------------
KC_LENGTHS, KC_N, KC_D, KC_K = [7, 4, 9], 10, 512, 5
KC_NAMES = ("kc_positions", "kc_head_params", "kc_initial_loss")


def drive_knowledge_check(namespace: Mapping[str, Any]) -> dict:
    """The three answers the notebook set (the only part of the check that reads the notebook)."""
    return {name: namespace[name] for name in KC_NAMES if name in namespace}


def knowledge_check(namespace: Mapping[str, Any], expected: Mapping[str, Any] | None = None) -> None:
    """Check the knowledge-check answers set in the notebook (pass `globals()`).

    Without `expected` only the form of each answer is checked, which gives no value away: plain
    Python values (no tensors), three whole-number positions inside the batch, a whole positive
    parameter count, a positive loss rounded to two decimals. Hidden tests pass the values.
    """
    if not isinstance(namespace, Mapping):
        fail("this check reads your answers from the notebook: call it as check.knowledge_check(globals()).")
    answers = drive(drive_knowledge_check, namespace)
    missing = [name for name in KC_NAMES if name not in answers]
    if missing:
        fail(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set: the knowledge check "
             "is not written yet. Set all three variables in the answer cell above.")
    positions, params, loss = (answers[name] for name in KC_NAMES)
    for name, value, plain in (("kc_positions", positions, "a list of three ints (tensor.tolist())"),
                               ("kc_head_params", params, "an int (int(tensor) or tensor.item())"),
                               ("kc_initial_loss", loss, "a float rounded to two decimals "
                                                         "(round(tensor.item(), 2))")):
        if isinstance(value, torch.Tensor):
            fail(f"{name} is a torch tensor ({value!r}). The answers are plain Python values: "
                 f"make it {plain}.")
    if not isinstance(positions, (list, tuple)) or len(positions) != 3:
        fail(f"kc_positions must be a list of three positions, one per row of the batch; it is {positions!r}.")
    for p in positions:
        if isinstance(p, torch.Tensor):
            fail(f"kc_positions holds a tensor ({p!r}); write plain Python ints, e.g. [int(x) for x in ...].")
        if not isinstance(p, int) or isinstance(p, bool):
            fail(f"kc_positions must hold whole numbers (int), one position per row; {p!r} is a "
                 f"{type(p).__name__}.")
        if not 0 <= p < KC_N:
            fail(f"kc_positions = {list(positions)}: {p} is not a position of a batch padded to n = {KC_N}. "
                 f"Positions count from 0, so they run from 0 to {KC_N - 1}.")
    if isinstance(params, bool) or not isinstance(params, int):
        fail(f"kc_head_params must be a whole number of parameters, an int; it is {params!r} "
             f"({type(params).__name__}).")
    if params <= 0:
        fail(f"kc_head_params = {params}: a parameter count is a positive whole number.")
    if isinstance(loss, bool) or not isinstance(loss, (int, float)):
        fail(f"kc_initial_loss must be a number (in nats), a float; it is {loss!r} ({type(loss).__name__}).")
    if not math.isfinite(loss) or loss <= 0:
        fail(f"kc_initial_loss = {loss}: a cross-entropy loss is a positive number (it is −ln of a "
             "probability below 1).")
    if round(float(loss), 2) != float(loss):
        fail(f"kc_initial_loss = {loss} is not rounded: the question asks for two decimals. "
             f"Write round(..., 2), which gives {round(float(loss), 2)}.")
    if expected is None:
        print("✓ knowledge check: the three answers have the right form (their values are graded)")
        return
    _diagnose_positions(list(positions), list(expected["kc_positions"]))
    _diagnose_params(params, int(expected["kc_head_params"]))
    _diagnose_loss(float(loss), round(float(expected["kc_initial_loss"]), 2))
    passed("knowledge check", 3)


def _diagnose_positions(got: list, want: list) -> None:
    if got == want:
        return
    said = f"kc_positions = {got}: for lengths {KC_LENGTHS} padded to n = {KC_N}"
    if got == KC_LENGTHS:
        fail(f"{said}, those are the lengths themselves. A row of ℓ tokens holds positions 0 … ℓ − 1, "
             "so its last real token is one less than its length (off by one).")
    if got == [KC_N - 1] * 3:
        fail(f"{said}, position {KC_N - 1} is the last tensor position: padding for every row shorter "
             "than n. Use each row's last real token.")
    if got == [0, 0, 0]:
        fail(f"{said}, position 0 is the first token, which in a causal model has seen only itself.")
    if got == [KC_N - length for length in KC_LENGTHS]:
        fail(f"{said}, n − ℓ is where a left-padded text starts. The batch is right-padded: use the "
             "last real token of each row.")
    fail(f"{said}, the positions used are not {got}: row b uses its last real token.")


def _diagnose_params(got: int, want: int) -> None:
    if got == want:
        return
    said = f"kc_head_params = {got} for d = {KC_D} and K = {KC_K}"
    if got == KC_D * KC_K:
        fail(f"{said}: that counts the weight matrix only. The head also has a bias, one per class.")
    if got == KC_D * KC_K + KC_D:
        fail(f"{said}: the bias has one entry per class (K of them), not one per input dimension.")
    if got == KC_D + KC_K:
        fail(f"{said}: a linear map from d inputs to K outputs has a weight for every (class, input) "
             "pair, K·d of them, plus K biases.")
    if got == KC_D * KC_D + KC_D:
        fail(f"{said}: that is a d × d layer. The head maps d inputs to K classes.")
    fail(f"{said} is not right: count the weight matrix (K × d) and the bias (K).")


def _diagnose_loss(got: float, want: float) -> None:
    if abs(got - want) < 0.005:          # both are rounded to two decimals: the same number
        return
    said = f"kc_initial_loss = {got} for K = {KC_K} classes"
    known = [  # (value, message): the nearest one, if it rounds to the answer, names the mistake
        (math.log(2), f"ln 2 is the untrained loss of a two-class head. Here there are {KC_K} classes."),
        (math.log10(KC_K), "that is log base 10. Cross-entropy is measured with the natural logarithm (nats)."),
        (math.log2(KC_K), "that is log base 2 (bits). The course measures the loss in nats, with ln."),
        (1 / KC_K, "1/K is the probability an untrained head gives each class. The loss is −ln of that probability."),
    ]
    value, message = min(known, key=lambda item: abs(item[0] - got))
    if abs(round(value, 2) - got) < 0.005:
        fail(f"{said}: {message}")
    fail(f"{said} is not right: an untrained head gives every class about the same probability, "
         "and the loss is −ln of the probability of the true class (rounded to two decimals).")


__all__ = ["last_token_pool", "last_real_index", "knowledge_check", "CheckFailed"]
