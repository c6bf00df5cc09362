"""Seeded toy datasets, generated in milliseconds, no downloads.

Every generator takes `n` and `seed` and returns plain Python objects (texts, words, tags), so a lesson
can print an example before it becomes a tensor. The same seed gives the same data on every machine:
only Python's `random.Random` is used.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .tokenizer import WordTokenizer

# --- word lists ----------------------------------------------------------------------------------
REVIEW_SUBJECTS = ["the soup", "the film", "the hotel", "the phone", "the game", "the book",
                   "the pizza", "the concert", "the service", "the room", "the train", "the coffee"]
POSITIVE_WORDS = ["great", "good", "excellent", "lovely", "superb", "wonderful", "brilliant"]
NEGATIVE_WORDS = ["awful", "bad", "terrible", "boring", "broken", "poor", "dreadful"]
FILLER_PHRASES = ["yesterday", "i think", "to be honest", "overall", "for the price", "this time",
                  "in my view", "once again", "at night", "with my friends", "after a long day",
                  "as usual", "on the whole", "last week", "my sister said", "we agreed that",
                  "believe me", "in the end", "at first", "if you ask me", "so far", "today"]
CLASS_NAMES = ["positive", "negative"]  # index 1, the minority class, is what F1 is reported for
# What a writer says next depends on the sentiment: in the pre-training corpus these closing phrases
# are what makes a sentiment word predictable from its context, and its context from it.
POSITIVE_CLOSINGS = ["i will come back", "i would recommend it", "we will go again", "five stars from me",
                     "worth every penny", "i loved every minute"]
NEGATIVE_CLOSINGS = ["i want a refund", "never again", "one star from me", "a waste of money",
                     "i will complain", "i hated every minute"]
# ... and so, less strongly, do its other words: in the pre-training reviews these fillers lean one way.
POSITIVE_LEANING = ["with my friends", "this time", "believe me", "if you ask me", "so far"]
NEGATIVE_LEANING = ["to be honest", "once again", "after a long day", "for the price", "at first"]

FIRST_NAMES = ["ada", "alan", "grace", "linus", "marie", "nikola", "rosa", "kurt", "emmy", "jordan"]
LAST_NAMES = ["lovelace", "turing", "hopper", "curie", "tesla", "parks", "godel", "noether"]
PLACES = ["paris", "rome", "lima", "oslo", "cairo", "jordan", "new york", "hong kong", "san diego"]
ORGS = ["acme corp", "globex", "initech", "umbrella labs", "wayne foods", "stark tools"]
TAG_TEMPLATES = [
    "{PER} visited {LOC} last week", "{PER} met {PER} in {LOC}", "{PER} works for {ORG}",
    "yesterday {PER} flew from {LOC} to {LOC}", "{ORG} opened an office in {LOC}",
    "{ORG} hired {PER} as usual", "in {LOC} {PER} joined {ORG}", "{PER} and {PER} left {ORG}",
    "the team from {ORG} met {PER} at night", "{PER} moved to {LOC} with my friends",
]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]

QA_PEOPLE = ["ada", "alan", "grace", "linus", "marie", "nikola", "rosa", "kurt", "emmy"]
QA_RELATIONS = {  # relation: (fact template, question template, answer pool)
    "live": ("{p} lives in {a} .", "where does {p} live ?", PLACES),
    "work": ("{p} works for {a} .", "who does {p} work for ?", ORGS),
    "like": ("{p} likes {a} .", "what does {p} like ?",
             ["red tea", "old maps", "jazz", "long walks", "chess", "the sea"]),
}

SIM_SLOTS = {  # each meaning has two interchangeable wordings
    "subject": [("the cat", "the kitten"), ("the dog", "the puppy"), ("the child", "the kid"),
                ("the robot", "the machine"), ("the farmer", "the grower")],
    "verb": [("chased", "ran after"), ("found", "discovered"), ("carried", "held"),
             ("watched", "looked at"), ("dropped", "let go of")],
    "object": [("the ball", "the toy"), ("a stick", "a branch"), ("the box", "the crate"),
               ("a hat", "a cap"), ("the bread", "the loaf")],
    "place": [("in the garden", "in the yard"), ("near the river", "by the stream"),
              ("at home", "in the house"), ("on the road", "on the street"),
              ("in the shop", "in the store")],
}

CORPUS_EXTRA = ["the cat sat on the mat", "the robot moved the box to the kitchen",
                "a kid found a red ball near the river", "the train left the station at night"]


# --- examples ------------------------------------------------------------------------------------
@dataclass
class ClassificationExample:
    text: str
    label: int  # index into CLASS_NAMES
    cue_position: int  # word index of the label-bearing word


@dataclass
class TaggedExample:
    words: list[str]
    tags: list[str]


@dataclass
class QAExample:
    question: str
    passage: str
    answer: str
    answer_start: int  # word index in the passage, inclusive
    answer_end: int  # word index in the passage, inclusive


@dataclass
class SimilarityPair:
    a: str
    b: str
    score: float  # fraction of the four meaning slots the sentences share, in [0, 1]


@dataclass
class RetrievalSet:
    queries: list[str]
    documents: list[str]
    targets: list[int]  # documents[targets[q]] says what queries[q] says, in other words


# --- generators ----------------------------------------------------------------------------------
def classification_set(n: int = 600, seed: int = 0, minority_rate: float = 0.25,
                       min_len: int = 4, max_len: int = 24) -> list[ClassificationExample]:
    """Reviews labelled by one sentiment word placed anywhere; about 3:1 positive to negative."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        label = int(rng.random() < minority_rate)
        cue = rng.choice(NEGATIVE_WORDS if label else POSITIVE_WORDS)
        core = [*rng.choice(REVIEW_SUBJECTS).split(), "was", cue]
        extra = rng.randint(min_len, max_len) - len(core)
        before = rng.randint(0, extra)
        words = _filler(rng, before) + core + _filler(rng, extra - before)
        out.append(ClassificationExample(" ".join(words), label, before + len(core) - 1))
    return out


def _filler(rng: random.Random, k: int, leaning: list[str] | None = None) -> list[str]:
    """k words of filler phrases; with `leaning`, those phrases come up 60 % of the time."""
    words: list[str] = []
    while len(words) < k:
        pool = leaning if leaning and rng.random() < 0.6 else FILLER_PHRASES
        words += rng.choice(pool).split()
    return words[:k]


def tagging_set(n: int = 400, seed: int = 0) -> list[TaggedExample]:
    """Sentences with person, location and organisation entities in BIO tags.

    "jordan" is both a first name and a place, so its tag depends on the context.
    """
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words, tags = [], []
        for piece in rng.choice(TAG_TEMPLATES).split():
            if piece.startswith("{"):
                kind = piece[1:-1]
                entity = _entity(rng, kind).split()
                words += entity
                tags += [f"B-{kind}"] + [f"I-{kind}"] * (len(entity) - 1)
            else:
                words.append(piece)
                tags.append("O")
        out.append(TaggedExample(words, tags))
    return out


def _entity(rng: random.Random, kind: str) -> str:
    if kind == "PER":
        first = rng.choice(FIRST_NAMES)
        return f"{first} {rng.choice(LAST_NAMES)}" if rng.random() < 0.5 else first
    return rng.choice(PLACES if kind == "LOC" else ORGS)


def qa_set(n: int = 400, seed: int = 0) -> list[QAExample]:
    """Short passages of facts and a question whose answer is a span of the passage."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        # two or three facts about different (person, relation) pairs keep the passage short
        pairs = rng.sample([(p, r) for p in QA_PEOPLE for r in sorted(QA_RELATIONS)], rng.randint(2, 3))
        facts = []  # (words, person, relation, answer, word offset of the answer in the fact)
        for p, rel in pairs:
            template, _, pool = QA_RELATIONS[rel]
            answer = rng.choice(pool)
            offset = len(template.partition("{a}")[0].format(p=p).split())
            facts.append((template.format(p=p, a=answer).split(), p, rel, answer, offset))
        p = rel = answer = None
        offset = 0
        target = rng.randrange(len(facts))
        passage: list[str] = []
        for k, (fact_words, person, relation, ans, off) in enumerate(facts):
            if k == target:
                p, rel, answer, offset = person, relation, ans, len(passage) + off
            passage += fact_words
        question = QA_RELATIONS[rel][1].format(p=p)
        end = offset + len(answer.split()) - 1
        out.append(QAExample(question, " ".join(passage), answer, offset, end))
    return out


def similarity_pairs(n: int = 300, seed: int = 0) -> list[SimilarityPair]:
    """Sentence pairs scored by the share of meaning slots they have in common (for regression)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        meaning_a = {s: rng.randrange(len(v)) for s, v in SIM_SLOTS.items()}
        keep = rng.randint(0, 4)
        changed = rng.sample(sorted(SIM_SLOTS), 4 - keep)
        meaning_b = dict(meaning_a)
        for s in changed:
            meaning_b[s] = rng.choice([i for i in range(len(SIM_SLOTS[s])) if i != meaning_a[s]])
        out.append(SimilarityPair(_say(rng, meaning_a), _say(rng, meaning_b), keep / 4))
    return out


def retrieval_set(n: int = 100, seed: int = 0, reworded: int = 3) -> RetrievalSet:
    """Each query has one document that says the same thing with `reworded` of its four slots worded
    the other way (a paraphrase keeps a phrase or so and rewords the rest); the other documents are
    other meanings, worded at random."""
    rng = random.Random(seed)
    slots = sorted(SIM_SLOTS)
    meanings: list[tuple] = []
    seen = set()
    while len(meanings) < n:
        m = tuple(rng.randrange(len(SIM_SLOTS[s])) for s in slots)
        if m not in seen:
            seen.add(m)
            meanings.append(m)
    queries, documents = [], []
    for m in meanings:
        wording = {s: rng.randint(0, 1) for s in slots}
        other_way = set(rng.sample(slots, reworded))
        queries.append(_say(rng, dict(zip(slots, m)), wording))
        documents.append(_say(rng, dict(zip(slots, m)),
                              {s: 1 - w if s in other_way else w for s, w in wording.items()}))
    order = list(range(n))
    rng.shuffle(order)
    return RetrievalSet(queries, [documents[i] for i in order], [order.index(q) for q in range(n)])


def _say(rng: random.Random, meaning: dict, wording: dict | None = None) -> str:
    parts = {s: SIM_SLOTS[s][i][wording[s] if wording else rng.randint(0, 1)]
             for s, i in meaning.items()}
    core = f"{parts['subject']} {parts['verb']} {parts['object']}"
    return f"{parts['place']} {core}" if rng.random() < 0.3 else f"{core} {parts['place']}"


def review_corpus(n: int, seed: int) -> list[str]:
    """Reviews as people write them: the other words depend on the sentiment.

    Each review has one or two sentiment words of one polarity and a closing phrase of the same
    polarity, placed among neutral fillers, so predicting a hidden sentiment word or closing phrase
    needs the rest of the review. (The labelled `classification_set` has no closing phrase: there
    the single cue word decides the label.)
    """
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        negative = rng.random() < 0.4
        cues = NEGATIVE_WORDS if negative else POSITIVE_WORDS
        subjects = rng.sample(REVIEW_SUBJECTS, 2)
        leaning = NEGATIVE_LEANING if negative else POSITIVE_LEANING
        words = _filler(rng, rng.randint(0, 6), leaning) + [*subjects[0].split(), "was", rng.choice(cues)]
        if rng.random() < 0.5:
            words += ["and", *subjects[1].split(), "was", rng.choice(cues)]
        words += _filler(rng, rng.randint(0, 6), leaning)
        words += rng.choice(NEGATIVE_CLOSINGS if negative else POSITIVE_CLOSINGS).split()
        out.append(" ".join(words))
    return out


# Which meanings go together: subject meaning i is mostly seen doing verb i to object i at place i. Both wordings of a meaning share these contexts (synonyms), while different
# meanings get different ones, as in real text (cats chase mice, farmers grow crops).
def _scene(rng: random.Random) -> dict:
    i = rng.randrange(len(SIM_SLOTS["subject"]))
    meaning = {"subject": i}
    for slot in ("verb", "object", "place"):
        meaning[slot] = i if rng.random() < 0.9 else rng.randrange(len(SIM_SLOTS[slot]))
    return meaning


def scene_corpus(n: int, seed: int) -> list[str]:
    """Sentences about who does what where, each slot worded one of its two ways at random."""
    rng = random.Random(seed)
    return [_say(rng, _scene(rng)) for _ in range(n)]


def corpus(n: int = 8000, seed: int = 0) -> list[str]:
    """Plain sentences for masked or next-word pre-training: reviews, scenes, tagged sentences,
    passages and questions, in proportions 8 : 6 : 3 : 2 : 1."""
    rng = random.Random(seed)
    tenth = n // 10
    texts = review_corpus(4 * tenth, seed + 101)
    texts += [" ".join(e.words) for e in tagging_set(3 * tenth // 2, seed + 102)]
    texts += [e.passage for e in qa_set(tenth, seed + 103)]
    texts += [e.question for e in qa_set(tenth // 2, seed + 104)]
    texts += scene_corpus(n - len(texts) - len(CORPUS_EXTRA), seed + 105)
    texts += CORPUS_EXTRA
    rng.shuffle(texts)
    return texts


# --- the course's single vocabulary ---------------------------------------------------------------
VOCAB_FILE = Path(__file__).parent / "vocab.txt"


def words_in_use() -> set[str]:
    """Every word the generators above can produce."""
    strings: list[str] = [*REVIEW_SUBJECTS, *POSITIVE_WORDS, *NEGATIVE_WORDS, *FILLER_PHRASES,
                          "was", "and", *FIRST_NAMES, *LAST_NAMES, *PLACES, *ORGS, *TAG_TEMPLATES,
                          *QA_PEOPLE, *CORPUS_EXTRA, *CLASS_NAMES, *POSITIVE_CLOSINGS,
                          *NEGATIVE_CLOSINGS]
    for fact, question, pool in QA_RELATIONS.values():
        strings += [fact, question, *pool]
    for options in SIM_SLOTS.values():
        strings += [w for pair in options for w in pair]
    return {w for s in strings for w in s.split() if not w.startswith("{")}


def vocabulary() -> list[str]:
    """The committed word list, in id order (after the five special tokens).

    It is append-only: a new word goes at the end, so no existing word changes its id and the
    shipped weights stay valid for every word they were trained on.
    """
    return VOCAB_FILE.read_text(encoding="utf-8").split()


@lru_cache(maxsize=1)
def course_tokenizer() -> WordTokenizer:
    """The one vocabulary every lesson and both tiny models use."""
    return WordTokenizer(vocabulary())
