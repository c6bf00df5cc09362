"""Which positions does a pooling rule read? A pure plan, a picture of it, and a small widget.

`pooling_plan` works out, from integer lengths only, which tensor positions a pooling rule reads for
each row of a padded batch and which real tokens those positions have seen; it needs no torch and no
model. `draw_pooling` draws a plan as a B × n grid, and `pooling_explorer` puts the picture behind a
few controls: the rule, the padding side, the kind of model, each row's length and the amount of
padding. The widget code uses only what ipywidgets 7.7 (Colab) and 8.x both have.

The plan names each rule and says in words which positions it reads; it never prints the code of a
rule, because several rules are exercises of the lessons that show this widget.

Rules:
    "first"        position 0 of every row ([CLS] in an encoder, the first token in a causal model)
    "mean"         the average over the real positions of the row
    "max"          the feature-wise maximum over the real positions of the row
    "last_real"    the last real position of the row
    "last_tensor"  the last position of the tensor, n − 1, whatever it holds
"""
from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from typing import Sequence

POOLING_RULES = ("first", "mean", "max", "last_real", "last_tensor")
PADDING_SIDES = ("right", "left")

_RULE_NAMES = {
    "first": "first position",
    "mean": "mean over real tokens",
    "max": "max over real tokens",
    "last_real": "last real token",
    "last_tensor": "last tensor position",
}

# What each rule reads, in words (no code: the code of several rules is an exercise).
_READS = {
    "first": "position 0 of every row",
    "mean": "the average of the row's real positions, padding left out",
    "max": "the feature-wise maximum over the row's real positions, padding left out",
    "last_real": "each row's own last real position",
    "last_tensor": "position n − 1 of every row, whatever it holds",
}


@dataclass
class PoolingPlan:
    """Which positions one pooling rule reads in a padded batch (pure data, no torch needed)."""

    rule: str
    padding_side: str
    causal: bool
    lengths: list[int]
    n: int
    real: list[list[int]] = field(default_factory=list)     # per row: tensor positions of real tokens
    sources: list[list[int]] = field(default_factory=list)  # per row: positions the pooled vector comes from
    seen: list[list[int]] = field(default_factory=list)     # per row: real positions those sources have seen
    reads: str = ""                                         # what the rule reads, in words
    pitfalls: list[str] = field(default_factory=list)       # plain-words warnings

    @property
    def batch_size(self) -> int:
        return len(self.lengths)

    @property
    def padding(self) -> int:
        """How many positions the batch has beyond its longest row."""
        return self.n - max(self.lengths)

    @property
    def key(self) -> str:
        """The plan's inputs in one line; the widget's picture carries it in its PNG metadata."""
        kind = "causal" if self.causal else "bidirectional"
        return (f"rule={self.rule} padding_side={self.padding_side} model={kind} "
                f"lengths={','.join(map(str, self.lengths))} n={self.n}")

    def title(self) -> str:
        kind = "causal" if self.causal else "bidirectional"
        return f"{_RULE_NAMES[self.rule]} · {self.padding_side} padding · {kind} model"

    def describe(self) -> str:
        """The plan in a few plain lines (the text shown with the picture)."""
        lines = [self.title(),
                 f"reads: {self.reads}",
                 f"padded to n = {self.n}: longest row {max(self.lengths)} + {self.padding} extra [PAD]"]
        for b, src in enumerate(self.sources):
            lines.append(f"row {b}: length {self.lengths[b]}, pools {src}, has seen {self.seen[b]}")
        lines += [f"⚠ {p}" for p in self.pitfalls]
        return "\n".join(lines)


def pooling_plan(rule: str, lengths: Sequence[int], n: int, padding_side: str = "right",
                 causal: bool = False) -> PoolingPlan:
    """Work out which positions `rule` reads in each row of a batch padded to `n` positions.

    `lengths` are the numbers of real tokens per row (1 … n). For a bidirectional model every
    position has seen every real token (padding keys are masked out, padding queries still read the
    real keys); in a causal model position i has seen the real positions ≤ i.
    """
    if rule not in POOLING_RULES:
        raise ValueError(f"rule must be one of {POOLING_RULES}, got {rule!r}")
    if padding_side not in PADDING_SIDES:
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    n = int(n)
    lengths = [int(length) for length in lengths]
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not lengths:
        raise ValueError("lengths must hold at least one row")
    for b, length in enumerate(lengths):
        if not 1 <= length <= n:
            raise ValueError(f"row {b} has length {length}; every length must be between 1 and n = {n}")

    real, sources, seen, pitfalls = [], [], [], []
    for b, length in enumerate(lengths):
        start = 0 if padding_side == "right" else n - length
        row_real = list(range(start, start + length))
        if rule == "first":
            src = [0]
        elif rule in ("mean", "max"):
            src = list(row_real)
        elif rule == "last_real":
            src = [row_real[-1]]
        else:  # last_tensor
            src = [n - 1]
        if causal:
            latest = max(src)
            row_seen = [i for i in row_real if i <= latest]
        else:
            row_seen = list(row_real)
        real.append(row_real)
        sources.append(src)
        seen.append(row_seen)

        padded = [i for i in src if i not in row_real]
        for i in padded:
            pitfalls.append(f"row {b}: position {i} is padding, so the pooled vector is a [PAD] token's "
                            "vector, not one of the text's")
        if len(row_seen) < length:
            pitfalls.append(f"row {b}: the pooled position has seen only {len(row_seen)} of the row's "
                            f"{length} real tokens (a causal model reads left to right)")
    if rule == "last_tensor" and padding_side == "right":
        full = [b for b, length in enumerate(lengths) if length == n]
        if full and len(full) < len(lengths):
            rows = ", ".join(map(str, full))
            pitfalls.append(f"position {n - 1} is the last real token of row{'s' * (len(full) > 1)} {rows} "
                            "but padding in the others: which one a row gets depends on the other texts "
                            "in the batch")
        if len(full) < len(lengths):
            pitfalls.append(f"the pooled [PAD] sits at position {n - 1}; pad the batch further and it moves, "
                            "so what it holds changes with the amount of padding")
    if padding_side == "left" and any(length < n for length in lengths):
        pitfalls.append("left padding moves the real tokens to positions n − ℓ … n − 1: with learned "
                        "absolute positions the model sees other position ids than with right padding")
    return PoolingPlan(rule, padding_side, bool(causal), lengths, n, real, sources, seen,
                       _READS[rule], pitfalls)


# --- the picture ---------------------------------------------------------------------------------
_COLOURS = {"pad": "#d9d9d9", "real": "#ffffff", "seen": "#c6dbef", "source": "#2171b5"}


def _row_tokens(plan: PoolingPlan, tokens, b: int) -> list[str]:
    """Labels for the n cells of row b: `tokens[b]` holds n labels, or one per real token."""
    labels = [""] * plan.n
    if tokens is None or b >= len(tokens) or tokens[b] is None:
        for i in range(plan.n):
            labels[i] = "" if i in plan.real[b] else "[PAD]"
        return labels
    row = list(tokens[b])
    if len(row) == plan.n:
        return [str(t) for t in row]
    for i, pos in enumerate(plan.real[b]):
        labels[pos] = str(row[i]) if i < len(row) else ""
    for i in range(plan.n):
        if i not in plan.real[b]:
            labels[i] = "[PAD]"
    return labels


def draw_pooling(plan: PoolingPlan, ax=None, tokens=None, columns: int | None = None):
    """Draw `plan` as a grid: rows are sequences, columns tensor positions.

    Grey cells are padding, light blue cells the real tokens the pooled vector has seen, dark blue
    cells (with a dot) the positions it is computed from; the title names the rule and what it reads.
    `tokens` optionally labels the cells: per row, n labels or one label per real token. `columns`
    (at least n) leaves room for that many positions, so cells keep their size when n changes.
    """
    from matplotlib.patches import Rectangle

    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(0.7 * plan.n + 1.8, 0.55 * plan.batch_size + 1.4))
    from matplotlib.colors import to_rgb

    B, n = plan.batch_size, plan.n
    image = [[to_rgb(_COLOURS["pad"])] * n for _ in range(B)]
    dots = {"white": ([], []), "#ff7f0e": ([], [])}   # pooled real positions, pooled padding positions
    for b in range(B):
        labels = _row_tokens(plan, tokens, b)
        real, seen, sources = set(plan.real[b]), set(plan.seen[b]), set(plan.sources[b])
        for i in range(n):
            if i in sources:
                kind = "source"
            elif i not in real:
                kind = "pad"
            else:
                kind = "seen" if i in seen else "real"
            image[b][i] = to_rgb(_COLOURS[kind])
            if labels[i]:
                ax.text(i, b + 0.18, labels[i], ha="center", va="center", fontsize=7,
                        color="white" if kind == "source" else ("#666666" if i not in real else "black"))
            if i in sources:
                xs, ys = dots["white" if i in real else "#ff7f0e"]
                xs.append(i)
                ys.append(b - 0.18)
    ax.imshow(image, aspect="auto", interpolation="nearest")
    for colour, (xs, ys) in dots.items():
        if xs:
            ax.scatter(xs, ys, s=22, color=colour, zorder=3)
    ax.vlines([c - 0.5 for c in range(1, n)], -0.5, B - 0.5, color="#9e9e9e", linewidth=1)
    ax.hlines([r - 0.5 for r in range(1, B)], -0.5, n - 0.5, color="#9e9e9e", linewidth=1)
    ax.set_xlim(-0.5, max(n, columns or 0) - 0.5)
    ax.set_ylim(B - 0.5, -0.5)
    ax.set_xticks(range(n))
    ax.set_yticks(range(B), [f"row {b} (ℓ={plan.lengths[b]})" for b in range(B)])
    ax.set_xlabel(f"tensor position (n = {n})")
    ax.set_aspect("auto")
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.tick_params(length=0)
    ax.set_title(f"{plan.title()}\nreads {plan.reads}", fontsize=9)
    handles = [Rectangle((0, 0), 1, 1, facecolor=_COLOURS[k], edgecolor="#999999") for k in
               ("source", "seen", "real", "pad")]
    ax.legend(handles, ["pooled from", "real, seen by the pooled vector", "real, not seen", "padding"], loc="upper left",
              bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return ax


def plan_png(plan: PoolingPlan, tokens=None, dpi: int = 90, width: int | None = None) -> bytes:
    """The picture of `plan` as PNG bytes, drawn off-screen (no pyplot figure is left open).

    `width` (in positions, at least `plan.n`) fixes the figure's width, so that a picture does not
    change size when the padding changes. The PNG's "Description" metadata is `plan.key`: what the
    picture shows, readable without looking at it (the browser test reads it).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    columns = max(plan.n, width or 0)
    fig = Figure(figsize=(0.7 * columns + 3.6, 0.55 * plan.batch_size + 1.6))
    FigureCanvasAgg(fig)
    draw_pooling(plan, ax=fig.add_subplot(1, 1, 1), tokens=tokens, columns=columns)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Description": plan.key})
    return buffer.getvalue()


# --- the widget ----------------------------------------------------------------------------------
def _html(plan: PoolingPlan) -> str:
    import html

    rows = "".join(f"<li>row {b}: length {plan.lengths[b]}, pools {plan.sources[b]}</li>"
                   for b in range(plan.batch_size))
    warn = "".join(f"<li>⚠ {html.escape(p)}</li>" for p in plan.pitfalls) or "<li>no pitfall</li>"
    return (f"<b>{html.escape(plan.title())}</b>: reads {html.escape(plan.reads)}. "
            f"Padded to n = {plan.n} (longest row {max(plan.lengths)} + {plan.padding} extra [PAD])."
            f"<ul style='margin:2px 0'>{rows}</ul><ul style='margin:2px 0'>{warn}</ul>")


class PoolingExplorer:
    """The controls, the picture and the text of one explorer; `ui` is the widget to display.

    The batch is padded to its longest row plus `extra pads` positions (0: as a server that pads to
    the longest text of the batch; more: as a fixed width). `update()` redraws from the current
    control values (every control calls it on change); `plan` is the current PoolingPlan. Displaying
    the explorer shows the widget and, for viewers that cannot run widgets (GitHub, nbconvert), a
    static picture of the current plan.
    """

    def __init__(self, rule="mean", padding_side="right", lengths=(5, 3, 4), n=7, causal=False,
                 tokens=None, max_extra=6):
        import ipywidgets as W

        pooling_plan(rule, lengths, n, padding_side, causal)  # validate the starting point
        self.max_length = int(n)
        self.tokens = tokens
        extra = self.max_length - max(int(length) for length in lengths)
        self.width = self.max_length + max(int(max_extra), extra)  # widest batch the controls allow
        self.rule = W.Dropdown(options=list(POOLING_RULES), value=rule, description="rule")
        self.padding_side = W.ToggleButtons(options=list(PADDING_SIDES), value=padding_side,
                                            description="padding")
        self.kind = W.ToggleButtons(options=["bidirectional", "causal"],
                                    value="causal" if causal else "bidirectional", description="model")
        self.sliders = [W.IntSlider(value=int(length), min=1, max=self.max_length, description=f"ℓ row {b}",
                                    continuous_update=False) for b, length in enumerate(lengths)]
        self.extra = W.IntSlider(value=extra, min=0, max=self.width - self.max_length,
                                 description="extra pads", continuous_update=False)
        self.text = W.HTML()
        self.picture = W.Image(format="png")
        self.picture.add_class("heads-pooling-picture")
        for control in (self.rule, self.padding_side, self.kind, self.extra, *self.sliders):
            control.observe(self._changed, names="value")
        self.update()
        self.ui = W.VBox([W.HBox([self.rule, self.kind]), self.padding_side,
                          W.HBox(self.sliders[:3]), *([W.HBox(self.sliders[3:])] if len(self.sliders) > 3 else []),
                          self.extra, self.text, self.picture])

    @property
    def n(self) -> int:
        """The padded length: the longest row plus the extra pads."""
        return max(s.value for s in self.sliders) + self.extra.value

    def current_plan(self) -> PoolingPlan:
        return pooling_plan(self.rule.value, [s.value for s in self.sliders], self.n,
                            self.padding_side.value, self.kind.value == "causal")

    def _changed(self, _change) -> None:
        self.update()

    def update(self) -> PoolingPlan:
        """Recompute the plan from the controls, then redraw the picture and the text."""
        self.plan = self.current_plan()
        self.picture.value = plan_png(self.plan, self.tokens, width=self.width)
        self.text.value = _html(self.plan)
        return self.plan

    def mimebundle(self) -> dict:
        """The widget view plus a PNG of the current picture, in one output bundle."""
        return {
            "application/vnd.jupyter.widget-view+json": {"version_major": 2, "version_minor": 0,
                                                         "model_id": self.ui.model_id},
            "image/png": base64.b64encode(self.picture.value).decode("ascii"),   # the picture shown now
            "text/plain": self.plan.describe(),
        }

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return self.mimebundle()


def pooling_explorer(rule="mean", padding_side="right", lengths=(5, 3, 4), n=7, causal=False,
                     tokens=None, max_extra=6) -> PoolingExplorer:
    """A widget to choose a pooling rule, the padding side, the model kind, each row's length and
    the amount of padding, and see which positions are pooled and which real tokens they have seen.

    `n` is the starting padded length and the longest a row may be; the batch is padded to its
    longest row plus 0 … `max_extra` extra positions (the "extra pads" slider). Shown when it is the
    last value of a cell (or passed to `display`): the live widget where widgets run (JupyterLab,
    Notebook 7, VS Code, Colab), a static picture elsewhere.
    """
    return PoolingExplorer(rule, padding_side, lengths, n, causal, tokens, max_extra)


__all__ = ["POOLING_RULES", "PoolingPlan", "pooling_plan", "draw_pooling", "plan_png",
           "pooling_explorer", "PoolingExplorer"]
