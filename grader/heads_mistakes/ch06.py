"""What the mistakes of lesson 06's checks return (headlab/checks/ch06.py holds their words)."""
import torch

from headlab.checks.ch06 import last_real_index

from . import register, wrong


def _per_row(H, lengths) -> bool:
    """Whether `lengths` holds one length per row of H: a mistake below applies only then (given another value
    for it, `H[:, 0]` or `H[:, lengths - 1]` would be cls_pool's answer)."""
    return (isinstance(lengths, torch.Tensor) and tuple(lengths.shape) == (H.shape[0],)
            and not lengths.is_floating_point())


register("last_token_pool", [
    wrong("every-row-every-position", lambda H, lengths: H[:, lengths - 1] if _per_row(H, lengths) else None),
    wrong("last-tensor-position", lambda H, lengths: H[:, -1] if _per_row(H, lengths) else None),
    wrong("first-token", lambda H, lengths: H[:, 0] if _per_row(H, lengths) else None),
    wrong("mean-pooling", lambda H, lengths: torch.stack([H[b, :k].mean(0) for b, k in enumerate(lengths)])),
    wrong("mean-pooling", lambda H, lengths: H.mean(1)),
    wrong("one-too-many", lambda H, lengths: H[torch.arange(H.shape[0]), lengths] if _per_row(H, lengths) else None),
    wrong("last-tensor-position", lambda H, lengths: H[:, lengths.max() - 1] if _per_row(H, lengths) else None),
    # feature 0 of the right vectors, as gathered with a (B, 1, 1) index: (B, 1), then (B,)
    *[wrong("gather-index-shape", lambda H, lengths, k=k: H[torch.arange(H.shape[0]), lengths - 1, k]
            if _per_row(H, lengths) else None) for k in (slice(0, 1), 0)],
])


def _usual(m) -> dict:
    """What each usual mistake returns on the mask m. Counting is blamed only where it is what went wrong:
    with a hole (a row whose Trues come in more than one stretch) or a row starting with padding; where
    two others give the same numbers, the engine names neither and looks at the next case."""
    r, n = m.bool().long(), m.shape[1]
    count, first = r.sum(1), r.argmax(1)
    hole = bool(((r.diff(dim=1, prepend=0 * r[:, :1]) == 1).sum(1) > 1).any())
    left = bool((r[:, 0] == 0).any())
    flipped = r.flip(1).argmax(1)
    return {"counted-across-a-hole": first + count - 1 if hole else None,
            "count-assumes-right-padding": count - 1 if left else None,
            "first-true": first, "n-minus-length": n - count, "flipped-not-mapped-back": flipped,
            "count-as-index": count, "flip-off-by-one": n - flipped,
            "stopped-at-first-false": (1 - r).argmax(1) - 1 if hole or left else None,
            "last-tensor-position": None if r[:, -1].all() else torch.full_like(count, n - 1),
            "len-is-batch-size": len(r) - 1 - flipped if len(r) != n else None}


# one output per row of the kernel's table, found by its key
register("last_real_index", [wrong(m.key, lambda mask, key=m.key: _usual(mask)[key]) for m in last_real_index.mistakes])
