"""Lesson 04: wrong implementations students write (each named by its key in headlab/checks/ch04.py),
and correct alternatives."""
from harness import Alternative, LessonGrading, Wrong, squashed

HEAD = "self.classifier(self.dropout(H))"
LOSS = "logits.reshape(-1, L), labels.reshape(-1)"
WRONG = [
    # --- TokenClassifier ---------------------------------------------------------------------------
    *Wrong.edits("TokenClassifier", HEAD, [
        ("softmax-inside-head", f"{HEAD}.softmax(dim=-1)"),
        ("log-softmax-inside-head", f"F.log_softmax({HEAD}, dim=-1)"),
        *squashed(HEAD),
        ("scores-the-first-position-only", "self.classifier(self.dropout(H[:, 0]))", "scores-one-position"),
        # "cross_entropy wants the classes on dim 1", done in the wrong place
        ("output-B-L-n", f"{HEAD}.transpose(1, 2)", "labels-axis-second"),
        # "classify along the sequence"
        ("linear-over-sequence-axis", "self.classifier(self.dropout(H).transpose(1, 2))", "linear-on-wrong-axis"),
        ("linear-built-in-forward", "nn.Linear(H.shape[-1], self.classifier.out_features)(self.dropout(H))",
         "layer-built-in-forward"),
        ("dropout-after-linear", "self.dropout(self.classifier(H))"),
        ("returns-label-ids", f"{HEAD}.argmax(dim=-1)"),
        ("flattened-for-the-loss", f"{HEAD}.flatten(0, 1)", "flattened-in-head"),   # the loss's flattening, in forward
        # "give every token the sentence's context"
        ("mixes-positions", "self.classifier(self.dropout(H + H.mean(dim=1, keepdim=True)))"),
        # Found by a student audit (as the default-dropout and Dropout1d ones below): each passed the check when it
        # probed dropout at p = 1 only, or no gradient.
        ("unscaled-dropout-mask", "self.classifier(H * (torch.rand_like(H) >= self.dropout.p) if self.training else H)",
         "unscaled-dropout"),
        ("dropout-applied-twice", "self.classifier(self.dropout(self.dropout(H)))", "wrong-dropout-rate"),
        ("dropconnect-on-the-weight",
         "F.linear(H, F.dropout(self.classifier.weight, self.dropout.p, self.training), self.classifier.bias)",
         "not-dropout-then-linear"),
        # right for every p < 1; at p = 1 its 1 / (1 − p) gives NaN (once told the dropout argument was ignored)
        ("hand-made-dropout-divides-by-zero", "self.classifier(H * (torch.rand_like(H) >= self.dropout.p) / "
         "(1 - self.dropout.p) if self.training else H)", "nan-at-full-dropout"),
        ("detached-logits", f"{HEAD}.detach()", "parameters-without-gradient"),
        # a key no wrong implementation named before (tests/test_mistake_vocabulary.py listed it)
        ("frozen-encoder-by-detach", "self.classifier(self.dropout(H.detach()))", "input-detached"),
    ]),
    Wrong("TokenClassifier-dropout-on-at-eval", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.p = dropout
                self.classifier = nn.Linear(d, num_labels)

            def forward(self, H):
                return self.classifier(F.dropout(H, p=self.p, training=True))
        """, mistake="dropout-at-eval"),
    *Wrong.edits("TokenClassifier", "nn.Dropout(dropout)", [
        # one key with lesson 03's for one mistake (issue 25: no synonyms); it was "dropout-argument-ignored" here
        ("dropout-argument-ignored", "nn.Dropout(0.1)", "fixed-dropout-rate"),
        ("dropout-without-its-argument", "nn.Dropout()", "wrong-dropout-rate"),
        ("in-place-dropout", "nn.Dropout(dropout, inplace=True)", "changed-input"),
        ("dropout1d-drops-whole-tokens", "nn.Dropout1d(dropout)", "drops-whole-vectors"),
    ]),
    *Wrong.edits("TokenClassifier", "nn.Linear(d, num_labels)", [
        ("no-bias", "nn.Linear(d, num_labels, bias=False)"),
        # nn.Linear's sizes given as (out, in): torch's shape error and "print the shapes" before
        ("linear-sizes-swapped", "nn.Linear(num_labels, d)"),
    ]),
    Wrong.edit("TokenClassifier-default-dropout-0.5", "TokenClassifier", "dropout: float = 0.1",
               "dropout: float = 0.5", "wrong-default-dropout"),
    # A red team's forgery (issue 25, K1/K5/K6): a frozen parameter whose forward writes `.grad` itself, so
    # the kernel reported a gradient for it; a step of gradient descent on the grader's outputs shows it.
    Wrong.edit("TokenClassifier-frozen-bias-grad-written-by-hand", "TokenClassifier", f"return {HEAD}",
               "self.classifier.bias.requires_grad_(False)\n        self.classifier.bias.grad = "
               f"torch.ones_like(self.classifier.bias)\n        return {HEAD}", "parameters-without-gradient"),
    # Keys no wrong implementation named before (tests/test_mistake_vocabulary.py listed them):
    Wrong.edit("bio_to_spans-pairs-without-end", "bio_to_spans", "spans.append((kind, start, i))",
               "spans.append((kind, start))", "not-a-list-of-triples"),
    Wrong.edit("bio_to_spans-last-entity-first", "bio_to_spans", "return spans", "return spans[::-1]", "wrong-order"),
    Wrong("bio_to_spans-type-keeps-the-hyphen", "bio_to_spans", """
        def bio_to_spans(tags):
            spans, kind, start = [], None, 0
            for i, tag in enumerate([*tags, "O"]):
                if tag.startswith("I-") and tag[1:] == kind:   # the type sliced one character short
                    continue
                if kind is not None:
                    spans.append((kind, start, i))
                kind, start = (None, i) if tag == "O" else (tag[1:], i)
            return spans
        """, mistake="keeps-the-prefix"),
    Wrong("bio_to_spans-each-tag-its-own-entity", "bio_to_spans", """
        def bio_to_spans(tags):
            return [(tag[2:], i, i + 1) for i, tag in enumerate(tags) if tag != "O"]
        """, mistake="each-tag-its-own-entity"),
    # spaCy's order, (start, end, label)
    Wrong.edit("bio_to_spans-start-end-type", "bio_to_spans", "spans.append((kind, start, i))",
               "spans.append((start, i, kind))", "fields-out-of-order"),
    # (F.cross_entropy's default ignore_index is already -100: a loss picked out by hand keeps it as a class)
    Wrong.edit("token_loss-minus-100-gathered", "token_loss",
               "return F.cross_entropy(logits.reshape(-1, L), labels.reshape(-1), ignore_index=-100)",
               "return -logits.log_softmax(-1).gather(-1, labels[..., None]).mean()", "minus-100-used-as-class"),
    # --- token_loss ---------------------------------------------------------------------------------
    *Wrong.edits("token_loss", "labels.reshape(-1)", [   # the labels left (B, n) under flattened logits
        ("labels-not-flattened", "labels", "flattened-one-not-the-other")]),
    *Wrong.edits("token_loss", f"F.cross_entropy({LOSS}, ignore_index=-100)", [
        ("label-smoothing", f"F.cross_entropy({LOSS}, ignore_index=-100, label_smoothing=0.1)"),
        ("summed-then-divided-by-the-batch-size",
         f"F.cross_entropy({LOSS}, ignore_index=-100, reduction=\"sum\") / logits.shape[0]", "divides-by-batch-size")]),
    Wrong("token_loss-minus-100-replaced-by-class-0", "token_loss", """
        def token_loss(logits, labels):
            labels = labels.clone()
            labels[labels == -100] = 0
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        """, mistake="minus-100-as-class-0"),
    Wrong("token_loss-minus-100-overwritten-in-place", "token_loss", """
        def token_loss(logits, labels):
            labels[labels == -100] = 0
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        """, mistake="changed-input"),
    Wrong("token_loss-divides-by-all-positions", "token_loss", """
        def token_loss(logits, labels):
            mask = labels != -100
            logp = logits.log_softmax(-1)
            nll = -logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            return (nll * mask).sum() / labels.numel()
        """, mistake="divides-by-all-positions"),
    Wrong.edit("token_loss-classes-on-the-sequence-axis", "token_loss", LOSS, "logits, labels",
               "classes-on-sequence-axis"),
    # "skip [CLS]": but the labels are already aligned to the token positions
    Wrong.edit("token_loss-transposed-then-flattened", "token_loss", "logits.reshape(-1, L)",
               "logits.transpose(1, 2).reshape(-1, L)", "classes-on-sequence-axis"),
    Wrong.edit("token_loss-nll-on-logits", "token_loss", "F.cross_entropy(", "F.nll_loss(", "nll-on-logits"),
    Wrong.edit("token_loss-labels-shifted-past-cls", "token_loss", LOSS,
               "logits[:, 1:].reshape(-1, L), labels[:, :-1].reshape(-1)", "labels-shifted-left"),
    # zeroing the unlabelled positions in place, in log_softmax's output, which its backward reads
    Wrong("token_loss-zeroes-unlabelled-in-place", "token_loss", """
        def token_loss(logits, labels):
            keep = labels != -100
            logp = logits.log_softmax(-1)
            logp[~keep] = 0
            return -logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).sum() / keep.sum()
        """, mistake="in-place-on-saved-tensor"),
    Wrong("token_loss-mean-per-sentence", "token_loss", """
        def token_loss(logits, labels):
            losses = [F.cross_entropy(row_logits, row_labels) for row_logits, row_labels in zip(logits, labels)]
            return torch.stack(losses).mean()
        """, mistake="mean-per-sentence"),
    Wrong.edit("token_loss-returns-python-float", "token_loss", "ignore_index=-100)", "ignore_index=-100).item()",
               "not-a-tensor"),
    Wrong.edit("token_loss-detached", "token_loss", "ignore_index=-100)", "ignore_index=-100).detach()",
               "no-gradient"),
    Wrong.edit("token_loss-softmax-first", "token_loss", "logits.reshape(-1, L)",
               "logits.softmax(dim=-1).reshape(-1, L)", "softmax-first"),
    Wrong("token_loss-gradient-leaks-to-unlabelled-positions", "token_loss", """
        def token_loss(logits, labels):
            # loss over every position, minus the (detached) part of the unlabelled ones: the value is
            # right, but the unlabelled positions still get gradient
            flat, target = logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)
            keep = target != -100
            nll = F.cross_entropy(flat, target.clamp(min=0), reduction="none")
            return (nll.sum() - nll[~keep].detach().sum()) / keep.sum()
        """, mistake="gradient-reaches-unlabelled"),
    # log_softmax over dim 1, as for (N, C) scores, on (B, n, L) logits
    Wrong("token_loss-log-softmax-over-positions", "token_loss", """
        def token_loss(logits, labels):
            log_p = logits.log_softmax(dim=1)
            return F.nll_loss(log_p.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
        """, mistake="classes-on-sequence-axis"),
    # one-hot targets for a squared error, made of every label, -100 included
    Wrong("token_loss-one-hot-of-every-label", "token_loss", """
        def token_loss(logits, labels):
            target = F.one_hot(labels, logits.shape[-1]).float()
            return F.mse_loss(logits, target)
        """, mistake="minus-100-used-as-class"),
    # 0 taken for padding's id: the O positions left out with the unlabelled ones
    Wrong("token_loss-labels-above-0", "token_loss", """
        def token_loss(logits, labels):
            keep = labels > 0
            return F.cross_entropy(logits[keep], labels[keep])
        """, mistake="class-0-ignored"),
    # a masked mean by hand whose sum forgot the mask
    Wrong("token_loss-mask-only-in-the-count", "token_loss", """
        def token_loss(logits, labels):
            mask = labels != -100
            nll = -logits.log_softmax(-1).gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            return nll.sum() / mask.sum()
        """, mistake="mask-only-in-the-count"),
    # --- bio_to_spans -------------------------------------------------------------------------------
    Wrong("bio_to_spans-drops-I-after-O", "bio_to_spans", """
        def bio_to_spans(tags):
            spans, current = [], None
            for i, tag in enumerate(tags):
                if tag.startswith("B-"):
                    if current:
                        spans.append(tuple(current))
                    current = [tag[2:], i, i + 1]
                elif tag.startswith("I-") and current and current[0] == tag[2:]:
                    current[2] = i + 1
                else:                      # O, or an I- with nothing to continue: skipped
                    if current:
                        spans.append(tuple(current))
                    current = None
            if current:
                spans.append(tuple(current))
            return spans
        """, mistake="drops-orphan-inside-tag"),
    Wrong.edit("bio_to_spans-inclusive-ends", "bio_to_spans", "spans.append((kind, start, i))",
               "spans.append((kind, start, i - 1))", "inclusive-ends"),   # index of the last word
    Wrong("bio_to_spans-type-change-continues-entity", "bio_to_spans", """
        def bio_to_spans(tags):
            spans, current = [], None
            for i, tag in enumerate(tags):
                if tag == "O":
                    if current:
                        spans.append(tuple(current))
                    current = None
                elif tag.startswith("B-") or current is None:
                    if current:
                        spans.append(tuple(current))
                    current = [tag[2:], i, i + 1]
                else:                      # any I- continues whatever is open
                    current[2] = i + 1
            if current:
                spans.append(tuple(current))
            return spans
        """, mistake="type-change-continues-entity"),
    Wrong.edit("bio_to_spans-last-entity-never-closed", "bio_to_spans", 'enumerate([*tags, "O"])', "enumerate(tags)",
               "last-entity-not-closed"),
    # same type as the open entity: keep going, even on a B-
    Wrong.edit("bio_to_spans-B-after-same-type-merged", "bio_to_spans", 'tag.startswith("I-") and tag[2:] == kind',
               'tag != "O" and tag[2:] == kind', "begin-continues-same-type"),
    Wrong("bio_to_spans-keeps-the-prefix", "bio_to_spans", """
        def bio_to_spans(tags):
            spans, kind, start = [], None, 0
            for i, tag in enumerate(list(tags) + ["O"]):
                if tag.startswith("I-") and kind is not None and tag[2:] == kind[2:]:
                    continue
                if kind is not None:
                    spans.append((kind, start, i))
                kind, start = (None, i) if tag == "O" else (tag, i)
            return spans
        """, mistake="keeps-the-prefix"),
    # An O skipped like a continuation: the open entity runs on through it (an I-X after it continues an open X)
    Wrong("bio_to_spans-O-skipped", "bio_to_spans", """
        def bio_to_spans(tags):
            spans, kind, start = [], None, 0
            for i, tag in enumerate(tags):
                if tag == "O" or (tag.startswith("I-") and tag[2:] == kind):
                    continue
                if kind is not None:
                    spans.append((kind, start, i))
                kind, start = tag[2:], i
            if kind is not None:
                spans.append((kind, start, len(tags)))
            return spans
        """, mistake="o-does-not-close"),
    # Closes the last entity by appending "O" to the caller's list: the grader sees list inputs change too.
    Wrong.edit("bio_to_spans-appends-to-the-callers-tags", "bio_to_spans", 'enumerate([*tags, "O"])',
               'enumerate(tags.append("O") or tags)', "changed-input"),
]

ALTERNATIVES = [
    Alternative("TokenClassifier-sequential", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.net = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(d, num_labels))

            def forward(self, H):
                return self.net(H)
        """),
    Alternative("TokenClassifier-own-parameters-einsum", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.p = dropout
                self.W = nn.Parameter(torch.randn(num_labels, d) * 0.02)
                self.b = nn.Parameter(torch.zeros(num_labels))

            def forward(self, H):
                x = F.dropout(H, p=self.p, training=self.training)
                return torch.einsum("bnd,ld->bnl", x, self.W) + self.b
        """),
    Alternative("token_loss-transpose-to-dim-1", "token_loss", """
        def token_loss(logits, labels):
            return F.cross_entropy(logits.transpose(1, 2), labels)   # (B, L, n) against (B, n)
        """),
    Alternative("token_loss-masked-mean-by-hand", "token_loss", """
        def token_loss(logits, labels):
            keep = labels != -100
            logp = torch.log_softmax(logits[keep], dim=-1)           # (M, L): labelled positions only
            return -logp[torch.arange(len(logp)), labels[keep]].mean()
        """),
    Alternative("bio_to_spans-while-loop", "bio_to_spans", """
        def bio_to_spans(tags):
            tags, spans, i = list(tags), [], 0
            while i < len(tags):
                if tags[i] == "O":
                    i += 1
                    continue
                kind, j = tags[i][2:], i + 1
                while j < len(tags) and tags[j] == "I-" + kind:
                    j += 1
                spans.append((kind, i, j))
                i = j
            return spans
        """),
    Alternative("bio_to_spans-starts-from-previous-tag", "bio_to_spans", """
        def bio_to_spans(tags):
            spans = []
            for i, tag in enumerate(tags):
                prev = tags[i - 1] if i > 0 else "O"
                starts = tag.startswith("B-") or (tag.startswith("I-") and prev[2:] != tag[2:])
                if starts:
                    spans.append([tag[2:], i, i + 1])
                elif tag != "O":
                    spans[-1][2] = i + 1
            return [tuple(s) for s in spans]
        """),
]

class TestGrading(LessonGrading):
    lesson, wrong, alternatives = "04_token_head", WRONG, ALTERNATIVES
