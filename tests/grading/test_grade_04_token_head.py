"""Lesson 04: wrong implementations students write, and correct alternatives."""
from harness import Alternative, Wrong, grading_tests

WRONG = [
    # --- TokenClassifier ---------------------------------------------------------------------------
    Wrong("TokenClassifier-softmax-inside-head", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.dropout = nn.Dropout(dropout)
                self.classifier = nn.Linear(d, num_labels)

            def forward(self, H):
                return self.classifier(self.dropout(H)).softmax(dim=-1)
        """, says="softmax inside the head"),
    Wrong("TokenClassifier-log-softmax-inside-head", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.dropout = nn.Dropout(dropout)
                self.classifier = nn.Linear(d, num_labels)

            def forward(self, H):
                return F.log_softmax(self.classifier(self.dropout(H)), dim=-1)
        """, says="log-probabilities"),
    Wrong("TokenClassifier-output-B-L-n", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.dropout = nn.Dropout(dropout)
                self.classifier = nn.Linear(d, num_labels)

            def forward(self, H):
                # "cross_entropy wants the classes on dim 1", done in the wrong place
                return self.classifier(self.dropout(H)).transpose(1, 2)
        """, says="that is (B, L, n)"),
    Wrong("TokenClassifier-linear-over-sequence-axis", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.dropout = nn.Dropout(dropout)
                self.classifier = nn.Linear(d, num_labels)

            def forward(self, H):
                return self.classifier(self.dropout(H).transpose(1, 2))   # "classify along the sequence"
        """, says="acts on the last axis"),
    Wrong("TokenClassifier-dropout-on-at-eval", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.p = dropout
                self.classifier = nn.Linear(d, num_labels)

            def forward(self, H):
                return self.classifier(F.dropout(H, p=self.p, training=True))
        """, says="dropout is left on at eval"),
    Wrong("TokenClassifier-dropout-after-linear", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.classifier = nn.Linear(d, num_labels)
                self.dropout = nn.Dropout(dropout)

            def forward(self, H):
                return self.dropout(self.classifier(H))
        """, says="dropout comes after the linear layer"),
    Wrong("TokenClassifier-dropout-argument-ignored", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.dropout = nn.Dropout(0.1)
                self.classifier = nn.Linear(d, num_labels)

            def forward(self, H):
                return self.classifier(self.dropout(H))
        """, says="should drop every feature"),
    Wrong("TokenClassifier-no-bias", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.dropout = nn.Dropout(dropout)
                self.classifier = nn.Linear(d, num_labels, bias=False)

            def forward(self, H):
                return self.classifier(self.dropout(H))
        """, says="with its bias"),
    Wrong("TokenClassifier-returns-label-ids", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.dropout = nn.Dropout(dropout)
                self.classifier = nn.Linear(d, num_labels)

            def forward(self, H):
                return self.classifier(self.dropout(H)).argmax(dim=-1)
        """, says="(B, n, num_labels)"),
    Wrong("TokenClassifier-mixes-positions", "TokenClassifier", """
        class TokenClassifier(nn.Module):
            def __init__(self, d, num_labels, dropout=0.1):
                super().__init__()
                self.dropout = nn.Dropout(dropout)
                self.classifier = nn.Linear(d, num_labels)

            def forward(self, H):
                H = H + H.mean(dim=1, keepdim=True)      # "give every token the sentence's context"
                return self.classifier(self.dropout(H))
        """, says="must not depend on the other positions"),
    # --- token_loss ---------------------------------------------------------------------------------
    Wrong("token_loss-minus-100-replaced-by-class-0", "token_loss", """
        def token_loss(logits, labels):
            labels = labels.clone()
            labels[labels == -100] = 0
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        """, says="you replaced the -100 labels by a class"),
    Wrong("token_loss-minus-100-overwritten-in-place", "token_loss", """
        def token_loss(logits, labels):
            labels[labels == -100] = 0
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        """, says="changed the labels tensor"),
    Wrong("token_loss-divides-by-all-positions", "token_loss", """
        def token_loss(logits, labels):
            mask = labels != -100
            logp = logits.log_softmax(-1)
            nll = -logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            return (nll * mask).sum() / labels.numel()
        """, says="you divided by all B·n"),
    Wrong("token_loss-classes-on-the-sequence-axis", "token_loss", """
        def token_loss(logits, labels):
            return F.cross_entropy(logits, labels)
        """, says="reads the classes from dim 1"),
    Wrong("token_loss-labels-shifted-past-cls", "token_loss", """
        def token_loss(logits, labels):
            # "skip [CLS]": but the labels are already aligned to the token positions
            L = logits.shape[-1]
            return F.cross_entropy(logits[:, 1:].reshape(-1, L), labels[:, :-1].reshape(-1))
        """, says="shifted by one position"),
    Wrong("token_loss-mean-per-sentence", "token_loss", """
        def token_loss(logits, labels):
            losses = [F.cross_entropy(row_logits, row_labels) for row_logits, row_labels in zip(logits, labels)]
            return torch.stack(losses).mean()
        """, says="averaged within each sentence"),
    Wrong("token_loss-returns-python-float", "token_loss", """
        def token_loss(logits, labels):
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)).item()
        """, says="do not call .item()"),
    Wrong("token_loss-softmax-before-cross-entropy", "token_loss", """
        def token_loss(logits, labels):
            probs = logits.softmax(dim=-1)
            return F.cross_entropy(probs.reshape(-1, probs.shape[-1]), labels.reshape(-1))
        """, says="applied softmax to the logits before cross_entropy"),
    Wrong("token_loss-gradient-leaks-to-unlabelled-positions", "token_loss", """
        def token_loss(logits, labels):
            # loss over every position, minus the (detached) part of the unlabelled ones: the value is
            # right, but the unlabelled positions still get gradient
            flat, target = logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)
            keep = target != -100
            nll = F.cross_entropy(flat, target.clamp(min=0), reduction="none")
            return (nll.sum() - nll[~keep].detach().sum()) / keep.sum()
        """, says="unlabelled positions must get no gradient"),
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
        """, says="it starts a new one. You dropped it"),
    Wrong("bio_to_spans-inclusive-ends", "bio_to_spans", """
        def bio_to_spans(tags):
            spans, kind, start = [], None, 0
            for i, tag in enumerate(list(tags) + ["O"]):
                if tag.startswith("I-") and tag[2:] == kind:
                    continue
                if kind is not None:
                    spans.append((kind, start, i - 1))     # index of the last word
                kind, start = (None, i) if tag == "O" else (tag[2:], i)
            return spans
        """, says="your ends are inclusive"),
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
        """, says="the type changes"),
    Wrong("bio_to_spans-last-entity-never-closed", "bio_to_spans", """
        def bio_to_spans(tags):
            spans, kind, start = [], None, 0
            for i, tag in enumerate(tags):
                if tag.startswith("I-") and tag[2:] == kind:
                    continue
                if kind is not None:
                    spans.append((kind, start, i))
                kind, start = (None, i) if tag == "O" else (tag[2:], i)
            return spans
        """, says="was never closed"),
    Wrong("bio_to_spans-B-after-same-type-merged", "bio_to_spans", """
        def bio_to_spans(tags):
            spans, kind, start = [], None, 0
            for i, tag in enumerate(list(tags) + ["O"]):
                if tag != "O" and tag[2:] == kind:
                    continue                       # same type as the open entity: keep going
                if kind is not None:
                    spans.append((kind, start, i))
                kind, start = (None, i) if tag == "O" else (tag[2:], i)
            return spans
        """, says="B- always starts a new entity"),
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
        """, says="without its B-/I- prefix"),
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

globals().update(grading_tests("04_token_head", WRONG, ALTERNATIVES))
