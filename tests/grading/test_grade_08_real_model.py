"""Lesson 08: wrong implementations students write (each named by its key in headlab/checks/ch08.py),
and correct alternatives."""
from harness import Alternative, LessonGrading, Wrong

WRONG = [
    # sentence_embedding
    Wrong.edit("sentence_embedding-mean-over-padding", "sentence_embedding",
               "(H * mask).sum(dim=1) / mask.sum(dim=1)", "H.mean(dim=1)", "padding-in-mean"),
    # Forgetting keepdim on a (B,) norm or count: the visible cases have B ≠ d, so it raises, and the error's
    # sizes name it (with B = d it ran and was told "not L2-normalised").
    Wrong.edit("sentence_embedding-norm-without-keepdim", "sentence_embedding",
               "return mean / mean.norm(dim=-1, keepdim=True)", "return mean / mean.norm(dim=-1)",
               "divided-without-keepdim"),
    Wrong("sentence_embedding-count-and-norm-without-keepdim", "sentence_embedding", """
        def sentence_embedding(H, attention_mask):
            m = attention_mask.to(H.dtype)
            z = (H * m[:, :, None]).sum(dim=1) / m.sum(dim=1)
            return z / z.norm(dim=-1)
        """, "divided-without-keepdim"),
    Wrong.edit("sentence_embedding-norm-of-the-whole-batch", "sentence_embedding",
               "return mean / mean.norm(dim=-1, keepdim=True)", "return mean / mean.norm()", "norm-without-dim"),
    Wrong("sentence_embedding-specials-left-out", "sentence_embedding", """
        def sentence_embedding(H, attention_mask):
            mask = attention_mask.bool().clone()
            rows, n = torch.arange(len(mask)), mask.shape[1]
            mask[rows, mask.long().argmax(dim=1)] = False                   # [CLS], the first real token
            mask[rows, n - 1 - mask.long().flip(1).argmax(dim=1)] = False   # [SEP], the last one
            m = mask[:, :, None].to(H.dtype)
            mean = (H * m).sum(dim=1) / m.sum(dim=1)
            return mean / mean.norm(dim=-1, keepdim=True)
        """, mistake="specials-left-out"),
    Wrong.edit("sentence_embedding-no-normalisation", "sentence_embedding",
               "return mean / mean.norm(dim=-1, keepdim=True)", "return mean", "not-normalised"),
    Wrong("sentence_embedding-normalise-before-mean", "sentence_embedding", """
        import torch.nn.functional as F
        def sentence_embedding(H, attention_mask):
            mask = attention_mask.unsqueeze(-1).float()
            H = F.normalize(H, dim=-1)
            return F.normalize((H * mask).sum(1) / mask.sum(1), dim=-1)
        """, mistake="normalised-tokens-before-mean"),
    Wrong("sentence_embedding-cls-instead-of-mean", "sentence_embedding", """
        import torch.nn.functional as F
        def sentence_embedding(H, attention_mask):
            return F.normalize(H[:, 0], dim=-1)
        """, mistake="cls-instead-of-mean"),
    Wrong.edit("sentence_embedding-normalise-over-the-batch-axis", "sentence_embedding",
               "mean.norm(dim=-1, keepdim=True)", "mean.norm(dim=0, keepdim=True)", "normalised-over-batch"),
    Wrong("sentence_embedding-indexes-with-a-0-1-integer-mask", "sentence_embedding", """
        def sentence_embedding(H, attention_mask):
            rows = [H[b][attention_mask[b]].mean(0) for b in range(H.shape[0])]
            z = torch.stack(rows)
            return z / z.norm(dim=-1, keepdim=True)
        """, mistake="integer-mask-as-index"),
    # align_labels
    # Keys no wrong implementation named before (tests/test_mistake_vocabulary.py listed them):
    Wrong.edit("align_labels-returns-a-tuple-as-text", "align_labels", "return labels", "return str(labels)",
               "not-a-list"),
    Wrong("align_labels-labels-every-piece", "align_labels", """
        def align_labels(word_ids, word_labels):
            return [-100 if w is None else word_labels[w] for w in word_ids]
        """, mistake="labels-every-piece"),
    Wrong("align_labels-label-on-the-last-piece", "align_labels", """
        def align_labels(word_ids, word_labels):
            labels = []
            for i, w in enumerate(word_ids):
                following = word_ids[i + 1] if i + 1 < len(word_ids) else None
                labels.append(-100 if w is None or following == w else word_labels[w])
            return labels
        """, mistake="label-on-last-piece"),
    Wrong.edit("align_labels-specials-labelled-O", "align_labels", "labels.append(-100)\n        elif",
               "labels.append(0)\n        elif", "labels-special-tokens"),
    Wrong.edit("align_labels-if-not-word-id-skips-word-0", "align_labels", "if word_id is None:", "if not word_id:",
               "word-0-taken-for-special"),
    Wrong("align_labels-crashes-on-special-tokens", "align_labels", """
        def align_labels(word_ids, word_labels):
            labels, previous = [], None
            for w in word_ids:
                labels.append(word_labels[w] if w != previous else -100)
                previous = w
            return labels
        """, mistake="looks-up-special-tokens"),
    # Found by a student audit: each passed while every mask was right-padded, every word id contiguous
    # from 0 after a special token, and no gradient was asked for.
    Wrong("sentence_embedding-first-lengths-positions", "sentence_embedding", """
        def sentence_embedding(H, attention_mask):
            lengths = attention_mask.long().sum(1)
            z = torch.stack([H[b, :int(lengths[b])].mean(0) for b in range(H.shape[0])])
            return z / z.norm(dim=-1, keepdim=True)
        """, mistake="assumes-right-padding"),
    Wrong.edit("sentence_embedding-norm-detached", "sentence_embedding", "mean.norm(dim=-1, keepdim=True)",
               "mean.norm(dim=-1, keepdim=True).detach()", "wrong-gradient"),
    Wrong.edit("sentence_embedding-detached", "sentence_embedding", "return mean / mean.norm(dim=-1, keepdim=True)",
               "return (mean / mean.norm(dim=-1, keepdim=True)).detach()", "no-gradient"),
    Wrong("sentence_embedding-under-no-grad", "sentence_embedding", """
        def sentence_embedding(H, attention_mask):
            with torch.no_grad():
                mask = attention_mask[:, :, None].to(H.dtype)
                mean = (H * mask).sum(dim=1) / mask.sum(dim=1)
                return mean / mean.norm(dim=-1, keepdim=True)
        """, mistake="no-gradient"),
    Wrong("align_labels-previous-by-index-wraps-around", "align_labels", """
        def align_labels(word_ids, word_labels):
            out = []
            for i, w in enumerate(word_ids):
                out.append(-100 if w is None or word_ids[i - 1] == w else word_labels[w])
            return out
        """, mistake="previous-wraps-around"),
    Wrong("align_labels-counts-words-instead-of-ids", "align_labels", """
        def align_labels(word_ids, word_labels):
            labels, previous, k = [], None, 0
            for w in word_ids:
                if w is not None and w != previous:
                    labels.append(word_labels[k])
                    k += 1
                else:
                    labels.append(-100)
                previous = w
            return labels
        """, mistake="labels-by-word-count"),
    Wrong.edit("align_labels-appends-to-word-labels", "align_labels", "labels, previous = [], None",
               "labels, previous = [], None\n    word_labels.append(-100)", "changed-input"),
    Wrong.edit("align_labels-pops-word-labels", "align_labels", "labels.append(word_labels[word_id])",
               "labels.append(word_labels.pop(0))", "changed-input"),
    # once named word-0-taken-for-special (`if not word_id`); the cases that start with [CLS] tell the two apart
    Wrong.edit("align_labels-previous-starts-at-0", "align_labels", "labels, previous = [], None",
               "labels, previous = [], 0", "previous-starts-at-0"),
    # Found by probing the check: each got only the shape, or the length of a row, before.
    Wrong.edit("sentence_embedding-divided-by-the-squared-norm", "sentence_embedding",
               "return mean / mean.norm(dim=-1, keepdim=True)", "return mean / (mean ** 2).sum(dim=-1, keepdim=True)",
               "squared-norm"),
    Wrong.edit("align_labels-first-piece-test-inverted", "align_labels", "elif word_id != previous:",
               "elif word_id == previous:", "continuation-labelled-not-first"),
    Wrong.edit("align_labels-skips-special-tokens", "align_labels", "labels.append(-100)\n        elif",
               "continue\n        elif", "skips-special-tokens"),
    *Wrong.edits("sentence_embedding", "(H * mask).sum(dim=1) / mask.sum(dim=1)", [
        # found by probing the check: got only one row's values before
        ("specials-sliced-off", "(H * mask)[:, 1:-1].sum(dim=1) / mask[:, 1:-1].sum(dim=1)", "specials-left-out"),
        # was told "a mean over no position ... [CLS] and [SEP] included", another mistake's words
        ("inverted-mask", "(H * (1 - mask)).sum(dim=1) / mask.sum(dim=1)"),
        # `//` in the mean: the visible means are whole numbers, so the gradient step names it (issue 27.4)
        ("floor-division", "(H * mask).sum(dim=1) // mask.sum(dim=1)"),
    ]),
]

ALTERNATIVES = [
    Alternative("sentence_embedding-masked-sum-then-normalise", "sentence_embedding", """
        import torch.nn.functional as F
        def sentence_embedding(H, attention_mask):
            # the division by the count only rescales, and the normalisation removes any scale
            return F.normalize((H * attention_mask.unsqueeze(-1).to(H.dtype)).sum(dim=1), p=2, dim=1)
        """),
    Alternative("sentence_embedding-per-row-boolean-selection", "sentence_embedding", """
        def sentence_embedding(H, attention_mask):
            mask = attention_mask.bool()
            z = torch.stack([H[b, mask[b]].mean(dim=0) for b in range(H.shape[0])])
            return z / torch.linalg.vector_norm(z, dim=1, keepdim=True)
        """),
    Alternative("sentence_embedding-sentence-transformers-style", "sentence_embedding", """
        import torch.nn.functional as F
        def sentence_embedding(H, attention_mask):
            expanded = attention_mask.unsqueeze(-1).expand(H.size()).float()
            summed = torch.sum(H * expanded, 1)
            counts = torch.clamp(expanded.sum(1), min=1e-9)
            return F.normalize(summed / counts, p=2, dim=1)
        """),
    Alternative("align_labels-set-of-seen-words", "align_labels", """
        def align_labels(word_ids, word_labels):
            seen, labels = set(), []
            for w in word_ids:
                if w is None or w in seen:
                    labels.append(-100)
                else:
                    seen.add(w)
                    labels.append(int(word_labels[w]))
            return labels
        """),
    Alternative("align_labels-comprehension-with-the-previous-id", "align_labels", """
        def align_labels(word_ids, word_labels):
            previous = [None] + list(word_ids[:-1])
            return [word_labels[w] if w is not None and w != p else -100 for w, p in zip(word_ids, previous)]
        """),
]

class TestGrading(LessonGrading):
    lesson, wrong, alternatives = "08_real_model", WRONG, ALTERNATIVES
