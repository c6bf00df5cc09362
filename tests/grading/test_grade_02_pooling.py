"""Lesson 02: wrong implementations students write (each named by its key in headlab/checks/ch02.py),
and correct alternatives."""
from harness import Alternative, LessonGrading, Wrong

TANH = "torch.tanh(self.dense(c))"
MAX = 'H.masked_fill(padding, float("-inf")).amax(dim=1)'
WRONG = [
    # --- cls_pool ---
    *Wrong.edits("cls_pool", "H[:, 0]", [
        ("last-position", "H[:, -1]"),
        ("mean-pooling", "H.mean(dim=1)"),
        ("first-sequence-not-first-position", "H[0]", "first-sequence"),
        ("cls-of-the-first-sequence-only", "H[0][0]", "first-sequence-only"),
        ("keeps-position-axis", "H[:, :1]"),
        ("position-one", "H[:, 1]", "later-position"),
        ("feature-axis", "H[:, :, 0]"),
        ("squeeze-without-axis", "H[:, :1].squeeze()", "squeeze-drops-batch-axis"),
        # Found by a simulated student (issue 27): it passed.
        ("detached", "H[:, 0].detach()", "no-gradient"),
    ]),
    # --- Pooler ---
    *Wrong.edits("Pooler", TANH, [
        ("no-tanh", "self.dense(c)"),
        ("relu-instead-of-tanh", "torch.relu(self.dense(c))", "relu-not-tanh"),
        ("sigmoid-instead-of-tanh", "torch.sigmoid(self.dense(c))", "sigmoid-not-tanh"),
        # Keys no wrong implementation named before (tests/test_mistake_vocabulary.py listed them), as Pooler-no-bias's
        # and mean_pool-sums-the-padding's below:
        ("takes-position-0-again", "torch.tanh(self.dense(c[:, 0]))", "indexes-c-again"),
        # the lesson's W c + b written for a batch of rows: torch's words alone before
        ("weight-times-batch", "torch.tanh(self.dense.weight @ c + self.dense.bias)"),
        ("tanh-before-dense", "self.dense(torch.tanh(c))"),
        ("linear-weight-not-transposed", "torch.tanh(c @ self.dense.weight + self.dense.bias)"),
        # Found by a student audit: they passed before the gradient check and the batch of one.
        ("detached-output", f"{TANH}.detach()", "parameters-without-gradient"),
        ("detached-input", "torch.tanh(self.dense(c.detach()))", "input-detached"),
        # Found by a simulated student: right in eval mode, random in train mode, where lesson 02 measures it.
        ("with-dropout", "torch.tanh(self.dense(F.dropout(c, 0.1, self.training)))", "dropout-in-head"),
        # Found by a simulated student (issue 27): a new random layer on every call (once taken for wrong values),
        # and a second tanh (an nn.Tanh in a Sequential, then torch.tanh in forward).
        ("linear-built-in-forward", "torch.tanh(nn.Linear(c.shape[-1], c.shape[-1])(c))", "layer-built-in-forward"),
        ("tanh-twice", f"torch.tanh({TANH})"),
        # Found by the fourth simulated student (as Pooler-plain-tensors-not-parameters and max_pool-whole-batch
        # below): each got only "expected X, got Y", or passed
        ("squeeze-without-axis", f"{TANH}.squeeze()", "squeeze-drops-batch-axis"),
        ("tanh-module-called-on-a-tensor", "nn.Tanh(self.dense(c))", "module-class-called-on-a-tensor"),
        # Found by a simulated student: each got only "returned X; tanh(W c + b) is Y".
        ("hardtanh-instead-of-tanh", "F.hardtanh(self.dense(c))", "hardtanh-not-tanh"),
        ("clamp-instead-of-tanh", "self.dense(c).clamp(-1, 1)", "hardtanh-not-tanh"),
        ("bias-outside-tanh", "torch.tanh(c @ self.dense.weight.T) + self.dense.bias"),
    ]),
    Wrong.edit("Pooler-no-bias", "Pooler", "nn.Linear(d, d)", "nn.Linear(d, d, bias=False)", "no-bias"),
    Wrong.edit("Pooler-plain-tensors-not-parameters", "Pooler", "self.dense = nn.Linear(d, d)",
               "self.W, self.b = torch.randn(d, d) / d ** 0.5, torch.zeros(d)\n        "
               "self.dense = lambda c: c @ self.W.T + self.b", "no-parameters"),
    # --- mean_pool ---
    *Wrong.edits("mean_pool", "total = (H * weights).sum(dim=1)", [
        ("sums-the-padding", "total = H.sum(dim=1)", "sums-padding"),
        # one sequence's `mask @ H` on a batch: (B, n) @ (B, n, d) is (B, B, d)
        ("mask-times-H", "total = mask.to(H.dtype) @ H", "mask-against-every-sequence"),
    ]),
    *Wrong.edits("mean_pool", "return total / count", [
        ("over-every-position", "return H.mean(dim=1)", "padding-included"),
        ("sum-not-mean", "return total"),
        ("pools-whole-batch", "return H[mask.bool()].mean(dim=0)"),
        ("squeeze-without-axis", "return (total / count).squeeze()", "squeeze-drops-batch-axis"),
        # A rounding that names its operation (issue 27.4)
        ("floor-division", "return total // count"),
        # Found by a simulated student (issue 27): it passed.
        ("float64-count", "return total / count.double()", "wrong-dtype"),
        # The sixth simulated student's wrong passes (as max_pool-detached below): cls_pool's gradient check did not
        # yet cover mean_pool and max_pool.
        ("detached", "return (total / count).detach()", "no-gradient"),
        ("in-place-no-op-on-H", "H.mul_(1.0)\n    return total / count", "changed-input"),
    ]),
    Wrong("mean_pool-divides-by-n", "mean_pool", """
        def mean_pool(H, mask):
            m = mask.float().unsqueeze(-1)
            return (H * m).sum(dim=1) / H.shape[1]
        """, mistake="divides-by-n"),
    Wrong("mean_pool-mask-on-feature-axis", "mean_pool", """
        def mean_pool(H, mask):
            m = mask.float()
            return (H * m[:, None, :]).sum(dim=1) / m.sum(dim=1, keepdim=True)
        """, mistake="mask-on-feature-axis"),
    Wrong("mean_pool-mask-not-unsqueezed", "mean_pool", """
        def mean_pool(H, mask):
            m = mask.float()
            return (H * m).sum(dim=1) / m.sum(dim=1, keepdim=True)
        """, mistake="mask-on-feature-axis"),
    # issue 11.6: a (B,) count divides (B, d) sums; it was once told its mask axis was wrong.
    Wrong.edit("mean_pool-count-without-keepdim", "mean_pool", "count = weights.sum(dim=1)", "count = mask.sum(dim=1)",
               "count-without-keepdim"),
    Wrong("mean_pool-bool-mask-only", "mean_pool", """
        def mean_pool(H, mask):
            summed = H.masked_fill(~mask[:, :, None], 0.0).sum(dim=1)
            return summed / mask.sum(dim=1, keepdim=True)
        """, mistake="bool-mask-only"),
    Wrong("mean_pool-zeroes-padding-in-place", "mean_pool", """
        def mean_pool(H, mask):
            H[~mask.bool()] = 0.0
            return H.sum(dim=1) / mask.sum(dim=1, keepdim=True)
        """, mistake="changed-input"),
    Wrong.edit("mean_pool-inverted-mask", "mean_pool", "mask.to(H.dtype)", "(1 - mask.to(H.dtype))", "inverted-mask"),
    Wrong("mean_pool-integer-mask-as-index", "mean_pool", """
        def mean_pool(H, mask):
            return torch.stack([H[b][mask[b]].mean(dim=0) for b in range(len(H))])   # right with a bool mask only
        """, mistake="integer-mask-as-index"),
    *Wrong.edits("mean_pool", "count = weights.sum(dim=1)", [
        ("counts-over-the-batch-axis", "count = weights.sum(dim=0)", "count-over-batch-axis"),
        ("divides-by-batch-count", "count = weights.sum()"),
    ]),
    # pooled by lengths: right only while every mask is right-padded
    Wrong("mean_pool-slices-the-first-lengths", "mean_pool", """
        def mean_pool(H, mask):
            lengths = mask.long().sum(dim=1)
            return torch.stack([H[b, :int(lengths[b])].mean(dim=0) for b in range(H.shape[0])])
        """, mistake="assumes-right-padding"),
    # --- max_pool ---
    *Wrong.edits("max_pool", MAX, [
        ("whole-batch", "H[mask.bool()].amax(dim=0)", "pools-whole-batch"),
        ("zero-filled-padding", "(H * mask[:, :, None]).amax(dim=1)", "zero-fill"),
        ("padding-included", "H.amax(dim=1)"),
        # Found by a simulated student (issue 27): it got only a row's values.
        ("fill-minus-one", "H.masked_fill(padding, -1.0).amax(dim=1)", "zero-fill"),
        # Found by a simulated student: it passed while every real value was above -100.
        ("fill-minus-hundred", "H.masked_fill(padding, -100.0).amax(dim=1)", "zero-fill"),
        ("detached", f"{MAX}.detach()", "no-gradient"),
        # HuggingFace's additive mask, written for 0/1 float masks, met a bool one: torch's words alone before
        ("one-minus-bool-mask", "(H + (1 - mask[:, :, None]) * -1e9).amax(dim=1)", "minus-on-bool-mask"),
        # an additive mask made by multiplying: 0 · (−inf) is NaN at every real position
        ("times-minus-inf", "(H * mask[:, :, None] + (1 - mask[:, :, None].float()) * float('-inf')).amax(dim=1)",
         "nan-from-zero-times-inf"),
    ]),
    *Wrong.edits("max_pool", ".amax(dim=1)", [
        ("returns-values-and-indices", ".max(dim=1)", "values-and-indices"),
        # the prediction idiom `_, predicted = torch.max(outputs, 1)`: "max_pool returned dtype torch.int64" before
        ("returns-the-indices", ".max(dim=1)[1]", "returns-indices"),
        ("max-over-features", ".amax(dim=-1)", "over-features"),
        ("keepdim-then-squeeze", ".amax(dim=1, keepdim=True).squeeze()", "squeeze-drops-batch-axis"),
    ]),
    Wrong.edit("max_pool-inverted-mask", "max_pool", "~mask.bool()", "mask.bool()", "inverted-mask"),
    Wrong("max_pool-mask-on-feature-axis", "max_pool", """
        def max_pool(H, mask):
            return H.masked_fill(~mask.bool()[:, None, :], float("-inf")).amax(dim=1)
        """, mistake="mask-on-feature-axis"),
    Wrong("max_pool-integer-mask-as-index", "max_pool", """
        def max_pool(H, mask):
            return torch.stack([H[b][mask[b]].amax(dim=0) for b in range(len(H))])
        """, mistake="integer-mask-as-index"),
    # the real tokens gathered by the mask, then put back into rows of equal length: torch's words alone before
    Wrong("max_pool-gathered-tokens-reshaped", "max_pool", """
        def max_pool(H, mask):
            B, n, d = H.shape
            return H[mask.bool()].view(B, -1, d).amax(dim=1)
        """, mistake="ragged-rows-reshaped"),
    Wrong("max_pool-slices-the-first-lengths", "max_pool", """
        def max_pool(H, mask):
            lengths = mask.long().sum(dim=1)
            return torch.stack([H[b, :int(lengths[b])].amax(dim=0) for b in range(H.shape[0])])
        """, mistake="assumes-right-padding"),
]

ALTERNATIVES = [
    Alternative("cls_pool-select", "cls_pool", """
        def cls_pool(H):
            return H.select(dim=1, index=0).clone()
        """),
    Alternative("cls_pool-explicit-slices", "cls_pool", """
        def cls_pool(H):
            return H[:, 0, :]
        """),
    Alternative("Pooler-sequential-with-tanh-module", "Pooler", """
        class Pooler(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(d, d), nn.Tanh())

            def forward(self, c):
                return self.net(c)
        """),
    Alternative("Pooler-raw-parameters", "Pooler", """
        class Pooler(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.W = nn.Parameter(torch.randn(d, d) / d ** 0.5)
                self.b = nn.Parameter(torch.zeros(d))

            def forward(self, c):
                return torch.tanh(c @ self.W.T + self.b)   # W_p c: W held (out, in), as nn.Linear does
        """),
    Alternative("mean_pool-einsum", "mean_pool", """
        def mean_pool(H, mask):
            m = mask.to(H.dtype)
            return torch.einsum("bnd,bn->bd", H, m) / m.sum(-1, keepdim=True)
        """),
    Alternative("mean_pool-python-loop", "mean_pool", """
        def mean_pool(H, mask):
            rows = []
            for b in range(H.shape[0]):
                rows.append(H[b][mask[b].bool()].mean(dim=0))
            return torch.stack(rows)
        """),
    Alternative("max_pool-where-finfo-min", "max_pool", """
        def max_pool(H, mask):
            keep = mask.bool().unsqueeze(-1)
            return torch.where(keep, H, torch.finfo(H.dtype).min).max(dim=1).values
        """),
    Alternative("max_pool-python-loop", "max_pool", """
        def max_pool(H, mask):
            return torch.stack([H[b, mask[b] != 0].max(dim=0).values for b in range(len(H))])
        """),
]

class TestGrading(LessonGrading):
    lesson, wrong, alternatives = "02_pooling", WRONG, ALTERNATIVES
