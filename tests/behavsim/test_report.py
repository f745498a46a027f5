"""behavsim.report: the generic blocks of an HTML report and the report of one Comparison."""

from __future__ import annotations

import math
from html.parser import HTMLParser

import pandas as pd
import pytest

import behavsim
from behavsim import ResponseTable, compare
from behavsim.report import (
    comparison_report,
    escape,
    fmt_int,
    fmt_num,
    heatmap_table,
    load_figure,
    page,
    score_columns,
    score_table,
    write_html,
)


class _Tables(HTMLParser):
    """Table ids and the text of their cells."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.th_titles: list[str] = []
        self._id: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._id = a.get("id", "")
            self.tables[self._id] = []
        elif tag == "tr" and self._id is not None:
            self.tables[self._id].append([])
        elif tag in ("td", "th") and self._id is not None:
            self._cell = []
            if tag == "th" and a.get("title"):
                self.th_titles.append(a["title"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._id is not None:
            self.tables[self._id][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._id = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _parse(text: str) -> _Tables:
    p = _Tables()
    p.feed(text)
    return p


def test_formatting():
    assert fmt_num(0.12345) == "0.123" and fmt_num(-0.0001) == "0.000" and fmt_num(math.nan) == "n/a"
    assert fmt_int(12000.0, grouped=True) == "12,000" and fmt_int(2.5) == "2.500" and fmt_int(None) == "n/a"
    assert escape('<a href="x">') == "&lt;a href=&quot;x&quot;&gt;"


def test_score_table_uses_registry_titles_and_cis():
    df = pd.DataFrame(
        {
            "a": ["p", "p"],
            "b": ["q", "r"],
            "n": [10.0, 10.0],
            "TMR": [0.5, 0.25],
            "TMR_lo": [0.4, 0.2],
            "TMR_hi": [0.6, 0.3],
            "mine": [1.0, 1.0],
            "mine_lo": [1.0, 1.0],
            "mine_hi": [1.0, 1.0],
        }
    )
    assert score_columns(df) == ["TMR", "mine"]
    html = score_table(df, ["a", "b"], "t", "caption")
    p = _parse(html)
    assert p.tables["t"][1] == ["p", "q", "10", "0.500[0.400, 0.600]", "1.000[1.000, 1.000]"]
    assert behavsim.score_info("TMR").title in p.th_titles and "mine" in p.th_titles


def test_heatmap_table_and_page(tmp_path):
    m = pd.DataFrame([[1.0, -0.5], [-0.5, math.nan]], index=["TMR", "DMR"], columns=["TMR", "DMR"])
    html = heatmap_table(m, "corr", "h", "Correlation", "<code>x.csv</code>")
    assert "(<code>x.csv</code>; colour: blue −1 · white 0 · red +1)" in html
    assert _parse(html).tables["h"][1:] == [["TMR", "1.00", "-0.50"], ["DMR", "-0.50", "n/a"]]
    text = page("A <title>", [("one", "One", "<p>body</p>\n")], "footer")
    assert "<title>A &lt;title&gt;</title>" in text and '<section id="one">' in text and 'href="#one"' in text
    out = write_html(text, tmp_path / "sub" / "p.html")
    assert out.read_text(encoding="utf-8") == text
    with pytest.raises(behavsim.ConfigError, match="is a directory"):
        write_html(text, tmp_path)
    (tmp_path / "bad.png").write_bytes(b"nope")
    assert load_figure(tmp_path / "bad.png", "bad.png", "t").problem == "not a PNG file"


CONTEXTS = [{"beliefs": {"area": {"north": p, "**NONE**": 1 - p}}} for p in (0.0, 0.25, 0.5, 0.75, 1.0)]
ACTS = {
    "p": ["request(area)", "request(food)", "confirm(area=north)", "bye()", "reqmore()"],
    "q": ["request(area)", "request(pricerange)", "confirm(area=north)", "reqmore()", "bye()"],
    "r": ["request(food)", "request(food)", "confirm(area=south)", "bye()", "bye()"],
}


def test_comparison_report(tmp_path):
    fp = behavsim.context_fingerprint(CONTEXTS)
    tables = [
        ResponseTable(policy={"id": k}, context_fingerprint=fp, acts=v, prompts=[a.split("(")[0] for a in v])
        for k, v in ACTS.items()
    ]
    comp = compare(tables, "all", scores=["TMR", "DMR", "CMR", "BLEU4"])
    out = comparison_report(comp, tmp_path / "c.html")
    text = out.read_text(encoding="utf-8")
    p = _parse(text)
    row = p.tables["means"][1]
    assert row[:2] == [comp.means["a"].iloc[0], comp.means["b"].iloc[0]]
    assert row[3:] == [fmt_num(comp.means[s].iloc[0]) for s in comp.score_names]
    assert [r[0] for r in p.tables["score_corr"][1:]] == comp.score_names
    assert [r[0] for r in p.tables["signatures-table"][1:]] == comp.score_names
    assert "http" not in text.split("<body>")[1].split("<pre")[0]
    assert comparison_report(comp, tmp_path / "d.html").read_bytes() == out.read_bytes()
    with pytest.raises(behavsim.ConfigError, match="expected a behavsim.Comparison"):
        comparison_report(comp.means, tmp_path / "e.html")


def test_core_report_and_plots_import_no_study_code():
    import subprocess
    import sys

    code = (
        "import sys, behavsim.report, behavsim.plots; bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('policies', 'contexts', 'experiments')); print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
