"""Lesson 01: wrong implementations students write, and correct alternatives."""
from harness import Alternative, Wrong, grading_tests

WRONG = [
    Wrong("mask_tokens-ids-modified-in-place", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            labels = torch.full_like(ids, -100)
            labels[chosen] = ids[chosen]
            r = torch.rand(ids.shape, generator=generator)
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            ids[chosen & (r < 0.8)] = mask_id
            ids[chosen & (r >= 0.8) & (r < 0.9)] = words[chosen & (r >= 0.8) & (r < 0.9)]
            return ids, labels
        """, says='in place'),
    Wrong("mask_tokens-specials-chosen", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = torch.rand(ids.shape, generator=generator) < p
            labels = torch.where(chosen, ids, -100)
            r = torch.rand(ids.shape, generator=generator)
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            inputs = ids.clone()
            inputs[chosen & (r < 0.8)] = mask_id
            keep = chosen & (r >= 0.8) & (r < 0.9)
            inputs[keep] = words[keep]
            return inputs, labels
        """, says='chose a special token'),
    Wrong("mask_tokens-all-chosen-become-mask", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            labels = torch.where(chosen, ids, -100)
            inputs = ids.masked_fill(chosen, mask_id)
            return inputs, labels
        """, says='every chosen token became [MASK]'),
    Wrong("mask_tokens-random-draws-specials", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            labels = torch.where(chosen, ids, -100)
            r = torch.rand(ids.shape, generator=generator)
            words = torch.randint(0, vocab_size, ids.shape, generator=generator)
            inputs = ids.clone()
            inputs[chosen & (r < 0.8)] = mask_id
            swap = chosen & (r >= 0.8) & (r < 0.9)
            inputs[swap] = words[swap]
            return inputs, labels
        """, says='drew the special token'),
    Wrong("mask_tokens-p-ignored", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < 0.15) & ~special_mask
            labels = torch.where(chosen, ids, -100)
            r = torch.rand(ids.shape, generator=generator)
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            inputs = ids.clone()
            inputs[chosen & (r < 0.8)] = mask_id
            swap = chosen & (r >= 0.8) & (r < 0.9)
            inputs[swap] = words[swap]
            return inputs, labels
        """, says='ignores the argument p'),
    Wrong("mask_tokens-labels-everywhere", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            r = torch.rand(ids.shape, generator=generator)
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            inputs = ids.clone()
            inputs[chosen & (r < 0.8)] = mask_id
            swap = chosen & (r >= 0.8) & (r < 0.9)
            inputs[swap] = words[swap]
            return inputs, ids.clone()
        """, says='must be −100 wherever a position was not chosen'),
    Wrong("mask_tokens-labels-hold-corrupted-inputs", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            r = torch.rand(ids.shape, generator=generator)
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            inputs = ids.clone()
            inputs[chosen & (r < 0.8)] = mask_id
            swap = chosen & (r >= 0.8) & (r < 0.9)
            inputs[swap] = words[swap]
            return inputs, torch.where(chosen, inputs, -100)
        """, says='ORIGINAL id'),
    Wrong("mask_tokens-split-over-all-positions", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            labels = torch.where(chosen, ids, -100)
            inputs = ids.masked_fill(chosen, mask_id)
            swap = (torch.rand(ids.shape, generator=generator) < 0.1) & ~special_mask
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            inputs[swap] = words[swap]
            return inputs, labels
        """, says='not among all positions'),
    Wrong("mask_tokens-ignores-generator", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape) < p) & ~special_mask
            labels = torch.where(chosen, ids, -100)
            r = torch.rand(ids.shape)
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape)
            inputs = ids.clone()
            inputs[chosen & (r < 0.8)] = mask_id
            swap = chosen & (r >= 0.8) & (r < 0.9)
            inputs[swap] = words[swap]
            return inputs, labels
        """, says='generator'),
    Wrong("MLMHead-cloned-projection", "MLMHead", """
        class MLMHead(nn.Module):
            def __init__(self, embedding):
                super().__init__()
                V, d = embedding.weight.shape
                self.dense = nn.Linear(d, d)
                self.act = nn.GELU()
                self.norm = nn.LayerNorm(d)
                self.decoder = nn.Linear(d, V)
                self.decoder.weight = nn.Parameter(embedding.weight.detach().clone())

            def forward(self, h):
                return self.decoder(self.norm(self.act(self.dense(h))))
        """, says='copy (clone) of embedding.weight'),
    Wrong("MLMHead-layernorm-before-gelu", "MLMHead", """
        class MLMHead(nn.Module):
            def __init__(self, embedding):
                super().__init__()
                V, d = embedding.weight.shape
                self.transform = nn.Sequential(nn.Linear(d, d), nn.LayerNorm(d), nn.GELU())
                self.embedding = embedding
                self.bias = nn.Parameter(torch.zeros(V))

            def forward(self, h):
                return self.transform(h) @ self.embedding.weight.T + self.bias
        """, says='LayerNorm comes before GELU'),
    Wrong("MLMHead-no-output-bias", "MLMHead", """
        class MLMHead(nn.Module):
            def __init__(self, embedding):
                super().__init__()
                V, d = embedding.weight.shape
                self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d))
                self.decoder = nn.Linear(d, V, bias=False)
                self.decoder.weight = embedding.weight

            def forward(self, h):
                return self.decoder(self.transform(h))
        """, says='no output bias'),
    Wrong("MLMHead-bias-never-added", "MLMHead", """
        class MLMHead(nn.Module):
            def __init__(self, embedding):
                super().__init__()
                V, d = embedding.weight.shape
                self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d))
                self.embedding = embedding
                self.bias = nn.Parameter(torch.zeros(V))

            def forward(self, h):
                return self.transform(h) @ self.embedding.weight.T
        """, says='never add the output bias'),
    Wrong("MLMHead-detached-weight", "MLMHead", """
        class MLMHead(nn.Module):
            def __init__(self, embedding):
                super().__init__()
                V, d = embedding.weight.shape
                self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d))
                self.embedding = embedding
                self.bias = nn.Parameter(torch.zeros(V))

            def forward(self, h):
                return self.transform(h) @ self.embedding.weight.detach().T + self.bias
        """, says='no gradient reaches embedding.weight'),
    Wrong("MLMHead-returns-probabilities", "MLMHead", """
        class MLMHead(nn.Module):
            def __init__(self, embedding):
                super().__init__()
                V, d = embedding.weight.shape
                self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d))
                self.embedding = embedding
                self.bias = nn.Parameter(torch.zeros(V))

            def forward(self, h):
                return (self.transform(h) @ self.embedding.weight.T + self.bias).softmax(-1)
        """, says='return raw logits'),
    Wrong("mlm_loss-over-every-position", "mlm_loss", """
        def mlm_loss(logits, labels):
            losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none")
            return losses.mean()
        """, says='averaged over every position'),
    Wrong("mlm_loss-softmax-first", "mlm_loss", """
        def mlm_loss(logits, labels):
            probs = logits.softmax(-1)
            return F.cross_entropy(probs.reshape(-1, probs.shape[-1]), labels.reshape(-1))
        """, says='softmax before cross-entropy'),
    Wrong("mlm_loss-summed", "mlm_loss", """
        def mlm_loss(logits, labels):
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="sum")
        """, says='you summed the losses'),
    Wrong("mlm_loss-returns-float", "mlm_loss", """
        def mlm_loss(logits, labels):
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)).item()
        """, says='do not call .item()'),
    Wrong("mlm_loss-classes-not-flattened", "mlm_loss", """
        def mlm_loss(logits, labels):
            return F.cross_entropy(logits, labels)
        """, says='classes in dimension 1'),
    Wrong("tying_savings-both-matrices", "tying_savings", """
        def tying_savings(V, d):
            return 2 * V * d
        """, says='2·V·d'),
    Wrong("tying_savings-bias-counted", "tying_savings", """
        def tying_savings(V, d):
            return V * d + V
        """, says='the output bias is not shared'),
    Wrong("tying_savings-sizes-added", "tying_savings", """
        def tying_savings(V, d):
            return V + d
        """, says='you added the two sizes'),
    Wrong("tying_savings-whole-untied-head", "tying_savings", """
        def tying_savings(V, d):
            return d * d + d + 2 * d + V * d + V
        """, says='every parameter of an untied head'),
    Wrong("tying_savings-only-the-bias", "tying_savings", """
        def tying_savings(V, d):
            return V
        """, says='size of the output bias'),
    Wrong("tying_savings-float", "tying_savings", """
        def tying_savings(V, d):
            return float(V * d)
        """, says='return a Python int'),
]

ALTERNATIVES = [
    Alternative("mask_tokens-bernoulli-steps", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            labels, inputs = ids.clone(), ids.clone()
            prob = torch.full(ids.shape, float(p)).masked_fill(special_mask.bool(), 0.0)
            chosen = torch.bernoulli(prob, generator=generator).bool()
            labels[~chosen] = -100
            to_mask = torch.bernoulli(torch.full(ids.shape, 0.8), generator=generator).bool() & chosen
            inputs[to_mask] = mask_id
            to_random = torch.bernoulli(torch.full(ids.shape, 0.5), generator=generator).bool() & chosen & ~to_mask
            random_words = torch.randint(5, vocab_size, ids.shape, generator=generator)
            inputs[to_random] = random_words[to_random]
            return inputs, labels
        """),
    Alternative("mask_tokens-python-loop", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            inputs = ids.clone()
            labels = torch.full_like(ids, -100)
            flat_ids, flat_in, flat_lab = ids.view(-1), inputs.view(-1), labels.view(-1)
            special = special_mask.reshape(-1).tolist()
            draws = torch.rand(ids.numel(), 2, generator=generator).tolist()
            words = torch.randint(NUM_SPECIAL, vocab_size, (ids.numel(),), generator=generator).tolist()
            for k in range(ids.numel()):
                if special[k] or draws[k][0] >= p:
                    continue
                flat_lab[k] = flat_ids[k]
                if draws[k][1] < 0.8:
                    flat_in[k] = mask_id
                elif draws[k][1] < 0.9:
                    flat_in[k] = words[k]
            return inputs, labels
        """),
    Alternative("MLMHead-huggingface-style", "MLMHead", """
        class MLMHead(nn.Module):
            def __init__(self, embedding):
                super().__init__()
                vocab, width = embedding.weight.shape
                self.transform = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width))
                self.decoder = nn.Linear(width, vocab)
                self.decoder.weight = embedding.weight
                nn.init.zeros_(self.decoder.bias)

            def forward(self, h):
                return self.decoder(self.transform(h))
        """),
    Alternative("MLMHead-functional-forward", "MLMHead", """
        class MLMHead(nn.Module):
            def __init__(self, embedding):
                super().__init__()
                d = embedding.embedding_dim
                self.W = nn.Linear(d, d)
                self.ln = nn.LayerNorm(d)
                self.E = embedding.weight
                self.b = nn.Parameter(torch.zeros(embedding.num_embeddings))

            def forward(self, h):
                return self.ln(F.gelu(self.W(h))) @ self.E.T + self.b
        """),
    Alternative("mlm_loss-boolean-index", "mlm_loss", """
        def mlm_loss(logits, labels):
            keep = labels != -100
            return F.cross_entropy(logits[keep], labels[keep])
        """),
    Alternative("mlm_loss-log-softmax-gather", "mlm_loss", """
        def mlm_loss(logits, labels):
            keep = labels != -100
            logp = logits[keep].log_softmax(dim=-1)
            return -logp.gather(1, labels[keep].unsqueeze(1)).sum() / keep.sum()
        """),
    Alternative("tying_savings-math-prod", "tying_savings", """
        import math
        def tying_savings(V, d):
            return math.prod((V, d))
        """),
]

globals().update(grading_tests("01_mlm_head", WRONG, ALTERNATIVES))
