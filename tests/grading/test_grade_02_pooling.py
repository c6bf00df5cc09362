"""Lesson 02: wrong implementations students write (each named by its key in headlab/checks/ch02.py),
and correct alternatives."""
from harness import Alternative, LessonGrading, Wrong

TANH = "torch.tanh(self.dense(c))"
MAX = 'H.masked_fill(padding, float("-inf")).amax(dim=1)'
MEAN = "return total / count"
WRONG = [
    # --- cls_pool ---
    Wrong.edit("cls_pool-last-position", "cls_pool", "H[:, 0]", "H[:, -1]", "last-position"),
    Wrong.edit("cls_pool-mean-pooling", "cls_pool", "H[:, 0]", "H.mean(dim=1)", "mean-pooling"),
    Wrong.edit("cls_pool-first-sequence-not-first-position", "cls_pool", "H[:, 0]", "H[0]", "first-sequence"),
    Wrong.edit("cls_pool-keeps-position-axis", "cls_pool", "H[:, 0]", "H[:, :1]", "keeps-position-axis"),
    Wrong.edit("cls_pool-position-one", "cls_pool", "H[:, 0]", "H[:, 1]", "later-position"),
    Wrong.edit("cls_pool-feature-axis", "cls_pool", "H[:, 0]", "H[:, :, 0]", "feature-axis"),
    Wrong.edit("cls_pool-squeeze-without-axis", "cls_pool", "H[:, 0]", "H[:, :1].squeeze()", "squeeze-drops-batch-axis"),
    # --- Pooler ---
    Wrong.edit("Pooler-no-tanh", "Pooler", TANH, "self.dense(c)", "no-tanh"),
    Wrong.edit("Pooler-relu-instead-of-tanh", "Pooler", TANH, "torch.relu(self.dense(c))", "relu-not-tanh"),
    Wrong.edit("Pooler-sigmoid-instead-of-tanh", "Pooler", TANH, "torch.sigmoid(self.dense(c))", "sigmoid-not-tanh"),
    # Keys no wrong implementation named before (tests/test_mistake_vocabulary.py listed them):
    Wrong.edit("mean_pool-sums-the-padding", "mean_pool", "total = (H * weights).sum(dim=1)", "total = H.sum(dim=1)",
               "sums-padding"),
    Wrong.edit("Pooler-no-bias", "Pooler", "nn.Linear(d, d)", "nn.Linear(d, d, bias=False)", "no-bias"),
    Wrong.edit("Pooler-takes-position-0-again", "Pooler", TANH, "torch.tanh(self.dense(c[:, 0]))", "indexes-c-again"),
    Wrong.edit("Pooler-tanh-before-dense", "Pooler", TANH, "self.dense(torch.tanh(c))", "tanh-before-dense"),
    Wrong.edit("Pooler-linear-weight-not-transposed", "Pooler", TANH,
               "torch.tanh(c @ self.dense.weight + self.dense.bias)", "linear-weight-not-transposed"),
    # Found by a student audit: they passed before the gradient check and the batch of one.
    Wrong.edit("Pooler-detached-output", "Pooler", TANH, f"{TANH}.detach()", "parameters-without-gradient"),
    Wrong.edit("Pooler-detached-input", "Pooler", TANH, "torch.tanh(self.dense(c.detach()))", "input-detached"),
    # Found by a simulated student: right in eval mode, random in train mode, where lesson 02 measures it.
    Wrong.edit("Pooler-with-dropout", "Pooler", TANH, "torch.tanh(self.dense(F.dropout(c, 0.1, self.training)))",
               "dropout-in-head"),
    # Found by a simulated student (issue 27): a new random layer on every call (once taken for wrong values), and
    # a second tanh (an nn.Tanh in a Sequential, then torch.tanh in forward).
    Wrong.edit("Pooler-linear-built-in-forward", "Pooler", TANH, "torch.tanh(nn.Linear(c.shape[-1], c.shape[-1])(c))",
               "layer-built-in-forward"),
    Wrong.edit("Pooler-tanh-twice", "Pooler", TANH, f"torch.tanh({TANH})", "tanh-twice"),
    # Found by the fourth simulated student: each got only "expected X, got Y", or passed
    Wrong.edit("Pooler-squeeze-without-axis", "Pooler", TANH, f"{TANH}.squeeze()", "squeeze-drops-batch-axis"),
    Wrong.edit("Pooler-plain-tensors-not-parameters", "Pooler", "self.dense = nn.Linear(d, d)",
               "self.W, self.b = torch.randn(d, d) / d ** 0.5, torch.zeros(d)\n        "
               "self.dense = lambda c: c @ self.W.T + self.b", "no-parameters"),
    Wrong.edit("Pooler-tanh-module-called-on-a-tensor", "Pooler", TANH, "nn.Tanh(self.dense(c))",
               "module-class-called-on-a-tensor"),
    Wrong.edit("max_pool-whole-batch", "max_pool", MAX, "H[mask.bool()].amax(dim=0)", "pools-whole-batch"),
    # --- mean_pool ---
    Wrong.edit("mean_pool-over-every-position", "mean_pool", MEAN, "return H.mean(dim=1)", "padding-included"),
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
    Wrong.edit("mean_pool-sum-not-mean", "mean_pool", MEAN, "return total", "sum-not-mean"),
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
    Wrong("max_pool-integer-mask-as-index", "max_pool", """
        def max_pool(H, mask):
            return torch.stack([H[b][mask[b]].amax(dim=0) for b in range(len(H))])
        """, mistake="integer-mask-as-index"),
    Wrong.edit("mean_pool-divides-by-batch-count", "mean_pool", "count = weights.sum(dim=1)", "count = weights.sum()",
               "divides-by-batch-count"),
    Wrong.edit("mean_pool-pools-whole-batch", "mean_pool", MEAN, "return H[mask.bool()].mean(dim=0)",
               "pools-whole-batch"),
    # --- max_pool ---
    Wrong.edit("max_pool-zero-filled-padding", "max_pool", MAX, "(H * mask[:, :, None]).amax(dim=1)", "zero-fill"),
    Wrong.edit("max_pool-padding-included", "max_pool", MAX, "H.amax(dim=1)", "padding-included"),
    Wrong("max_pool-mask-on-feature-axis", "max_pool", """
        def max_pool(H, mask):
            return H.masked_fill(~mask.bool()[:, None, :], float("-inf")).amax(dim=1)
        """, mistake="mask-on-feature-axis"),
    Wrong.edit("max_pool-returns-values-and-indices", "max_pool", ".amax(dim=1)", ".max(dim=1)", "values-and-indices"),
    Wrong.edit("max_pool-max-over-features", "max_pool", ".amax(dim=1)", ".amax(dim=-1)", "over-features"),
    Wrong.edit("max_pool-inverted-mask", "max_pool", "~mask.bool()", "mask.bool()", "inverted-mask"),
    Wrong.edit("mean_pool-squeeze-without-axis", "mean_pool", MEAN, "return (total / count).squeeze()",
               "squeeze-drops-batch-axis"),
    # pooled by lengths: right only while every mask is right-padded
    Wrong("mean_pool-slices-the-first-lengths", "mean_pool", """
        def mean_pool(H, mask):
            lengths = mask.long().sum(dim=1)
            return torch.stack([H[b, :int(lengths[b])].mean(dim=0) for b in range(H.shape[0])])
        """, mistake="wrong-values"),
    Wrong("max_pool-slices-the-first-lengths", "max_pool", """
        def max_pool(H, mask):
            lengths = mask.long().sum(dim=1)
            return torch.stack([H[b, :int(lengths[b])].amax(dim=0) for b in range(H.shape[0])])
        """, mistake="wrong-values"),
    Wrong.edit("max_pool-keepdim-then-squeeze", "max_pool", ".amax(dim=1)", ".amax(dim=1, keepdim=True).squeeze()",
               "squeeze-drops-batch-axis"),
    # A rounding that names its operation (issue 27.4)
    Wrong.edit("mean_pool-floor-division", "mean_pool", MEAN, "return total // count",
               "floor-division"),
    # Found by a simulated student (issue 27): the first two passed, the last got only a row's values.
    Wrong.edit("cls_pool-detached", "cls_pool", "H[:, 0]", "H[:, 0].detach()", "no-gradient"),
    Wrong.edit("mean_pool-float64-count", "mean_pool", MEAN, "return total / count.double()", "wrong-dtype"),
    Wrong.edit("max_pool-fill-minus-one", "max_pool", MAX, "H.masked_fill(padding, -1.0).amax(dim=1)", "zero-fill"),
    # The sixth simulated student's wrong passes: cls_pool's gradient check did not yet cover the other two.
    Wrong.edit("mean_pool-detached", "mean_pool", MEAN, "return (total / count).detach()", "no-gradient"),
    Wrong.edit("mean_pool-in-place-no-op-on-H", "mean_pool", MEAN, "H.mul_(1.0)\n    return total / count",
               "changed-input"),
    Wrong.edit("max_pool-detached", "max_pool", MAX, f"{MAX}.detach()", "no-gradient"),
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
