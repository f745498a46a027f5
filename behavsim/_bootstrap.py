"""The bootstrap behind behavsim's intervals: validation of its settings, resample counts shared
by every vector of one length, and the means table of per-context rows with percentile intervals.

Below :mod:`behavsim.analysis` (whose ``means_with_ci`` and ``bootstrap_ci`` are the public face)
and below the comparison engine, which checks ``intervals=`` settings and computes intervals chunk
by chunk with :func:`means_with_intervals` — so neither imports the analysis module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._errors import ConfigError

__all__ = [
    "bootstrap_ci",
    "with_intervals",
    "means_with_intervals",
    "group_means",
    "means_from_per_context",
    "check_int",
    "check_confidence",
    "check_seed",
    "CHUNK",
]

#: Floats per resampling block (a memory bound, not a statistical setting).
CHUNK = 4_000_000


# ---------------------------------------------------------------------------- validation
def check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_confidence(confidence: Any) -> float:
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, (int, float, np.floating))
        or not 0.0 < float(confidence) < 1.0
    ):
        raise ConfigError(f"confidence must be a number strictly between 0 and 1, got {confidence!r}")
    return float(confidence)


def check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


# ---------------------------------------------------------------------------- bootstrap
def _resample_counts(m: int, n_resamples: int, seed: int) -> np.ndarray:
    """How often each of ``m`` items is drawn in each of ``n_resamples`` resamples (R x m).

    Depends only on (seed, m), so a vector gets the same resamples wherever it is bootstrapped.
    """
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, m, size=(n_resamples, m))
    flat = idx + (np.arange(n_resamples)[:, None] * m)
    return np.bincount(flat.ravel(), minlength=n_resamples * m).reshape(n_resamples, m).astype(np.float64)


def _bootstrap_rows(values: np.ndarray, n_resamples: int, confidence: float, seed: int) -> np.ndarray:
    """Percentile intervals for the mean of each row of a (k x m) matrix without NaN -> (k x 2)."""
    k, m = values.shape
    out = np.empty((k, 2))
    alpha = (1.0 - confidence) / 2.0
    counts = _resample_counts(m, n_resamples, seed)
    means = values @ counts.T / m  # (k x R): resample means of every row at once
    out[:] = np.quantile(means, [alpha, 1.0 - alpha], axis=1).T
    return out


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (per-context scores), NaN ignored.

    ``n_resamples`` resamples of the non-NaN values (with replacement, same size) are drawn with
    ``np.random.default_rng(seed)``; the interval is the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` quantiles of their means. No value left -> ``(nan, nan)``; one value
    (or all equal) -> a zero-width interval.
    """
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    confidence = check_confidence(confidence)
    seed = check_seed(seed)
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError("values must be a one-dimensional sequence of numbers") from None
    if v.ndim != 1:
        raise ConfigError(f"values must be one-dimensional, got shape {v.shape}")
    v = v[~np.isnan(v)]
    if v.size == 0:
        return (math.nan, math.nan)
    lo, hi = _bootstrap_rows(v[None, :], n_resamples, confidence, seed)[0]
    return (float(lo), float(hi))


def _n_missing(values: pd.Series) -> int:
    return int(values.isna().sum())


def group_means(rows: pd.DataFrame, keys: list[str], scores: list[str], *, dropna: bool = True) -> pd.DataFrame:
    """Per group of ``keys`` (sorted): ``n`` (rows), the mean of each score (NaN ignored) and
    ``n_missing_<score>``."""
    g = rows.groupby(keys, sort=True, dropna=dropna)
    out = g.size().rename("n").reset_index()
    means = g[scores].mean().reset_index(drop=True)
    missing = g[scores].agg(_n_missing).reset_index(drop=True)
    missing.columns = [f"n_missing_{s}" for s in scores]
    return pd.concat([out, means, missing], axis=1)


def means_from_per_context(per: pd.DataFrame, scores: list[str]) -> pd.DataFrame:
    return group_means(per, [c for c in ("pair", "a", "b") if c in per.columns], scores, dropna=False)


def with_intervals(
    base: pd.DataFrame, per: pd.DataFrame, names: list[str], *, n_resamples: int, confidence: float, seed: int
) -> pd.DataFrame:
    """``base`` (one row per pair: ``pair``, means) with ``<score>_lo`` and ``<score>_hi``: the
    :func:`bootstrap_ci` of each pair's per-context values in ``per`` (NaN ignored). All (pair,
    score) vectors with the same number of values share one resample matrix. Settings already
    checked; they are recorded in ``result.attrs["bootstrap"]``."""
    pairs = base["pair"].tolist()
    groups = {p: g for p, g in per.groupby("pair", sort=False)}
    lo = np.full((len(pairs), len(names)), np.nan)
    hi = np.full_like(lo, np.nan)
    # collect the non-NaN vectors, grouped by length
    by_len: dict[int, list[tuple[int, int, np.ndarray]]] = {}
    for r, p in enumerate(pairs):
        g = groups.get(p)
        if g is None:
            continue
        mat = g[names].to_numpy(dtype=np.float64)
        for c in range(len(names)):
            v = mat[:, c]
            v = v[~np.isnan(v)]
            if v.size:
                by_len.setdefault(v.size, []).append((r, c, v))
    for items in by_len.values():
        block = max(1, CHUNK // max(1, n_resamples))
        for start in range(0, len(items), block):
            part = items[start : start + block]
            ci = _bootstrap_rows(np.stack([v for _, _, v in part]), n_resamples, confidence, seed)
            for (r, c, _), (l_, h_) in zip(part, ci):
                lo[r, c], hi[r, c] = l_, h_
    out = base.copy()
    for c, s in enumerate(names):
        out[f"{s}_lo"] = lo[:, c]
        out[f"{s}_hi"] = hi[:, c]
    out.attrs["bootstrap"] = {
        "method": "percentile",
        "n_resamples": n_resamples,
        "confidence": confidence,
        "seed": seed,
        "scores": names,
    }
    return out


def means_with_intervals(
    per: pd.DataFrame, names: list[str], *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """The means of per-context rows (``pair`` and score columns) per pair, with intervals."""
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    confidence = check_confidence(confidence)
    seed = check_seed(seed)
    base = means_from_per_context(per, names)
    return with_intervals(base, per, names, n_resamples=n_resamples, confidence=confidence, seed=seed)
