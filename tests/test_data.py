import pytest

from headlab import data
from headlab.data import course_tokenizer


GENERATORS = [
    lambda seed: data.classification_set(600, seed),
    lambda seed: data.tagging_set(400, seed),
    lambda seed: data.qa_set(400, seed),
    lambda seed: data.similarity_pairs(300, seed),
    lambda seed: data.retrieval_set(100, seed),
    lambda seed: data.corpus(2000, seed),
]


@pytest.mark.parametrize("make", GENERATORS)
def test_same_seed_same_data_other_seed_other_data(make):
    assert make(0) == make(0)
    assert make(0) != make(1)


def test_every_word_of_every_set_is_in_the_vocabulary():
    tok = course_tokenizer()
    texts = data.corpus(2000, 0) + data.retrieval_set(100, 0).documents
    texts += [p.b for p in data.similarity_pairs(300, 0)]
    assert not {w for t in texts for w in t.split()} - set(tok.stoi)


def test_classification_is_imbalanced_about_three_to_one_with_varied_lengths_and_positions():
    examples = data.classification_set(2000, 0)
    minority = sum(e.label for e in examples) / len(examples)
    assert 0.22 < minority < 0.28
    lengths = [len(e.text.split()) for e in examples]
    assert min(lengths) == 4 and max(lengths) == 24
    positions = {e.cue_position for e in examples}
    assert len(positions) > 15  # the label word is not always in the same place
    for e in examples:
        cue = e.text.split()[e.cue_position]
        assert cue in (data.NEGATIVE_WORDS if e.label else data.POSITIVE_WORDS)


def test_tags_are_bio_and_aligned():
    for e in data.tagging_set(400, 0):
        assert len(e.words) == len(e.tags)
        assert set(e.tags) <= set(data.TAGS)
        for prev, tag in zip(["O"] + e.tags, e.tags):
            if tag.startswith("I-"):
                assert prev[2:] == tag[2:], "an I- tag continues an entity of its type"


def test_qa_answers_are_spans_of_their_passage_and_fit_the_models():
    for e in data.qa_set(400, 0):
        words = e.passage.split()
        assert " ".join(words[e.answer_start:e.answer_end + 1]) == e.answer
        assert len(e.question.split()) + len(words) + 3 <= 32


def test_similarity_scores_are_in_unit_interval_and_varied():
    scores = [p.score for p in data.similarity_pairs(300, 0)]
    assert set(scores) == {0.0, 0.25, 0.5, 0.75, 1.0}


def test_retrieval_targets_are_a_permutation():
    r = data.retrieval_set(100, 0)
    assert sorted(r.targets) == list(range(100)) and len(set(r.documents)) == 100
