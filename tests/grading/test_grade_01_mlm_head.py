"""Lesson 01: wrong implementations students write (each named by its key in headlab/checks/ch01.py),
and correct alternatives."""
from harness import Alternative, LessonGrading, Wrong

LOGITS = "F.linear(t, self.embedding.weight, self.bias)"
TRANSFORM = "t = self.norm(self.act(self.dense(h)))"
SEEDED = "special_mask = special_mask.bool()"   # the solution's first line, after which a seed goes
LOSS = "F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)"
PAIR = "return inputs, labels"
CHOSEN = "< p)"
RANDOM_IDS = "torch.randint(NUM_SPECIAL, vocab_size,"
BIAS = "self.bias = nn.Parameter(torch.zeros(V))"
SAVED = "int(V) * int(d)"
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
        """, mistake="returns-ids"),
    Wrong.edit("mask_tokens-labels-alias-ids", "mask_tokens",
               "labels = torch.where(chosen, ids, torch.full_like(ids, -100))",
               "labels = ids\n    labels[~chosen] = -100", "changed-input"),
    Wrong.edit("mask_tokens-specials-chosen", "mask_tokens", " & ~special_mask", "", "special-chosen"),
    Wrong("mask_tokens-all-chosen-become-mask", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            labels = torch.where(chosen, ids, -100)
            inputs = ids.masked_fill(chosen, mask_id)
            return inputs, labels
        """, mistake="all-become-mask"),
    Wrong.edit("mask_tokens-random-draws-specials", "mask_tokens", "torch.randint(NUM_SPECIAL,", "torch.randint(0,",
               "random-draws-specials"),
    # Keys no wrong implementation named before (tests/test_mistake_vocabulary.py listed them):
    Wrong.edit("mask_tokens-returns-inputs-only", "mask_tokens", PAIR, "return inputs", "not-a-pair"),
    Wrong.edit("mask_tokens-random-ids-past-the-vocabulary", "mask_tokens", RANDOM_IDS,
               "torch.randint(NUM_SPECIAL, vocab_size + 5,", "random-outside-vocabulary"),
    Wrong.edit("mask_tokens-labels-shifted-by-one", "mask_tokens", "torch.where(chosen, ids,",
               "torch.where(chosen, ids + 1,", "wrong-labels"),
    Wrong.edit("mask_tokens-masks-the-specials-too", "mask_tokens", PAIR,
               f"inputs = torch.where(special_mask, torch.full_like(ids, mask_id), inputs)\n    {PAIR}",
               "special-corrupted"),
    Wrong.edit("mask_tokens-chooses-too-many", "mask_tokens", CHOSEN, "< p * 1.5)", "wrong-fraction"),
    Wrong.edit("mask_tokens-three-random-words", "mask_tokens", RANDOM_IDS,
               "torch.randint(NUM_SPECIAL, NUM_SPECIAL + 3,", "few-random-words"),
    Wrong.edit("mask_tokens-p-ignored", "mask_tokens", CHOSEN, "< 0.15)", "p-ignored"),
    Wrong.edit("mask_tokens-half-p", "mask_tokens", CHOSEN, "< p / 2)", "not-all-chosen"),
    Wrong.edit("mask_tokens-labels-everywhere", "mask_tokens", PAIR, "return inputs, ids.clone()", "labels-everywhere"),
    # torch.where's two values swapped: told labels-everywhere before, as at p = 0 both label every position
    Wrong.edit("mask_tokens-labels-where-swapped", "mask_tokens", "torch.where(chosen, ids, torch.full_like(ids, -100))",
               "torch.where(chosen, torch.full_like(ids, -100), ids)", "labels-where-swapped"),
    # one draw per row, every position of a row chosen or none: passed before
    Wrong.edit("mask_tokens-whole-rows-chosen", "mask_tokens", "torch.rand(ids.shape, generator=generator) < p",
               "torch.rand(len(ids), 1, generator=generator) < p", "whole-rows-chosen"),
    Wrong.edit("mask_tokens-labels-hold-corrupted-inputs", "mask_tokens", PAIR,
               "return inputs, torch.where(chosen, inputs, -100)", "labels-hold-inputs"),
    Wrong("mask_tokens-split-over-all-positions", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            labels = torch.where(chosen, ids, -100)
            inputs = ids.masked_fill(chosen, mask_id)
            swap = (torch.rand(ids.shape, generator=generator) < 0.1) & ~special_mask
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            inputs[swap] = words[swap]
            return inputs, labels
        """, mistake="split-over-all-positions"),
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
        """, mistake="ignores-generator"),
    Wrong.edit("mask_tokens-none-left-unchanged", "mask_tokens", "(u < 0.9)", "(u <= 1.0)", "none-unchanged"),
    Wrong.edit("mask_tokens-no-random-words", "mask_tokens", "words, inputs)", "ids, inputs)", "no-random-words"),
    # random words written over [MASK]: a condition that covers the masked draws too, or a draw of its own
    Wrong.edit("mask_tokens-random-condition-covers-mask", "mask_tokens", "chosen & (u >= 0.8) & (u < 0.9)",
               "chosen & (u < 0.9)", "random-overwrites-mask"),
    Wrong("mask_tokens-random-draw-of-its-own", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            labels = torch.where(chosen, ids, -100)
            inputs = ids.clone()
            masked = torch.bernoulli(torch.full(ids.shape, 0.8), generator=generator).bool() & chosen
            inputs[masked] = mask_id
            replaced = torch.bernoulli(torch.full(ids.shape, 0.1), generator=generator).bool() & chosen
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            inputs[replaced] = words[replaced]
            return inputs, labels
        """, mistake="random-overwrites-mask"),
    Wrong.edit("mask_tokens-half-masked", "mask_tokens", "(u < 0.8)", "(u < 0.5)", "wrong-split"),
    Wrong.edit("mask_tokens-comparison-reversed", "mask_tokens", CHOSEN, "> p)", "comparison-reversed"),
    Wrong.edit("mask_tokens-random-range-cut", "mask_tokens", RANDOM_IDS,
               "torch.randint(NUM_SPECIAL, vocab_size - 1,", "random-range-cut"),
    # told pair-swapped before, whose fix (swap the two) is no fix here
    Wrong("mask_tokens-inputs-copied-from-labels", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            labels = ids.clone()
            labels[~chosen] = -100
            inputs = labels.clone()
            u = torch.rand(ids.shape, generator=generator)
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            inputs[chosen & (u < 0.8)] = mask_id
            inputs[chosen & (u >= 0.8) & (u < 0.9)] = words[chosen & (u >= 0.8) & (u < 0.9)]
            return inputs, labels
        """, mistake="inputs-from-labels"),
    Wrong("mask_tokens-labels-only-where-masked", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask
            u = torch.rand(ids.shape, generator=generator)
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            masked = chosen & (u < 0.8)
            labels = torch.where(masked, ids, -100)
            inputs = torch.where(masked, mask_id, ids)
            inputs = torch.where(chosen & (u >= 0.8) & (u < 0.9), words, inputs)
            return inputs, labels
        """, mistake="labels-only-where-masked"),
    # only the specials set to -100: at p = 0 told comparison-reversed before
    Wrong.edit("mask_tokens-labels-at-every-word", "mask_tokens",
               "labels = torch.where(chosen, ids, torch.full_like(ids, -100))",
               "labels = ids.masked_fill(special_mask, -100)", "labels-everywhere"),
    Wrong.edit("mask_tokens-pair-swapped", "mask_tokens", PAIR, "return labels, inputs", "pair-swapped"),
    # Found by an audit: the check passed these while it always passed mask_id 3, never compared two generator
    # states and marked ids < 5 only in special_mask; it named the last "none-unchanged".
    *Wrong.edits("mask_tokens", "torch.full_like(ids, mask_id)", [
        ("mask-id-from-tokenizer", "torch.full_like(ids, tok.mask_id)", "mask-id-ignored"),
        ("fixed-mask-id-3", "torch.full_like(ids, 3)", "mask-id-ignored"),
        # BERT's [MASK] id: told "a random replacement is outside the vocabulary (id 103)" before
        ("bert-mask-id-103", "torch.full_like(ids, 103)", "mask-id-ignored"),
    ]),
    Wrong.edit("mask_tokens-own-seeded-generator", "mask_tokens", SEEDED,
               f"{SEEDED}\n    generator = torch.Generator().manual_seed(0)", "fixed-seed"),
    Wrong.edit("mask_tokens-reseeds-the-generator", "mask_tokens", SEEDED,
               f"{SEEDED}\n    generator.manual_seed(1234)", "fixed-seed"),
    Wrong.edit("mask_tokens-global-seed", "mask_tokens", SEEDED,
               f"{SEEDED}\n    torch.manual_seed(42)\n    generator = None", "fixed-seed"),
    Wrong.edit("mask_tokens-specials-from-ids", "mask_tokens", "& ~special_mask", "& (ids >= NUM_SPECIAL)",
               "special-chosen"),
    Wrong("mask_tokens-labels-only-changed-positions", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask.bool()
            u = torch.rand(ids.shape, generator=generator)
            to_mask, to_rand = chosen & (u < 0.8), chosen & (u >= 0.8) & (u < 0.9)
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            inputs = torch.where(to_mask, mask_id, torch.where(to_rand, words, ids))
            labels = torch.where(to_mask | to_rand, ids, -100)
            return inputs, labels
        """, mistake="unchanged-not-labelled"),
    # round(p · length) positions per row, as original BERT's data script chooses them: passed every check before
    Wrong("mask_tokens-fixed-count-per-row", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            inputs, labels = ids.clone(), torch.full_like(ids, -100)
            for b in range(ids.shape[0]):
                words = (~special_mask[b].bool()).nonzero().flatten()
                chosen = words[torch.randperm(len(words), generator=generator)[:round(p * len(words))]]
                labels[b, chosen] = ids[b, chosen]
                u = torch.rand(len(chosen), generator=generator)
                inputs[b, chosen[u < 0.8]] = mask_id
                drawn = chosen[(u >= 0.8) & (u < 0.9)]
                inputs[b, drawn] = torch.randint(NUM_SPECIAL, vocab_size, (len(drawn),), generator=generator)
            return inputs, labels
        """, mistake="fixed-count-per-row"),
    # The ignore value of pytorch-transformers 1.x: named labels-everywhere ("an id at every position") before
    Wrong.edit("mask_tokens-ignore-value-minus-one", "mask_tokens", "torch.full_like(ids, -100)",
               "torch.full_like(ids, -1)", "wrong-ignore-value"),
    # A chained boolean index writes into a copy, so the inputs never change: named no-random-words before
    Wrong("mask_tokens-chained-index-assignment", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = (torch.rand(ids.shape, generator=generator) < p) & ~special_mask.bool()
            labels = torch.where(chosen, ids, -100)
            inputs = ids.clone()
            u = torch.rand(ids.shape, generator=generator)[chosen]
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)[chosen]
            inputs[chosen][u < 0.8] = mask_id
            swap = (u >= 0.8) & (u < 0.9)
            inputs[chosen][swap] = words[swap]
            return inputs, labels
        """, mistake="inputs-not-corrupted"),
    # Sequential draws as in transformers' collator, with 0.1 where it has 0.5: 2 % random words, told "no chosen
    # token was replaced by a random word" before
    Wrong("mask_tokens-random-words-with-0.1-of-the-rest", "mask_tokens", """
        def mask_tokens(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
            chosen = torch.bernoulli(torch.full(ids.shape, p), generator=generator).bool() & ~special_mask.bool()
            labels = torch.where(chosen, ids, -100)
            masked = torch.bernoulli(torch.full(ids.shape, 0.8), generator=generator).bool() & chosen
            swapped = torch.bernoulli(torch.full(ids.shape, 0.1), generator=generator).bool() & chosen & ~masked
            words = torch.randint(NUM_SPECIAL, vocab_size, ids.shape, generator=generator)
            return torch.where(masked, mask_id, torch.where(swapped, words, ids)), labels
        """, mistake="random-share-of-the-rest"),
    Wrong.edit("MLMHead-bias-not-a-parameter", "MLMHead", BIAS, "self.bias = torch.zeros(V)", "no-output-bias"),
    Wrong.edit("MLMHead-projection-not-transposed", "MLMHead", LOGITS, "t @ self.embedding.weight + self.bias",
               "projection-not-transposed"),
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
        """, mistake="cloned-projection"),
    Wrong.edit("MLMHead-dense-built-in-forward", "MLMHead", TRANSFORM,
               "t = self.norm(self.act(nn.Linear(h.shape[-1], h.shape[-1])(h)))", "layer-built-in-forward"),
    Wrong.edit("MLMHead-layernorm-before-gelu", "MLMHead", TRANSFORM, "t = self.act(self.norm(self.dense(h)))",
               "layernorm-before-gelu"),
    Wrong.edit("MLMHead-no-output-bias", "MLMHead", BIAS, "self.bias = None", "no-output-bias"),
    Wrong.edit("MLMHead-bias-never-added", "MLMHead", LOGITS, "F.linear(t, self.embedding.weight)",
               "no-output-bias"),
    # tied, but the embedding learns nothing from the head: parameters-without-gradient ("a weight did not move") before
    Wrong.edit("MLMHead-detached-weight", "MLMHead", LOGITS, "F.linear(t, self.embedding.weight.detach(), self.bias)",
               "projection-detached"),
    Wrong.edit("MLMHead-returns-probabilities", "MLMHead", LOGITS, f"{LOGITS}.softmax(-1)", "softmax-inside-head"),
    Wrong.edit("MLMHead-new-embedding", "MLMHead", "self.embedding = embedding", "self.embedding = nn.Embedding(V, d)",
               "not-tied"),
    Wrong.edit("MLMHead-relu", "MLMHead", "nn.GELU()", "nn.ReLU()", "relu-not-gelu"),
    Wrong.edit("MLMHead-tanh-gelu", "MLMHead", "nn.GELU()", 'nn.GELU(approximate="tanh")', "tanh-gelu"),
    Wrong.edit("MLMHead-no-gelu", "MLMHead", "self.act(self.dense(h))", "self.dense(h)", "no-gelu"),
    Wrong.edit("MLMHead-log-probabilities", "MLMHead", LOGITS, f"{LOGITS}.log_softmax(-1)",
               "log-softmax-inside-head"),
    Wrong.edit("MLMHead-no-layernorm", "MLMHead", TRANSFORM, "t = self.act(self.dense(h))", "no-layernorm"),
    # Found by an audit: the check passed these while it left missing parts out of its expected logits, never
    # compared h after the call and never looked at the transform's gradients; the last crashed unexplained.
    Wrong.edit("MLMHead-dense-without-bias", "MLMHead", "nn.Linear(d, d)", "nn.Linear(d, d, bias=False)",
               "dense-without-bias"),
    Wrong.edit("MLMHead-layernorm-without-affine", "MLMHead", "nn.LayerNorm(d)",
               "nn.LayerNorm(d, elementwise_affine=False)", "layernorm-without-affine"),
    Wrong.edit("MLMHead-shifts-h-in-place", "MLMHead", TRANSFORM,
               "h += 0.5\n        t = self.norm(self.act(self.dense(h - 0.5)))", "changed-input"),
    Wrong.edit("MLMHead-transform-under-no-grad", "MLMHead", TRANSFORM,
               f"with torch.no_grad():\n            {TRANSFORM}", "parameters-without-gradient"),
    Wrong.edit("MLMHead-frozen-dense", "MLMHead", "self.dense = nn.Linear(d, d)",
               "self.dense = nn.Linear(d, d).requires_grad_(False)", "parameters-without-gradient"),
    Wrong.edit("MLMHead-frozen-output-bias", "MLMHead", "nn.Parameter(torch.zeros(V))",
               "nn.Parameter(torch.zeros(V), requires_grad=False)", "parameters-without-gradient"),
    # A red team's forgery (issue 25, K1/K5/K6): a frozen parameter whose forward writes `.grad` itself, so
    # the kernel reported a gradient for it; a step of gradient descent on the grader's outputs shows it.
    Wrong.edit("MLMHead-frozen-layernorm-grad-written-by-hand", "MLMHead", TRANSFORM,
               "for p in self.norm.parameters():\n            p.requires_grad_(False)\n            p.grad = "
               f"torch.ones_like(p)\n        {TRANSFORM}", "parameters-without-gradient"),
    Wrong.edit("MLMHead-no-transform", "MLMHead", TRANSFORM, "t = h", "no-transform"),
    Wrong.edit("MLMHead-reinitialises-the-embedding", "MLMHead", "self.embedding = embedding",
               "self.embedding = embedding\n        nn.init.normal_(self.embedding.weight)", "changed-embedding"),
    Wrong.edit("MLMHead-detached-h", "MLMHead", "self.dense(h)", "self.dense(h.detach())", "input-detached"),
    *Wrong.edits("MLMHead", "nn.LayerNorm(d)", [
        # BERT's config (layer_norm_eps=1e-12): told parameters-without-gradient, or passed, as the hidden seed fell
        ("bert-layernorm-eps", "nn.LayerNorm(d, eps=1e-12)", "layernorm-eps"),
        # T5's and many models' 1e-6: named, but told "your LayerNorm's eps is 1e-12" before
        ("layernorm-eps-1e-6", "nn.LayerNorm(d, eps=1e-6)", "layernorm-eps"),
    ]),
    # "tied to the embedding" taken for calling it: torch's words alone (raised-RuntimeError) before
    Wrong.edit("MLMHead-calls-the-embedding", "MLMHead", LOGITS, "self.embedding(t) + self.bias",
               "embedding-called-on-features"),
    # the dense layer's size given to the output bias: torch's words alone before
    Wrong.edit("MLMHead-output-bias-of-size-d", "MLMHead", BIAS, "self.bias = nn.Parameter(torch.zeros(d))",
               "output-bias-of-size-d"),
    # BERT's MLM head holds no dropout: passed before, its train-mode outputs never looked at
    Wrong.edit("MLMHead-pre-layernorm", "MLMHead", TRANSFORM, "t = self.act(self.dense(self.norm(h)))",
               "layernorm-first"),
    Wrong.edit("MLMHead-dropout-in-head", "MLMHead", TRANSFORM,
               "t = F.dropout(self.norm(self.act(self.dense(h))), 0.1, self.training)", "dropout-in-head"),
    Wrong.edit("MLMHead-unpacks-three-sizes", "MLMHead", TRANSFORM, f"B, n, d = h.shape\n        {TRANSFORM}",
               "fixed-rank-input"),
    Wrong("mlm_loss-over-every-position", "mlm_loss", """
        def mlm_loss(logits, labels):
            losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none")
            return losses.mean()
        """, mistake="divides-by-all-positions"),
    Wrong("mlm_loss-mean-of-each-sequence", "mlm_loss", """
        def mlm_loss(logits, labels):
            if logits.dim() == 2:
                return F.cross_entropy(logits, labels)
            return torch.stack([F.cross_entropy(x, y) for x, y in zip(logits, labels)]).mean()
        """, mistake="mean-per-sentence"),
    # the logits kept at the chosen positions, the labels all: the generic "print both shapes" before
    Wrong("mlm_loss-filters-the-logits-only", "mlm_loss", """
        def mlm_loss(logits, labels):
            keep = labels != -100
            return F.cross_entropy(logits[keep], labels.reshape(-1))
        """, mistake="filtered-one-not-the-other"),
    Wrong.edit("mlm_loss-softmax-first", "mlm_loss", "logits.reshape(", "logits.softmax(-1).reshape(", "softmax-first"),
    Wrong.edit("mlm_loss-sum-not-mean", "mlm_loss", "ignore_index=-100)", 'ignore_index=-100, reduction="sum")',
               "sum-not-mean"),
    Wrong.edit("mlm_loss-returns-float", "mlm_loss", LOSS, f"{LOSS}.item()", "not-a-tensor"),
    # right for (B, n, V) logits only; the hint says the logits may be flat (N, V) too
    Wrong("mlm_loss-moves-the-vocabulary-axis", "mlm_loss", """
        def mlm_loss(logits, labels):
            return F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100)
        """, mistake="fixed-rank-input"),
    Wrong.edit("mlm_loss-detached", "mlm_loss", LOSS, f"{LOSS}.detach()", "no-gradient"),
    Wrong.edit("mlm_loss-nll-on-logits", "mlm_loss", "F.cross_entropy(", "F.nll_loss(", "nll-on-logits"),
    Wrong.edit("mlm_loss-classes-not-flattened", "mlm_loss", "logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)",
               "logits, labels", "classes-on-sequence-axis"),
    # each got only "expected ..., the mean cross-entropy over the positions whose label is not −100" before
    Wrong.edit("mlm_loss-nll-on-softmax", "mlm_loss", "F.cross_entropy(logits.reshape(-1, logits.shape[-1])",
               "F.nll_loss(logits.softmax(-1).reshape(-1, logits.shape[-1])", "nll-on-probabilities"),
    Wrong.edit("mlm_loss-mean-divided-by-the-count", "mlm_loss", LOSS, f"{LOSS} / (labels != -100).sum()",
               "mean-divided-again"),
    Wrong.edit("mlm_loss-reduction-none", "mlm_loss", "ignore_index=-100)", 'ignore_index=-100, reduction="none")',
               "one-loss-per-example"),
    Wrong.edit("mlm_loss-sum-over-batch-size", "mlm_loss", "ignore_index=-100)",
               'ignore_index=-100, reduction="sum") / len(labels)', "divides-by-batch-size"),
    Wrong.edit("mlm_loss-label-smoothing", "mlm_loss", "ignore_index=-100)", "label_smoothing=0.1)",
               "label-smoothing"),
    Wrong.edit("tying_savings-both-matrices", "tying_savings", SAVED, "2 * V * d", "both-matrices"),
    Wrong.edit("tying_savings-bias-counted", "tying_savings", SAVED, "V * d + V", "bias-counted"),
    Wrong.edit("tying_savings-adds-the-sizes", "tying_savings", SAVED, "V + d", "adds-the-sizes"),
    Wrong.edit("tying_savings-whole-untied-head", "tying_savings", SAVED, "d * d + d + 2 * d + V * d + V",
               "whole-untied-head"),
    Wrong.edit("tying_savings-only-the-bias", "tying_savings", SAVED, "V", "only-the-bias"),
    Wrong.edit("tying_savings-float", "tying_savings", SAVED, "float(V * d)", "not-an-int"),
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

class TestGrading(LessonGrading):
    lesson, wrong, alternatives = "01_mlm_head", WRONG, ALTERNATIVES
