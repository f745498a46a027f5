"""Short representations of the core's objects, as pandas and scikit-learn give them.

A context set, a response table or a comparison typed at a notebook prompt shows its kind, size,
fingerprint and a summary in a few lines — never its contents: every repr here is under
:data:`LIMIT` characters whatever the size of the object.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

__all__ = ["LIMIT", "contextset_repr", "table_repr", "comparison_repr"]

#: The most characters a repr of this module has.
LIMIT = 2000

_LINE = 240  # characters per summary line
_CELL = 24  # characters per id in a table


def _cut(text: Any, limit: int = _LINE) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis where it is cut)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(obj: Any, limit: int = _LINE) -> str:
    try:
        text = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(obj)
    return _cut(text, limit)


def _finish(lines: list[str]) -> str:
    text = "\n".join(lines)
    return text if len(text) < LIMIT else text[: LIMIT - 2] + "…"


def _source(obj: Any) -> str:
    return f", source {_cut(obj.source, 120)!r}" if getattr(obj, "source", None) else ""


def contextset_repr(cs: Any) -> str:
    n = len(cs)
    builder = cs.meta.get("builder") if isinstance(cs.meta, dict) else None
    head = f"ContextSet({n:,} contexts" + (f", built by {_cut(builder, 40)!r}" if builder else "")
    lines = [f"{head}, fingerprint {cs.fingerprint}{_source(cs)})"]
    origins = Counter(str(m.get("origin", "unknown")) for m in cs.metas if isinstance(m, dict))
    if origins:
        lines.append("  origins: " + _cut(", ".join(f"{k} {v:,}" for k, v in origins.most_common(6))))
    if cs.meta:
        lines.append("  meta: " + _json(cs.meta))
    if n:
        lines.append(f"  first: {_cut(cs.ids[0], 40)} {_cut(cs.summary(0), 180)}")
    return _finish(lines)


def table_repr(t: Any) -> str:
    n = len(t)
    lines = [
        f"ResponseTable(policy {_cut(t.id, 60)!r}, {n:,} contexts, {t.n_errors:,} errors, "
        f"fingerprint {_cut(t.context_fingerprint, 80)}{_source(t)})"
    ]
    meta = {k: v for k, v in t.policy.items() if k != "id"}
    if meta:
        lines.append("  policy: " + _json(meta))
    acts = Counter(a for a in t.acts if a is not None)
    if acts:
        common = ", ".join(f"{_cut(a, 60)} ×{c:,}" for a, c in acts.most_common(3))
        lines.append(_cut(f"  acts: {len(acts):,} distinct; most frequent {common}"))
    n_prompts = sum(p is not None for p in t.prompts)
    if n_prompts:
        lines.append(f"  prompts: {n_prompts:,} ({len(set(p for p in t.prompts if p is not None)):,} distinct)")
    else:
        lines.append("  prompts: none")
    first_error = next((e for e in t.errors if e), None)
    if first_error:
        lines.append("  first error: " + _cut(first_error, 200))
    return _finish(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "n/a" if math.isnan(v) else f"{v:.4f}"
    return _cut(v, _CELL)


def comparison_repr(c: Any) -> str:
    names = list(c.signatures)
    n_pairs = len(c.means)
    size = f"{n_pairs:,} pairs x {c.n_contexts:,} contexts" if n_pairs else f"{c.n_contexts:,} contexts"
    lines = [f"Comparison({size}, {len(names)} scores, fingerprint {_cut(c.context_fingerprint, 80)})"]
    lines.append("  scores: " + _cut(", ".join(names)))
    if n_pairs:
        if c.per_context is not None:
            rows = f"{len(c.per_context):,} rows in memory"
        elif c.n_rows:
            rows = f"{c.n_rows:,} rows streamed (not kept)"
        else:
            rows = "not kept"
        lines.append(f"  per_context: {rows}")
    if c.matrices is not None:
        p = len(c.policies)
        lines.append(f"  matrices: {p:,} x {p:,} per score (every ordered pair and self-pair)")
    if n_pairs:
        shown = names[:6]
        head = c.means.head(5)
        table = [["a", "b", *[_cut(s, 12) for s in shown]]]
        for _, row in head.iterrows():
            table.append([_fmt(str(row["a"])), _fmt(str(row["b"])), *[_fmt(float(row[s])) for s in shown]])
        widths = [max(len(r[k]) for r in table) for k in range(len(table[0]))]
        more = f" (first 5 of {n_pairs:,} pairs)" if n_pairs > 5 else ""
        extra = f"; {len(names) - 6} more scores" if len(names) > 6 else ""
        lines.append(f"  means{more}{extra}:")
        for r in table:
            lines.append(
                "    " + "  ".join(x.rjust(w) if k > 1 else x.ljust(w) for k, (x, w) in enumerate(zip(r, widths)))
            )
    return _finish(lines)
