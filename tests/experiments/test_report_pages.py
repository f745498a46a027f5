"""The study's report prints on a few A4 pages with every section, and its figures keep their texts apart.

The quick study itself takes minutes, too long for the suite, so its run folder is made here at
its size (2 rewards x 3 seeds, checkpoints every 1,000 of 6,000, 16 turns, 21 disagreement lists of
15 rows that repeat themselves as the real ones do, the context sets' real metadata) with synthetic
numbers; its figures are drawn by the study's own ``experiments.plots.study_figures`` and the
behaviour map's plotting function, and the report is printed by headless Chromium. The real
``tiny`` run (built by the fixture of test_study.py) is printed in test_study.py.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import behavsim
from behavsim import plots
from experiments.plots import study_figures
from experiments.report import build_report, list_report_sections

SCORES = list(behavsim.DEFAULT_SCORES)
REWARDS, SEEDS, CHECKPOINTS = ("ts", "iq"), (0, 1, 2), tuple(range(1000, 7000, 1000))
MAX_PAGES = 15


def _checks():
    """The report tests' parser and browser helpers (tests/experiments/test_study_report.py)."""
    path = Path(__file__).parent / "test_study_report.py"
    spec = importlib.util.spec_from_file_location("_report_checks_pages", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pid(reward: str, seed: int, ck: int) -> str:
    return f"{reward}-seed{seed}-{ck:06d}"


def _scores(rng: np.random.Generator, n: int, lo: float = 0.4) -> dict:
    out = {}
    for s in SCORES:
        v = rng.uniform(lo, 1.0, n)
        out[s], out[f"{s}_lo"], out[f"{s}_hi"] = v, np.clip(v - 0.04, 0, 1), np.clip(v + 0.04, 0, 1)
    return out


def _frame(rows: list[dict], rng: np.random.Generator) -> pd.DataFrame:
    return pd.concat([pd.DataFrame(rows), pd.DataFrame(_scores(rng, len(rows)))], axis=1)


def _belief(rng: np.random.Generator) -> str:
    food = rng.choice(["thai", "indian", "gastropub", "spanish", "asian oriental", "**NONE**"])
    return (
        f"area={rng.choice(['centre', 'north', 'dontcare'])}:1.00 discourseAct={rng.choice(['none', 'bye'])}:1.00 "
        f"food={food}:{rng.uniform(0.6, 1):.2f} method={rng.choice(['byname', 'byconstraints', 'finished'])}:0.80 "
        f"name=**NONE**:1.00 pricerange={rng.choice(['cheap', 'moderate', 'dontcare'])}:1.00"
    )


ACTS = [
    "request(area)",
    "request(food)",
    "request(pricerange)",
    "bye()",
    "reqmore()",
    'confirm(area="centre")',
    'confirm(pricerange="dontcare")',
    'inform(description="sala thong serves a variety of thai dishes at their restaurant catering for private '
    'parties of up to 40 guests is available upon request",name="sala thong",signature="not available")',
    'inform(area="centre",food="spanish",name="la tasca",pricerange="moderate")',
    'inform(name="the slug and lettuce",signature="not available")',
]


def make_quick_like_run(root: Path) -> Path:
    """A run folder of the quick study's size and layout (synthetic numbers; real figures)."""
    rng = np.random.default_rng(24)
    run = root / "quick"
    res = run / "results"
    res.mkdir(parents=True)
    trials = [(r, s) for r in REWARDS for s in SEEDS]
    alpha = sorted(REWARDS)  # the study writes its CSVs with iq first
    pd.DataFrame(
        [
            {
                "dialogues": d,
                "reward": r,
                "n_seeds": 3,
                "tsr": rng.uniform(0.97, 1),
                "aiq": rng.uniform(3.5, 4),
                "adl": rng.uniform(6, 6.5),
            }
            for d in CHECKPOINTS
            for r in alpha
        ]
    ).to_csv(res / "table1.csv", index=False)
    metrics = pd.DataFrame(
        [
            {
                "policy": _pid(r, s, d),
                "reward": r,
                "seed": s,
                "dialogues": d,
                "tsr": rng.uniform(0.9, 1),
                "aiq": rng.uniform(3.5, 4),
                "adl": rng.uniform(6, 6.5),
                "mean_reward": rng.uniform(10, 14),
            }
            for r in alpha
            for s in SEEDS
            for d in CHECKPOINTS
        ]
    )
    metrics.to_csv(res / "metrics.csv", index=False)
    rows = [
        {
            "context_set": cs,
            "reward": r,
            "seed": s,
            "checkpoint": d,
            "a": _pid(r, s, d),
            "b": _pid(r, s, d - 1000),
            "n": 1296 if cs == "cgen" else 211,
        }
        for cs in ("ccol-iq", "ccol-ts", "cgen")
        for r in alpha
        for s in SEEDS
        for d in CHECKPOINTS[1:]
        if cs in ("cgen", f"ccol-{r}")
    ]
    _frame(rows, rng).to_csv(res / "convergence.csv", index=False)
    rows = [
        {
            "context_set": cs,
            "reward": r,
            "checkpoint": d,
            "pair": f"{i} vs {j}",
            "a": _pid(r, i, d),
            "b": _pid(r, j, d),
            "n": 1296 if cs == "cgen" else 415,
        }
        for cs in ("ccol-all", "cgen")
        for r in alpha
        for (i, j) in itertools.combinations(SEEDS, 2)
        for d in CHECKPOINTS
    ]
    _frame(rows, rng).to_csv(res / "seeds.csv", index=False)
    rows = [
        {"context_set": "ccol-all", "pair": f"{i} vs {j}", "a": _pid("ts", i, 6000), "b": _pid("iq", j, 6000), "n": 415}
        for i in SEEDS
        for j in SEEDS
    ]
    _frame(rows, rng).to_csv(res / "rewards.csv", index=False)
    pd.DataFrame(
        [
            {
                "context_set": "ccol-all",
                "reward": r,
                "checkpoint": 6000,
                "pair": f"{i} vs {j}",
                "a": _pid(r, i, 6000),
                "b": _pid(r, j, 6000),
                "turn": t,
                "n": 60,
                "TMR": rng.uniform(0, 1),
                "DMR": rng.uniform(0.3, 1),
            }
            for r in alpha
            for (i, j) in itertools.combinations(SEEDS, 2)
            for t in range(1, 17)
        ]
    ).to_csv(res / "per_turn.csv", index=False)
    for name in ("score_corr", "score_mse", "score_corr_mismatch", "score_mse_mismatch"):
        m = rng.uniform(-0.2 if "corr" in name else 0, 1 if "corr" in name else 0.3, (8, 8))
        m = (m + m.T) / 2
        np.fill_diagonal(m, 1.0 if "corr" in name else 0.0)
        pd.DataFrame(m, columns=SCORES).assign(score=SCORES)[["score", *SCORES]].to_csv(
            res / f"{name}.csv", index=False
        )
    desc = (
        "mean {s} of the TS-vs-IQ pairs of trials (x) against the seed-vs-seed pairs of one reward (y), each pair "
        "averaged over the contexts, last checkpoint; permutation test of the reward labels over the 6 trials "
        "(exact, all 10 distinct splits); intervals: two-level bootstrap (trials within their reward, then "
        "contexts), 1000 resamples"
    )
    tests = [
        {
            "name": "reward vs seed",
            "unit": "trials",
            "score": s,
            "context_set": "ccol-all",
            "mean_x": 0.57,
            "mean_y": 0.62,
            "mean_x_ci": [0.49, 0.65],
            "mean_y_ci": [0.55, 0.74],
            "diff": -0.05,
            "p_value": 0.2,
            "min_p": 0.1,
            "exact": True,
            "n": 6,
            "alpha": 0.05,
            "trials_per_group_needed": 4,
            "description": desc.format(s=s),
        }
        for s in ("TMR", "DMR", "CMR")
    ]
    tests += [
        {
            "name": "reward vs seed",
            "unit": "contexts",
            "score": s,
            "context_set": "ccol-all",
            "mean_x": 0.57,
            "mean_y": 0.62,
            "diff": -0.05,
            "p_value": 1e-4,
            "min_p": 1e-4,
            "n": 415,
            "description": desc.format(s=s),
        }
        for s in ("TMR", "DMR", "CMR")
    ]
    (res / "tests.json").write_text(json.dumps(tests))
    rows = []
    groups = [
        ("seeds", cs, r, f"{i} vs {j}")
        for cs in ("ccol-all", "cgen")
        for r in alpha
        for (i, j) in itertools.combinations(SEEDS, 2)
    ]
    groups += [("rewards", "ccol-all", "", f"{i} vs {j}") for i in SEEDS for j in SEEDS]
    for kind, cs, r, pair in groups:
        for sl, values in (
            ("acttype", ["request", "inform", "confirm", "bye", "reqmore", "hello"]),
            ("slot", ["area", "food", "pricerange", "(no slot)"]),
            ("uncertainty", ["[0, 0.5)", "[0.5, 0.8)", "[0.8, 1]", "no constraint"]),
            ("turn", [str(t) for t in range(1, 11)] if cs != "cgen" else []),
        ):
            for v in values:
                n = int(rng.integers(5, 120))
                rec = {
                    "kind": kind,
                    "context_set": cs,
                    "reward": r,
                    "pair": pair,
                    "a": "x",
                    "b": "y",
                    "slice": sl,
                    "value": v,
                    "partition": sl != "slot",
                    "n_contexts": n,
                    "n": n,
                }
                rec |= {s: rng.uniform(0, 1) for s in SCORES} | {f"n_{s}": n for s in SCORES}
                rows.append(rec)
    pd.DataFrame(rows).to_csv(res / "slices.csv", index=False)
    # 21 lists of the 15 most-disagreeing contexts, repeating themselves: on ccol-all a handful of belief
    # states (the same belief from several dialogues), on cgen one or two act pairs on distinct grid points
    beliefs = [_belief(rng) for _ in range(12)]
    rows = []
    comps = [
        ("seeds", "ccol-all", _pid(r, i, 6000), _pid(r, j, 6000))
        for r in REWARDS
        for (i, j) in itertools.combinations(SEEDS, 2)
    ]
    comps += [("seeds", "cgen", a, b) for _, _, a, b in comps]
    comps += [("rewards", "ccol-all", _pid("ts", i, 6000), _pid("iq", j, 6000)) for i in SEEDS for j in SEEDS]
    for kind, cs, a, b in comps:
        grid_pairs = [(ACTS[int(k)], ACTS[int(m)]) for k, m in rng.integers(0, len(ACTS), (2, 2))]
        for rank in range(1, 16):
            if cs == "cgen":
                act_a, act_b = grid_pairs[rank % 2]
                summary = f"area=centre:{rank / 15:.2f} food=indian:{rng.uniform(0, 1):.2f} method=none:0.60"
                cid, turn = f"gen:{rank}", np.nan
            else:
                act_a, act_b = ACTS[int(rng.integers(0, 5))], ACTS[int(rng.integers(3, len(ACTS)))]
                summary = beliefs[int(rng.integers(0, 7 if kind == "seeds" else 12))]
                cid, turn = f"gp-{a}/d{rank % 10}/t{rank % 6 + 1}", rank % 6 + 1
            rows.append(
                {
                    "comparison": f"{kind}/{cs}/{a} vs {b}",
                    "rank": rank,
                    "context": rank,
                    "context_id": cid,
                    "summary": summary,
                    "turn": turn,
                    "act_a": act_a,
                    "act_b": act_b,
                    "prompt_a": f"what about {act_a[:12]}?",
                    "prompt_b": f"so {act_b[:12]}.",
                    **{s: 0.0 if s in ("TMR", "DMR", "CER", "CMR") else rng.uniform(0, 0.5) for s in SCORES},
                }
            )
    pd.DataFrame(rows).to_csv(res / "disagreements.csv", index=False)
    figures = study_figures(run, metrics, rewards=REWARDS, seeds=SEEDS, scores=SCORES)
    # the behaviour map: 36 checkpoints of 6 trials and the handcrafted policy
    coords = pd.DataFrame(
        [
            {
                "id": _pid(r, s, d),
                "trial": f"{r}-seed{s}",
                "checkpoint": d,
                "final": d == 6000,
                "x": rng.normal(),
                "y": rng.normal(),
            }
            for r, s in trials
            for d in CHECKPOINTS
        ]
        + [{"id": "handcrafted", "trial": "handcrafted", "checkpoint": np.nan, "final": True, "x": 0.0, "y": 0.0}]
    )
    (run / "map").mkdir()
    coords.to_csv(run / "map" / "map.csv", index=False)
    plots.behaviour_map_plot(coords, run / "map" / "map", explained=[0.36, 0.29])
    figures.append({"file": "map/map.svg", "title": "Behaviour map: MDS of 1 − TMR on cgen", "section": "map"})
    collected = {
        "builder": "collected",
        "dedupe": False,
        "dialogues": 10,
        "domain": "restaurant",
        "dialogue_seeds": "SeedSequence([seed, 3, j]) (as policies.train's evaluation dialogues)",
        "domain_rules": "CamRestaurants-rules.json",
        "domain_venues": 110,
        "duplicates_removed": 0,
        "origin": "collected",
        "seed": 0,
    }
    grid = {
        "builder": "generated",
        "domain": "restaurant",
        "domain_rules": "CamRestaurants-rules.json",
        "domain_venues": 110,
        "levels": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
        "method": "byconstraints",
        "order": "row-major over (area, pricerange, food, method); the method level varies fastest",
        "origin": "generated",
        "slots": ["area", "pricerange", "food"],
        "step": 0.2,
        "value_choice": "most frequent value in the database (ties: ontology order)",
        "values": {"area": "centre", "food": "indian", "pricerange": "expensive"},
    }
    manifest = {
        "config_name": "quick",
        "config": {
            "rewards": list(REWARDS),
            "seeds": list(SEEDS),
            "dialogues": 6000,
            "checkpoint_every": 1000,
            "eval_dialogues": 100,
            "grid_step": 0.2,
            "collect_dialogues": 10,
            "bootstrap": 1000,
            "permutations": 10000,
            "scores": SCORES,
            "disagreements": 15,
        },
        "code_version": "behavsim 0.1.0 (git 0000000)",
        "created": "2026-11-24T00:00:00Z",
        "signatures": {s: f"{s}|behavsim-0.1.0|model:some-encoder@{'0' * 16}|options:{{}}" for s in SCORES},
        "context_sets": {
            "ccol-all": {
                "fingerprint": "sha256:" + "1" * 32 + ":415",
                "size": 415,
                "meta": {"builder": "union", "description": "union of C_col of every reward"},
            },
            "ccol-iq": {"fingerprint": "sha256:" + "2" * 32 + ":204", "size": 204, "meta": collected},
            "ccol-ts": {"fingerprint": "sha256:" + "3" * 32 + ":211", "size": 211, "meta": collected},
            "cgen": {"fingerprint": "sha256:" + "4" * 32 + ":1296", "size": 1296, "meta": grid},
        },
        "figures": figures,
        "wall_seconds": 827.6,
    }
    (run / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return run


@pytest.fixture(scope="module")
def quick_like(tmp_path_factory):
    """The run folder, and every figure the study's plotting drew for it (kept to inspect their texts)."""
    from matplotlib.figure import Figure

    drawn: dict[str, Figure] = {}
    real = plots.save_figure

    def keep(fig, path, **kw):
        drawn[Path(path).name] = fig
        return real(fig, path, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(plots, "save_figure", keep)
    try:
        run = make_quick_like_run(tmp_path_factory.mktemp("pages"))
    finally:
        mp.undo()
    return run, drawn


def test_quick_sized_report_prints_on_at_most_15_a4_pages(quick_like, tmp_path):
    """Every section the run has content for is there, and the whole prints on A4 in at most 15 pages
    (67 pages before the report was laid out to answer in a few screens)."""
    checks = _checks()
    run, _ = quick_like
    html = build_report(run, tmp_path / "report.html")
    text = html.read_text(encoding="utf-8")
    present = re.findall(r'<section id="(\w+)">', text)
    assert present == [
        k for k in list_report_sections() if k not in ("robustness", "other", "policies", "e2e", "corpus")
    ]  # none in this run
    assert "Robustness (set robustness = [0, 0.05, 0.15, 0.3] in the config)" in " ".join(
        "".join(checks.parse(text).text).split()
    )
    assert "@page { size: A4;" in text
    checks.need_chromium()
    pages, sizes = checks.print_pages(html, tmp_path)
    assert sizes == {checks.A4_POINTS}
    assert pages <= MAX_PAGES, pages


def test_the_studys_per_turn_and_convergence_figures_keep_their_texts_apart(quick_like, figure_text):
    """No two texts of the per-turn and convergence figures overlap and none is cut: matplotlib's
    text extents of the figures the study drew (the long checkpoint ids of the pairs included)."""
    ft = figure_text
    _, drawn = quick_like
    names = [n for n in drawn if n.startswith(("per_turn", "convergence"))]
    assert sorted(names) == ["convergence", "per_turn_iq", "per_turn_ts"]
    for name in names:
        texts = ft.drawn_texts(drawn[name], plots.RC)
        assert ft.overlapping(texts) == [], name
        assert ft.cut(drawn[name], texts) == [], name
    legend = [t for t, _ in ft.drawn_texts(drawn["convergence"], plots.RC) if t.endswith(("seed0", "seed1"))]
    assert legend[:2] == ["ts-seed0", "ts-seed1"]  # the paper's order: TS trials first
