"""The study's own figures: learning curves of the training runs (TSR, AIQ, ADL per reward).

Drawn like every figure of :mod:`behavsim.plots` (same settings, PNG + deterministic SVG).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from behavsim import ConfigError, plots

__all__ = ["learning_curves", "LABELS", "METRICS"]

#: Axis labels of the training metrics.
LABELS = {"tsr": "task success (TSR)", "aiq": "interaction quality (AIQ)", "adl": "dialogue length (ADL)"}

#: The metrics of the learning curves, in panel order.
METRICS = ("tsr", "aiq", "adl")


@plots.drawn
def learning_curves(
    metrics_df: pd.DataFrame,
    path: str | os.PathLike,
    *,
    metrics: Sequence[str] = METRICS,
    x: str = "dialogues",
    hue: str = "reward",
    title: str | None = None,
) -> tuple[Path, Path]:
    """TSR / AIQ / ADL over training dialogues, one line per reward: mean over seeds, min–max band.

    ``metrics_df``: the training runner's ``metrics.csv`` (``policy, reward, seed, dialogues, tsr,
    aiq, adl, ...``). Metrics absent from the table are skipped.
    """
    plots.require_columns(metrics_df, [x, hue], "learning_curves")
    names = [m for m in metrics if m in metrics_df.columns]
    if not names:
        raise ConfigError(
            f"learning_curves: none of the metrics {list(metrics)} is in the table; columns: {list(metrics_df.columns)}"
        )
    fig = plots.new_figure(plots.WIDTH * max(1.0, len(names) / 3), 2.6)
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    keys = sorted(metrics_df[hue].unique().tolist(), key=plots.sort_key)
    for ax, mname in zip(axes, names):
        for key in keys:
            g = metrics_df[metrics_df[hue] == key].groupby(x, sort=True)[mname]
            stats = g.agg(["mean", "min", "max"])
            xs = stats.index.to_numpy()
            (line,) = ax.plot(xs, stats["mean"].to_numpy(dtype=float), linewidth=1.2, label=str(key))
            ax.fill_between(
                xs,
                stats["min"].to_numpy(dtype=float),
                stats["max"].to_numpy(dtype=float),
                color=line.get_color(),
                alpha=0.2,
                linewidth=0,
            )
        ax.set_xlabel(plots.axis_label(x, LABELS))
        ax.set_title(plots.axis_label(mname, LABELS), fontsize=9)
    plots.add_legend(axes[-1], len(keys), hue)
    fig.suptitle(title or "Learning curves (mean over seeds, min–max band)")
    return plots.save_figure(fig, path)
