"""What the mistakes of lesson 01's checks return (headlab/checks/ch01.py holds their words)."""
from typing import Callable

import torch
import torch.nn.functional as F

from . import register, register_reference, twist, wrong


# --- MLMHead: from the right logits R (a twist of them, or unused) and the judge's inputs: h, the loaded W, v, b
# and the embedding's E -----------------------------------------------------------------------------------------
def _transform(h, W, v, act, dense_bias=True, norm_weight=True, norm_bias=True):
    """LN(act(h Wᵀ + v)), one vector v as the dense bias and the LayerNorm's weight and bias (each optional): the
    transform of a wrong head below."""
    z = F.linear(h, W, v if dense_bias else None)
    return F.layer_norm(act(z), (h.shape[-1],), v if norm_weight else None, v if norm_bias else None)


def _head(x, W, c, gain, shift, E, b, eps=1e-5):
    """The right MLM head, a weight and bias of its own per layer: LN(GELU(x Wᵀ + c)) @ Eᵀ + b (another `eps`: the
    layernorm-eps mistake)."""
    return F.layer_norm(F.gelu(F.linear(x, W, c)), (x.shape[-1],), gain, shift, eps) @ E.T + b


register_reference("MLMHead", _head)
# BERT's LayerNorm eps: its step is compared with the learner's (checks.ch01.mlm_head)
register_reference("MLMHead eps=1e-12", lambda *inputs: _head(*inputs, eps=1e-12))
# the projection-detached mistake: the tied embedding gets no gradient through the head
register_reference("MLMHead E detached", lambda x, W, c, gain, shift, E, b: _head(x, W, c, gain, shift, E.detach(), b))
register("MLMHead(h)", [twist(key, output) for key, output in [
    ("no-output-bias", lambda R, h, W, v, E, b: R - b),
    ("layernorm-before-gelu", lambda R, h, W, v, E, b: F.gelu(F.layer_norm(F.linear(h, W, v), (len(v),), v, v))
     @ E.T + b),
    ("layernorm-first", lambda R, h, W, v, E, b: F.gelu(F.linear(F.layer_norm(h, (len(v),), v, v), W, v)) @ E.T + b),
    ("no-gelu", lambda R, h, W, v, E, b: _transform(h, W, v, lambda z: z) @ E.T + b),
    ("no-layernorm", lambda R, h, W, v, E, b: F.gelu(F.linear(h, W, v)) @ E.T + b),
    ("relu-not-gelu", lambda R, h, W, v, E, b: _transform(h, W, v, torch.relu) @ E.T + b),
    ("tanh-gelu", lambda R, h, W, v, E, b: _transform(h, W, v, lambda z: F.gelu(z, approximate="tanh")) @ E.T + b),
    ("no-transform", lambda R, h, W, v, E, b: h @ E.T + b),
    ("dense-without-bias", lambda R, h, W, v, E, b: _transform(h, W, v, F.gelu, dense_bias=False) @ E.T + b),
    # without the LayerNorm's bias, then without its weight and bias (the kernel's two rows, in this order)
    *[("layernorm-without-affine", lambda R, h, W, v, E, b, w=w: _transform(h, W, v, F.gelu, norm_weight=w,
                                                                            norm_bias=False) @ E.T + b)
      for w in (False, True)],
    ("softmax-inside-head", lambda R, h, W, v, E, b: (R - b).softmax(-1)),
    ("softmax-inside-head", lambda R, h, W, v, E, b: R.softmax(-1)),
    ("log-softmax-inside-head", lambda R, h, W, v, E, b: R.log_softmax(-1)),
    ("layernorm-eps", lambda R, h, W, v, E, b: _head(h, W, v, v, v, E, b, eps=1e-12)),
]])


# --- mlm_loss: each written on flat logits x (N, V), targets y (N,) with −100 read as class 0, and the chosen rows --
def _flat(key: str, loss: Callable):
    def output(logits, labels):
        x, y = logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)
        return loss(x, y.clamp(min=0), y != -100)
    return wrong(key, output)


register("mlm_loss", [
    _flat("divides-by-all-positions", lambda x, y, keep: F.cross_entropy(x, y, reduction="none")[keep].sum() / len(y)),
    _flat("minus-100-as-class-0", lambda x, y, keep: F.cross_entropy(x, y)),
    _flat("sum-not-mean", lambda x, y, keep: F.cross_entropy(x[keep], y[keep], reduction="sum")),
    _flat("softmax-first", lambda x, y, keep: F.cross_entropy(x[keep].softmax(-1), y[keep])),
    _flat("nll-on-logits", lambda x, y, keep: F.nll_loss(x[keep], y[keep])),
    _flat("nll-on-probabilities", lambda x, y, keep: F.nll_loss(x[keep].softmax(-1), y[keep])),
    _flat("mean-divided-again", lambda x, y, keep: F.cross_entropy(x[keep], y[keep]) / keep.sum()),
    wrong("one-loss-per-example", lambda logits, labels: F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                                       labels.reshape(-1), reduction="none")),
    # len(labels): B of a batch (B, n, V), N of flat positions (N, V), where it is divides-by-all-positions' count
    wrong("divides-by-batch-size", lambda logits, labels: F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="sum") / len(labels)),
    _flat("label-smoothing", lambda x, y, keep: F.cross_entropy(x[keep], y[keep], label_smoothing=0.1)),
    # a loop over the sequences of a batch (B, n, V); flat positions (N, V) hold no sequence, so it does not apply
    wrong("mean-per-sentence", lambda logits, labels: torch.stack([F.cross_entropy(x, y) for x, y in zip(
        logits, labels)]).mean() if logits.dim() == 3 else None),
], right=lambda logits, labels: F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)))

register("tying_savings", [
    wrong("both-matrices", lambda V, d: 2 * V * d),
    wrong("bias-counted", lambda V, d: V * d + V),
    wrong("whole-untied-head", lambda V, d: V * d + d * d + 3 * d + V),
    wrong("linear-counted", lambda V, d: V * d + d * d + d),
    wrong("adds-the-sizes", lambda V, d: V + d),
    wrong("only-the-bias", lambda V, d: V),
    wrong("only-the-linear", lambda V, d: d * d + d),
    wrong("only-the-square", lambda V, d: d * d),
    wrong("one-row", lambda V, d: d),
])
