"""The two tiny models, pre-trained on the toy corpus and shipped with the package.

`dev/build_weights.py` rebuilds the files from scratch in seconds; `tests/test_weights.py` checks
that a rebuild matches what is shipped.
"""
from __future__ import annotations

from pathlib import Path

import torch

from .data import course_tokenizer
from .models import TinyConfig, TinyTransformer

WEIGHTS_DIR = Path(__file__).parent / "weights"


def load(kind: str) -> TinyTransformer:
    """`kind` is "encoder" (MLM pre-trained) or "decoder" (next-token pre-trained)."""
    if kind not in ("encoder", "decoder"):
        raise ValueError(f"kind must be 'encoder' or 'decoder', got {kind!r}")
    path = WEIGHTS_DIR / f"{kind}.pt"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python dev/build_weights.py` to rebuild it.")
    saved = torch.load(path, map_location="cpu", weights_only=True)
    model = TinyTransformer(TinyConfig(**saved["config"]))
    model.load_state_dict(saved["state_dict"])
    if model.cfg.vocab_size != course_tokenizer().vocab_size:
        raise RuntimeError(f"{path} was built for another vocabulary: rebuild it with dev/build_weights.py")
    return model.eval()


def pretrained_encoder() -> TinyTransformer:
    return load("encoder")


def pretrained_decoder() -> TinyTransformer:
    return load("decoder")
