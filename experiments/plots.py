"""The study's own figures: learning curves of the training runs (TSR, AIQ, ADL per reward), and
:func:`study_figures`, every figure of a run folder drawn from its ``results/*.csv``.

Drawn like every figure of :mod:`behavsim.plots` (same settings, PNG + deterministic SVG).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from behavsim import ConfigError, plots

__all__ = ["learning_curves", "study_figures", "LABELS", "METRICS"]

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
    order: Sequence[str] | None = None,
) -> tuple[Path, Path]:
    """TSR / AIQ / ADL over training dialogues, one line per reward: mean over seeds, min–max band.

    ``metrics_df``: the training runner's ``metrics.csv`` (``policy, reward, seed, dialogues, tsr,
    aiq, adl, ...``). Metrics absent from the table are skipped. ``order``: the rewards' order
    (e.g. the paper's ``["ts", "iq"]``; default sorted).
    """
    plots.require_columns(metrics_df, [x, hue], "learning_curves")
    names = [m for m in metrics if m in metrics_df.columns]
    if not names:
        raise ConfigError(
            f"learning_curves: none of the metrics {list(metrics)} is in the table; columns: {list(metrics_df.columns)}"
        )
    fig = plots.new_figure(plots.WIDTH * max(1.0, len(names) / 3), 2.6)
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    keys = plots.ordered(metrics_df[hue], order)
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


def _trial_label(reward: str, seed: Any) -> str:
    return f"{reward}-seed{seed}"


def _pair_short(pair: Any, ra: str, rb: str) -> str:
    """``"0 vs 1"`` of a pair of trials as ``"ts0 vs iq1"`` (the seeds of rewards ``ra`` and ``rb``)."""
    a, sep, b = str(pair).partition(" vs ")
    return f"{ra}{a} vs {rb}{b}" if sep else str(pair)


class _Drawn:
    """The figures of one run folder as they are drawn: the manifest's entries (``file`` = the SVG,
    ``title``) and every file written."""

    def __init__(self, run: Path) -> None:
        self.run = run
        self.results, self.dir = run / "results", run / "figures"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.entries: list[dict[str, str]] = []
        self.written: set[Path] = set()

    def add(self, paths: Sequence[Path], title: str) -> None:
        self.written.update(Path(p) for p in paths)
        for p in paths:
            if str(p).endswith(".svg"):
                self.entries.append({"file": Path(p).relative_to(self.run).as_posix(), "title": title})

    def read(self, name: str) -> pd.DataFrame | None:
        return pd.read_csv(self.results / name) if (self.results / name).exists() else None

    def remove_stale(self) -> None:
        """Figures of an earlier version of the study that are no longer drawn."""
        for old in sorted(self.dir.iterdir()):
            if old.is_file() and old.suffix in (".png", ".svg") and old not in self.written:
                old.unlink()


def study_figures(
    run: str | os.PathLike,
    metrics: pd.DataFrame,
    *,
    rewards: Sequence[str],
    seeds: Sequence[int],
    scores: Sequence[str],
) -> list[dict[str, str]]:
    """Every figure of the study from the run folder's ``results/*.csv`` into ``RUN/figures``; returns
    the manifest's entries (``file`` = the SVG, ``title``), the figure the report shows first in each
    section listed first (the report's sections say which figures are theirs). Rewards, trials and
    pairs are drawn in the paper's order (``rewards`` as configured, e.g. TS before IQ). Figures of an
    earlier version of the study that are no longer drawn are removed from ``figures/``, so the folder
    holds only what the manifest lists.

    * the learning curves (TSR, AIQ, ADL; ``learning_curves``);
    * convergence: TMR of checkpoint k vs k−1 of every trial, one panel on C_col of its reward and
      one on C_gen (``convergence``);
    * seeds: all scores of the seed pairs over checkpoints, per context set and reward
      (``seeds_<set>_<reward>``, C_col^all before C_gen);
    * per turn: TMR and DMR per system turn of the seed pairs at the last checkpoint, per reward
      (``per_turn_<reward>``);
    * rewards: TMR and DMR of every TS-vs-IQ pair next to the pairs of one reward (``rewards``);
    * scores: correlation (blue −1 · white 0 · red +1) and MSE (white 0 · purple) between the
      scores, the colours of the report's tables (``score_corr``, ``score_mse``, ``..._mismatch``).
    """
    drawn = _Drawn(Path(run))
    rewards = list(rewards)
    drawn.add(
        learning_curves(metrics, drawn.dir / "learning_curves", order=rewards),
        "Learning curves: TSR, AIQ, ADL (mean over seeds, min–max band)",
    )
    _convergence(drawn, rewards, seeds)
    seeds_df = drawn.read("seeds.csv")
    _seeds(drawn, seeds_df, rewards, scores)
    act = [s for s in ("TMR", "DMR") if s in scores]
    _per_turn(drawn, rewards, act)
    _rewards(drawn, seeds_df, rewards, act)
    _score_matrices(drawn)
    drawn.remove_stale()
    return drawn.entries


def _convergence(drawn: _Drawn, rewards: list[str], seeds: Sequence[int]) -> None:
    conv = drawn.read("convergence.csv")
    if conv is None or conv.empty:
        return
    trials = [_trial_label(r, s) for r in rewards for s in seeds]
    conv["trial"] = [_trial_label(r, s) for r, s in zip(conv["reward"], conv["seed"])]
    own = conv["context_set"].astype(str) == "ccol-" + conv["reward"].astype(str)
    conv["on"] = ["on the C_col of its reward" if o else f"on {c}" for o, c in zip(own, conv["context_set"])]
    drawn.add(
        plots.convergence_curves(
            conv,
            drawn.dir / "convergence",
            score="TMR",
            hue="trial",
            panel="on",
            order=trials,
            panel_order=["on the C_col of its reward"],
            title="Convergence: TMR of checkpoint k vs k−1 of every trial",
        ),
        "Convergence: TMR of checkpoint k vs k−1, on C_col of each trial's reward and on C_gen",
    )


def _seeds(drawn: _Drawn, seeds_df: pd.DataFrame | None, rewards: list[str], scores: Sequence[str]) -> None:
    if seeds_df is None or seeds_df.empty:
        return
    for name in plots.ordered(seeds_df["context_set"], ["ccol-all"]):
        for reward in plots.ordered(seeds_df["reward"], rewards):
            df = seeds_df[(seeds_df["context_set"] == name) & (seeds_df["reward"] == reward)]
            if df.empty:
                continue
            drawn.add(
                plots.pair_curves(
                    df,
                    drawn.dir / f"seeds_{name}_{reward}",
                    scores=[s for s in scores if s in df.columns],
                    hue="pair",
                    title=f"Seeds: every score of the {reward} trial pairs on {name}",
                ),
                f"Seeds: all scores of the pairs of {reward} trials over training, on {name}",
            )


def _per_turn(drawn: _Drawn, rewards: list[str], act: list[str]) -> None:
    pt = drawn.read("per_turn.csv")
    if pt is None or pt.empty or not act:
        return
    for reward in plots.ordered(pt["reward"], rewards):
        df = pt[pt["reward"] == reward].assign(panel=lambda d: "seeds " + d["pair"].astype(str))
        drawn.add(
            plots.per_turn_plot(
                df,
                drawn.dir / f"per_turn_{reward}",
                scores=act,
                label="panel",
                title=f"{' and '.join(act)} per system turn: pairs of {reward} trials at the last checkpoint",
            ),
            f"Per turn: {' and '.join(act)} of the pairs of {reward} trials by system turn (last checkpoint)",
        )


def _rewards(drawn: _Drawn, seeds_df: pd.DataFrame | None, rewards: list[str], act: list[str]) -> None:
    rew = drawn.read("rewards.csv")
    if rew is None or rew.empty or seeds_df is None or not act:
        return
    last = seeds_df["checkpoint"].max()
    within = seeds_df[(seeds_df["context_set"] == "ccol-all") & (seeds_df["checkpoint"] == last)].copy()
    parts = []
    for r in plots.ordered(within["reward"], rewards):
        part = within[within["reward"] == r]
        parts.append(part.assign(group=f"within {r}", label=[_pair_short(p, r, r) for p in part["pair"]]))
    cross = " vs ".join(r.upper() for r in rewards)
    parts.append(rew.assign(group=cross, label=[_pair_short(p, *rewards[:2]) for p in rew["pair"]]))
    drawn.add(
        plots.pair_bars(
            pd.concat(parts, ignore_index=True),
            drawn.dir / "rewards",
            score=act,
            group="group",
            label="label",
            title=f"{' and '.join(act)}: trials of different rewards next to trials of one reward (ccol-all)",
        ),
        f"{' and '.join(act)} of every {cross} pair next to the pairs of one reward (last checkpoint, C_col^all)",
    )


def _score_matrices(drawn: _Drawn) -> None:
    for suffix, label in (("", "all contexts"), ("_mismatch", "contexts whose acts differ")):
        for kind, what in (("corr", "Pearson correlation"), ("mse", "Mean squared error")):
            m = drawn.read(f"score_{kind}{suffix}.csv")
            if m is not None:
                drawn.add(
                    plots.heatmap(
                        m.set_index("score"),
                        drawn.dir / f"score_{kind}{suffix}",
                        f"{what} between scores ({label})",
                        vmin=-1 if kind == "corr" else 0,
                        vmax=1 if kind == "corr" else None,
                        cmap="RdBu_r" if kind == "corr" else "Purples",
                    ),
                    f"{what} between scores ({label})",
                )
