"""Lesson 05: wrong implementations students write (each named by its key in headlab/checks/ch05.py),
and correct alternatives."""
import pytest
import torch
from harness import Alternative, LessonGrading, Wrong, squashed
from heads_lessons import lesson as lesson_named

from headlab.checks import ch05
from headlab.checks.core import CheckFailed

TWO_LINEAR_LAYERS = """
    class SpanHead(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.start = nn.Linear(d, 1)
            self.end = nn.Linear(d, 1)

        def forward(self, H):
            return self.start(H).squeeze(-1), self.end(H).squeeze(-1)
    """

LOGITS = "self.qa_outputs(H)"   # the solution's one call that computes the logits
# The solution's alternative written with loops; with * for +, the logits multiplied.
LOGIT_SUM_LOOPS = """
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
    """

WRONG = [
    # --- SpanHead ----------------------------------------------------------------------------------
    Wrong("SpanHead-one-shared-vector", "SpanHead", TWO_LINEAR_LAYERS.replace("self.end(H)", "self.start(H)"),
          mistake="same-scorer"),
    Wrong.edit("SpanHead-returns-probabilities", "SpanHead", "return start_logits, end_logits",
               "return start_logits.softmax(-1), end_logits.softmax(-1)", "softmax-inside-head"),
    Wrong("SpanHead-keeps-last-axis", "SpanHead", TWO_LINEAR_LAYERS.replace(".squeeze(-1)", ""),
          mistake="keeps-last-axis"),
    Wrong("SpanHead-squeeze-without-axis", "SpanHead", TWO_LINEAR_LAYERS.replace(".squeeze(-1)", ".squeeze()"),
          mistake="squeeze-drops-batch-axis"),
    Wrong.edit("SpanHead-one-tensor-not-a-pair", "SpanHead", "return start_logits, end_logits", "return logits",
               "one-tensor"),
    Wrong.edit("SpanHead-extra-hidden-layer", "SpanHead", "self.qa_outputs = nn.Linear(d, 2)",
               "self.qa_outputs = nn.Sequential(nn.Linear(d, d), nn.Tanh(), nn.Linear(d, 2))", "not-linear"),
    # the solution with its logits computed otherwise
    *Wrong.edits("SpanHead", LOGITS, [
        # the sigmoid, found by a simulated student (issue 27), was "not linear" before, and the relu, the fifth
        # simulated student's, "not a linear map"
        *squashed(LOGITS),
        ("detached-logits", f"{LOGITS}.detach()", "not-connected"),
        # The fifth simulated student's: "not a linear map" before
        ("log-softmax-over-positions", f"{LOGITS}.log_softmax(dim=1)", "log-softmax-inside-head"),
        # a softmax over the (start, end) axis of each position: told sigmoid-output before (σ(s − e) is one)
        ("softmax-over-start-and-end", f"{LOGITS}.softmax(dim=-1)", "softmax-inside-head"),
        # Found by a simulated student (issue 27): "dropout at eval" before
        ("linear-built-in-forward", "nn.Linear(H.shape[-1], 2)(H)", "layer-built-in-forward"),
        ("dropout-on-at-eval", "self.qa_outputs(F.dropout(H, 0.1, training=True))", "dropout-at-eval"),
        ("with-dropout", "self.qa_outputs(F.dropout(H, 0.1, self.training))", "dropout-in-head"),
        ("detaches-its-input", "self.qa_outputs(H.detach())", "input-detached"),
        ("scores-the-first-position-only", "self.qa_outputs(H[:, 0])", "scores-one-position"),
    ]),
    Wrong("SpanHead-plain-tensors-not-parameters", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.w = torch.randn(d, 2) / d ** 0.5      # plain tensors: the optimiser never sees them
                self.b = torch.zeros(2)

            def forward(self, H):
                start, end = (H @ self.w + self.b).unbind(-1)
                return start, end
        """, mistake="no-parameters"),
    Wrong("SpanHead-random-start-kept-outside-the-parameters", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.w = nn.Parameter(torch.zeros(2, d))
                self.b = nn.Parameter(torch.zeros(2))
                self.init = torch.randn(2, d) / d ** 0.5   # a random start that training can never change

            def forward(self, H):
                start, end = (H @ (self.w + self.init).T + self.b).unbind(-1)
                return start, end
        """, mistake="fixed-tensor"),
    Wrong.edit("SpanHead-splits-the-batch-axis", "SpanHead", "start_logits, end_logits = logits.unbind(dim=-1)",
               "start_logits, end_logits = logits[0], logits[1]", "splits-batch-axis"),
    # Two scorers, the end one on a detached H: right logits, but the encoder learns from the starts alone.
    Wrong("SpanHead-end-scorer-on-a-detached-H", "SpanHead",
          TWO_LINEAR_LAYERS.replace("self.end(H)", "self.end(H.detach())"), mistake="wrong-input-gradient"),
    # "the encoder's output is only read": H copied under no_grad
    Wrong.edit("SpanHead-input-copied-under-no-grad", "SpanHead", f"logits = {LOGITS}",
               f"with torch.no_grad():\n            H = H.clone()\n        logits = {LOGITS}", "input-detached"),
    Wrong("SpanHead-bias-through-data", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.s = nn.Parameter(torch.randn(d) / d ** 0.5)
                self.e = nn.Parameter(torch.randn(d) / d ** 0.5)
                self.b = nn.Parameter(torch.zeros(2))

            def forward(self, H):
                return H @ self.s + self.b.data[0], H @ self.e + self.b.data[1]   # .data: no gradient to b
        """, mistake="parameters-without-gradient"),
    # --- best_span ---------------------------------------------------------------------------------
    Wrong("best_span-independent-argmax", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            i = start_logits.masked_fill(~allowed, float("-inf")).argmax(-1)
            j = end_logits.masked_fill(~allowed, float("-inf")).argmax(-1)
            return torch.stack([i, j], dim=-1)
        """, mistake="independent-argmax"),
    # The sixth simulated student's: an argmax over the whole batch was told "an index went past the end"
    Wrong("best_span-argmax-without-dim", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            n = start_logits.shape[-1]
            allowed = allowed.bool()
            s = start_logits.masked_fill(~allowed, float("-inf"))
            e = end_logits.masked_fill(~allowed, float("-inf"))
            i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
            table = (s[:, :, None] + e[:, None, :]).masked_fill((j < i) | (j > i + max_len - 1), float("-inf"))
            flat = table.flatten(1).argmax()
            return torch.stack([flat // n, flat % n], dim=1)
        """, mistake="axis-not-there"),
    Wrong("best_span-answer-inside-the-question", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            n = start_logits.shape[1]
            i = torch.arange(n)[:, None]
            j = torch.arange(n)[None, :]
            band = (j >= i) & (j <= i + max_len - 1)
            scores = start_logits.log_softmax(-1)[:, :, None] + end_logits.log_softmax(-1)[:, None, :]
            flat = scores.masked_fill(~band, float("-inf")).flatten(1).argmax(-1)
            return torch.stack([flat // n, flat % n], dim=-1)
        """, mistake="outside-the-passage"),
    Wrong.edit("best_span-max_len-off-by-one", "best_span", "j <= i + max_len - 1", "j <= i + max_len",
               "one-too-long"),
    Wrong.edit("best_span-no-length-cap", "best_span", "(i <= j) & (j <= i + max_len - 1)", "(i <= j)",
               "one-too-long"),
    Wrong("best_span-mask-multiplied", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            n = start_logits.shape[-1]
            s, e = start_logits * allowed, end_logits * allowed      # 0 outside the passage
            i = torch.arange(n)[:, None]
            j = torch.arange(n)[None, :]
            band = (i <= j) & (j <= i + max_len - 1)
            flat = (s[:, :, None] + e[:, None, :]).masked_fill(~band, float("-inf")).flatten(1).argmax(-1)
            return torch.stack([flat // n, flat % n], dim=-1)
        """, mistake="mask-multiplied"),
    Wrong.edit("best_span-exclusive-end", "best_span", "flat % n]", "flat % n + 1]", "exclusive-end"),
    # Found by a simulated student: each got only "returned X; expected Y" before.
    Wrong.edit("best_span-end-start-swapped", "best_span", "torch.stack([flat // n, flat % n], dim=-1)",
               "torch.stack([flat % n, flat // n], dim=-1)", "start-end-swapped"),
    Wrong.edit("best_span-probabilities-added", "best_span", "scores = log_p_start[:, :, None] + log_p_end[:, None, :]",
               "scores = log_p_start.exp()[:, :, None] + log_p_end.exp()[:, None, :]", "probabilities-added"),
    # Found by a simulated student (issue 27): the raw logits multiplied, in a loop or after masking with −inf
    Wrong("best_span-logits-multiplied-in-loops", "best_span",
          LOGIT_SUM_LOOPS.replace("start_logits[b, i] + end_logits[b, j]", "start_logits[b, i] * end_logits[b, j]"),
          mistake="logits-multiplied"),
    Wrong.edit("best_span-masked-logits-multiplied", "best_span",
               "scores = log_p_start[:, :, None] + log_p_end[:, None, :]",
               "scores = start_logits.masked_fill(~allowed, float('-inf'))[:, :, None] * "
               "end_logits.masked_fill(~allowed, float('-inf'))[:, None, :]", "logits-multiplied"),
    Wrong("best_span-greedy-start-first", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            n = start_logits.shape[-1]
            i = start_logits.masked_fill(~allowed, float("-inf")).argmax(dim=-1)
            pos = torch.arange(n)
            ends = allowed & (pos[None, :] >= i[:, None]) & (pos[None, :] <= i[:, None] + max_len - 1)
            j = end_logits.masked_fill(~ends, float("-inf")).argmax(dim=-1)
            return torch.stack([i, j], dim=-1)
        """, mistake="greedy-start-first"),
    Wrong.edit("best_span-band-one-too-short", "best_span", "j <= i + max_len - 1", "j < i + max_len - 1",
               "one-too-short"),
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
        """, mistake="depends-on-other-rows"),
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
        """, mistake="integer-mask"),
    Wrong("best_span-allowed-taken-for-one-block", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            B, n = start_logits.shape
            out = []
            for b in range(B):
                idx = allowed[b].nonzero().flatten()
                lo, hi = int(idx[0]), int(idx[-1])            # the first and last allowed position
                best, arg = None, None
                for i in range(lo, hi + 1):
                    for j in range(i, min(i + max_len - 1, hi) + 1):
                        score = float(start_logits[b, i] + end_logits[b, j])
                        if best is None or score > best:
                            best, arg = score, (i, j)
                out.append(arg)
            return torch.tensor(out)
        """, mistake="searches-between-allowed"),
    Wrong.edit("best_span-integer-mask-not-converted", "best_span", "allowed = allowed.bool()", "pass",
               "integer-mask"),
    Wrong.edit("best_span-band-without-order", "best_span", "band = (i <= j) & (j <= i + max_len - 1)",
               "band = (j - i).abs() < max_len", "backward-spans"),
    # Found by a simulated student: each got only "returned X; expected Y" or the expected shape before.
    Wrong.edit("best_span-band-transposed", "best_span", "band = (i <= j) & (j <= i + max_len - 1)",
               "band = torch.ones(n, n, dtype=torch.bool).tril().triu(-(max_len - 1))", "backward-spans"),
    Wrong.edit("best_span-strict-band", "best_span", "band = (i <= j)", "band = (i < j)", "one-token-spans-excluded"),
    # nn.Linear's sizes given as (out, in): torch's shape error and "print the shapes" before
    Wrong.edit("SpanHead-linear-sizes-swapped", "SpanHead", "nn.Linear(d, 2)", "nn.Linear(2, d)", "linear-sizes-swapped"),
    Wrong.edit("SpanHead-pair-from-T", "SpanHead", "logits.unbind(dim=-1)", "logits.T", "logits-transposed"),
    # Found by a simulated student: a ValueError, "returned a tuple" or the expected shape before.
    *Wrong.edits("SpanHead", "logits.unbind(dim=-1)", [
        ("unbinds-the-position-axis", "logits.unbind(dim=1)", "splits-position-axis"),
        ("indexes-the-position-axis", "logits[:, 0], logits[:, 1]", "splits-position-axis"),
    ]),
    Wrong.edit("SpanHead-returns-the-position-axis-unbound", "SpanHead", "return start_logits, end_logits",
               "return logits.unbind(dim=1)", "splits-position-axis"),
    # Found by a simulated student: "returned X; expected Y" before. triu/tril zero the pairs they drop, which beat
    # every log-probability sum (and every negative logit sum).
    Wrong.edit("best_span-band-by-triu-on-log-probabilities", "best_span",
               'flat = scores.masked_fill(~band, float("-inf")).flatten(1).argmax(dim=-1)',
               "flat = scores.triu().tril(max_len - 1).flatten(1).argmax(dim=-1)", "zeros-outside-band"),
    Wrong("best_span-band-by-triu-on-logits", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            n = start_logits.shape[1]
            s = start_logits.masked_fill(~allowed, float("-inf"))
            e = end_logits.masked_fill(~allowed, float("-inf"))
            flat = (s[:, :, None] + e[:, None, :]).triu().tril(max_len - 1).flatten(1).argmax(-1)
            return torch.stack([flat // n, flat % n], dim=-1)
        """, mistake="zeros-outside-band"),
    # The band as a (B, n, max_len) table of (start, offset) scores, its flat argmax read back as (i, offset)
    Wrong("best_span-offset-table", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            B, n = start_logits.shape
            s = start_logits.masked_fill(~allowed, float("-inf"))
            e = end_logits.masked_fill(~allowed, float("-inf"))
            table = torch.full((B, n, max_len), float("-inf"))
            for k in range(min(max_len, n)):
                table[:, :n - k, k] = s[:, :n - k] + e[:, k:]
            flat = table.flatten(1).argmax(-1)
            return torch.stack([flat // max_len, flat % max_len], dim=-1)
        """, mistake="end-as-offset"),
    Wrong.edit("best_span-end-not-masked", "best_span",
               'log_p_end = end_logits.masked_fill(~allowed, float("-inf")).log_softmax(dim=-1)',
               "log_p_end = end_logits.log_softmax(dim=-1)", "end-not-restricted"),
    Wrong.edit("best_span-start-not-masked", "best_span",
               'log_p_start = start_logits.masked_fill(~allowed, float("-inf")).log_softmax(dim=-1)',
               "log_p_start = start_logits.log_softmax(dim=-1)", "start-not-restricted"),
    Wrong.edit("best_span-pairs-stacked-on-dim-0", "best_span", "torch.stack([flat // n, flat % n], dim=-1)",
               "torch.stack([flat // n, flat % n])", "pairs-on-first-axis"),
    # the argmax of the flattened score table, returned as it is
    Wrong.edit("best_span-flat-index-returned", "best_span", "torch.stack([flat // n, flat % n], dim=-1)",
               "flat", "flat-index"),
    Wrong("best_span-softmax-over-batch-after-inf-masking", "best_span", """
        def best_span(start_logits, end_logits, allowed, max_len):
            allowed = allowed.bool()
            n = start_logits.shape[1]
            p_start = start_logits.masked_fill(~allowed, float("-inf")).softmax(0)
            p_end = end_logits.masked_fill(~allowed, float("-inf")).softmax(0)
            i = torch.arange(n)[:, None]
            j = torch.arange(n)[None, :]
            scores = (p_start[:, :, None] * p_end[:, None, :]).masked_fill(~((i <= j) & (j < i + max_len)), -1.0)
            flat = scores.flatten(1).argmax(-1)
            return torch.stack([flat // n, flat % n], dim=-1)
        """, mistake="nan-from-softmax-over-batch"),
    # the loops' best score started at 0, not −inf: a row whose spans all score below 0 keeps (0, 0)
    Wrong("best_span-loop-best-starts-at-zero", "best_span",
          LOGIT_SUM_LOOPS.replace("best = None", "best = 0.0").replace("best is None or score > best", "score > best"),
          mistake="best-starts-at-zero"),
    # the loops' band not capped at the row's end
    Wrong("best_span-loop-band-past-the-end", "best_span",
          LOGIT_SUM_LOOPS.replace("min(i + max_len, n)", "i + max_len"), mistake="band-past-the-end"),
    # --- span_loss ---------------------------------------------------------------------------------
    Wrong("span_loss-one-hot-targets", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            n = start_logits.shape[1]
            ce_start = F.cross_entropy(start_logits, F.one_hot(start, n))
            return (ce_start + F.cross_entropy(end_logits, F.one_hot(end, n))) / 2
        """, mistake="one-hot-targets"),
    Wrong("span_loss-start-only", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            return F.cross_entropy(start_logits, start)
        """, mistake="start-only"),
    Wrong("span_loss-end-only", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            return F.cross_entropy(end_logits, end)
        """, mistake="end-only"),
    Wrong("span_loss-one-loss-per-example", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            ce_start = F.cross_entropy(start_logits, start, reduction="none")
            return (ce_start + F.cross_entropy(end_logits, end, reduction="none")) / 2
        """, mistake="one-loss-per-example"),
    Wrong.edit("span_loss-detached", "span_loss", "F.cross_entropy(end_logits, end)) / 2",
               "F.cross_entropy(end_logits, end)).detach() / 2", "no-gradient"),
    # each position a yes/no question, as a sigmoid per position would answer it
    Wrong("span_loss-binary-cross-entropy-on-one-hot", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            n = start_logits.shape[1]
            bce_start = F.binary_cross_entropy_with_logits(start_logits, F.one_hot(start, n).float())
            return (bce_start + F.binary_cross_entropy_with_logits(end_logits, F.one_hot(end, n).float())) / 2
        """, mistake="binary-cross-entropy"),
    Wrong("span_loss-softmax-over-batch", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            rows = torch.arange(start_logits.shape[0])
            ce_start = -start_logits.log_softmax(dim=0)[rows, start].mean()
            ce_end = -end_logits.log_softmax(dim=0)[rows, end].mean()
            return (ce_start + ce_end) / 2
        """, mistake="softmax-over-batch"),
    Wrong("span_loss-softmax-first", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            p_start, p_end = start_logits.softmax(-1), end_logits.softmax(-1)
            return (F.cross_entropy(p_start, start) + F.cross_entropy(p_end, end)) / 2
        """, mistake="softmax-first"),
    Wrong("span_loss-not-halved", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            return F.cross_entropy(start_logits, start) + F.cross_entropy(end_logits, end)
        """, mistake="not-halved"),
    Wrong.edit("span_loss-halves-only-the-end-loss", "span_loss",
               "(F.cross_entropy(start_logits, start) + F.cross_entropy(end_logits, end)) / 2",
               "F.cross_entropy(start_logits, start) + F.cross_entropy(end_logits, end) / 2", "operator-precedence"),
    # the start line copied for the end and only its target changed
    Wrong.edit("span_loss-end-loss-on-start-logits", "span_loss", "F.cross_entropy(end_logits, end)",
               "F.cross_entropy(start_logits, end)", "same-logits-twice"),
    Wrong("span_loss-targets-swapped", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            return (F.cross_entropy(start_logits, end) + F.cross_entropy(end_logits, start)) / 2
        """, mistake="targets-swapped"),
    Wrong("span_loss-summed-over-batch", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            total = F.cross_entropy(start_logits, start, reduction="sum")
            total = total + F.cross_entropy(end_logits, end, reduction="sum")
            return total / 2
        """, mistake="summed-over-batch"),
    Wrong("span_loss-nll-loss-on-raw-logits", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            return (F.nll_loss(start_logits, start) + F.nll_loss(end_logits, end)) / 2
        """, mistake="nll-on-logits"),
    # Found by a simulated student (issue 27): a regression loss, and smoothed targets
    Wrong("span_loss-mse-on-one-hot", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            n = start_logits.shape[-1]
            return (F.mse_loss(start_logits, F.one_hot(start, n).float())
                    + F.mse_loss(end_logits, F.one_hot(end, n).float())) / 2
        """, mistake="mse-not-cross-entropy"),
    Wrong.edit("span_loss-label-smoothing", "span_loss", "start) + F.cross_entropy(end_logits, end)",
               "start, label_smoothing=0.1) + F.cross_entropy(end_logits, end, label_smoothing=0.1)", "label-smoothing"),
    # Equal to start-only's or end-only's value on each case: named only because the cases together refute both.
    Wrong("span_loss-larger-of-the-two", "span_loss", """
        def span_loss(start_logits, end_logits, start, end):
            return torch.max(F.cross_entropy(start_logits, start), F.cross_entropy(end_logits, end))
        """, mistake="larger-of-the-two"),
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
    Alternative("SpanHead-two-linear-layers", "SpanHead", TWO_LINEAR_LAYERS),
    Alternative("SpanHead-end-as-the-start-vector-plus-its-own", "SpanHead", """
        class SpanHead(nn.Module):                        # end = H·w + H·c: no usual layout, still linear
            def __init__(self, d):
                super().__init__()
                self.w = nn.Parameter(torch.randn(d) / d ** 0.5)
                self.c = nn.Parameter(torch.zeros(d))
                self.b = nn.Parameter(torch.zeros(2))

            def forward(self, H):
                return H @ self.w + self.b[0], H @ self.w + H @ self.c + self.b[1]
        """),
    Alternative("SpanHead-one-flat-parameter", "SpanHead", """
        class SpanHead(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.d = d
                self.theta = nn.Parameter(torch.randn(2 * d + 2) * 0.02)

            def forward(self, H):
                W, b = self.theta[:2 * self.d].view(2, self.d), self.theta[2 * self.d:]
                start, end = (H @ W.T + b).unbind(-1)
                return start, end
        """),
    Alternative("best_span-plain-logit-sum-loops", "best_span", LOGIT_SUM_LOOPS),
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

class TestGrading(LessonGrading):
    lesson, wrong, alternatives = "05_span_head", WRONG, ALTERNATIVES


def test_the_hidden_cases_alone_name_the_probabilities_added():
    """best_span's hidden test names the probabilities added even where the visible check would not have run first
    (issue 27.10): its random cases did not tell a sum of the two probabilities from their product."""
    lesson = lesson_named("05_span_head")
    cell = next(c for c in lesson.read().cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_best_span")
    hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
    namespace = {"torch": torch, "check": ch05}
    exec(next(w for w in WRONG if w.name == "best_span-probabilities-added").answer(lesson.answers()), namespace)
    with pytest.raises(CheckFailed) as caught:
        exec(hidden, namespace)
    assert caught.value.mistake == "probabilities-added", str(caught.value)
