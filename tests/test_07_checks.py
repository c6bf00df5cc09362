"""Lesson 07's visible checks: their hand-written numbers are right, the ECE mistakes of the table give what
those mistakes give, and misuse is explained."""
import math
from fractions import Fraction

import pytest
import torch

from headlab.checks import CheckFailed
from headlab.checks import ch07


def exact_ece(probs, labels, n_bins, closed="right", weighted=True, over_all_bins=False, column=None,
              zero_binned=False, rms=False, batch=(False, False), squared=False, global_accuracy=False,
              integer_weights=False, summed=False, binary=False, true_label=False, centres=False, over_bins=False,
              counted=False, drop_top=False):
    """ECE in exact fractions (the visible cases use dyadic probabilities); with `column`, the confidence is that
    class's probability, and a confidence of 0 lies in no bin (k/n < conf ≤ (k+1)/n), or with `zero_binned` in
    bin 0. `squared` squares each gap, `global_accuracy` compares each bin with the accuracy of all rows, and
    `integer_weights` weighs a bin by count // N. `summed` adds the unweighted gaps; `binary` predicts class 1 where
    its probability exceeds 1/2, class 0 elsewhere. `true_label` takes the probability of the row's label as its
    confidence; `centres` compares each bin's accuracy with the bin's centre, (k + 1/2) / n. `over_bins` weighs a bin by
    count / n_bins; `counted` takes a bin's count of correct rows for its accuracy; `drop_top` leaves the last bin
    out."""
    rows, flat = [], [Fraction(x) for p in probs for x in p]   # `batch`: the confidence, the prediction of all rows
    for p, y in zip(probs, labels):
        p = [Fraction(x) for x in p]
        top = max(p)
        conf = max(flat) if batch[0] else p[y] if true_label else top if column is None else p[column]
        pred = int(p[1] > Fraction(1, 2)) if binary else flat.index(max(flat)) if batch[1] else p.index(top)
        rows.append((conf, int(pred == y)))
    bins: dict[int, list] = {}
    for conf, ok in rows:
        if closed == "both":   # [k/n, (k+1)/n]: a confidence on an inner edge lies in two bins
            for k in range(n_bins):
                if Fraction(k, n_bins) <= conf <= Fraction(k + 1, n_bins):
                    bins.setdefault(k, []).append((conf, ok))
            continue
        k = next((k for k in range(n_bins) if Fraction(k, n_bins) < conf <= Fraction(k + 1, n_bins)),
                 0 if zero_binned else None) \
            if closed == "right" else min(int(conf * n_bins), n_bins - 1)
        if k is not None and not (drop_top and k == n_bins - 1):
            bins.setdefault(k, []).append((conf, ok))
    accuracy = {k: Fraction(sum(o for _, o in (rows if global_accuracy else v)),
                            1 if counted else len(rows if global_accuracy else v)) for k, v in bins.items()}
    confidence = {k: Fraction(2 * k + 1, 2 * n_bins) if centres else sum(c for c, _ in v) / len(v)
                  for k, v in bins.items()}
    gaps = {k: abs(accuracy[k] - confidence[k]) ** (2 if squared else 1) for k, v in bins.items()}
    if rms:
        return math.sqrt(sum(Fraction(len(bins[k]), len(rows)) * g ** 2 for k, g in gaps.items()))
    if weighted:
        share = {k: (len(v) // len(rows) if integer_weights else Fraction(len(v), n_bins if over_bins else len(rows)))
                 for k, v in bins.items()}
        return float(sum(share[k] * g for k, g in gaps.items()))
    return float(sum(gaps.values()) / (1 if summed else n_bins if over_all_bins else len(gaps)))


def exact_global_gap(probs, labels, signed=False):
    tops = [max(Fraction(x) for x in p) for p in probs]
    right = [p.index(max(p)) == y for p, y in zip(probs, labels)]
    gap = Fraction(sum(right), len(right)) - sum(tops) / len(tops)
    return float(gap if signed else abs(gap))


def exact_per_prediction_gap(probs, labels):
    """The mean over the rows of |correct − confidence|, each row's own gap."""
    gaps = [abs(int(p.index(max(p)) == y) - max(Fraction(x) for x in p)) for p, y in zip(probs, labels)]
    return float(sum(gaps) / len(gaps))


ECE_CASES = ch07.expected_calibration_error.cases


@pytest.mark.parametrize("case", ECE_CASES, ids=["10 bins", "4 bins", "3 bins"])
def test_the_hand_written_ece_values_are_right(case):
    probs, labels, n_bins, expected = case
    assert exact_ece(probs, labels, n_bins) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("case", ECE_CASES, ids=["10 bins", "4 bins", "3 bins"])
def test_the_ece_mistakes_give_what_each_mistake_gives(case):
    probs, labels, n_bins, expected = case
    inputs, _ = ch07.expected_calibration_error.read(case)
    got = [(m.key, ch07.expected_calibration_error.output(m, inputs)) for m in ch07.expected_calibration_error.mistakes]
    want = [("nan-from-empty-bins", float("nan")),   # both cases have empty bins
            ("left-closed-bins", exact_ece(probs, labels, n_bins, closed="left")),
            ("unweighted-bins", exact_ece(probs, labels, n_bins, weighted=False)),
            ("unweighted-bins", exact_ece(probs, labels, n_bins, weighted=False, over_all_bins=True)),
            ("unweighted-bins", exact_ece(probs, labels, n_bins, weighted=False, summed=True)),
            ("single-global-gap", exact_global_gap(probs, labels)),
            ("confidence-of-class-one", exact_ece(probs, labels, n_bins, column=1)),
            ("confidence-of-class-one", exact_ece(probs, labels, n_bins, column=1, zero_binned=True)),
            ("confidence-of-class-one", exact_ece(probs, labels, n_bins, column=1, binary=True)),
            ("confidence-of-class-one", exact_ece(probs, labels, n_bins, column=1, binary=True, zero_binned=True)),
            ("counts-not-shares", len(labels) * exact_ece(probs, labels, n_bins)),
            ("fixed-ten-bins", exact_ece(probs, labels, 10)),
            ("rms-of-gaps", exact_ece(probs, labels, n_bins, rms=True)),
            ("squared-gaps", exact_ece(probs, labels, n_bins, squared=True)),
            ("global-accuracy-per-bin", exact_ece(probs, labels, n_bins, global_accuracy=True)),
            ("integer-division-weights", exact_ece(probs, labels, n_bins, integer_weights=True)),
            *[("max-over-whole-batch", exact_ece(probs, labels, n_bins, batch=(c, k)) / (len(labels) if per else 1))
              for c, k, per in [(1, 1, 0), (1, 1, 1), (0, 1, 0), (1, 0, 0), (1, 0, 1)]],
            ("one-bin-too-few", exact_ece(probs, labels, n_bins - 1)),
            ("edge-in-two-bins", exact_ece(probs, labels, n_bins, closed="both")),
            ("confidence-of-true-label", exact_ece(probs, labels, n_bins, true_label=True)),
            ("bin-centre-as-confidence", exact_ece(probs, labels, n_bins, centres=True)),
            ("single-global-gap", exact_global_gap(probs, labels, signed=True)),
            ("per-prediction-gaps", exact_per_prediction_gap(probs, labels)),
            ("weights-over-n-bins", exact_ece(probs, labels, n_bins, over_bins=True)),
            ("bin-accuracy-as-count", exact_ece(probs, labels, n_bins, counted=True)),
            ("top-bin-dropped", exact_ece(probs, labels, n_bins, drop_top=True)),
            ("softmax-of-probabilities",
             exact_ece(torch.tensor(probs, dtype=torch.float64).softmax(-1).tolist(), labels, n_bins))]
    assert [k for k, _ in got] == [k for k, _ in want]
    for (key, value), (_, exact) in zip(got, want):
        assert value == pytest.approx(exact, abs=1e-12, nan_ok=True), key


def test_every_ece_mistake_can_be_named_on_some_case():
    """The engine names a mistake in a case where its value is wrong and every other key with the same value there is
    refuted by another case (engine._judge_confirmed): each mistake has such a case. (Per-prediction gaps equal
    fixed ten bins' ECE on the 4-bin case; the 10-bin case, where ten bins are right, tells them apart.)"""
    table = ch07.expected_calibration_error
    values = [(case[3], [(m.key, table.output(m, table.read(case)[0])) for m in table.mistakes]) for case in ECE_CASES]
    near = lambda a, b: a != a and b != b or abs(a - b) <= 1e-3   # noqa: E731  NaN is near NaN

    for i, (key, _) in enumerate(values[0][1]):
        named = False
        for c, (right, got) in enumerate(values):
            value = got[i][1]
            if near(value, right):
                continue
            others = [d for d in range(len(values)) if d != c]   # row j is refuted where it differs from row i
            named |= all(any(not near(values[d][1][j][1], values[d][1][i][1]) for d in others)
                         for j, (k, v) in enumerate(got) if k != key and near(v, value))
        assert named, key


def test_the_hand_written_rejections_are_right():
    for probs, threshold, reject, expected in ch07.predict_or_reject.cases:
        for row, want in zip(probs, expected):
            top = max(row)
            assert want == (row.index(top) if top >= threshold else reject)
            assert row.count(top) == 1, "no ties: the argmax must be unambiguous"


def test_the_hand_written_restrictions_are_right():
    for logits, ids, expected in ch07.restrict_to_labels.cases:
        got = torch.tensor(logits)[:, torch.as_tensor(ids)].softmax(-1)
        assert torch.allclose(got, torch.tensor(expected), atol=1e-6)


def test_a_tensor_instead_of_a_function_is_explained():
    with pytest.raises(CheckFailed, match="takes your function expected_calibration_error itself"):
        ch07.expected_calibration_error(torch.zeros(3))


def test_a_stub_says_it_is_not_written_yet():
    def stub(probs, threshold, reject=-1):
        raise NotImplementedError()

    with pytest.raises(NotImplementedError, match="not written yet"):
        ch07.predict_or_reject(stub)


def test_modifying_the_logits_is_caught():
    def in_place(logits, ids):
        out = logits[:, ids].softmax(-1)
        logits.zero_()
        return out

    with pytest.raises(CheckFailed, match="changed the logits tensor") as caught:
        ch07.restrict_to_labels(in_place)
    assert caught.value.mistake == "changed-input"


def test_an_ece_that_is_not_a_float_is_named():
    with pytest.raises(CheckFailed) as caught:
        ch07.expected_calibration_error(lambda probs, labels, n_bins=10: [0.296875])
    assert caught.value.mistake == "not-a-float"


def test_right_answers_pass(capsys):
    ch07.restrict_to_labels(lambda z, ids: z[:, ids].softmax(-1))
    ch07.predict_or_reject(lambda p, t, reject=-1: torch.where(p.max(-1).values >= t, p.argmax(-1),
                                                                torch.full((len(p),), reject)))
    assert "✓ restrict_to_labels: 4 cases passed" in capsys.readouterr().out


def _ece(conf_of, pred_of=lambda probs: probs.argmax(-1), weight=lambda share: share):
    """A right ECE but for how each row's confidence and prediction are read, `conf_of(probs)` and `pred_of(probs)`,
    and how a bin's share of the predictions weighs its gap, `weight(share)`."""
    def ece(probs, labels, n_bins=10):
        conf, pred = conf_of(probs), pred_of(probs)
        correct = (pred == labels).float()
        total = 0.0
        for k in range(n_bins):
            inside = (conf > k / n_bins) & (conf <= (k + 1) / n_bins)
            if inside.any():
                total += weight(inside.float().mean().item()) * abs(correct[inside].mean().item()
                                                                    - conf[inside].mean().item())
        return float(total)
    return ece


@pytest.mark.parametrize("wrong, key, words", [
    (_ece(lambda probs: probs[:, 1]), "confidence-of-class-one", "probability of class 1 as every row's confidence"),
    (_ece(lambda probs: probs.max(dim=1)), "max-without-values", "returns a pair (values, indices)"),
    # the next two got only the recipe (a simulated student, issue 27)
    (_ece(lambda probs: probs[:, 1], lambda probs: (probs[:, 1] > 0.5).long()), "confidence-of-class-one",
     "as if there were two classes"),
    (_ece(lambda probs: probs.max(-1).values, weight=lambda share: 1), "unweighted-bins",
     "a plain sum of the per-bin gaps: the bins are not weighted, so the sum can exceed 1"),
])
def test_ece_names_the_confidence_of_class_one_and_max_without_values(wrong, key, words):
    """Each got the recipe or torch's TypeError (issue 27)."""
    with pytest.raises(CheckFailed) as caught:
        ch07.expected_calibration_error(wrong)
    assert caught.value.mistake == key and words in str(caught.value), str(caught.value)
    assert "\n" not in str(caught.value) and caught.value.fix not in str(caught.value)


def _edges_ece(edges_of, inside_of=lambda conf, lo, hi: (conf > lo) & (conf <= hi)):
    """A right ECE but for its bins: between the edges `edges_of(n_bins)`, holding `inside_of(conf, lo, hi)`."""
    def ece(probs, labels, n_bins=10):
        conf, pred = probs.max(dim=-1)
        correct, edges, total = (pred == labels).float(), edges_of(n_bins), 0.0
        for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist()):
            inside = inside_of(conf, lo, hi)
            if inside.any():
                total += inside.float().mean().item() * abs(correct[inside].mean().item() - conf[inside].mean().item())
        return total
    return ece


@pytest.mark.parametrize("wrong, key, words", [
    # passed the 10- and 4-bin cases, which give the same ECE with one bin less
    (_edges_ece(lambda n: torch.linspace(0, 1, n)), "one-bin-too-few", "n_bins − 1 bins"),
    (_edges_ece(lambda n: torch.linspace(0, 1, n + 1), lambda conf, lo, hi: (conf >= lo) & (conf <= hi)),
     "edge-in-two-bins", "was counted in both"),
])
def test_ece_names_bins_from_the_wrong_edges(wrong, key, words):
    with pytest.raises(CheckFailed) as caught:
        ch07.expected_calibration_error(wrong)
    assert caught.value.mistake == key and words in str(caught.value), str(caught.value)
    assert "\n" not in str(caught.value) and caught.value.fix not in str(caught.value)


@pytest.mark.parametrize("wrong, key, words", [
    (lambda next_token_logits, label_token_ids: next_token_logits[label_token_ids].softmax(-1), "indexes-rows",
     "It indexed the rows"),
    (lambda next_token_logits, label_token_ids: next_token_logits[:, label_token_ids].sigmoid(),
     "sigmoid-not-softmax", "applied a sigmoid to each label logit on its own"),
    (lambda next_token_logits, label_token_ids: next_token_logits[:, label_token_ids].log_softmax(-1),
     "log-probabilities", "returned log-probabilities"),
    # the next three got torch's RuntimeError, or a shape; the last passed (a simulated student, issue 27)
    (lambda next_token_logits, label_token_ids: torch.gather(
        next_token_logits, 1, torch.as_tensor(label_token_ids)).softmax(-1), "gather-index-shape",
     "`torch.gather` along dim 1 needs its index as a tensor of the same number of dimensions as the logits"),
    (lambda next_token_logits, label_token_ids: torch.gather(next_token_logits, 1, label_token_ids).softmax(-1),
     "gather-index-shape", "shape (B, C) = (3, 2): one row of label ids per example"),
    (lambda next_token_logits, label_token_ids: torch.gather(
        next_token_logits, 1, torch.as_tensor(label_token_ids)[None]).softmax(-1), "gather-index-shape",
     "a (1, C) index gathers from row 0 alone"),
    (lambda next_token_logits, label_token_ids: next_token_logits[:, label_token_ids].exp()
     / next_token_logits[:, label_token_ids].exp().sum(-1, keepdim=True), "exp-overflow",
     "exp(100) overflows float32 to inf"),
])
def test_restrict_to_labels_names_rows_sigmoid_and_log_probabilities(wrong, key, words):
    """The rows got IndexError's "positions count from 0", sigmoid and log-probabilities the whole recipe (issue 27)."""
    with pytest.raises(CheckFailed) as caught:
        ch07.restrict_to_labels(wrong)
    err = caught.value
    assert err.mistake == key and words in str(err), str(err)
    assert "\n" not in str(err) and "positions count from 0" not in str(err) and err.fix and err.fix not in str(err)


def test_a_softmax_summed_over_the_whole_batch_is_named():
    """A softmax written by hand with `.sum()` and no dim got only the expected rows."""
    with pytest.raises(CheckFailed, match="sum over the whole batch") as caught:
        ch07.restrict_to_labels(lambda z, ids: z[:, ids].exp() / z[:, ids].exp().sum())
    assert caught.value.mistake == "softmax-over-batch"


def test_an_unnamed_wrong_distribution_keeps_the_recipe_for_a_repeat():
    with pytest.raises(CheckFailed) as caught:
        ch07.restrict_to_labels(lambda next_token_logits, label_token_ids: next_token_logits[:, label_token_ids] ** 2)
    assert caught.value.mistake == "wrong-values" and "Select the logits" in caught.value.fix
    assert "Select the logits" not in str(caught.value)


def test_predict_or_reject_names_a_softmax_of_probabilities():
    """It got only "expected 0, you returned -1" (a simulated student, issue 27)."""
    def resoftmaxed(probs, threshold, reject=-1):
        top, prediction = probs.softmax(-1).max(dim=-1)
        return torch.where(top >= threshold, prediction, torch.full_like(prediction, reject))
    with pytest.raises(CheckFailed) as caught:
        ch07.predict_or_reject(resoftmaxed)
    err = caught.value
    assert err.mistake == "softmax-of-probabilities" and "which are probabilities already" in str(err), str(err)
    assert "\n" not in str(err) and err.fix and err.fix not in str(err)


def test_predict_or_reject_names_a_tolerance_on_the_threshold():
    """It got only "expected -1, you returned 0" (the seventh simulated student's wrong pass, issue 27)."""
    def tolerant(probs, threshold, reject=-1):
        top, prediction = probs.max(dim=-1)
        return torch.where(top >= threshold - 1e-3, prediction, torch.full_like(prediction, reject))
    with pytest.raises(CheckFailed) as caught:
        ch07.predict_or_reject(tolerant)
    err = caught.value
    assert err.mistake == "threshold-tolerance" and "just below the threshold 0.5" in str(err), str(err)


@pytest.mark.parametrize("select", [lambda z, ids: torch.index_select(z, 1, ids), lambda z, ids: z.index_select(1, ids)])
def test_index_select_on_a_list_of_ids_is_named(select):
    """It got torch's TypeError alone: the visible cases pass the ids as a list, and once as a tensor."""
    with pytest.raises(CheckFailed, match="takes its index as a 1-D tensor") as caught:
        ch07.restrict_to_labels(lambda next_token_logits, label_token_ids: select(next_token_logits,
                                                                                  label_token_ids).softmax(-1))
    assert caught.value.mistake == "index-not-a-tensor" and "torch.as_tensor" in caught.value.fix
