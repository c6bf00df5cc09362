"""Lesson 06: wrong implementations students write (each named by its key in headlab/checks/ch06.py),
and correct alternatives."""
from harness import Alternative, LessonGrading, Wrong

POOL = "H[rows, lengths - 1]"
LAST = "torch.where(real, positions, torch.full_like(positions, -1)).amax(dim=1)"
# the solution's three knowledge-check answers, each edited by many wrong answers below
POSITIONS = "[6, 3, 8]"
PARAMS = "512 * 5 + 5"
LOSS = "round(math.log(5), 2)"


def pool(name, new, mistake):
    return Wrong.edit(f"last_token_pool-{name}", "last_token_pool", POOL, new, mistake)


def last(name, new, mistake, old=LAST):
    return Wrong.edit(f"last_real_index-{name}", "last_real_index", old, new, mistake)


def kc(name, old, new, mistake):
    return Wrong.edit(f"knowledge_check-{name}", "knowledge_check", old, new, mistake)


WRONG = [
    pool("last-tensor-position", "H[:, -1]", "last-tensor-position"),
    pool("first-token", "H[:, 0]", "first-token"),
    pool("off-by-one-lengths-as-index", "H[rows, lengths]", "one-too-many"),
    pool("every-row-every-position", "H[:, lengths - 1]", "every-row-every-position"),
    pool("mean-over-all-positions", "H.mean(dim=1)", "mean-pooling"),
    pool("mean-over-real-tokens", "torch.stack([H[b, :k].mean(0) for b, k in enumerate(lengths.tolist())])",
         "mean-pooling"),
    pool("another-rows-token", "H[rows.flip(0), lengths - 1]", "wrong-values"),
    # a batch size copied from the lesson's example: the error is on the batch axis, not an off-by-one
    pool("batch-size-hard-coded", "H[torch.arange(3), lengths - 1]", "raised-IndexError"),
    last("count-minus-one-under-left-padding", "real.long().sum(1) - 1", "count-assumes-right-padding"),
    last("count-from-first-true-misses-a-hole", "real.long().argmax(1) + real.long().sum(1) - 1",
         "counted-across-a-hole"),
    last("argmax-gives-first-true", "real.long().argmax(dim=1)", "first-true"),
    last("first-real-token-n-minus-length", "real.shape[1] - real.long().sum(1)", "n-minus-length"),
    # issue 11.6: this one was told it computed n − ℓ
    last("flipped-but-not-mapped-back", "real.flip(1).long().argmax(dim=1)", "flipped-not-mapped-back"),
    last("stops-before-the-first-false", "(~real).long().argmax(dim=1) - 1", "stopped-at-first-false"),
    last("count-as-index", "real.long().sum(1)", "count-as-index"),
    last("flip-mapped-back-with-n", "real.shape[1] - real.flip(1).long().argmax(dim=1)", "flip-off-by-one"),
    last("last-tensor-position", "torch.full((real.shape[0],), real.shape[1] - 1)", "last-tensor-position"),
    last("int32-indices", f"({LAST}).int()", "wrong-dtype"),
    last("bool-only-where", "real = attention_mask", "raised-RuntimeError", old="real = attention_mask.bool()"),
    kc("positions-are-the-lengths", POSITIONS, "[7, 4, 9]", "one-too-many"),
    kc("positions-at-the-last-tensor-position", POSITIONS, "[9, 9, 9]", "last-tensor-position"),
    kc("positions-of-the-first-tokens", POSITIONS, "[0, 0, 0]", "first-token"),
    kc("positions-where-left-padding-starts", POSITIONS, "[3, 6, 1]", "n-minus-length"),
    kc("head-without-bias", PARAMS, "512 * 5", "forgets-the-bias"),
    kc("bias-per-input", PARAMS, "512 * 5 + 512", "one-bias-per-feature"),
    kc("head-of-d-plus-k", PARAMS, "512 + 5", "adds-the-sizes"),
    kc("head-of-d-by-d", PARAMS, "512 * 512 + 512", "square-matrix"),
    kc("loss-of-two-classes", LOSS, "0.69", "ln-2-for-every-k"),
    kc("loss-in-log-base-10", LOSS, "round(math.log10(5), 2)", "log-base-10"),
    kc("loss-in-bits", LOSS, "round(math.log2(5), 2)", "log-base-2"),
    kc("loss-is-the-probability", LOSS, "1 / 5", "probability-not-loss"),
    kc("loss-is-another-number", LOSS, "1.60", "wrong-values"),
    # issue 11.6: the form check must refuse a tensor and an unrounded value
    kc("unrounded-loss", LOSS, "math.log(5)", "loss-not-rounded"),
    kc("positions-as-a-tensor", POSITIONS, "torch.tensor([7, 4, 9]) - 1", "tensor-answer"),
    kc("loss-as-a-tensor", LOSS, "torch.tensor(5.0).log()", "tensor-answer"),
    kc("positions-hold-tensors", POSITIONS, "list(torch.tensor([7, 4, 9]) - 1)", "tensor-answer"),
    kc("two-positions", POSITIONS, "[6, 3]", "not-three-positions"),
    kc("float-position", POSITIONS, "[6.0, 3, 8]", "position-not-int"),
    kc("position-past-the-end", POSITIONS, "[6, 3, 10]", "position-outside"),
    kc("parameter-count-as-a-tensor", PARAMS, "torch.tensor(512 * 5 + 5)", "tensor-answer"),
    kc("float-parameter-count", PARAMS, "512 * 5 + 5.0", "params-not-int"),
    kc("no-parameters", PARAMS, "0", "params-not-positive"),
    kc("loss-as-text", LOSS, "'1.61'", "loss-not-a-positive-number"),
    kc("negative-loss", LOSS, "-1.61", "loss-not-a-positive-number"),
    kc("one-answer-missing", f"kc_head_params = {PARAMS}", "", "not-set"),
    # an argmax of the flipped bool mask: torch ranks no bools (issue 27.4)
    last("argmax-of-a-bool-mask", "real.shape[1] - 1 - real.flip(1).argmax(dim=1)", "ranks-a-bool-tensor"),
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
