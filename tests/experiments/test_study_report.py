"""experiments.report: one self-contained HTML report of a study run directory.

A synthetic RUN_DIR in the study runner's layout is built here (CSVs with pandas, two small
matplotlib figures); the report's tables are parsed back with the stdlib HTML parser and compared
to the CSVs at 3 decimals, and the page is rendered in a real headless Chromium.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import behavsim
from experiments.report import build_report, register_report

SCORES = list(behavsim.DEFAULT_SCORES)
EVIL_PROMPT = 'what "price" range <script>alert("x")</script> & more?'
EVIL_ACT = "inform(name=\"a<b>c\",food='x')"
CHROMIUM = "/usr/bin/chromium"


# ------------------------------------------------------------------------------ the fixture run
def _scores(rng: np.random.Generator, n: int) -> dict:
    out = {}
    for s in SCORES:
        v = rng.uniform(0.2, 1.0, n)
        out[s] = v
        out[f"{s}_lo"] = np.clip(v - rng.uniform(0.01, 0.1, n), 0, 1)
        out[f"{s}_hi"] = np.clip(v + rng.uniform(0.01, 0.1, n), 0, 1)
    return out


def _figure(path_stem: Path, kind: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 2, 3], [0.5, 0.8, 0.9] if kind == "a" else [0.9, 0.7, 0.95], marker="o")
    ax.set_title(kind)
    fig.savefig(path_stem.with_suffix(".png"), dpi=40)
    fig.savefig(path_stem.with_suffix(".svg"), metadata={"Date": None})
    plt.close(fig)


def make_run(root: Path, *, rewards: bool = True) -> Path:
    rng = np.random.default_rng(5)
    run = root / "run"
    res = run / "results"
    figs = run / "figures"
    res.mkdir(parents=True)
    figs.mkdir()
    checkpoints = [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000]
    rws = ["iq", "ts"] if rewards else ["ts"]  # alphabetical in the CSVs; the config says ts first
    manifest = {
        "config_name": "quick",
        "config": {
            "dialogues": 8000,
            "seeds": [0, 1, 2],
            "note": "<b>bold?</b>",
            "rewards": ["ts", "iq"] if rewards else ["ts"],
        },
        "code_version": "behavsim 0.1.0 (git abc1234)",
        "created": "2026-11-22T00:00:00+00:00",
        "signatures": {s: f"{s}|v:0.1.0|x:<y>" for s in SCORES},
        "context_sets": {
            "cgen": {"fingerprint": "e" * 16, "size": 1296, "meta": {"step": 0.2}},
            "ccol-ts": {"fingerprint": "f" * 16, "size": 40, "meta": {"origin": "collected"}},
        },
        "wall_seconds": 3725.4,
        "figures": [
            {"file": "figures/convergence_tmr.svg", "title": "Convergence (TMR)", "section": "convergence"},
            {"file": "figures/per_turn.png", "title": "Per-turn TMR/DMR", "section": "per_turn"},
        ],
    }
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2))
    _figure(figs / "convergence_tmr", "a")
    _figure(figs / "per_turn", "b")

    pd.DataFrame(
        [
            {
                "dialogues": d,
                "reward": r,
                "n_seeds": 3,
                "tsr": rng.uniform(0.9, 1),
                "aiq": rng.uniform(3, 4),
                "adl": rng.uniform(4, 5),
            }
            for d in checkpoints
            for r in rws
        ]
    ).to_csv(res / "table1.csv", index=False)
    pd.DataFrame(
        [
            {
                "policy": f"{r}-{s}@{d}",
                "reward": r,
                "seed": s,
                "dialogues": d,
                "tsr": rng.uniform(0.9, 1),
                "aiq": rng.uniform(3, 4),
                "adl": rng.uniform(4, 5),
                "mean_reward": rng.uniform(10, 15),
            }
            for r in rws
            for s in range(3)
            for d in checkpoints
        ]
    ).to_csv(res / "metrics.csv", index=False)
    rows = [
        {
            "context_set": f"ccol-{r}",
            "reward": r,
            "seed": s,
            "checkpoint": d,
            "a": f"{r}-{s}@{d}",
            "b": f"{r}-{s}@{d - 1000}",
            "n": 40,
        }
        for r in rws
        for s in range(3)
        for d in checkpoints[1:]
    ]
    pd.concat([pd.DataFrame(rows), pd.DataFrame(_scores(rng, len(rows)))], axis=1).to_csv(
        res / "convergence.csv", index=False
    )
    rows = [
        {
            "context_set": cs,
            "reward": r,
            "checkpoint": d,
            "pair": f"{i} vs {j}",
            "a": f"{r}-{i}@{d}",
            "b": f"{r}-{j}@{d}",
            "n": 40,
        }
        for cs in ("ccol", "cgen")
        for r in rws
        for i, j in itertools.combinations(range(3), 2)
        for d in checkpoints
    ]
    df = pd.concat([pd.DataFrame(rows), pd.DataFrame(_scores(rng, len(rows)))], axis=1)
    df.loc[0, "BLEU4"] = np.nan  # a missing text score shows as n/a
    df.to_csv(res / "seeds.csv", index=False)
    if rewards:
        rows = [
            {"context_set": "ccol-all", "pair": f"{i} vs {j}", "a": f"ts-{i}@8000", "b": f"iq-{j}@8000", "n": 80}
            for i in range(3)
            for j in range(3)
        ]
        pd.concat([pd.DataFrame(rows), pd.DataFrame(_scores(rng, len(rows)))], axis=1).to_csv(
            res / "rewards.csv", index=False
        )
    pd.DataFrame(
        [
            {
                "context_set": "ccol-ts",
                "reward": "ts",
                "pair": p,
                "turn": t,
                "n": 10,
                "TMR": rng.uniform(0, 1),
                "DMR": rng.uniform(0, 1),
            }
            for p in ("0 vs 1", "0 vs 2")
            for t in range(1, 6)
        ]
    ).to_csv(res / "per_turn.csv", index=False)
    for name, lo, hi in (
        ("score_corr", -1, 1),
        ("score_mse", 0, 0.3),
        ("score_corr_mismatch", -1, 1),
        ("score_mse_mismatch", 0, 0.3),
    ):
        m = rng.uniform(lo, hi, (8, 8))
        m = (m + m.T) / 2
        np.fill_diagonal(m, 1.0 if "corr" in name else 0.0)
        d = pd.DataFrame(m, columns=SCORES)
        d.insert(0, "score", SCORES)
        d.to_csv(res / f"{name}.csv", index=False)
    tests = [
        {
            "name": "reward vs seed",
            "score": "TMR",
            "context_set": "ccol-all",
            "mean_x": 0.41,
            "mean_y": 0.52,
            "diff": -0.11,
            "p_value": 0.0312,
            "n": 80,
            "description": "TS-vs-IQ pairs against seed pairs <same ckpt>",
        },
        {
            "name": "DMR check",
            "score": "DMR",
            "context_set": "cgen",
            "mean_x": 0.8,
            "mean_y": 0.79,
            "diff": 0.01,
            "p_value": 0.6,
            "n": 1296,
            "description": "",
        },
    ]
    (res / "tests.json").write_text(json.dumps(tests))
    dis = [
        {
            "comparison": "ts-0@8000 vs iq-1@8000",
            "rank": k + 1,
            "context": "ccol-all",
            "context_id": f"c{k}",
            "summary": "area=centre 0.9; food=**NONE** 0.8",
            "turn": k + 1,
            "act_a": EVIL_ACT if k == 0 else "request(food)",
            "act_b": "request(pricerange)",
            "prompt_a": EVIL_PROMPT if k == 0 else "what food?",
            "prompt_b": "what price range?",
            **{s: float(rng.uniform(0, 1)) for s in SCORES},
        }
        for k in range(3)
    ]
    pd.DataFrame(dis).to_csv(res / "disagreements.csv", index=False)
    return run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def report(run_dir, tmp_path_factory) -> Path:
    return build_report(run_dir, tmp_path_factory.mktemp("out") / "report.html")


# --------------------------------------------------------------------------- parsing the HTML
class _Tables(HTMLParser):
    """Tables by id: rows of cells, each cell as (value text, CI text). Also collects attributes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[tuple[str, str]]]] = {}
        self.body_attrs: dict[str, str] = {}
        self.n_img = 0
        self.text: list[str] = []
        self._table = self._row = self._cell = None
        self._in_ci = 0
        self._span_depth = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body_attrs = {k: v or "" for k, v in attrs}
        elif tag == "img":
            self.n_img += 1
        elif tag == "table" and a.get("id"):
            self._table = self.tables.setdefault(a["id"], [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = [[], []]
        elif tag == "span" and self._cell is not None:
            self._span_depth += 1
            if a.get("class") == "ci":
                self._in_ci = self._span_depth

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = self._row = None
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(("".join(self._cell[0]).strip(), "".join(self._cell[1]).strip()))
            self._cell = None
        elif tag == "span" and self._cell is not None:
            if self._in_ci == self._span_depth:
                self._in_ci = 0
            self._span_depth -= 1

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell[1 if self._in_ci else 0].append(data)


def parse(text: str) -> _Tables:
    p = _Tables()
    p.feed(text)
    p.close()
    return p


def f3(v) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def _same(cell: str, value) -> bool:
    if cell == "n/a":
        return isinstance(value, float) and math.isnan(value)
    return abs(float(cell.replace(",", "")) - float(value)) <= 0.0005 + 1e-9 and cell == f3(value)


def check_score_table(rows, csv: Path, keys):
    """Every CSV row appears once, with its n, 8 scores and CIs at 3 decimals; nothing else."""
    df = pd.read_csv(csv)
    header = [c[0] for c in rows[0]]
    assert header == keys + ["n"] + SCORES
    body = rows[1:]
    assert len(body) == len(df)
    index = {}
    for r in body:
        index[tuple(c[0].replace(",", "") for c in r[: len(keys)])] = r
    assert len(index) == len(df)
    for rec in df.to_dict("records"):
        key = tuple(str(int(rec[k])) if isinstance(rec[k], (int, float, np.integer)) else str(rec[k]) for k in keys)
        r = index[key]
        assert r[len(keys)][0] == str(int(rec["n"]))
        for s, (v, ci) in zip(SCORES, r[len(keys) + 1 :]):
            assert _same(v, rec[s]), (key, s, v, rec[s])
            assert ci == f"[{f3(rec[s + '_lo'])}, {f3(rec[s + '_hi'])}]", (key, s, ci)


def check_tables(p: _Tables, run: Path) -> None:
    res = run / "results"
    # Table 1: pivot by dialogues x (metric, reward)
    t1 = pd.read_csv(res / "table1.csv")
    rows = p.tables["table1"]
    order = json.loads((run / "manifest.json").read_text()).get("config", {}).get("rewards", ["ts", "iq"])
    rewards = sorted(set(t1["reward"]), key=order.index)  # the paper's order, whatever the CSV's
    assert [c[0] for c in rows[1]] == rewards * 3
    body = rows[2:]
    assert len(body) == t1["dialogues"].nunique()
    for r in body:
        d = int(r[0][0].replace(",", ""))
        for mi, m in enumerate(("tsr", "aiq", "adl")):
            for ri, rw in enumerate(rewards):
                want = t1[(t1.dialogues == d) & (t1.reward == rw)][m].item()
                assert _same(r[1 + mi * len(rewards) + ri][0], want)
    check_score_table(p.tables["convergence"], res / "convergence.csv", ["context_set", "reward", "seed", "checkpoint"])
    check_score_table(p.tables["seeds"], res / "seeds.csv", ["context_set", "reward", "pair", "checkpoint"])
    if (res / "rewards.csv").exists():
        check_score_table(p.tables["rewards"], res / "rewards.csv", ["context_set", "pair"])
    # per turn: rows (context_set, reward, pair, score) x turns
    if not (res / "per_turn.csv").exists():
        assert "per_turn" not in p.tables
        return
    pt = pd.read_csv(res / "per_turn.csv")
    rows = p.tables["per_turn"]
    turns = [int(c[0]) for c in rows[0][4:]]
    assert turns == sorted(pt.turn.unique())
    assert len(rows) - 1 == len(pt.groupby(["context_set", "reward", "pair"])) * 2
    for r in rows[1:]:
        cset, reward, pair, score = r[0][0], r[1][0], r[2][0], r[3][0]
        for t, cell in zip(turns, r[4:]):
            sel = pt[(pt.context_set == cset) & (pt.reward == reward) & (pt.pair == pair) & (pt.turn == t)]
            if sel.empty:
                assert cell[0] in ("", "n/a", "–", "-"), cell
                continue
            assert _same(cell[0], sel[score].item())
    # heatmaps: 2 decimals for correlation, 3 for MSE
    for name in ("score_corr", "score_mse", "score_corr_mismatch", "score_mse_mismatch"):
        if not (res / f"{name}.csv").exists():
            continue
        m = pd.read_csv(res / f"{name}.csv").set_index("score")
        rows = p.tables[name]
        assert [c[0] for c in rows[0][1:]] == list(m.columns)
        for r in rows[1:]:
            for col, cell in zip(m.columns, r[1:]):
                digits = 2 if "corr" in name else 3
                want = m.loc[r[0][0], col]
                assert cell[0] == ("n/a" if math.isnan(want) else f"{want:.{digits}f}"), (name, r[0][0], col, cell)


# -------------------------------------------------------------------------------------- tests
def test_trial_level_tests_and_slices_in_words(tmp_path):
    run = make_run(tmp_path)
    res = run / "results"
    tests = [
        {
            "name": "reward vs seed",
            "unit": "trials",
            "score": "TMR",
            "context_set": "ccol-all",
            "mean_x": 0.5,
            "mean_y": 0.6,
            "mean_x_ci": [0.4, 0.62],
            "mean_y_ci": [0.5, 0.7],
            "diff": -0.1,
            "p_value": 0.1,
            "min_p": 0.1,
            "exact": True,
            "n": 6,
            "alpha": 0.05,
            "trials_per_group_needed": 4,
        },
        {
            "name": "reward vs seed",
            "unit": "contexts",
            "score": "TMR",
            "context_set": "ccol-all",
            "mean_x": 0.5,
            "mean_y": 0.6,
            "diff": -0.1,
            "p_value": 0.0001,
            "min_p": 0.0001,
            "n": 398,
        },
    ]
    (res / "tests.json").write_text(json.dumps(tests))
    rows = []
    for kind, reward, pair in (("rewards", "", "0 vs 1"), ("seeds", "ts", "0 vs 1")):
        for value, n, tmr in (("bye", 10, 0.1), ("request", 30, 0.5), ("hello", 2, 0.0)):
            rows.append(
                {
                    "kind": kind,
                    "context_set": "ccol-all",
                    "reward": reward,
                    "pair": pair,
                    "a": "x",
                    "b": "y",
                    "slice": "acttype",
                    "value": value,
                    "partition": True,
                    "n_contexts": n,
                    "n": n,
                    "TMR": tmr,
                    "DMR": 1.0,
                    "CMR": tmr,
                    "n_TMR": n,
                    "n_DMR": n,
                    "n_CMR": n,
                }
            )
    pd.DataFrame(rows).to_csv(res / "slices.csv", index=False)
    html = build_report(run, tmp_path / "r.html").read_text(encoding="utf-8")
    plain = " ".join("".join(parse(html).text).split())
    assert (
        "Switching the reward changes TMR by 0.500 (mean TMR 0.500, 95% interval 0.400–0.620) vs switching "
        "the seed by 0.400 (mean TMR 0.600, 95% interval 0.500–0.700) on ccol-all: difference -0.100, "
        "permutation test over trials (exact) p = 0.100, 6 trials. Not significant at the 5% level. This design "
        "cannot reach p < 0.050: its smallest p-value is 0.100, whatever the data. 4 seeds per reward could "
        "(4 + 4 trials: 35 distinct splits, smallest p 0.029)."
    ) in plain
    assert (
        "paired permutation test over contexts p = 1.0e-04, 398 contexts (conditional on these trials). "
        "Significant at the 5% level."
    ) in plain
    # the slice of two contexts is below the minimum (5) and left out
    assert (
        "The reward pairs (TS vs IQ) on ccol-all differ most where the first trial's act is bye: TMR 0.100 over "
        "10 contexts." in plain
    )
    assert [r[3][0] for r in parse(html).tables["slices"][1:]] == ["bye", "request", "bye", "request"]
    # the answers open the page, from the numbers: the test over trials and its limits
    assert html.index('<section id="answers">') < html.index('<section id="run">')
    answers = html[html.index('<section id="answers">') : html.index('<section id="run">')]
    words = " ".join("".join(parse(answers).text).split())
    assert "Reward vs seed, over trials. Switching the reward changes TMR by 0.500" in words
    assert "This design cannot reach p < 0.050: its smallest p-value is 0.100" in words
    assert "Over contexts (conditional on these trials) p = 1.0e-04" in words
    assert "At the last checkpoint (8,000 dialogues) the pairs of trials of one reward score on ccol TMR" in words


def test_answers_convergence_by_hand(tmp_path):
    run = make_run(tmp_path)
    rows = [
        {"context_set": "ccol-ts", "reward": "ts", "seed": s, "checkpoint": c, "a": "x", "b": "y", "n": 10, "TMR": t}
        for s, tmrs in ((0, (0.8, 0.96, 0.9, 0.97, 1.0)), (1, (0.99, 0.97, 0.95, 0.96, 0.9)))
        for c, t in zip((2000, 3000, 4000, 5000, 6000), tmrs)
    ]
    pd.DataFrame(rows).to_csv(run / "results" / "convergence.csv", index=False)
    html = build_report(run, tmp_path / "r.html").read_text(encoding="utf-8")
    words = " ".join("".join(parse(html).text).split())
    # seed 0 dips to 0.9 at 4,000 and stays >= 0.95 from 5,000; seed 1 ends below 0.95
    assert (
        "Settled (training dialogues): ts seed 0 from 5,000. Not settled by the last checkpoint: ts seed 1 "
        "(TMR 0.900)." in words
    )


def test_numbers_match_the_csvs(report, run_dir):
    p = parse(report.read_text(encoding="utf-8"))
    check_tables(p, run_dir)
    # the short tables hold the last checkpoint of each trial / pair, the folded full tables all of them
    summ = p.tables["convergence-summary"]
    assert len(summ) - 1 == 6 and {r[3][0] for r in summ[1:]} == {"8,000"}  # 2 rewards x 3 seeds
    assert len(p.tables["convergence"]) - 1 == 42
    assert len(p.tables["seeds-summary"]) - 1 == 2 * 2 * 3 and {r[3][0] for r in p.tables["seeds-summary"][1:]} == {
        "8,000"
    }
    conv = pd.read_csv(run_dir / "results" / "convergence.csv")
    last = conv[conv.checkpoint == 8000].set_index(["reward", "seed"])
    for r in summ[1:]:
        assert _same(r[5][0], last.loc[(r[1][0], int(r[2][0])), "TMR"])
    # folded: the full table sits in a <details> below the short one
    text = report.read_text(encoding="utf-8")
    full = text.index('<table class="data scores" id="convergence">')
    assert text.rindex("<details>", 0, full) > text.index('id="convergence-summary"')


def test_the_papers_order_ts_before_iq(report, run_dir):
    """The CSVs list iq first (alphabetically); the report's tables follow the config's rewards."""
    assert pd.read_csv(run_dir / "results" / "convergence.csv")["reward"].iloc[0] == "iq"
    p = parse(report.read_text(encoding="utf-8"))
    assert [c[0] for c in p.tables["table1"][1]] == ["ts", "iq"] * 3
    for table in ("convergence-summary", "convergence", "seeds-summary", "seeds", "metrics"):
        keys = [(r[0][0], r[1][0]) for r in p.tables[table][1:]]  # (context set or policy, reward)
        if table == "metrics":
            keys = [("", reward) for _, reward in keys]
        blocks = list(dict.fromkeys(keys))
        assert [r for _, r in blocks] == ["ts", "iq"] * (len(blocks) // 2), (table, blocks)
    sets = [r[0][0] for r in p.tables["context_sets"][1:]]
    assert sets == ["ccol-ts", "cgen"]  # C_col before C_gen whatever the manifest's order


def test_header_sections_and_words(report):
    text = report.read_text(encoding="utf-8")
    p = parse(text)
    plain = " ".join("".join(p.text).split())
    for s in ("quick", "behavsim 0.1.0 (git abc1234)", "2026-11-22T00:00:00+00:00", "3725.4 s (1:02:05)"):
        assert s in plain
    for anchor in (
        "performance",
        "convergence",
        "seeds",
        "per_turn",
        "rewards",
        "scores",
        "tests",
        "disagreements",
        "signatures",
        "config",
    ):
        assert f'<section id="{anchor}">' in text and f'href="#{anchor}"' in text
    assert (
        "Switching the reward changes TMR by 0.590 (mean TMR 0.410) vs switching the seed by 0.480 "
        "(mean TMR 0.520) on ccol-all: difference -0.110, paired permutation test p = 0.031, n = 80. "
        "Significant at the 5% level."
    ) in plain
    assert "DMR check (DMR on cgen): mean 0.800 vs 0.790" in plain and "Not significant" in plain
    assert "TMR|v:0.1.0|x:<y>" in plain  # signatures, as text
    assert '"note": "<b>bold?</b>"' in plain  # the full config, as text
    # the context sets and the most-disagreeing contexts
    assert "ccol-ts" in plain and "f" * 16 in plain
    assert "ts-0@8000 vs iq-1@8000" in plain and "area=centre 0.9; food=**NONE** 0.8" in plain
    assert "request(pricerange)" in plain and "what price range?" in plain


def test_self_contained_and_escaped(report):
    text = report.read_text(encoding="utf-8")
    assert "<script>alert" not in text and "<b>bold?</b>" not in text and "a<b>c" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text
    assert "inform(name=&quot;a&lt;b&gt;c&quot;,food=&#x27;x&#x27;)" in text
    plain = "".join(parse(text).text)
    assert EVIL_PROMPT in plain and EVIL_ACT in plain
    # one script (ours, allowed by hash in the CSP), nothing fetched from anywhere
    assert text.count("<script") == 1
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    for bad in ('src="http', "src='http", 'href="http', "<link", "@import", "url(", "<iframe"):
        assert bad not in text
    assert text.count('src="data:image/') == 2  # one figure per stem: SVG preferred to PNG
    assert text.count('src="data:image/svg+xml;base64,') == 2


def test_byte_identical_twice(run_dir, report, tmp_path):
    again = build_report(run_dir, tmp_path / "again.html")
    assert again.read_bytes() == report.read_bytes()


def test_default_output_and_cli_registration(run_dir, tmp_path, capsys):
    run = shutil.copytree(run_dir, tmp_path / "copy")
    parser = argparse.ArgumentParser(prog="behavsim")
    register_report(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", str(run)])
    assert args.func(args) == 0
    assert (run / "report.html").is_file()
    assert capsys.readouterr().out.strip() == str(run / "report.html")
    args = parser.parse_args(["report", str(run), "-o", str(tmp_path / "x" / "r.html")])
    assert args.func(args) == 0 and (tmp_path / "x" / "r.html").is_file()


def test_sections_only_where_the_run_has_content(tmp_path):
    """A section whose files are all absent is left out (and out of the contents); the Run section
    names what the run does not have. A section with some of its files says which one is missing."""
    run = make_run(tmp_path, rewards=False)
    for name in ("per_turn.csv", "score_mse_mismatch.csv", "tests.json", "disagreements.csv", "metrics.csv"):
        (run / "results" / name).unlink()
    (run / "figures" / "per_turn.png").unlink()
    (run / "figures" / "per_turn.svg").unlink()
    m = json.loads((run / "manifest.json").read_text())
    for k in ("signatures", "config", "wall_seconds", "context_sets"):
        del m[k]
    (run / "manifest.json").write_text(json.dumps(m))
    text = build_report(run).read_text(encoding="utf-8")
    plain = " ".join("".join(parse(text).text).split())
    for gone in ("rewards", "tests", "disagreements", "signatures", "config", "robustness", "map", "slices"):
        assert f'<section id="{gone}">' not in text and f'href="#{gone}"' not in text, gone
    assert (
        "Not in this run: Rewards (no results/rewards.csv: a run with one reward); Score analysis (" not in plain
    )  # the scores section has three of its four matrices
    for absent in (
        "Rewards (no results/rewards.csv: a run with one reward)",
        "Robustness (set robustness = [0, 0.05, 0.15, 0.3] in the config)",
        "Permutation tests (no results/tests.json)",
        "Where the policies disagree most (no results/disagreements.csv)",
        "Score signatures (the manifest records none)",
        "Full configuration (the manifest records none)",
    ):
        assert absent in plain, absent
    # present with a part missing: a note in place of that part
    for note in (
        "No results/per_turn.csv in this run",
        "No results/score_mse_mismatch.csv in this run",
        "Figure figures/per_turn.png could not be shown: the file is missing",
    ):
        assert note in plain, note
    check_tables(parse(text), run)  # what is there is still right
    # a header-only CSV is a note too
    (run / "results" / "seeds.csv").write_text("context_set,reward,checkpoint,pair,a,b,n,TMR,TMR_lo,TMR_hi\n")
    plain = " ".join("".join(parse(build_report(run).read_text()).text).split())
    assert "results/seeds.csv has no rows." in plain
    # a bare run: only the manifest; its answers and run sections, and what it lacks
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "manifest.json").write_text(json.dumps({"config_name": "empty"}))
    text = build_report(bare).read_text()
    assert re.findall(r'<section id="(\w+)">', text) == ["answers", "run"]
    plain = " ".join("".join(parse(text).text).split())
    assert "No convergence, seed or test results in this run to answer from." in plain
    assert "Absolute performance (no results/table1.csv); Convergence (no results/convergence.csv)" in plain


def test_bad_run_dirs_give_clear_errors(run_dir, tmp_path):
    with pytest.raises(behavsim.ConfigError, match="manifest.json is missing"):
        build_report(tmp_path)
    with pytest.raises(behavsim.ConfigError, match="does not exist"):
        build_report(tmp_path / "nope")

    counter = itertools.count()

    def broken(name: str, content: str) -> Path:
        run = shutil.copytree(run_dir, tmp_path / f"case{next(counter)}")
        (run / name).write_text(content)
        return run

    cases = [
        ("manifest.json", '{"config_name": "quick",', r"manifest\.json: damaged JSON"),
        ("manifest.json", "[1, 2]", r"manifest\.json: expected a JSON object"),
        ("results/tests.json", "{not json", r"tests\.json: damaged JSON"),
        ("results/tests.json", '[{"name": "x"}]', r"tests\.json: entry 0 has no 'score'"),
        (
            "results/tests.json",
            '[{"name": "x", "score": "TMR", "mean_x": 1, "mean_y": 1, "p_value": 1, "unit": "runs"}]',
            r"tests\.json: entry 0: 'unit' must be 'trials' or 'contexts', got 'runs'",
        ),
        (
            "results/tests.json",
            '[{"name": "x", "score": "TMR", "mean_x": 1, "mean_y": 1, "p_value": 1, "min_p": "a"}]',
            r"tests\.json: entry 0: 'min_p' must be a number, got 'a'",
        ),
        (
            "results/slices.csv",
            "kind,context_set,pair\nseeds,x,0 vs 1\n",
            r"slices\.csv: missing column\(s\) slice, value, n; found: kind, context_set, pair",
        ),
        (
            "results/slices.csv",
            "kind,context_set,pair,slice,value,n,TMR\nseeds,x,0 vs 1,acttype,bye,many,0.5\n",
            r"slices\.csv: column 'n', data row 1: expected a number, got 'many'",
        ),
        ("results/seeds.csv", 'context_set,reward\n"ccol,ts\n', r"seeds\.csv: (damaged CSV|missing column)"),
        ("results/seeds.csv", "", r"seeds\.csv: damaged CSV"),
        (
            "results/convergence.csv",
            "context_set,reward,seed\nx,ts,0\n",
            r"convergence\.csv: missing column\(s\) checkpoint, a, b, n; found: context_set, reward, seed",
        ),
        (
            "results/table1.csv",
            "dialogues,reward,n_seeds,tsr,aiq,adl\n1000,ts,3,high,3.8,4.4\n",
            r"table1\.csv: column 'tsr', data row 1: expected a number, got 'high'",
        ),
        ("results/score_corr.csv", "score,TMR,DMR\nTMR,1,0.5\n", r"score_corr\.csv: not a square score matrix"),
    ]
    for name, content, pattern in cases:
        with pytest.raises(behavsim.BehavsimError, match=pattern):
            build_report(broken(name, content))


@pytest.mark.parametrize(
    "path, section",
    [
        ("figures/learning_curves.svg", "performance"),
        ("figures/convergence.svg", "convergence"),
        ("figures/convergence_tmr.png", "convergence"),
        ("figures/seeds_ccol-all_ts.svg", "seeds"),
        ("figures/per_turn_iq.svg", "per_turn"),
        ("figures/rewards.svg", "rewards"),
        ("figures/score_mse_mismatch.svg", "scores"),
        ("map/dendrogram.svg", "map"),
        ("robustness/robustness_TMR.svg", "robustness"),
        ("figures/misc.png", "other"),
        ("figures/fig3.png", "other"),
    ],
)
def test_a_figure_goes_to_the_first_section_that_declares_it(path, section):
    """Each section declares its figures (globs of their paths); a figure no section claims goes to
    "Other figures"."""
    from experiments.report import report_sections

    assert [s.key for s in report_sections.ordered() if s.claims(path)][:1] == [section]


def test_unlisted_and_damaged_figures(run_dir, tmp_path):
    run = shutil.copytree(run_dir, tmp_path / "figs")
    shutil.copy(run / "figures" / "per_turn.png", run / "figures" / "score_extra.png")  # unlisted: by its name
    (run / "figures" / "seeds_broken.png").write_bytes(b"not a png")
    text = build_report(run).read_text(encoding="utf-8")
    scores = text[text.index('<section id="scores">') : text.index('<section id="tests">')]
    assert scores.count('src="data:image/png;base64,') == 1 and "figures/score_extra.png" in scores
    seeds = text[text.index('<section id="seeds">') : text.index('<section id="per_turn">')]
    assert "Figure figures/seeds_broken.png could not be shown: not a PNG file" in " ".join(
        "".join(parse(seeds).text).split()
    )


# ---------------------------------------------------------------------------- real browser
def _chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=cwd)
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90, cwd=cwd)


A4_POINTS = (595, 842)  # the PDF's page size, rounded to points


def print_pages(html: Path, tmp_path: Path) -> tuple[int, set[tuple[int, int]]]:
    """Print ``html`` with headless Chromium; (number of pages, page sizes in points)."""
    pdf = tmp_path / (html.stem + ".pdf")
    r = _chromium(f"--print-to-pdf={pdf}", "--no-pdf-header-footer", html.resolve().as_uri(), cwd=tmp_path)
    assert r.returncode == 0 and pdf.is_file(), r.stderr[-2000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    boxes = re.findall(rb"/MediaBox\s*\[\s*0\s+0\s+([0-9.]+)\s+([0-9.]+)\s*\]", data)
    return len(re.findall(rb"/Type\s*/Page[^s]", data)), {(round(float(w)), round(float(h))) for w, h in boxes}


def need_chromium() -> None:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing but CI is set: install it (apt-get install -y chromium)")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install -y chromium); set CI=true to make this a failure")


def test_renders_in_headless_chromium(report, run_dir, tmp_path):
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing but CI is set: install it (apt-get install -y chromium)")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install -y chromium); set CI=true to make this a failure")
    url = report.resolve().as_uri()
    r = _chromium("--dump-dom", url, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    dom = parse(r.stdout)
    assert dom.body_attrs.get("data-figures-loaded") == "2/2", (dom.body_attrs, r.stderr[-2000:])
    assert dom.n_img == 2
    check_tables(dom, run_dir)  # the browser shows the run's numbers
    assert EVIL_PROMPT in "".join(dom.text)  # escaped text stayed text (no script ran)

    shot = tmp_path / "report.png"
    r = _chromium(f"--screenshot={shot}", "--window-size=1280,1600", url, cwd=tmp_path)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)[..., :3]
    assert img.shape[0] >= 1000 and img.shape[1] >= 1200
    assert img.std() > 0.05  # not blank
    assert (img.min(axis=2) < 0.5).mean() > 0.005  # some dark text on the page

    # printed on A4 as shown: what is folded stays folded
    pages, sizes = print_pages(report, tmp_path)
    assert sizes == {A4_POINTS} and 2 <= pages <= 6, (pages, sizes)
    opened = tmp_path / "opened.html"  # every <details> opened: the same page prints longer
    opened.write_text(report.read_text(encoding="utf-8").replace("<details>", "<details open>"), encoding="utf-8")
    assert print_pages(opened, tmp_path)[0] > pages

    keep = os.environ.get("BEHAVSIM_REPORT_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)


def _dis_run(tmp_path: Path, run_dir: Path) -> Path:
    """A run whose disagreement lists repeat themselves as the study's do: the same belief state from
    several dialogues, the same answer pair on many contexts and in several compared pairs."""
    run = shutil.copytree(run_dir, tmp_path / "dis")
    base = {
        "TMR": 0.0,
        "DMR": 0.0,
        "CER": 0.2,
        "CMR": 0.1,
        "USE_cos": 0.3,
        "USE_ang": 0.6,
        "BLEU4": 0.0,
        "BERTScore": 0.5,
    }
    rows = []

    def add(comp, rank, summary, cid, turn, act_a, act_b, prompt_a="which area?", tmr=0.0):
        rows.append(
            {
                "comparison": comp,
                "rank": rank,
                "context": rank,
                "context_id": cid,
                "summary": summary,
                "turn": turn,
                "act_a": act_a,
                "act_b": act_b,
                "prompt_a": prompt_a,
                "prompt_b": "bye.",
                **base,
                "TMR": tmr,
            }
        )

    s01, s02 = "seeds/ccol-all/ts-seed0 vs ts-seed1", "seeds/ccol-all/ts-seed0 vs ts-seed2"
    rew = "rewards/ccol-all/ts-seed0 vs iq-seed0"
    add(rew, 1, "area=north:1.00", "d1/t2", 2, "request(food)", "bye()")  # written first: shown last
    add(s01, 1, "area=north:1.00", "d1/t2", 2, "request(area)", "bye()")
    add(s01, 2, "area=north:1.00", "d4/t2", 2, "request(area)", "bye()", tmr=0.4)  # same belief, another dialogue
    add(s01, 3, "area=south:1.00", "d2/t3", 3, "request(area)", "bye()")
    add(s02, 1, "area=north:1.00", "d1/t2", 2, "request(area)", "bye()", prompt_a="what part of town?")
    add(s02, 2, "food=thai:1.00", "d3/t5", 5, 'inform(food="thai")', "reqmore()")
    for k in range(11):  # eleven more answer pairs on the grid: the 10 most frequent are shown, one more on a click
        for j in range(12 - k):
            add(
                f"seeds/cgen/ts-seed0 vs ts-seed{1 + j % 2}",
                j + 1,
                f"area=centre:{j / 12:.2f} k{k}",
                f"gen:{k}:{j}",
                float("nan"),
                f"request(s{k})",
                "bye()",
            )
    pd.DataFrame(rows).to_csv(run / "results" / "disagreements.csv", index=False)
    return run


def test_disagreements_deduplicated_with_counts(tmp_path, run_dir):
    """One table per comparison kind, in the paper's order (seeds, then rewards); one row per answer
    pair with how often it occurs, in how many compared pairs and on which distinct belief states
    (each with its count and turns); the most frequent wording shown, the others counted."""
    html = build_report(_dis_run(tmp_path, run_dir), tmp_path / "r.html").read_text(encoding="utf-8")
    p = parse(html)
    words = " ".join("".join(p.text).split())
    assert (
        "Comparison: seed pairs on ccol-all (2 answer pairs) seed pairs on cgen (11 answer pairs) TS vs IQ "
        "pairs on ccol-all (1 answer pair)" in words
    )
    assert (
        "5 rows of results/disagreements.csv (2 compared pairs, the contexts where each disagrees most) hold 2 "
        "distinct answer pairs on 3 distinct belief states." in words
    )
    rows = p.tables["disagreements-0"]
    assert [c[0] for c in rows[0]] == [
        "times",
        "pairs",
        "belief states (× how often)",
        "policy A: act / prompt",
        "policy B: act / prompt",
        "mean scores",
    ]
    first, second = rows[1], rows[2]
    assert (first[0][0], first[1][0]) == ("4", "2") and (second[0][0], second[1][0]) == ("1", "1")
    assert " ".join(first[2][0].split()) == "area=north:1.00 ×3 turn 2 area=south:1.00 ×1 turn 3"
    assert first[3][0] == "request(area)which area?(+1 other wording)"  # act, prompt, wordings: <br> between
    assert first[5][0].startswith("TMR 0.100 · DMR 0.000")  # (0 + 0.4 + 0 + 0) / 4
    assert 'title="2 of 2: ts-seed0 vs ts-seed1; ts-seed0 vs ts-seed2"' in html
    grid = p.tables["disagreements-1"][1:]
    assert [r[0][0] for r in grid] == [str(12 - k) for k in range(11)]  # most frequent first
    assert html.count('<tr class="rest">') == 1  # the 11th answer pair: one click away
    assert "9 more belief states" in " ".join(grid[0][2][0].split())  # 12 distinct, 3 listed
    assert [r[0][0] for r in p.tables["disagreements-2"][1:]] == ["1"]


def test_disagreements_selector_in_headless_chromium(tmp_path, run_dir):
    """The radio buttons show one comparison kind's table at a time and the check box its rarer rows,
    by CSS alone: checked in Chromium's computed styles (a copy of the page with a probe script)."""
    need_chromium()
    html = build_report(_dis_run(tmp_path, run_dir), tmp_path / "r.html").read_text(encoding="utf-8")
    probe = """<script>
    function shown() {
      var out = [];
      for (var k = 0; k < 3; k++) out.push(getComputedStyle(document.getElementById('dis-panel-' + k)).display);
      var rest = document.querySelector('tr.rest');
      return out.join(',') + '|' + getComputedStyle(rest).display;
    }
    window.addEventListener('load', function () {
      var a = shown();
      document.getElementById('dis-kind-1').checked = true;
      var b = shown();
      document.getElementById('dis-all-1').checked = true;
      document.body.setAttribute('data-probe', [a, b, shown()].join(' '));
    });
    </script></body>"""
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html).replace("</body>", probe)
    (tmp_path / "probe.html").write_text(page, encoding="utf-8")
    r = _chromium("--dump-dom", (tmp_path / "probe.html").resolve().as_uri(), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    probe_out = re.search(r'data-probe="([^"]*)"', r.stdout).group(1)
    assert probe_out == "block,none,none|none none,block,none|none none,block,none|table-row"


def test_disagreements_sort_in_headless_chromium(report, tmp_path):
    """A click on a column head sorts the table (the page's one hashed script); a link with
    #sort=TABLE:COLUMN:asc|desc opens it sorted — checked in the browser's own DOM."""
    need_chromium()
    html = report.read_text(encoding="utf-8")
    assert 'class="data disagree sortable"' in html and html.count("<script>") == 1
    before = [row[0][0] for row in parse(html).tables["disagreements-0"][1:]]
    assert before == sorted(before, key=float, reverse=True)  # most frequent first, as written
    r = _chromium("--dump-dom", report.resolve().as_uri() + "#sort=disagreements-0:0:asc", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    after = [row[0][0] for row in parse(r.stdout).tables["disagreements-0"][1:]]
    assert after == sorted(before, key=float) and after != before
    assert 'data-sort="asc"' in r.stdout


def test_one_figure_per_section_shown_the_others_folded(run_dir, tmp_path):
    """The figure naming the paper's first reward is shown (an older run listed iq's first); the
    other figures of the section are one click away; the score matrices' figures are not embedded,
    their tables are."""
    run = shutil.copytree(run_dir, tmp_path / "figs")
    for stem in ("convergence_ccol-iq", "convergence_ccol-ts", "score_corr"):
        shutil.copy(run / "figures" / "per_turn.svg", run / "figures" / f"{stem}.svg")
    m = json.loads((run / "manifest.json").read_text())
    m["figures"] = [
        {"file": f"figures/{s}.svg", "title": s, "section": sec}
        for s, sec in (
            ("convergence_ccol-iq", "convergence"),
            ("convergence_ccol-ts", "convergence"),
            ("score_corr", "scores"),
        )
    ]
    (run / "manifest.json").write_text(json.dumps(m))
    text = build_report(run).read_text(encoding="utf-8")
    conv = text[text.index('<section id="convergence">') : text.index('<section id="seeds">')]
    shown, folded = conv.split('<details class="more-figures">', 1)
    assert 'alt="convergence_ccol-ts"' in shown and 'alt="convergence_ccol-iq"' not in shown
    assert 'alt="convergence_ccol-iq"' in folded  # and the unlisted figure of the section:
    assert "2 more figures: convergence_ccol-iq; convergence tmr</summary>" in folded
    scores = text[text.index('<section id="scores">') : text.index('<section id="tests">')]
    assert "<img" not in scores and 'id="score_corr"' in scores


def test_reproduce_prints_the_report_path_once(tiny_run, tmp_path, capsys):
    """`behavsim reproduce` (what `bash run.sh main` runs) names the report once, as its last line."""
    from behavsim.cli import main

    run = shutil.copytree(tiny_run, tmp_path / "run")
    assert main(["reproduce", "--config", "tiny", "-o", str(run)]) == 0  # resumes: every stage done but the report
    out = capsys.readouterr().out
    assert out.count("report.html") == 1, out
    assert out.rstrip().splitlines()[-1] == f"report: {(run / 'report.html').resolve()}"
