"""Checks for lesson 03: SequenceClassifier, head_param_count and untrained_loss."""
from __future__ import annotations

import math

import torch

from . import heads
from .core import CheckFailed, fail, passed, require_module_class
from .dropout import identity_on_top, train_pass
from .engine import Exercise, first_difference, inputs_as, judge_gradients, reference, show
from .shared import table


# --- SequenceClassifier ------------------------------------------------------------------------------
# Judged by behaviour, never against a reference head: the check loads its own W (K, d) and b (K,) into the
# head's state_dict (kernel.load). In eval mode the output must be x Wᵀ + b. In train mode the first d rows of W
# are the identity, so the first d logits minus b are what the Linear layer received: dropout's mask and scale.
CONTRACT = "its state_dict holds one (K, d) weight and one (K,) bias, which the check fills"


_eval = Exercise(
    "SequenceClassifier", shape=lambda x, W, b: (len(x),) if len(W) == 1 else (len(x), len(W)),   # judged only
    meaning=": (B, num_classes) logits, or (B,) when num_classes = 1",
    # got: what `.squeeze()` leaves of the (B, K) logits, for squeeze-drops-batch-axis
    fields=lambda x, W, b: {"B": len(x), "got": tuple(n for n in (len(x), len(W)) if n != 1)},
    where=lambda x, W, b: f" for SequenceClassifier({x.shape[1]}, {len(W)}) on a batch of {len(x)}",
    explain=lambda out, want, *xWb: f"in eval mode SequenceClassifier must return its Linear layer applied to "
    f"the input, x Wᵀ + b, and nothing more (dropout does nothing at inference){_eval.where(*xWb)}: {CONTRACT}, "
    f"and no other layer, activation or parameter may change its output. It returned {show(out)}, not "
    f"{show(want)}." + first_difference(out, want),
    mistakes=table([
        ("regression-b-by-1",
         "the regression head (num_classes = 1) returned shape (B, 1) = ({B}, 1){where}; it must return "
         "(B,) = ({B},), one number per example, to match targets of shape (B,): squeeze the last "
         "dimension (a (B, 1) output against (B,) targets broadcasts to (B, B) in MSE)."),
        ("squeeze-drops-batch-axis",
         "{name} returned shape {got}{where}: `.squeeze()` without an axis drops the batch axis too when "
         "the batch holds one example. Squeeze only the last axis, `.squeeze(-1)`, and only when "
         "num_classes = 1."),
        ("softmax-inside-head",
         "{name} returned probabilities (each row sums to 1){where}: softmax inside the head. A head "
         "returns raw logits (any real numbers, negative too); F.cross_entropy applies log-softmax "
         "itself, and a second softmax flattens the gradients."),
        ("log-softmax-inside-head",
         "{name} returned log-probabilities (log_softmax){where}. A head returns raw logits; "
         "F.cross_entropy normalises them itself."),
        ("no-bias", "{name} adds no bias{where}: its Linear layer "
         "has bias=False, so no (K,) bias was there to load. A head computes W c + b, with K·d weights and K "
         "biases."),
        ("sigmoid-output", "{name} applied a sigmoid{where}: it "
         "returns probabilities in (0, 1), not raw scores. Return the Linear layer's output as it is."),
        ("relu-on-logits", "{name} applied a ReLU to the logits"
         "{where}: negative scores became 0. A head returns raw logits, negative ones too."),
        # lesson 04's words: only "returned shape (B,)" before
        ("returns-label-ids", "{name} returned label ids (an argmax over the classes){where}. The head returns the raw "
         "logits, (B, num_classes); predictions take the argmax later."),
        ("tanh-on-logits", "{name} applied a tanh to the logits{where}: every score is squashed into (−1, 1). The "
         "tanh belongs to lesson 02's pooler, before the head; the head returns its Linear layer's output as it is."),
        # the regression head's (B,) made for every head: only "returned shape (B·K,)" before
        ("flattens-the-classes", "{name} returned the logits flattened into one axis{where}: `.view(-1)` (or "
         "`.flatten()`, `.reshape(-1)`) merges the batch and class axes when num_classes > 1. Only the regression "
         "head, num_classes = 1, drops its last axis.", "`.squeeze(-1)` when num_classes = 1; otherwise return the "
         "(B, num_classes) logits as they are."),
    ]),
)


DEFAULT_CASES = [(6, 3, 5), (4, 2, 7), (5, 1, 4), (3, 4, 1), (2, 1, 1)]   # (d, K, B): a batch of one too
# Train mode (d, K, dropout): the regression head (K = d = 1) has dropout too; None is the default rate.
TRAIN_CASES = [(4, 9, 0.5), (3, 6, 0.25), (4, 9, None), (1, 1, 0.5)]


def sequence_classifier(cls, cases=None, seed: int = 0) -> None:
    """Run heads `cls(d, K, dropout=...)` in eval mode on `cases` (d, K, batch) and in train mode; name any mistake."""
    require_module_class(cls, "SequenceClassifier", "sequence_classifier")
    g = torch.Generator().manual_seed(seed)
    cases = DEFAULT_CASES if cases is None else cases
    for d, K, B in cases:
        x, W = torch.randn(B, d, generator=g) * 3, torch.randn(K, d, generator=g) / math.sqrt(d)
        b, run_seed = _bias_and_seed(K, g)
        # torch's words for `nn.Linear(num_classes, d)` (raised-RuntimeError, "print the .shape", before)
        swapped = (f"({B}x{d} and {K}x{d})", f"nn.Linear takes (in_features, out_features): the head maps the d = {d} "
                   f"features of each example to K = {K} class scores, `nn.Linear(d, num_classes)`, and yours was "
                   "built the other way round.", "linear-sizes-swapped")
        # torch's words for `pooled[:, 0]` or `pooled.mean(1)`: B numbers, one per sequence, reached the Linear layer
        indexed = (f"(1x{B} and {d}x{K})", f"SequenceClassifier.forward receives pooled, one vector per sequence, "
                   f"shape (B, d) = {(B, d)}, already pooled: do not index or pool it again.", "indexes-c-again")
        ran = heads.run(cls, "SequenceClassifier", "pooled", (d, K), run_seed, [x], [W, b], {"dropout": 0.5},
                        passes=2, step=True, crashes=[swapped, indexed])
        out, again = ran["outs"][0]
        differ = isinstance(out, torch.Tensor) and isinstance(again, torch.Tensor) and not torch.equal(out, again)
        heads.random_at_eval(differ, cls, ran, "SequenceClassifier", "pooled", _eval.where(x, W, b))
        # `nn.Linear(d, 1)` for K classes, binary cross-entropy's single logit: "returned shape (B, 1)" before
        if K > 1 and isinstance(out, torch.Tensor) and tuple(out.shape) == (B, 1):
            fail(f"SequenceClassifier({d}, {K}) returned one score per example, shape {tuple(out.shape)}: a "
                 f"classification head returns K = {K} logits per example, one per class, for F.cross_entropy (one "
                 "logit and a sigmoid is binary cross-entropy's form, not this head's). Only num_classes = 1, "
                 "regression, gives one number per example.", "one-logit-for-k-classes",
                 "Build the layer from the argument: `nn.Linear(d, num_classes)`.")
        _eval.judge(out, reference("SequenceClassifier", x, W, b), (x, W, b))
        judge_gradients(ran["gradients"], f"SequenceClassifier({d}, {K})", "pooled", x, "SequenceClassifier", run_seed,
                        [W, b])
    for d, K, p in TRAIN_CASES:
        x = torch.rand(2000, d, generator=g) + 1.0  # away from 0, so that a zero can only be dropout's
        W, (b, run_seed) = identity_on_top(d, K, g), _bias_and_seed(K, g)
        want = _eval.shape(x, W, b)
        train_pass(cls, "SequenceClassifier", "pooled", x, W, b, p, run_seed, want, f"{want} logits")
    passed("SequenceClassifier", len(cases) + len(TRAIN_CASES))


def _bias_and_seed(K: int, g: torch.Generator) -> tuple[torch.Tensor, int]:
    """A fresh bias to load and a seed for the head's own draws."""
    return torch.randn(K, generator=g), int(torch.randint(0, 2**31 - 1, (1,), generator=g))


# --- head_param_count and untrained_loss: Python numbers --------------------------------------------
# The diagnosis names what a Linear(d, K) holds; the count itself, the exercise's answer, is the fix (core.shown).
_SUM = "The head has one weight per (class, feature) pair and one bias per class."
_COUNT = "K·d weights and K biases: K·d + K."
head_param_count = Exercise(
    "head_param_count", returns=int, atol=0.25, read=inputs_as(None, None, None),
    cases=[(64, 2, 130), (768, 2, 1538), (256, 7, 1799), (3, 1, 4)],  # (d, K, K·d + K) by hand
    where=lambda d, K: f" for d={d}, K={K}", fields=lambda d, K: {"d": d, "K": K},
    explain=lambda out, want, d, K: (f"head_param_count returned {out} for d={d}, K={K}; expected {want}. {_SUM}",
                                     _COUNT),
    mistakes=table([
        ("forgets-the-bias", "K·d{where}: the bias is left out. " + _SUM),
        ("one-row-and-column-too-many",
         "(d + 1)·(K + 1){where}: one row and one column too many. The weight matrix has one row per class (K = {K}) "
         "and one column per input feature (d = {d}), and the bias one entry per class."),
        ("one-bias-per-feature", "K·d + d{where}: the bias has one entry per class (K = {K}), not one per feature "
         "(d = {d}). " + _SUM),
        ("shared-bias", "K·d + 1{where}: a single bias shared by all classes. " + _SUM),
        ("adds-the-sizes", "d + K{where}: the sizes are added, not multiplied. " + _SUM),
        ("square-matrix", "d·d + K{where}: a d × d matrix; the head's is K × d. " + _SUM),
        ("square-matrix", "d·d + d{where}: a d × d matrix; the head's is K × d. " + _SUM),
        # BERT's pooler counted in: only "expected K·d + K" before
        ("counts-the-pooler", "d·d + d + K·d + K{where}: that counts BERT's pooler too, lesson 02's d × d dense layer "
         "and its d biases. The pooler belongs to the encoder's output; the head is the Linear layer alone. " + _SUM),
    ], says="{name} returned {out} = ", fix=_COUNT),
)

# As for head_param_count: the diagnosis gives the reasoning, the fix the formula that is the answer.
_LN = ("With K classes an untrained head gives each class about the same probability, and the loss is −ln of the "
       "true class's probability.")
_LN_K = "−ln(1/K) = ln K, the natural log: `math.log(K)`."
untrained_loss = Exercise(
    # 1e-5: ln K computed in float32 (an entropy of K equal probabilities) is off by about 1e-6 at K = 1000.
    "untrained_loss", returns=float, atol=1e-5, read=inputs_as(None, None),
    # (K, ln K) by hand. K = 2 comes last: there 1/K = 1 − 1/K, and a constant ln 2 is right.
    cases=[(5, 1.6094379124341003), (10, 2.302585092994046), (2, 0.6931471805599453)],
    where=lambda K: f" for K={K}",
    # `torch.log(K)` on the int K: torch's words alone (raised-TypeError) before
    hints=[(TypeError, lambda err, K: (
        "A torch function takes a tensor, and K is a Python int; the answer is a Python float too: the math module "
        "computes it from K as it is.", "torch-function-on-a-number", "`math.log(K)`.")
        if "must be Tensor, not" in str(err) else None)],
    explain=lambda out, want, K: (f"untrained_loss returned {out:.6f} for K={K}. {_LN} Here that is {want:.6f}.",
                                  _LN_K),
    mistakes=table([
        ("log-base-2", "log₂ K{where}: log base 2 (bits). Cross-entropy in PyTorch uses the natural log (nats)."),
        ("log-base-10", "log₁₀ K{where}: log base 10. Cross-entropy uses the natural log."),
        ("wrong-sign",
         "−ln K{where}: the sign is wrong. A loss is never negative: a probability is below 1, so its −ln is above 0."),
        ("probability-not-loss", "1/K{where}: that is the probability an untrained head gives each class, not the "
         "loss. The loss is −ln of that probability."),
        ("error-rate-not-loss", "1 − 1/K{where}: that is the error rate of a uniform guess, not its cross-entropy. "
         + _LN),
        ("ln-2-for-every-k", "ln 2{where}: the value for two classes only. " + _LN),
        ("ln-k-minus-1", "ln(K − 1){where}. " + _LN),
        ("one-term-of-the-sum", "ln(K)/K{where}: that is one class's term, −(1/K)·ln(1/K), of the uniform guess's "
         "entropy; the K terms summed give ln K. " + _LN),
        # `round(math.log(K), 4)`, a printed value's habit: only the ln K rule, with a value 4e-5 away, before
        *[("rounded-answer", "ln K rounded{where}: rounding is for printing. Return the value as computed, here "
           "{expected:.6f}: the check compares it with ln K to 1e-5.", "`math.log(K)`, not rounded.")] * 3,
        ("terms-without-their-weights", "K·ln K{where}: the K terms −ln(1/K) summed without their weights 1/K. The "
         "uniform guess's entropy weighs each class's −ln p by its probability p = 1/K, and the sum is ln K. " + _LN),
    ], says="{name} returned {out:.4f} = ", fix=_LN_K),
)

__all__ = ["sequence_classifier", "head_param_count", "untrained_loss", "CheckFailed"]
