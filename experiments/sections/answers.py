"""The report's first section, "Answers": a few sentences written from the numbers of the sections
below — when each trial's behaviour settles, how alike the seeds are, and reward vs seed."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from behavsim import TableFormatError
from behavsim.report import escape, fmt_int, fmt_num, note
from experiments.report import Report, Section, sort_rows
from experiments.sections.significance import describe_test, design_limit, fmt_p

__all__ = ["ANSWERS"]


_SETTLED = 0.95  # a trial's behaviour has settled once TMR(k vs k−1) stays at or above this


def _settling(conv: pd.DataFrame, rewards: Sequence[str]) -> str:
    """When each trial's behaviour settles: the first checkpoint from which TMR(k vs k−1) on the
    collected contexts of its reward stays >= _SETTLED."""
    own = conv[conv["context_set"].astype(str) == "ccol-" + conv["reward"].astype(str)]
    if own.empty:
        own = conv
    settled, not_yet = [], []
    rows = sort_rows(own, ["reward", "seed", "checkpoint"], rewards)
    for (reward, seed), g in rows.groupby(["reward", "seed"], sort=False):
        g = g.dropna(subset=["TMR"])
        if g.empty:
            continue
        below = g[g["TMR"] < _SETTLED]
        trial = f"{escape(reward)} seed {fmt_int(seed)}"
        if below.empty:
            settled.append(f"{trial} from {fmt_int(g['checkpoint'].iloc[0], grouped=True)}")
        elif below.index[-1] == g.index[-1]:
            not_yet.append(f'{trial} (TMR <span class="v">{fmt_num(g["TMR"].iloc[-1])}</span>)')
        else:
            after = g.loc[below.index[-1] :].iloc[1]
            settled.append(f"{trial} from {fmt_int(after['checkpoint'], grouped=True)}")
    if not settled and not not_yet:
        return ""
    out = (
        f"<li><b>Convergence.</b> A trial's behaviour counts as settled once the TMR of checkpoint k vs "
        f"k−1 on the collected contexts of its reward stays at {_SETTLED:g} or above."
    )
    if settled:
        out += f" Settled (training dialogues): {'; '.join(settled)}."
    if not_yet:
        out += f" Not settled by the last checkpoint: {'; '.join(not_yet)}."
    return out + "</li>"


def _seed_answer(seeds: pd.DataFrame, rewards: Sequence[str]) -> str:
    last = seeds[seeds["checkpoint"] == seeds["checkpoint"].max()]
    parts = []
    for cset, g in sort_rows(last, ["context_set"], rewards).groupby("context_set", sort=False):
        ranges = []
        for s in [s for s in ("TMR", "DMR") if s in g.columns]:
            v = g[s].dropna()
            if not v.empty:
                ranges.append(
                    f'{s} <span class="v">{fmt_num(v.min())}</span>–<span class="v">{fmt_num(v.max())}</span>'
                )
        if ranges:
            parts.append(f"on {escape(cset)} {', '.join(ranges)}")
    if not parts:
        return ""
    ck = fmt_int(last["checkpoint"].iloc[0], grouped=True)
    return (
        f"<li><b>Seeds.</b> At the last checkpoint ({ck} dialogues) the pairs of trials of one reward score "
        f"{'; '.join(parts)} (1 = the same behaviour on every context).</li>"
    )


def _reward_answer(report: Report) -> str:
    data = report.json("tests.json")
    if not isinstance(data, list):
        return ""
    path = report.path("tests.json")
    by_unit = {t.get("unit"): t for t in data if isinstance(t, dict) and t.get("score") == "TMR" and "unit" in t}
    t = by_unit.get("trials")
    if t is None:
        return ""
    for k in ("name", "score", "mean_x", "mean_y", "p_value"):
        if k not in t:
            raise TableFormatError(f"{path}: a test over trials has no {k!r}")
    p = t["p_value"]
    verdict = "significant at the 5% level" if p < 0.05 else "not significant at the 5% level"
    out = f"<li><b>Reward vs seed, over trials.</b> {describe_test(t, path, 0)} The difference is {verdict}."
    out += design_limit(t, path, 0)
    c = by_unit.get("contexts")
    if c is not None and isinstance(c.get("p_value"), (int, float)):
        out += (
            f' Over contexts (conditional on these trials) p = <span class="v">{fmt_p(c["p_value"])}</span>: '
            "how surely these very trials differ, not whether other seeds would."
        )
    return out + "</li>"


def _answers(report: Report) -> str:
    """The answers first: a few sentences written from the numbers of the sections below."""
    items = []
    conv = report.csv("convergence.csv", scores=True)
    if conv is not None and not conv.empty and "TMR" in conv.columns:
        items.append(_settling(conv, report.rewards))
    seeds = report.csv("seeds.csv", scores=True)
    if seeds is not None and not seeds.empty:
        items.append(_seed_answer(seeds, report.rewards))
    items.append(_reward_answer(report))
    items = [i for i in items if i]
    if not items:
        return note("No convergence, seed or test results in this run to answer from.")
    return '<ul class="tests">\n' + "\n".join(items) + "\n</ul>\n"


ANSWERS = Section(key="answers", title="Answers", order=100, render=_answers)
