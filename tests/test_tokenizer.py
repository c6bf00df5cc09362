import pytest
import torch

from headlab.data import corpus, course_tokenizer
from headlab.tokenizer import SPECIAL_TOKENS, WordTokenizer


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
