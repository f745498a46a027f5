"""Figures of the paper from analysis tables (matplotlib, no display needed).

Every function takes a table (usually from :mod:`behavsim.analysis`), writes the figure to
``<path>.png`` and ``<path>.svg`` (a ``.png``/``.svg`` suffix on ``path`` is replaced) and returns
the two paths. Figures are built on :class:`matplotlib.figure.Figure` with the Agg canvas — pyplot
and the global backend are never touched — and the SVG is deterministic: fixed ``svg.hashsalt``,
no date or software metadata, so the same data gives a byte-identical file.

* :func:`convergence_curves` — Figure 2: score of checkpoint k vs k−1, one line per trial
  (optionally one panel per context set).
* :func:`pair_curves` — Figure 3: every score of the seed pairs over checkpoints (small multiples).
* :func:`per_turn_plot` — Figure 4: TMR/DMR per dialogue turn, one panel per pair.
* :func:`pair_bars` — Figure 5: cross-reward pairs next to within-reward pairs.
* :func:`heatmap` — Figure 6: correlation or MSE between scores.

Axis labels of scores are their registered titles (:func:`behavsim.score_info`). The helpers
:func:`new_figure`, :func:`drawn`, :func:`axis_label`, :func:`add_legend`, :func:`legend_below`,
:func:`wrap_title`, :func:`ordered` and :func:`require_columns` let other packages draw their own
figures the same way (the study's figures: :mod:`experiments.plots`).

If a ``<score>_lo``/``<score>_hi`` column is present (from :func:`behavsim.analysis.means_with_ci`)
curves get a band and bars an error bar. ``order`` (where a function takes it) puts the listed
line, pair or panel keys first in that order (e.g. the paper's ``["ts", "iq"]``); other keys follow
sorted. Legends with several entries sit outside the axes, below them, so they never hide a point;
panel titles are wrapped to their panel's width.
"""

from __future__ import annotations

import functools
import math
import os
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._errors import ConfigError
from ._io import atomic_path
from .scores import list_scores, score_info

__all__ = [
    "convergence_curves",
    "pair_curves",
    "pair_bars",
    "per_turn_plot",
    "heatmap",
    "save_figure",
    "new_figure",
    "drawn",
    "axis_label",
    "add_legend",
    "legend_below",
    "wrap_title",
    "ordered",
    "require_columns",
    "sort_key",
    "RC",
    "LABELS",
    "WIDTH",
]

#: Matplotlib settings used for every figure (readable in a paper and an HTML report).
RC: Any = {  # matplotlib rc settings (typed loosely: its stubs list every key as a Literal)
    "svg.hashsalt": "behavsim",
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "path.simplify": True,
}
#: Width of every figure, in inches: one column of a report / a two-column paper figure.
WIDTH = 6.4  # inches: one column of a report / a two-column paper figure
_MANY = 6  # more legend entries than this -> legend outside the axes

#: Axis labels of the columns that are not scores (scores are labelled with their titles).
LABELS = {"checkpoint": "training dialogues", "dialogues": "training dialogues", "turn": "system turn"}


def axis_label(name: str, labels: dict[str, str] | None = None) -> str:
    """The axis label of a column: from ``labels``, else the score's title, else :data:`LABELS`."""
    name = str(name)
    if labels and name in labels:
        return labels[name]
    if name in list_scores():
        return score_info(name).title or name
    return LABELS.get(name, name)


def _paths(path: str | os.PathLike) -> tuple[Path, Path]:
    p = Path(path)
    if p.suffix.lower() in (".png", ".svg"):
        p = p.with_suffix("")
    p.parent.mkdir(parents=True, exist_ok=True)
    return p.with_name(p.name + ".png"), p.with_name(p.name + ".svg")


def new_figure(width: float, height: float):
    """An empty figure (constrained layout, Agg canvas) under the figure settings :data:`RC`."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(width, height), layout="constrained")
        FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path: str | os.PathLike, *, svg: bool = True) -> tuple[Path, Path]:
    """Write ``fig`` to ``<path>.png`` and ``<path>.svg`` deterministically; return both paths.
    ``svg=False``: the PNG only (the SVG path returned is then not written)."""
    import matplotlib

    png, svg_path = _paths(path)
    with matplotlib.rc_context(RC):
        with atomic_path(png) as tmp:
            fig.savefig(tmp, format="png", metadata={"Software": None})
        if svg:
            with atomic_path(svg_path) as tmp:
                fig.savefig(tmp, format="svg", metadata={"Date": None, "Creator": None})
    return png, svg_path


def drawn(fn):
    """Run a drawing function under the figure settings (fonts etc. are read while drawing)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context(RC):
            return fn(*args, **kwargs)

    return wrapper


def require_columns(df: Any, columns: Iterable[str], fn: str) -> pd.DataFrame:
    """``df`` if it is a non-empty DataFrame with ``columns``; else a ConfigError naming ``fn``."""
    if not isinstance(df, pd.DataFrame):
        raise ConfigError(f"{fn}: expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ConfigError(f"{fn}: the table lacks column(s) {missing}; columns: {list(df.columns)}")
    if df.empty:
        raise ConfigError(f"{fn}: the table is empty")
    return df


def sort_key(v: Any):
    """Numbers before text, numbers by value."""
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))


def add_legend(ax, n: int, title: str | None = None) -> None:
    """A legend of ``n`` entries; outside the axes when there are many."""
    if n == 0:
        return
    if n > _MANY:
        ax.legend(title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    else:
        ax.legend(title=title, frameon=False)


def legend_below(fig, handles: Sequence[Any], labels: Sequence[str], title: str | None = None) -> None:
    """One legend for the whole figure, outside the axes below them (constrained layout makes room),
    in as many columns as fit the figure's width."""
    if not labels:
        return
    size = float(_rc("legend.fontsize"))
    entry = max(len(str(x)) for x in labels) * 0.6 * size + 3.2 * size  # text + handle + gap, points
    fit = max(1, int(fig.get_figwidth() * 72 * 0.95 // entry))
    fig.legend(handles, labels, title=title, loc="outside lower center", ncols=min(len(labels), fit), frameon=False)


def wrap_title(text: str, width_in: float, size: float | None = None) -> str:
    """``text`` wrapped on spaces so that each line fits ``width_in`` inches at font ``size``
    (default: the axes title size); a word longer than a line stays whole."""
    size = float(_rc("axes.titlesize")) if size is None else float(size)
    chars = max(8, int(width_in * 72 / (0.58 * size)))
    return "\n".join(textwrap.wrap(str(text), chars, break_long_words=False, break_on_hyphens=False)) or str(text)


def _rc(key: str) -> Any:
    """A figure setting: from :data:`RC` when drawing, as a number of points for named sizes."""
    import matplotlib
    from matplotlib.font_manager import FontProperties

    params: Any = matplotlib.rcParams  # typed with every key as a Literal
    value = params[key]
    if isinstance(value, str):
        return FontProperties(size=value).get_size_in_points()
    return value


def ordered(keys: Iterable[Any], order: Sequence[Any] | None = None) -> list[Any]:
    """The distinct ``keys``: those in ``order`` first (in that order, compared as text), the
    others after them sorted by :func:`sort_key` (numbers before text)."""
    keys = list(dict.fromkeys(keys))
    if not order:
        return sorted(keys, key=sort_key)
    rank = {str(o): i for i, o in enumerate(order)}
    return sorted(keys, key=lambda k: (0, rank[str(k)], (0, 0.0, "")) if str(k) in rank else (1, 0, sort_key(k)))


def _scores_in(df: pd.DataFrame, scores: Sequence[str] | str | None) -> list[str]:
    if scores is None:
        found = [s for s in list_scores() if s in df.columns]
        if not found:
            raise ConfigError(f"no score columns in the table; columns: {list(df.columns)}")
        return found
    if isinstance(scores, str):
        scores = [scores]
    missing = [s for s in scores if s not in df.columns]
    if missing:
        raise ConfigError(f"score column(s) {missing} not in the table; columns: {list(df.columns)}")
    return list(scores)


def _lines(
    ax,
    df: pd.DataFrame,
    x: str,
    y: str,
    hue: str | None,
    *,
    marker: str = "o",
    order: Sequence[Any] | None = None,
    colors: dict[str, Any] | None = None,
) -> int:
    """One line per hue value (sorted by x), a band if ``<y>_lo``/``<y>_hi`` exist; returns #lines.
    Hue values in ``order`` first; ``colors`` fixes the colour of each hue value (as text)."""
    band = f"{y}_lo" in df.columns and f"{y}_hi" in df.columns
    if hue is None:
        groups: list[tuple[Any, pd.DataFrame]] = [(None, df)]
    else:
        by = dict(list(df.groupby(hue, sort=False)))
        groups = [(k, by[k]) for k in ordered(by, order)]
    for key, g in groups:
        g = g.sort_values(x, key=lambda s: s.map(sort_key), kind="mergesort")
        xs = g[x].to_numpy()
        (line,) = ax.plot(
            xs,
            g[y].to_numpy(dtype=float),
            marker=marker,
            markersize=3,
            linewidth=1.2,
            label=None if key is None else str(key),
            **({"color": colors[str(key)]} if colors and str(key) in colors else {}),
        )
        if band:
            ax.fill_between(
                xs,
                g[f"{y}_lo"].to_numpy(dtype=float),
                g[f"{y}_hi"].to_numpy(dtype=float),
                color=line.get_color(),
                alpha=0.15,
                linewidth=0,
            )
    return 0 if hue is None else len(groups)


@drawn
def convergence_curves(
    df: pd.DataFrame,
    path: str | os.PathLike,
    *,
    score: str = "TMR",
    x: str = "checkpoint",
    hue: str | None = "trial",
    title: str | None = None,
    panel: str | None = None,
    order: Sequence[Any] | None = None,
    panel_order: Sequence[Any] | None = None,
) -> tuple[Path, Path]:
    """Figure 2: ``score`` of checkpoint k against k−1 over training, one line per ``hue`` (trial).

    ``df``: one row per consecutive pair with columns ``x`` (e.g. the later checkpoint), ``hue``
    and ``score`` (e.g. :func:`behavsim.analysis.pair_table` of a ``pairs="consecutive"``
    comparison, with a trial label added). ``panel``: a column whose every value gets its own
    panel (e.g. the context set), side by side on one y scale, titled with the value;
    ``panel_order`` orders them and ``order`` the lines. The legend (one for all panels) sits
    below the axes.
    """
    require_columns(df, [x, score] + ([hue] if hue else []) + ([panel] if panel else []), "convergence_curves")
    panels: list[Any] = [None] if panel is None else ordered(df[panel], panel_order)
    width = WIDTH if len(panels) <= 2 else WIDTH * len(panels) / 2.5
    fig = new_figure(width, 3.4 if len(panels) == 1 else 3.2)
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    keys = ordered(df[hue], order) if hue else []
    cycle = _colors()
    colors = {str(k): cycle[i % len(cycle)] for i, k in enumerate(keys)}
    for i, (ax, p) in enumerate(zip(axes, panels)):
        part = df if p is None else df[df[panel] == p]
        _lines(ax, part, x, score, hue, order=keys, colors=colors)
        ax.set_xlabel(axis_label(x))
        if i == 0:
            ax.set_ylabel(axis_label(score))
        if p is not None:
            ax.set_title(wrap_title(str(p), width / len(panels) - 0.5))
    if hue:
        seen: dict[str, Any] = {}
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(lab, h)
        labels = [str(k) for k in keys if str(k) in seen]
        legend_below(fig, [seen[k] for k in labels], labels, hue)
    fig.suptitle(
        wrap_title(title or f"Convergence: {score} of checkpoint k vs k−1", width - 0.2, _rc("figure.titlesize"))
    )
    return save_figure(fig, path)


def _colors() -> list[Any]:
    import matplotlib

    return list(matplotlib.rcParams["axes.prop_cycle"].by_key()["color"])


@drawn
def pair_curves(
    df: pd.DataFrame,
    path: str | os.PathLike,
    scores: Sequence[str] | None = None,
    *,
    x: str = "checkpoint",
    hue: str | None = "pair",
    title: str | None = None,
    ncols: int = 4,
    order: Sequence[Any] | None = None,
) -> tuple[Path, Path]:
    """Figure 3: every score of the compared pairs over ``x``, one small panel per score.

    ``df``: one row per (pair, x), e.g. the means of seed-vs-seed pairs at each checkpoint with a
    ``checkpoint`` column (:func:`behavsim.analysis.pair_table`). ``scores``: default all score
    columns present, in the registry's order. ``order``: the lines' order.
    """
    require_columns(df, [x] + ([hue] if hue else []), "pair_curves")
    names = _scores_in(df, scores)
    ncols = max(1, min(ncols, len(names)))
    nrows = math.ceil(len(names) / ncols)
    fig = new_figure(WIDTH * (1.0 if ncols <= 4 else ncols / 4), 1.9 * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True)
    n = 0
    for k, s in enumerate(names):
        ax = axes[k // ncols][k % ncols]
        n = _lines(ax, df, x, s, hue, marker=".", order=order)
        ax.set_title(s)
        if k // ncols == nrows - 1:
            ax.set_xlabel(axis_label(x))
    for k in range(len(names), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    if n:
        handles, labels = axes[0][0].get_legend_handles_labels()
        legend_below(fig, handles, labels, hue)
    fig.suptitle(
        wrap_title(
            title or "All similarity scores per compared pair", fig.get_figwidth() - 0.2, _rc("figure.titlesize")
        )
    )
    return save_figure(fig, path)


@drawn
def pair_bars(
    df: pd.DataFrame,
    path: str | os.PathLike,
    score: str | Sequence[str] = "TMR",
    *,
    group: str = "group",
    label: str | None = None,
    title: str | None = None,
) -> tuple[Path, Path]:
    """Figure 5: one bar per pair, pairs grouped (and coloured) by ``group``, one panel per score.

    ``df``: one row per pair with a ``group`` column (e.g. ``"TS vs IQ"``, ``"TS seeds"``,
    ``"IQ seeds"``) and the score columns. ``label``: a column naming each bar (default
    ``"<a> vs <b>"`` if ``a``/``b`` exist, else the row number). Error bars from
    ``<score>_lo``/``<score>_hi`` when present.
    """
    names = [score] if isinstance(score, str) else list(score)
    require_columns(df, [group] + names, "pair_bars")
    if label is not None:
        require_columns(df, [label], "pair_bars")
        labels = df[label].astype(str).tolist()
    elif {"a", "b"} <= set(df.columns):
        labels = [f"{a} vs {b}" for a, b in zip(df["a"], df["b"])]
    else:
        labels = [str(i) for i in range(len(df))]
    groups = list(dict.fromkeys(df[group].astype(str)))  # order of first appearance
    g_of = df[group].astype(str).tolist()
    order = sorted(range(len(df)), key=lambda i: (groups.index(g_of[i]), i))
    pos, x = [], 0.0
    for j, i in enumerate(order):
        if j and g_of[i] != g_of[order[j - 1]]:
            x += 0.6  # gap between groups
        pos.append(x)
        x += 1.0
    import matplotlib

    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    width = max(WIDTH, 0.28 * len(df) + 1.5)
    fig = new_figure(width, 2.6 * len(names) + 0.8)
    axes = fig.subplots(len(names), 1, squeeze=False, sharex=True)
    for k, s in enumerate(names):
        ax = axes[k][0]
        vals = df[s].to_numpy(dtype=float)[order]
        err = None
        if f"{s}_lo" in df.columns and f"{s}_hi" in df.columns:
            lo = df[f"{s}_lo"].to_numpy(dtype=float)[order]
            hi = df[f"{s}_hi"].to_numpy(dtype=float)[order]
            err = np.vstack([np.clip(vals - lo, 0, None), np.clip(hi - vals, 0, None)])
        cols = [colors[groups.index(g_of[i]) % len(colors)] for i in order]
        ax.bar(pos, vals, color=cols, yerr=err, capsize=2, width=0.8)
        ax.set_ylabel(axis_label(s) if len(names) == 1 else s)
        ax.set_ylim(0, max(1.0, float(np.nanmax(vals)) if np.isfinite(vals).any() else 1.0) * 1.05)
        ax.grid(axis="x", visible=False)
    axes[-1][0].set_xticks(pos, [labels[i] for i in order], rotation=60, ha="right", fontsize=7)
    from matplotlib.patches import Patch

    handles = [Patch(color=colors[k % len(colors)], label=g) for k, g in enumerate(groups)]
    axes[0][0].legend(handles=handles, title=group, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(title or f"{' and '.join(names)} per compared pair")
    return save_figure(fig, path)


@drawn
def per_turn_plot(
    df: pd.DataFrame,
    path: str | os.PathLike,
    scores: Sequence[str] = ("TMR", "DMR"),
    *,
    pair: str = "pair",
    title: str | None = None,
    label: str | None = None,
    order: Sequence[Any] | None = None,
) -> tuple[Path, Path]:
    """Figure 4: mean score per system turn; one row of panels per score, one column per pair.

    ``df``: the output of :func:`behavsim.analysis.per_turn` (``pair, a, b, turn, n`` + scores).
    Each column is titled with its ``label`` column (default: ``"<a> vs <b>"`` when ``a``/``b``
    exist, else ``"<pair> <value>"``), wrapped to the panel's width; ``order``: the pairs' order.
    """
    names = _scores_in(df, scores)
    require_columns(df, [pair, "turn"] + names + ([label] if label else []), "per_turn_plot")
    from matplotlib.ticker import MaxNLocator

    pairs = ordered(df[pair], order)
    ncols = len(pairs)
    width = max(WIDTH, 2.0 * ncols)
    fig = new_figure(width, 1.9 * len(names) + 0.8)
    axes = fig.subplots(len(names), ncols, squeeze=False, sharex=True, sharey=True)
    for c, p in enumerate(pairs):
        g = df[df[pair] == p].sort_values("turn", kind="mergesort")
        if label:
            head = str(g[label].iloc[0])
        elif {"a", "b"} <= set(g.columns):
            head = f"{g['a'].iloc[0]} vs {g['b'].iloc[0]}"
        else:
            head = f"{pair} {p}"
        for r, s in enumerate(names):
            ax = axes[r][c]
            ax.bar(g["turn"].to_numpy(), g[s].to_numpy(dtype=float), width=0.8)
            ax.set_ylim(0, 1.05)
            ax.grid(axis="x", visible=False)
            if r == 0:
                ax.set_title(wrap_title(head, width / ncols - 0.45, 8), fontsize=8)
            if c == 0:
                ax.set_ylabel(s)
            if r == len(names) - 1:
                ax.set_xlabel(axis_label("turn"))
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(wrap_title(title or f"{' and '.join(names)} per dialogue turn", width - 0.2, _rc("figure.titlesize")))
    return save_figure(fig, path)


@drawn
def heatmap(
    matrix_df: pd.DataFrame,
    path: str | os.PathLike,
    title: str,
    *,
    fmt: str = ".2f",
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "viridis",
    annotate: bool | None = None,
    svg: bool | None = None,
) -> tuple[Path, Path]:
    """Figure 6: an annotated square matrix (e.g. the correlation or MSE from
    :func:`behavsim.analysis.score_agreement`). NaN cells are left blank and marked "–".
    ``annotate``: write the values into the cells (default: when the matrix has at most 25 rows
    and columns, e.g. not for a big policy matrix from ``behavsim.compare(..., matrix=True)``).
    ``svg``: write the SVG too (default: when annotated; without values in the cells an SVG
    holds nothing but the PNG's raster image and costs as much time again)."""
    if not isinstance(matrix_df, pd.DataFrame) or matrix_df.empty:
        raise ConfigError("heatmap: matrix_df must be a non-empty DataFrame")
    m = matrix_df.to_numpy(dtype=float)
    nr, nc = m.shape
    side = min(max(3.2, 0.55 * max(nr, nc) + 1.6), 9.0)
    fig = new_figure(side + 0.8, side)
    ax = fig.add_subplot()
    ax.grid(False)
    im = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, vmin=vmin, vmax=vmax, aspect="equal", interpolation="nearest")
    ax.set_xticks(range(nc), [str(c) for c in matrix_df.columns], rotation=45, ha="right")
    ax.set_yticks(range(nr), [str(i) for i in matrix_df.index])
    if annotate is None:
        annotate = max(nr, nc) <= 25
    for i in range(nr if annotate else 0):
        for j in range(nc):
            v = m[i, j]
            if np.isfinite(v):
                r, g, b, _ = im.cmap(im.norm(v))
                color = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"  # readable on its cell
            else:
                color = "grey"
            text = "–" if not np.isfinite(v) else format(v, fmt)
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
    fig.colorbar(im, ax=ax, shrink=0.8)
    n = matrix_df.attrs.get("n_rows")
    ax.set_title(title if n is None else f"{title} (n = {n})")
    return save_figure(fig, path, svg=annotate if svg is None else svg)


@drawn
def behaviour_map_plot(
    coords: pd.DataFrame,
    path: str | os.PathLike,
    *,
    title: str | None = None,
    explained: Sequence[float] | None = None,
) -> tuple[Path, Path]:
    """The behaviour map: one point per policy at ``x, y``; the checkpoints of each ``trial``
    joined in ``checkpoint`` order from a ring (the first) to a star (the final one, labelled); a
    policy without a checkpoint is a labelled square. ``coords``: :attr:`behavsim._map.BehaviourMap.coords`."""
    require_columns(coords, ["id", "trial", "checkpoint", "final", "x", "y"], "behaviour_map_plot")
    import matplotlib

    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    fig = new_figure(WIDTH, 4.6)
    ax = fig.add_subplot()
    trials = list(dict.fromkeys(coords["trial"].astype(str)))
    for k, trial in enumerate(trials):
        g = coords[coords["trial"].astype(str) == trial]
        color = colors[k % len(colors)]
        own = g["checkpoint"].isna().all()
        if own:
            ax.scatter(g["x"], g["y"], marker="s", s=36, color=color, label=trial, zorder=3)
        else:
            g = g.sort_values("checkpoint", kind="mergesort")
            ax.plot(g["x"], g["y"], marker="o", markersize=3, linewidth=1.0, color=color, label=trial, alpha=0.8)
            first = g.iloc[:1]
            ax.scatter(first["x"], first["y"], marker="o", s=40, facecolors="none", edgecolors=color, zorder=3)
            fin = g[g["final"].astype(bool)]
            ax.scatter(fin["x"], fin["y"], marker="*", s=90, color=color, edgecolor="black", linewidth=0.5, zorder=3)
        for _, row in g[g["final"].astype(bool)].iterrows():
            ax.annotate(str(row["id"]), (row["x"], row["y"]), xytext=(4, 4), textcoords="offset points", fontsize=7)
    share = list(explained or [])
    ax.set_xlabel("MDS axis 1" + (f" ({share[0]:.0%})" if len(share) > 0 else ""))
    ax.set_ylabel("MDS axis 2" + (f" ({share[1]:.0%})" if len(share) > 1 else ""))
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title(title or "Behaviour map")
    add_legend(ax, len(trials), "trial")
    return save_figure(fig, path)


@drawn
def dendrogram_plot(
    linkage: Any, labels: Sequence[str], path: str | os.PathLike, *, title: str | None = None
) -> tuple[Path, Path]:
    """A dendrogram of a SciPy-format ``linkage`` (e.g. :func:`behavsim._map.average_linkage`),
    leaves labelled with ``labels``; the distance axis horizontal."""
    from scipy.cluster.hierarchy import dendrogram  # a measured start-up cost (seconds): loaded for a dendrogram

    z = np.asarray(linkage, dtype=float)
    if z.ndim != 2 or z.shape[1] != 4 or len(labels) != len(z) + 1:
        raise ConfigError(f"dendrogram_plot: expected a linkage of {len(labels) - 1} merges for {len(labels)} labels")
    fig = new_figure(WIDTH, max(2.4, 0.28 * len(labels) + 1.2))
    ax = fig.add_subplot()
    dendrogram(
        z,
        labels=[str(x) for x in labels],
        orientation="right",
        ax=ax,
        color_threshold=0,
        above_threshold_color="C0",
        leaf_font_size=8,
    )
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("distance (1 − score, average linkage)")
    ax.set_title(title or "Dendrogram")
    return save_figure(fig, path)


__all__ += ["behaviour_map_plot", "dendrogram_plot"]
