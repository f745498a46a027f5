"""The report's section "Permutation tests": each test of ``results/tests.json`` in words, with
what the design can show; the sentences serve the Answers section too."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from behavsim import TableFormatError
from behavsim.analysis import distinct_relabelings
from behavsim.report import escape, fmt_int, fmt_num, note
from experiments.report import Report, Section

__all__ = ["TESTS", "describe_test", "design_limit", "fmt_p"]


def fmt_p(p: Any) -> str:
    if not isinstance(p, (int, float)) or not math.isfinite(p):
        return "n/a"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def _interval(t: dict, key: str) -> str:
    ci = t.get(key)
    if isinstance(ci, list) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci):
        return f', 95% interval <span class="v">{fmt_num(ci[0])}</span>–<span class="v">{fmt_num(ci[1])}</span>'
    return ""


def describe_test(t: dict, path: Path, i: int) -> str:
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
        test = f'permutation test over trials ({how}) p = <span class="v">{fmt_p(p)}</span>'
        n = f", {fmt_int(count)} trials" if count is not None else ""
    elif unit == "contexts":
        test = f'paired permutation test over contexts p = <span class="v">{fmt_p(p)}</span>'
        n = f", {fmt_int(count)} contexts (conditional on these trials)" if count is not None else ""
    else:
        test = f'paired permutation test p = <span class="v">{fmt_p(p)}</span>'
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


def design_limit(t: dict, path: Path, i: int) -> str:
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
        return f' The smallest p-value this design can reach is <span class="v">{fmt_p(min_p)}</span>.'
    need = t.get("trials_per_group_needed")
    factor = re.split(r"\s+vs\.?\s+", str(t["name"]))[0]
    more = ""
    if isinstance(need, int) and not isinstance(need, bool) and need >= 2:
        d = distinct_relabelings(need, need)
        more = (
            f" {fmt_int(need)} seeds per {escape(factor)} could ({fmt_int(need)} + {fmt_int(need)} trials: "
            f"{fmt_int(d)} distinct splits, smallest p {fmt_p(1 / d)})."
        )
    return (
        f" <b>This design cannot reach p &lt; {fmt_p(alpha)}:</b> its smallest p-value is "
        f'<span class="v">{fmt_p(min_p)}</span>, whatever the data.{more}'
    )


def _tests(report: Report) -> str:
    path = report.path("tests.json")
    data = report.json("tests.json")
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
        sentence = describe_test(t, path, i)
        p = t["p_value"]
        if isinstance(p, (int, float)) and math.isfinite(p):
            sentence += " Significant at the 5% level." if p < 0.05 else " Not significant at the 5% level."
        sentence += design_limit(t, path, i)
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


TESTS = Section(
    key="tests",
    title="Permutation tests",
    order=1300,
    render=_tests,
    inputs={"results/tests.json": "the reward-vs-seed tests, over trials and over contexts"},
)
