"""The report's sections on where the policies differ: the slices with the lowest similarity per
group of pairs (``results/slices.csv``) and the most-disagreeing contexts, deduplicated by their
answer pairs (``results/disagreements.csv``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from behavsim import list_scores
from behavsim.report import escape, fmt_int, fmt_num, note, plain_table
from experiments.report import Report, Section, fold, plural, sort_rows

__all__ = ["SLICES", "DISAGREEMENTS"]


_SLICE_WORDS = {
    "acttype": "the first trial's act is",
    "slot": "the belief mentions the slot",
    "uncertainty": "the belief's certainty is",
    "turn": "the system turn is",
}


_SLICE_TOP = 6


_SLICE_MIN_N, _SLICE_MIN_SHARE = 5, 0.05  # slices shown: at least 5 contexts and 5% of the group's


_SLICE_NONE_WORDS = {
    "(no act)": "the first trial gave no act",
    "(no slot)": "the belief mentions no slot",
    "no constraint": "no slot is constrained",
    "(no turn)": "the context has no turn",
}


def _slice_words(kind: str, value: str) -> str:
    if value in _SLICE_NONE_WORDS:
        return f"<b>{escape(_SLICE_NONE_WORDS[value])}</b>"
    return f"{escape(_SLICE_WORDS.get(kind, kind))} <b>{escape(value)}</b>"


def _slice_group_label(kind: str, reward: str) -> str:
    if kind == "seeds":
        return f"seed pairs ({reward})" if reward else "seed pairs"
    if kind == "rewards":
        return "reward pairs (TS vs IQ)"
    return kind


def _slices(report: Report) -> str:
    """Per group of pairs (the seed pairs of each reward and the TS-vs-IQ pairs, last checkpoint),
    the slices with the lowest TMR: scores pooled over the group's pairs, weighted by each pair's n."""
    df = report.csv("slices.csv", numeric=["n", *list_scores(), *[f"n_{s}" for s in list_scores()]])
    if df is None:
        return note("No <code>results/slices.csv</code> in this run.")
    scores = [s for s in ("TMR", "DMR", "CMR") if s in df.columns]
    if df.empty or not scores:
        return note("<code>results/slices.csv</code> has no rows or no act scores.")
    if "reward" not in df.columns:
        df["reward"] = ""
    rows, sentences = [], []
    keys = ["kind", "context_set", "reward"]
    df = sort_rows(df, keys, report.rewards)
    for (kind, cset, reward), g in df.groupby(keys, sort=False):
        pooled = []
        for (sl, value), h in g.groupby(["slice", "value"], sort=False):
            rec: dict[str, Any] = {"slice": sl, "value": value, "n": float(h["n"].sum())}
            for s in scores:
                w = h[f"n_{s}"] if f"n_{s}" in h.columns else h["n"]
                ok = w > 0
                rec[s] = float((w[ok] * h.loc[ok, s]).sum() / w[ok].sum()) if ok.any() else math.nan
            pooled.append(rec)
        table = pd.DataFrame(pooled)
        total = float(g.groupby("slice")["n"].sum().min())  # a partition's n adds up to the group's contexts
        least = max(_SLICE_MIN_N, math.ceil(_SLICE_MIN_SHARE * total))
        table = table[table["n"] >= least].sort_values([scores[0], "n"], ascending=[True, False], kind="stable")
        if table.empty:
            continue
        label = _slice_group_label(str(kind), str(reward))
        worst = table.iloc[0]
        sentences.append(
            f"<li>The <b>{escape(label)}</b> on <b>{escape(cset)}</b> differ most where "
            f"{_slice_words(str(worst['slice']), str(worst['value']))}: "
            f'{escape(scores[0])} <span class="v">{fmt_num(worst[scores[0]])}</span> over '
            f"{fmt_int(worst['n'])} contexts.</li>"
        )
        for rec in table.head(_SLICE_TOP).to_dict("records"):
            rows.append({"pairs": label, "context_set": cset, **rec})
    if not rows:
        return note("<code>results/slices.csv</code> has no slice with a compared context.")
    out = pd.DataFrame(rows)
    table = plain_table(
        out,
        ["pairs", "context_set", "slice", "value", "n", *scores],
        "slices",
        "Slices with the lowest similarity per group of pairs (last checkpoint)",
        int_cols=["n"],
        text_cols=("pairs", "context_set", "slice", "value"),
    )
    return (
        "<p>Every score broken down by the first trial's act type, each slot the belief mentions, bins of "
        "the belief's certainty (mean top-value probability of the constrained slots) and the system turn, "
        f"pooled over the pairs of each group (n: contexts, summed over the pairs). The {_SLICE_TOP} slices "
        f"with the lowest {escape(scores[0])} per group among those with at least {_SLICE_MIN_N} contexts and "
        f"{_SLICE_MIN_SHARE:.0%} of the group's; all of them in <code>results/slices.csv</code>.</p>\n"
        '<ul class="tests">\n'
        + "\n".join(sentences)
        + "\n</ul>\n"
        + fold(f"The {len(out)} slices, with every act score", table)
    )


_DIS_TOP = 10  # answer pairs shown per comparison kind; the others one click away


_DIS_CONTEXTS = 3  # belief states listed per answer pair; the others folded


def _dis_kind(comparison: str) -> tuple[str, str]:
    """(kind, context set) of a comparison written ``kind/context_set/a vs b``; an older run's
    comparison (no ``/``) is a kind of its own."""
    parts = comparison.split("/", 2)
    return (parts[0], parts[1]) if len(parts) == 3 else (comparison, "")


def _dis_label(report: Report, kind: str, cset: str) -> str:
    words = {
        "seeds": "seed pairs",
        "rewards": " vs ".join(r.upper() for r in report.rewards) + " pairs",
        "convergence": "checkpoint k vs k−1",
    }
    w = words.get(kind, kind)
    return f"{w} on {cset}" if cset else w


def _answer_pairs(g: pd.DataFrame, scores: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of one comparison kind grouped by their answer pair (act of A, act of B): how often
    it occurs, in which compared pairs, on which distinct belief states (each with its count and
    turns), its most frequent wording and its mean scores; most frequent first."""
    out = []
    for (act_a, act_b), h in g.groupby(["act_a", "act_b"], sort=False):
        ctxs: dict[str, dict[str, Any]] = {}
        for rec in h.to_dict("records"):
            key = str(rec["summary"]).strip() or str(rec["context_id"])
            c = ctxs.setdefault(key, {"n": 0, "turns": set(), "ids": []})
            c["n"] += 1
            if isinstance(rec["turn"], float) and math.isfinite(rec["turn"]):
                c["turns"].add(int(rec["turn"]))
            c["ids"].append(str(rec["context_id"]))
        wordings = h.groupby(["prompt_a", "prompt_b"], sort=False).size()
        top = wordings.sort_values(ascending=False, kind="stable").index[0]
        out.append(
            {
                "act_a": act_a,
                "act_b": act_b,
                "times": len(h),
                "pairs": list(dict.fromkeys(h["comparison"].map(lambda c: c.split("/", 2)[-1]))),
                "contexts": sorted(ctxs.items(), key=lambda kv: -kv[1]["n"]),
                "prompt_a": top[0],
                "prompt_b": top[1],
                "wordings": len(wordings),
                "rank": float(h["rank"].min()),
                "scores": {s: float(h[s].mean()) for s in scores},
            }
        )
    out.sort(key=lambda r: (-r["times"], r["rank"], str(r["act_a"]), str(r["act_b"])))
    return out


def _answer_row(r: dict[str, Any], rest: bool, n_pairs: int) -> str:
    items = []
    for summary, c in r["contexts"]:
        turns = ", ".join(str(t) for t in sorted(c["turns"]))
        items.append(
            f'<li title="{escape("; ".join(c["ids"]))}"><span class="ctx">{escape(summary)}</span>'
            f' <span class="cnt">×{c["n"]}</span>'
            + (f' <span class="turn">turn {escape(turns)}</span>' if turns else "")
            + "</li>"
        )
    ctx = "<ul>" + "\n".join(items[:_DIS_CONTEXTS]) + "</ul>"
    if len(items) > _DIS_CONTEXTS:
        ctx += fold(
            f"{plural(len(items) - _DIS_CONTEXTS, 'more belief state')}",
            "<ul>" + "\n".join(items[_DIS_CONTEXTS:]) + "</ul>",
        )
    more = f'<br><span class="desc">(+{plural(r["wordings"] - 1, "other wording")})</span>' if r["wordings"] > 1 else ""
    sc = " · ".join(f"{escape(s)} {fmt_num(v)}" for s, v in r["scores"].items())
    cls = ' class="rest"' if rest else ""
    return (
        f'<tr{cls}><td class="num">{fmt_int(r["times"])}</td>'
        f'<td class="num" title="{len(r["pairs"])} of {n_pairs}: {escape("; ".join(r["pairs"]))}">'
        f"{fmt_int(len(r['pairs']))}</td>"
        f'<td class="ctxs">{ctx}</td>'
        f'<td class="resp"><code class="act">{escape(r["act_a"])}</code><br><q>{escape(r["prompt_a"])}</q>{more}</td>'
        f'<td class="resp"><code class="act">{escape(r["act_b"])}</code><br><q>{escape(r["prompt_b"])}</q></td>'
        f'<td class="sc">{sc}</td></tr>'
    )


def _disagreements(report: Report) -> str:
    """One table per comparison kind (seed pairs on each context set, TS vs IQ pairs), chosen with
    radio buttons (CSS alone; without ``:has`` every table is shown, one after the other): the
    answer pairs of the most-disagreeing contexts of every compared pair, deduplicated, with how
    often each occurs and on which distinct belief states."""
    df = report.csv("disagreements.csv", scores=True)
    if df is None:
        return note("No <code>results/disagreements.csv</code> in this run.")
    if df.empty:
        return note("<code>results/disagreements.csv</code> has no rows.")
    scores = [s for s in list_scores() if s in df.columns]
    for c in ("act_a", "act_b", "prompt_a", "prompt_b", "summary", "context_id"):
        df[c] = df[c].astype(str)
    kinds = pd.DataFrame([_dis_kind(c) for c in df["comparison"]], columns=["kind", "context_set"], index=df.index)
    df = pd.concat([df, kinds], axis=1)
    groups = list(
        sort_rows(df, ["kind", "context_set", "comparison", "rank"], report.rewards).groupby(
            ["kind", "context_set"], sort=False
        )
    )
    radios, panels, rules = [], [], []
    for k, ((kind, cset), g) in enumerate(groups):
        label = _dis_label(report, str(kind), str(cset))
        pairs = _answer_pairs(g, scores)
        n_cmp = g["comparison"].nunique()
        n_ctx = len({str(x).strip() for x in g["summary"]})
        radios.append(
            f'<label><input type="radio" name="dis-kind" id="dis-kind-{k}"{" checked" if k == 0 else ""}> '
            f"{escape(label)} ({plural(len(pairs), 'answer pair')})</label>"
        )
        rules.append(f".dis:has(#dis-kind-{k}:checked) .dis-panel:not(#dis-panel-{k}) {{ display: none; }}")
        rows = [_answer_row(r, i >= _DIS_TOP, n_cmp) for i, r in enumerate(pairs)]
        show_all = (
            f'<label class="toggle"><input type="checkbox" class="all" id="dis-all-{k}"> show all '
            f"{len(pairs)} answer pairs (the {_DIS_TOP} most frequent are shown)</label>\n"
            if len(pairs) > _DIS_TOP
            else ""
        )
        panels.append(
            f'<div class="dis-panel" id="dis-panel-{k}">\n<h3>{escape(label)}</h3>\n'
            f"<p>{plural(len(g), 'row')} of <code>results/disagreements.csv</code> ({plural(n_cmp, 'compared pair')}, "
            f"the contexts where each disagrees most) hold {plural(len(pairs), 'distinct answer pair')} "
            f"on {plural(n_ctx, 'distinct belief state')}.</p>\n"
            + show_all
            + f'<div class="wrap"><table class="data disagree sortable" id="disagreements-{k}"><thead><tr>'
            '<th class="num" title="how often the answer pair occurs in the lists">times</th>'
            '<th class="num" title="in how many compared pairs (hover a value for them)">pairs</th>'
            "<th>belief states (× how often)</th><th>policy A: act / prompt</th><th>policy B: act / prompt</th>"
            "<th>mean scores</th></tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>\n</div>\n"
        )
    intro = (
        "<p>For every compared pair of the last checkpoint the study lists the contexts where the two "
        "policies disagree most (lowest CMR first). The same disagreement recurs across pairs, dialogues and "
        "grid points, so here each table groups them by the two answers: one row per answer pair (the act of "
        "policy A and of policy B), how often it occurs, in how many compared pairs, and the distinct belief "
        "states it was given on. Click a column head to sort.</p>\n"
    )
    selector = ""
    if len(groups) > 1:  # inside .dis, where .dis:has(...) sees which one is checked
        selector = f'<style>\n{chr(10).join(rules)}\n</style>\n<p class="filter">Comparison: ' + " ".join(radios)
        selector += "</p>\n"
    return intro + '<div class="dis">\n' + selector + "".join(panels) + "</div>\n"


SLICES = Section(
    key="slices",
    title="Where seed and reward pairs differ most: slices",
    order=1400,
    render=_slices,
    inputs={"results/slices.csv": "every score per act type, slot, belief certainty and turn"},
)
DISAGREEMENTS = Section(
    key="disagreements",
    title="Where the policies disagree most",
    order=1500,
    render=_disagreements,
    inputs={"results/disagreements.csv": "the contexts where each pair of the last checkpoint disagrees most"},
)
