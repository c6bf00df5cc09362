"""Lesson 00: wrong implementations students write, and correct alternatives."""
from harness import Alternative, Wrong, grading_tests

WRONG = [
    Wrong("padding_mask-less-or-equal", "padding_mask", """
        def padding_mask(lengths, n):
            return torch.arange(n)[None, :] <= lengths[:, None]
        """, says="one position too many"),
    Wrong("padding_mask-true-on-padding", "padding_mask", """
        def padding_mask(lengths, n):
            return torch.arange(n)[None, :] >= lengths[:, None]
        """, says="inverted"),
    Wrong("padding_mask-float-not-bool", "padding_mask", """
        def padding_mask(lengths, n):
            return (torch.arange(n)[None, :] < lengths[:, None]).float()
        """, says="a mask is a bool tensor"),
    Wrong("padding_mask-left-padding", "padding_mask", """
        def padding_mask(lengths, n):
            return torch.arange(n)[None, :] >= (n - lengths)[:, None]
        """, says="left padding"),
    Wrong("padding_mask-pads-to-longest", "padding_mask", """
        def padding_mask(lengths, n):
            return torch.arange(int(lengths.max()))[None, :] < lengths[:, None]
        """, says="padded to the longest length"),
    Wrong("padding_mask-rows-and-columns-swapped", "padding_mask", """
        def padding_mask(lengths, n):
            return torch.arange(n)[:, None] < lengths[None, :]
        """, says="rows and columns are swapped"),
    Wrong("causal_mask-sees-the-future", "causal_mask", """
        def causal_mask(n):
            return torch.ones(n, n, dtype=torch.bool).triu()
        """, says="the future"),
    Wrong("causal_mask-without-diagonal", "causal_mask", """
        def causal_mask(n):
            i = torch.arange(n)
            return i[None, :] < i[:, None]
        """, says="leaves out the diagonal"),
    Wrong("causal_mask-additive-float", "causal_mask", """
        def causal_mask(n):
            return torch.full((n, n), float("-inf")).triu(1)
        """, says="additive float mask"),
    Wrong("causal_mask-bidirectional", "causal_mask", """
        def causal_mask(n):
            return torch.ones(n, n, dtype=torch.bool)
        """, says="bidirectional"),
    Wrong("causal_mask-true-where-blocked", "causal_mask", """
        def causal_mask(n):
            i = torch.arange(n)
            return i[None, :] > i[:, None]
        """, says="inverted"),
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

globals().update(grading_tests("00_representations", WRONG, ALTERNATIVES))
