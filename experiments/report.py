"""One self-contained HTML report of a study run (``behavsim report RUN_DIR -o report.html``).

:func:`build_report` reads the run directory written by the study runner (``manifest.json``,
``results/*.csv``, ``results/tests.json``, ``figures/*``) and writes ONE HTML file with the
building blocks of :mod:`behavsim.report`: inline CSS, figures embedded as ``data:`` images, no
fonts, scripts or styles from elsewhere (a Content-Security-Policy in the page forbids any network
access at view time). The same run directory always gives byte-identical HTML: nothing time- or
machine-dependent is written, the ``created`` time comes from the manifest.

The ``behavsim report`` command is registered through the entry-point group
``behavsim.commands`` (``report = experiments.report:register_report``).

The page answers in a few screens: the answers first, then per question of the paper one
figure with its short table (the last checkpoint); everything longer (every checkpoint, the other
figures, the score signatures, the configuration) is folded in ``<details>``. Rewards, context
sets and trials are listed in the paper's order (the config's ``rewards``, TS before IQ), whatever
the order of the CSV rows. A section is written only where the run has something for it; the Run
section names what the run does not have. The page prints on A4 (``@page``) as it is shown.

Layout of RUN_DIR and the report's sections: ``docs/report.md``. A missing manifest or a damaged
CSV/JSON raises a :class:`~behavsim.BehavsimError` that names the file. A run folder the study wrote
(it has ``state.json``) is reported on only when every file ``state.json`` records still has its
digest (:func:`experiments.runfolder.recorded_problems`), its training results are there and every
figure the manifest lists is readable; else one error lists what is missing or changed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from behavsim import ConfigError, TableFormatError, list_scores
from behavsim.analysis import distinct_relabelings
from behavsim.report import (
    Figure,
    escape,
    figures_html,
    fmt_int,
    fmt_num,
    heatmap_table,
    load_figure,
    note,
    page,
    plain_table,
    score_columns,
    score_table,
    to_float,
    write_html,
)
from experiments.report_e2e import e2e_section
from experiments.runfolder import TRAIN_RESULTS, recorded_problems

__all__ = ["build_report", "register_report", "SECTIONS"]

#: Report sections in page order: (anchor, heading). Figures are attached to one of them.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("answers", "Answers"),
    ("run", "Run"),
    ("performance", "Absolute performance (Table 1)"),
    ("convergence", "Convergence: checkpoint k vs k−1 (Table 2, Figure 2)"),
    ("seeds", "Seeds: trials of one reward (Table 4, Figure 3)"),
    ("per_turn", "Per turn: TMR and DMR by system turn (Figure 4)"),
    ("rewards", "Rewards: every TS trial vs every IQ trial (Table 3, Figure 5)"),
    ("policies", "Other policies: each vs every trial, the handcrafted policy and each other"),
    ("e2e", "End-to-end models: imitation, seeds and the CER–USE agreement"),
    ("scores", "Score analysis: correlation and MSE (Figure 6)"),
    ("map", "Behaviour map: every policy against every other"),
    ("robustness", "Robustness: each policy against itself on noisier beliefs"),
    ("tests", "Permutation tests"),
    ("slices", "Where seed and reward pairs differ most: slices"),
    ("disagreements", "Where the policies disagree most"),
    ("other", "Other figures"),
    ("signatures", "Score signatures"),
    ("config", "Full configuration"),
)
_SECTION_KEYS = [k for k, _ in SECTIONS]

# ------------------------------------------------------------------------------------------ input
_REQUIRED: dict[str, tuple[str, ...]] = {
    "table1.csv": ("dialogues", "reward", "n_seeds", "tsr", "aiq", "adl"),
    "metrics.csv": ("policy", "reward", "seed", "dialogues", "tsr", "aiq", "adl"),
    "convergence.csv": ("context_set", "reward", "seed", "checkpoint", "a", "b", "n"),
    "seeds.csv": ("context_set", "reward", "checkpoint", "pair", "a", "b", "n"),
    "rewards.csv": ("context_set", "pair", "a", "b", "n"),
    "policies.csv": ("context_set", "a", "b", "n"),
    "per_turn.csv": ("context_set", "reward", "pair", "turn", "n"),
    "slices.csv": ("kind", "context_set", "pair", "slice", "value", "n"),
    "disagreements.csv": (
        "comparison",
        "rank",
        "context",
        "context_id",
        "summary",
        "turn",
        "act_a",
        "act_b",
        "prompt_a",
        "prompt_b",
    ),
}
_PAPER_REWARDS = ("ts", "iq")  # the paper's order, when the manifest has no config
_NUMERIC = {"dialogues", "n_seeds", "tsr", "aiq", "adl", "seed", "n", "mean_reward", "turn", "rank", "checkpoint"}


#: Problems of a run folder named one by one in the report's refusal (the rest are counted).
_SHOW_PROBLEMS = 6


class _Run:
    """The run directory, read lazily; every read error names the file."""

    def __init__(self, run_dir: Path):
        self.dir = run_dir
        if not run_dir.is_dir():
            raise ConfigError(f"run directory {str(run_dir)!r} does not exist or is not a directory")
        mpath = run_dir / "manifest.json"
        if not mpath.is_file():
            raise ConfigError(
                f"{str(run_dir)!r} is not a run directory: {mpath} is missing "
                "(the study runner writes it; pass the folder that holds manifest.json)"
            )
        self.manifest = self._json(mpath)
        if not isinstance(self.manifest, dict):
            raise TableFormatError(f"{mpath}: expected a JSON object, got {type(self.manifest).__name__}")
        cfg = self.manifest.get("config")
        rewards = cfg.get("rewards") if isinstance(cfg, dict) else None
        #: the rewards in the paper's order: the config's, else TS before IQ
        self.rewards: list[str] = [str(r) for r in rewards] if isinstance(rewards, list) else list(_PAPER_REWARDS)
        self.absent: list[tuple[str, str]] = []  # (section heading, why) of the sections left out
        self._check_study_files()

    def _check_study_files(self) -> None:
        """A folder the study wrote (it has ``state.json``) is reported on only when every file
        ``state.json`` records still has its digest, the training results are there and every
        figure the manifest lists is there and readable; else one error lists what is wrong."""
        if not (self.dir / "state.json").exists():
            return

        problems = recorded_problems(self.dir)
        named = {p.split(" ", 1)[0] for p in problems}
        wanted = [f"results/{name}" for name in TRAIN_RESULTS]
        listed = self.manifest.get("figures")
        for item in listed if isinstance(listed, list) else []:
            rel = item.get("file") if isinstance(item, dict) else item
            if isinstance(rel, str):
                wanted.append(rel)
        for rel in wanted:
            if rel in named:
                continue
            named.add(rel)
            path = self.dir / rel
            if not path.is_file():
                problems.append(f"{rel} is missing")
            elif rel.lower().endswith((".svg", ".png")):
                problem = load_figure(path, rel, "", "").problem
                if problem:
                    problems.append(f"{rel} is damaged ({problem})")
        if problems:
            shown = "; ".join(problems[:_SHOW_PROBLEMS])
            more = f"; and {len(problems) - _SHOW_PROBLEMS} more" if len(problems) > _SHOW_PROBLEMS else ""
            name = self.manifest.get("config_name", "CONFIG")
            raise TableFormatError(
                f"{self.dir}: no report of a run whose results are incomplete: {shown}{more}; run the study on "
                f"this folder again to redo them (behavsim reproduce --config {name} -o {self.dir})"
            )

    def path(self, name: str) -> Path:
        return self.dir / "results" / name

    @staticmethod
    def _json(path: Path) -> Any:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TableFormatError(f"{path}: damaged JSON: {exc}") from None
        except OSError as exc:
            raise TableFormatError(f"{path}: cannot be read: {exc}") from None

    def json(self, name: str) -> Any | None:
        path = self.path(name)
        return self._json(path) if path.is_file() else None

    def csv(
        self,
        name: str,
        *,
        scores: bool = False,
        required: Sequence[str] | None = None,
        numeric: Iterable[str] = (),
        path: Path | None = None,
    ) -> pd.DataFrame | None:
        """Read ``results/NAME`` (or ``path``; None when absent); strings stay strings, numbers are checked."""
        path = self.path(name) if path is None else path
        if not path.is_file():
            return None
        try:
            df = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise TableFormatError(f"{path}: damaged CSV: {msg}") from None
        required = _REQUIRED.get(name, ()) if required is None else required
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise TableFormatError(
                f"{path}: missing column(s) {', '.join(missing)}; found: {', '.join(map(str, df.columns)) or 'none'}"
            )
        num = {c for c in df.columns if c in _NUMERIC} | set(numeric)
        if scores:
            num |= set(score_columns(df))
            num |= {f"{s}_{e}" for s in score_columns(df) for e in ("lo", "hi") if f"{s}_{e}" in df.columns}
        for col in [c for c in df.columns if c in num]:
            df[col] = to_float(df[col], path, col)
        return df


# --------------------------------------------------------------------------------------- helpers
def _rank_reward(rewards: Sequence[str], value: Any) -> str:
    v = str(value)
    return f"0{rewards.index(v):03d}" if v in rewards else f"1{v}"


def _rank_set(rewards: Sequence[str], value: Any) -> str:
    """C_col of each reward (in the rewards' order), their union, other collected sets, C_gen, the rest."""
    v = str(value)
    if v.startswith("ccol-") and v[5:] in rewards:
        return f"0{rewards.index(v[5:]):03d}"
    if v == "ccol-all":
        return "1"
    if v.startswith("ccol"):
        return f"2{v}"
    return f"3{v}" if v.startswith("cgen") else f"4{v}"


def _rank_kind(value: Any) -> str:
    v = str(value)
    order = ("convergence", "seeds", "rewards")
    return f"0{order.index(v)}" if v in order else f"1{v}"


def _sort(df: pd.DataFrame, keys: Sequence[str], rewards: Sequence[str] = _PAPER_REWARDS) -> pd.DataFrame:
    """Rows sorted by ``keys``: rewards, context sets and comparison kinds in the paper's order
    (``rewards`` first, C_col before C_gen; convergence, seeds, rewards), numbers by value, other
    text alphabetically."""
    rankers = {
        "reward": lambda col: col.map(lambda v: _rank_reward(rewards, v)),
        "context_set": lambda col: col.map(lambda v: _rank_set(rewards, v)),
        "kind": lambda col: col.map(_rank_kind),
    }

    def key(col: pd.Series) -> pd.Series:
        return rankers[str(col.name)](col) if col.name in rankers else col

    return df.sort_values(list(keys), key=key, kind="stable").reset_index(drop=True)


def _fold(summary: str, body: str, cls: str = "") -> str:
    """``body`` folded under ``summary`` (both HTML): one click away, not printed unless opened."""
    c = f' class="{cls}"' if cls else ""
    return f"<details{c}><summary>{summary}</summary>\n{body}</details>\n"


def _plural(n: int, word: str, words: str | None = None) -> str:
    return f"{fmt_int(n, grouped=True)} {word if n == 1 else (words or word + 's')}"


def _section_of(text: str) -> str:
    t = text.lower().replace("-", "_").replace(" ", "_")
    if t in _SECTION_KEYS:
        return t
    m = re.search(r"(?:fig(?:ure)?)_?(\d)", t)
    if m and m.group(1) in "23456":
        return {"2": "convergence", "3": "seeds", "4": "per_turn", "5": "rewards", "6": "scores"}[m.group(1)]
    for words, sec in (
        (("turn",), "per_turn"),
        (("conver",), "convergence"),
        (("reward",), "rewards"),
        (("seed",), "seeds"),
        (("corr", "mse", "heatmap", "score"), "scores"),
        (("table1", "performance", "learning", "tsr", "metric"), "performance"),
        (("disagree",), "disagreements"),
    ):
        if any(w in t for w in words):
            return sec
    return "other"


def _collect_figures(run: _Run) -> list[Figure]:
    """Figures listed in the manifest (in its order), then the other files of figures/ by name.

    One figure per stem: an SVG is preferred to a PNG of the same name.
    """
    fig_dir = run.dir / "figures"
    on_disk: dict[str, dict[str, Path]] = {}
    if fig_dir.is_dir():
        for p in sorted(fig_dir.iterdir()):
            if p.is_file() and p.suffix.lower() in (".svg", ".png"):
                on_disk.setdefault(p.stem, {})[p.suffix.lower()] = p
    figs: list[Figure] = []
    seen: set[str] = set()
    listed = run.manifest.get("figures") or []
    if not isinstance(listed, list):
        raise TableFormatError(f"{run.dir / 'manifest.json'}: 'figures' must be a list, got {type(listed).__name__}")
    for item in listed:
        if isinstance(item, str):
            item = {"file": item}
        if not isinstance(item, dict) or not isinstance(item.get("file"), str):
            raise TableFormatError(f"{run.dir / 'manifest.json'}: each entry of 'figures' needs a 'file', got {item!r}")
        rel = Path(item["file"])
        stem = rel.stem
        if stem in seen:
            continue
        seen.add(stem)
        title = str(item.get("title") or stem.replace("_", " "))
        section = _section_of(str(item.get("section") or stem))
        variants = on_disk.get(stem, {}) if rel.parent == Path("figures") else {}
        if not variants and (run.dir / rel).is_file() and rel.suffix.lower() in (".svg", ".png"):
            variants = {rel.suffix.lower(): run.dir / rel}
        figs.append(_load_figure(run, rel, variants, title, section))
    for stem, variants in on_disk.items():
        if stem not in seen:
            seen.add(stem)
            figs.append(_load_figure(run, Path("figures") / stem, variants, stem.replace("_", " "), _section_of(stem)))
    return figs


def _load_figure(run: _Run, rel: Path, variants: dict[str, Path], title: str, section: str) -> Figure:
    if not variants:
        return Figure(file=rel.as_posix(), title=title, section=section, problem="the file is missing")
    path = variants.get(".svg") or variants[".png"]
    return load_figure(path, path.relative_to(run.dir).as_posix(), title, section)


# ---------------------------------------------------------------------------------------- tables
def _milestones(values: Sequence[float], k: int = 4) -> list[float]:
    """About k checkpoints spread like the paper's (10k, 20k, 30k, 40k of 40k); all if few."""
    vals = sorted(set(values))
    if len(vals) <= k + 1:
        return vals
    top = vals[-1]
    picked = []
    for i in range(1, k + 1):
        target = top * i / k
        best = min(vals, key=lambda v: (abs(v - target), v))
        if best not in picked:
            picked.append(best)
    return picked


def _scenario(
    run: _Run,
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
    df = _sort(df, keys, run.rewards)
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
        return short + _fold(
            f"All {n_rows} rows, every checkpoint (<code>results/{escape(name)}</code>)",
            score_table(df, keys, table_id, caption),
        )
    return score_table(df, keys, table_id, caption)


def _other_policies(run: _Run) -> str:
    """The other policies' comparisons, with each side's self-agreement (asked more than once) and
    the contexts where the semantic scores do not apply (text-only answers)."""
    df = run.csv("policies.csv", scores=True, numeric=("self_agreement_a", "self_agreement_b"))
    if df is None or df.empty:
        return note("<code>results/policies.csv</code> has no rows.")
    keys = ["a", "b"]
    parts = []
    for side in ("a", "b"):
        col = f"self_agreement_{side}"
        if col in df.columns and df[col].notna().any():
            df[f"self-agreement {side}"] = ["" if math.isnan(v) else f"{v:.3f}" for v in df[col].astype(float)]
            keys.append(f"self-agreement {side}")
    na_cols = [c for c in df.columns if c.startswith("n_na_")]
    if na_cols:  # one count per row (every semantic score has the same), beside its means
        path = run.path("policies.csv")
        n_na = pd.concat([to_float(df[c], path, c) for c in na_cols], axis=1).max(axis=1)
        df["semantic n/a"] = [fmt_int(k) for k in n_na]
        keys.append("semantic n/a")
        for a, b, k, n in zip(df["a"], df["b"], n_na, df["n"]):
            if k > 0:
                parts.append(f"{escape(a)} vs {escape(b)}: {fmt_int(k)} of {fmt_int(n)} contexts")
    caption = (
        "Each other policy against the last checkpoint of every trial, the handcrafted policy and the other "
        "policies, on the collected contexts C<sub>col</sub><sup>all</sup> — mean per-context similarity with "
        "its 95% bootstrap interval; self-agreement: the TMR of a policy with itself over its repeated answers "
        "(<code>repeat</code> in the config; empty: asked once)"
        + (
            "; semantic n/a: the contexts where the semantic scores do not apply (a text-only answer)"
            if na_cols
            else ""
        )
        + "."
    )
    out = score_table(df, keys, "policies", caption)
    if parts:
        out += note(
            "Semantic scores not applicable (text-only answers, counted in <code>n_na_&lt;score&gt;</code>, "
            "not as failures): " + "; ".join(parts) + "."
        )
    return out


_SETTLED = 0.95  # a trial's behaviour has settled once TMR(k vs k−1) stays at or above this


def _settling(conv: pd.DataFrame, rewards: Sequence[str]) -> str:
    """When each trial's behaviour settles: the first checkpoint from which TMR(k vs k−1) on the
    collected contexts of its reward stays >= _SETTLED."""
    own = conv[conv["context_set"].astype(str) == "ccol-" + conv["reward"].astype(str)]
    if own.empty:
        own = conv
    settled, not_yet = [], []
    rows = _sort(own, ["reward", "seed", "checkpoint"], rewards)
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
    for cset, g in _sort(last, ["context_set"], rewards).groupby("context_set", sort=False):
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


def _reward_answer(run: _Run) -> str:
    data = run.json("tests.json")
    if not isinstance(data, list):
        return ""
    path = run.path("tests.json")
    by_unit = {t.get("unit"): t for t in data if isinstance(t, dict) and t.get("score") == "TMR" and "unit" in t}
    t = by_unit.get("trials")
    if t is None:
        return ""
    for k in ("name", "score", "mean_x", "mean_y", "p_value"):
        if k not in t:
            raise TableFormatError(f"{path}: a test over trials has no {k!r}")
    p = t["p_value"]
    verdict = "significant at the 5% level" if p < 0.05 else "not significant at the 5% level"
    out = f"<li><b>Reward vs seed, over trials.</b> {_test_sentence(t, path, 0)} The difference is {verdict}."
    out += _limit_sentence(t, path, 0)
    c = by_unit.get("contexts")
    if c is not None and isinstance(c.get("p_value"), (int, float)):
        out += (
            f' Over contexts (conditional on these trials) p = <span class="v">{_fmt_p(c["p_value"])}</span>: '
            "how surely these very trials differ, not whether other seeds would."
        )
    return out + "</li>"


def _answers(run: _Run) -> str:
    """The answers first: a few sentences written from the numbers of the sections below."""
    items = []
    conv = run.csv("convergence.csv", scores=True)
    if conv is not None and not conv.empty and "TMR" in conv.columns:
        items.append(_settling(conv, run.rewards))
    seeds = run.csv("seeds.csv", scores=True)
    if seeds is not None and not seeds.empty:
        items.append(_seed_answer(seeds, run.rewards))
    items.append(_reward_answer(run))
    items = [i for i in items if i]
    if not items:
        return note("No convergence, seed or test results in this run to answer from.")
    return '<ul class="tests">\n' + "\n".join(items) + "\n</ul>\n"


def _table1(run: _Run) -> str:
    df = run.csv("table1.csv")
    out = ""
    if df is None:
        out += note("No <code>results/table1.csv</code> in this run.")
    elif df.empty:
        out += note("<code>results/table1.csv</code> has no rows.")
    else:
        if df.duplicated(["dialogues", "reward"]).any():
            raise TableFormatError(f"{run.path('table1.csv')}: more than one row for a (dialogues, reward) pair")
        rewards = list(dict.fromkeys(_sort(df, ["reward"], run.rewards)["reward"]))  # the paper's order
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
    m = run.csv("metrics.csv", numeric=())
    if m is not None and not m.empty:
        cols = [
            c for c in ("policy", "reward", "seed", "dialogues", "tsr", "aiq", "adl", "mean_reward") if c in m.columns
        ]
        m = _sort(m, ["reward", "seed", "dialogues"], run.rewards)
        out += _fold(
            f"Per trial and checkpoint ({len(m)} rows, <code>results/metrics.csv</code>)",
            plain_table(
                m, cols, "metrics", "Evaluation of every trial at every checkpoint.", int_cols=("seed", "dialogues")
            ),
        )
    return out


def _per_turn(run: _Run) -> str:
    df = run.csv("per_turn.csv", numeric=list_scores())
    if df is None:
        return note("No <code>results/per_turn.csv</code> in this run.")
    scores = [s for s in list_scores() if s in df.columns]
    if df.empty or not scores:
        return note("<code>results/per_turn.csv</code> has no rows or no score columns.")
    turns = sorted(set(df["turn"].dropna()))
    keys = ["context_set", "reward", "pair"]
    groups = _sort(df[keys].drop_duplicates(), keys, run.rewards).to_dict("records")
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
    return _fold(f"The table: {len(rows)} rows by {len(turns)} turns (<code>results/per_turn.csv</code>)", table)


def _heatmap(run: _Run, name: str, kind: str, title: str) -> str:
    df = run.csv(name, required=("score",))
    if df is None:
        return f'<div class="heat">{note(f"No <code>results/{name}</code> in this run.")}</div>'
    labels = list(df["score"])
    cols = [c for c in df.columns if c != "score"]
    if cols != labels:
        raise TableFormatError(
            f"{run.path(name)}: not a square score matrix: rows {', '.join(labels)} but columns {', '.join(cols)}"
        )
    for c in cols:
        df[c] = to_float(df[c], run.path(name), c)
    matrix = df.set_index("score")[cols]
    return heatmap_table(matrix, kind, name.removesuffix(".csv"), title, f"<code>results/{name}</code>")


def _fmt_p(p: Any) -> str:
    if not isinstance(p, (int, float)) or not math.isfinite(p):
        return "n/a"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def _interval(t: dict, key: str) -> str:
    ci = t.get(key)
    if isinstance(ci, list) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci):
        return f', 95% interval <span class="v">{fmt_num(ci[0])}</span>–<span class="v">{fmt_num(ci[1])}</span>'
    return ""


def _test_sentence(t: dict, path: Path, i: int) -> str:
    """The test in words: over trials (``"unit": "trials"``), over contexts, or as older runs wrote it."""
    name, score = str(t["name"]), str(t["score"])
    mx, my, p = t["mean_x"], t["mean_y"], t["p_value"]
    diff = t.get("diff", None)
    if diff is None and mx is not None and my is not None:
        diff = mx - my
    unit = t.get("unit")
    if unit not in (None, "trials", "contexts"):
        raise TableFormatError(f"{path}: entry {i}: 'unit' must be 'trials' or 'contexts', got {unit!r}")
    where = f" on <b>{escape(t['context_set'])}</b>" if t.get("context_set") not in (None, "") else ""
    count = t.get("n") if isinstance(t.get("n"), (int, float)) else None
    if unit == "trials":
        how = "exact" if t.get("exact") else "sampled"
        test = f'permutation test over trials ({how}) p = <span class="v">{_fmt_p(p)}</span>'
        n = f", {fmt_int(count)} trials" if count is not None else ""
    elif unit == "contexts":
        test = f'paired permutation test over contexts p = <span class="v">{_fmt_p(p)}</span>'
        n = f", {fmt_int(count)} contexts (conditional on these trials)" if count is not None else ""
    else:
        test = f'paired permutation test p = <span class="v">{_fmt_p(p)}</span>'
        n = f", n = {fmt_int(count)}" if count is not None else ""
    m = re.fullmatch(r"\s*(.+?)\s+vs\.?\s+(.+?)\s*", name)
    if m:
        x, y = m.group(1), m.group(2)
        return (
            f"Switching the <b>{escape(x)}</b> changes <b>{escape(score)}</b> by "
            f'<span class="v">{fmt_num(1 - mx)}</span> (mean {escape(score)} <span class="v">{fmt_num(mx)}</span>'
            f"{_interval(t, 'mean_x_ci')}) "
            f'vs switching the <b>{escape(y)}</b> by <span class="v">{fmt_num(1 - my)}</span> '
            f'(mean {escape(score)} <span class="v">{fmt_num(my)}</span>{_interval(t, "mean_y_ci")}){where}: '
            f'difference <span class="v">{fmt_num(diff)}</span>, {test}{n}.'
        )
    return (
        f'<b>{escape(name)}</b> ({escape(score)}{where}): mean <span class="v">{fmt_num(mx)}</span> vs '
        f'<span class="v">{fmt_num(my)}</span>, difference <span class="v">{fmt_num(diff)}</span>, {test}{n}.'
    )


def _limit_sentence(t: dict, path: Path, i: int) -> str:
    """What the design can show: the smallest reachable p-value and, when it is above 0.05, the
    trials per group that could reach it."""
    min_p = t.get("min_p")
    if min_p is None:
        return ""
    if isinstance(min_p, bool) or not isinstance(min_p, (int, float)):
        raise TableFormatError(f"{path}: entry {i}: 'min_p' must be a number, got {min_p!r}")
    alpha = t.get("alpha", 0.05)
    if min_p <= alpha:
        if t.get("unit") != "trials":
            return ""
        return f' The smallest p-value this design can reach is <span class="v">{_fmt_p(min_p)}</span>.'
    need = t.get("trials_per_group_needed")
    factor = re.split(r"\s+vs\.?\s+", str(t["name"]))[0]
    more = ""
    if isinstance(need, int) and not isinstance(need, bool) and need >= 2:
        d = distinct_relabelings(need, need)
        more = (
            f" {fmt_int(need)} seeds per {escape(factor)} could ({fmt_int(need)} + {fmt_int(need)} trials: "
            f"{fmt_int(d)} distinct splits, smallest p {_fmt_p(1 / d)})."
        )
    return (
        f" <b>This design cannot reach p &lt; {_fmt_p(alpha)}:</b> its smallest p-value is "
        f'<span class="v">{_fmt_p(min_p)}</span>, whatever the data.{more}'
    )


def _tests(run: _Run) -> str:
    path = run.path("tests.json")
    data = run.json("tests.json")
    if data is None:
        return note("No <code>results/tests.json</code> in this run (no permutation tests).")
    if not isinstance(data, list):
        raise TableFormatError(f"{path}: expected a JSON list of tests, got {type(data).__name__}")
    if not data:
        return note("<code>results/tests.json</code> lists no tests.")
    items = []
    for i, t in enumerate(data):
        if not isinstance(t, dict):
            raise TableFormatError(f"{path}: entry {i} is not an object")
        for k in ("name", "score", "mean_x", "mean_y", "p_value"):
            if k not in t:
                raise TableFormatError(f"{path}: entry {i} has no {k!r}")
        for k in ("mean_x", "mean_y", "diff", "p_value", "n"):
            v = t.get(k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise TableFormatError(f"{path}: entry {i}: {k!r} must be a number, got {v!r}")
        sentence = _test_sentence(t, path, i)
        p = t["p_value"]
        if isinstance(p, (int, float)) and math.isfinite(p):
            sentence += " Significant at the 5% level." if p < 0.05 else " Not significant at the 5% level."
        sentence += _limit_sentence(t, path, i)
        desc = f'<br><span class="desc">{escape(t["description"])}</span>' if t.get("description") else ""
        items.append(f'<li class="test">{sentence}{desc}</li>')
    return (
        "<p>Change = 1 − mean similarity of the pairs that differ in that factor only. A test over "
        "<b>trials</b> treats the training runs as the units (it permutes the group labels of the trials, "
        "each pair averaged over the contexts): it speaks of the rewards, and its p-value cannot go below "
        "1 / the number of distinct splits of the trials. A test over <b>contexts</b> treats the contexts as "
        "the units: it says how surely these very trials differ, not whether other seeds would.</p>\n"
        '<ul class="tests">\n' + "\n".join(items) + "\n</ul>\n"
    )


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


def _slices(run: _Run) -> str:
    """Per group of pairs (the seed pairs of each reward and the TS-vs-IQ pairs, last checkpoint),
    the slices with the lowest TMR: scores pooled over the group's pairs, weighted by each pair's n."""
    df = run.csv("slices.csv", numeric=["n", *list_scores(), *[f"n_{s}" for s in list_scores()]])
    if df is None:
        return note("No <code>results/slices.csv</code> in this run.")
    scores = [s for s in ("TMR", "DMR", "CMR") if s in df.columns]
    if df.empty or not scores:
        return note("<code>results/slices.csv</code> has no rows or no act scores.")
    if "reward" not in df.columns:
        df["reward"] = ""
    rows, sentences = [], []
    keys = ["kind", "context_set", "reward"]
    df = _sort(df, keys, run.rewards)
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
        + _fold(f"The {len(out)} slices, with every act score", table)
    )


_DIS_TOP = 10  # answer pairs shown per comparison kind; the others one click away
_DIS_CONTEXTS = 3  # belief states listed per answer pair; the others folded


def _dis_kind(comparison: str) -> tuple[str, str]:
    """(kind, context set) of a comparison written ``kind/context_set/a vs b``; an older run's
    comparison (no ``/``) is a kind of its own."""
    parts = comparison.split("/", 2)
    return (parts[0], parts[1]) if len(parts) == 3 else (comparison, "")


def _dis_label(run: _Run, kind: str, cset: str) -> str:
    words = {
        "seeds": "seed pairs",
        "rewards": " vs ".join(r.upper() for r in run.rewards) + " pairs",
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
        ctx += _fold(
            f"{_plural(len(items) - _DIS_CONTEXTS, 'more belief state')}",
            "<ul>" + "\n".join(items[_DIS_CONTEXTS:]) + "</ul>",
        )
    more = (
        f'<br><span class="desc">(+{_plural(r["wordings"] - 1, "other wording")})</span>' if r["wordings"] > 1 else ""
    )
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


def _disagreements(run: _Run) -> str:
    """One table per comparison kind (seed pairs on each context set, TS vs IQ pairs), chosen with
    radio buttons (CSS alone; without ``:has`` every table is shown, one after the other): the
    answer pairs of the most-disagreeing contexts of every compared pair, deduplicated, with how
    often each occurs and on which distinct belief states."""
    df = run.csv("disagreements.csv", scores=True)
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
        _sort(df, ["kind", "context_set", "comparison", "rank"], run.rewards).groupby(
            ["kind", "context_set"], sort=False
        )
    )
    radios, panels, rules = [], [], []
    for k, ((kind, cset), g) in enumerate(groups):
        label = _dis_label(run, str(kind), str(cset))
        pairs = _answer_pairs(g, scores)
        n_cmp = g["comparison"].nunique()
        n_ctx = len({str(x).strip() for x in g["summary"]})
        radios.append(
            f'<label><input type="radio" name="dis-kind" id="dis-kind-{k}"{" checked" if k == 0 else ""}> '
            f"{escape(label)} ({_plural(len(pairs), 'answer pair')})</label>"
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
            f"<p>{_plural(len(g), 'row')} of <code>results/disagreements.csv</code> ({_plural(n_cmp, 'compared pair')}, "
            f"the contexts where each disagrees most) hold {_plural(len(pairs), 'distinct answer pair')} "
            f"on {_plural(n_ctx, 'distinct belief state')}.</p>\n"
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


def _values(v: Any) -> str:
    """A metadata value in words: lists joined by commas, objects as ``key value`` pairs."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return ", ".join(_values(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k} {_values(x)}" for k, x in v.items())
    return str(v)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _describe_set(meta: Any) -> str:
    """A context set's builder metadata as a sentence (HTML); keys it does not know are listed."""
    if not isinstance(meta, dict) or not meta:
        return "—"
    m = dict(meta)
    builder = m.pop("builder", None) or m.get("origin")
    m.pop("origin", None)
    m.pop("size", None)
    dom = ""
    if "domain" in m:
        extra = [str(m.pop(k)) for k in ("domain_rules",) if k in m]
        if "domain_venues" in m:
            extra.append(f"{_values(m.pop('domain_venues'))} venues")
        dom = f"{escape(m.pop('domain'))} domain" + (f" ({escape(', '.join(extra))})" if extra else "")
    if builder == "collected":
        n, seed = m.pop("dialogues", None), m.pop("seed", None)
        m.pop("dialogue_seeds", None)  # how the dialogue seeds derive from the seed: in the set's file
        text = "Collected: the belief state at every system turn of "
        text += f"{escape(_values(n))} evaluation dialogues" if n is not None else "evaluation dialogues"
        text += " per collecting policy" + (f" (seed {escape(_values(seed))})" if seed is not None else "")
        if "dedupe" in m:
            removed = m.pop("duplicates_removed", 0)
            text += f"; duplicates removed: {escape(_values(removed))}" if m.pop("dedupe") else "; duplicates kept"
    elif builder == "generated":
        slots = m.pop("slots", None)
        levels = m.pop("levels", None)
        step = m.pop("step", None)
        method = m.pop("method", None)
        m.pop("order", None)
        text = "Generated grid: the probability of the top value of "
        text += escape(_values(slots)) if slots else "each slot"
        text += f" and of the method {escape(_values(method))}" if method else ""
        if levels:
            text += f" at the levels {escape(_values(levels))}"
            if slots:
                text += f" ({len(levels)}<sup>{len(slots) + (1 if method else 0)}</sup> combinations)"
        elif step is not None:
            text += f" in steps of {escape(_values(step))}"
        values = m.pop("values", None)
        how = m.pop("value_choice", None)
        if values:
            text += f"; values: {escape(_values(values))}" + (f" ({escape(how)})" if how else "")
    elif builder == "union" or "description" in m:
        text = escape(_sentence(str(m.pop("description", "union of sets"))))
    else:
        text = escape(_sentence(str(builder))) if builder else ""
    parts = [text] if text else []
    if dom:
        parts.append(dom)
    parts += [f"{escape(k.replace('_', ' '))}: {escape(_values(v))}" for k, v in m.items()]
    return "; ".join(parts) + "."


def _header(run: _Run) -> str:
    m = run.manifest
    wall = m.get("wall_seconds")
    if isinstance(wall, (int, float)) and not isinstance(wall, bool) and math.isfinite(wall):
        h, rem = divmod(int(round(wall)), 3600)
        wall_txt = f"{wall:.1f} s ({h}:{rem // 60:02d}:{rem % 60:02d})"
    else:
        wall_txt = "—"
    rows = [
        ("config", m.get("config_name", "—")),
        ("code version", m.get("code_version", "—")),
        ("created", m.get("created", "—")),
        ("wall time", wall_txt),
    ]
    out = '<dl class="meta">' + "".join(f"<dt>{k}</dt><dd>{escape(v)}</dd>" for k, v in rows) + "</dl>\n"
    sets = m.get("context_sets") or {}
    if isinstance(sets, dict) and sets:
        trs = []
        for name in sorted(sets, key=lambda n: _rank_set(run.rewards, n)):
            info = sets[name] if isinstance(sets[name], dict) else {}
            trs.append(
                f'<tr><td class="name">{escape(name)}</td><td class="num">{escape(info.get("size", "—"))}</td>'
                f'<td class="meta-text">{_describe_set(info.get("meta"))}</td>'
                f'<td><code class="fp">{escape(info.get("fingerprint", "—"))}</code></td></tr>'
            )
        raw = json.dumps(
            {n: (i.get("meta", {}) if isinstance(i, dict) else i) for n, i in sets.items()},
            indent=1,
            ensure_ascii=False,
            sort_keys=True,
        )
        out += (
            '<div class="wrap"><table class="data" id="context_sets"><caption>Context sets</caption><thead><tr>'
            '<th>name</th><th class="num">contexts</th><th>what</th><th>fingerprint</th></tr></thead><tbody>\n'
            + "\n".join(trs)
            + "\n</tbody></table></div>\n"
            + _fold(
                "The builders' metadata as recorded (<code>manifest.json</code>)",
                f'<pre class="config">{escape(raw)}</pre>\n',
            )
        )
    if run.absent:
        out += (
            "<p><b>Not in this run:</b> "
            + "; ".join(f"{escape(title)} ({why})" for title, why in run.absent)
            + ".</p>\n"
        )
    return out


def _signatures(run: _Run) -> str | None:
    sig = run.manifest.get("signatures") or {}
    if not isinstance(sig, dict) or not sig:
        run.absent.append(("Score signatures", "the manifest records none"))
        return None
    rows = "".join(f"<tr><th>{escape(k)}</th><td><code>{escape(v)}</code></td></tr>" for k, v in sig.items())
    return _fold(
        f"{_plural(len(sig), 'score signature')}: everything that changes a score's value",
        '<div class="wrap"><table class="data" id="signatures-table"><thead><tr><th>score</th><th>signature '
        "(everything that changes its value)</th></tr></thead><tbody>" + rows + "</tbody></table></div>\n",
    )


def _robustness(run: _Run) -> str | None:
    """The robustness probe's table (the study's optional ``robustness`` levels); None without one."""
    path = run.dir / "robustness" / "robustness.csv"
    if not path.exists():
        return None
    df = run.csv(
        "../robustness/robustness.csv", required=("policy", "noise"), numeric=("noise", "changed"), scores=True
    )
    assert df is not None
    cols = [c for c in ("policy", "noise", "changed", "TMR", "DMR", "CER", "CMR") if c in df.columns]
    return (
        "<p>Each policy's answer on a context against its own answer on the same context with a perturbed "
        "belief (value swaps, N-best confusions and jitter at the given rate; <code>contexts perturb</code>). "
        "TMR = 1 at noise 0 by construction.</p>\n"
        + plain_table(
            df,
            cols,
            "robustness",
            "Each policy against itself on C<sub>gen</sub> with noisier beliefs (<code>robustness/robustness.csv</code>).",
            int_cols=("changed",),
            text_cols=("policy",),
        )
    )


def _map_note(run: _Run) -> str | None:
    """How to read the behaviour map; None when the run has none."""
    if not (run.dir / "map" / "map.csv").exists():
        return None
    return (
        "<p>Each point is a policy; the distance between two points approximates 1 − TMR of the pair on "
        "C<sub>gen</sub> (classical MDS). A trial's checkpoints are joined in training order: a path that "
        "settles is a behaviour that converged, and where the seeds' end points lie shows how alike the "
        "trials became. Coordinates: <code>map/map.csv</code>; distances: <code>map/distances.csv</code>.</p>\n"
    )


def _config(run: _Run) -> str | None:
    cfg = run.manifest.get("config", None)
    if cfg is None:
        run.absent.append(("Full configuration", "the manifest records none"))
        return None
    text = json.dumps(cfg, indent=2, ensure_ascii=False)
    return _fold(
        "The configuration as JSON (<code>manifest.json</code>)", f'<pre class="config">{escape(text)}</pre>\n'
    )


_MATRICES = (
    ("score_corr.csv", "corr", "Pearson correlation, all compared contexts"),
    ("score_mse.csv", "mse", "Mean squared error, all compared contexts"),
    ("score_corr_mismatch.csv", "corr", "Pearson correlation, contexts whose acts differ"),
    ("score_mse_mismatch.csv", "mse", "Mean squared error, contexts whose acts differ"),
)


def _scores_section(run: _Run) -> str | None:
    """Figure 6 as coloured tables (one form: the figures of the same matrices are not embedded);
    all compared contexts shown, the contexts whose acts differ one click away."""
    present = [m for m in _MATRICES if run.path(m[0]).is_file()]
    if not present:
        return None
    first = "".join(_heatmap(run, *m) for m in _MATRICES[:2])
    second = "".join(_heatmap(run, *m) for m in _MATRICES[2:])
    return (
        "<p>How the eight scores agree over every compared (pair, context) of the study: Pearson "
        "correlation (blue −1 · white 0 · red +1) and mean squared error (white 0 · purple: the largest).</p>\n"
        f'<div class="heatmaps">{first}</div>\n'
        + _fold("The same on the contexts whose acts differ only", f'<div class="heatmaps">{second}</div>\n')
    )


def _figures(figs: Sequence[Figure], rewards: Sequence[str] = ()) -> str:
    """One figure shown — the first listed that names the paper's first reward (e.g. ``per_turn_ts``,
    or an older run's ``convergence_ccol-ts``), else the first listed; the others one click away."""
    if not figs:
        return ""
    first = rewards[0] if rewards else None
    main = next((f for f in figs if first in re.split(r"[-_ ]", Path(f.file).stem)), figs[0])
    out = figures_html([main])
    rest = [f for f in figs if f is not main]
    if rest:
        names = "; ".join(escape(f.title) for f in rest)
        out += _fold(f"{_plural(len(rest), 'more figure')}: {names}", figures_html(rest), "more-figures")
    return out


# the section's inputs: files of the run folder (any present: the section is written) and what to say without
_INPUTS: dict[str, tuple[tuple[str, ...], str]] = {
    "performance": (("results/table1.csv", "results/metrics.csv"), "no results/table1.csv"),
    "convergence": (("results/convergence.csv",), "no results/convergence.csv"),
    "seeds": (("results/seeds.csv",), "no results/seeds.csv"),
    "per_turn": (("results/per_turn.csv",), "no results/per_turn.csv"),
    "rewards": (("results/rewards.csv",), "no results/rewards.csv: a run with one reward"),
    "policies": (
        ("results/policies.csv",),
        'set <code>policies = ["hf:DIR", "openai:MODEL@URL", …]</code> in the config',
    ),
    "e2e": (("results/e2e.csv",), 'set <code>e2e_teachers = ["handcrafted", "gp"]</code> in the config'),
    "scores": (tuple(f"results/{m[0]}" for m in _MATRICES), "no results/score_corr.csv"),
    "map": (("map/map.csv",), "no map/map.csv"),
    "robustness": (
        ("robustness/robustness.csv",),
        "set <code>robustness = [0, 0.05, 0.15, 0.3]</code> in the config",
    ),
    "tests": (("results/tests.json",), "no results/tests.json"),
    "slices": (("results/slices.csv",), "no results/slices.csv"),
    "disagreements": (("results/disagreements.csv",), "no results/disagreements.csv"),
}


def _render(run: _Run) -> str:
    figs = _collect_figures(run)
    by_sec: dict[str, list[Figure]] = {}
    shown_matrices = {Path(m[0]).stem for m in _MATRICES if run.path(m[0]).is_file()}
    for f in figs:
        if f.section == "scores" and Path(f.file).stem in shown_matrices:
            continue  # the matrices are shown once, as tables
        by_sec.setdefault(f.section, []).append(f)

    def section(sec: str, body: Any) -> str | None:
        """The section's figures first, its tables below; None when the run has nothing for it."""
        fs = by_sec.get(sec, [])
        inputs, why = _INPUTS.get(sec, ((), ""))
        has_input = any((run.dir / name).is_file() for name in inputs)
        if not fs and not has_input:
            title = dict(SECTIONS)[sec]
            run.absent.append((title.split(":")[0].split(" (")[0], why))
            return None
        text = body() if callable(body) else body
        return _figures(fs, run.rewards) + (text or "")

    sc = lambda name: run.csv(name, scores=True)  # noqa: E731
    bodies: dict[str, str | None] = {
        "answers": _answers(run),
        "performance": section("performance", lambda: _table1(run)),
        "convergence": section(
            "convergence",
            lambda: _scenario(
                run,
                sc("convergence.csv"),
                "convergence.csv",
                ["context_set", "reward", "seed", "checkpoint"],
                "convergence",
                "convergence of each trial (checkpoint k vs k−1)",
                per=["context_set", "reward", "seed"],
            ),
        ),
        "seeds": section(
            "seeds",
            lambda: _scenario(
                run,
                sc("seeds.csv"),
                "seeds.csv",
                ["context_set", "reward", "pair", "checkpoint"],
                "seeds",
                "seed comparisons (trials of one reward at the same checkpoint)",
                per=["context_set", "reward", "pair"],
            ),
        ),
        "per_turn": section("per_turn", lambda: _per_turn(run)),
        "rewards": section(
            "rewards",
            lambda: _scenario(
                run,
                sc("rewards.csv"),
                "rewards.csv",
                ["context_set", "pair"],
                "rewards",
                "reward comparisons (a trial of one reward vs a trial of the other, last checkpoint)",
            ),
        ),
        "policies": section("policies", lambda: _other_policies(run)),
        "e2e": section("e2e", lambda: e2e_section(run.dir / "results")),
        "scores": section("scores", lambda: _scores_section(run) or ""),
        "map": section("map", lambda: _map_note(run) or ""),
        "robustness": section("robustness", lambda: _robustness(run) or ""),
        "tests": section("tests", lambda: _tests(run)),
        "slices": section("slices", lambda: _slices(run)),
        "disagreements": section("disagreements", lambda: _disagreements(run)),
        "other": _figures(by_sec["other"], run.rewards) if by_sec.get("other") else None,
        "signatures": _signatures(run),
        "config": _config(run),
    }
    bodies["run"] = _header(run)  # last: it names the sections left out
    name = run.manifest.get("config_name", run.dir.name)
    sections = [(key, title, bodies[key]) for key, title in SECTIONS if bodies[key] is not None]
    return page(
        f"behavsim report — {name}",
        [(k, t, b) for k, t, b in sections if b is not None],
        "Written by <code>behavsim report</code> from the run directory's files only; self-contained (no network).",
    )


def build_report(run_dir: str | os.PathLike, output: str | os.PathLike | None = None) -> Path:
    """Write the HTML report of the run in ``run_dir``; return its path.

    ``output`` defaults to ``RUN_DIR/report.html``. Raises :class:`~behavsim.ConfigError` when
    ``run_dir`` is not a run directory (no ``manifest.json``) and
    :class:`~behavsim.TableFormatError` when one of its files is damaged (the message names it).
    """
    run = _Run(Path(run_dir))
    text = _render(run)
    return write_html(text, Path(output) if output is not None else run.dir / "report.html")


# ------------------------------------------------------------------------------------------ CLI
def _cmd_report(args: argparse.Namespace) -> int:
    out = build_report(args.run_dir, args.output)
    print(out)
    return 0


def register_report(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``report RUN_DIR [-o report.html]`` to the ``behavsim`` command line."""
    p = subparsers.add_parser(
        "report",
        help="one self-contained HTML report of a study run",
        description="Write one self-contained HTML file (tables, figures, tests, "
        "signatures, config) from a run directory.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="the study's output folder (holds manifest.json)")
    p.add_argument("-o", "--output", metavar="FILE", help="HTML file to write (default: RUN_DIR/report.html)")
    p.set_defaults(func=_cmd_report)
    return p
