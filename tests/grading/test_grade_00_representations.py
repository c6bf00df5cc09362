"""Lesson 00: wrong implementations students write (each named by its key in headlab/checks/ch00.py),
and correct alternatives."""
from harness import Alternative, LessonGrading, Wrong

MASK = "positions[None, :] < lengths[:, None]"
WRONG = [
    Wrong.edit("padding_mask-less-or-equal", "padding_mask", "<", "<=", "one-too-many"),
    Wrong.edit("padding_mask-true-on-padding", "padding_mask", MASK, "positions[None, :] >= lengths[:, None]",
               "inverted"),
    Wrong.edit("padding_mask-float-not-bool", "padding_mask", MASK, f"({MASK}).float()", "wrong-dtype"),
    Wrong.edit("padding_mask-left-padding", "padding_mask", MASK, "positions[None, :] >= (n - lengths)[:, None]",
               "left-padding"),
    Wrong.edit("padding_mask-pads-to-longest", "padding_mask", "torch.arange(n,", "torch.arange(int(lengths.max()),",
               "pads-to-longest"),
    # an off-by-one in the width: once told it padded to the longest length, when that was n − 1
    Wrong.edit("padding_mask-n-minus-one-columns", "padding_mask", "torch.arange(n,", "torch.arange(n - 1,",
               "wrong-shape"),
    # a (B,) tensor against an (n,) one, with no [:, None]: torch's broadcasting error
    Wrong.edit("padding_mask-lengths-without-their-axis", "padding_mask", MASK, "positions < lengths",
               "lengths-not-unsqueezed"),
    # lengths taken for one number, the end of one slice for the whole batch: torch's words alone before
    Wrong("padding_mask-slices-to-lengths", "padding_mask", """
        def padding_mask(lengths, n):
            mask = torch.zeros(len(lengths), n, dtype=torch.bool)
            mask[:, :lengths] = True
            return mask
        """, mistake="lengths-as-one-number"),
    Wrong("padding_mask-pad-sequence-time-major", "padding_mask", """
        def padding_mask(lengths, n):
            return torch.nn.utils.rnn.pad_sequence([torch.ones(int(length), dtype=torch.bool) for length in lengths])
        """, mistake="batch-first-forgotten"),
    # BERT's extended attention mask, returned as the mask itself
    Wrong.edit("padding_mask-extended-attention-mask", "padding_mask", MASK, f"({MASK})[:, None, None, :]",
               "attention-axes-added"),
    Wrong.edit("padding_mask-rows-and-columns-swapped", "padding_mask", MASK, "positions[:, None] < lengths[None, :]",
               "rows-and-columns-swapped"),
    Wrong("causal_mask-sees-the-future", "causal_mask", """
        def causal_mask(n):
            return torch.ones(n, n, dtype=torch.bool).triu()
        """, mistake="sees-the-future"),
    Wrong.edit("causal_mask-without-diagonal", "causal_mask", "j <= i", "j < i", "without-diagonal"),
    Wrong("causal_mask-additive-float", "causal_mask", """
        def causal_mask(n):
            return torch.full((n, n), float("-inf")).triu(1)
        """, mistake="additive-float"),
    # finite stand-ins for -inf (all told wrong-dtype before): the 1e9 of many tutorials, finfo's lowest, BERT's -10000
    Wrong("causal_mask-additive-minus-1e9", "causal_mask", """
        def causal_mask(n):
            return torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -1e9)
        """, mistake="additive-float"),
    Wrong("causal_mask-additive-finfo-min", "causal_mask", """
        def causal_mask(n):
            return torch.full((n, n), torch.finfo(torch.float32).min).triu(1)
        """, mistake="additive-float"),
    Wrong("causal_mask-additive-bert-10000", "causal_mask", """
        def causal_mask(n):
            return (1.0 - torch.ones(n, n).tril()) * -10000.0
        """, mistake="additive-float"),
    Wrong("causal_mask-bidirectional", "causal_mask", """
        def causal_mask(n):
            return torch.ones(n, n, dtype=torch.bool)
        """, mistake="bidirectional"),
    Wrong.edit("causal_mask-true-where-blocked", "causal_mask", "j <= i", "j > i", "inverted"),
    Wrong("causal_mask-tril-one-above-the-diagonal", "causal_mask", """
        def causal_mask(n):
            return torch.ones(n, n, dtype=torch.bool).tril(diagonal=1)
        """, mistake="sees-one-future-key"),
    # nanoGPT's causal buffer, (1, 1, n, n) floats
    Wrong("causal_mask-gpt2-buffer", "causal_mask", """
        def causal_mask(n):
            return torch.tril(torch.ones(n, n)).view(1, 1, n, n)
        """, mistake="attention-axes-added"),
]

ALTERNATIVES = [
    Alternative("padding_mask-python-loops", "padding_mask", """
        def padding_mask(lengths, n):
            mask = torch.zeros(len(lengths), n, dtype=torch.bool)
            for b, length in enumerate(lengths.tolist()):
                for i in range(length):
                    mask[b, i] = True
            return mask
        """),
    Alternative("padding_mask-expand-unsqueeze", "padding_mask", """
        def padding_mask(lengths, n):
            return torch.arange(n).expand(lengths.shape[0], n) < lengths.unsqueeze(1)
        """),
    Alternative("causal_mask-tril-of-ones", "causal_mask", """
        def causal_mask(n):
            return torch.tril(torch.ones(n, n)).bool()
        """),
    Alternative("causal_mask-not-strict-upper", "causal_mask", """
        def causal_mask(n):
            return ~torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
        """),
]

class TestGrading(LessonGrading):
    lesson, wrong, alternatives = "00_representations", WRONG, ALTERNATIVES
