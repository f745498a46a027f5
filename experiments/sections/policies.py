"""The report's section on the other policies of a study (``policies = [...]`` in the config):
each against the last checkpoint of every trial, the handcrafted policy and each other, with each
side's self-agreement (asked more than once) and the contexts where the semantic scores do not
apply (text-only answers)."""

from __future__ import annotations

import math

import pandas as pd

from behavsim.report import escape, fmt_int, note, score_table, to_float
from experiments.report import Report, Section

__all__ = ["POLICIES"]


def _other_policies(report: Report) -> str:
    """The other policies' comparisons, with each side's self-agreement (asked more than once) and
    the contexts where the semantic scores do not apply (text-only answers)."""
    df = report.csv("policies.csv", scores=True, numeric=("self_agreement_a", "self_agreement_b"))
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
        path = report.path("policies.csv")
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


POLICIES = Section(
    key="policies",
    title="Other policies: each vs every trial, the handcrafted policy and each other",
    order=800,
    render=_other_policies,
    inputs={"results/policies.csv": "each other policy against every trial, the handcrafted policy and each other"},
    absent='set <code>policies = ["hf:DIR", "openai:MODEL@URL", …]</code> in the config',
)
