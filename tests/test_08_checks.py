"""Lesson 08's checks: right answers pass, the usual wrong ones are named by their key; Spearman's ρ by hand."""
import pytest
import torch
import torch.nn.functional as F

from headlab.checks import CheckFailed, ch08
from headlab.metrics import average_ranks, spearman, spearman_rows
from heads_lessons import lesson


def masked(H, m):
    m = m[:, :, None].to(H.dtype)
    return (H * m).sum(1) / m.sum(1)


def embedding(H, m):
    return F.normalize(masked(H, m), dim=-1)


def without_specials(m):
    """The mask without [CLS] and [SEP], each row's first and last real token, on either side of the padding."""
    m, rows = m.bool().clone(), torch.arange(len(m))
    m[rows, m.long().argmax(1)] = False
    m[rows, m.shape[1] - 1 - m.long().flip(1).argmax(1)] = False
    return m


def first_piece(word_ids, word_labels):
    out, previous = [], None
    for w in word_ids:
        out.append(-100 if w is None or w == previous else word_labels[w])
        previous = w
    return out


def failure(check, wrong, match: str | None = None) -> CheckFailed:
    """The failure `check` gives `wrong` (saying `match`). The tests compare its `.mistake` themselves:
    tests/mistakes.py finds the keys a test proves by that comparison."""
    with pytest.raises(CheckFailed, match=match) as caught:
        check(wrong)
    return caught.value


def test_right_answers_pass(capsys):
    ch08.sentence_embedding(embedding)
    ch08.sentence_embedding(lambda H, m: F.normalize((H * m[:, :, None]).sum(1), dim=-1))  # sum: same direction
    ch08.align_labels(first_piece)
    out = capsys.readouterr().out
    assert "✓ sentence_embedding" in out and "✓ align_labels" in out


# Mistakes beyond tests/grading/test_grade_08_real_model.py's wrong implementations, named by their key.
@pytest.mark.parametrize("wrong, key", [
    (lambda H, m: masked(F.normalize(H, dim=-1), m), "normalised-tokens-before-mean"),   # and not renormalised
    (lambda H, m: F.normalize(masked(H, m), p=1, dim=-1), "l1-norm"),
    (lambda H, m: H.mean(1), "padding-in-mean"),                                      # and not normalised
    (lambda H, m: F.normalize(H * m[:, :, None], dim=-1), "one-vector-per-token"),
    (lambda H, m: embedding(H, m)[:, None], "keeps-position-axis"),
    (lambda H, m: H[:, 0], "cls-instead-of-mean"),                                    # and not normalised
    (lambda H, m: (H * m[:, :, None]).sum(1), "not-normalised"),
    (lambda H, m: F.normalize(H[torch.arange(len(H)), m.bool().sum(1) - 1], dim=-1), "last-real-token"),
    (lambda H, m: F.normalize(H.masked_fill(~m.bool()[:, :, None], -1e9).amax(1), dim=-1), "max-pooling"),
    (lambda H, m: F.normalize(masked(H, m) + 0.1, dim=-1), "wrong-values"),           # no table entry: shown
    (lambda H, m: embedding(H, without_specials(m)), "specials-left-out"),
    (lambda H, m: masked(H, m) / masked(H, m).norm(), "norm-without-dim"),
    # A (B,) norm or count without keepdim: the cases' B ≠ d, so it raises, and the error's sizes name it.
    (lambda H, m: masked(H, m) / masked(H, m).norm(dim=-1), "divided-without-keepdim"),
    (lambda H, m: F.normalize((H * m[:, :, None]).sum(1) / m.sum(1), dim=-1), "divided-without-keepdim"),
    (lambda H, m: (z := (H * m[:, :, None]).sum(1) / m.sum(1)) / z.norm(dim=-1), "divided-without-keepdim"),  # both
    (lambda H, m: embedding(torch.tensor(H.tolist()), m), "no-gradient"),   # right values from a copy of H
])
def test_wrong_embeddings_are_named(wrong, key):
    got = failure(ch08.sentence_embedding, wrong)
    assert got.mistake == key, str(got)


def test_an_embedding_under_no_grad_is_told_that_fine_tuning_needs_its_gradient():
    def frozen(H, m):
        with torch.no_grad():
            return embedding(H, m)
    assert failure(ch08.sentence_embedding, frozen, match="nothing below the embedding").mistake == "no-gradient"


def test_a_mask_the_answer_cannot_take_is_explained():
    def indexes(H, m):   # a float mask cannot index
        return F.normalize(torch.stack([H[b][m[b]].mean(0) for b in range(len(H))]), dim=-1)
    got = failure(ch08.sentence_embedding, lambda H, m: indexes(H, m if m.dtype != torch.long else m.bool()),
                  match="convert it first")
    assert got.mistake == "bool-mask-only"


def test_an_embedding_that_writes_into_H_is_named():
    def in_place(H, m):
        H *= m[:, :, None].to(H.dtype)
        return F.normalize(H.sum(1), dim=-1)
    assert failure(ch08.sentence_embedding, in_place, match="changed the tensors").mistake == "changed-input"


@pytest.mark.parametrize("wrong, key", [
    (lambda w, l: [l[i] for i in range(len(w))], "label-by-token-position"),
    (lambda w, l: torch.tensor(first_piece(w, l)), "returned-a-tensor"),
    (lambda w, l: list(l), "one-label-per-word"),
    (lambda w, l: [float(x) for x in first_piece(w, l)], "not-an-int"),
    (lambda w, l: [x if x == -100 else x + 1 for x in first_piece(w, l)], "wrong-values"),
])
def test_wrong_alignments_are_named(wrong, key):
    got = failure(ch08.align_labels, wrong)
    assert got.mistake == key, str(got)


def test_an_alignment_that_changes_its_input_is_named():
    def pops(w, l):
        out = first_piece(w, l)
        w.pop()
        return out
    assert failure(ch08.align_labels, pops).mistake == "changed-input"


def test_an_alignment_that_pops_its_labels_is_told_about_lists():
    def pops(w, l):
        previous, out = None, []
        for x in w:
            out.append(-100 if x is None or x == previous else l.pop(0))
            previous = x
        return out
    got = failure(ch08.align_labels, pops, match="changed the word_ids or word_labels list")
    assert got.mistake == "changed-input" and "tensor" not in str(got)


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


def test_spearman_rows_is_spearman_on_each_row():
    # Lesson 08's bootstrap reads its 1,000 resamples in one call: each row must be spearman's value to the
    # last bit, ties (the integer gold scores) included, or the printed interval would move
    g = torch.Generator().manual_seed(1)
    gold = torch.randint(0, 6, (48,), generator=g).float()
    cosine = gold / 5 + torch.randn(48, generator=g)
    k = torch.randint(0, 48, (200, 48), generator=g)
    rows = spearman_rows(cosine[k], gold[k])
    assert rows.tolist() == [spearman(cosine[i], gold[i]) for i in k]
    with pytest.raises(ValueError):
        spearman_rows(cosine[None], gold[None, :10])


def test_a_mean_over_no_position_says_that_specials_count():
    def without_specials(H, m):   # [CLS] and the last real token ([SEP]) left out: a 2-token row is empty
        m = m.bool().clone()
        m[:, 0] = False
        m[torch.arange(len(m)), m.sum(1)] = False
        return embedding(H, m)
    got = failure(ch08.sentence_embedding, without_specials, match=r"\[CLS\] and \[SEP\] included")
    assert got.mistake == "wrong-values"


def test_a_mask_on_the_feature_axis_is_told_apart_from_a_missing_keepdim():
    """Both raise a broadcasting error; B, n and d differ in every case, so the error's sizes say which axes met."""
    with pytest.raises(CheckFailed) as caught:
        ch08.sentence_embedding(lambda H, m: F.normalize((H * m).sum(1) / m.sum(1, keepdim=True), dim=-1))
    assert "mask must line up with H's position axis" in str(caught.value) and "keepdim" not in str(caught.value)
    assert "`attention_mask[:, :, None]`" in caught.value.fix   # shown when the same crash comes again
    assert caught.value.mistake == "mask-on-feature-axis"   # lesson 02's key for the same mistake


def test_the_stored_gradient_is_the_solutions():
    """The visible check's gradient is stored data (the package holds no function that embeds as the answer
    does): it is the gradient the solution notebook's sentence_embedding gives the same input."""
    namespace = {"torch": torch}
    exec(lesson("08_real_model").answers()["sentence_embedding"], namespace)
    shape, seed, mask = (ch08.GRADIENT_INPUT[k] for k in ("shape", "seed", "mask"))
    H = torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).requires_grad_()
    mask = torch.tensor(mask)
    namespace["sentence_embedding"](H, mask).sum().backward()
    stored = torch.tensor(ch08.GRADIENT_ROWS)[:, None, :] * mask[:, :, None]
    assert torch.allclose(H.grad, stored, atol=1e-6), (H.grad, stored)
