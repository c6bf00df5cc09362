"""Lesson 05 against Hugging Face: the solution's SpanHead and span_loss match BertForQuestionAnswering.

The solution code is read from the solution notebook's answer cells (nbformat) and run here, so the
test follows the notebook. The BERT model is a small random BertConfig: nothing is downloaded.
"""

import pytest
import torch
from torch import nn

transformers = pytest.importorskip("transformers")

from heads_lessons import lesson  # noqa: E402


def solution_namespace() -> dict:
    return lesson("05").solution_namespace("SpanHead", "span_loss", "best_span")


@pytest.fixture(scope="module")
def bert_qa():
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=40)
    model = transformers.BertForQuestionAnswering(config).eval()
    with torch.no_grad():  # a non-zero bias, so the bias is compared too
        model.qa_outputs.bias.copy_(torch.tensor([0.3, -0.7]))
    return model


def test_span_head_matches_bert_qa_outputs(bert_qa):
    SpanHead = solution_namespace()["SpanHead"]
    head = SpanHead(bert_qa.config.hidden_size)
    linears = [m for m in head.modules() if isinstance(m, nn.Linear)]
    assert len(linears) == 1 and linears[0].weight.shape == (2, bert_qa.config.hidden_size)
    linears[0].load_state_dict(bert_qa.qa_outputs.state_dict())

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 60, (3, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    with torch.no_grad():
        out = bert_qa(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        H = out.hidden_states[-1]                      # the same hidden states the HF head reads
        start, end = head(H)
    assert start.shape == end.shape == (3, 11)
    torch.testing.assert_close(start, out.start_logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(end, out.end_logits, atol=1e-5, rtol=0)


def test_span_loss_matches_bert_qa_loss(bert_qa):
    span_loss = solution_namespace()["span_loss"]
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(5, 60, (4, 9), generator=g)
    start_positions = torch.tensor([1, 4, 2, 8])
    end_positions = torch.tensor([3, 4, 6, 8])
    with torch.no_grad():
        out = bert_qa(input_ids=ids, start_positions=start_positions, end_positions=end_positions)
        ours = span_loss(out.start_logits, out.end_logits, start_positions, end_positions)
    torch.testing.assert_close(ours, out.loss, atol=1e-5, rtol=0)


def test_best_span_never_returns_a_crossed_pair_where_argmaxes_cross(bert_qa):
    ns = solution_namespace()
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(5, 60, (64, 12), generator=g)
    with torch.no_grad():
        out = bert_qa(input_ids=ids)
    allowed = torch.zeros(64, 12, dtype=torch.bool)
    allowed[:, 4:11] = True
    s = out.start_logits.masked_fill(~allowed, float("-inf"))
    e = out.end_logits.masked_fill(~allowed, float("-inf"))
    crossed = e.argmax(-1) < s.argmax(-1)
    assert crossed.any(), "a random BERT head gives crossing argmaxes on some rows"
    spans = ns["best_span"](out.start_logits, out.end_logits, allowed, 3)
    i, j = spans.unbind(-1)
    assert (i <= j).all() and (j <= i + 2).all() and allowed[torch.arange(64), i].all()
    assert allowed[torch.arange(64), j].all()
