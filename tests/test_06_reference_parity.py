"""Lesson 06 against a reference implementation: Hugging Face GPT2ForSequenceClassification.

Pooling a GPT-2's hidden states at `last_real_index` (the solution's own answer cell, read from the
notebook) and applying the model's `score` layer copied into a plain Linear must give the logits the
model itself returns. What the installed transformers does, read from its source
(models/gpt2/modeling_gpt2.py, GPT2ForSequenceClassification.forward): it computes the score of every
position, then takes, per row, the rightmost position whose *input id* is not `pad_token_id`
(`(arange(n) * (input_ids != pad_token_id)).argmax(-1)`), "to handle both left- and right-padding".
So it agrees with the last True of `ids != pad_token_id` for right padding, left padding and a pad id
inside the text. It does not look at `attention_mask` for this, which the last test documents, and it
does not shift position ids for left padding (positions default to 0 … n − 1), which another test
documents. These are tests, not graded.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from heads_lessons import lesson  # noqa: E402

PAD = 1
V, D, K = 40, 16, 3


def answer(grade_id: str):
    return lesson("06").solution_namespace(grade_id)[grade_id]


@pytest.fixture(scope="module")
def last_real_index():
    return answer("last_real_index")


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=V, n_positions=16, n_embd=D, n_layer=2, n_head=2,
                                     num_labels=K, pad_token_id=PAD, bos_token_id=0, eos_token_id=0)
    return transformers.GPT2ForSequenceClassification(config).eval()


def ours_and_theirs(model, last_real_index, ids, attention_mask, **kwargs):
    head = torch.nn.Linear(D, K, bias=False)
    with torch.no_grad():
        head.weight.copy_(model.score.weight)            # the same head, as a plain Linear
        H = model.transformer(input_ids=ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        index = last_real_index(ids != PAD)
        ours = head(H[torch.arange(ids.shape[0]), index])
        theirs = model(input_ids=ids, attention_mask=attention_mask, **kwargs).logits
    return ours, theirs, index


TEXTS = [[5, 6, 7, 8], [9, 10], [11, 12, 13, 14, 15, 16], [17]]


def padded(texts, side):
    n = max(map(len, texts))
    rows = [[PAD] * (n - len(t)) + t if side == "left" else t + [PAD] * (n - len(t)) for t in texts]
    return torch.tensor(rows)


@pytest.mark.parametrize("side", ["right", "left"])
def test_pooled_logits_match_gpt2_for_sequence_classification(model, last_real_index, side):
    ids = padded(TEXTS, side)
    ours, theirs, index = ours_and_theirs(model, last_real_index, ids, (ids != PAD).long())
    expected = [len(t) - 1 for t in TEXTS] if side == "right" else [ids.shape[1] - 1] * len(TEXTS)
    assert index.tolist() == expected
    torch.testing.assert_close(ours, theirs)


def test_a_pad_id_inside_the_text_agrees_too(model, last_real_index):
    ids = torch.tensor([[5, PAD, 7, 8, PAD, PAD], [PAD, PAD, 9, PAD, 10, 11]])
    ours, theirs, index = ours_and_theirs(model, last_real_index, ids, (ids != PAD).long())
    assert index.tolist() == [3, 5]
    torch.testing.assert_close(ours, theirs)


def test_gpt2_does_not_shift_positions_for_left_padding(model, last_real_index):
    """Documented behaviour: with default position ids a left-padded text gets other positions,
    so its logits differ from the right-padded ones; passing position ids that count real tokens
    makes them agree. The lesson measures the same effect on the course's decoder."""
    right, left = padded(TEXTS, "right"), padded(TEXTS, "left")
    _, logits_right, _ = ours_and_theirs(model, last_real_index, right, (right != PAD).long())
    _, logits_left, _ = ours_and_theirs(model, last_real_index, left, (left != PAD).long())
    shorter = torch.tensor([len(t) < right.shape[1] for t in TEXTS])
    assert not torch.allclose(logits_left[shorter], logits_right[shorter], atol=1e-4)
    mask = (left != PAD).long()
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    ours, theirs, _ = ours_and_theirs(model, last_real_index, left, mask, position_ids=positions)
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(theirs, logits_right, atol=1e-5, rtol=1e-4)


def test_gpt2_reads_padding_from_the_ids_not_from_the_attention_mask(model, last_real_index):
    """Documented difference: a text that really ends with the pad id (GPT-2 setups often reuse the
    end-of-text token as padding) is cut short by GPT-2's rule; the last True of the attention mask
    keeps it."""
    ids = torch.tensor([[5, 6, 7, PAD]])                 # the final PAD is a real token here
    mask = torch.ones_like(ids)
    with torch.no_grad():
        H = model.transformer(input_ids=ids, attention_mask=mask).last_hidden_state
        theirs = model(input_ids=ids, attention_mask=mask).logits
    assert int(last_real_index(mask)[0]) == 3
    torch.testing.assert_close(theirs, model.score(H[:, 2]))   # GPT-2 pools position 2
    assert not torch.allclose(theirs, model.score(H[:, 3]))
