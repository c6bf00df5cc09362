"""Lesson 06: wrong implementations students write (each named by its key in headlab/checks/ch06.py),
and correct alternatives."""
from harness import Alternative, LessonGrading, Wrong

LAST = "torch.where(real, positions, torch.full_like(positions, -1)).amax(dim=1)"
PARAMS = "512 * 5 + 5"   # the knowledge check's parameter count: a table below edits it, another row drops it

WRONG = [
    *Wrong.edits("last_token_pool", "H[rows, lengths - 1]", [
        ("last-tensor-position", "H[:, -1]"),
        ("end-of-the-longest-row", "H[rows, lengths.max() - 1]", "last-tensor-position"),   # was wrong-values
        ("first-token", "H[:, 0]"),
        ("off-by-one-lengths-as-index", "H[rows, lengths]", "one-too-many"),
        ("every-row-every-position", "H[:, lengths - 1]"),
        ("mean-over-all-positions", "H.mean(dim=1)", "mean-pooling"),
        # torch.gather's index not expanded over the features
        ("gather-index-not-expanded", "H.gather(1, (lengths - 1).view(-1, 1, 1)).squeeze(1)", "gather-index-shape"),
        ("mean-over-real-tokens", "torch.stack([H[b, :k].mean(0) for b, k in enumerate(lengths.tolist())])",
         "mean-pooling"),
        ("another-rows-token", "H[rows.flip(0), lengths - 1]", "wrong-values"),
        # a batch size copied from the lesson's example: the error is on the batch axis, not an off-by-one
        ("batch-size-hard-coded", "H[torch.arange(3), lengths - 1]", "row-index-past-the-batch"),
    ]),
    *Wrong.edits("last_real_index", LAST, [
        ("count-minus-one-under-left-padding", "real.long().sum(1) - 1", "count-assumes-right-padding"),
        ("count-from-first-true-misses-a-hole", "real.long().argmax(1) + real.long().sum(1) - 1",
         "counted-across-a-hole"),
        ("argmax-gives-first-true", "real.long().argmax(dim=1)", "first-true"),
        ("first-real-token-n-minus-length", "real.shape[1] - real.long().sum(1)", "n-minus-length"),
        # issue 11.6: this one was told it computed n − ℓ
        ("flipped-but-not-mapped-back", "real.flip(1).long().argmax(dim=1)", "flipped-not-mapped-back"),
        ("stops-before-the-first-false", "(~real).long().argmax(dim=1) - 1", "stopped-at-first-false"),
        ("count-as-index", "real.long().sum(1)"),
        ("flip-mapped-back-with-n", "real.shape[1] - real.flip(1).long().argmax(dim=1)", "flip-off-by-one"),
        ("last-tensor-position", "torch.full((real.shape[0],), real.shape[1] - 1)"),
        # the row length taken with len(), which counts the rows
        ("flip-mapped-back-with-len", "len(real) - 1 - real.long().flip(1).argmax(dim=1)", "len-is-batch-size"),
        ("int32-indices", f"({LAST}).int()", "wrong-dtype"),
        # an argmax of the flipped bool mask: torch ranks no bools (issue 27.4)
        ("argmax-of-a-bool-mask", "real.shape[1] - 1 - real.flip(1).argmax(dim=1)", "ranks-a-bool-tensor"),
    ]),
    Wrong.edit("last_real_index-bool-only-where", "last_real_index", "real = attention_mask.bool()",
               "real = attention_mask", "bool-mask-only"),
    # the solution's three knowledge-check answers, each edited by many wrong answers; the later rows of each table
    # (issue 11.6) are for the form check, which must refuse a tensor, an unrounded value, a wrong form
    *Wrong.edits("knowledge_check", "[6, 3, 8]", [
        ("positions-are-the-lengths", "[7, 4, 9]", "one-too-many"),
        ("positions-at-the-last-tensor-position", "[9, 9, 9]", "last-tensor-position"),
        ("positions-of-the-first-tokens", "[0, 0, 0]", "first-token"),
        ("positions-where-left-padding-starts", "[3, 6, 1]", "n-minus-length"),
        ("positions-as-a-tensor", "torch.tensor([7, 4, 9]) - 1", "tensor-answer"),
        ("positions-hold-tensors", "list(torch.tensor([7, 4, 9]) - 1)", "tensor-answer"),
        ("two-positions", "[6, 3]", "not-three-positions"),
        ("float-position", "[6.0, 3, 8]", "position-not-int"),
        ("position-past-the-end", "[6, 3, 10]", "position-outside"),
    ]),
    *Wrong.edits("knowledge_check", PARAMS, [
        ("head-without-bias", "512 * 5", "forgets-the-bias"),
        ("bias-per-input", "512 * 5 + 512", "one-bias-per-feature"),
        ("head-of-d-plus-k", "512 + 5", "adds-the-sizes"),
        ("head-of-d-by-d", "512 * 512 + 512", "square-matrix"),
        ("head-with-one-shared-bias", "512 * 5 + 1", "shared-bias"),
        ("head-of-513-by-6", "513 * 6", "one-row-and-column-too-many"),
        ("head-counted-with-the-pooler", "512 * 512 + 512 + 512 * 5 + 5", "counts-the-pooler"),
        ("parameter-count-as-a-tensor", "torch.tensor(512 * 5 + 5)", "tensor-answer"),
        ("float-parameter-count", "512 * 5 + 5.0", "params-not-int"),
        ("no-parameters", "0", "params-not-positive"),
    ]),
    *Wrong.edits("knowledge_check", "round(math.log(5), 2)", [
        ("loss-of-two-classes", "0.69", "ln-2-for-every-k"),
        ("loss-in-log-base-10", "round(math.log10(5), 2)", "log-base-10"),
        ("loss-in-bits", "round(math.log2(5), 2)", "log-base-2"),
        ("loss-is-the-probability", "1 / 5", "probability-not-loss"),
        ("loss-is-the-error-rate", "1 - 1 / 5", "error-rate-not-loss"),
        ("loss-of-one-class-too-few", "round(math.log(4), 2)", "ln-k-minus-1"),
        ("loss-is-another-number", "1.60", "wrong-values"),
        ("unrounded-loss", "math.log(5)", "loss-not-rounded"),
        ("loss-as-a-tensor", "torch.tensor(5.0).log()", "tensor-answer"),
        ("loss-as-text", "'1.61'", "loss-not-a-positive-number"),
        ("negative-loss", "-1.61", "loss-not-a-positive-number"),
    ]),
    Wrong.edit("knowledge_check-one-answer-missing", "knowledge_check", f"kc_head_params = {PARAMS}", "", "not-set"),
]

ALTERNATIVES = [
    Alternative("last_token_pool-gather", "last_token_pool", """
        def last_token_pool(H, lengths):
            index = (lengths - 1).view(-1, 1, 1).expand(-1, 1, H.shape[-1])
            return H.gather(1, index).squeeze(1)
        """),
    Alternative("last_token_pool-python-loop", "last_token_pool", """
        def last_token_pool(H, lengths):
            return torch.stack([H[b, int(length) - 1] for b, length in enumerate(lengths)])
        """),
    Alternative("last_real_index-index-weighted-argmax", "last_real_index", """
        def last_real_index(attention_mask):
            n = attention_mask.shape[1]
            return (attention_mask.long() * torch.arange(n)).argmax(dim=1)
        """),
    Alternative("last_real_index-flip", "last_real_index", """
        def last_real_index(attention_mask):
            n = attention_mask.shape[1]
            return n - 1 - attention_mask.bool().flip(1).long().argmax(dim=1)
        """),
    Alternative("knowledge_check-computed-and-rounded", "knowledge_check", """
        import math
        kc_positions = [length - 1 for length in (7, 4, 9)]
        kc_head_params = 5 * 512 + 5
        kc_initial_loss = round(-math.log(1 / 5), 2)
        """),
    Alternative("knowledge_check-a-tuple-of-positions", "knowledge_check", """
        kc_positions = (6, 3, 8)
        kc_head_params = 2565
        kc_initial_loss = 1.61
        """),
]

class TestGrading(LessonGrading):
    lesson, wrong, alternatives = "06_causal_pitfall", WRONG, ALTERNATIVES
