"""Lesson 04 against Hugging Face: the solution's TokenClassifier and token_loss behave like the head and
the loss of `transformers.BertForTokenClassification` (a small, randomly initialised BertConfig; no download).

The solution's code is read from the answer cells of the solution notebook, so these tests follow the
notebook as it is; nothing here is graded.
"""

import pytest
import torch
import torch.nn as nn

transformers = pytest.importorskip("transformers")

from heads_lessons import lesson  # noqa: E402


@pytest.fixture(scope="module")
def solution():
    """Namespace holding the notebook's TokenClassifier, token_loss and bio_to_spans."""
    return lesson("04").solution_namespace()


@pytest.fixture(scope="module")
def bert():
    config = transformers.BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=24, num_labels=5)
    torch.manual_seed(0)
    return transformers.BertForTokenClassification(config).eval()


def batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 50, (3, 9), generator=g)
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 6:] = 0
    mask[2, 4:] = 0
    labels = torch.randint(0, 5, (3, 9), generator=g)
    labels[:, 0] = -100
    labels[mask == 0] = -100
    return ids, mask, labels


def copy_head(solution, bert):
    head = solution["TokenClassifier"](bert.config.hidden_size, bert.config.num_labels, dropout=0.1)
    linears = [m for m in head.modules() if isinstance(m, nn.Linear)]
    assert len(linears) == 1
    linears[0].load_state_dict(bert.classifier.state_dict())
    return head.eval()


def test_head_matches_bert_token_classification(solution, bert):
    head = copy_head(solution, bert)
    ids, mask, labels = batch()
    with torch.no_grad():
        hidden = bert.bert(ids, attention_mask=mask).last_hidden_state          # (B, n, d)
        reference = bert(ids, attention_mask=mask).logits                       # dropout off in eval
        ours = head(hidden)
        theirs = bert.classifier(bert.dropout(hidden))
    assert ours.shape == reference.shape == (3, 9, bert.config.num_labels)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours, reference, atol=1e-5, rtol=0)


def test_loss_matches_bert_token_classification(solution, bert):
    head = copy_head(solution, bert)
    ids, mask, labels = batch()
    with torch.no_grad():
        out = bert(ids, attention_mask=mask, labels=labels)
        ours = solution["token_loss"](head(bert.bert(ids, attention_mask=mask).last_hidden_state), labels)
    torch.testing.assert_close(ours, out.loss, atol=1e-5, rtol=0)


def test_head_has_as_many_parameters_as_bert_classifier(solution, bert):
    head = copy_head(solution, bert)
    assert sum(p.numel() for p in head.parameters()) == sum(p.numel() for p in bert.classifier.parameters())


def test_dropout_is_active_in_train_mode_only(solution, bert):
    head = copy_head(solution, bert)
    hidden = torch.randn(2, 7, bert.config.hidden_size)
    head.train()
    torch.manual_seed(3)
    a = head(hidden)
    torch.manual_seed(4)
    b = head(hidden)
    assert not torch.allclose(a, b)
    head.eval()
    torch.testing.assert_close(head(hidden), head(hidden))
