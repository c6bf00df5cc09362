"""Lesson 01's MLMHead (the solution) against Hugging Face's BertLMPredictionHead.

The solution's class is read from the answer cell of the solution notebook and executed here: it must
not live in the package. The reference head is built from a small random BertConfig, so nothing is
downloaded. With the same weights, both heads must give the same logits.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

transformers = pytest.importorskip("transformers")
from transformers import BertConfig  # noqa: E402
from transformers.models.bert.modeling_bert import BertLMPredictionHead  # noqa: E402

from heads_lessons import lesson  # noqa: E402



def solution_class(grade_id: str = "MLMHead"):
    return lesson("01").solution_namespace(grade_id)[grade_id]


@pytest.mark.parametrize("V, d", [(37, 16), (120, 32)])
def test_mlm_head_matches_bert_lm_prediction_head(V, d):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=V, hidden_size=d, hidden_act="gelu", layer_norm_eps=1e-5,
                        num_hidden_layers=1, num_attention_heads=2, intermediate_size=2 * d)
    reference = BertLMPredictionHead(config).eval()
    embedding = nn.Embedding(V, d)
    ours = solution_class()(embedding).eval()

    linears = [m for m in ours.modules() if isinstance(m, nn.Linear) and m.out_features == d]
    norms = [m for m in ours.modules() if isinstance(m, nn.LayerNorm)]
    biases = [p for p in ours.parameters() if p.shape == (V,)]
    assert len(linears) == len(norms) == len(biases) == 1
    assert any(p is embedding.weight for p in ours.parameters()), "the solution's projection is not tied"
    with torch.no_grad():                 # random values everywhere, then the same in both heads
        for p in [linears[0].weight, linears[0].bias, norms[0].weight, norms[0].bias, biases[0]]:
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if p is norms[0].weight else 0.0))
        reference.transform.dense.weight.copy_(linears[0].weight)
        reference.transform.dense.bias.copy_(linears[0].bias)
        reference.transform.LayerNorm.weight.copy_(norms[0].weight)
        reference.transform.LayerNorm.bias.copy_(norms[0].bias)
        reference.decoder.weight.copy_(embedding.weight)
        reference.decoder.bias.copy_(biases[0])
        reference.bias.copy_(biases[0])

    h = torch.randn(3, 5, d)
    with torch.no_grad():
        expected, got = reference(h), ours(h)
    assert got.shape == expected.shape == (3, 5, V)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_the_reference_really_differs_when_the_transform_order_is_swapped():
    """Guards the comparison above: a head with LayerNorm before GELU must not agree with BERT's."""
    V, d = 37, 16
    torch.manual_seed(1)
    reference = BertLMPredictionHead(BertConfig(vocab_size=V, hidden_size=d, hidden_act="gelu",
                                                layer_norm_eps=1e-5)).eval()
    h = torch.randn(4, d)
    t = reference.transform
    swapped = F.gelu(t.LayerNorm(t.dense(h))) @ reference.decoder.weight.T + reference.decoder.bias
    with torch.no_grad():
        assert not torch.allclose(swapped, reference(h), atol=1e-3)
