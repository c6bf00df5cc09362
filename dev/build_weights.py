"""Rebuild the pre-trained weights shipped in headlab/weights/ from scratch.

    python -m dev.build_weights                    # writes headlab/weights/{encoder,decoder}.pt
    python -m dev.build_weights --out DIR --check  # rebuilds elsewhere and compares (about 3 minutes)

Deterministic on one machine: seeded data, seeded models, one thread. The encoder is pre-trained
with lesson 01's recipe: 15 % of the non-special tokens chosen, of those 80 % replaced by [MASK],
10 % by a random word and 10 % kept, and predicted through an MLM head (dense → GELU → LayerNorm →
the tied token embedding plus a bias); the head's own weights are saved beside the encoder's. The
decoder is pre-trained to predict the next word. Both read `headlab.data.corpus`, whose reviews,
scenes and entity sentences make context depend on meaning (see that module).

This file is the instructors' side of the course: it spells out answers to lesson 01's exercises,
which is why it lives in dev/ and never in the package.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from headlab.data import corpus, course_tokenizer
from headlab.models import TinyConfig, TinyTransformer, tiny_decoder
from headlab.pretrained import WEIGHTS_DIR
from headlab.train import fit, minibatches

ENCODER_STEPS = 2500  # masked words are 15 % of the tokens: the encoder needs more steps
DECODER_STEPS = 1000
BATCH = 64
LR = 2e-3
CORPUS_SIZE = 8000
TRACE_STEPS = 40  # losses kept in each file: what the quick rebuild test compares


class PretrainingMLMHead(nn.Module):
    """dense → GELU → LayerNorm, then the token embedding as the output matrix, plus a bias."""

    def __init__(self, embedding: nn.Embedding):
        super().__init__()
        V, d = embedding.weight.shape
        self.dense = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.embedding = embedding
        self.bias = nn.Parameter(torch.zeros(V))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(self.norm(F.gelu(self.dense(h))), self.embedding.weight, self.bias)


def corrupt(ids, special_mask, vocab_size, mask_id, first_word_id, generator, p=0.15):
    """The 80/10/10 recipe: returns (inputs, labels) with labels −100 off the chosen positions."""
    chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
    u = torch.rand(ids.shape, generator=generator)
    random_words = torch.randint(first_word_id, vocab_size, ids.shape, generator=generator)
    inputs = torch.where(chosen & (u < 0.8), mask_id, ids)
    inputs = torch.where(chosen & (u >= 0.8) & (u < 0.9), random_words, inputs)
    return inputs, ids.masked_fill(~chosen, -100)


def _texts_batch(tok, texts, idx, add_special_tokens):
    return tok.batch([texts[i] for i in idx.tolist()], add_special_tokens=add_special_tokens)


def build_encoder(texts, tok, steps=ENCODER_STEPS):
    # One seeded stream for the encoder's initialisation, then the pre-training head's: the recipe the
    # shipped weights were built with, before tiny_encoder left the global random state alone.
    torch.manual_seed(0)
    model = TinyTransformer(TinyConfig(vocab_size=tok.vocab_size, causal=False))
    head = PretrainingMLMHead(model.tok_emb)
    batches = minibatches(len(texts), BATCH, seed=1)
    g = torch.Generator().manual_seed(2)

    def loss(step):
        batch = _texts_batch(tok, texts, next(batches), add_special_tokens=True)
        inputs, labels = corrupt(batch.ids, batch.special_mask, tok.vocab_size, tok.mask_id,
                                 len(tok.special_ids), g)
        logits = head(model(inputs, batch.attention_mask))  # (B, n, V)
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)

    history = fit([model, head], loss, steps, lr=LR, desc="encoder (MLM, 80/10/10)")  # the tied embedding trains once
    extra = {"mlm_head": {k: v for k, v in head.state_dict().items() if not k.startswith("embedding.")}}
    return model, history, extra


def build_decoder(texts, tok, steps=DECODER_STEPS):
    model = tiny_decoder(tok.vocab_size, seed=0)
    batches = minibatches(len(texts), BATCH, seed=3)

    def loss(step):
        batch = _texts_batch(tok, texts, next(batches), add_special_tokens=False)
        H = model(batch.ids, batch.attention_mask)
        logits = model.vocab_logits(H[:, :-1])  # predict token t+1 from positions ≤ t
        target = batch.ids[:, 1:].masked_fill(~batch.attention_mask[:, 1:], -100)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

    history = fit(model, loss, steps, lr=LR, desc="decoder (next word)")
    return model, history, {}


def build(out_dir: Path, steps: dict[str, int] | None = None) -> dict[str, float]:
    """Pre-train both models and save them in `out_dir`; `steps` overrides {kind: steps}.

    Each file also keeps the number of steps and the losses of the first `TRACE_STEPS`: a shorter
    rebuild that reproduces those losses runs the same recipe (data, seeds, initialisation, masking,
    optimiser at a constant learning rate), so it would reach the same weights in as many steps."""
    torch.set_num_threads(1)
    tok = course_tokenizer()
    texts = corpus(CORPUS_SIZE, seed=0)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = {}
    for kind, builder in (("encoder", build_encoder), ("decoder", build_decoder)):
        start = time.perf_counter()
        model, history, extra = builder(texts, tok, **({"steps": steps[kind]} if steps else {}))
        final[kind] = history.smoothed()[-1]
        torch.save({"config": model.config_dict(), "state_dict": model.state_dict(),
                    "vocabulary": tok.itos, "final_loss": final[kind], "steps": len(history.losses),
                    "first_losses": history.losses[:TRACE_STEPS], **extra}, out_dir / f"{kind}.pt")
        print(f"{kind}: final loss {final[kind]:.3f} in {time.perf_counter() - start:.1f} s")
    return final


def differences(shipped_dir: Path, rebuilt_dir: Path, full: bool) -> list[str]:
    """What differs between the shipped weights and a rebuild: the losses of the first steps always;
    with `full` (a rebuild of every step) the weights and the final loss too. Empty when they agree."""
    found = []
    for kind, steps in (("encoder", ENCODER_STEPS), ("decoder", DECODER_STEPS)):
        shipped = torch.load(shipped_dir / f"{kind}.pt", weights_only=True)
        rebuilt = torch.load(rebuilt_dir / f"{kind}.pt", weights_only=True)
        if shipped["config"] != rebuilt["config"] or shipped["vocabulary"] != rebuilt["vocabulary"]:
            found.append(f"{kind}: another configuration or vocabulary")
        if shipped["steps"] != steps:
            found.append(f"{kind}: shipped after {shipped['steps']} steps, the recipe says {steps}")
        # Bit-identical on the machine that built them; the tolerances allow other CPUs' rounding.
        first = zip(shipped["first_losses"], rebuilt["first_losses"])
        for step, (a, b) in enumerate(first):
            if abs(a - b) > 1e-3 * max(1.0, abs(a)):
                found.append(f"{kind}: loss at step {step} is {b:.5f}, shipped {a:.5f}")
                break
        if len(rebuilt["first_losses"]) < len(shipped["first_losses"]):
            found.append(f"{kind}: the rebuild ran fewer than {len(shipped['first_losses'])} steps")
        if full:
            for name, tensor in shipped["state_dict"].items():
                if not torch.allclose(tensor, rebuilt["state_dict"][name], atol=1e-3):
                    found.append(f"{kind}.{name} differs")
            if abs(shipped["final_loss"] - rebuilt["final_loss"]) > 0.05:
                found.append(f"{kind}: final loss {rebuilt['final_loss']:.3f}, shipped {shipped['final_loss']:.3f}")
    return found


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=WEIGHTS_DIR)
    parser.add_argument("--check", action="store_true",
                        help="rebuild every step into --out (not the shipped folder) and compare with the shipped weights")
    args = parser.parse_args()
    if args.check and args.out.resolve() == WEIGHTS_DIR.resolve():
        parser.error("--check needs --out DIR, a folder other than the shipped weights")
    build(args.out)
    if args.check:
        problems = differences(WEIGHTS_DIR, args.out, full=True)
        print("\n".join(problems) or "the rebuild matches the shipped weights")
        raise SystemExit(1 if problems else 0)
