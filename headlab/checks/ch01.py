"""Checks for lesson 01: mask_tokens, MLMHead, mlm_loss and tying_savings.

mask_tokens is random, so its checks are of two kinds: exact properties that hold for every draw
(the caller's ids untouched, specials never chosen, labels −100 off the chosen positions, p = 0 and
p = 1, the same generator giving the same result) and frequencies over a large seeded batch, with
tolerances many standard deviations wide. In this course the five special tokens have ids 0 … 4,
so a random replacement is a word id in [5, vocab_size).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..grading import GraderError
from .core import CheckFailed, call, call_raw, drive, fail, passed, require_function, require_loss, require_tensor

NUM_SPECIAL = 5                     # [PAD] [CLS] [SEP] [MASK] [UNK] are ids 0 … 4
PAD, CLS, SEP, MASK, UNK = range(NUM_SPECIAL)
T, F_ = True, False

# (ids, special_mask, p, expected labels) written out by hand; vocab_size 12, mask_id 3.
EXACT_CASES = [
    ([[1, 7, 8, 9, 2, 0]], [[T, F_, F_, F_, T, T]], 0.0, [[-100] * 6]),
    ([[1, 7, 8, 9, 2, 0]], [[T, F_, F_, F_, T, T]], 1.0, [[-100, 7, 8, 9, -100, -100]]),
    ([[1, 5, 11, 2], [1, 6, 2, 0]], [[T, F_, F_, T], [T, F_, T, T]], 1.0,
     [[-100, 5, 11, -100], [-100, 6, -100, -100]]),
]
# Statistical cases: (vocab_size, p, seed); p None means "call without p" (the default, 0.15).
STAT_CASES = [(60, None, 0), (60, 0.4, 1)]


# --- mask_tokens ------------------------------------------------------------------------------
def synthetic_batch(rows: int, n: int, vocab_size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A right-padded batch [CLS] w … w [SEP] [PAD] … with word ids in [5, vocab_size)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, n - 1, (rows,), generator=g)            # words per row
    ids = torch.randint(NUM_SPECIAL, vocab_size, (rows, n), generator=g)
    pos = torch.arange(n)[None, :]
    ids[:, 0] = CLS
    ids = torch.where(pos == lengths[:, None] + 1, torch.full_like(ids, SEP), ids)
    ids = torch.where(pos > lengths[:, None] + 1, torch.full_like(ids, PAD), ids)
    return ids, (pos == 0) | (pos > lengths[:, None])


def mask_tokens(fn: Callable, cases: Sequence | None = None, exact: Sequence | None = None,
                mask_id: int = MASK) -> None:
    """Check `fn(ids, special_mask, vocab_size, mask_id, p, generator)` and name the mistake."""
    require_function(fn, "mask_tokens")
    exact = EXACT_CASES if exact is None else exact
    cases = STAT_CASES if cases is None else cases
    for ids, special, p, expected in exact:
        ids = torch.as_tensor(ids, dtype=torch.long)
        special = torch.as_tensor(special, dtype=torch.bool)
        g = torch.Generator().manual_seed(0)
        inputs, labels = _run_mask(fn, ids, special, 12, mask_id, p, g)
        expected = torch.as_tensor(expected, dtype=torch.long)
        if torch.equal(labels, expected):
            continue
        chosen, should = labels != -100, expected != -100
        where = f" for ids={ids.tolist()}, special_mask={special.tolist()}, p={p}"
        if p == 0.0:
            fail(f"with p=0.0 nothing may be chosen, but your labels are {labels.tolist()}{where}. "
                 "Does your code use the argument p, or a fixed 0.15? It ignores the argument p.")
        if p == 1.0 and not bool(chosen[should].all()):
            fail(f"with p=1.0 every non-special position must be chosen, but your labels are "
                 f"{labels.tolist()}{where}. Use the argument p (it ignores the argument p).")
        fail(f"labels are {labels.tolist()}{where}; expected {expected.tolist()}: the original id at "
             "each chosen position, −100 everywhere else.")
    for vocab_size, p, seed in cases:
        _statistics(fn, vocab_size, p, seed, mask_id)
    passed("mask_tokens", len(exact) + len(cases))


def _run_mask(fn, ids, special, vocab_size, mask_id, p, generator):
    """Call fn, check the output types, that nothing was changed in place, and the exact properties."""
    ids_before, special_before = ids.clone(), special.clone()
    kwargs = {} if p is None else {"p": p}
    out = call(fn, "mask_tokens", ids, special, vocab_size, mask_id, generator=generator, **kwargs)
    if not torch.equal(ids, ids_before):
        fail("mask_tokens modified the caller's `ids` tensor in place. Work on a copy "
             "(ids.clone()) and return new tensors: the caller still needs the original ids.")
    if not torch.equal(special, special_before):
        fail("mask_tokens modified the caller's `special_mask` in place; build new tensors instead.")
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        fail(f"mask_tokens must return a pair (inputs, labels); it returned a {type(out).__name__}.")
    inputs, labels = out
    shape = tuple(ids.shape)
    require_tensor(inputs, "mask_tokens: inputs", shape, torch.long, " (the same shape as ids, token ids)")
    require_tensor(labels, "mask_tokens: labels", shape, torch.long, " (the same shape as ids)")
    if inputs is ids or inputs.data_ptr() == ids.data_ptr():
        fail("mask_tokens returned the caller's `ids` tensor itself as `inputs`; return a new tensor "
             "(ids.clone()), so that corrupting the inputs never modifies the caller's tensor in place.")
    if labels.data_ptr() == ids.data_ptr():
        fail("mask_tokens returned the caller's `ids` tensor as `labels`; return a new tensor.")
    chosen = labels != -100
    if bool(chosen.all()) and bool(special.any()) and p != 1.0:
        fail("your labels hold an id at every position, specials included: labels must be −100 "
             "wherever a position was not chosen, so that the loss is taken over the chosen positions only.")
    if bool((chosen & special).any()):
        b, i = (chosen & special).nonzero()[0].tolist()
        fail(f"mask_tokens chose a special token: row {b}, position {i} holds id {int(ids[b, i])} "
             "([CLS], [SEP] or [PAD]) and got a label. Special tokens must never be chosen: "
             "exclude every position where special_mask is True.")
    if bool((inputs[special] != ids[special]).any()):
        fail("mask_tokens changed a special token ([CLS], [SEP] or [PAD]) in the inputs. Special "
             "tokens must never be chosen or corrupted.")
    if bool((labels[chosen] != ids[chosen]).any()):
        if bool((labels[chosen] == inputs[chosen]).all()):
            fail("your labels hold the corrupted inputs ([MASK] or the random word); a label must be "
                 "the ORIGINAL id, the word the model has to recover.")
        fail("at a chosen position the label must be the original id; some of your labels are other ids.")
    if bool((labels[~chosen] != -100).any()):
        fail("labels must be −100 at every position that was not chosen.")
    if bool(((labels == -100) & (inputs != ids)).any()):
        b, i = ((labels == -100) & (inputs != ids)).nonzero()[0].tolist()
        fail(f"mask_tokens changed position ({b}, {i}), whose label is −100. Only chosen positions may be "
             "corrupted (and each corrupted position needs its label); the 80/10/10 split is taken "
             "among the chosen positions, not among all positions.")
    corrupted = chosen & (inputs != mask_id) & (inputs != ids)
    bad = inputs[corrupted]
    drawn_special = bad[(bad >= 0) & (bad < NUM_SPECIAL)]
    if drawn_special.numel():
        fail(f"a random replacement drew the special token id {int(drawn_special[0])}: random "
             f"replacements must be non-special words, ids in [{NUM_SPECIAL}, vocab_size) "
             f"(the special tokens are ids 0 … {NUM_SPECIAL - 1}).")
    if bool(((bad < 0) | (bad >= vocab_size)).any()):
        fail(f"a random replacement is outside the vocabulary (id {int(bad[(bad < 0) | (bad >= vocab_size)][0])}, "
             f"vocab_size={vocab_size}); draw ids in [{NUM_SPECIAL}, vocab_size).")
    return inputs, labels


def _statistics(fn, vocab_size: int, p: float | None, seed: int, mask_id: int) -> None:
    ids, special = synthetic_batch(1500, 32, vocab_size, seed)
    g = torch.Generator().manual_seed(seed)
    inputs, labels = _run_mask(fn, ids, special, vocab_size, mask_id, p, g)
    target = 0.15 if p is None else p
    called = f"(vocab_size={vocab_size}, p={'default' if p is None else p}, 1500 rows)"
    chosen = labels != -100
    fraction = chosen.sum().item() / (~special).sum().item()
    if abs(fraction - target) > 0.025:
        if p is not None and abs(fraction - 0.15) < 0.025:
            fail(f"you chose {fraction:.1%} of the non-special positions with p={p}: your code ignores "
                 "the argument p (it looks like a fixed 0.15).")
        fail(f"you chose {fraction:.1%} of the non-special positions {called}; each non-special "
             f"position must be chosen with probability p = {target}.")
    k = chosen.sum().item()
    masked = ((inputs == mask_id) & chosen).sum().item() / k
    unchanged = ((inputs == ids) & chosen).sum().item() / k
    random = 1 - masked - unchanged
    split = f"[MASK] {masked:.1%}, random word {random:.1%}, unchanged {unchanged:.1%}"
    if masked > 0.97:
        fail(f"every chosen token became [MASK] ({split}). The recipe: of the chosen positions, "
             "80 % → [MASK], 10 % → a random word, 10 % unchanged.")
    if random < 0.02 and unchanged > 0.15:
        fail(f"no chosen token was replaced by a random word ({split}); 10 % of the chosen ones must be.")
    if unchanged < 0.03:
        fail(f"no chosen token was left unchanged ({split}); 10 % of the chosen ones must keep their id.")
    if abs(masked - 0.8) > 0.05 or abs(random - 0.1) > 0.04 or abs(unchanged - 0.1) > 0.04:
        fail(f"the split of the chosen positions is {split} {called}; it should be about 80 % / 10 % / 10 %.")
    words = inputs[chosen & (inputs != mask_id) & (inputs != ids)]
    if words.numel() >= 100 and words.unique().numel() < min(vocab_size - NUM_SPECIAL, 20) // 2:
        fail(f"your random replacements use only {words.unique().numel()} different ids; draw them "
             f"uniformly from [{NUM_SPECIAL}, vocab_size).")
    again = _run_mask(fn, ids, special, vocab_size, mask_id, p, torch.Generator().manual_seed(seed))
    if not (torch.equal(again[0], inputs) and torch.equal(again[1], labels)):
        fail("two calls with generators in the same state gave different results: every random draw "
             "(choice, split and random words) must use the `generator` argument "
             "(torch.rand(..., generator=generator)), not the global random state.")


# --- MLMHead ----------------------------------------------------------------------------------
HEAD_CASES = [(23, 8, 0), (40, 12, 1)]   # (V, d, seed)
BIAS_VALUES = 4                          # values for up to this many (V,) parameters: a head may hold several


def mlm_head(cls, cases: Sequence | None = None) -> None:
    """Build `cls(embedding)` and compare it with LN(GELU(Linear(h))) @ E.T + bias."""
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        fail(f"this check takes your class itself, e.g. check.mlm_head(MLMHead); you passed a "
             f"{type(cls).__name__}. MLMHead must be an nn.Module subclass.")
    cases = HEAD_CASES if cases is None else cases
    for V, d, seed in cases:
        _check_head(cls, V, d, seed)
    passed("MLMHead", len(cases))


def _head_inputs(V: int, d: int, seed: int) -> tuple:
    """The grader's inputs for one case: the embedding matrix E (what nn.Embedding(V, d) holds after
    torch.manual_seed(seed)), the weights to load (values far from the defaults, so every part shows),
    hidden states h, the gradient of the logits for backward, and the embedding's second values E2."""
    E = torch.randn(V, d, generator=torch.Generator().manual_seed(seed))
    g = torch.Generator().manual_seed(seed + 100)
    dense_weight = torch.randn(d, d, generator=g) * 0.5
    dense_bias = torch.randn(d, generator=g) * 0.5
    norm_bias = torch.randn(d, generator=g) * 0.5
    first_bias = torch.randn(V, generator=g) * 0.5
    norm_weight = 1 + torch.randn(d, generator=g) * 0.3
    h = torch.randn(2, 3, d, generator=g)
    up = torch.randn(2, 3, V, generator=g)
    E2 = torch.randn(V, d, generator=g)
    biases = [first_bias] + [torch.randn(V, generator=g) * 0.5 for _ in range(BIAS_VALUES - 1)]
    weights = {"dense.weight": dense_weight, "dense.bias": dense_bias, "norm.weight": norm_weight,
               "norm.bias": norm_bias, "biases": biases}
    return E, weights, h, up, E2


def _build_head(cls, seed: int, E: torch.Tensor, weights: dict) -> tuple:
    """Driver step: `cls(embedding)` on an embedding holding E, what its structure is, and (when the
    structure is right) `weights` loaded into it. Returns (embedding, head, facts)."""
    V, d = E.shape
    torch.manual_seed(seed)                # the head's own initialisation, as in the notebook
    emb = nn.Embedding(V, d)
    with torch.no_grad():
        emb.weight.copy_(E)
    head = call(cls, "MLMHead", emb)
    params = list(head.parameters())
    linears = [m for m in head.modules() if isinstance(m, nn.Linear) and (m.in_features, m.out_features) == (d, d)]
    norms = [m for m in head.modules() if isinstance(m, nn.LayerNorm) and tuple(m.normalized_shape) == (d,)]
    biases = [p for p in params if tuple(p.shape) == (V,)]
    facts = {
        "changed_embedding": not torch.equal(emb.weight.detach(), E),
        "tied": any(p is emb.weight for p in params),
        "copy": any(p is not emb.weight and tuple(p.shape) == (V, d) and torch.equal(p.detach(), E)
                    for p in params),
        "linears": len(linears), "norms": len(norms), "biases": len(biases), "loaded": False,
    }
    if facts["changed_embedding"] or not facts["tied"] or len(linears) != 1 or len(norms) != 1 or not biases:
        return emb, head, facts
    lin, ln = linears[0], norms[0]
    values = weights["biases"]
    with torch.no_grad():
        lin.weight.copy_(weights["dense.weight"])
        if lin.bias is not None:
            lin.bias.copy_(weights["dense.bias"])
        if ln.bias is not None:
            ln.bias.copy_(weights["norm.bias"])
        for i, p in enumerate(biases):
            p.copy_(values[i % len(values)])
        if ln.weight is not None:
            ln.weight.copy_(weights["norm.weight"])
    facts.update(loaded=True, dense_bias=lin.bias is not None, norm_weight=ln.weight is not None,
                 norm_bias=ln.bias is not None, eps=float(ln.eps))
    return emb, head, facts


def _plain(value):
    """A forward's output as data: a tensor's values (detached copy), anything else as it is."""
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def drive_head_logits(cls, seed: int, E: torch.Tensor, weights: dict, h: torch.Tensor, E2) -> dict:
    """Build the head on an embedding holding E, load `weights`, run it on h; then, if E2 is given,
    give the embedding the values E2 in place and run it on h again. Returns the structure's facts
    and the logits ("logits", "after_swap")."""
    h = h.clone()
    emb, head, facts = _build_head(cls, seed, E.clone(), weights)
    if not facts["loaded"]:
        return facts
    facts["logits"] = _plain(call(head, "MLMHead.forward", h))
    if E2 is not None:
        with torch.no_grad():
            emb.weight.copy_(E2)
            facts["after_swap"] = _plain(call(head, "MLMHead.forward", h))
    return facts


def drive_head_gradient(cls, seed: int, E: torch.Tensor, weights: dict, h: torch.Tensor,
                        up: torch.Tensor) -> dict:
    """Build and load the head as drive_head_logits does, back-propagate sum(head(h) * up), and return
    the structure's facts and the gradient that reached the embedding's weight ("embedding_grad",
    None when none did)."""
    h, up = h.clone(), up.clone()
    emb, head, facts = _build_head(cls, seed, E.clone(), weights)
    if not facts["loaded"]:
        return facts
    out = call(head, "MLMHead.forward", h)
    if isinstance(out, torch.Tensor) and out.requires_grad:
        (out * up).sum().backward()
    grad = emb.weight.grad
    facts["embedding_grad"] = None if grad is None else grad.detach().clone()
    return facts


def _judge_structure(facts: dict, V: int, d: int, where: str) -> None:
    if facts["changed_embedding"]:
        fail("MLMHead changed the values of the embedding it was given; it must reuse them as they are.")
    if not facts["tied"]:
        if facts["copy"]:
            fail("your output projection is a copy (clone) of embedding.weight, not tied to it: a copy "
                 "drifts apart as soon as training updates one of them. Use the same Parameter object, "
                 "e.g. self.decoder.weight = embedding.weight, or keep the embedding and use its weight.")
        fail("no parameter of MLMHead is embedding.weight itself: the projection to the vocabulary must "
             "be tied to the embedding (the same Parameter object, not a copy or a new matrix).")
    if facts["linears"] != 1:
        fail(f"MLMHead should hold exactly one nn.Linear(d, d), the transform's dense layer; found {facts['linears']}{where}.")
    if facts["norms"] != 1:
        fail(f"MLMHead should hold exactly one nn.LayerNorm(d); found {facts['norms']}{where}.")
    if not facts["biases"]:
        fail(f"MLMHead has no output bias: it needs its own parameter of shape (V,) = ({V},), added to "
             "the logits (the tied embedding gives the weight, not the bias).")


def _check_head(cls, V: int, d: int, seed: int) -> None:
    where = f" (embedding of V={V} words, d={d})"
    E, weights, h, up, E2 = _head_inputs(V, d, seed)
    got = drive(drive_head_logits, cls, seed, E, weights, h, E2)
    _judge_structure(got, V, d, where)
    out = require_tensor(got["logits"], "MLMHead(h)", (2, 3, V),
                         meaning=f": logits (…, V) for h of shape (2, 3, {d}){where}")
    biases = weights["biases"][:min(got["biases"], BIAS_VALUES)]
    with torch.no_grad():
        z = F.linear(h, weights["dense.weight"], weights["dense.bias"] if got["dense_bias"] else None)
        gamma = weights["norm.weight"] if got["norm_weight"] else None
        beta = weights["norm.bias"] if got["norm_bias"] else None
        norm = lambda x: F.layer_norm(x, (d,), gamma, beta, got["eps"])
        t = norm(F.gelu(z))
        right = t @ E.T
        candidates = [right + b for b in biases]
        matched = [i for i, c in enumerate(candidates) if torch.allclose(out, c, atol=1e-5, rtol=1e-5)]
        if not matched:
            b = biases[0]
            variants = [
                (norm(F.gelu(z)) @ E.T, "you never add the output bias to the logits"),
                (F.gelu(norm(z)) @ E.T + b, "LayerNorm comes before GELU in your transform; the order "
                                            "is Linear → GELU → LayerNorm"),
                (norm(z) @ E.T + b, "your transform has no GELU between the Linear and the LayerNorm"),
                (F.gelu(z) @ E.T + b, "your transform has no LayerNorm after GELU"),
                (norm(torch.relu(z)) @ E.T + b, "you used ReLU where the transform has GELU"),
                (norm(F.gelu(z, approximate="tanh")) @ E.T + b,
                 "you used the tanh approximation of GELU; use the exact GELU (nn.GELU())"),
                (h @ E.T + b, "you skipped the transform: logits must come from LN(GELU(Linear(h)))"),
                ((norm(F.gelu(z)) @ E.T).softmax(-1), "you return probabilities; return raw logits"),
                ((norm(F.gelu(z)) @ E.T + b).softmax(-1), "you return probabilities (softmax); return raw logits"),
                ((norm(F.gelu(z)) @ E.T + b).log_softmax(-1), "you return log-probabilities; return raw logits"),
            ]
            for value, message in variants:
                if torch.allclose(out, value, atol=1e-5, rtol=1e-5):
                    fail(f"MLMHead's logits are wrong{where}: {message}.")
            fail(f"MLMHead's logits differ from LayerNorm(GELU(Linear(h))) @ E.T + bias{where} "
                 f"(largest difference {(out - right - b).abs().max().item():.3g}).")
        bias = biases[matched[0]]
    flat = drive(drive_head_logits, cls, seed, E, weights, h[0], None)
    _judge_structure(flat, V, d, where)
    require_tensor(flat["logits"], "MLMHead(h)", (3, V), meaning=f": logits (…, V) for h of shape (3, {d})")
    grad = drive(drive_head_gradient, cls, seed, E, weights, h, up)
    _judge_structure(grad, V, d, where)
    E_grad = grad["embedding_grad"]
    if E_grad is None or not bool(E_grad.abs().sum() > 0):
        fail("no gradient reaches embedding.weight through MLMHead: the projection uses a copy or a "
             "detached tensor, not the tied Parameter. Training would update the two matrices apart.")
    expected_grad = up.reshape(-1, V).T @ t.reshape(-1, d)      # d(sum(logits * up)) / dE
    if tuple(E_grad.shape) != (V, d) or not torch.allclose(E_grad.float(), expected_grad, atol=1e-4, rtol=1e-4):
        fail("the gradient that reaches embedding.weight through MLMHead is not the one its logits "
             f"LayerNorm(GELU(Linear(h))) @ E.T + bias give{where}: the projection must use "
             "embedding.weight itself, through differentiable operations only.")
    moved = require_tensor(got["after_swap"], "MLMHead(h)", (2, 3, V),
                           meaning=f": logits (…, V) for h of shape (2, 3, {d}){where}")
    if torch.allclose(moved, out, atol=1e-4):
        fail("changing embedding.weight does not change MLMHead's logits: the projection is a copy, "
             "not tied to the embedding.")
    with torch.no_grad():
        expected = t @ E2.T + bias
    if not torch.allclose(moved, expected, atol=1e-5, rtol=1e-5):
        fail("after embedding.weight was given new values in place, MLMHead's logits are not "
             f"LayerNorm(GELU(Linear(h))) @ E.T + bias with the new E{where} (largest difference "
             f"{(moved - expected).abs().max().item():.3g}): the projection must read the embedding's "
             "current values at every forward, as a tied weight does.")


# --- mlm_loss ---------------------------------------------------------------------------------
L2, L3, L5, L8 = (math.log(x) for x in (2, 3, 5, 8))
# (logits, labels, expected) by hand: with logits [ln 3, 0, 0, 0] the true class 0 has probability
# 3/6, a loss of ln 2; with [ln 5, 0, 0, 0] class 1 has probability 1/8, a loss of ln 8.
LOSS_CASES = [
    ([[L3, 0, 0, 0], [0, 0, 0, 10.0], [L5, 0, 0, 0]], [0, -100, 1], (L2 + L8) / 2),
    ([[[L3, 0, 0, 0], [0, 0, 0, 10.0]], [[0, 4.0, 0, 0], [L5, 0, 0, 0]]], [[0, -100], [-100, 1]], (L2 + L8) / 2),
    ([[[0.0, 0, 0, 0], [L3, 0, 0, 0], [0, 0, 0, -7.0]]], [[2, -100, -100]], math.log(4)),
]


def mlm_loss(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(logits, labels)` and name the mistake if the loss is wrong."""
    require_function(fn, "mlm_loss")
    cases = LOSS_CASES if cases is None else cases
    for logits, labels, expected in cases:
        logits = torch.as_tensor(logits, dtype=torch.float32).requires_grad_(True)
        labels = torch.as_tensor(labels, dtype=torch.long)
        labels_before = labels.clone()
        where = f" for logits of shape {tuple(logits.shape)} and labels {labels.tolist()}"
        try:
            out = call_raw(fn, "mlm_loss", logits, labels)
        except GraderError:                # the recording and the replay disagree: the course's bug
            raise
        except NotImplementedError:
            raise NotImplementedError("mlm_loss is not written yet: replace `raise NotImplementedError()` "
                                      "with your code.") from None
        except Exception as err:
            hint = (" F.cross_entropy wants the classes in dimension 1: flatten logits to (-1, V) and "
                    "labels to (-1,)." if logits.dim() == 3 else "")
            raise CheckFailed(f"mlm_loss raised {type(err).__name__}{where}: {err}.{hint}") from err
        if not torch.equal(labels, labels_before):
            fail("mlm_loss modified the caller's labels in place; leave them as they are.")
        value = require_loss(out, "mlm_loss", ": a single number, the mean over chosen positions")
        if math.isclose(value, expected, abs_tol=1e-4):
            continue
        _diagnose_loss(value, logits.detach(), labels, expected, where)
    passed("mlm_loss", len(cases))


def _diagnose_loss(value, logits, labels, expected, where):
    V = logits.shape[-1]
    flat, target = logits.reshape(-1, V), labels.reshape(-1)
    keep = target != -100
    each = F.cross_entropy(flat, target.clamp(min=0), reduction="none")
    variants = [
        (each[keep].sum() / target.numel(), "you averaged over every position, the unchosen ones "
         "(label −100) included; divide by the number of chosen positions only"),
        (each.mean(), "you computed the loss at every position, treating label −100 as a word; "
         "only positions whose label is not −100 count"),
        (each[keep].sum(), "you summed the losses; mlm_loss is the mean over the chosen positions"),
        (F.cross_entropy(flat[keep].softmax(-1), target[keep]), "you applied softmax before "
         "cross-entropy, which applies its own log-softmax: pass the raw logits"),
        (F.nll_loss(flat[keep], target[keep]), "you used nll_loss on raw logits; it expects "
         "log-probabilities (use F.cross_entropy)"),
    ]
    for v, message in variants:
        if math.isclose(value, float(v), abs_tol=1e-4):
            fail(f"mlm_loss returned {value:.4f}{where}, expected {expected:.4f}: {message}.")
    fail(f"mlm_loss returned {value:.4f}{where}; expected {expected:.4f}, the mean cross-entropy over "
         "the positions whose label is not −100.")


# --- tying_savings ------------------------------------------------------------------------------
# Sizes where the usual wrong counts all differ from V·d and from each other.
SAVINGS_CASES = [((30522, 768), 23_440_896), ((222, 64), 14_208), ((10, 3), 30)]


def tying_savings(fn: Callable, cases: Sequence | None = None) -> None:
    """Run `fn(V, d)` and name the mistake if the count is wrong."""
    require_function(fn, "tying_savings")
    cases = SAVINGS_CASES if cases is None else cases
    for (V, d), expected in cases:
        out = call(fn, "tying_savings", V, d)
        where = f" for V={V}, d={d}"
        if isinstance(out, bool) or not isinstance(out, int):
            hint = " (the value is right: convert it with int(...))" if out == expected else ""
            fail(f"tying_savings returned a {type(out).__name__}{where}; return a Python int{hint}.")
        if out == expected:
            continue
        transform = d * d + d + 2 * d                   # Linear(d, d) and LayerNorm(d): kept either way
        mistakes = [
            (2 * V * d, "2·V·d: tying removes ONE V × d matrix (the output projection); the embedding "
                        "matrix is still there, now doing both jobs"),
            (V * d + V, "V·d + V: the output bias is not shared, the head keeps its own (V,) bias, so "
                        "only the V × d weight is saved"),
            (V * d + transform + V, "every parameter of an untied head: tying removes only its V × d "
                                    "output matrix; the transform and the bias stay"),
            (V * d + d * d + d, "the transform's Linear(d, d) is kept; only the V × d projection is saved"),
            (V + d, "V + d: you added the two sizes, but a V × d matrix has V rows of d numbers each"),
            (V, "V, one number per word: that is the size of the output bias, which tying keeps"),
            (d * d + d, "d·d + d, the transform's Linear(d, d): tying keeps it"),
            (d * d, "d·d, the size of the transform's square matrix: tying keeps it"),
            (d, "d, the length of one embedding row: the saved matrix has one such row per word"),
        ]
        for value, message in mistakes:
            if out == value:
                fail(f"tying_savings returned {out}{where}, {message}.")
        fail(f"tying_savings returned {out}{where}; count what the untied head owns that the tied one "
             "does not (compare the two parameter counts measured in the notebook).")
    passed("tying_savings", len(cases))


__all__ = ["NUM_SPECIAL", "mask_tokens", "mlm_head", "mlm_loss", "tying_savings", "synthetic_batch",
           "CheckFailed"]
