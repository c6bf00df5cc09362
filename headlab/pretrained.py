"""The two tiny models, pre-trained on the toy corpus and shipped with the package.

`dev/build_weights.py` rebuilds the files from scratch in about three minutes on 2 cores;
`tests/test_weights.py` checks that a rebuild matches what is shipped.
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
    saved = _read(path)
    _require_same_vocabulary(path, saved["vocabulary"])
    model = TinyTransformer(TinyConfig(**saved["config"]))
    model.load_state_dict(saved["state_dict"])
    return model.eval()


def mlm_head_state() -> dict[str, torch.Tensor]:
    """The pre-trained encoder's MLM head (dense, norm, bias; its output matrix is the encoder's
    tied token embedding), for a head built as dense → GELU → LayerNorm → tied projection."""
    return _read(WEIGHTS_DIR / "encoder.pt")["mlm_head"]


def _read(path: Path) -> dict:
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python dev/build_weights.py` to rebuild it.")
    return torch.load(path, map_location="cpu", weights_only=True)


def _require_same_vocabulary(path: Path, trained_on: list[str]) -> None:
    current = course_tokenizer().itos
    if current[:len(trained_on)] != trained_on:
        raise RuntimeError(f"{path} was trained on other word ids: headlab/vocab.txt is append-only "
                           "(add new words at its end, never reorder or remove one).")
    if len(current) != len(trained_on):
        raise RuntimeError(f"headlab/vocab.txt has {len(current) - len(trained_on)} word(s) the weights "
                           "have not seen: rebuild them with `python dev/build_weights.py`.")


def pretrained_encoder() -> TinyTransformer:
    return load("encoder")


def pretrained_decoder() -> TinyTransformer:
    return load("decoder")
