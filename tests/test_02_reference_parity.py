"""Lesson 02's solution against Hugging Face's BERT pooler (a reference behaviour, not graded).

The answer cells are read from the solution notebook and executed; `BertPooler` is built from a small
random `BertConfig` (no download) with the solution's weights copied in. BertPooler takes the hidden
states and pools position 0 itself, so it is compared with Pooler(cls_pool(H)).
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers import BertConfig  # noqa: E402
from transformers.models.bert.modeling_bert import BertPooler  # noqa: E402

from heads_lessons import lesson  # noqa: E402


@pytest.fixture(scope="module")
def solution():
    return lesson("02").solution_namespace()


@pytest.mark.parametrize("d,B,n", [(8, 3, 5), (32, 2, 7)])
def test_pooler_matches_bert_pooler(solution, d, B, n):
    torch.manual_seed(d)
    config = BertConfig(hidden_size=d, num_attention_heads=2, num_hidden_layers=1, intermediate_size=2 * d,
                        vocab_size=50)
    reference = BertPooler(config).eval()
    ours = solution["Pooler"](d).eval()
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in reference.parameters())
    # copy our (random) weights into the reference, so both compute the same function if both are right
    (weight,) = [p for p in ours.parameters() if p.dim() == 2]
    (bias,) = [p for p in ours.parameters() if p.dim() == 1]
    with torch.no_grad():
        reference.dense.weight.copy_(weight)
        reference.dense.bias.copy_(bias)
    H = 3 * torch.randn(B, n, d)
    with torch.no_grad():
        expected = reference(H)
        got = ours(solution["cls_pool"](H))
    assert got.shape == expected.shape == (B, d)
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()


def test_mean_and_max_pool_ignore_padding_like_a_per_row_loop(solution):
    torch.manual_seed(0)
    H = torch.randn(4, 6, 5) - 2.0
    lengths = torch.tensor([6, 1, 3, 4])
    mask = torch.arange(6)[None, :] < lengths[:, None]
    H_noisy = H.masked_fill(~mask[:, :, None], 7.0)
    for b, length in enumerate(lengths.tolist()):
        real = H[b, :length]
        assert torch.allclose(solution["mean_pool"](H_noisy, mask)[b], real.mean(0), atol=1e-6)
        assert torch.allclose(solution["max_pool"](H_noisy, mask.long())[b], real.amax(0))
