"""Slices: every score of a comparison broken down by a property of the context or the answer.

Kinds (:data:`SLICE_KINDS`):

* ``acttype`` — the act type of the first policy's answer (``a``) on the context (``(no act)``
  where it failed; an act set's types joined by ``|``, e.g. ``inform|request``); a partition of
  the contexts, per pair.
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

from ._acts import parse_acts
from ._comparison import Comparison
from ._contexts import ContextSet
from ._errors import ConfigError, ContextSetMismatch
from ._inputs import PathLike, as_contexts, as_table_map
from ._per_context import as_per_context, resolve_scores
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
    kind: str, contexts: ContextSet | PathLike, *, bins: Sequence[float] = DEFAULT_CERTAINTY_BINS
) -> list[list[str]]:
    """The values of slice ``kind`` (``slot``, ``uncertainty`` or ``turn``) of every context:
    one value each for a partition, any number for ``slot``."""
    kind = _check_kinds(kind)[0]
    contexts = as_contexts(contexts)
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


def _act_type(act: str) -> str:
    """An act's type; an act set's types joined by ``|`` (``inform|request``)."""
    return "|".join(sorted({a.act_type for a in parse_acts(act)}))


def _act_types(per: pd.DataFrame, tables: Any) -> list[list[str]]:
    if tables is None:
        raise ConfigError("slice 'acttype' needs the response tables (the first policy's acts)")
    by_id = tables if isinstance(tables, dict) else as_table_map(tables)
    cache: dict[str, list[str]] = {}
    out = []
    for a, c in zip(per["a"].astype(str), per["context"].to_numpy()):
        if a not in cache:
            if a not in by_id:
                raise ConfigError(f"tables has no response table of policy {a!r}; got {sorted(by_id)}")
            cache[a] = [NO_ACT if act is None else _act_type(act) for act in by_id[a].acts]
        out.append([cache[a][int(c)]])
    return out


def slice_scores(
    comparison: Comparison | pd.DataFrame,
    kinds: str | Iterable[str] = ("acttype",),
    *,
    contexts: ContextSet | PathLike | None = None,
    tables: Sequence[ResponseTable | PathLike] | Mapping[str, ResponseTable | PathLike] | None = None,
    scores: Iterable[str] | None = None,
    bins: Sequence[float] = DEFAULT_CERTAINTY_BINS,
) -> pd.DataFrame:
    """Every score of ``comparison`` per pair and slice (see the module documentation).

    ``comparison`` is a :class:`~behavsim.Comparison` or its ``per_context`` table. ``acttype``
    needs ``tables`` (the response tables or their paths, a sequence or a mapping id -> table);
    ``slot``, ``uncertainty`` and ``turn`` need ``contexts``, the context set compared (or its path). ``bins``: the inner
    edges of the certainty bins. Rows are sorted by pair, then kind (in the order asked), then
    value (act types and slots alphabetically, bins and turns in order, the "none" value last).
    """
    per = as_per_context(comparison, "comparison")
    kind_list = _check_kinds(kinds)
    edges = _check_bins(bins)
    names = resolve_scores(per, scores)
    if per.empty:
        raise ConfigError("the comparison has no rows (no pair, or no context): nothing to slice")
    for col in ("a", "b"):
        if col not in per.columns:
            raise ConfigError(f"the per-context table needs the column {col!r} (policy ids)")
    if tables is not None:
        tables = as_table_map(tables)
    if contexts is not None:
        contexts = as_contexts(contexts)
        fp = comparison.context_fingerprint if isinstance(comparison, Comparison) else None
        if fp is not None and contexts.fingerprint != fp:
            raise ContextSetMismatch(
                f"contexts ({contexts.fingerprint}) is not the context set the comparison was made on ({fp})"
            )
        if int(per["context"].max()) >= len(contexts):
            raise ContextSetMismatch(
                f"the comparison refers to context {int(per['context'].max())} but contexts has {len(contexts)}"
            )
    acc = _Accumulator(kind_list, names, contexts, tables, edges)
    acc.add(per)
    return acc.result()


def _is_semantic(name: str) -> bool:
    try:
        return score_info(name).level == "semantic"
    except KeyError:  # a column that is not a registered score (UnknownScore is a KeyError)
        return False


class _Accumulator:
    """Sums and counts per (pair, slice kind, value), fed with per-context rows chunk by chunk."""

    def __init__(
        self,
        kinds: list[str],
        names: list[str],
        contexts: ContextSet | None,
        tables: Any,
        edges: tuple[float, ...],
    ) -> None:
        self.kinds, self.names, self.tables, self.edges = kinds, names, tables, edges
        self.semantic = [s for s in names if _is_semantic(s)]
        self.by_ctx: dict[str, list[list[str]]] = {}
        for kind in kinds:
            if kind != "acttype":
                if contexts is None:
                    raise ConfigError(f"slice {kind!r} needs the context set the tables answered (contexts)")
                self.by_ctx[kind] = context_slices(kind, contexts, bins=edges)
        if "acttype" in kinds and tables is None:
            raise ConfigError("slice 'acttype' needs the response tables (the first policy's acts)")
        self.parts: list[pd.DataFrame] = []

    def add(self, per: pd.DataFrame) -> None:
        if per.empty:
            return
        vals = per[self.names].to_numpy(dtype=np.float64)
        if self.semantic:
            answered = ~np.isnan(per[self.semantic].to_numpy(dtype=np.float64)).any(axis=1)
        else:
            answered = np.ones(len(per), dtype=bool)
        ctx = per["context"].to_numpy()
        for kind in self.kinds:
            if kind == "acttype":
                labels = _act_types(per, self.tables)
            else:
                table = self.by_ctx[kind]
                if int(ctx.max()) >= len(table):
                    raise ContextSetMismatch(
                        f"the comparison refers to context {int(ctx.max())} but contexts has {len(table)}"
                    )
                labels = [table[int(c)] for c in ctx]
            self.parts.append(self._partial(per[["pair", "a", "b"]], vals, answered, labels, kind))

    def _partial(
        self, keys: pd.DataFrame, vals: np.ndarray, answered: np.ndarray, labels: list[list[str]], kind: str
    ) -> pd.DataFrame:
        row_idx = np.repeat(np.arange(len(labels)), [len(v) for v in labels])
        frame = keys.iloc[row_idx].reset_index(drop=True)
        frame["slice"] = kind
        frame["value"] = [v for vs in labels for v in vs]
        frame["n_contexts"] = 1
        frame["n"] = answered[row_idx].astype(np.int64)
        v = vals[row_idx]
        for j, name in enumerate(self.names):
            ok = ~np.isnan(v[:, j])
            frame[f"_sum_{name}"] = np.where(ok, v[:, j], 0.0)
            frame[f"n_{name}"] = ok.astype(np.int64)
        return frame.groupby(["pair", "a", "b", "slice", "value"], sort=False).sum().reset_index()

    def result(self) -> pd.DataFrame:
        if not self.parts:
            raise ConfigError("the comparison has no rows (no pair, or no context): nothing to slice")
        total = pd.concat(self.parts, ignore_index=True).groupby(["pair", "a", "b", "slice", "value"], sort=False).sum()
        out = total.reset_index()
        rank = {k: i for i, k in enumerate(self.kinds)}
        order = {k: _value_order(k, out.loc[out["slice"] == k, "value"], self.edges) for k in self.kinds}
        out["_k"] = out["slice"].map(rank)
        out["_v"] = [order[k][v] for k, v in zip(out["slice"], out["value"])]
        out = out.sort_values(["pair", "_k", "_v"], kind="mergesort").reset_index(drop=True)
        out["partition"] = out["slice"].isin(PARTITIONS)
        for name in self.names:
            with np.errstate(invalid="ignore", divide="ignore"):
                out[name] = np.where(out[f"n_{name}"] > 0, out[f"_sum_{name}"] / out[f"n_{name}"], np.nan)
        cols = ["pair", "a", "b", "slice", "value", "partition", "n_contexts", "n", *self.names]
        out = out[cols + [f"n_{s}" for s in self.names]]
        out.attrs["slices"] = {"kinds": self.kinds, "certainty_bins": list(self.edges)}
        return out


_READ_ROWS = 1_000_000  # per-context rows read back at a time by write_slices


def _rows_of(path: Path) -> Iterable[pd.DataFrame]:
    """The per-context rows written by ``compare -o``, in pieces (CSV or Parquet)."""
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq  # a measured start-up cost: loaded when a Parquet file is read or written

        for batch in pq.ParquetFile(path).iter_batches(batch_size=_READ_ROWS):
            yield batch.to_pandas()
    else:
        yield from pd.read_csv(path, chunksize=_READ_ROWS, dtype={"a": str, "b": str, "context_id": str})


def write_slices(
    comparison: Any,
    kinds: str | Iterable[str],
    output: str | Path,
    *,
    tables: Sequence[ResponseTable] | None = None,
    contexts: str | Path | ContextSet | None = None,
    rows: str | Path | None = None,
) -> list[Path]:
    """``compare --slice KIND``: one CSV per kind beside the per-context file ``output``
    (``out.csv`` -> ``out.slice-<kind>.csv``); returns the paths.

    ``comparison`` is a :class:`~behavsim.Comparison`: its rows are used when it kept them, else
    they are read back in pieces from ``rows``, the file :func:`behavsim.compare` streamed them to
    (memory stays bounded); None: they were not written."""
    kind_list = _check_kinds(kinds)
    cs = as_contexts(contexts, "--contexts") if contexts is not None else None
    needs = [k for k in kind_list if k != "acttype"]
    if needs and cs is None:
        raise ConfigError(
            f"--slice {needs[0]} needs --contexts FILE (the context set the tables answered); "
            "only --slice acttype works from the tables alone"
        )
    fp = getattr(comparison, "context_fingerprint", None)
    if cs is not None and fp is not None and cs.fingerprint != fp:
        raise ContextSetMismatch(f"--contexts ({cs.fingerprint}) is not the context set the tables answered ({fp})")
    out = Path(output)
    if isinstance(comparison, Comparison) and comparison.per_context is not None:
        pieces: Iterable[pd.DataFrame] = [comparison.per_context]
    elif rows is not None and Path(rows).is_file():
        pieces = _rows_of(Path(rows))
    else:
        raise ConfigError(
            f"--slice needs the per-context rows, but {out} was not written (--per-context none); "
            "write them as csv or parquet"
        )
    names = list(getattr(comparison, "score_names", [])) or None
    acc: _Accumulator | None = None
    n_read = 0
    for piece in pieces:
        if acc is None:
            acc = _Accumulator(kind_list, resolve_scores(piece, names), cs, tables, DEFAULT_CERTAINTY_BINS)
        acc.add(piece)
        n_read += len(piece)
    if acc is None:
        raise ConfigError(f"{out} holds no per-context rows: nothing to slice")
    expected = getattr(comparison, "n_rows", None)
    if isinstance(expected, int) and expected and expected != n_read:
        raise ConfigError(f"{rows} holds {n_read} per-context rows, the comparison made {expected}")
    table = acc.result()
    paths = []
    for kind in kind_list:
        path = out.with_name(f"{out.stem}.slice-{kind}.csv")
        table[table["slice"] == kind].to_csv(path, index=False, float_format="%.10g")
        paths.append(path)
    return paths
