"""Lesson 07: wrong implementations students write (each named by its key in headlab/checks/ch07.py),
and correct alternatives."""
from harness import Alternative, LessonGrading, Wrong

SOFTMAX = "return chosen.softmax(dim=-1)"               # restrict_to_labels's last line
TOP = "confidence, prediction = probs.max(dim=-1)"     # expected_calibration_error's first line
GAP = "(correct[inside].mean() - confidence[inside].mean()).abs()"   # and its one bin's gap

WRONG = [
    # --- predict_or_reject ------------------------------------------------------------------------
    Wrong.edit("predict_or_reject-strict-greater", "predict_or_reject", "top >= threshold", "top > threshold",
               "strict-greater"),
    # a margin rule: it agrees with strict-greater on one case only, so strict-greater is refuted by the others
    Wrong("predict_or_reject-margin-over-the-runner-up", "predict_or_reject", """
        def predict_or_reject(probs, threshold, reject=-1):
            top2 = probs.topk(2, dim=-1).values
            pred = probs.argmax(dim=-1)
            return torch.where(top2[:, 0] - top2[:, 1] >= threshold, pred, torch.full_like(pred, reject))
        """, mistake="margin-not-top-probability"),
    Wrong("predict_or_reject-never-rejects", "predict_or_reject", """
        def predict_or_reject(probs, threshold, reject=-1):
            return probs.argmax(dim=-1)
        """, mistake="never-rejects"),
    Wrong("predict_or_reject-hardcoded-minus-one", "predict_or_reject", """
        def predict_or_reject(probs, threshold, reject=-1):
            top, pred = probs.max(dim=-1)
            pred = pred.clone()
            pred[top < threshold] = -1
            return pred
        """, mistake="hardcoded-minus-one"),
    Wrong.edit("predict_or_reject-rejects-the-confident", "predict_or_reject",
               "prediction, torch.full_like(prediction, reject)", "torch.full_like(prediction, reject), prediction",
               "rejects-the-confident"),
    Wrong("predict_or_reject-first-class-over-threshold", "predict_or_reject", """
        def predict_or_reject(probs, threshold, reject=-1):
            over = probs >= threshold
            return torch.where(over.any(-1), over.long().argmax(-1), torch.full((len(probs),), reject))
        """, mistake="first-over-threshold"),
    # a rejection class of its own, index C, instead of the caller's `reject`
    Wrong.edit("predict_or_reject-reject-as-class-C", "predict_or_reject", "torch.full_like(prediction, reject)",
               "torch.full_like(prediction, probs.shape[-1])", "reject-as-new-class"),
    Wrong.edit("predict_or_reject-argmax-over-batch", "predict_or_reject", "probs.max(dim=-1)", "probs.max(dim=0)",
               "argmax-over-batch"),
    # Found by a simulated student (issue 27): each got only the expected value before.
    Wrong.edit("predict_or_reject-threshold-on-class-index", "predict_or_reject", "top >=", "prediction >=",
               "threshold-on-class-index"),
    Wrong.edit("predict_or_reject-threshold-on-class-one", "predict_or_reject", "top >=", "probs[:, 1] >=",
               "confidence-of-class-one"),
    # the one bin's gap written otherwise
    *Wrong.edits("expected_calibration_error", GAP, [
        ("squared-gaps", "((correct[inside].mean() - confidence[inside].mean()) ** 2)"),
        # each prediction's own gap, averaged: the same mean whether or not it is taken bin by bin
        ("per-prediction-gaps", "(correct[inside] - confidence[inside]).abs().mean()"),
        ("bin-accuracy-summed", "(correct[inside].sum() - confidence[inside].mean()).abs()", "bin-accuracy-as-count"),
        ("global-accuracy-in-every-bin", "(correct.mean() - confidence[inside].mean()).abs()",
         "global-accuracy-per-bin"),
        # Found by probing the check: each got only the recipe before.
        ("bin-centre-as-confidence", "(correct[inside].mean() - (k + 0.5) / n_bins).abs()"),
        ("signed-gaps", "correct[inside].mean() - confidence[inside].mean()", "single-global-gap"),
    ], prefix="ece"),
    Wrong.edit("ece-weights-over-n-bins", "expected_calibration_error", "count / len(labels)", "count / n_bins",
               "weights-over-n-bins"),
    Wrong.edit("ece-bucketize-without-minus-one", "expected_calibration_error",
               "(torch.ceil(confidence * n_bins) - 1).long().clamp(0, n_bins - 1)",
               "torch.bucketize(confidence, torch.linspace(0, 1, n_bins + 1))", "top-bin-dropped"),
    # the widely copied ECE code's softmax, written for logits
    Wrong.edit("ece-softmax-of-probabilities", "expected_calibration_error", TOP,
               "confidence, prediction = probs.softmax(dim=-1).max(dim=-1)", "softmax-of-probabilities"),
    Wrong.edit("ece-integer-division-weights", "expected_calibration_error", "count / len(labels)",
               "count // len(labels)", "integer-division-weights"),
    Wrong.edit("ece-rms-of-gaps", "expected_calibration_error", "* gap\n    return float(ece)",
               "* gap ** 2\n    return float(ece) ** 0.5", "rms-of-gaps"),
    Wrong.edit("ece-max-over-whole-batch", "expected_calibration_error", TOP, "confidence, prediction = probs.max(), "
               "probs.argmax()", "max-over-whole-batch"),
    Wrong.edit("ece-argmax-over-whole-batch", "expected_calibration_error", TOP, "confidence = probs.max(dim=-1).values"
               "\n    prediction = probs.argmax()", "max-over-whole-batch"),
    Wrong.edit("restrict-one-hot", "restrict_to_labels", SOFTMAX,
               "return F.one_hot(chosen.argmax(dim=-1), chosen.shape[-1]).float()", "one-hot-not-probabilities"),
    Wrong.edit("restrict-logits-divided-by-sum", "restrict_to_labels", SOFTMAX, "return chosen / chosen.sum(-1, True)",
               "logits-divided-by-sum"),
    Wrong("predict_or_reject-returns-top-probability", "predict_or_reject", """
        def predict_or_reject(probs, threshold, reject=-1):
            top = probs.max(dim=-1).values
            return torch.where(top >= threshold, top, torch.full_like(top, reject))
        """, mistake="returns-top-probability"),
    # --- expected_calibration_error ---------------------------------------------------------------
    Wrong.edit("ece-left-closed-bins-floor", "expected_calibration_error",
               "(torch.ceil(confidence * n_bins) - 1)", "torch.floor(confidence * n_bins)", "left-closed-bins"),
    Wrong("ece-left-closed-bins-loop", "expected_calibration_error", """
        def expected_calibration_error(probs, labels, n_bins=10):
            conf, pred = probs.max(dim=-1)
            correct = (pred == labels).float()
            edges = torch.linspace(0, 1, n_bins + 1)
            total = 0.0
            for lo, hi in zip(edges[:-1], edges[1:]):
                inside = (conf >= lo) & (conf < hi)
                if inside.sum() > 0:
                    total += inside.float().mean() * (correct[inside].mean() - conf[inside].mean()).abs()
            return float(total)
        """, mistake="left-closed-bins"),
    Wrong("ece-unweighted-bins", "expected_calibration_error", """
        def expected_calibration_error(probs, labels, n_bins=10):
            conf, pred = probs.max(dim=-1)
            correct = (pred == labels).float()
            bins = (torch.ceil(conf * n_bins) - 1).long().clamp(0, n_bins - 1)
            gaps = []
            for k in range(n_bins):
                inside = bins == k
                if inside.any():
                    gaps.append((correct[inside].mean() - conf[inside].mean()).abs())
            return float(torch.stack(gaps).mean())
        """, mistake="unweighted-bins"),
    # Found by a simulated student: before, only the definition repeated.
    Wrong.edit("ece-weighted-by-counts", "expected_calibration_error", "ece += count / len(labels) * gap",
               "ece += count * gap", "counts-not-shares"),
    Wrong("ece-single-global-gap", "expected_calibration_error", """
        def expected_calibration_error(probs, labels, n_bins=10):
            conf, pred = probs.max(dim=-1)
            return float(((pred == labels).float().mean() - conf.mean()).abs())
        """, mistake="single-global-gap"),
    Wrong.edit("ece-ten-bins-always", "expected_calibration_error",
               "(torch.ceil(confidence * n_bins) - 1).long().clamp(0, n_bins - 1)\n    ece = 0.0\n    for k in range(n_bins):",
               "(torch.ceil(confidence * 10) - 1).long().clamp(0, 9)\n    ece = 0.0\n    for k in range(10):",
               "fixed-ten-bins"),
    Wrong.edit("ece-returns-a-tensor", "expected_calibration_error", "return float(ece)", "return torch.tensor(ece)",
               "returned-a-tensor"),
    Wrong.edit("ece-nan-from-empty-bins", "expected_calibration_error",
               "        if count == 0:\n            continue\n", "", "nan-from-empty-bins"),
    # --- restrict_to_labels -----------------------------------------------------------------------
    Wrong("restrict-softmax-over-vocabulary-first", "restrict_to_labels", """
        def restrict_to_labels(next_token_logits, label_token_ids):
            return next_token_logits.softmax(dim=-1)[:, label_token_ids]
        """, mistake="softmax-before-selecting"),
    Wrong.edit("restrict-returns-logits", "restrict_to_labels", SOFTMAX, "return chosen",
               "returns-logits"),
    Wrong("restrict-sorted-label-ids", "restrict_to_labels", """
        def restrict_to_labels(next_token_logits, label_token_ids):
            ids = sorted(int(i) for i in label_token_ids)
            return next_token_logits[:, ids].softmax(dim=-1)
        """, mistake="vocabulary-order"),
    Wrong("restrict-boolean-mask-vocab-order", "restrict_to_labels", """
        def restrict_to_labels(next_token_logits, label_token_ids):
            keep = torch.zeros(next_token_logits.shape[-1], dtype=torch.bool)
            keep[torch.as_tensor(label_token_ids)] = True
            return next_token_logits[:, keep].softmax(dim=-1)
        """, mistake="vocabulary-order"),
    Wrong.edit("restrict-softmax-over-batch", "restrict_to_labels", "softmax(dim=-1)", "softmax(dim=0)",
               "softmax-over-batch"),
    Wrong("restrict-masked-vocabulary-distribution", "restrict_to_labels", """
        def restrict_to_labels(next_token_logits, label_token_ids):
            keep = torch.zeros(next_token_logits.shape[-1], dtype=torch.bool)
            keep[torch.as_tensor(label_token_ids)] = True
            return next_token_logits.masked_fill(~keep, float("-inf")).softmax(dim=-1)
        """, mistake="whole-vocabulary-distribution"),
    Wrong.edit("restrict-indexes-rows", "restrict_to_labels", "next_token_logits[:, label_token_ids]",
               "next_token_logits[label_token_ids]", "indexes-rows"),
    Wrong("restrict-log-softmax", "restrict_to_labels", """
        def restrict_to_labels(next_token_logits, label_token_ids):
            return next_token_logits[:, label_token_ids].log_softmax(dim=-1)    # log-probabilities
        """, mistake="log-probabilities"),
    Wrong.edit("restrict-sigmoid-per-label", "restrict_to_labels", SOFTMAX, "return chosen.sigmoid()",
               "sigmoid-not-softmax"),
    Wrong.edit("ece-confidence-of-class-one", "expected_calibration_error", TOP,
               "prediction = probs.argmax(dim=-1)\n    confidence = probs[:, 1]", "confidence-of-class-one"),
    Wrong("ece-max-without-values", "expected_calibration_error", """
        def expected_calibration_error(probs, labels, n_bins=10):
            confidence = probs.max(dim=1)                 # a pair (values, indices), not the top probabilities
            correct = (probs.argmax(dim=1) == labels).float()
            ece = 0.0
            for k in range(n_bins):
                inside = (confidence > k / n_bins) & (confidence <= (k + 1) / n_bins)
                if inside.any():
                    ece += inside.float().mean().item() * abs(correct[inside].mean() - confidence[inside].mean()).item()
            return ece
        """, mistake="max-without-values"),
    # a mean of the bool hits: torch takes means of floats only (issue 27.4)
    Wrong.edit("expected_calibration_error-mean-of-bool-hits", "expected_calibration_error",
               "correct = (prediction == labels).float()", "correct = prediction == labels",
               "float-operation-on-integers"),
    # Found by a simulated student (issue 27): each got the recipe, a row, or torch's error; the unshifted exp passed.
    Wrong.edit("predict_or_reject-softmax-of-probabilities", "predict_or_reject", "probs.max(dim=-1)",
               "probs.softmax(dim=-1).max(dim=-1)", "softmax-of-probabilities"),
    # The seventh simulated student's wrong pass: a tolerance on the threshold
    Wrong("predict_or_reject-threshold-tolerance", "predict_or_reject", """
        def predict_or_reject(probs, threshold, reject=-1):
            top, pred = probs.max(dim=-1)
            return torch.where(top >= threshold - 1e-3, pred, torch.full_like(pred, reject))
        """, mistake="threshold-tolerance"),
    *[Wrong(f"ece-{name}", "expected_calibration_error", f"""
        def expected_calibration_error(probs, labels, n_bins=10):
            confidence, prediction = probs.max(dim=-1)
            correct = (prediction == labels).float()
            edges = torch.linspace(0, 1, {edges})
            ece = 0.0
            for lo, hi in zip(edges[:-1], edges[1:]):
                inside = {inside}
                if inside.any():
                    ece += inside.float().mean().item() * (correct[inside].mean() - confidence[inside].mean()).abs().item()
            return ece
        """, mistake=key) for name, edges, inside, key in [
        ("linspace-n-bins-edges", "n_bins", "(confidence > lo) & (confidence <= hi)", "one-bin-too-few"),
        ("closed-on-both-sides", "n_bins + 1", "(confidence >= lo) & (confidence <= hi)", "edge-in-two-bins")]],
    Wrong.edit("restrict-index-select-on-the-list", "restrict_to_labels", "next_token_logits[:, label_token_ids]",
               "torch.index_select(next_token_logits, 1, label_token_ids)", "index-not-a-tensor"),
    Wrong.edit("ece-unweighted-sum", "expected_calibration_error", "ece += count / len(labels) * gap", "ece += gap",
               "unweighted-bins"),
    Wrong.edit("ece-class-one-as-two-classes", "expected_calibration_error", TOP,
               "confidence = probs[:, 1]\n    prediction = (probs[:, 1] > 0.5).long()", "confidence-of-class-one"),
    # Found by probing the check: each got only the recipe before.
    Wrong.edit("ece-confidence-of-the-true-label", "expected_calibration_error", TOP,
               "prediction = probs.argmax(dim=-1)\n    confidence = probs[torch.arange(len(labels)), labels]",
               "confidence-of-true-label"),
    Wrong.edit("predict_or_reject-argmax-without-a-dim", "predict_or_reject", "probs.max(dim=-1)",
               "probs.max(dim=-1).values, probs.argmax()", "max-over-whole-batch"),
    *Wrong.edits("restrict_to_labels", SOFTMAX, [   # the softmax written by hand
        ("hand-written-softmax-over-the-batch", "return chosen.exp() / chosen.exp().sum(dim=0)", "softmax-over-batch"),
        ("unshifted-exp", "return chosen.exp() / chosen.exp().sum(dim=-1, keepdim=True)", "exp-overflow"),
    ], prefix="restrict"),
    Wrong("restrict-gather-with-the-ids", "restrict_to_labels", """
        def restrict_to_labels(next_token_logits, label_token_ids):
            index = torch.as_tensor(label_token_ids)
            return torch.gather(next_token_logits, 1, index).softmax(dim=-1)
        """, mistake="gather-index-shape"),
]

ALTERNATIVES = [
    Alternative("predict_or_reject-python-loop", "predict_or_reject", """
        def predict_or_reject(probs, threshold, reject=-1):
            out = []
            for row in probs.tolist():
                best = max(range(len(row)), key=lambda c: row[c])
                out.append(best if row[best] >= threshold else reject)
            return torch.tensor(out, dtype=torch.long)
        """),
    Alternative("predict_or_reject-masked-assignment", "predict_or_reject", """
        def predict_or_reject(probs, threshold, reject=-1):
            pred = probs.argmax(-1)
            unsure = probs.amax(-1) < threshold
            return pred.masked_fill(unsure, reject)
        """),
    Alternative("ece-linspace-edges-loop", "expected_calibration_error", """
        def expected_calibration_error(probs, labels, n_bins=10):
            conf, pred = probs.max(dim=1)
            correct = pred.eq(labels).float()
            edges = torch.linspace(0, 1, n_bins + 1)
            ece, N = 0.0, len(conf)
            for lo, hi in zip(edges[:-1], edges[1:]):
                inside = (conf > lo) & (conf <= hi)
                count = int(inside.sum())
                if count:
                    ece += count / N * abs(correct[inside].mean().item() - conf[inside].mean().item())
            return ece
        """),
    Alternative("ece-bucketize-scatter", "expected_calibration_error", """
        def expected_calibration_error(probs, labels, n_bins=10):
            conf, pred = probs.max(-1)
            correct = (pred == labels).double()
            inner = torch.arange(1, n_bins, dtype=torch.float64) / n_bins
            k = torch.bucketize(conf.double(), inner)          # boundaries[k-1] < x <= boundaries[k]
            count = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, k, torch.ones_like(correct))
            acc_sum = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, k, correct)
            conf_sum = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, k, conf.double())
            return float((acc_sum - conf_sum).abs().sum() / len(conf))
        """),
    Alternative("restrict-renormalise-vocab-softmax", "restrict_to_labels", """
        def restrict_to_labels(next_token_logits, label_token_ids):
            p = torch.softmax(next_token_logits, dim=-1)[:, torch.as_tensor(label_token_ids)]
            return p / p.sum(dim=-1, keepdim=True)
        """),
    Alternative("restrict-gather-log-softmax", "restrict_to_labels", """
        def restrict_to_labels(next_token_logits, label_token_ids):
            ids = torch.as_tensor(label_token_ids, dtype=torch.long)
            chosen = next_token_logits.gather(1, ids.expand(next_token_logits.shape[0], -1))
            return torch.log_softmax(chosen, dim=1).exp()
        """),
]

class TestGrading(LessonGrading):
    lesson, wrong, alternatives = "07_typed_outputs", WRONG, ALTERNATIVES
