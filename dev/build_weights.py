"""Rebuild the pre-trained weights shipped in headlab/weights/ from scratch.

    python dev/build_weights.py            # writes headlab/weights/{encoder,decoder}.pt
    python dev/build_weights.py --out DIR  # writes somewhere else (the rebuild test uses this)

Deterministic on one machine: seeded data, seeded models, one thread. The encoder is pre-trained
with a plain masked-word objective (15 % of words replaced by [MASK], predicted through the tied
embedding); lesson 01 builds the full 80/10/10 recipe and MLM head itself. The decoder is
pre-trained to predict the next word.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from headlab.data import corpus, course_tokenizer
from headlab.models import tiny_decoder, tiny_encoder
from headlab.pretrained import WEIGHTS_DIR
from headlab.train import fit, minibatches

STEPS = 400
BATCH = 64
LR = 3e-3


def _texts_batch(tok, texts, idx, add_special_tokens):
    return tok.batch([texts[i] for i in idx.tolist()], add_special_tokens=add_special_tokens)


def build_encoder(texts, tok, steps=STEPS):
    model = tiny_encoder(tok.vocab_size, seed=0)
    batches = minibatches(len(texts), BATCH, seed=1)
    g = torch.Generator().manual_seed(2)

    def loss(step):
        batch = _texts_batch(tok, texts, next(batches), add_special_tokens=True)
        chosen = (torch.rand(batch.ids.shape, generator=g) < 0.15) & ~batch.special_mask
        inputs = batch.ids.masked_fill(chosen, tok.mask_id)
        H = model(inputs, batch.attention_mask)
        logits = model.next_token_logits(H[chosen])
        return F.cross_entropy(logits, batch.ids[chosen])

    history = fit(model.parameters(), loss, steps, lr=LR, desc="encoder (masked words)", modules=[model])
    return model, history


def build_decoder(texts, tok, steps=STEPS):
    model = tiny_decoder(tok.vocab_size, seed=0)
    batches = minibatches(len(texts), BATCH, seed=3)

    def loss(step):
        batch = _texts_batch(tok, texts, next(batches), add_special_tokens=False)
        H = model(batch.ids, batch.attention_mask)
        logits = model.next_token_logits(H[:, :-1])  # predict token t+1 from positions ≤ t
        target = batch.ids[:, 1:].masked_fill(~batch.attention_mask[:, 1:], -100)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

    history = fit(model.parameters(), loss, steps, lr=LR, desc="decoder (next word)", modules=[model])
    return model, history


def build(out_dir: Path, steps: int = STEPS) -> dict[str, float]:
    torch.set_num_threads(1)
    tok = course_tokenizer()
    texts = corpus(2000, seed=0)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = {}
    for kind, builder in (("encoder", build_encoder), ("decoder", build_decoder)):
        start = time.perf_counter()
        model, history = builder(texts, tok, steps)
        torch.save({"config": model.config_dict(), "state_dict": model.state_dict(),
                    "final_loss": history.smoothed()[-1]}, out_dir / f"{kind}.pt")
        final[kind] = history.smoothed()[-1]
        print(f"{kind}: final loss {final[kind]:.3f} in {time.perf_counter() - start:.1f} s")
    return final


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=WEIGHTS_DIR)
    parser.add_argument("--steps", type=int, default=STEPS)
    args = parser.parse_args()
    build(args.out, args.steps)
