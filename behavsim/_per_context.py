"""The per-context table of a comparison as the analysis reads it: the checks and the score columns.

Every analysis starts from ``Comparison.per_context`` (one row per (pair, context) with ``pair,
a, b, context, context_id`` and one float column per score, NaN = missing) or the comparison
itself; these helpers accept either, name what is missing in one line, and find and resolve the
score columns (registered names first, in the registry's order).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from ._comparison import Comparison
from ._errors import ConfigError, UnknownScore
from ._sinks import ANSWER_COLUMNS
from ._util import closest_name
from .scores import list_scores

__all__ = ["KEY_COLUMNS", "as_per_context", "score_columns", "resolve_scores"]

#: The key columns of a per-context table (the rest are scores, counts and answers).
KEY_COLUMNS = ("pair", "a", "b", "context", "context_id")


def as_per_context(obj: Any, name: str = "per_context_df") -> pd.DataFrame:
    if isinstance(obj, Comparison):
        if obj.per_context is None:
            raise ConfigError(
                f"{name}: the comparison kept no per-context rows (they were streamed, or not asked for); "
                "compare(..., per_context=True) keeps them"
            )
        obj = obj.per_context
    if not isinstance(obj, pd.DataFrame):
        raise ConfigError(f"{name} must be a Comparison or its per_context DataFrame, got {type(obj).__name__}")
    missing = [c for c in ("pair", "context") if c not in obj.columns]
    if missing:
        raise ConfigError(
            f"{name} lacks the column(s) {missing}; expected the per-context table of "
            f"behavsim.compare (columns {list(KEY_COLUMNS)} + one per score), got {list(obj.columns)}"
        )
    return obj


def score_columns(df: pd.DataFrame) -> list[str]:
    """The score columns of a per-context table: registered names first (registry order), then others."""
    known = [s for s in list_scores() if s in df.columns]
    extra = [
        c
        for c in df.columns
        if c not in known
        and c not in KEY_COLUMNS
        and c not in ANSWER_COLUMNS
        and not str(c).startswith("n_")
        and c != "n"
        and pd.api.types.is_float_dtype(df[c])
    ]
    return known + extra


def resolve_scores(df: pd.DataFrame, scores: str | Iterable[str] | None, name: str = "scores") -> list[str]:
    available = score_columns(df)
    if scores is None:
        if not available:
            raise ConfigError(f"the table has no score columns; columns: {list(df.columns)}")
        return available
    if isinstance(scores, str):
        scores = [scores]
    out = []
    lower = {s.lower(): s for s in available}
    for s in scores:
        if not isinstance(s, str):
            raise ConfigError(f"{name} must be score names, got {s!r}")
        if s in available:
            out.append(s)
        elif s.lower() in lower:
            out.append(lower[s.lower()])
        else:
            raise UnknownScore("score", s, available, closest_name(s, available, cutoff=0.6))
    if len(set(out)) != len(out):
        raise ConfigError(f"{name} lists a score twice: {out}")
    if not out:
        raise ConfigError(f"{name} is empty")
    return out
