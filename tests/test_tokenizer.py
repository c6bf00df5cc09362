import pytest
import torch

from headlab.data import classification_set, corpus, course_tokenizer
from headlab.tokenizer import SPECIAL_TOKENS, WordTokenizer, pad


@pytest.fixture(scope="module")
def tok():
    return course_tokenizer()


def test_specials_come_first_with_fixed_ids(tok):
    assert tok.itos[:5] == list(SPECIAL_TOKENS)
    assert (tok.pad_id, tok.cls_id, tok.sep_id, tok.mask_id, tok.unk_id) == (0, 1, 2, 3, 4)


def test_round_trip_on_the_whole_corpus(tok):
    for text in corpus(500, seed=3):
        assert tok.decode(tok.encode(text)) == text


def test_unknown_words_become_unk(tok):
    assert tok.encode("the zyzzyva") == [tok.stoi["the"], tok.unk_id]


def test_special_tokens_wrap_the_text(tok):
    ids = tok.encode("the cat", add_special_tokens=True)
    assert ids[0] == tok.cls_id and ids[-1] == tok.sep_id and len(ids) == 4
    assert tok.decode(ids, skip_special_tokens=True) == "the cat"


def test_vocabulary_does_not_depend_on_text_order():
    texts = ["b a", "c a d"]
    assert WordTokenizer.from_texts(texts).itos == WordTokenizer.from_texts(texts[::-1]).itos


@pytest.mark.parametrize("side", ["right", "left"])
def test_batch_padding_masks_and_lengths(tok, side):
    texts = ["the cat sat on the mat", "ada", "the robot moved the box"]
    b = tok.batch(texts, padding_side=side)
    assert b.ids.shape == (3, 6) and b.ids.dtype == torch.long
    assert b.attention_mask.dtype == torch.bool
    assert b.lengths.tolist() == [6, 1, 5]
    assert b.attention_mask.sum(1).tolist() == [6, 1, 5]
    assert torch.equal(b.ids[~b.attention_mask], torch.zeros(int((~b.attention_mask).sum()), dtype=torch.long))
    row1 = b.attention_mask[1].tolist()
    assert row1 == ([True] + [False] * 5 if side == "right" else [False] * 5 + [True])
    for r, text in enumerate(texts):
        assert tok.decode(b.ids[r][b.attention_mask[r]]) == text


def test_pad_to_adds_padding_only(tok):
    b = tok.batch(["the cat"], pad_to=7)
    assert b.ids.shape == (1, 7) and b.lengths.tolist() == [2]


def test_special_mask_marks_cls_sep_and_padding(tok):
    b = tok.batch(["the cat", "ada"], add_special_tokens=True)
    assert b.special_mask.tolist() == [[True, False, False, True], [True, False, True, True]]


@pytest.mark.parametrize("side,kept", [("right", "one two three"), ("left", "four five six")])
def test_truncation_keeps_the_chosen_end(side, kept):
    tok = WordTokenizer("one two three four five six".split())
    b = tok.batch(["one two three four five six"], max_len=3, truncation_side=side)
    assert tok.decode(b.ids[0]) == kept
    b = tok.batch(["one two three four five six"], add_special_tokens=True, max_len=5,
                  truncation_side=side)
    assert tok.decode(b.ids[0]) == f"[CLS] {kept} [SEP]"


def test_bad_padding_side_is_a_clear_error(tok):
    with pytest.raises(ValueError, match="padding_side"):
        tok.batch(["a"], padding_side="middle")


@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_puts_each_row_on_its_side_and_masks_the_rest(side):
    ids, mask = pad([[5, 6, 7], [8], []], pad_id=0, side=side, pad_to=4)
    assert ids.dtype == torch.long and mask.dtype == torch.bool and ids.shape == mask.shape == (3, 4)
    if side == "right":
        assert ids.tolist() == [[5, 6, 7, 0], [8, 0, 0, 0], [0, 0, 0, 0]]
    else:
        assert ids.tolist() == [[0, 5, 6, 7], [0, 0, 0, 8], [0, 0, 0, 0]]
    assert mask.sum(1).tolist() == [3, 1, 0] and torch.equal(mask, ids != 0)
    assert pad([[1, 2], [3]], pad_id=9)[0].tolist() == [[1, 2], [3, 9]]  # pad_to=None: the longest row
    with pytest.raises(ValueError, match="side"):
        pad([[1]], 0, side="middle")


def test_batch_with_labels_is_the_batch_of_the_texts_and_the_labels(tok):
    examples = classification_set(20, seed=4)
    batch, labels = tok.batch_with_labels(examples, add_special_tokens=True, pad_to=30)
    same = tok.batch([e.text for e in examples], add_special_tokens=True, pad_to=30)
    assert torch.equal(batch.ids, same.ids) and torch.equal(batch.attention_mask, same.attention_mask)
    assert labels.dtype == torch.long and labels.tolist() == [e.label for e in examples]
    _, none = tok.batch_with_labels([])
    assert none.dtype == torch.long and none.shape == (0,)
