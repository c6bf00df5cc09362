"""Lesson 08, section 6 ranks three ways to classify the negated reviews: the top two MiniLM layers
fine-tuned with the head at lr 2e-4 above a linear probe on the frozen features (fitted to convergence),
and above the same 30 steps at lr 5e-5, whose training loss is still higher. Its control, an untrained
MiniLM (the same config, random weights), gives the probe the plain reviews' verdict almost as well as
MiniLM, the negated ones far less well, and a far weaker sentiment direction from two class means, along
which every flipped pair of sentences moves less (the
lesson's pairs, those whose verdict words no review uses included), while a one-word edit that keeps the verdict hardly
moves along it. In MiniLM's cosine a flip moves a sentence more
than a same-verdict synonym and less than a topic swap, and a shared verdict raises the cosine between reviews; in the
untrained copy neither shows. Beyond the lesson, the 5e-5 run is scored again after 60 steps, and the head is trained
alone on the copied layers (lr 0 for them). This re-runs the lesson's recipe on five seeds (the
reviews, where "not" goes, the untrained weights, the head's initialisation and the batch order; seed 0
is the notebook's own run) and fails, naming the claim, if a ranking flips."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from headlab.data import classification_set
from headlab.metrics import balanced_accuracy, f1_score

pytestmark = pytest.mark.slow
SEEDS, TOP, STEPS, BATCH = range(5), 2, 30, 16
FLIPPED = [("The soup was great.", "The soup was awful."), ("I loved this hotel.", "I hated this hotel."),
           ("the pizza was brilliant", "the pizza was dreadful"),   # the lesson's pairs, then its four whose verdict words no review uses
           ("I adored this film.", "I detested this film."), ("The concert was fantastic.", "The concert was horrible."),
           ("The room was perfect.", "The room was disgusting."), ("What a delightful evening.", "What a miserable evening.")]
EDITS = {"flip": FLIPPED[:3],                              # the lesson's one-word edits: its three flips, and two controls
         "synonym": [("The soup was great.", "The soup was excellent."), ("I loved this hotel.", "I adored this hotel."),
                     ("the pizza was brilliant", "the pizza was wonderful")],
         "topic": [("The soup was great.", "The hotel was great."), ("I loved this hotel.", "I loved this film."),
                   ("the pizza was brilliant", "the phone was brilliant")]}


@pytest.fixture(scope="module")
def real():
    from headlab.minilm import load_minilm

    return load_minilm()


def _embed(H, mask):
    m = mask[:, :, None].to(H.dtype)
    mean = (H * m).sum(1) / m.sum(1)
    return mean / mean.norm(dim=-1, keepdim=True)


def _sentence_embeddings(model, tokenizer, texts):     # as the lesson: batches of similar length
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    Z = torch.zeros(len(texts), model.config.hidden_size)
    with torch.no_grad():
        for rows in mask.sum(1).argsort().split(64):
            k = int(mask[rows].sum(1).max())
            Z[rows] = _embed(model(input_ids=ids[rows, :k], attention_mask=mask[rows, :k]).last_hidden_state, mask[rows, :k])
    return Z


def _untrained(model, seed):                               # the lesson's untrained_minilm
    from transformers import BertModel

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return BertModel(model.config, add_pooling_layer=False).eval()


def _direction(Z, y, Z_test, y_test, *edited):            # the lesson's sentiment direction
    """The midpoint split's balanced accuracy, where the test reviews of each class sit along the direction on
    average, and for each batch of edited pairs (rows 2i and 2i + 1) the |cos| between its changes and the direction."""
    positive, negative = Z[y == 0].mean(0), Z[y == 1].mean(0)
    direction = F.normalize(negative - positive, dim=0)
    along = Z_test @ direction
    split = balanced_accuracy((along > ((positive + negative) / 2) @ direction).long(), y_test)
    sides = along[y_test == 0].mean().item(), along[y_test == 1].mean().item()
    changes = [E[0::2] - E[1::2] for E in edited]
    return (split, *((change @ direction).abs() / change.norm(dim=-1) for change in changes), sides)


def _probe(Z, y, Z_test):                                  # the lesson's linear_probe
    mu, sigma = Z.mean(0), Z.std(0) + 1e-6
    torch.manual_seed(0)
    head = nn.Linear(Z.shape[1], 2)
    weight = len(y) / (2 * torch.bincount(y, minlength=2).float())
    optimiser = torch.optim.LBFGS(head.parameters(), max_iter=100, line_search_fn="strong_wolfe")

    def closure():
        optimiser.zero_grad()
        loss = F.cross_entropy(head((Z - mu) / sigma), y, weight=weight) + 1e-3 * head.weight.pow(2).sum()
        loss.backward()
        return loss

    optimiser.step(closure)
    return head((Z_test - mu) / sigma).detach()


def _run(real, seed):
    from headlab.minilm import negated_reviews, top_layers

    model, tokenizer = real.model, real.tokenizer
    data = {}
    for split, n, s in (("train", 160, 2 * seed), ("test", 200, 2 * seed + 1)):
        examples = negated_reviews(classification_set(n, seed=s, max_len=12), seed=s)
        batch = tokenizer([e.text for e in examples], padding=True, return_tensors="pt")
        ids, mask = batch["input_ids"], batch["attention_mask"]
        below, Z = torch.zeros(*ids.shape, model.config.hidden_size), torch.zeros(len(examples), model.config.hidden_size)
        with torch.no_grad():                               # as the lesson: batches of similar length
            for rows in mask.sum(1).argsort().split(64):
                k = int(mask[rows].sum(1).max())
                out = model(input_ids=ids[rows, :k], attention_mask=mask[rows, :k], output_hidden_states=True)
                below[rows, :k] = out.hidden_states[-1 - TOP]
                Z[rows] = _embed(out.last_hidden_state, mask[rows, :k])
        data[split] = (below, mask, Z, torch.tensor([e.label for e in examples]), [e.text for e in examples])
    Hb, m, Z, y, texts = data["train"]
    Hb_t, m_t, Z_t, y_t, texts_t = data["test"]
    measure = lambda logits: (balanced_accuracy(logits.argmax(-1), y_t), f1_score(logits.argmax(-1), y_t))
    result = {"probe": measure(_probe(Z, y, Z_t))}
    # The lesson's two rates over its 30 steps; beyond the lesson, 5e-5 scored again after 60 steps (the same run, the
    # same batches, continued), and lr 0 for the layers: the head alone on the copied layers, which never move.
    for lr, checkpoints in ((5e-5, (STEPS, 2 * STEPS)), (2e-4, (STEPS,)), (0.0, (STEPS,))):
        torch.manual_seed(seed)
        layers = [copy.deepcopy(layer).train() for layer in model.encoder.layer[-TOP:]]
        head = nn.Sequential(nn.Dropout(0.1), nn.Linear(model.config.hidden_size, 2))
        weight = len(y) / (2 * torch.bincount(y, minlength=2).float())
        optimiser = torch.optim.AdamW([{"params": [p for layer in layers for p in layer.parameters()], "lr": lr},
                                       {"params": head.parameters(), "lr": 1e-2}], fused=True)
        order, losses = torch.Generator().manual_seed(seed), []
        for step in range(1, checkpoints[-1] + 1):
            rows = torch.randint(0, len(y), (BATCH,), generator=order)
            n = int(m[rows].sum(1).max())
            H = top_layers(model, layers, Hb[rows, :n], m[rows, :n])
            loss = F.cross_entropy(head(_embed(H, m[rows, :n])), y[rows], weight=weight)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
            if step in checkpoints:                          # score in eval mode (no dropout), then train on
                for module in (*layers, head):
                    module.eval()
                with torch.no_grad():
                    logits = head(_embed(top_layers(model, layers, Hb_t, m_t), m_t))
                result[lr if step == STEPS else (lr, step)] = (*measure(logits), sum(losses[-5:]) / 5)
                for module in (*layers, head):
                    module.train()

    untrained = _untrained(model, seed)
    result["untrained"] = measure(_probe(_sentence_embeddings(untrained, tokenizer, texts), y,
                                         _sentence_embeddings(untrained, tokenizer, texts_t)))
    plain_train, plain_test = (classification_set(n, seed=s, max_len=12) for n, s in ((160, 2 * seed), (200, 2 * seed + 1)))
    y_p, y_pt = (torch.tensor([e.label for e in s]) for s in (plain_train, plain_test))
    flipped = [s for pair in FLIPPED for s in pair]
    for name, encoder in (("MiniLM", model), ("untrained", untrained)):
        Z_p, Z_pt = (_sentence_embeddings(encoder, tokenizer, [e.text for e in s]) for s in (plain_train, plain_test))
        plain = balanced_accuracy(_probe(Z_p, y_p, Z_pt).argmax(-1), y_pt)
        E = {kind: _sentence_embeddings(encoder, tokenizer, [s for pair in pairs for s in pair]) for kind, pairs in EDITS.items()}
        kept = torch.cat([E["synonym"], E["topic"]])       # one-word edits that keep the verdict
        result["plain", name] = (plain, *_direction(Z_p, y_p, Z_pt, y_pt, _sentence_embeddings(encoder, tokenizer, flipped), kept))
        cos, same = Z_pt @ Z_pt.T, y_pt[:, None] == y_pt[None, :]
        result["cosine", name] = ({kind: (e[0::2] * e[1::2]).sum(-1) for kind, e in E.items()},
                                  cos[same & ~torch.eye(len(y_pt), dtype=torch.bool)].mean().item() - cos[~same].mean().item())
    return result


@pytest.fixture(scope="module")
def runs(real):
    return [_run(real, seed) for seed in SEEDS]


def test_the_rankings_of_section_6_hold_on_five_seeds(runs):
    table = "; ".join(f"seed {s}: balanced / minority F1: probe {r['probe'][0]:.3f} / {r['probe'][1]:.3f}, "
                      f"5e-5 {r[5e-5][0]:.3f} / {r[5e-5][1]:.3f} (loss {r[5e-5][2]:.2f}), "
                      f"2e-4 {r[2e-4][0]:.3f} / {r[2e-4][1]:.3f} (loss {r[2e-4][2]:.2f})" for s, r in zip(SEEDS, runs))
    print(table)
    for s, r in zip(SEEDS, runs):
        assert r[2e-4][0] > r["probe"][0] and r[2e-4][1] > r["probe"][1], \
            f"claim flipped on seed {s}: 'fine-tuning (lr 2e-4) beats the converged probe on balanced accuracy and minority F1' ({table})"
        assert r[2e-4][0] > r[5e-5][0], f"claim flipped on seed {s}: 'at lr 5e-5 the same 30 steps reach less' ({table})"
        assert r[5e-5][0] < r["probe"][0] + 0.02, f"claim flipped on seed {s}: '5e-5 ends at or below the probe's level' ({table})"
        assert r[5e-5][2] > r[2e-4][2], f"claim flipped on seed {s}: 'at lr 5e-5 the training loss is still higher' ({table})"


def test_at_the_small_rate_the_layers_move_and_need_more_steps(runs):
    """Measured here, not in the lesson (a longer run costs it too much): the same 5e-5 run scored again after 60 steps
    passes the probe; and lr 0 for the layers (the head alone on the copied layers, 30 steps) stays below both the
    30-step run at 5e-5, which did move the layers, and the probe, the stronger frozen reference."""
    table = "; ".join(f"seed {s}: balanced: probe {r['probe'][0]:.3f}, lr 0 {r[0.0][0]:.3f}, 5e-5 30 steps {r[5e-5][0]:.3f}, "
                      f"5e-5 60 steps {r[5e-5, 2 * STEPS][0]:.3f}, 2e-4 {r[2e-4][0]:.3f}" for s, r in zip(SEEDS, runs))
    print(table)
    for s, r in zip(SEEDS, runs):
        assert r[0.0][0] < r[5e-5][0], f"claim flipped on seed {s}: '30 steps at 5e-5 move the layers: above lr 0' ({table})"
        assert r[5e-5, 2 * STEPS][0] > r["probe"][0], \
            f"claim flipped on seed {s}: 'at 5e-5 the layers need more steps, not another rate: 60 steps pass the probe' ({table})"
        assert r[0.0][0] < r["probe"][0], \
            f"claim flipped on seed {s}: 'the head alone, 30 steps on layers that never move, stays below the probe' ({table})"


def test_what_the_untrained_control_shows_holds_on_five_seeds(runs):
    table = "; ".join(
        f"seed {s}: balanced accuracy, plain reviews: MiniLM {r['plain', 'MiniLM'][0]:.3f}, untrained "
        f"{r['plain', 'untrained'][0]:.3f} · negated: MiniLM {r['probe'][0]:.3f}, untrained {r['untrained'][0]:.3f} · "
        f"midpoint split: MiniLM {r['plain', 'MiniLM'][1]:.3f}, untrained {r['plain', 'untrained'][1]:.3f} · "
        f"flips' |cos|: MiniLM {[round(v, 2) for v in r['plain', 'MiniLM'][2].tolist()]}, "
        f"untrained {[round(v, 2) for v in r['plain', 'untrained'][2].tolist()]}" for s, r in zip(SEEDS, runs))
    print(table)
    for s, r in zip(SEEDS, runs):
        trained, untrained = r["plain", "MiniLM"], r["plain", "untrained"]
        assert untrained[0] > 0.9 and trained[0] - untrained[0] < 0.1, \
            f"claim flipped on seed {s}: 'random weights give the probe the plain verdict almost as well' ({table})"
        assert r["untrained"][0] < 0.75 < r["probe"][0], \
            f"claim flipped on seed {s}: 'random weights give the probe few of the negations, MiniLM most' ({table})"
        assert trained[1] > untrained[1] + 0.15, \
            f"claim flipped on seed {s}: 'the untrained copy's class means give a much weaker direction' ({table})"
        assert bool((trained[2] > untrained[2]).all()), \
            f"claim flipped on seed {s}: 'every flip moves MiniLM's embedding more along its direction' ({table})"


def test_a_flip_moves_the_embedding_along_the_direction_an_edit_that_keeps_the_verdict_does_not(runs):
    """The lesson's fairer reference for the flips' |cos| with the sentiment direction: one-word edits that keep the
    verdict (its synonyms and topic swaps). And along the direction the test reviews sit close to zero: on unit
    vectors, the verdict is a small part of each embedding."""
    table = "; ".join(f"seed {s}: MiniLM |cos|: the lesson's flips {[round(v, 2) for v in r['plain', 'MiniLM'][2][:3].tolist()]}, "
                      f"verdict kept {[round(v, 2) for v in r['plain', 'MiniLM'][3].tolist()]} · test reviews along it "
                      f"{[round(v, 2) for v in r['plain', 'MiniLM'][4]]}" for s, r in zip(SEEDS, runs))
    print(table)
    for s, r in zip(SEEDS, runs):
        _, _, flips, kept, sides = r["plain", "MiniLM"]
        assert flips[:3].min() > 2 * kept.max(), \
            f"claim flipped on seed {s}: 'a flip moves MiniLM's embedding along the direction, a same-verdict edit far less' ({table})"
        assert max(abs(v) for v in sides) < 0.3, \
            f"claim flipped on seed {s}: 'the test reviews sit within 0.3 of zero along the direction' ({table})"


def test_what_the_cosine_says_about_the_verdict_holds_on_five_seeds(runs):
    """Section 6's cosines: in MiniLM a flip moves a sentence more than a synonym and less than a topic swap, and a
    shared verdict raises the cosine between test reviews ten times more than in the untrained copy, where every
    one-word edit leaves the cosine near 1. The pairs are fixed sentences: only the untrained weights and the
    reviews change with the seed."""
    table = "; ".join(
        f"seed {s}: " + ", ".join(f"{name} {kind} {[round(v, 2) for v in c.tolist()]}" for name in ("MiniLM", "untrained")
                                  for kind, c in r["cosine", name][0].items())
        + f" · within − across: MiniLM {r['cosine', 'MiniLM'][1]:.3f}, untrained {r['cosine', 'untrained'][1]:.3f}"
        for s, r in zip(SEEDS, runs))
    print(table)
    for s, r in zip(SEEDS, runs):
        (trained, gap), (untrained, gap_u) = r["cosine", "MiniLM"], r["cosine", "untrained"]
        assert trained["synonym"].min() > trained["flip"].max() and trained["flip"].min() > trained["topic"].max(), \
            f"claim flipped on seed {s}: 'in MiniLM a flip moves a sentence more than a synonym, less than a topic swap' ({table})"
        assert min(c.min() for c in untrained.values()) > 0.95, \
            f"claim flipped on seed {s}: 'in the untrained copy every one-word edit leaves the cosine near 1' ({table})"
        assert gap > 10 * abs(gap_u), \
            f"claim flipped on seed {s}: 'a shared verdict raises MiniLM's cosine, the untrained copy's hardly' ({table})"
