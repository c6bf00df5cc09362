"""A tiny transformer, bidirectional or causal, written from scratch.

Shapes: B batch, n positions, d model width, h heads, d_h = d / h.
Both models return hidden states H of shape (B, n, d): representations, not predictions.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn

from .qa import QABatch
from .tokenizer import Batch


@dataclass
class TinyConfig:
    vocab_size: int
    causal: bool
    max_len: int = 48
    d: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 128
    dropout: float = 0.0


class SelfAttention(nn.Module):
    def __init__(self, cfg: TinyConfig):
        super().__init__()
        assert cfg.d % cfg.n_heads == 0, "d must be a multiple of n_heads"
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.d, 3 * cfg.d)
        self.out = nn.Linear(cfg.d, cfg.d)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        # x: (B, n, d); allowed: (B, 1, n, n) bool, True where query i may attend to key j
        B, n, d = x.shape
        h = self.cfg.n_heads
        q, k, v = self.qkv(x).split(d, dim=-1)  # each (B, n, d)
        q, k, v = (t.view(B, n, h, d // h).transpose(1, 2) for t in (q, k, v))  # (B, h, n, d_h)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)  # (B, h, n, n)
        scores = scores.masked_fill(~allowed, float("-inf"))
        weights = self.drop(scores.softmax(dim=-1))  # each row sums to 1 over the allowed keys
        y = (weights @ v).transpose(1, 2).reshape(B, n, d)  # (B, n, d)
        return self.out(y)


class Block(nn.Module):
    """Pre-LayerNorm block: x + attention(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d)
        self.attn = SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d)
        self.mlp = nn.Sequential(nn.Linear(cfg.d, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, cfg.d),
                                 nn.Dropout(cfg.dropout))

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), allowed)
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Module):
    """Token + learned absolute position embeddings, a stack of blocks, a final LayerNorm."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d)
        self.apply(_init_weights)

    @property
    def d(self) -> int:
        return self.cfg.d

    def attention_pattern(self, attention_mask: torch.Tensor) -> torch.Tensor:
        """(B, n) real-token mask → (B, 1, n, n) bool: which keys each query may attend to."""
        B, n = attention_mask.shape
        allowed = attention_mask.bool()[:, None, None, :].expand(B, 1, n, n)  # padding keys off
        if self.cfg.causal:
            allowed = allowed & torch.ones(n, n, dtype=torch.bool, device=allowed.device).tril()
        # A query always sees itself, so a row made only of padding stays finite instead of NaN.
        return allowed | torch.eye(n, dtype=torch.bool, device=allowed.device)

    def forward(self, ids: torch.Tensor | Batch | QABatch, attention_mask: torch.Tensor | None = None,
                positions: torch.Tensor | None = None, output_hidden_states: bool = False):
        """ids (B, n) long and attention_mask (B, n), True/1 on real tokens → H (B, n, d).

        `model(batch)` with a padded batch (tokenizer `Batch` or `QABatch`) is `model(batch.ids,
        batch.attention_mask)`. With `output_hidden_states=True` it returns `(H, hidden_states)`, a tuple
        of n_layers + 1 tensors (B, n, d): the embedding output first, then each block's output, the
        last one after the final LayerNorm, so `hidden_states[-1]` is H (as Hugging Face's GPT-2 does).
        """
        if isinstance(ids, (Batch, QABatch)):
            if attention_mask is not None:
                raise TypeError("model(batch) reads the attention mask from the batch: call model(batch) "
                                "or model(ids, attention_mask), not model(batch, attention_mask)")
            ids, attention_mask = ids.ids, ids.attention_mask
        B, n = ids.shape
        if n > self.cfg.max_len:
            raise ValueError(f"sequence of {n} positions is longer than max_len={self.cfg.max_len}")
        if attention_mask is None:
            attention_mask = torch.ones(B, n, dtype=torch.bool, device=ids.device)
        if positions is None:
            positions = torch.arange(n, device=ids.device).expand(B, n)
        x = self.drop(self.tok_emb(ids) + self.pos_emb(positions))  # (B, n, d)
        allowed = self.attention_pattern(attention_mask)
        hidden_states = [x]
        for block in self.blocks:
            x = block(x, allowed)
            hidden_states.append(x)
        H = self.ln_f(x)
        if output_hidden_states:
            return H, (*hidden_states[:-1], H)
        return H

    def vocab_logits(self, H: torch.Tensor) -> torch.Tensor:
        """Scores over the vocabulary through the tied token embedding: (…, d) → (…, V), H @ E^T.

        The token embedding E (V, d) doubles as the output matrix. What the scores predict depends on the
        position they are read at: the decoder was pre-trained to read the next token from them.
        """
        return H @ self.tok_emb.weight.T  # (…, V)

    def config_dict(self) -> dict:
        return asdict(self.cfg)


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def _seeded(cfg: TinyConfig, seed: int) -> TinyTransformer:
    """The model `cfg` describes, initialised from `seed` alone; the caller's random state is left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyTransformer(cfg)


def tiny_encoder(vocab_size: int, seed: int = 0, **overrides) -> TinyTransformer:
    """A bidirectional encoder: every position attends to every real token."""
    return _seeded(TinyConfig(vocab_size=vocab_size, causal=False, **overrides), seed)


def tiny_decoder(vocab_size: int, seed: int = 0, **overrides) -> TinyTransformer:
    """A causal decoder: position i attends to real tokens at positions ≤ i."""
    return _seeded(TinyConfig(vocab_size=vocab_size, causal=True, **overrides), seed)


def count_parameters(module: nn.Module, trainable_only: bool = False) -> int:
    """Counts each Parameter object once, so a tied matrix is not counted twice."""
    params = {id(p): p for p in module.parameters() if p.requires_grad or not trainable_only}
    return sum(p.numel() for p in params.values())
