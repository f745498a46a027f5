"""Slices: every score of a comparison broken down by a property of the context or the answer.

Kinds (:data:`SLICE_KINDS`):

* ``acttype`` — the act type of the first policy's answer (``a``) on the context (``(no act)``
  where it failed); a partition of the contexts, per pair.
* ``slot`` — each informable slot the context's belief mentions: some value other than
  ``**NONE**`` (``dontcare`` included) has a probability above 0. A context mentioning two slots
  counts in both, one mentioning none in ``(no slot)``: **not** a partition.
* ``uncertainty`` — how certain the belief is: the mean, over the constrained slots (those whose
  most probable value is not ``**NONE**``), of that top value's probability, in bins
  (:data:`DEFAULT_CERTAINTY_BINS`: ``[0, 0.5)``, ``[0.5, 0.7)``, ``[0.7, 0.9)``, ``[0.9, 1]``),
  and ``no constraint``; a partition.
* ``turn`` — the context's ``turn`` metadata (collected contexts), ``(no turn)`` where absent; a
  partition.

The informable slots of a belief are the distributions under ``belief["beliefs"]`` that hold
``**NONE**`` (PyDial's layout; ``method`` and ``discourseAct`` have none).

One row per (pair, slice kind, value): ``pair, a, b, slice, value, partition, n_contexts, n``, the
mean of every score over the slice's contexts (NaN ignored) and ``n_<score>``, the contexts with a
defined value of that score. ``n`` counts the contexts where both policies answered (the act
scores are defined), so for a partition ``sum(n * TMR) / sum(n)`` is the pair's mean TMR exactly,
and ``sum(n_<score> * <score>) / sum(n_<score>)`` recombines any score, text scores included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._acts import parse_act
from ._contexts import ContextSet
from ._engine import Comparison
from ._errors import ConfigError, ContextSetMismatch
from ._tables import ResponseTable
from ._util import did_you_mean
from .scores import score_info

__all__ = ["SLICE_KINDS", "PARTITIONS", "DEFAULT_CERTAINTY_BINS", "slice_scores", "context_slices", "write_slices"]

SLICE_KINDS = ("acttype", "slot", "uncertainty", "turn")
PARTITIONS = frozenset({"acttype", "uncertainty", "turn"})
DEFAULT_CERTAINTY_BINS = (0.5, 0.7, 0.9)
_NONE = "**NONE**"
NO_ACT, NO_SLOT, NO_CONSTRAINT, NO_TURN = "(no act)", "(no slot)", "no constraint", "(no turn)"


def _check_kinds(kinds: str | Iterable[str]) -> list[str]:
    if isinstance(kinds, str):
        kinds = [kinds]
    out: list[str] = []
    for raw in kinds:
        if not isinstance(raw, str):
            raise ConfigError(f"slice kinds must be names, got {raw!r}")
        for k in raw.split(","):
            k = k.strip().lower()
            if not k:
                continue
            if k not in SLICE_KINDS:
                raise ConfigError(
                    f"unknown slice {k!r}.{did_you_mean(k, SLICE_KINDS)} Valid slices: {', '.join(SLICE_KINDS)}"
                )
            if k not in out:
                out.append(k)
    if not out:
        raise ConfigError(f"no slice kind given; valid slices: {', '.join(SLICE_KINDS)}")
    return out


def _check_bins(bins: Sequence[float]) -> tuple[float, ...]:
    try:
        edges = tuple(float(b) for b in bins)
    except (TypeError, ValueError):
        raise ConfigError(f"bins must be increasing numbers in (0, 1), got {bins!r}") from None
    if not edges or any(not 0.0 < e < 1.0 for e in edges) or list(edges) != sorted(set(edges)):
        raise ConfigError(f"bins must be increasing numbers in (0, 1), got {list(bins)!r}")
    return edges


def _bin_labels(edges: tuple[float, ...]) -> list[str]:
    cuts = [0.0, *edges, 1.0]
    return [
        f"[{lo:g}, {hi:g})" if i < len(edges) else f"[{lo:g}, {hi:g}]" for i, (lo, hi) in enumerate(zip(cuts, cuts[1:]))
    ]


def _slot_dists(belief: Mapping[str, Any]) -> dict[str, Mapping[str, float]]:
    b = belief.get("beliefs") if isinstance(belief, Mapping) else None
    if not isinstance(b, Mapping):
        return {}
    return {str(s): d for s, d in b.items() if isinstance(d, Mapping) and _NONE in d}


def _mentioned(dist: Mapping[str, float]) -> bool:
    return any(v != _NONE and float(p) > 0.0 for v, p in dist.items())


def _certainty(slots: Mapping[str, Mapping[str, float]]) -> float | None:
    """Mean top-value probability over the constrained slots (None: no constrained slot)."""
    tops = []
    for dist in slots.values():
        none = float(dist.get(_NONE, 0.0))
        top = max((float(p) for v, p in dist.items() if v != _NONE), default=0.0)
        if top > 0.0 and top >= none:  # the most probable value is a real one (a tie goes to it)
            tops.append(top)
    return sum(tops) / len(tops) if tops else None


def context_slices(
    kind: str, contexts: ContextSet, *, bins: Sequence[float] = DEFAULT_CERTAINTY_BINS
) -> list[list[str]]:
    """The values of slice ``kind`` (``slot``, ``uncertainty`` or ``turn``) of every context:
    one value each for a partition, any number for ``slot``."""
    kind = _check_kinds(kind)[0]
    if not isinstance(contexts, ContextSet):
        raise ConfigError(f"contexts must be a behavsim.ContextSet, got {type(contexts).__name__}")
    if kind == "acttype":
        raise ConfigError("the acttype slice depends on the answers: use slice_scores with the response tables")
    if kind == "turn":
        turns = [m.get("turn") for m in contexts.metas]
        if all(t is None for t in turns):
            raise ConfigError(
                "slice 'turn': no context carries a turn (generated contexts have none; collected ones do)"
            )
        return [[NO_TURN] if t is None else [str(int(t))] for t in turns]
    dists = [_slot_dists(b) for b in contexts.beliefs]
    if not any(dists):
        raise ConfigError(
            f"slice {kind!r}: no context has a belief over slots (expected PyDial's layout: "
            "belief['beliefs'][slot] = {value: p, ..., '**NONE**': p})"
        )
    if kind == "slot":
        return [sorted(s for s, d in ds.items() if _mentioned(d)) or [NO_SLOT] for ds in dists]
    edges = _check_bins(bins)
    labels = _bin_labels(edges)
    out = []
    for ds in dists:
        c = _certainty(ds)
        if c is None:
            out.append([NO_CONSTRAINT])
        else:
            out.append([labels[int(np.searchsorted(edges, round(c, 12), side="right"))]])
    return out


def _value_order(kind: str, values: Iterable[str], bins: tuple[float, ...]) -> dict[str, int]:
    vals = sorted(set(values))
    if kind == "uncertainty":
        ranks = {v: i for i, v in enumerate(_bin_labels(bins) + [NO_CONSTRAINT])}
        vals.sort(key=lambda v: ranks.get(v, len(ranks)))
    elif kind == "turn":
        vals.sort(key=lambda v: (v == NO_TURN, int(v) if v != NO_TURN else 0))
    else:
        last = {NO_ACT, NO_SLOT}
        vals.sort(key=lambda v: (v in last, v))
    return {v: i for i, v in enumerate(vals)}


def _act_types(per: pd.DataFrame, tables: Any) -> list[list[str]]:
    if tables is None:
        raise ConfigError("slice 'acttype' needs the response tables (the first policy's acts)")
    if isinstance(tables, Mapping):
        by_id = {str(k): t for k, t in tables.items()}
    else:
        by_id = {t.id: t for t in tables}
    for t in by_id.values():
        if not isinstance(t, ResponseTable):
            raise ConfigError(f"tables must be behavsim.ResponseTable objects, got {type(t).__name__}")
    cache: dict[str, list[str]] = {}
    out = []
    for a, c in zip(per["a"].astype(str), per["context"].to_numpy()):
        if a not in cache:
            if a not in by_id:
                raise ConfigError(f"tables has no response table of policy {a!r}; got {sorted(by_id)}")
            cache[a] = [NO_ACT if act is None else parse_act(act).act_type for act in by_id[a].acts]
        out.append([cache[a][int(c)]])
    return out


def slice_scores(
    comparison: Comparison | pd.DataFrame,
    kinds: str | Iterable[str] = ("acttype",),
    *,
    contexts: ContextSet | None = None,
    tables: Sequence[ResponseTable] | Mapping[str, ResponseTable] | None = None,
    scores: Iterable[str] | None = None,
    bins: Sequence[float] = DEFAULT_CERTAINTY_BINS,
) -> pd.DataFrame:
    """Every score of ``comparison`` per pair and slice (see the module documentation).

    ``comparison`` is a :class:`~behavsim.Comparison` or its ``per_context`` table. ``acttype``
    needs ``tables`` (the response tables, a sequence or a mapping id -> table); ``slot``,
    ``uncertainty`` and ``turn`` need ``contexts``, the context set compared. ``bins``: the inner
    edges of the certainty bins. Rows are sorted by pair, then kind (in the order asked), then
    value (act types and slots alphabetically, bins and turns in order, the "none" value last).
    """
    from .analysis import _as_per_context, _resolve_scores

    per = _as_per_context(comparison, "comparison")
    kind_list = _check_kinds(kinds)
    edges = _check_bins(bins)
    names = _resolve_scores(per, scores)
    if per.empty:
        raise ConfigError("the comparison has no rows (no pair, or no context): nothing to slice")
    for col in ("a", "b"):
        if col not in per.columns:
            raise ConfigError(f"the per-context table needs the column {col!r} (policy ids)")
    if contexts is not None:
        if not isinstance(contexts, ContextSet):
            raise ConfigError(f"contexts must be a behavsim.ContextSet, got {type(contexts).__name__}")
        fp = comparison.context_fingerprint if isinstance(comparison, Comparison) else None
        if fp is not None and contexts.fingerprint != fp:
            raise ContextSetMismatch(
                f"contexts ({contexts.fingerprint}) is not the context set the comparison was made on ({fp})"
            )
        if int(per["context"].max()) >= len(contexts):
            raise ContextSetMismatch(
                f"the comparison refers to context {int(per['context'].max())} but contexts has {len(contexts)}"
            )
    semantic = [s for s in names if _is_semantic(s)]
    vals = per[names].to_numpy(dtype=np.float64)
    answered = ~np.isnan(per[semantic].to_numpy(dtype=np.float64)).any(axis=1) if semantic else np.ones(len(per), bool)
    keys = ["pair", "a", "b"]
    frames = []
    for kind in kind_list:
        if kind == "acttype":
            labels = _act_types(per, tables)
        else:
            if contexts is None:
                raise ConfigError(f"slice {kind!r} needs the context set the tables answered (contexts)")
            by_ctx = context_slices(kind, contexts, bins=edges)
            labels = [by_ctx[int(c)] for c in per["context"].to_numpy()]
        frames.append(_aggregate(per[keys], vals, answered, labels, names, kind, edges))
    out = pd.concat(frames, ignore_index=True)
    rank = {k: i for i, k in enumerate(kind_list)}
    out["_k"] = out["slice"].map(rank)
    out = out.sort_values(["pair", "_k", "_v"], kind="mergesort")
    out = out.drop(columns=["_k", "_v"]).reset_index(drop=True)
    out.attrs["slices"] = {"kinds": kind_list, "certainty_bins": list(edges)}
    return out


def _is_semantic(name: str) -> bool:
    try:
        return score_info(name).level == "semantic"
    except Exception:  # a column that is not a registered score
        return False


def _aggregate(
    keys: pd.DataFrame,
    vals: np.ndarray,
    answered: np.ndarray,
    labels: list[list[str]],
    names: list[str],
    kind: str,
    edges: tuple[float, ...],
) -> pd.DataFrame:
    row_idx = np.repeat(np.arange(len(labels)), [len(v) for v in labels])
    flat = [v for vs in labels for v in vs]
    order = _value_order(kind, flat, edges)
    key_cols = list(keys.columns)
    frame = keys.iloc[row_idx].reset_index(drop=True)
    frame["value"] = flat
    frame["_v"] = [order[v] for v in flat]
    frame["_answered"] = answered[row_idx].astype(np.int64)
    v = vals[row_idx]
    for j, s in enumerate(names):
        frame[s] = v[:, j]
        frame[f"n_{s}"] = (~np.isnan(v[:, j])).astype(np.int64)
    g = frame.groupby(["pair", "_v"], sort=True)
    out = g[[c for c in key_cols if c != "pair"] + ["value"]].first()
    out["n_contexts"] = g.size()
    out["n"] = g["_answered"].sum()
    means = g[names].mean()
    counts = g[[f"n_{s}" for s in names]].sum()
    out = pd.concat([out, means, counts], axis=1).reset_index()
    out.insert(out.columns.get_loc("value"), "slice", kind)
    out.insert(out.columns.get_loc("value") + 1, "partition", kind in PARTITIONS)
    cols = [*key_cols, "slice", "value", "partition", "n_contexts", "n", *names, *[f"n_{s}" for s in names], "_v"]
    return out[cols]


def write_slices(
    comparison: Comparison,
    kinds: str | Iterable[str],
    output: str | Path,
    *,
    tables: Sequence[ResponseTable] | None = None,
    contexts: str | Path | ContextSet | None = None,
) -> list[Path]:
    """``compare --slice KIND``: one CSV per kind beside the per-context CSV ``output``
    (``out.csv`` -> ``out.slice-<kind>.csv``); returns the paths."""
    kind_list = _check_kinds(kinds)
    cs = ContextSet.load(contexts) if isinstance(contexts, (str, Path)) else contexts
    needs = [k for k in kind_list if k != "acttype"]
    if needs and cs is None:
        raise ConfigError(
            f"--slice {needs[0]} needs --contexts FILE (the context set the tables answered); "
            "only --slice acttype works from the tables alone"
        )
    out = Path(output)
    paths = []
    for kind in kind_list:
        df = slice_scores(comparison, [kind], contexts=cs, tables=tables)
        path = out.with_name(f"{out.stem}.slice-{kind}.csv")
        df.to_csv(path, index=False, float_format="%.10g")
        paths.append(path)
    return paths
