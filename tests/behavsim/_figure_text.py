"""The text a matplotlib figure really draws, and where: for tests that no two labels overlap and
none is cut at the figure's edge.

:func:`drawn_texts` draws the figure once while recording every :class:`matplotlib.text.Text`
whose ``draw`` runs and that has visible, non-blank text (tick labels outside the view are not
drawn and so not recorded; legend entries and titles are), then asks each for its window extent
(``get_window_extent`` with the figure's renderer, in pixels). :func:`capture_figures` keeps the
figures the plotting functions make.
"""

from __future__ import annotations

import contextlib
import itertools

import matplotlib
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox


def drawn_texts(fig: Figure, rc: dict | None = None) -> list[tuple[str, Bbox]]:
    """(text, extent in pixels) of every text the figure draws (under the settings ``rc``)."""
    seen: list[Text] = []
    original = Text.draw

    def draw(self, renderer):
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            seen.append(self)

    with matplotlib.rc_context(rc or {}):
        Text.draw = draw
        try:
            fig.canvas.draw()
        finally:
            Text.draw = original
        renderer = fig.canvas.get_renderer()
        return [(t.get_text(), t.get_window_extent(renderer)) for t in seen]


def overlapping(texts: list[tuple[str, Bbox]], slack: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes (each shrunk by ``slack`` pixels) intersect."""
    out = []
    for (ta, a), (tb, b) in itertools.combinations(texts, 2):
        if min(a.x1, b.x1) - max(a.x0, b.x0) > 2 * slack and min(a.y1, b.y1) - max(a.y0, b.y0) > 2 * slack:
            out.append((ta, tb))
    return out


def cut(fig: Figure, texts: list[tuple[str, Bbox]], slack: float = 0.5) -> list[str]:
    """Texts reaching beyond the figure's edges."""
    w, h = fig.bbox.width, fig.bbox.height
    return [t for t, b in texts if b.x0 < -slack or b.y0 < -slack or b.x1 > w + slack or b.y1 > h + slack]


@contextlib.contextmanager
def capture_figures(monkeypatch):
    """Every Figure saved (``Figure.savefig``) inside the block, in order."""
    figs: list[Figure] = []
    original = Figure.savefig

    def savefig(self, *args, **kwargs):
        if not figs or figs[-1] is not self:
            figs.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    try:
        yield figs
    finally:
        monkeypatch.setattr(Figure, "savefig", original)
