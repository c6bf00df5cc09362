"""Plotting helpers, so that a lesson's cell shows the idea and not the matplotlib."""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import torch


def show_mask(mask: torch.Tensor, title: str = "", xlabel: str = "position",
              ylabel: str = "row", ax=None, labels: Sequence[Sequence[str]] | None = None):
    """Draw a bool (rows × columns) mask: filled cells are True. `labels` writes a token per cell."""
    mask = torch.as_tensor(mask).bool()
    rows, cols = mask.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(0.45 * cols + 1.5, 0.45 * rows + 1.0))
    ax.imshow(mask.float().numpy(), cmap="Blues", vmin=0, vmax=1.25)
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_xticks([c - 0.5 for c in range(1, cols)], minor=True)
    ax.set_yticks([r - 0.5 for r in range(1, rows)], minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    if labels is not None:
        for r, row in enumerate(labels):
            for c, text in enumerate(row):
                ax.text(c, r, text, ha="center", va="center", fontsize=7,
                        color="white" if mask[r, c] else "black")
    return ax


def show_change(change: torch.Tensor, title: str = "", ax=None, marked: int | None = None):
    """Draw how much each output position moved (rows: examples or layers, columns: positions)."""
    change = torch.as_tensor(change, dtype=torch.float32)
    if change.dim() == 1:
        change = change[None]
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 1.6))
    ax.bar(range(change.shape[-1]), change[0].numpy(), color="tab:orange")
    if marked is not None:
        ax.axvline(marked - 0.5, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("output position")
    ax.set_ylabel("change")
    ax.set_title(title)
    return ax


def loss_curve(history, title: str = "training loss", ax=None, reference: float | None = None,
               reference_label: str = ""):
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3))
    ax.plot(history.losses, alpha=0.3, color="tab:blue", label="per step")
    ax.plot(history.smoothed(), color="tab:blue", label="smoothed")
    if reference is not None:
        ax.axhline(reference, color="gray", linestyle="--", label=reference_label or None)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.legend()
    return ax
