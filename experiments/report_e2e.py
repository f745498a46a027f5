"""The report's section on end-to-end trials (a study with ``e2e_teachers``; see
:mod:`experiments.study_e2e`): how closely each model reproduces its teacher and when, whether
end-to-end seeds differ more than GP-SARSA seeds, the CER–USE cosine agreement of the paper's
Sec. 5, and where the models depart from their teachers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from behavsim.report import escape, fmt_int, fmt_num, note, plain_table
from experiments.study_e2e import summary_tables

__all__ = ["e2e_section"]

#: Disagreements shown per trial (the file holds the config's ``disagreements``).
_SHOWN = 3


def e2e_section(results: Path) -> str:
    t = summary_tables(results)
    out = []
    teacher = t["teacher"].copy()
    teacher["trial"] = [f"{a} seed {int(b)}" for a, b in zip(teacher["teacher"], teacher["seed"])]
    teacher["failed"] = [f"{int(f)} of {int(n)}" for f, n in zip(teacher["failed"], teacher["n"])]
    scores = [c for c in ("TMR_all", "TMR", "DMR", "CMR", "CER", "USE_cos", "BLEU4", "BERTScore") if c in teacher]
    out.append(
        plain_table(
            teacher.rename(columns={"TMR_all": "TMR (all)"}),
            [
                "trial",
                "checkpoint",
                *[("TMR (all)" if s == "TMR_all" else s) for s in scores],
                "failed",
                "TSR",
                "TSR teacher",
            ],
            "e2e-teacher",
            "Each end-to-end model (last checkpoint) against its teacher on C<sub>col</sub><sup>all</sup>: "
            "TMR (all) counts a context the model failed to answer as a mismatch; the other scores are over "
            "the answered contexts. TSR: task success over the study's evaluation dialogues, the model's acts "
            "driving the dialogue, beside its teacher's on the same users and goals.",
            int_cols=("checkpoint",),
            text_cols=("trial", "failed"),
        )
    )
    curve = t["curve"].copy()
    curve["trial"] = [f"{a} seed {int(b)}" for a, b in zip(curve["teacher"], curve["seed"])]
    cks = [c for c in curve.columns if c not in ("teacher", "seed", "trial")]
    out.append(
        plain_table(
            curve,
            ["trial", *cks],
            "e2e-curve",
            "Imitation over training: TMR (all contexts) of each checkpoint against the teacher, by teacher "
            "dialogues trained on (repeats counted); the behaviour has converged where the row stops rising.",
            text_cols=("trial",),
        )
    )
    if "seeds" in t:
        s = t["seeds"]
        wide = []
        for group, g in s.groupby("group", sort=False):
            row: dict[str, object] = {"group": group, "seed pairs": str(int(g["n_pairs"].iloc[0]))}
            for _, r in g.iterrows():
                row[str(r["score"])] = f"{fmt_num(r['mean'])} [{fmt_num(r['lo'])}, {fmt_num(r['hi'])}]"
            wide.append(row)
        cols = ["group", "seed pairs", *[c for c in ("TMR", "DMR", "CMR", "USE_cos", "BLEU4") if c in wide[0]]]
        out.append(
            plain_table(
                pd.DataFrame(wide),
                cols,
                "e2e-seeds",
                "Seeds: the last checkpoints of one group's trials against each other — the mean over the seed "
                "pairs with its 95% two-level bootstrap interval (trials within the group, then contexts). "
                "With a few seeds per group no test over runs can be significant: the intervals say how far "
                "the groups differ.",
                text_cols=cols,
            )
        )
    if "agreement" in t:
        a = t["agreement"].copy()
        a["rows used"] = ["mismatches only" if m else "all" for m in a["only_mismatch"]]
        a["n"] = [fmt_int(v, grouped=True) for v in a["n"]]
        out.append(
            plain_table(
                a,
                ["rows", "rows used", "pearson", "mse", "n"],
                "e2e-agreement",
                "CER (from the acts) against USE cosine (from the text alone) over every (pair, context): the "
                "paper's Sec. 5 finds them \u201cquite highly\u201d correlated, so that systems with text output "
                "only can be compared like those with acts. The end-to-end pairs answer with both, so the text "
                "score is checked against their act-level truth; mismatches only: the contexts where the acts "
                "differ (TMR 0).",
                text_cols=("rows", "rows used", "n"),
            )
        )
    dis = results / "e2e_disagreements.csv"
    if dis.is_file():
        d = pd.read_csv(dis, dtype=str, keep_default_na=False)
        if not d.empty:
            d = d[d["rank"].astype(int) <= _SHOWN]
            rows = "".join(
                f"<tr><td>{escape(r['comparison'].split('/')[-1])}</td><td>{escape(r['summary'])}</td>"
                f"<td><code>{escape(r['act_a'])}</code></td><td><code>{escape(r['act_b'])}</code></td></tr>\n"
                for _, r in d.iterrows()
            )
            out.append(
                "<details><summary>Where the models depart from their teachers "
                f"(the {_SHOWN} contexts of lowest CMR per trial; all in <code>results/e2e_disagreements.csv</code>, "
                "by slice in <code>results/e2e_slices.csv</code>)</summary>\n"
                '<div class="wrap"><table class="data" id="e2e-disagreements"><thead><tr><th>teacher vs model</th>'
                "<th>belief state</th><th>teacher's act</th><th>model's act</th></tr></thead><tbody>\n"
                + rows
                + "</tbody></table></div></details>\n"
            )
    if not out:
        return note("<code>results/e2e.csv</code> has no rows.")
    return "".join(out)
