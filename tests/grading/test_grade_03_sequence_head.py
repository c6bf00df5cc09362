"""Lesson 03: wrong implementations students write, and correct alternatives."""
import textwrap

from harness import Alternative, Wrong, grading_tests

_INIT = """
class SequenceClassifier(nn.Module):
    def __init__(self, d, num_classes, dropout=0.1):
        super().__init__()
        self.num_classes = num_classes
        self.p = dropout
        self.dropout = nn.Dropout(dropout)
        self.linear = nn.Linear(d, num_classes)
"""


def head(forward: str, init: str = _INIT) -> str:
    """A SequenceClassifier with the usual __init__ and the given forward body."""
    return init + "\n    def forward(self, pooled):\n" + "".join(
        f"        {line}\n" for line in textwrap.dedent(forward).strip().splitlines())


WRONG = [
    Wrong("SequenceClassifier-softmax-inside-head", "SequenceClassifier", head("""
        z = self.linear(self.dropout(pooled))
        return z.squeeze(-1) if self.num_classes == 1 else z.softmax(dim=-1)
        """), says="returned probabilities"),
    Wrong("SequenceClassifier-dropout-on-at-eval", "SequenceClassifier", head("""
        z = self.linear(F.dropout(pooled, self.p, training=True))
        return z.squeeze(-1) if self.num_classes == 1 else z
        """), says="dropout is still on in eval mode"),
    Wrong("SequenceClassifier-regression-B-by-1", "SequenceClassifier", head("""
        return self.linear(self.dropout(pooled))
        """), says="returned shape (B, 1)"),
    Wrong("SequenceClassifier-no-dropout-in-training", "SequenceClassifier", head("""
        z = self.linear(pooled)
        return z.squeeze(-1) if self.num_classes == 1 else z
        """), says="no dropout at all in training mode"),
    Wrong("SequenceClassifier-dropout-after-linear", "SequenceClassifier", head("""
        z = self.dropout(self.linear(pooled))
        return z.squeeze(-1) if self.num_classes == 1 else z
        """), says="dropout AFTER the linear layer"),
    Wrong("SequenceClassifier-linear-without-bias", "SequenceClassifier", head("""
        z = self.linear(self.dropout(pooled))
        return z.squeeze(-1) if self.num_classes == 1 else z
        """, init=_INIT.replace("nn.Linear(d, num_classes)", "nn.Linear(d, num_classes, bias=False)")),
        says="has no bias"),
    Wrong("SequenceClassifier-fixed-dropout-rate", "SequenceClassifier", head("""
        z = self.linear(self.dropout(pooled))
        return z.squeeze(-1) if self.num_classes == 1 else z
        """, init=_INIT.replace("nn.Dropout(dropout)", "nn.Dropout(0.1)")), says="Use the dropout argument"),
    Wrong("SequenceClassifier-log-softmax-output", "SequenceClassifier", head("""
        z = self.linear(self.dropout(pooled))
        return z.squeeze(-1) if self.num_classes == 1 else F.log_softmax(z, dim=-1)
        """), says="log-probabilities"),
    Wrong("head_param_count-forgets-the-bias", "head_param_count", """
        def head_param_count(d, K):
            return K * d
        """, says="the bias is left out"),
    Wrong("head_param_count-one-bias-per-feature", "head_param_count", """
        def head_param_count(d, K):
            return K * d + d
        """, says="one entry per class"),
    Wrong("head_param_count-one-row-and-column-too-many", "head_param_count", """
        def head_param_count(d, K):
            return (d + 1) * (K + 1)
        """, says="one row and one column too many"),
    Wrong("head_param_count-adds-the-sizes", "head_param_count", """
        def head_param_count(d, K):
            return d + K
        """, says="added, not multiplied"),
    Wrong("head_param_count-returns-a-float", "head_param_count", """
        def head_param_count(d, K):
            return float(K * (d + 1))
        """, says="must return an int"),
    Wrong("untrained_loss-log-base-2", "untrained_loss", """
        def untrained_loss(K):
            return math.log2(K)
        """, says="log base 2"),
    Wrong("untrained_loss-log-base-10", "untrained_loss", """
        def untrained_loss(K):
            return math.log10(K)
        """, says="log base 10"),
    Wrong("untrained_loss-probability-not-loss", "untrained_loss", """
        def untrained_loss(K):
            return 1 / K
        """, says="probability"),
    Wrong("untrained_loss-wrong-sign", "untrained_loss", """
        def untrained_loss(K):
            return math.log(1 / K)
        """, says="the sign is wrong"),
    Wrong("untrained_loss-ln-2-for-every-K", "untrained_loss", """
        def untrained_loss(K):
            return math.log(2)
        """, says="ln 2 for every K"),
    Wrong("untrained_loss-error-rate-not-loss", "untrained_loss", """
        def untrained_loss(K):
            return 1 - 1 / K
        """, says="error rate of a uniform guess"),
    Wrong("untrained_loss-returns-a-tensor", "untrained_loss", """
        def untrained_loss(K):
            return torch.log(torch.tensor(float(K)))
        """, says="returned a tensor"),
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
    Alternative("untrained_loss-minus-log-of-uniform", "untrained_loss", """
        def untrained_loss(K):
            return -math.log(1.0 / K)
        """),
    Alternative("untrained_loss-cross-entropy-of-zero-logits", "untrained_loss", """
        def untrained_loss(K):
            return F.cross_entropy(torch.zeros(1, K), torch.tensor([0])).item()
        """),
]

globals().update(grading_tests("03_sequence_head", WRONG, ALTERNATIVES))
