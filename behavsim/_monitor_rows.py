"""The convergence monitor's records: the lags a snapshot is compared at, the stop rule, a
snapshot's result, and ``convergence.csv`` (its columns, written and read back).

Public through :mod:`behavsim.monitor`, which watches the training and draws (``_monitor_plots``).
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import ConfigError, TableFormatError
from ._io import atomic_path
from .scores import scores as score_registry

#: What a snapshot is compared with: the previous snapshot, the one ``lag`` snapshots back, the
#: first, a fixed reference policy, and (once the run is finished) the last.
LAGS = ("vs_prev", "vs_lag", "vs_first", "vs_ref", "vs_final")
#: The column naming the snapshot a lag compared with (``vs_ref`` has none: it is one table).
LAG_DIALOGUES = {"vs_lag": "lag_dialogues", "vs_first": "first_dialogues", "vs_final": "final_dialogues"}


def lag_column(score: str, lag: str) -> str:
    """The CSV column of ``score`` at ``lag``: ``"TMR"`` for ``vs_prev`` (the original columns),
    ``"TMR_vs_lag"``, ``"TMR_vs_first"``, ``"TMR_vs_ref"``, ``"TMR_vs_final"`` for the others."""
    if lag not in LAGS:
        raise ConfigError(f"lag: expected one of {', '.join(LAGS)}, got {lag!r}")
    return score if lag == "vs_prev" else f"{score}_{lag}"


def csv_columns(scores: Sequence[str]) -> list[str]:
    """Every column of ``convergence.csv``: the original ones (vs_prev, ``n`` last of them), then
    each further lag's block, its snapshot column first."""
    cols = ["dialogues", "prev_dialogues", *scores, "n"]
    for lag in LAGS[1:]:
        if lag in LAG_DIALOGUES:
            cols.append(LAG_DIALOGUES[lag])
        cols += [lag_column(s, lag) for s in scores]
    return cols


def is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _fmt_float(v: float) -> str:
    return "" if v is None or math.isnan(v) else repr(float(v))


def atomic_write(path: Path, data: str | bytes) -> None:
    """``data`` into ``path`` at once (a temporary file beside it, renamed)."""
    with atomic_path(path) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")


# ----------------------------------------------------------------------------- stop rule
@dataclass(frozen=True)
class StopRule:
    """Convergence criterion: ``score`` ≥ ``threshold`` in each of the last ``patience``
    comparisons (snapshot k vs k−1). The paper uses TMR as the main criterion (§4.2.1).

    The rule only *advises*: :attr:`ConvergenceMonitor.should_stop` turns true, the training
    loop decides whether to stop. A missing (NaN) value never satisfies it.
    """

    score: str = "TMR"
    threshold: float = 0.99
    patience: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.score, str):
            raise ConfigError(f"stop_rule.score: expected a score name, got {self.score!r}")
        object.__setattr__(self, "score", score_registry.canonical(self.score))
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 <= float(t) <= 1.0:
            raise ConfigError(f"stop_rule.threshold: expected a number in [0, 1], got {t!r}")
        object.__setattr__(self, "threshold", float(t))
        if not is_int(self.patience) or self.patience < 1:
            raise ConfigError(f"stop_rule.patience: expected a positive integer, got {self.patience!r}")

    @classmethod
    def parse(cls, text: str) -> "StopRule":
        """``"TMR:0.99:3"`` (score, threshold, patience; the last two optional)."""
        parts = str(text).split(":")
        if not 1 <= len(parts) <= 3 or not parts[0]:
            raise ConfigError(f"stop rule {text!r}: expected SCORE[:THRESHOLD[:PATIENCE]], e.g. TMR:0.99:3")
        kw: dict[str, Any] = {"score": parts[0]}
        try:
            if len(parts) > 1:
                kw["threshold"] = float(parts[1])
            if len(parts) > 2:
                kw["patience"] = int(parts[2])
        except ValueError:
            raise ConfigError(
                f"stop rule {text!r}: threshold must be a number and patience an integer, e.g. TMR:0.99:3"
            ) from None
        return cls(**kw)

    def met_at(self, rows: Sequence[Mapping[str, Any]]) -> list[bool]:
        """For each row (in order): is the rule met with that row as the latest?"""
        out, run = [], 0
        for r in rows:
            v = r.get(self.score)
            ok = v is not None and not math.isnan(float(v)) and float(v) >= self.threshold
            run = run + 1 if ok else 0
            out.append(run >= self.patience)
        return out

    def met(self, rows: Sequence[Mapping[str, Any]]) -> bool:
        """Whether the last ``patience`` rows all satisfy the rule."""
        flags = self.met_at(rows)
        return bool(flags and flags[-1])

    def first_met(self, rows: Sequence[Mapping[str, Any]]) -> int | None:
        """Training dialogues of the first row at which the rule was met (``None``: never)."""
        for r, ok in zip(rows, self.met_at(rows)):
            if ok:
                return int(r["dialogues"])
        return None

    def describe(self) -> str:
        return f"{self.score} >= {self.threshold:g} in {self.patience} consecutive comparisons"

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "threshold": self.threshold, "patience": self.patience}


# ----------------------------------------------------------------------------- results
@dataclass
class SnapshotResult:
    """What one snapshot produced. ``prev_dialogues`` is ``None`` (and ``scores`` empty) for the
    first snapshot, which has nothing to be compared with. ``scores`` are against the previous
    snapshot; ``lags`` maps ``"vs_lag"``, ``"vs_first"``, ``"vs_ref"`` to the scores against
    those, where they are defined."""

    dialogues: int
    prev_dialogues: int | None
    scores: dict[str, float]
    n: int
    table_path: Path
    n_errors: int = 0
    converged: bool = False
    lags: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def compared(self) -> bool:
        return self.prev_dialogues is not None

    def line(self) -> str:
        """``2000 vs 1000: TMR 0.978 DMR 0.989 CER 0.978 CMR 0.980``."""
        if not self.compared:
            text = f"{self.dialogues}: first snapshot ({self.n} contexts)"
        else:
            vals = " ".join(f"{k} {'n/a' if math.isnan(v) else f'{v:.3f}'}" for k, v in self.scores.items())
            text = f"{self.dialogues} vs {self.prev_dialogues}: {vals}"
        if self.n_errors:
            text += f"  ({self.n_errors} contexts failed)"
        if self.converged:
            text += "  [converged]"
        return text

    def __str__(self) -> str:
        return self.line()


# ----------------------------------------------------------------------------- CSV and plot
def read_convergence(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Rows of a ``convergence.csv`` (``dialogues``/``prev_dialogues``/``n`` as int, the other
    ``*_dialogues`` columns as int or ``None`` where empty, scores as float, NaN where empty)."""
    path = Path(path)
    rows = []
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            cols = reader.fieldnames or []
            if cols[:2] != ["dialogues", "prev_dialogues"] or "n" not in cols:
                raise TableFormatError(f"{path}: not a convergence table (columns {cols})")
            for raw in reader:
                row: dict[str, Any] = {}
                for c in cols:
                    v = raw.get(c)
                    if c in ("dialogues", "prev_dialogues", "n"):
                        row[c] = int(v)  # type: ignore[arg-type]  # None (a short row) -> TypeError, caught below
                    elif c.endswith("_dialogues"):
                        row[c] = int(v) if v not in (None, "") else None
                    else:
                        row[c] = float(v) if v not in (None, "") else math.nan
                rows.append(row)
    except (ValueError, TypeError, csv.Error) as exc:
        raise TableFormatError(f"{path}: damaged convergence table ({exc})") from None
    return rows


def csv_text(rows: Sequence[Mapping[str, Any]], scores: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = csv_columns(scores)
    w.writerow(cols)
    for r in rows:
        out = []
        for c in cols:
            v = r.get(c)
            if c.endswith("dialogues") or c == "n":
                out.append("" if v is None else str(int(v)))
            else:
                out.append(_fmt_float(math.nan if v is None else v))
        w.writerow(out)
    return buf.getvalue()
