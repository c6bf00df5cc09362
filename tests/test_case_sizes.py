"""Cases that cannot hide a mistake: in every visible case of every exercise, the sizes a mistake could swap or
broadcast (B, n, d, K, ...) differ from each other.

Where two sizes are equal, a wrong axis runs without an error and gives some other wrong value: forgetting
`keepdim` on a (B,) count divides a (B, d) sum by it column-wise when B = d, and the learner is told about a
symptom ("not L2-normalised"). With distinct sizes the same mistake raises an error whose two sizes say which axes
met, and the check can name it. An equality is allowed only where a mistake-table entry needs it, declared below
with its reason.
"""
from __future__ import annotations

import importlib
from itertools import combinations

import pytest
import torch

from headlab.checks import ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08
from headlab.checks.engine import Exercise


def _read(exercise: Exercise):
    return lambda case: exercise.read(case)[0]


def _shape(*names):
    """Sizes named after the axes of a tensor input."""
    return lambda t: dict(zip(names, torch.as_tensor(t).shape))


# Every table of visible cases, with how to read one case into the sizes of its axes (a number such as max_len
# or n_bins is no axis). A table with a single size (or
# none, e.g. tag strings) has nothing to swap and is listed with `None`.
TABLES = {
    "padding_mask": (ch00.padding_mask.cases, lambda c: {"B": len(c[0]), "n": c[1]}),
    "causal_mask": (ch00.causal_mask.cases, None),
    "mask_tokens exact": (ch01.EXACT_CASES, lambda c: _shape("B", "n")(c[0])),
    "mask_tokens statistics": (ch01.STAT_CASES, None),   # (vocab_size, p, seed): one size
    "MLMHead": (ch01.HEAD_CASES, lambda c: {"V": c[0], "d": c[1]}),
    "mlm_loss": (ch01.LOSS_CASES, lambda c: _shape(*"BnV"[-torch.as_tensor(c[0]).dim():])(c[0])),
    "tying_savings": (ch01.tying_savings.cases, lambda c: {"V": c[0][0], "d": c[0][1]}),
    "cls_pool": (ch02.CLS_CASES, lambda c: _shape("B", "n", "d")(c[0])),
    "Pooler": (ch02._pooler.cases, lambda c: {"d": c[0], "B": len(c[3])}),   # POOLER_CASES and the layout case
    "mean_pool": (ch02.MEAN_CASES, lambda c: _shape("B", "n", "d")(c[0])),
    "max_pool": (ch02.MAX_CASES, lambda c: _shape("B", "n", "d")(c[0])),
    "SequenceClassifier": (ch03.DEFAULT_CASES, lambda c: {"d": c[0], "K": c[1], "B": c[2]}),
    "SequenceClassifier train": (ch03.TRAIN_CASES, lambda c: {"d": c[0], "K": c[1]}),
    "head_param_count": (ch03.head_param_count.cases, lambda c: {"d": c[0], "K": c[1]}),
    "untrained_loss": (ch03.untrained_loss.cases, None),
    "TokenClassifier": (ch04.HEAD_CASES, lambda c: {"d": c[0], "L": c[1], "B": c[2], "n": c[3]}),
    "TokenClassifier train": (ch04.TRAIN_CASES, lambda c: {"d": c[0], "L": c[1]}),
    "token_loss": (ch04.LOSS_CASES, lambda c: _shape("B", "n", "L")(c[0])),
    "bio_to_spans": (ch04.BIO_CASES, None),
    # best_span returns (B, 2): with B = 2, pairs stacked as (2, B) have the right shape.
    "best_span": (ch05.BEST_SPAN_CASES, lambda c: {**_shape("B", "n")(c[1]), "pair": 2}),
    "span_loss": (ch05.SPAN_LOSS_CASES, lambda c: _shape("B", "n")(c[0])),
    "SpanHead": (ch05.HEAD_SIZES, lambda c: {"d": c[0], "B": c[1], "n": c[2]}),
    "last_token_pool": (ch06.last_token_pool.cases, lambda c: {"B": len(c[0]), "n": c[1], "d": c[2]}),
    "last_real_index": (ch06.last_real_index.cases, lambda c: _shape("B", "n")(_read(ch06.last_real_index)(c)[0])),
    "predict_or_reject": (ch07.predict_or_reject.cases, lambda c: _shape("B", "C")(c[0])),
    "expected_calibration_error": (ch07.expected_calibration_error.cases, lambda c: _shape("N", "C")(c[0])),
    "restrict_to_labels": (ch07.restrict_to_labels.cases, lambda c: {**_shape("B", "V")(c[0]), "C": len(c[1])}),
    "sentence_embedding": (ch08._embedding.cases, lambda c: _shape("B", "n", "d")(c[0])),
    "align_labels": (ch08.align_labels.cases, lambda c: {"tokens": len(c[0]), "words": len(c[1])}),
}

# (table, case index, the two equal sizes): where a mistake-table entry needs exactly that equality.
ALLOWED = {
    # "classes-on-sequence-axis": F.cross_entropy on (B, n, L) logits reads n as the classes. With n = L it runs
    # and the table names it by its value; with n ≠ L, case 1, it crashes and the crash hint names it.
    ("token_loss", 0, ("n", "L")),
}


def _clashes(name):
    cases, sizes = TABLES[name]
    found = []
    for i, case in enumerate(cases):
        named = sizes(case)
        # Two axes of size 1 swapped or broadcast give the same tensor: nothing wrong to hide.
        found += [(name, i, (a, b)) for a, b in combinations(named, 2) if named[a] == named[b] > 1]
    return found


@pytest.mark.parametrize("name", [name for name, (_, sizes) in TABLES.items() if sizes is not None])
def test_no_two_sizes_of_a_case_are_equal(name):
    clashes = [(i, pair) for table, i, pair in _clashes(name) if (table, i, pair) not in ALLOWED]
    assert not clashes, (f"{name}: case {clashes[0][0]} has {' = '.join(clashes[0][1])}, so a mistake that swaps or "
                         f"broadcasts these axes runs unseen; every clash (case, sizes): {clashes}")


def test_every_allowed_equality_is_still_there():
    """An exception that no case needs any more is removed, not kept as a silent licence."""
    present = {clash for name in TABLES if TABLES[name][1] is not None for clash in _clashes(name)}
    assert ALLOWED <= present, ALLOWED - present


def test_every_exercise_with_cases_is_listed():
    """A new exercise's cases are held to the rule too: each Exercise with visible cases appears in TABLES."""
    listed = {id(case) for cases, _ in TABLES.values() for case in cases}
    for number in range(9):
        module = importlib.import_module(f"headlab.checks.ch0{number}")
        for attr, value in vars(module).items():
            tables = [value.cases] if isinstance(value, Exercise) and value.cases else \
                [value] if attr.endswith(("_CASES", "_SIZES")) and isinstance(value, list) else []
            for table in tables:
                assert all(id(case) in listed for case in table), f"ch0{number}.{attr} is not in TABLES"
