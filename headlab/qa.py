"""Extractive QA examples as tensors: `[CLS] question [SEP] passage [SEP]`, right-padded.

The tokenizer is word-level, so token positions and words correspond one to one. A `QABatch` keeps
each row's words, which maps any predicted pair of token positions (i, j) back to text, and says
where each passage begins, so that answers can be compared in passage word indices too.

This module only encodes data and decodes positions, and gives a learner's span head the lesson's
initial scorers (`lesson_span_head`); choosing a span is the lesson's exercise.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

import torch

from .data import QA_RELATIONS, QAExample
from .tokenizer import CLS, PAD, SEP, WordTokenizer, pad


@dataclass
class QABatch:
    ids: torch.Tensor  # (B, n) long
    attention_mask: torch.Tensor  # (B, n) bool, True on real tokens (specials included)
    allowed: torch.Tensor  # (B, n) bool, True on passage tokens only
    start: torch.Tensor  # (B,) long, token position of the answer's first word
    end: torch.Tensor  # (B,) long, token position of the answer's last word (inclusive)
    passage_offset: torch.Tensor  # (B,) long, token position of the passage's first word
    words: list[list[str]]  # per row, the word at every position ([PAD] included)
    examples: list[QAExample]

    def __len__(self) -> int:
        return self.ids.shape[0]

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.ids.shape)

    def select(self, rows: Sequence[int] | torch.Tensor) -> "QABatch":
        """The sub-batch of `rows` (same padded length n)."""
        rows = torch.as_tensor(rows, dtype=torch.long)
        idx = rows.tolist()
        return QABatch(self.ids[rows], self.attention_mask[rows], self.allowed[rows], self.start[rows],
                       self.end[rows], self.passage_offset[rows], [self.words[r] for r in idx],
                       [self.examples[r] for r in idx])

    def span_words(self, b: int, i: int, j: int) -> list[str]:
        """The words at token positions i … j (inclusive) of row b; empty when j < i."""
        i, j = int(i), int(j)
        if j < i:
            return []
        return self.words[b][i:j + 1]

    def span_text(self, b: int, i: int, j: int) -> str:
        """The text at token positions i … j (inclusive) of row b, whatever part of the input it is."""
        return " ".join(self.span_words(b, i, j))

    def texts(self, spans: torch.Tensor) -> list[str]:
        """One text per row from a (B, 2) tensor of (i, j) token positions."""
        spans = torch.as_tensor(spans)
        if spans.shape != (len(self), 2):
            raise ValueError(f"spans must have shape ({len(self)}, 2), got {tuple(spans.shape)}")
        return [self.span_text(b, i, j) for b, (i, j) in enumerate(spans.tolist())]

    def to_passage_words(self, b: int, i: int, j: int) -> tuple[int, int] | None:
        """(start, end) word indices in row b's passage for token positions i … j, or None when the
        span is empty or reaches outside the passage (into the question, a special token or padding)."""
        i, j = int(i), int(j)
        if j < i or not (bool(self.allowed[b, i]) and bool(self.allowed[b, j])):
            return None
        if not bool(self.allowed[b, i:j + 1].all()):
            return None
        offset = int(self.passage_offset[b])
        return i - offset, j - offset


def in_passage(text: str, passage: str) -> bool:
    """True when `text` is a non-empty run of whole words of `passage`."""
    words = text.split()
    return bool(words) and f" {' '.join(words)} " in f" {passage} "


def passage_facts(passage: str) -> list[tuple[str, str, str]]:
    """The facts of a toy passage as (person, relation, answer), in order (relations of `QA_RELATIONS`)."""
    out = []
    for fact in passage.split(" . "):
        words = fact.strip(" .").split()
        for relation, (template, _, _) in QA_RELATIONS.items():
            link = template.split()[1:template.split().index("{a}")]      # e.g. ["lives", "in"]
            if words[1:1 + len(link)] == link:
                out.append((words[0], relation, " ".join(words[1 + len(link):])))
    return out


def question_relation(question: str) -> str:
    """Which relation of `QA_RELATIONS` a toy question asks about, read from its words, not its name."""
    words = question.split()
    for relation, (_, template, _) in QA_RELATIONS.items():
        shape = template.split()
        if len(shape) == len(words) and all(t == "{p}" or t == w for t, w in zip(shape, words)):
            return relation
    raise ValueError(f"not a question of the toy set: {question!r}")


def type_only_answer(example: QAExample) -> str:
    """A reader that ignores the name in the question: the answer of the first fact of the relation asked."""
    relation = question_relation(example.question)
    return next(answer for _, r, answer in passage_facts(example.passage) if r == relation)


def qa_batch(tok: WordTokenizer, examples: Sequence[QAExample], pad_to: int | None = None) -> QABatch:
    """Encode QA examples as `[CLS] question [SEP] passage [SEP]`, right-padded to the longest row
    (or to `pad_to`). `allowed` marks the passage words; `start`/`end` are the answer's token positions."""
    examples = list(examples)
    if not examples:
        raise ValueError("qa_batch needs at least one example")
    rows = []
    for ex in examples:
        q, p = ex.question.split(), ex.passage.split()
        if not 0 <= ex.answer_start <= ex.answer_end < len(p):
            raise ValueError(f"answer words {ex.answer_start}…{ex.answer_end} are outside the passage "
                             f"of {len(p)} words: {ex.passage!r}")
        if " ".join(p[ex.answer_start:ex.answer_end + 1]) != " ".join(ex.answer.split()):
            raise ValueError(f"answer {ex.answer!r} is not at words {ex.answer_start}…{ex.answer_end} "
                             f"of {ex.passage!r}")
        rows.append([CLS, *q, SEP, *p, SEP])
    ids, attention_mask = pad([[tok.stoi.get(w, tok.unk_id) for w in row] for row in rows], tok.pad_id,
                              pad_to=pad_to)  # (B, n) each, right-padded
    B, n = ids.shape
    allowed = torch.zeros(B, n, dtype=torch.bool)
    start = torch.empty(B, dtype=torch.long)
    end = torch.empty(B, dtype=torch.long)
    offsets = torch.empty(B, dtype=torch.long)
    words = []
    for b, (ex, row) in enumerate(zip(examples, rows)):
        offset = len(ex.question.split()) + 2  # [CLS] question [SEP]
        n_passage = len(ex.passage.split())
        allowed[b, offset:offset + n_passage] = True
        start[b] = offset + ex.answer_start
        end[b] = offset + ex.answer_end
        offsets[b] = offset
        words.append(row + [PAD] * (n - len(row)))
    return QABatch(ids, attention_mask, allowed, start, end, offsets, words, examples)


__all__ = ["QABatch", "qa_batch", "in_passage", "passage_facts", "question_relation", "type_only_answer"]


def lesson_span_head(cls, d: int) -> torch.nn.Module:
    """`cls(d)` (the learner's SpanHead) with the lesson's initial scorers, whatever its layout: those of an
    `nn.Linear(d, 2)` built now from the global generator, row 0 the start scorer and row 1 the end scorer; the
    generator is left as if only that Linear had been built. So every correct head (one Linear(d, 2), two
    Linear(d, 1), two vectors drawn or zeroed, with or without dropout) starts and trains alike, and the solution's
    numbers are those of its own `nn.Linear(d, 2)`. A head whose layout it cannot read keeps its own values."""
    reference = torch.nn.Linear(d, 2)
    after = torch.get_rng_state()
    head = cls(d)
    torch.set_rng_state(after)
    if not load_span_scorers(head, reference.weight.detach(), reference.bias.detach()):
        warnings.warn("the lesson could not give your SpanHead its initial scorers (a layout it cannot read): your "
                      "head keeps its own, so the numbers below may differ from the text's", stacklevel=2)
    return head


def load_span_scorers(head: torch.nn.Module, weight: torch.Tensor, bias: torch.Tensor) -> bool:
    """Give `head` the scorers start = H @ weight[0] + bias[0], end = H @ weight[1] + bias[1] through its
    state_dict, by shape: a (2, d) entry (or (d, 2), or a convolution's (2, d, 1)) takes `weight`, a (2,) one `bias`;
    entries of d numbers take weight's rows in turn, single numbers bias's. Verified on probes (in eval mode; a scorer
    without a bias is the same up to a constant, which no softmax over positions sees); tried with the scorers in the
    other order if not (a head whose first output is its end);
    returns whether it worked, and otherwise leaves the head as it was."""
    d = weight.shape[1]
    held = {name: t for name, t in head.state_dict().items() if t.is_floating_point()}
    before = {name: t.clone() for name, t in held.items()}
    probes = torch.cat([torch.zeros(1, d), torch.eye(d)])[None]            # (1, d + 1, d): 0, e_1, …, e_d
    training = head.training
    for order in ((0, 1), (1, 0)):
        rows, singles, state = iter(order), iter(order), {}
        w, b = weight[list(order)], bias[list(order)]                       # the scorers in this order
        for name, t in held.items():
            if t.numel() == 2 * d and t.shape[0] == 2:                      # (2, d), or a Conv1d's (2, d, 1)
                state[name] = w.reshape(t.shape)
            elif t.numel() == 2 * d and tuple(t.shape[:2]) == (d, 2):       # stored (in, out)
                state[name] = w.T.reshape(t.shape)
            elif tuple(t.shape) == (2,) and d != 2:
                state[name] = b
            elif t.numel() == d:
                k = next(rows, None)
                if k is not None:
                    state[name] = weight[k].reshape(t.shape)
            elif t.numel() == 1:
                k = next(singles, None)
                if k is not None:
                    state[name] = bias[k].reshape(t.shape)
        head.load_state_dict({**before, **state}, strict=False)
        head.eval()
        try:
            with torch.no_grad():
                start, end = head(probes)
            ok = all(torch.allclose((s[0, 1:] - s[0, 0]).float(), w, atol=1e-5)
                     for s, w in ((start, weight[0]), (end, weight[1])))
        except Exception:                                                    # a layout this cannot read
            ok = False
        head.train(training)
        if ok:
            return True
    head.load_state_dict(before, strict=False)
    return False
