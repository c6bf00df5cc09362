"""headlab.qa: QA examples as `[CLS] question [SEP] passage [SEP]` tensors, and positions back to text."""
import pytest
import torch

from headlab import course_tokenizer
from headlab.data import QAExample, qa_set
from headlab.qa import in_passage, qa_batch

TOK = course_tokenizer()


def example(question="where does ada live ?", passage="ada lives in new york . kurt likes jazz .",
            answer="new york", start=3, end=4):
    return QAExample(question, passage, answer, start, end)


def test_layout_of_one_row():
    batch = qa_batch(TOK, [example()])
    words = ["[CLS]", *"where does ada live ?".split(), "[SEP]",
             *"ada lives in new york . kurt likes jazz .".split(), "[SEP]"]
    assert batch.words[0] == words
    assert batch.ids[0].tolist() == [TOK.stoi[w] for w in words]
    assert batch.attention_mask.all()
    assert batch.passage_offset.tolist() == [7]
    assert batch.allowed[0].tolist() == [False] * 7 + [True] * 10 + [False]
    assert (batch.start.tolist(), batch.end.tolist()) == ([10], [11])
    assert batch.span_text(0, 10, 11) == "new york"
    assert batch.to_passage_words(0, 10, 11) == (3, 4)


def test_dtypes_shapes_and_right_padding():
    short = example("what does kurt like ?", "kurt likes jazz .", "jazz", 2, 2)
    batch = qa_batch(TOK, [example(), short], pad_to=25)
    assert batch.shape == (2, 25) and len(batch) == 2
    assert batch.ids.dtype == batch.start.dtype == batch.end.dtype == torch.long
    assert batch.attention_mask.dtype == batch.allowed.dtype == torch.bool
    assert batch.attention_mask[1].tolist() == [True] * 12 + [False] * 13
    assert (batch.ids[1, 12:] == TOK.pad_id).all()
    assert batch.words[1][12:] == ["[PAD]"] * 13
    assert not (batch.allowed & ~batch.attention_mask).any()  # padding is never allowed
    assert batch.texts(torch.stack([batch.start, batch.end], 1)) == ["new york", "jazz"]


def test_every_answer_of_the_toy_set_is_found_at_its_positions():
    examples = qa_set(400, seed=0)
    batch = qa_batch(TOK, examples)
    texts = batch.texts(torch.stack([batch.start, batch.end], 1))
    assert texts == [ex.answer for ex in examples]
    for b, ex in enumerate(examples):
        assert bool(batch.allowed[b, batch.start[b]]) and bool(batch.allowed[b, batch.end[b]])
        assert int(batch.allowed[b].sum()) == len(ex.passage.split())
        assert " ".join(w for w, a in zip(batch.words[b], batch.allowed[b]) if a) == ex.passage
        assert batch.to_passage_words(b, batch.start[b], batch.end[b]) == (ex.answer_start, ex.answer_end)
    assert (batch.ids != TOK.unk_id).all(), "the course vocabulary covers every QA word"
    assert batch.shape[1] <= 48, "fits the tiny encoder's max_len"


def test_positions_outside_the_passage_map_to_none_and_empty_text():
    batch = qa_batch(TOK, [example()])
    assert batch.to_passage_words(0, 2, 11) is None      # starts in the question
    assert batch.to_passage_words(0, 11, 17) is None     # ends on [SEP]
    assert batch.to_passage_words(0, 11, 10) is None     # end before start
    assert batch.span_text(0, 11, 10) == "" and batch.span_words(0, 11, 10) == []
    assert batch.span_text(0, 3, 4) == "ada live"        # text of any positions, question included


def test_select_keeps_rows_together():
    examples = qa_set(10, seed=3)
    batch = qa_batch(TOK, examples)
    sub = batch.select([4, 1])
    assert sub.examples == [examples[4], examples[1]]
    assert torch.equal(sub.ids, batch.ids[[4, 1]]) and torch.equal(sub.allowed, batch.allowed[[4, 1]])
    assert sub.words == [batch.words[4], batch.words[1]]
    assert sub.start.tolist() == [batch.start[4].item(), batch.start[1].item()]


def test_in_passage_matches_whole_words_only():
    passage = "ada lives in paris . kurt likes jazz ."
    assert in_passage("paris", passage) and in_passage("lives in paris", passage)
    assert not in_passage("ari", passage)                # inside a word
    assert not in_passage("", passage) and not in_passage("   ", passage)
    assert not in_passage("paris kurt", passage)         # words not adjacent
    assert in_passage("ada", passage) and in_passage(".", passage)


def test_bad_examples_and_inputs_are_refused():
    with pytest.raises(ValueError, match="outside the passage"):
        qa_batch(TOK, [example(start=3, end=40)])
    with pytest.raises(ValueError, match="is not at words"):
        qa_batch(TOK, [example(answer="paris")])
    with pytest.raises(ValueError, match="at least one"):
        qa_batch(TOK, [])
    batch = qa_batch(TOK, [example()])
    with pytest.raises(ValueError, match="shape"):
        batch.texts(torch.tensor([1, 2]))


def test_the_module_holds_no_exercise_answer():
    import headlab.qa as qa

    for name in ("best_span", "span_loss", "SpanHead"):
        assert not hasattr(qa, name)


def test_passage_facts_and_question_relation_read_every_toy_example():
    from headlab.qa import passage_facts, question_relation, type_only_answer

    for ex in qa_set(400, seed=0) + qa_set(200, seed=1):
        facts = passage_facts(ex.passage)
        assert len(facts) == ex.passage.count(" . ") + 1
        relation = question_relation(ex.question)
        assert (ex.question.split()[2], relation, ex.answer) in facts
        asked = [answer for _, r, answer in facts if r == relation]
        assert type_only_answer(ex) == asked[0]
        if len(asked) == 1:
            assert type_only_answer(ex) == ex.answer      # the type alone decides


def test_question_relation_refuses_a_question_of_another_shape():
    from headlab.qa import question_relation

    with pytest.raises(ValueError, match="not a question of the toy set"):
        question_relation("why does ada live ?")
