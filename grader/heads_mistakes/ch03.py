"""What the mistakes of lesson 03's checks return (headlab/checks/ch03.py holds their words)."""
import math

import torch.nn.functional as F

from . import register, register_reference, twist, wrong


def _logits(x, W, b):
    """The right head under the grader's W and b: its Linear layer, squeezed to (B,) for a regression head."""
    return F.linear(x, W, b).squeeze(-1) if len(W) == 1 else F.linear(x, W, b)


register_reference("SequenceClassifier", _logits)

register("SequenceClassifier", [
    wrong("regression-b-by-1", lambda x, W, b: F.linear(x, W, b) if len(W) == 1 else None),
    wrong("squeeze-drops-batch-axis", lambda x, W, b: F.linear(x, W, b).squeeze() if len(x) == 1 else None),
    wrong("softmax-inside-head", lambda x, W, b: _logits(x, W, b).softmax(-1) if len(W) > 1 else None),
    wrong("log-softmax-inside-head", lambda x, W, b: _logits(x, W, b).log_softmax(-1) if len(W) > 1 else None),
    wrong("no-bias", lambda x, W, b: _logits(x, W, 0 * b)),
    wrong("sigmoid-output", lambda x, W, b: _logits(x, W, b).sigmoid()),
    wrong("relu-on-logits", lambda x, W, b: _logits(x, W, b).relu()),
    wrong("returns-label-ids", lambda x, W, b: _logits(x, W, b).argmax(-1) if len(W) > 1 else None),
    wrong("tanh-on-logits", lambda x, W, b: _logits(x, W, b).tanh()),
    # for a batch of one, flattening is `.squeeze()`'s squeeze-drops-batch-axis
    wrong("flattens-the-classes", lambda x, W, b: F.linear(x, W, b).reshape(-1) if len(W) > 1 < len(x) else None),
])

register("head_param_count", [
    # K·d, the count without the bias, is the right count less K (a twist): as a function of (d, K) it would be
    # tying_savings's answer, V·d.
    twist("forgets-the-bias", lambda E, d, K: E - K),
    wrong("one-row-and-column-too-many", lambda d, K: (d + 1) * (K + 1)),
    wrong("one-bias-per-feature", lambda d, K: K * d + d),
    wrong("shared-bias", lambda d, K: K * d + 1),
    wrong("adds-the-sizes", lambda d, K: d + K),
    wrong("square-matrix", lambda d, K: d * d + K),
    wrong("square-matrix", lambda d, K: d * d + d),
    wrong("counts-the-pooler", lambda d, K: d * d + d + K * d + K),
])

register("untrained_loss", [
    wrong("log-base-2", math.log2),
    wrong("log-base-10", math.log10),
    wrong("wrong-sign", lambda K: -math.log(K)),
    # At K = 2 these two give the same 0.5: neither is named there, as either could be the one made.
    wrong("probability-not-loss", lambda K: 1 / K if K != 2 else None),
    wrong("error-rate-not-loss", lambda K: 1 - 1 / K if K != 2 else None),
    wrong("ln-2-for-every-k", lambda K: math.log(2)),
    wrong("ln-k-minus-1", lambda K: math.log(K - 1)),
    wrong("one-term-of-the-sum", lambda K: math.log(K) / K),
    *[wrong("rounded-answer", lambda K, places=places: round(math.log(K), places)) for places in (2, 3, 4)],
    wrong("terms-without-their-weights", lambda K: K * math.log(K)),
])
