"""Building blocks of self-contained HTML reports, and the report of one :class:`~behavsim.Comparison`.

A page is ONE HTML file: inline CSS, figures embedded as ``data:`` images, no fonts, scripts or
styles from elsewhere (a Content-Security-Policy in the page forbids any network access at view
time). Nothing time- or machine-dependent is written, so the same input gives byte-identical HTML.

* :func:`page` assembles the page (header, table of contents, sections, footer);
  :func:`write_html` writes it atomically.
* :func:`score_table` (keys, ``n`` and every score with its 95% interval), :func:`plain_table`,
  :func:`heatmap_table` (a square matrix coloured by value) render tables;
  :func:`load_figure` / :func:`figures_html` embed PNG or SVG figures.
* :func:`comparison_report` writes the report of any comparison: its means, the correlation
  between its scores over the compared contexts, and the score signatures.

The report of the paper's study (``behavsim report RUN_DIR``) is built from these blocks in
:mod:`experiments.report`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ._comparison import Comparison
from ._errors import ConfigError, TableFormatError
from .analysis import score_agreement
from .scores import list_scores, score_info

__all__ = [
    "comparison_report",
    "page",
    "write_html",
    "score_table",
    "plain_table",
    "heatmap_table",
    "Figure",
    "load_figure",
    "figures_html",
    "score_columns",
    "to_float",
    "escape",
    "fmt_num",
    "fmt_int",
    "fmt_key",
    "note",
]

_NA_STRINGS = {"", "nan", "NaN", "NA", "n/a", "None", "null"}


# ----------------------------------------------------------------------------------- values
def escape(value: Any) -> str:
    """HTML-escape any value (quotes included)."""
    return html.escape(str(value), quote=True)


def fmt_num(v: Any, digits: int = 3) -> str:
    """A number with ``digits`` decimals; ``n/a`` for None, NaN and infinities; no ``-0.000``."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    s = f"{float(v):.{digits}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def fmt_int(v: Any, grouped: bool = False) -> str:
    """A whole number (thousands separated when ``grouped``); other numbers as :func:`fmt_num`."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    f = float(v)
    if f != int(f):
        return fmt_num(f)
    return f"{int(f):,}" if grouped else str(int(f))


def fmt_key(v: Any, col: str) -> str:
    """A key cell: numbers as whole numbers (grouped for ``dialogues``/``checkpoint``), text as is."""
    if isinstance(v, float):
        return fmt_int(v, grouped=col in ("dialogues", "checkpoint"))
    return str(v)


def note(text: str) -> str:
    """A paragraph of the ``note`` class (``text`` is HTML)."""
    return f'<p class="note">{text}</p>\n'


def to_float(col: pd.Series, path: Path | str, name: str) -> pd.Series:
    """Cells read as strings → floats (the usual NA spellings → NaN); a bad cell names file, column, row."""
    out = []
    for i, v in enumerate(col):
        v = v.strip()
        if v in _NA_STRINGS:
            out.append(math.nan)
            continue
        try:
            out.append(float(v))
        except ValueError:
            raise TableFormatError(f"{path}: column {name!r}, data row {i + 1}: expected a number, got {v!r}") from None
    return pd.Series(out, index=col.index, dtype=float)


def score_columns(df: pd.DataFrame) -> list[str]:
    """The score columns: the registered scores present (registry order), then any other column
    with ``_lo``/``_hi`` companions."""
    known = [s for s in list_scores() if s in df.columns]
    extra = [c for c in df.columns if c not in known and f"{c}_lo" in df.columns and f"{c}_hi" in df.columns]
    return known + extra


def _score_title(name: str) -> str:
    try:
        return score_info(name).title or name
    except KeyError:  # not a registered score (UnknownScore is a KeyError)
        return name


# ---------------------------------------------------------------------------------- figures
@dataclass
class Figure:
    """One figure to embed: ``file`` names it in the page; ``problem`` says why it cannot be shown."""

    file: str
    title: str
    section: str = ""
    problem: str | None = None
    mime: str = ""
    data: bytes = b""


def load_figure(path: Path, file: str, title: str, section: str = "") -> Figure:
    """Read a PNG or SVG figure; a missing, unreadable or mislabelled file gives a ``problem``."""
    fig = Figure(file=file, title=title, section=section)
    try:
        data = path.read_bytes()
    except OSError as exc:
        fig.problem = f"cannot be read: {exc}"
        return fig
    if path.suffix.lower() == ".svg":
        if b"<svg" not in data[:4096]:
            fig.problem = "not an SVG file"
            return fig
        fig.mime = "image/svg+xml"
    else:
        if not data.startswith(b"\x89PNG\r\n\x1a\n"):
            fig.problem = "not a PNG file"
            return fig
        fig.mime = "image/png"
    fig.data = data
    return fig


def figures_html(figs: Sequence[Figure]) -> str:
    """Each figure as an embedded image with its caption (or a note saying why it is not shown)."""
    out = []
    for f in figs:
        if f.problem:
            out.append(
                f'<figure class="missing"><p class="note">Figure <code>{escape(f.file)}</code> could not be '
                f"shown: {escape(f.problem)}.</p><figcaption>{escape(f.title)}</figcaption></figure>\n"
            )
            continue
        b64 = base64.b64encode(f.data).decode("ascii")
        out.append(
            f'<figure><img class="figure" alt="{escape(f.title)}" src="data:{f.mime};base64,{b64}">'
            f'<figcaption>{escape(f.title)} <span class="file">({escape(f.file)})</span></figcaption></figure>\n'
        )
    return "".join(out)


# ----------------------------------------------------------------------------------- tables
def _ci_title(lo: float, hi: float) -> str:
    return f"95% CI [{fmt_num(lo)}, {fmt_num(hi)}]"


def score_table(
    df: pd.DataFrame, keys: Sequence[str], table_id: str, caption: str, row_title: Sequence[str] = ("a", "b")
) -> str:
    """Key columns, n, then every score as value with its CI ([lo, hi]) below it.

    ``df`` needs the ``keys``, ``n`` and score columns (``<score>_lo``/``<score>_hi`` optional);
    ``caption`` is HTML. A key repeated from the row above is greyed out.
    """
    scores = score_columns(df)
    head = "".join(f"<th>{escape(k)}</th>" for k in keys) + '<th class="num">n</th>'
    head += "".join(f'<th class="num" title="{escape(_score_title(s))}">{escape(s)}</th>' for s in scores)
    rows = []
    prev: list[str] | None = None
    for rec in df.to_dict("records"):
        cells = [fmt_key(rec[k], k) for k in keys]
        tr_title = ""
        if all(c in rec for c in row_title):
            tr_title = f' title="{escape(" vs ".join(str(rec[c]) for c in row_title))}"'
        tds = []
        for i, c in enumerate(cells):
            same = prev is not None and prev[: i + 1] == cells[: i + 1]
            tds.append(f'<td class="key{" same" if same else ""}">{escape(c)}</td>')
        prev = cells
        tds.append(f'<td class="num">{fmt_int(rec["n"])}</td>')
        for s in scores:
            lo, hi = rec.get(f"{s}_lo"), rec.get(f"{s}_hi")
            if lo is None or hi is None:
                tds.append(f'<td class="num"><span class="v">{fmt_num(rec[s])}</span></td>')
            else:
                tds.append(
                    f'<td class="num" title="{_ci_title(lo, hi)}"><span class="v">{fmt_num(rec[s])}</span>'
                    f'<span class="ci">[{fmt_num(lo)}, {fmt_num(hi)}]</span></td>'
                )
        rows.append(f"<tr{tr_title}>{''.join(tds)}</tr>")
    return (
        f'<div class="wrap"><table class="data scores" id="{escape(table_id)}">'
        f"<caption>{caption}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>\n"
    )


def plain_table(
    df: pd.DataFrame,
    cols: Sequence[str],
    table_id: str,
    caption: str,
    int_cols: Sequence[str] = (),
    text_cols: Sequence[str] = ("policy", "reward"),
) -> str:
    """The columns ``cols`` as they are: numbers right-aligned (``int_cols`` as whole numbers)."""
    head = "".join(f'<th class="{"num" if c not in text_cols else ""}">{escape(c)}</th>' for c in cols)
    rows = []
    for rec in df.to_dict("records"):
        tds = []
        for c in cols:
            v = rec[c]
            if isinstance(v, float):
                txt = fmt_int(v, grouped=c == "dialogues") if c in int_cols else fmt_num(v)
                tds.append(f'<td class="num">{txt}</td>')
            else:
                tds.append(f"<td>{escape(v)}</td>")
        rows.append(f"<tr>{''.join(tds)}</tr>")
    return (
        f'<div class="wrap"><table class="data" id="{escape(table_id)}"><caption>{caption}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>\n"
    )


def _colour(v: float, kind: str, vmax: float) -> str:
    if not math.isfinite(v):
        return "background:#eee"
    if kind == "corr":  # -1 blue .. 0 white .. +1 red
        x = max(-1.0, min(1.0, v))
        target = (178, 24, 43) if x >= 0 else (33, 102, 172)
        a = abs(x)
    else:  # 0 white .. max purple
        a = 0.0 if vmax <= 0 else max(0.0, min(1.0, v / vmax))
        target = (84, 39, 143)
    r, g, b = (round(255 + (t - 255) * a) for t in target)
    fg = "#fff" if a > 0.55 else "#111"
    return f"background:rgb({r},{g},{b});color:{fg}"


def heatmap_table(matrix: pd.DataFrame, kind: str, table_id: str, title: str, source: str = "") -> str:
    """A square matrix (index = row labels, float cells) as a table coloured by value.

    ``kind``: ``"corr"`` (blue −1, white 0, red +1; two decimals) or ``"mse"`` (white 0 up to purple
    at the largest value; three decimals). The caption is ``title`` (HTML), then ``source`` (HTML,
    e.g. the file it comes from) and the colour scale in brackets.
    """
    cols = [str(c) for c in matrix.columns]
    finite = [float(v) for c in matrix.columns for v in matrix[c] if math.isfinite(v)]
    vmax = max(finite) if finite else 0.0
    head = "<th></th>" + "".join(f'<th class="num">{escape(c)}</th>' for c in cols)
    rows = []
    for label, (_, rec) in zip(matrix.index, matrix.iterrows()):
        tds = "".join(
            f'<td class="num" style="{_colour(v, kind, vmax)}">{fmt_num(v, 2 if kind == "corr" else 3)}</td>'
            for v in rec.tolist()
        )
        rows.append(f"<tr><th>{escape(label)}</th>{tds}</tr>")
    scale = "blue −1 · white 0 · red +1" if kind == "corr" else f"white 0 · purple {fmt_num(vmax)} (the largest value)"
    where = f"{source}; " if source else ""
    return (
        f'<div class="heat"><table class="data heatmap" id="{table_id}"><caption>{title} '
        f'<span class="file">({where}colour: {scale})</span></caption>'
        f"<thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>\n"
    )


# ------------------------------------------------------------------------------------- page
_SCRIPT = """\
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.figure'), ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  document.body.setAttribute('data-figures-loaded', ok + '/' + imgs.length);
});
function sortBy(th, dir) {
  var table = th.closest('table'), body = table.tBodies[0], col = th.cellIndex;
  var heads = th.parentNode.cells;
  for (var i = 0; i < heads.length; i++) heads[i].removeAttribute('data-sort');
  th.setAttribute('data-sort', dir);
  var num = /^-?[0-9]+([.][0-9]+)?$/;
  var rows = Array.prototype.slice.call(body.rows);
  rows.sort(function (a, b) {
    var x = a.cells[col].textContent.trim(), y = b.cells[col].textContent.trim();
    var c = num.test(x) && num.test(y) ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
    return dir === 'asc' ? c : -c;
  });
  for (var j = 0; j < rows.length; j++) body.appendChild(rows[j]);
}
document.addEventListener('click', function (e) {
  var th = e.target.closest ? e.target.closest('table.sortable thead th') : null;
  if (th) sortBy(th, th.getAttribute('data-sort') === 'asc' ? 'desc' : 'asc');
});
window.addEventListener('load', function () {  // a link can open a table sorted: #sort=TABLE_ID:COLUMN:asc|desc
  var m = /^#sort=([A-Za-z0-9_-]+):([0-9]+):(asc|desc)$/.exec(window.location.hash);
  var t = m && document.getElementById(m[1]);
  if (t && t.classList.contains('sortable') && t.tHead.rows[0].cells[+m[2]]) sortBy(t.tHead.rows[0].cells[+m[2]], m[3]);
});
"""

_CSS = """\
:root { --fg:#1d1d1f; --muted:#6b6b70; --line:#d9d9de; --band:#f5f5f7; --accent:#2b5797; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); margin: 0 auto; max-width: 1200px; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 1.7rem; margin: 0 0 .3rem; }
h2 { font-size: 1.3rem; margin: 2.5rem 0 .6rem; padding-bottom: .2rem; border-bottom: 2px solid var(--line); }
h3 { font-size: 1.05rem; margin: 1.5rem 0 .4rem; }
a { color: var(--accent); }
code, pre { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.note { color: var(--muted); font-style: italic; border-left: 3px solid var(--line); padding-left: .6rem; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .8rem 0; }
dl.meta dt { color: var(--muted); } dl.meta dd { margin: 0; }
nav.toc { background: var(--band); padding: .6rem 1.2rem; border-radius: 6px; margin: 1rem 0; }
nav.toc ol { margin: .3rem 0; padding-left: 1.4rem; columns: 2; }
.wrap { overflow-x: auto; margin: .6rem 0 1rem; }
table.data { border-collapse: collapse; font-size: 13px; }
table.data caption { caption-side: top; text-align: left; color: var(--muted); padding: .2rem 0 .4rem; }
table.data th, table.data td { padding: .25rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
table.data thead th { background: var(--band); text-align: left; border-bottom: 2px solid var(--line); }
table.data th.group { text-align: center; }
table.data .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.data tbody tr:nth-child(even) { background: #fbfbfc; }
td.key { white-space: nowrap; } td.key.same { color: #b0b0b5; }
span.ci { display: block; font-size: 10.5px; color: var(--muted); }
body:has(#show-ci:not(:checked)) span.ci { display: none; }
label.toggle { font-size: 13px; color: var(--muted); }
table.heatmap td { min-width: 3rem; text-align: center; border: 1px solid #fff;
                   -webkit-print-color-adjust: exact; print-color-adjust: exact; }
.heatmaps { display: flex; flex-wrap: wrap; gap: 1rem 2rem; align-items: flex-start; }
.heat { max-width: 100%; overflow-x: auto; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption, .file { color: var(--muted); font-size: 13px; }
table.sortable thead th { cursor: pointer; }
table.sortable thead th[data-sort="asc"]::after { content: " ▲"; }
table.sortable thead th[data-sort="desc"]::after { content: " ▼"; }
table.disagree td.ctxs { max-width: 24rem; font-size: 12px; }
table.disagree td.ctxs ul { margin: 0; padding-left: 1rem; }
table.disagree td.resp { max-width: 18rem; }
table.disagree td.sc { font-size: 11px; color: var(--muted); max-width: 12rem; }
.cnt { font-weight: 600; } .turn { color: var(--muted); }
.dis-panel:not(:has(input.all:checked)) tr.rest { display: none; }
p.filter label { margin-right: .8rem; white-space: nowrap; }
code.act { background: var(--band); padding: 0 .2rem; word-break: break-word; }
code.fp { font-size: 11px; word-break: break-all; }
td.name { white-space: nowrap; }
details { margin: .4rem 0 1rem; }
details > summary { cursor: pointer; color: var(--accent); }
td details { margin: .2rem 0 0; font-size: 12px; }
ul.tests li { margin: .5rem 0; } .desc { color: var(--muted); font-size: 13px; }
pre.config { background: var(--band); padding: .8rem; overflow-x: auto; white-space: pre-wrap; }
footer { margin-top: 3rem; color: var(--muted); font-size: 12px; }
@page { size: A4; margin: 12mm 11mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10.5px; }
  nav.toc, label.toggle, p.filter { display: none; }
  .dis-panel { display: block !important; }  /* on paper every comparison kind, each its most frequent rows */
  .wrap { overflow: visible; }
  h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin: 1.2rem 0 .4rem; break-after: avoid; }
  h3 { break-after: avoid; }
  figure, tr, li { break-inside: avoid; }
  table.data caption, table.data thead { break-after: avoid; }
  figure { margin: .5rem 0; } figure img { max-height: 17cm; border: 0; }
  table.data { font-size: 9.5px; }
  table.data th, table.data td { padding: .15rem .35rem; }
  code, pre { font-size: 9px; }
  .desc, figcaption, .file, table.disagree td.ctxs, table.disagree td.sc, td details { font-size: 9px; }
  table.heatmap td { min-width: 2.3rem; }
  .heatmaps { gap: .5rem 1rem; }
  a { color: inherit; text-decoration: none; }
  details > summary { color: var(--muted); }
}
"""


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(("\n" + _SCRIPT).encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'"
    )


def page(title: str, sections: Sequence[tuple[str, str, str]], footer: str) -> str:
    """The whole HTML page: ``sections`` are ``(anchor, heading, body HTML)`` in page order, each
    listed in the table of contents; ``title`` is text, ``footer`` HTML. The header carries the
    switch that shows or hides the confidence intervals of :func:`score_table`."""
    toc = "".join(f'<li><a href="#{k}">{escape(t)}</a></li>' for k, t, _ in sections)
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{_csp()}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{escape(title)}</title>\n<style>\n{_CSS}</style>\n",
        f"<script>\n{_SCRIPT}</script>\n</head>\n<body>\n",  # the CSP hash covers exactly "\n" + _SCRIPT
        f"<header><h1>{escape(title)}</h1>\n"
        '<label class="toggle"><input type="checkbox" id="show-ci" checked> show 95% confidence intervals'
        "</label></header>\n",
        f'<nav class="toc"><b>Contents</b><ol>{toc}</ol></nav>\n',
    ]
    for key, heading, body in sections:
        parts.append(f'<section id="{key}">\n<h2>{escape(heading)}</h2>\n{body}</section>\n')
    parts.append(f"<footer>{footer}</footer>\n</body>\n</html>\n")
    return "".join(parts)


def write_html(text: str, out: str | os.PathLike) -> Path:
    """Write ``text`` to ``out`` atomically (UTF-8); refuses a directory. Returns the path."""
    out = Path(out)
    if out.is_dir():
        raise ConfigError(f"output {str(out)!r} is a directory; give a file name such as report.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(text.encode("utf-8"))
    os.replace(tmp, out)
    return out


# ------------------------------------------------------------------------ one comparison
def comparison_report(comparison: Comparison, path: str | os.PathLike, *, title: str = "behavsim comparison") -> Path:
    """Write the HTML report of ``comparison`` to ``path``; return the path.

    Sections: the mean of every score per compared pair (with its 95% interval when the means
    carry ``<score>_lo``/``<score>_hi``, e.g. from :func:`behavsim.analysis.means_with_ci`), the
    Pearson correlation and mean squared error between the scores over every compared
    (pair, context), and the score signatures.
    """
    if not isinstance(comparison, Comparison):
        raise ConfigError(f"comparison: expected a behavsim.Comparison, got {type(comparison).__name__}")
    names = comparison.score_names
    means = comparison.means
    caption = (
        f"Mean per-context similarity of each compared pair ({len(means)} pairs; context set "
        f"<code>{escape(comparison.context_fingerprint)}</code>)."
    )
    sections = [("means", "Means per pair", score_table(means, ["a", "b"], "means", caption))]
    if len(names) >= 2 and comparison.per_context is not None:  # (rows streamed: no agreement)
        corr, mse = score_agreement(comparison.per_context, names)
        n = corr.attrs.get("n_rows", len(comparison.per_context))
        body = (
            '<div class="heatmaps">'
            + heatmap_table(corr, "corr", "score_corr", "Pearson correlation", f"n = {n}")
            + heatmap_table(mse, "mse", "score_mse", "Mean squared error", f"n = {n}")
            + "</div>\n"
        )
    else:
        body = note("One score only: nothing to correlate.")
    sections.append(("scores", "Agreement between the scores", body))
    rows = "".join(
        f"<tr><th>{escape(k)}</th><td><code>{escape(v)}</code></td></tr>" for k, v in comparison.signatures.items()
    )
    sections.append(
        (
            "signatures",
            "Score signatures",
            '<div class="wrap"><table class="data" id="signatures-table"><thead><tr><th>score</th>'
            "<th>signature (everything that changes its value)</th></tr></thead><tbody>"
            + rows
            + "</tbody></table></div>\n",
        )
    )
    policies = json.dumps(comparison.policies, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    sections.append(("policies", "Compared policies", f'<pre class="config">{escape(policies)}</pre>\n'))
    return write_html(
        page(
            title, sections, "Written by <code>behavsim.report.comparison_report</code>; self-contained (no network)."
        ),
        path,
    )
