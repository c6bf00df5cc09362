"""Lesson 08's checks: right answers pass, the usual wrong ones are named; Spearman's ρ by hand."""
import pytest
import torch
import torch.nn.functional as F

from headlab.checks import CheckFailed, ch08
from headlab.metrics import average_ranks, spearman


def masked(H, m):
    m = m[:, :, None].to(H.dtype)
    return (H * m).sum(1) / m.sum(1)


def embedding(H, m):
    return F.normalize(masked(H, m), dim=-1)


def first_piece(word_ids, word_labels):
    out, previous = [], None
    for w in word_ids:
        out.append(-100 if w is None or w == previous else word_labels[w])
        previous = w
    return out


def test_right_answers_pass(capsys):
    ch08.sentence_embedding(embedding)
    ch08.sentence_embedding(lambda H, m: F.normalize((H * m[:, :, None]).sum(1), dim=-1))  # sum: same direction
    ch08.align_labels(first_piece)
    out = capsys.readouterr().out
    assert "✓ sentence_embedding" in out and "✓ align_labels" in out


@pytest.mark.parametrize("wrong, says", [
    (lambda H, m: F.normalize(H.mean(1), dim=-1), "padding positions were averaged in"),
    (lambda H, m: masked(H, m), "not L2-normalised"),
    (lambda H, m: embedding(F.normalize(H, dim=-1), m), "normalised each token vector before averaging"),
    (lambda H, m: masked(F.normalize(H, dim=-1), m), "normalised each token vector before averaging"),
    (lambda H, m: F.normalize(H[:, 0], dim=-1), "[CLS]"),
    (lambda H, m: F.normalize(masked(H, m), dim=0), "batch axis"),
    (lambda H, m: F.normalize(masked(H, m), p=1, dim=-1), "L1 norm"),
    (lambda H, m: H.mean(1), "padding positions were averaged in"),
    (lambda H, m: F.normalize(H * m[:, :, None], dim=-1), "one vector per token"),
    (lambda H, m: torch.stack([F.normalize(H[b][m[b]].mean(0), dim=0) for b in range(len(H))]), "0/1"),
])
def test_wrong_embeddings_are_named(wrong, says):
    with pytest.raises(CheckFailed, match=says.replace("[", r"\[").replace("]", r"\]")):
        ch08.sentence_embedding(wrong)


def test_an_embedding_that_writes_into_H_is_named():
    def in_place(H, m):
        H *= m[:, :, None].to(H.dtype)
        return F.normalize(H.sum(1), dim=-1)
    with pytest.raises(CheckFailed, match="changed the tensors"):
        ch08.sentence_embedding(in_place)


@pytest.mark.parametrize("wrong, says", [
    (lambda w, l: [-100 if x is None else l[x] for x in w], "labelled every piece"),
    (lambda w, l: [-100 if x is None or (i + 1 < len(w) and w[i + 1] == x) else l[x] for i, x in enumerate(w)],
     "LAST piece"),
    (lambda w, l: [0 if x is None else v for x, v in zip(w, first_piece(w, l))], "special token"),
    (lambda w, l: [-100 if not x or (i and w[i - 1] == x) else l[x] for i, x in enumerate(w)], "word 0"),
    (lambda w, l: [l[x] for x in w], "None"),
    (lambda w, l: [l[i] for i in range(len(w))], "not by the token position"),
    (lambda w, l: torch.tensor(first_piece(w, l)), "plain list"),
    (lambda w, l: list(l), "one per word"),
])
def test_wrong_alignments_are_named(wrong, says):
    with pytest.raises(CheckFailed, match=says):
        ch08.align_labels(wrong)


def test_spearman_by_hand():
    assert average_ranks(torch.tensor([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]
    assert spearman(torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([10.0, 20.0, 25.0, 100.0])) == pytest.approx(1.0)
    assert spearman(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    # ranks (1, 2, 3, 4) against (1.5, 1.5, 3, 4): 1 - 6·Σd²/(n(n²-1)) does not hold with ties; Pearson does
    assert spearman(torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([0.0, 0.0, 1.0, 2.0])) == pytest.approx(
        0.9486832980505138)


def test_spearman_matches_scipy_when_available():
    stats = pytest.importorskip("scipy.stats")
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        x = torch.randint(0, 6, (48,), generator=g).float()
        y = x + torch.randn(48, generator=g)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x.numpy(), y.numpy()).statistic, abs=1e-12)
