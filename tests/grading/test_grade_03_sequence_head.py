"""Lesson 03: wrong implementations students write (each named by its key in headlab/checks/ch03.py),
and correct alternatives."""
from harness import Alternative, LessonGrading, Wrong

HEAD, LOGITS = "SequenceClassifier", "logits = self.linear(self.dropout(pooled))"
RETURN = "\n        return logits"   # the last line of forward (the K = 1 branch is indented further)

WRONG = [
    *Wrong.edits(HEAD, RETURN, [
        ("softmax-inside-head", RETURN + ".softmax(dim=-1)"),
        ("squeeze-without-axis", RETURN + ".squeeze()", "squeeze-drops-batch-axis"),
        ("log-softmax-inside-head", RETURN.replace("logits", "F.log_softmax(logits, dim=-1)")),
        ("relu-on-logits", RETURN + ".relu()"),
        ("sigmoid-output", RETURN + ".sigmoid()"),
        ("returns-label-ids", RETURN + ".argmax(dim=-1)"),
        # the regression head's (B,) made by flattening, for every K: only "returned shape (B·K,)" before
        ("flattened-logits", RETURN + ".view(-1)", "flattens-the-classes"),
    ]),
    Wrong.edit("SequenceClassifier-dropout-on-at-eval", HEAD, "self.dropout(pooled)",
               "F.dropout(pooled, self.dropout.p, training=True)", "dropout-at-eval"),
    *Wrong.edits(HEAD, "nn.Linear(d, num_classes)", [
        # nn.Linear's two sizes in the wrong order: torch's words alone before
        ("linear-sizes-swapped", "nn.Linear(num_classes, d)"),
        # binary cross-entropy's single logit for two classes: "returned shape (B, 1)" before
        ("one-logit-for-two-classes", "nn.Linear(d, 1 if num_classes == 2 else num_classes)",
         "one-logit-for-k-classes"),
    ]),
    Wrong.edit("SequenceClassifier-regression-B-by-1", HEAD, "return logits.squeeze(-1)", "return logits",
               "regression-b-by-1"),
    *Wrong.edits(HEAD, LOGITS, [
        ("no-dropout-in-training", "logits = self.linear(pooled)"),
        ("dropout-after-linear", "logits = self.dropout(self.linear(pooled))"),
        # Found by a student audit (as SequenceClassifier-dropout1d-drops-whole-examples below): it passed before the
        # train-mode and gradient checks it is named by.
        ("no-dropout-for-regression", "logits = self.linear(pooled if self.num_classes == 1 else self.dropout(pooled))",
         "no-dropout-in-training"),
        # A layer made in forward is random on every pass, as dropout left on is: named by a pass with zero weights.
        ("linear-built-in-forward", "logits = nn.Linear(pooled.shape[-1], self.num_classes)(self.dropout(pooled))",
         "layer-built-in-forward"),
        ("detached-logits", "logits = self.linear(self.dropout(pooled)).detach()", "parameters-without-gradient"),
        # A red team's forgery (issue 25, K1/K5/K6): a frozen parameter whose forward writes `.grad` itself, so
        # the kernel reported a gradient for it; a step of gradient descent on the grader's outputs shows it.
        ("frozen-bias-grad-written-by-hand", "self.linear.bias.requires_grad_(False)\n        self.linear.bias.grad = "
         f"torch.ones_like(self.linear.bias)\n        {LOGITS}", "parameters-without-gradient"),
        # The next red team's K1b: the frozen bias's `.grad` written by a hook on the logits, with the very gradient
        # the bias would get; the grader's step reads autograd's gradients of the trainable weights, not `.grad`.
        ("frozen-bias-grad-written-by-a-hook", f"self.linear.bias.requires_grad_(False)\n        {LOGITS}\n        "
         "if logits.requires_grad:\n            logits.register_hook(lambda g: setattr(self.linear.bias, 'grad', "
         "g.reshape(-1, self.num_classes).sum(0)) or g)", "parameters-without-gradient"),
        # lesson 02's [CLS] taken again from the pooled vectors: torch's words alone before
        ("takes-position-0-again", "logits = self.linear(self.dropout(pooled[:, 0]))", "indexes-c-again"),
        ("frozen-backbone-by-detach", "logits = self.linear(self.dropout(pooled.detach()))", "input-detached"),
    ]),
    Wrong.edit("SequenceClassifier-linear-without-bias", HEAD, "nn.Linear(d, num_classes)",
               "nn.Linear(d, num_classes, bias=False)", "no-bias"),
    Wrong.edit("SequenceClassifier-fixed-dropout-rate", HEAD, "nn.Dropout(dropout)", "nn.Dropout(0.1)",
               "fixed-dropout-rate"),
    Wrong.edit("SequenceClassifier-dropout1d-drops-whole-examples", HEAD, "nn.Dropout(dropout)",
               "nn.Dropout1d(dropout)", "drops-whole-vectors"),
    # TensorFlow 1's keep_prob habit: 1 − p zeroed, told drops-whole-vectors at p = 0.25, d = 3 before
    Wrong.edit("SequenceClassifier-dropout-keep-probability", HEAD, "nn.Dropout(dropout)", "nn.Dropout(1 - dropout)",
               "keep-probability-as-rate"),
    # A red team's forgery (issue 25, K2): an extra nn.Linear(K, K) hidden from modules() and parameters(); with
    # the grader's weights loaded into the head's state_dict, it changes the outputs.
    Wrong("SequenceClassifier-extra-linear-hidden-from-modules", "SequenceClassifier", """
        class SequenceClassifier(nn.Module):
            def __init__(self, d, num_classes, dropout=0.1):
                super().__init__()
                self.num_classes = num_classes
                self.dropout = nn.Dropout(dropout)
                self.linear = nn.Linear(d, num_classes)
                self.extra = nn.Linear(num_classes, num_classes)

            def modules(self):
                return iter([self, self.dropout, self.linear])

            def parameters(self, recurse=True):
                return self.linear.parameters()

            def forward(self, pooled):
                logits = self.extra(self.linear(self.dropout(pooled)))
                return logits.squeeze(-1) if self.num_classes == 1 else logits
        """, mistake="wrong-values"),
    *Wrong.edits("head_param_count", "K * d + K", [
        ("forgets-the-bias", "K * d"),
        ("one-bias-per-feature", "K * d + d"),
        ("one-row-and-column-too-many", "(d + 1) * (K + 1)"),
        ("adds-the-sizes", "d + K"),
        ("counts-the-pooler", "d * d + d + K * d + K"),
        ("returns-a-float", "float(K * (d + 1))", "not-an-int"),
    ]),
    *Wrong.edits("untrained_loss", "math.log(K)", [
        ("log-base-2", "math.log2(K)"),
        ("log-base-10", "math.log10(K)"),
        ("probability-not-loss", "1 / K"),
        ("torch-log-of-the-int", "torch.log(K)", "torch-function-on-a-number"),
        ("wrong-sign", "math.log(1 / K)"),
        ("ln-2-for-every-K", "math.log(2)", "ln-2-for-every-k"),
        ("error-rate-not-loss", "1 - 1 / K"),
        ("returns-a-tensor", "torch.log(torch.tensor(float(K)))", "returned-a-tensor"),
        # the entropy −Σ p ln p of the uniform guess without its sum: only "ln K" before
        ("one-term-of-the-entropy", "-(1 / K) * math.log(1 / K)", "one-term-of-the-sum"),
        ("rounded-to-four-places", "round(math.log(K), 4)", "rounded-answer"),
        ("entropy-without-the-probabilities", "-sum(math.log(1 / K) for _ in range(K))", "terms-without-their-weights"),
    ]),
]

ALTERNATIVES = [
    Alternative("SequenceClassifier-sequential-and-view", "SequenceClassifier", """
        class SequenceClassifier(nn.Module):
            def __init__(self, d, num_classes, dropout=0.1):
                super().__init__()
                self.k = num_classes
                self.net = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(d, num_classes))

            def forward(self, pooled):
                out = self.net(pooled)
                return out.view(-1) if self.k == 1 else out
        """),
    Alternative("SequenceClassifier-functional-dropout", "SequenceClassifier", """
        class SequenceClassifier(nn.Module):
            def __init__(self, d, num_classes, dropout=0.1):
                super().__init__()
                self.p, self.K = dropout, num_classes
                self.classifier = nn.Linear(d, num_classes)

            def forward(self, pooled):
                logits = self.classifier(F.dropout(pooled, p=self.p, training=self.training))
                if self.K == 1:
                    logits = logits[:, 0]
                return logits
        """),
    Alternative("head_param_count-d-plus-one-rows", "head_param_count", """
        def head_param_count(d, K):
            return (d + 1) * K
        """),
    Alternative("head_param_count-count-a-real-linear", "head_param_count", """
        def head_param_count(d, K):
            return sum(p.numel() for p in nn.Linear(d, K).parameters())
        """),
    Alternative("untrained_loss-float32-entropy", "untrained_loss", """
        def untrained_loss(K):
            p = torch.full((K,), 1.0 / K)
            return float(-(p * p.log()).sum())
        """),
    Alternative("untrained_loss-minus-log-of-uniform", "untrained_loss", """
        def untrained_loss(K):
            return -math.log(1.0 / K)
        """),
    Alternative("untrained_loss-cross-entropy-of-zero-logits", "untrained_loss", """
        def untrained_loss(K):
            return F.cross_entropy(torch.zeros(1, K), torch.tensor([0])).item()
        """),
]

class TestGrading(LessonGrading):
    lesson, wrong, alternatives = "03_sequence_head", WRONG, ALTERNATIVES
