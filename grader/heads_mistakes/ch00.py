"""What the mistakes of lesson 00's checks return (headlab/checks/ch00.py holds their words). Each is the right mask
E with its twist, or a constant mask."""
import torch

from headlab.checks.ch00 import ADDITIVE_FILLS

from . import register, twist, wrong

register("padding_mask", [
    twist("rows-and-columns-swapped", lambda E, lengths, n: E.T),
    twist("pads-to-longest", lambda E, lengths, n: E[:, :int(lengths.max())]),
    twist("inverted", lambda E, lengths, n: ~E),
    twist("left-padding", lambda E, lengths, n: E.flip(1)),
    # E with the position after each row's real tokens marked too (a row's first position always is)
    twist("one-too-many", lambda E, lengths, n: E | torch.cat([torch.ones_like(E[:, :1]), E[:, :-1]], dim=1)),
    # E without each row's last real position: a position stays marked only if the next one is
    twist("one-too-few", lambda E, lengths, n: E & torch.cat([E[:, 1:], torch.zeros_like(E[:, :1])], dim=1)),
    wrong("all-real", lambda lengths, n: torch.ones(len(lengths), n, dtype=torch.bool)),
    twist("batch-first-forgotten", lambda E, lengths, n: E[:, :int(lengths.max())].T),
    twist("attention-axes-added", lambda E, lengths, n: E[:, None, None, :]),
])

register("causal_mask", [
    *[twist("additive-float", lambda E, n, fill=fill: torch.zeros(n, n).masked_fill(~E, fill))
      for _, fill in ADDITIVE_FILLS],
    twist("sees-the-future", lambda E, n: E.T),
    twist("without-diagonal", lambda E, n: E & ~torch.eye(n, dtype=torch.bool)),
    twist("inverted", lambda E, n: ~E),
    wrong("bidirectional", lambda n: torch.ones(n, n, dtype=torch.bool)),
    # E with the key just after each query's own marked too (rolled past the end, the last row's is already marked)
    twist("sees-one-future-key", lambda E, n: E | torch.eye(n, dtype=torch.bool).roll(1, dims=1)),
    twist("attention-axes-added", lambda E, n: E[None, None]),
    twist("attention-axes-added", lambda E, n: E.float()[None, None]),
])
