"""The report's sections about the run itself: "Run" (config name, code version, wall time, the
context sets in words, and the sections this run does not have), "Other figures" (those no
section claims), "Score signatures" and "Full configuration"."""

from __future__ import annotations

import json
import math
from typing import Any

from behavsim.report import escape
from experiments.report import Report, Section, fold, plural, rank_set

__all__ = ["RUN", "OTHER", "SIGNATURES", "CONFIG"]


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


def _header(report: Report) -> str:
    m = report.manifest
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
        for name in sorted(sets, key=lambda n: rank_set(report.rewards, n)):
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
            + fold(
                "The builders' metadata as recorded (<code>manifest.json</code>)",
                f'<pre class="config">{escape(raw)}</pre>\n',
            )
        )
    if report.absent:
        out += (
            "<p><b>Not in this run:</b> "
            + "; ".join(f"{escape(title)} ({why})" for title, why in report.absent)
            + ".</p>\n"
        )
    return out


def _signatures(report: Report) -> str | None:
    sig = report.manifest.get("signatures") or {}
    if not isinstance(sig, dict) or not sig:
        report.absent.append(("Score signatures", "the manifest records none"))
        return None
    rows = "".join(f"<tr><th>{escape(k)}</th><td><code>{escape(v)}</code></td></tr>" for k, v in sig.items())
    return fold(
        f"{plural(len(sig), 'score signature')}: everything that changes a score's value",
        '<div class="wrap"><table class="data" id="signatures-table"><thead><tr><th>score</th><th>signature '
        "(everything that changes its value)</th></tr></thead><tbody>" + rows + "</tbody></table></div>\n",
    )


def _config(report: Report) -> str | None:
    cfg = report.manifest.get("config", None)
    if cfg is None:
        report.absent.append(("Full configuration", "the manifest records none"))
        return None
    text = json.dumps(cfg, indent=2, ensure_ascii=False)
    return fold("The configuration as JSON (<code>manifest.json</code>)", f'<pre class="config">{escape(text)}</pre>\n')


#: Rendered after the other sections: it names those the run does not have.
RUN = Section(key="run", title="Run", order=200, render=_header, last=True)
#: Every figure no other section claims.
OTHER = Section(key="other", title="Other figures", order=1600, render=lambda report: "", figures=("*",))
SIGNATURES = Section(key="signatures", title="Score signatures", order=1700, render=_signatures)
CONFIG = Section(key="config", title="Full configuration", order=1800, render=_config)
