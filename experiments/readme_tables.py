"""Print a run's Tables 1–4 as markdown next to the paper's, as shown in the README; for a run
with end-to-end trials (``--config e2e``) its tables of end-to-end models against their teachers.

python -m experiments.readme_tables runs/quick
python -m experiments.readme_tables runs/e2e
python -m experiments.readme_tables runs/camrest676  # the quick tables, then those against people
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from experiments.e2e import summary_tables

S = ["TMR", "DMR", "CER", "CMR", "USE_ang", "USE_cos", "BLEU4", "BERTScore"]
# The paper's values (Ultes & Maier), for the rows shown next to ours.
PAPER_T1 = {
    1000: (0.98, 0.99, 3.78, 3.85, 4.46, 4.44),
    5000: (0.99, 0.98, 3.78, 3.81, 4.41, 4.51),
    10000: (1.00, 0.98, 3.81, 3.80, 4.32, 4.47),
    20000: (1.00, 0.97, 3.86, 3.73, 4.15, 4.62),
    30000: (1.00, 0.96, 3.71, 3.87, 4.49, 4.41),
    40000: (1.00, 0.94, 3.77, 3.77, 4.35, 4.75),
}
PAPER_T2_TS_40K = {
    0: (1.000, 1.000, 1.000, 1.000, 0.871, 0.891, 0.493, 0.918),
    1: (0.978, 0.989, 0.986, 0.985, 0.875, 0.885, 0.532, 0.925),
    2: (0.978, 0.984, 0.981, 0.982, 0.876, 0.885, 0.525, 0.918),
}
PAPER_T4_40K = {
    ("ts", "0 vs 1"): (0.508, 0.842, 0.585, 0.840),
    ("ts", "0 vs 2"): (0.896, 0.934, 0.914, 0.890),
    ("ts", "1 vs 2"): (0.536, 0.842, 0.609, 0.850),
    ("iq", "0 vs 1"): (0.365, 0.876, 0.480, 0.826),
    ("iq", "0 vs 2"): (0.331, 0.843, 0.459, 0.820),
    ("iq", "1 vs 2"): (0.680, 0.798, 0.728, 0.852),
}
PAPER_T3 = {
    "0 vs 0": 0.645,
    "0 vs 1": 0.310,
    "0 vs 2": 0.288,
    "1 vs 0": 0.338,
    "1 vs 1": 0.485,
    "1 vs 2": 0.380,
    "2 vs 0": 0.615,
    "2 vs 1": 0.307,
    "2 vs 2": 0.296,
}


def f(v: float) -> str:
    return f"{v:.3f}"


def e2e_tables(results: Path) -> None:
    """The end-to-end study's tables (:func:`experiments.e2e.summary_tables`)."""
    t = summary_tables(results)
    a = t["teacher"]
    cols = [c for c in ("TMR_all", "DMR", "CMR", "CER", "USE_cos", "BLEU4") if c in a]
    print(
        "End-to-end models against their teachers (last checkpoint, C_col^all; TMR_all: failures count as mismatches)\n"
    )
    print("| teacher | seed | " + " | ".join(cols) + " | failed | TSR (teacher's) |\n|" + "---|" * (4 + len(cols)))
    for _, x in a.iterrows():
        cells = " | ".join(f(x[c]) for c in cols)
        print(
            f"| {x.teacher} | {int(x.seed)} | {cells} | {int(x.failed)} of {int(x.n)} | "
            f"{x.TSR:.2f} ({x['TSR teacher']:.2f}) |"
        )
    c = t["curve"]
    cks = [k for k in c.columns if k not in ("teacher", "seed")]
    print("\nImitation over training: TMR_all against the teacher by teacher dialogues trained on\n")
    print("| teacher | seed | " + " | ".join(cks) + " |\n|" + "---|" * (2 + len(cks)))
    for _, x in c.iterrows():
        print(f"| {x.teacher} | {int(x.seed)} | " + " | ".join(f(x[k]) for k in cks) + " |")
    if "seeds" in t:
        s = t["seeds"]
        shown = [k for k in ("TMR", "DMR", "CMR", "USE_cos", "BLEU4") if k in set(s["score"])]
        print("\nSeeds: mean over the seed pairs of each group, last checkpoint (95% two-level interval)\n")
        print("| group | " + " | ".join(shown) + " |\n|" + "---|" * (1 + len(shown)))
        for group, g in s.groupby("group", sort=False):
            by = g.set_index("score")
            print(
                f"| {group} | "
                + " | ".join(f"{f(by.loc[k, 'mean'])} ({f(by.loc[k, 'lo'])}–{f(by.loc[k, 'hi'])})" for k in shown)
                + " |"
            )
    if "agreement" in t:
        g = t["agreement"]
        print("\nCER (acts) against USE cosine (text alone), Pearson's r over (pair, context) rows (paper Sec. 5)\n")
        print("| rows | r, all | MSE, all | n | r, mismatches | n |\n|---|---|---|---|---|---|")
        for rows, x in g.groupby("rows", sort=False):
            al, mm = x[~x.only_mismatch].iloc[0], x[x.only_mismatch].iloc[0]
            print(f"| {rows} | {f(al.pearson)} | {f(al.mse)} | {int(al.n):,} | {f(mm.pearson)} | {int(mm.n):,} |")


def corpus_tables(results: Path) -> None:
    """The study against people's tables (``--config camrest676``): each policy against the human
    wizard, the GP-SARSA seeds against each other and against the wizard, CER against USE cosine."""
    m = pd.read_csv(results / "corpus.csv")
    acts = [c for c in ("TMR", "DMR", "CER", "CMR") if c in m]
    text = [c for c in ("USE_cos", "BLEU4", "BERTScore") if c in m]
    print("\nEach policy against the human wizard (act scores with their 95% bootstrap intervals)\n")
    print("| policy | " + " | ".join(acts + text) + " |\n|" + "---|" * (1 + len(acts) + len(text)))
    for _, x in m.iterrows():
        cells = [f"{f(x[c])} ({f(x[c + '_lo'])}–{f(x[c + '_hi'])})" for c in acts] + [f(x[c]) for c in text]
        print(f"| {x.policy} | " + " | ".join(cells) + " |")
    missing = [f"{x.policy} {int(x.n_missing_TMR)} / {int(x.n_missing_USE_cos)}" for _, x in m.iterrows()]
    print("\nContexts failed, no usable act (n_missing_TMR) / without words (n_missing_USE_cos): " + ", ".join(missing))
    if "n_na_TMR" in m.columns:  # answers of words alone: the act scores do not apply there
        counted = [f"{x.policy} {int(x.n - x.n_na_TMR - x.n_missing_TMR)}" for _, x in m.iterrows()]
        print("Contexts the act scores count (n − n_na_TMR − n_missing_TMR): " + ", ".join(counted))
    s = pd.read_csv(results / "corpus_seeds.csv")
    print("\nThe GP-SARSA seeds against each other and against the wizard (95% two-level intervals)\n")
    print(
        "| reward | score | seed vs seed | seed vs human wizard | seeds closer to each other | p (smallest possible) |"
    )
    print("|---|---|---|---|---|---|")
    for _, x in s.iterrows():
        a = f"{f(x.seed_vs_seed)} ({f(x.seed_vs_seed_lo)}–{f(x.seed_vs_seed_hi)})"
        b = f"{f(x.seed_vs_wizard)} ({f(x.seed_vs_wizard_lo)}–{f(x.seed_vs_wizard_hi)})"
        closer = f"{int(x.seeds_closer_to_each_other)} of {int(x.n_seeds)}"
        print(f"| {x.reward} | {x.score} | {a} | {b} | {closer} | {x.p_value:.2f} ({x.min_p:.2f}) |")
    g = pd.read_csv(results / "corpus_agreement.csv")
    print("\nCER (acts) against USE cosine (text), Pearson's r over the contexts where the wizard has acts\n")
    print("| policy | r, all | n | r, acts differ | n |\n|---|---|---|---|---|")
    for policy, x in g.groupby("policy", sort=False):
        al, mm = x[~x.only_mismatch].iloc[0], x[x.only_mismatch].iloc[0]
        print(f"| {policy} | {al.pearson:.2f} | {int(al.n):,} | {mm.pearson:.2f} | {int(mm.n):,} |")


def main(run: str) -> None:
    r = Path(run) / "results"
    if (r / "e2e.csv").is_file():
        e2e_tables(r)
        return
    t1 = pd.read_csv(r / "table1.csv")
    last = int(t1["dialogues"].max())
    print("Table 1 (TSR, AIQ, ADL; mean over seeds; paper R_TS / R_IQ in brackets where the paper has the row)\n")
    print("| dialogues | TSR TS | TSR IQ | AIQ TS | AIQ IQ | ADL TS | ADL IQ |\n|---|---|---|---|---|---|---|")
    many = t1["dialogues"].nunique() > 10
    for n, g in t1.groupby("dialogues"):
        if many and int(n) not in PAPER_T1:  # long runs: only the paper's rows
            continue
        ts, iq = g[g.reward == "ts"].iloc[0], g[g.reward == "iq"].iloc[0]
        p = PAPER_T1.get(int(n))
        cells = [(ts.tsr, iq.tsr), (ts.aiq, iq.aiq), (ts.adl, iq.adl)]
        out = []
        for k, (a, b) in enumerate(cells):
            out += [
                f"{a:.2f}" + (f" ({p[2 * k]:.2f})" if p else ""),
                f"{b:.2f}" + (f" ({p[2 * k + 1]:.2f})" if p else ""),
            ]
        print(f"| {int(n):,} | " + " | ".join(out) + " |")
    conv = pd.read_csv(r / "convergence.csv")
    c = conv[(conv.context_set == "ccol-ts") & (conv.checkpoint == last)]
    every = json.loads((Path(run) / "manifest.json").read_text())["config"]["checkpoint_every"]
    print(
        f"\nTable 2 (convergence, R_TS, checkpoint {last:,} vs {last - every:,} on C_col^TS; paper: 40,000 vs 39,000)\n"
    )
    print("| trial | " + " | ".join(S) + " |\n|" + "---|" * (1 + len(S)))
    for _, x in c.sort_values("seed").iterrows():
        p2 = PAPER_T2_TS_40K.get(int(x.seed))
        print(
            f"| {x.seed} | " + " | ".join(f(x[s]) + (f" ({p2[k]:.3f})" if p2 else "") for k, s in enumerate(S)) + " |"
        )
    seeds = pd.read_csv(r / "seeds.csv")
    s = seeds[seeds.checkpoint == last]
    print(f"\nTable 4 (seeds, last checkpoint {last:,}; paper at 40,000 in brackets)\n")
    cols = ["TMR", "DMR", "CMR", "BERTScore"]
    print(
        "| reward | pair | "
        + " | ".join(f"C_col {c}" for c in cols)
        + " | "
        + " | ".join(f"C_gen {c}" for c in cols)
        + " |\n|"
        + "---|" * (2 + 2 * len(cols))
    )
    for (rw, pair), g in s.groupby(["reward", "pair"], sort=False):
        a, b = g[g.context_set == "ccol-all"].iloc[0], g[g.context_set == "cgen"].iloc[0]
        p4 = PAPER_T4_40K.get((rw, pair))
        print(
            f"| {rw} | {pair} | "
            + " | ".join(f(a[x]) + (f" ({p4[k]:.3f})" if p4 else "") for k, x in enumerate(cols))
            + " | "
            + " | ".join(f(b[x]) for x in cols)
            + " |"
        )
    rew = pd.read_csv(r / "rewards.csv")
    print("\nTable 3 (every TS trial vs every IQ trial, last checkpoint, C_col^TS ∪ C_col^IQ; paper TMR in brackets)\n")
    print("| TS vs IQ | " + " | ".join(S) + " |\n|" + "---|" * (1 + len(S)))
    for _, x in rew.iterrows():
        print(
            f"| {x.pair} | "
            + " | ".join(f(x[s]) + (f" ({PAPER_T3[x.pair]:.3f})" if s == "TMR" else "") for s in S)
            + " |"
        )
    if (r / "corpus.csv").is_file():
        corpus_tables(r)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/quick")
