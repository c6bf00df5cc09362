"""Lesson 02: wrong implementations students write, and correct alternatives."""
from harness import Alternative, Wrong, grading_tests

WRONG = [
    # --- cls_pool ---
    Wrong("cls_pool-last-position", "cls_pool", """
        def cls_pool(H):
            return H[:, -1]
        """, says="took the last position"),
    Wrong("cls_pool-mean-of-positions", "cls_pool", """
        def cls_pool(H):
            return H.mean(dim=1)
        """, says="averaged over the positions"),
    Wrong("cls_pool-first-sequence-not-first-position", "cls_pool", """
        def cls_pool(H):
            return H[0]
        """, says="first sequence of the batch"),
    Wrong("cls_pool-keeps-position-axis", "cls_pool", """
        def cls_pool(H):
            return H[:, :1]
        """, says="kept the position axis"),
    Wrong("cls_pool-position-one", "cls_pool", """
        def cls_pool(H):
            return H[:, 1]
        """, says="took position 1"),
    Wrong("cls_pool-feature-axis", "cls_pool", """
        def cls_pool(H):
            return H[:, :, 0]
        """, says="feature axis"),
    # --- Pooler ---
    Wrong("Pooler-no-tanh", "Pooler", """
        class Pooler(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.dense = nn.Linear(d, d)

            def forward(self, c):
                return self.dense(c)
        """, says="no tanh"),
    Wrong("Pooler-relu-instead-of-tanh", "Pooler", """
        class Pooler(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.dense = nn.Linear(d, d)

            def forward(self, c):
                return torch.relu(self.dense(c))
        """, says="ReLU instead of tanh"),
    Wrong("Pooler-sigmoid-instead-of-tanh", "Pooler", """
        class Pooler(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.dense = nn.Linear(d, d)

            def forward(self, c):
                return torch.sigmoid(self.dense(c))
        """, says="sigmoid instead of tanh"),
    Wrong("Pooler-no-bias", "Pooler", """
        class Pooler(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.dense = nn.Linear(d, d, bias=False)

            def forward(self, c):
                return torch.tanh(self.dense(c))
        """, says="no bias"),
    Wrong("Pooler-takes-position-0-again", "Pooler", """
        class Pooler(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.dense = nn.Linear(d, d)

            def forward(self, c):
                return torch.tanh(self.dense(c[:, 0]))
        """, says="already pooled"),
    Wrong("Pooler-tanh-before-dense", "Pooler", """
        class Pooler(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.dense = nn.Linear(d, d)

            def forward(self, c):
                return self.dense(torch.tanh(c))
        """, says="tanh before the dense layer"),
    # --- mean_pool ---
    Wrong("mean_pool-over-every-position", "mean_pool", """
        def mean_pool(H, mask):
            return H.mean(dim=1)
        """, says="averaged over every position, padding included"),
    Wrong("mean_pool-divides-by-n", "mean_pool", """
        def mean_pool(H, mask):
            m = mask.float().unsqueeze(-1)
            return (H * m).sum(dim=1) / H.shape[1]
        """, says="divided by n"),
    Wrong("mean_pool-mask-on-feature-axis", "mean_pool", """
        def mean_pool(H, mask):
            m = mask.float()
            return (H * m[:, None, :]).sum(dim=1) / m.sum(dim=1, keepdim=True)
        """, says="feature axis"),
    Wrong("mean_pool-bool-mask-only", "mean_pool", """
        def mean_pool(H, mask):
            summed = H.masked_fill(~mask[:, :, None], 0.0).sum(dim=1)
            return summed / mask.sum(dim=1, keepdim=True)
        """, says="0/1 integer"),
    Wrong("mean_pool-sum-not-mean", "mean_pool", """
        def mean_pool(H, mask):
            return (H * mask[:, :, None]).sum(dim=1)
        """, says="did not divide"),
    Wrong("mean_pool-zeroes-padding-in-place", "mean_pool", """
        def mean_pool(H, mask):
            H[~mask.bool()] = 0.0
            return H.sum(dim=1) / mask.sum(dim=1, keepdim=True)
        """, says="changed the H it was given"),
    # --- max_pool ---
    Wrong("max_pool-zero-filled-padding", "max_pool", """
        def max_pool(H, mask):
            return (H * mask[:, :, None]).amax(dim=1)
        """, says="filled the padding with zeros"),
    Wrong("max_pool-padding-included", "max_pool", """
        def max_pool(H, mask):
            return H.amax(dim=1)
        """, says="padding included"),
    Wrong("max_pool-mask-on-feature-axis", "max_pool", """
        def max_pool(H, mask):
            return H.masked_fill(~mask.bool()[:, None, :], float("-inf")).amax(dim=1)
        """, says="feature axis"),
    Wrong("max_pool-returns-values-and-indices", "max_pool", """
        def max_pool(H, mask):
            return H.masked_fill(~mask.bool().unsqueeze(-1), float("-inf")).max(dim=1)
        """, says="(values, indices)"),
    Wrong("max_pool-max-over-features", "max_pool", """
        def max_pool(H, mask):
            return H.masked_fill(~mask.bool().unsqueeze(-1), float("-inf")).amax(dim=-1)
        """, says="over the features"),
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
                return torch.tanh(c @ self.W + self.b)
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

globals().update(grading_tests("02_pooling", WRONG, ALTERNATIVES))
