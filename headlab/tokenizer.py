"""A word-level tokenizer and padded batches.

Words are split on white space; every word the tokenizer was built from gets an id, anything else
becomes [UNK]. Five special tokens come first, so their ids are the same for every vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import torch

PAD, CLS, SEP, MASK, UNK = "[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"
SPECIAL_TOKENS = (PAD, CLS, SEP, MASK, UNK)


@dataclass
class Batch:
    """A padded batch. `attention_mask` is True on real tokens (specials included), False on padding."""

    ids: torch.Tensor  # (B, n) long
    attention_mask: torch.Tensor  # (B, n) bool
    lengths: torch.Tensor  # (B,) long, real tokens per row
    special_mask: torch.Tensor  # (B, n) bool, True on [CLS]/[SEP]/[PAD]
    padding_side: str

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.ids.shape)


class WordTokenizer:
    def __init__(self, words: Iterable[str]):
        vocab = list(SPECIAL_TOKENS)
        seen = set(vocab)
        for w in words:
            if w not in seen:
                seen.add(w)
                vocab.append(w)
        self.itos: list[str] = vocab
        self.stoi: dict[str, int] = {w: i for i, w in enumerate(vocab)}
        self.pad_id, self.cls_id, self.sep_id, self.mask_id, self.unk_id = range(5)

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> "WordTokenizer":
        # Sorted so the ids do not depend on the order the texts arrive in.
        return cls(sorted({w for t in texts for w in t.split()}))

    def __len__(self) -> int:
        return len(self.itos)

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    @property
    def special_ids(self) -> list[int]:
        return list(range(len(SPECIAL_TOKENS)))

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids = [self.stoi.get(w, self.unk_id) for w in text.split()]
        return [self.cls_id, *ids, self.sep_id] if add_special_tokens else ids

    def decode(self, ids: Sequence[int] | torch.Tensor, skip_special_tokens: bool = False) -> str:
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        skip = set(self.special_ids) - {self.unk_id} if skip_special_tokens else set()
        return " ".join(self.itos[i] for i in ids if i not in skip)

    def tokens(self, ids: Sequence[int] | torch.Tensor) -> list[str]:
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        return [self.itos[i] for i in ids]

    def batch(
        self,
        texts: Sequence[str],
        add_special_tokens: bool = False,
        padding_side: str = "right",
        pad_to: int | None = None,
        max_len: int | None = None,
        truncation_side: str = "right",
    ) -> Batch:
        """Encode and pad `texts` into one rectangle.

        `max_len` truncates each text (specials included) from `truncation_side`; `pad_to` pads every
        row to at least that many positions, to show that extra padding must not change a result.
        """
        if padding_side not in ("right", "left"):
            raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
        if truncation_side not in ("right", "left"):
            raise ValueError(f"truncation_side must be 'right' or 'left', got {truncation_side!r}")
        rows = [self.encode(t, add_special_tokens) for t in texts]
        if max_len is not None:
            rows = [_truncate(r, max_len, truncation_side, add_special_tokens) for r in rows]
        ids, real = pad(rows, self.pad_id, side=padding_side, pad_to=pad_to)  # (B, n) each
        special = ~real | (ids == self.cls_id) | (ids == self.sep_id)
        lengths = torch.tensor([len(r) for r in rows], dtype=torch.long)
        return Batch(ids, real, lengths, special, padding_side)

    def batch_with_labels(self, examples: Sequence, **options) -> tuple[Batch, torch.Tensor]:
        """Labelled examples (a `.text` and an integer `.label` each, as `data.ClassificationExample`)
        → (`self.batch` of their texts with `options`, labels (B,) long)."""
        batch = self.batch([e.text for e in examples], **options)
        return batch, torch.tensor([e.label for e in examples], dtype=torch.long)


def pad(rows: Sequence[Sequence[int]], pad_id: int, side: str = "right",
        pad_to: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of token ids of different lengths → one rectangle and its attention mask.

    Every row is padded with `pad_id` on `side` ("right" or "left") to the longest row's length, or to
    `pad_to` when that is longer (at least one position). Returns `ids` (B, n) long and
    `attention_mask` (B, n) bool, True on the rows' own ids and False on the padding.
    """
    if side not in ("right", "left"):
        raise ValueError(f"side must be 'right' or 'left', got {side!r}")
    n = max([len(r) for r in rows] + [pad_to or 0, 1])
    ids = torch.full((len(rows), n), pad_id, dtype=torch.long)  # (B, n)
    attention_mask = torch.zeros((len(rows), n), dtype=torch.bool)  # (B, n)
    for b, r in enumerate(rows):
        span = slice(0, len(r)) if side == "right" else slice(n - len(r), n)
        ids[b, span] = torch.as_tensor(r, dtype=torch.long)
        attention_mask[b, span] = True
    return ids, attention_mask


def _truncate(ids: list[int], max_len: int, side: str, has_specials: bool) -> list[int]:
    if len(ids) <= max_len:
        return ids
    if has_specials:  # keep [CLS] ... [SEP] around the kept words
        body = ids[1:-1]
        keep = max_len - 2
        body = body[:keep] if side == "right" else body[len(body) - keep:]
        return [ids[0], *body, ids[-1]]
    return ids[:max_len] if side == "right" else ids[len(ids) - max_len:]
