"""Plot helpers for the course notebooks (support code: imports matplotlib, teaches nothing itself)."""

import matplotlib.pyplot as plt
import numpy as np

KEPT_COLOUR = "#1f77b4"
DROPPED_COLOUR = "#c7c7c7"


def plot_distribution(probs, kept=None, labels=None, ax=None, title=None, ylim=None):
    """Bar chart of one distribution; tokens outside `kept` (a boolean mask) drawn in grey.

    Returns the Axes. Works for a few dozen tokens; pass `labels` to name them.
    """
    probs = np.asarray(probs, dtype=np.float64)  # (V,)
    kept = np.ones(probs.shape, dtype=bool) if kept is None else np.asarray(kept, dtype=bool)  # (V,)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3))
    positions = np.arange(probs.size)  # (V,)
    colours = np.where(kept, KEPT_COLOUR, DROPPED_COLOUR)
    ax.bar(positions, probs, color=colours)
    if labels is not None:
        ax.set_xticks(positions, labels, rotation=90 if len(labels) > 12 else 0)
    ax.set_ylabel("probability")
    ax.set_ylim(0, ylim if ylim is not None else max(1e-12, probs.max()) * 1.1)
    if title:
        ax.set_title(title)
    return ax


def plot_compare(expected, observed, labels=None, ax=None, title=None):
    """Side-by-side bars: the true distribution and an empirical one (e.g. from a sampler)."""
    expected = np.asarray(expected, dtype=np.float64)  # (V,)
    observed = np.asarray(observed, dtype=np.float64)  # (V,)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3))
    positions = np.arange(expected.size)  # (V,)
    ax.bar(positions - 0.2, expected, width=0.4, label="expected", color=KEPT_COLOUR)
    ax.bar(positions + 0.2, observed, width=0.4, label="observed", color="#ff7f0e")
    if labels is not None:
        ax.set_xticks(positions, labels)
    ax.set_ylabel("probability")
    ax.legend()
    if title:
        ax.set_title(title)
    return ax
