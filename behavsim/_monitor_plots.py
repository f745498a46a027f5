"""The convergence monitor's figures: scores against training dialogues, one panel per lag.
Deterministic PNG bytes for the same rows (matplotlib, Agg; no global state touched).

Public through :mod:`behavsim.monitor`.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._monitor_rows import LAGS, atomic_write, lag_column


def plot_convergence(
    series: Mapping[str, Sequence[Mapping[str, Any]]],
    path: str | os.PathLike,
    *,
    score: str | None = None,
    title: str | None = None,
    threshold: float | None = None,
) -> Path:
    """Draw convergence curves to a PNG (matplotlib, Agg; no global state is touched).

    ``series`` maps a label to convergence rows. With ``score=None`` every label is a score
    name plotted from its rows (one trial, several scores); with ``score="TMR"`` every label is
    a trial and that score is plotted for each (the paper's Figure 2). ``threshold``: a dashed
    line (a stop rule's). Deterministic bytes for the same input.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    fig = Figure(figsize=(7.0, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    lowest = 1.0
    for label, rows in series.items():
        col = label if score is None else score
        xs = [int(r["dialogues"]) for r in rows]
        ys = [float(r[col]) for r in rows]
        ok = [y for y in ys if not math.isnan(y)]
        if ok:
            lowest = min(lowest, min(ok))
        ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.2, label=label)
    if threshold is not None:
        ax.axhline(threshold, color="grey", linestyle="--", linewidth=0.8, label=f"threshold {threshold:g}")
        lowest = min(lowest, threshold)
    ax.set_ylim(max(0.0, math.floor((lowest - 0.02) * 20) / 20), 1.005)
    ax.set_xlabel("training dialogues")
    ax.set_ylabel(f"{score} vs previous snapshot" if score else "similarity to the previous snapshot")
    ax.set_title(title or "Convergence: snapshot k vs k-1")
    ax.grid(True, linewidth=0.3)
    if series:  # beside the axes, never over a point
        fig.legend(*ax.get_legend_handles_labels(), loc="outside right upper", fontsize="small", frameon=False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, buf.getvalue())
    return path


_LAG_TITLES = {
    "vs_prev": "vs the previous snapshot",
    "vs_lag": "vs {lag} snapshots back",
    "vs_first": "vs the first snapshot",
    "vs_ref": "vs the reference policy",
    "vs_final": "vs the final snapshot",
}


def plot_lags(
    rows: Sequence[Mapping[str, Any]],
    scores: Sequence[str],
    path: str | os.PathLike,
    *,
    lag: int = 5,
    title: str | None = None,
    threshold: float | None = None,
) -> Path:
    """One panel per lag that has values (previous, ``lag`` back, first, reference, final), every
    score against training dialogues; ``threshold`` (a stop rule's) is drawn on the first panel.
    Deterministic bytes for the same rows (matplotlib, Agg; no global state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    shown = [
        k for k in LAGS if any(not math.isnan(float(r.get(lag_column(s, k), math.nan))) for r in rows for s in scores)
    ]
    shown = shown or ["vs_prev"]
    ncols = 1 if len(shown) == 1 else 2
    nrows = (len(shown) + ncols - 1) // ncols
    fig = Figure(figsize=(7.0 * ncols / (1.3 if ncols > 1 else 1), 3.4 * nrows + 0.9), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    handles: dict[str, Any] = {}
    xs = [int(r["dialogues"]) for r in rows]
    for i, kind in enumerate(shown):
        ax = fig.add_subplot(nrows, ncols, i + 1)
        lowest = 1.0
        for s in scores:
            ys = [float(r.get(lag_column(s, kind), math.nan)) for r in rows]
            ok = [y for y in ys if not math.isnan(y)]
            if ok:
                lowest = min(lowest, min(ok))
            ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.2, label=s)
        if threshold is not None and kind == "vs_prev":
            ax.axhline(threshold, color="grey", linestyle="--", linewidth=0.8, label=f"threshold {threshold:g}")
            lowest = min(lowest, threshold)
        ax.set_ylim(max(0.0, math.floor((lowest - 0.02) * 20) / 20), 1.005)
        ax.set_title(_LAG_TITLES[kind].format(lag=lag), fontsize="medium")
        ax.set_xlabel("training dialogues", fontsize="small")
        ax.grid(True, linewidth=0.3)
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    # one legend below the panels, never over a point
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="outside lower center",
        ncols=min(len(handles), 5),
        fontsize="small",
        frameon=False,
    )
    fig.suptitle(title or "Convergence")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, buf.getvalue())
    return path
