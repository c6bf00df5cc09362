"""Lesson 05: wrong implementations students write, and correct alternatives."""
from harness import Alternative, Wrong, grading_tests

WRONG = [
    # --- SpanHead ----------------------------------------------------------------------------------
    Wrong("SpanHead-one-shared-vector", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.score = nn.Linear(d, 1)          # one scorer for both ends

            def forward(self, H):
                logits = self.score(H).squeeze(-1)
                return logits, logits
        """, says="same parameters"),
    Wrong("SpanHead-returns-probabilities", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.proj = nn.Linear(d, 2)

            def forward(self, H):
                start, end = self.proj(H).unbind(-1)
                return start.softmax(-1), end.softmax(-1)
        """, says="are probabilities"),
    Wrong("SpanHead-keeps-last-axis", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.start = nn.Linear(d, 1)
                self.end = nn.Linear(d, 1)

            def forward(self, H):
                return self.start(H), self.end(H)
        """, says="squeeze(-1)"),
    Wrong("SpanHead-one-tensor-not-a-pair", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.proj = nn.Linear(d, 2)

            def forward(self, H):
                return self.proj(H)
        """, says="return two"),
    Wrong("SpanHead-extra-hidden-layer", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.mlp = nn.Sequential(nn.Linear(d, d), nn.Tanh(), nn.Linear(d, 2))

            def forward(self, H):
                start, end = self.mlp(H).unbind(-1)
                return start, end
        """, says="one Linear(d, 2)"),
    # --- best_span ---------------------------------------------------------------------------------
    Wrong("best_span-independent-argmax", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            i = start_logits.masked_fill(~allowed, float("-inf")).argmax(-1)
            j = end_logits.masked_fill(~allowed, float("-inf")).argmax(-1)
            return torch.stack([i, j], dim=-1)
        """, says="two independent argmaxes"),
    Wrong("best_span-answer-inside-the-question", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            n = start_logits.shape[1]
            i = torch.arange(n)[:, None]
            j = torch.arange(n)[None, :]
            band = (j >= i) & (j <= i + max_len - 1)
            scores = start_logits.log_softmax(-1)[:, :, None] + end_logits.log_softmax(-1)[:, None, :]
            flat = scores.masked_fill(~band, float("-inf")).flatten(1).argmax(-1)
            return torch.stack([flat // n, flat % n], dim=-1)
        """, says="a word of the question"),
    Wrong("best_span-max_len-off-by-one", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            n = start_logits.shape[1]
            s = start_logits.masked_fill(~allowed, float("-inf")).log_softmax(-1)
            e = end_logits.masked_fill(~allowed, float("-inf")).log_softmax(-1)
            i = torch.arange(n)[:, None]
            j = torch.arange(n)[None, :]
            band = (j >= i) & (j <= i + max_len)
            flat = (s[:, :, None] + e[:, None, :]).masked_fill(~band, float("-inf")).flatten(1).argmax(-1)
            return torch.stack([flat // n, flat % n], dim=-1)
        """, says="off by one"),
    Wrong("best_span-band-one-too-short", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            n = start_logits.shape[1]
            s = start_logits.masked_fill(~allowed, float("-inf")).log_softmax(-1)
            e = end_logits.masked_fill(~allowed, float("-inf")).log_softmax(-1)
            i = torch.arange(n)[:, None]
            j = torch.arange(n)[None, :]
            band = (j >= i) & (j < i + max_len - 1)
            flat = (s[:, :, None] + e[:, None, :]).masked_fill(~band, float("-inf")).flatten(1).argmax(-1)
            return torch.stack([flat // n, flat % n], dim=-1)
        """, says="check the upper bound"),
    Wrong("best_span-softmax-over-batch-axis", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            n = start_logits.shape[1]
            p_start = start_logits.masked_fill(~allowed, -1e9).softmax(dim=0)
            p_end = end_logits.masked_fill(~allowed, -1e9).softmax(dim=0)
            i = torch.arange(n)[:, None]
            j = torch.arange(n)[None, :]
            band = (j >= i) & (j < i + max_len)
            pairs = (p_start[:, :, None] * p_end[:, None, :]) * band
            flat = pairs.flatten(1).argmax(-1)
            return torch.stack([flat // n, flat % n], dim=-1)
        """, says="batch axis"),
    Wrong("best_span-tilde-on-integer-mask", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            n = start_logits.shape[1]
            s = start_logits.log_softmax(-1) + (~allowed) * -1e9
            e = end_logits.log_softmax(-1) + (~allowed) * -1e9
            i = torch.arange(n)[:, None]
            j = torch.arange(n)[None, :]
            band = (j >= i) & (j < i + max_len)
            flat = (s[:, :, None] + e[:, None, :]).masked_fill(~band, float("-inf")).flatten(1).argmax(-1)
            return torch.stack([flat // n, flat % n], dim=-1)
        """, says="0/1 integers"),
    # --- span_loss ---------------------------------------------------------------------------------
    Wrong("span_loss-start-only", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            return F.cross_entropy(start_logits, start)
        """, says="start loss alone"),
    Wrong("span_loss-softmax-over-batch-axis", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            rows = torch.arange(start_logits.shape[0])
            ce_start = -start_logits.log_softmax(dim=0)[rows, start].mean()
            ce_end = -end_logits.log_softmax(dim=0)[rows, end].mean()
            return (ce_start + ce_end) / 2
        """, says="batch axis"),
    Wrong("span_loss-not-halved", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            return F.cross_entropy(start_logits, start) + F.cross_entropy(end_logits, end)
        """, says="without halving"),
    Wrong("span_loss-targets-swapped", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            return (F.cross_entropy(start_logits, end) + F.cross_entropy(end_logits, start)) / 2
        """, says="swapped the targets"),
    Wrong("span_loss-summed-over-batch", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            total = F.cross_entropy(start_logits, start, reduction="sum")
            total = total + F.cross_entropy(end_logits, end, reduction="sum")
            return total / 2
        """, says="summed over the"),
]

ALTERNATIVES = [
    Alternative("SpanHead-two-vectors", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.s = nn.Parameter(torch.zeros(d))
                self.e = nn.Parameter(torch.zeros(d))

            def forward(self, H):
                return H @ self.s, H @ self.e
        """),
    Alternative("SpanHead-two-linear-layers", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.start = nn.Linear(d, 1)
                self.end = nn.Linear(d, 1)

            def forward(self, H):
                return self.start(H).squeeze(-1), self.end(H).squeeze(-1)
        """),
    Alternative("best_span-plain-logit-sum-loops", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            B, n = start_logits.shape
            out = torch.zeros(B, 2, dtype=torch.long)
            for b in range(B):
                best = None
                for i in range(n):
                    for j in range(i, min(i + max_len, n)):
                        if allowed[b, i] and allowed[b, j]:
                            score = float(start_logits[b, i] + end_logits[b, j])
                            if best is None or score > best:
                                best = score
                                out[b, 0], out[b, 1] = i, j
            return out
        """),
    Alternative("best_span-product-of-probabilities", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            n = start_logits.shape[-1]
            p_start = start_logits.masked_fill(~allowed, float("-inf")).softmax(-1)
            p_end = end_logits.masked_fill(~allowed, float("-inf")).softmax(-1)
            pairs = p_start.unsqueeze(2) * p_end.unsqueeze(1)                   # (B, n, n)
            pairs = pairs.triu().tril(max_len - 1)
            flat = pairs.reshape(pairs.shape[0], -1).argmax(dim=1)
            return torch.stack([flat.div(n, rounding_mode="floor"), flat.remainder(n)], dim=1)
        """),
    Alternative("span_loss-by-hand", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            rows = torch.arange(start_logits.shape[0])
            nll_start = -start_logits.log_softmax(-1)[rows, start]
            nll_end = -end_logits.log_softmax(-1)[rows, end]
            return (nll_start + nll_end).mean() / 2
        """),
    Alternative("span_loss-nll-of-stacked", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            logits = torch.cat([start_logits, end_logits])
            targets = torch.cat([start, end])
            return F.nll_loss(F.log_softmax(logits, dim=1), targets)
        """),
]

globals().update(grading_tests("05_span_head", WRONG, ALTERNATIVES))
