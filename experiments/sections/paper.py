"""The report's sections of the paper's questions: absolute performance (Table 1), convergence
(Table 2, Figure 2), seeds (Table 4, Figure 3), per turn (Figure 4), rewards (Table 3, Figure 5)
and the score analysis (Figure 6) — each one figure with its short table (the last checkpoint),
every row one click away."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from behavsim import TableFormatError, list_scores
from behavsim.report import Figure, escape, fmt_int, fmt_num, heatmap_table, note, plain_table, score_table, to_float
from experiments.report import Report, Section, fold, sort_rows

__all__ = ["PERFORMANCE", "CONVERGENCE", "SEEDS", "PER_TURN", "REWARDS", "SCORES"]


def _scenario(
    report: Report,
    df: pd.DataFrame | None,
    name: str,
    keys: Sequence[str],
    table_id: str,
    what: str,
    per: Sequence[str] = (),
) -> str:
    """The short table of a scenario and, folded below it, all its rows.

    With a ``checkpoint`` key the short table holds the last checkpoint of each group ``per``
    (e.g. each trial); otherwise every row is short enough to show."""
    if df is None:
        return note(f"No <code>results/{name}</code> in this run: the {what} were not computed.")
    if df.empty:
        return note(f"<code>results/{name}</code> has no rows.")
    df = sort_rows(df, keys, report.rewards)
    n_rows = len(df)
    caption = (
        f"{what[0].upper() + what[1:]} — mean per-context similarity; below each value its 95% bootstrap "
        f"interval [lo, hi] ({n_rows} rows, from <code>results/{escape(name)}</code>)."
    )
    if "checkpoint" in keys and df["checkpoint"].nunique() > 1:
        groups = [k for k in per if k in df.columns]
        top = df.groupby(groups, sort=False)["checkpoint"].transform("max") if groups else df["checkpoint"].max()
        last = df[df["checkpoint"] == top]
        cks = sorted(set(last["checkpoint"].dropna()))
        at = ", ".join(fmt_int(c, grouped=True) for c in cks)
        short = score_table(
            last,
            keys,
            f"{table_id}-summary",
            f"{what[0].upper() + what[1:]} at the last checkpoint ({at} training dialogues): mean per-context "
            f"similarity with its 95% bootstrap interval; every checkpoint in the figure and below.",
        )
        return short + fold(
            f"All {n_rows} rows, every checkpoint (<code>results/{escape(name)}</code>)",
            score_table(df, keys, table_id, caption),
        )
    return score_table(df, keys, table_id, caption)


def _table1(report: Report) -> str:
    df = report.csv("table1.csv")
    out = ""
    if df is None:
        out += note("No <code>results/table1.csv</code> in this run.")
    elif df.empty:
        out += note("<code>results/table1.csv</code> has no rows.")
    else:
        if df.duplicated(["dialogues", "reward"]).any():
            raise TableFormatError(f"{report.path('table1.csv')}: more than one row for a (dialogues, reward) pair")
        rewards = list(dict.fromkeys(sort_rows(df, ["reward"], report.rewards)["reward"]))  # the paper's order
        seeds = sorted(set(fmt_int(v) for v in df["n_seeds"]))
        metrics = [("tsr", "TSR"), ("aiq", "AIQ"), ("adl", "ADL")]
        if len(seeds) > 1:
            metrics.append(("n_seeds", "seeds"))
        by = {(r["dialogues"], r["reward"]): r for r in df.to_dict("records")}
        head1 = '<th rowspan="2">dialogues</th>' + "".join(
            f'<th colspan="{len(rewards)}" class="group">{lab}</th>' for _, lab in metrics
        )
        head2 = "".join(f'<th class="num">{escape(r)}</th>' for _ in metrics for r in rewards)
        rows = []
        for d in sorted(set(df["dialogues"])):
            tds = [f'<td class="key">{fmt_int(d, grouped=True)}</td>']
            for col, _ in metrics:
                for r in rewards:
                    rec = by.get((d, r))
                    txt = "—" if rec is None else (fmt_int(rec[col]) if col == "n_seeds" else fmt_num(rec[col]))
                    tds.append(f'<td class="num">{txt}</td>')
            rows.append(f"<tr>{''.join(tds)}</tr>")
        seeds_txt = (
            f"mean over {seeds[0]} seed{'s' if seeds[0] != '1' else ''}" if len(seeds) == 1 else "mean over seeds"
        )
        out += (
            f'<div class="wrap"><table class="data" id="table1"><caption>Task success rate (TSR), average '
            f"interaction quality (AIQ) and average dialogue length in turns (ADL) after each number of "
            f"training dialogues, per reward; {seeds_txt}.</caption>"
            f"<thead><tr>{head1}</tr><tr>{head2}</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>\n"
        )
    m = report.csv("metrics.csv", numeric=())
    if m is not None and not m.empty:
        cols = [
            c for c in ("policy", "reward", "seed", "dialogues", "tsr", "aiq", "adl", "mean_reward") if c in m.columns
        ]
        m = sort_rows(m, ["reward", "seed", "dialogues"], report.rewards)
        out += fold(
            f"Per trial and checkpoint ({len(m)} rows, <code>results/metrics.csv</code>)",
            plain_table(
                m, cols, "metrics", "Evaluation of every trial at every checkpoint.", int_cols=("seed", "dialogues")
            ),
        )
    return out


def _per_turn(report: Report) -> str:
    df = report.csv("per_turn.csv", numeric=list_scores())
    if df is None:
        return note("No <code>results/per_turn.csv</code> in this run.")
    scores = [s for s in list_scores() if s in df.columns]
    if df.empty or not scores:
        return note("<code>results/per_turn.csv</code> has no rows or no score columns.")
    turns = sorted(set(df["turn"].dropna()))
    keys = ["context_set", "reward", "pair"]
    groups = sort_rows(df[keys].drop_duplicates(), keys, report.rewards).to_dict("records")
    by = {(r["context_set"], r["reward"], r["pair"], r["turn"]): r for r in df.to_dict("records")}
    head = (
        "".join(f"<th>{k}</th>" for k in keys)
        + "<th>score</th>"
        + "".join(f'<th class="num">{fmt_int(t)}</th>' for t in turns)
    )
    rows = []
    for g in groups:
        for j, s in enumerate(scores):
            tds = [f'<td class="key{" same" if j else ""}">{escape(g[k])}</td>' for k in keys]
            tds.append(f'<td class="key">{escape(s)}</td>')
            for t in turns:
                rec = by.get((g["context_set"], g["reward"], g["pair"], t))
                if rec is None:
                    tds.append('<td class="num">—</td>')
                else:
                    tds.append(f'<td class="num" title="n = {fmt_int(rec["n"])}">{fmt_num(rec[s])}</td>')
            rows.append(f"<tr>{''.join(tds)}</tr>")
    table = (
        f'<div class="wrap"><table class="data" id="per_turn"><caption>Mean similarity per system turn '
        f"(column: turn index; hover a value for the number of contexts).</caption><thead><tr>{head}</tr>"
        f"</thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>\n"
    )
    return fold(f"The table: {len(rows)} rows by {len(turns)} turns (<code>results/per_turn.csv</code>)", table)


def _heatmap(report: Report, name: str, kind: str, title: str) -> str:
    df = report.csv(name, required=("score",))
    if df is None:
        return f'<div class="heat">{note(f"No <code>results/{name}</code> in this run.")}</div>'
    labels = list(df["score"])
    cols = [c for c in df.columns if c != "score"]
    if cols != labels:
        raise TableFormatError(
            f"{report.path(name)}: not a square score matrix: rows {', '.join(labels)} but columns {', '.join(cols)}"
        )
    for c in cols:
        df[c] = to_float(df[c], report.path(name), c)
    matrix = df.set_index("score")[cols]
    return heatmap_table(matrix, kind, name.removesuffix(".csv"), title, f"<code>results/{name}</code>")


_MATRICES = (
    ("score_corr.csv", "corr", "Pearson correlation, all compared contexts"),
    ("score_mse.csv", "mse", "Mean squared error, all compared contexts"),
    ("score_corr_mismatch.csv", "corr", "Pearson correlation, contexts whose acts differ"),
    ("score_mse_mismatch.csv", "mse", "Mean squared error, contexts whose acts differ"),
)


def _scores_section(report: Report) -> str | None:
    """Figure 6 as coloured tables (one form: the figures of the same matrices are not embedded);
    all compared contexts shown, the contexts whose acts differ one click away."""
    present = [m for m in _MATRICES if report.path(m[0]).is_file()]
    if not present:
        return None
    first = "".join(_heatmap(report, *m) for m in _MATRICES[:2])
    second = "".join(_heatmap(report, *m) for m in _MATRICES[2:])
    return (
        "<p>How the eight scores agree over every compared (pair, context) of the study: Pearson "
        "correlation (blue −1 · white 0 · red +1) and mean squared error (white 0 · purple: the largest).</p>\n"
        f'<div class="heatmaps">{first}</div>\n'
        + fold("The same on the contexts whose acts differ only", f'<div class="heatmaps">{second}</div>\n')
    )


def _convergence(report: Report) -> str:
    return _scenario(
        report,
        report.csv("convergence.csv", scores=True),
        "convergence.csv",
        ["context_set", "reward", "seed", "checkpoint"],
        "convergence",
        "convergence of each trial (checkpoint k vs k−1)",
        per=["context_set", "reward", "seed"],
    )


def _seeds(report: Report) -> str:
    return _scenario(
        report,
        report.csv("seeds.csv", scores=True),
        "seeds.csv",
        ["context_set", "reward", "pair", "checkpoint"],
        "seeds",
        "seed comparisons (trials of one reward at the same checkpoint)",
        per=["context_set", "reward", "pair"],
    )


def _rewards(report: Report) -> str:
    return _scenario(
        report,
        report.csv("rewards.csv", scores=True),
        "rewards.csv",
        ["context_set", "pair"],
        "rewards",
        "reward comparisons (a trial of one reward vs a trial of the other, last checkpoint)",
    )


def _not_a_matrix_shown(report: Report, figure: Figure) -> bool:
    """The matrices are shown once, as tables: their figures only where the table is missing."""
    name = f"{Path(figure.file).stem}.csv"
    return not (name in {m[0] for m in _MATRICES} and report.path(name).is_file())


PERFORMANCE = Section(
    key="performance",
    title="Absolute performance (Table 1)",
    order=300,
    render=_table1,
    inputs={
        "results/table1.csv": "TSR, AIQ and ADL per number of training dialogues and reward",
        "results/metrics.csv": "every trial at every checkpoint",
    },
    figures=("figures/learning_curves*",),
)
CONVERGENCE = Section(
    key="convergence",
    title="Convergence: checkpoint k vs k−1 (Table 2, Figure 2)",
    order=400,
    render=_convergence,
    inputs={"results/convergence.csv": "each trial's checkpoint k vs k−1"},
    figures=("figures/convergence*",),
)
SEEDS = Section(
    key="seeds",
    title="Seeds: trials of one reward (Table 4, Figure 3)",
    order=500,
    render=_seeds,
    inputs={"results/seeds.csv": "the pairs of trials of one reward at each checkpoint"},
    figures=("figures/seeds*",),
)
PER_TURN = Section(
    key="per_turn",
    title="Per turn: TMR and DMR by system turn (Figure 4)",
    order=600,
    render=_per_turn,
    inputs={"results/per_turn.csv": "TMR and DMR per system turn of the seed pairs"},
    figures=("figures/per_turn*",),
)
REWARDS = Section(
    key="rewards",
    title="Rewards: every TS trial vs every IQ trial (Table 3, Figure 5)",
    order=700,
    render=_rewards,
    inputs={"results/rewards.csv": "every trial of one reward vs every trial of the other"},
    absent="no results/rewards.csv: a run with one reward",
    figures=("figures/rewards*",),
)
SCORES = Section(
    key="scores",
    title="Score analysis: correlation and MSE (Figure 6)",
    order=1000,
    render=_scores_section,
    inputs={f"results/{m[0]}": m[2] for m in _MATRICES},
    figures=("figures/score_*",),
    shows_figure=_not_a_matrix_shown,
)
