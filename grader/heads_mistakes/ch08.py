"""What the mistakes of lesson 08's checks return (headlab/checks/ch08.py holds their words)."""
import torch
import torch.nn.functional as F

from headlab.checks.ch08 import IGNORE

from . import register, twist, wrong


# --- sentence_embedding ---------------------------------------------------------------------------
def _unit(z, dim=-1):
    return z / z.norm(dim=dim, keepdim=True).clamp(min=1e-12)


def _real(H, mask):
    return mask.bool()[:, :, None].to(H.dtype)   # (B, n, 1): 1 on real tokens, whatever the mask's dtype


def _mean_norms(H, mask):
    """(B, 1): the length of each row's mean over its real tokens. A mistake that keeps the mean's length is
    the right embedding E times it (a twist of E), so that no function here pools as the answer does."""
    return (H * _real(H, mask)).sum(1).norm(dim=-1, keepdim=True) / _real(H, mask).sum(1)


def _right_padded(mask) -> bool:
    """Whether every row's real tokens come first: there, averaging the first ℓ positions is right."""
    m = mask.bool()
    return bool((m == (torch.arange(m.shape[1])[None, :] < m.sum(1, keepdim=True))).all())


def _inner(mask):
    """(B, n): the real tokens of each row but its first and last, [CLS] and [SEP] (right or left padding)."""
    m, at = mask.bool(), torch.arange(mask.shape[1])[None, :]
    return m & (at > torch.where(m, at, mask.shape[1]).amin(1, keepdim=True)) & (at < torch.where(m, at, -1).amax(
        1, keepdim=True))


def _pooled(key, pool, raw=True):
    """A pooling mistake as it comes normalised and (with `raw`) not normalised. Each applies only to a (B, n) mask:
    given another value for it, a raw pooling could be lesson 02's answer (cls_pool is `H[:, 0]`). Max pooling has no
    raw form here: with the real mask it is max_pool's answer."""
    fits = lambda H, m: isinstance(m, torch.Tensor) and m.shape == H.shape[:2]  # noqa: E731
    return [wrong(key, lambda H, m: _unit(pool(H, m)) if fits(H, m) else None)] + [
        wrong(key, lambda H, m: pool(H, m) if fits(H, m) else None)] * raw


register("sentence_embedding", [
    wrong("integer-mask-as-index", lambda H, m: _unit(torch.stack([H[b][m[b]].mean(0) for b in range(len(H))]))),
    wrong("one-vector-per-token", lambda H, m: _unit(H * _real(H, m))),
    twist("keeps-position-axis", lambda E, H, m: E[:, None]),
    twist("not-normalised", lambda E, H, m: E * _mean_norms(H, m)),
    wrong("not-normalised", lambda H, m: (H * _real(H, m)).sum(1)),
    *_pooled("padding-in-mean", lambda H, m: H.mean(1)),
    *_pooled("padding-in-mean", lambda H, m: H.sum(1) / _real(H, m).sum(1)),
    *_pooled("cls-instead-of-mean", lambda H, m: H[:, 0]),
    twist("l1-norm", lambda E, H, m: F.normalize(E, p=1, dim=-1)),
    twist("normalised-over-batch", lambda E, H, m: _unit(E * _mean_norms(H, m), dim=0)),
    wrong("normalised-over-batch", lambda H, m: _unit(H.mean(1), dim=0)),
    *_pooled("normalised-tokens-before-mean", lambda H, m: (_unit(H) * _real(H, m)).sum(1) / _real(H, m).sum(1)),
    *_pooled("last-real-token", lambda H, m: H[torch.arange(len(H)), m.bool().sum(1) - 1]),
    *_pooled("max-pooling", lambda H, m: H.masked_fill(~m.bool()[:, :, None], float("-inf")).amax(1), raw=False),
    # it gives the right embedding on right-padded masks: a mistake only where a row is left-padded
    wrong("assumes-right-padding", lambda H, m: None if _right_padded(m) else _unit(torch.stack(
        [H[b, :int(k)].mean(0) for b, k in enumerate(m.bool().sum(1))]))),
    *_pooled("specials-left-out", lambda H, m: (H * _inner(m)[:, :, None]).sum(1) / _inner(m).sum(1, keepdim=True),
             raw=False),
    twist("norm-without-dim", lambda E, H, m: E * _mean_norms(H, m) / (E * _mean_norms(H, m)).norm()),
    twist("squared-norm", lambda E, H, m: E / _mean_norms(H, m)),   # z / ‖z‖² = (z / ‖z‖) / ‖z‖
    *_pooled("specials-left-out", lambda H, m: (H * _real(H, m))[:, 1:-1].sum(1) / _real(H, m)[:, 1:-1].sum(1),
             raw=False),
    # the padding's sum divided by its norm (nan in a row without padding), or normalised (0 there)
    wrong("inverted-mask", lambda H, m: (lambda z: z / z.norm(dim=-1, keepdim=True))((H * (1 - _real(H, m))).sum(1))),
    wrong("inverted-mask", lambda H, m: _unit((H * (1 - _real(H, m))).sum(1))),
])


# --- align_labels: each a rule of its own that never gives the right labels (it returns None where it would), or a
# twist of the right labels E, so that no function here aligns labels as the answer does --------------------------
def _first_pieces(word_ids) -> list[int]:
    return [i for i, w in enumerate(word_ids) if w is not None and (i == 0 or word_ids[i - 1] != w)]


def _ints(E) -> list:
    return E.tolist() if isinstance(E, torch.Tensor) else list(E)


def _on_last_piece(word_ids, word_labels) -> list | None:
    """Each word's label on its last piece; None where no word is split (there it is the right rule)."""
    last = [i for i, w in enumerate(word_ids) if w is not None and (i == len(word_ids) - 1 or word_ids[i + 1] != w)]
    if last == _first_pieces(word_ids):
        return None
    return [word_labels[w] if i in last else IGNORE for i, w in enumerate(word_ids)]


def _first_token_ignored(E, word_ids, continues: bool) -> list | None:
    """E with position 0 given -100, where `continues` (position 0 taken for a word's continuation) is what the
    mistake reads; None where position 0 holds no word or is not taken so."""
    return [IGNORE, *_ints(E)[1:]] if word_ids and word_ids[0] is not None and continues else None


def _by_count(word_ids, word_labels) -> list | None:
    """The k-th word met gets `word_labels[k]`; None while the word ids run 0, 1, 2, ... without a gap (there
    counting is right)."""
    firsts = _first_pieces(word_ids)
    if [word_ids[i] for i in firsts] == list(range(len(firsts))):
        return None
    at = {i: k for k, i in enumerate(firsts)}
    return [word_labels[at[i]] if i in at else IGNORE for i in range(len(word_ids))]


register("align_labels", [
    wrong("one-label-per-word", lambda w, l: list(l)),
    twist("labels-special-tokens", lambda E, w, l: [0 if x is None else e for x, e in zip(w, _ints(E))]),
    wrong("labels-every-piece", lambda w, l: [IGNORE if x is None else l[x] for x in w]),
    wrong("label-on-last-piece", _on_last_piece),
    twist("word-0-taken-for-special", lambda E, w, l: None if 0 not in w else
              [IGNORE if x == 0 else e for x, e in zip(w, _ints(E))]),
    twist("previous-starts-at-0", lambda E, w, l: _first_token_ignored(E, w, w[0] == 0)),
    twist("previous-wraps-around", lambda E, w, l: _first_token_ignored(E, w, w[-1] == w[0])),
    wrong("labels-by-word-count", _by_count),
    twist("skips-special-tokens", lambda E, w, l: [e for x, e in zip(w, _ints(E)) if x is not None]),
    twist("continuation-labelled-not-first", lambda E, w, l: [IGNORE if x is None or e != IGNORE else l[x]
                                                              for x, e in zip(w, _ints(E))]),
])

