"""The toy world behaves like the real one where the lessons measure it.

Measured on the shipped weights with the package's own linear probe (class-balanced logistic
regression, eval mode, no dropout): frozen pre-trained features carry the sentiment label well above
chance and below fine-tuning; a causal model's first position knows one token only; masked-mean
pooling retrieves paraphrases, better than raw [CLS]. Balanced accuracy: 0.5 is chance for any
constant answer, whatever the class imbalance.
"""
from functools import lru_cache

import pytest
import torch
import torch.nn.functional as F

from headlab.data import classification_set, course_tokenizer, retrieval_set, vocabulary, words_in_use
from headlab.metrics import balanced_accuracy, mean_reciprocal_rank
from headlab.pretrained import load
from headlab.probe import linear_probe
from headlab.train import fit, minibatches

TRAIN, TEST = classification_set(600, seed=1), classification_set(400, seed=2)


@lru_cache(maxsize=None)
def model(kind):
    torch.manual_seed(0)
    return load(kind)


def hidden(kind, texts):
    tok = course_tokenizer()
    batch = tok.batch(texts, add_special_tokens=kind == "encoder")
    with torch.no_grad():
        return model(kind)(batch.ids, batch.attention_mask), batch


def pooled(kind, texts, rule):
    H, batch = hidden(kind, texts)  # (B, n, d)
    real = batch.attention_mask.float()[..., None]
    if rule == "mean":
        return (H * real).sum(1) / real.sum(1)
    if rule == "first":
        return H[:, 0]
    return H[torch.arange(len(texts)), batch.lengths - 1]  # last real token


def probe(kind, rule):
    labels = [torch.tensor([e.label for e in s]) for s in (TRAIN, TEST)]
    feats = [pooled(kind, [e.text for e in s], rule) for s in (TRAIN, TEST)]
    return linear_probe(feats[0], labels[0], feats[1], labels[1]).balanced_accuracy


def test_frozen_encoder_masked_mean_carries_the_label():
    assert probe("encoder", "mean") >= 0.80


def test_frozen_decoder_last_real_token_carries_the_label_its_first_position_does_not():
    assert probe("decoder", "last") >= 0.80
    assert probe("decoder", "first") <= 0.60  # it has seen one token, rarely the sentiment word


def test_fine_tuning_beats_the_frozen_probe():
    tok = course_tokenizer()
    torch.manual_seed(0)
    encoder = load("encoder")
    head = torch.nn.Linear(encoder.d, 2)
    batches = minibatches(len(TRAIN), 32, seed=0)

    def loss(step):
        chosen = [TRAIN[i] for i in next(batches).tolist()]
        batch, labels = tok.batch_with_labels(chosen, add_special_tokens=True)
        H = encoder(batch.ids, batch.attention_mask)
        real = batch.attention_mask.float()[..., None]
        logits = head((H * real).sum(1) / real.sum(1))
        return F.cross_entropy(logits, labels)

    fit([encoder, head], loss, 150, lr=1e-3, progress=False)
    batch, labels = tok.batch_with_labels(TEST, add_special_tokens=True)
    with torch.no_grad():
        H = encoder(batch.ids, batch.attention_mask)
        real = batch.attention_mask.float()[..., None]
        pred = head((H * real).sum(1) / real.sum(1)).argmax(-1)
    tuned = balanced_accuracy(pred, labels)
    assert tuned >= 0.95
    assert tuned > probe("encoder", "mean")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_masked_mean_retrieves_paraphrases_better_than_raw_cls(seed):
    r = retrieval_set(100, seed=seed)

    def mrr(rule):
        q = F.normalize(pooled("encoder", r.queries, rule), dim=-1)
        d = F.normalize(pooled("encoder", r.documents, rule), dim=-1)
        return mean_reciprocal_rank(q @ d.T, r.targets)

    mean, cls = mrr("mean"), mrr("first")
    assert mean >= 0.40
    assert mean > cls + 0.1


def test_the_vocabulary_is_append_only_for_the_shipped_weights():
    """A word added later goes at the end: every id the weights were trained on keeps its word."""
    for kind in ("encoder", "decoder"):
        trained_on = torch.load(_weights(kind), weights_only=True)["vocabulary"]
        assert course_tokenizer().itos[:len(trained_on)] == trained_on


def test_every_generated_word_is_in_the_committed_vocabulary():
    missing = words_in_use() - set(vocabulary())
    assert not missing, f"append {sorted(missing)} to the end of headlab/vocab.txt"
    assert len(set(vocabulary())) == len(vocabulary()), "a word is listed twice in headlab/vocab.txt"


def _weights(kind):
    from headlab.pretrained import WEIGHTS_DIR
    return WEIGHTS_DIR / f"{kind}.pt"


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_a_probe_on_shuffled_labels_stays_at_chance(kind):
    """The instrument itself: with labels unrelated to the text, the probe must not find a signal."""
    g = torch.Generator().manual_seed(0)
    feats = [pooled(kind, [e.text for e in s], "mean") for s in (TRAIN, TEST)]
    labels = [torch.randint(0, 2, (len(s),), generator=g) for s in (TRAIN, TEST)]
    assert abs(linear_probe(feats[0], labels[0], feats[1], labels[1]).balanced_accuracy - 0.5) < 0.1
