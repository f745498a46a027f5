"""Where :func:`behavsim.compare`'s values go: the sinks of the kernel's second pass.

* :class:`MeansSink`: per compared pair, the mean of each score over the contexts where it is
  defined (``v[ok].mean()`` of the pair's values) and the counts — from chunks of whole pairs, so
  the means are the same whatever the chunk size.
* :class:`FrameSink`: the per-context rows kept in memory, one DataFrame.
* :class:`StreamSink`: the per-context rows handed to a callable piece by piece (e.g. a
  :class:`PerContextWriter`, which writes them to one CSV or Parquet file as they come).
* :func:`matrices`: the P×P matrices of pair means from the kernel's compensated sums.

A per-context row: ``pair, a, b, context, context_id``, with ``answers`` also ``act_a, act_b,
prompt_a, prompt_b``, then one column per score (NaN where a value is missing), pair-major.

**Not applicable** (:class:`NotApplicable`): a policy that answered a context with text only (an
end-to-end model: no act, no error) has no act to compare, so the semantic scores of its pairs do
not apply there. Where any compared table has such answers, the outputs say so: the rows gain a
boolean column ``semantic_na``, the means ``n_na_<score>`` for each semantic score beside
``n_missing_<score>`` (which then counts failures only), the matrices their ``n_na`` frames.
Comparisons of tables without text-only answers are exactly as before.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ._bootstrap import means_with_intervals
from ._errors import ConfigError
from ._tables import ResponseTable

__all__ = [
    "MeansSink",
    "IntervalSink",
    "FrameSink",
    "StreamSink",
    "PerContextWriter",
    "PER_CONTEXT_FORMATS",
    "ANSWER_COLUMNS",
    "NotApplicable",
    "NA_COLUMN",
]

#: The per-context column marking the contexts where the semantic scores do not apply.
NA_COLUMN = "semantic_na"


class NotApplicable:
    """Where the semantic scores ``names`` do not apply: the contexts of a pair where one side
    answered with text only and neither side failed (a failure stays a missing value)."""

    def __init__(self, tables: Sequence[ResponseTable], names: Sequence[str]) -> None:
        self.text_only = np.array(
            [[a is None and e is None for a, e in zip(t.acts, t.errors)] for t in tables], dtype=bool
        ).reshape(len(tables), -1)
        self.names = list(names)
        self.active = bool(self.names) and bool(self.text_only.any())
        # failures matter only beside text-only answers (almost every comparison has none)
        self.failed = (
            np.array([[e is not None for e in t.errors] for t in tables], dtype=bool).reshape(len(tables), -1)
            if self.active
            else np.zeros_like(self.text_only)
        )

    def pair(self, i: int, j: int) -> np.ndarray:
        """The contexts of pair (i, j) where the semantic scores do not apply."""
        return (self.text_only[i] | self.text_only[j]) & ~(self.failed[i] | self.failed[j])

    def rows(self, plan: Sequence[tuple[int, int]]) -> np.ndarray:
        if not plan:
            return np.zeros(0, dtype=bool)
        return np.concatenate([self.pair(i, j) for i, j in plan])

    def matrix(self) -> np.ndarray:
        """P×P: per ordered pair the number of contexts where the semantic scores do not apply
        (``T Gᵀ + G Tᵀ − T Tᵀ`` with T text-only and G not failed: a text-only answer is no failure)."""
        t = self.text_only.astype(np.int64)
        g = (~self.failed).astype(np.int64)
        return t @ g.T + g @ t.T - t @ t.T


#: What ``behavsim compare --per-context`` accepts.
PER_CONTEXT_FORMATS = ("none", "csv", "parquet")

#: The columns ``answers=True`` adds to the per-context rows, after ``context_id``.
ANSWER_COLUMNS = ("act_a", "act_b", "prompt_a", "prompt_b")


def rows_frame(
    plan: Sequence[tuple[int, int]],
    first_pair: int,
    tables: Sequence[ResponseTable],
    columns: dict[str, np.ndarray],
    answers: bool,
    na: NotApplicable | None = None,
) -> pd.DataFrame:
    """The per-context rows of the pairs ``plan`` (numbered from ``first_pair``), pair-major."""
    n_ctx = len(tables[0])
    ids = [t.id for t in tables]
    n_pairs = len(plan)
    keys: dict[str, Any] = {
        "pair": np.repeat(np.arange(first_pair, first_pair + n_pairs), n_ctx),
        "a": np.repeat(np.array([ids[i] for i, _ in plan], dtype=object), n_ctx),
        "b": np.repeat(np.array([ids[j] for _, j in plan], dtype=object), n_ctx),
        "context": np.tile(np.arange(n_ctx), n_pairs),
        "context_id": np.tile(np.array(tables[0].context_ids, dtype=object), n_pairs),
    }
    if answers:
        for name in ANSWER_COLUMNS:
            attr = "acts" if name.startswith("act") else "prompts"
            # object columns with None where an answer is missing, whatever the piece holds
            keys[name] = pd.Series(_answer_column(tables, plan, attr, 0 if name.endswith("_a") else 1), dtype=object)
    if na is not None and na.active:
        keys[NA_COLUMN] = na.rows(plan)
    return pd.DataFrame({**keys, **columns})


def _answer_column(
    tables: Sequence[ResponseTable], plan: Sequence[tuple[int, int]], attr: str, side: int
) -> np.ndarray:
    if not plan:
        return np.zeros(0, dtype=object)
    per_table: dict[int, np.ndarray] = {}
    parts = []
    for p in plan:
        i = p[side]
        if i not in per_table:
            col = np.empty(len(tables[i]), dtype=object)
            col[:] = getattr(tables[i], attr)
            per_table[i] = col
        parts.append(per_table[i])
    return np.concatenate(parts)


class MeansSink:
    """The means table: per pair the mean of each score over its defined values and the counts
    ``n`` (contexts) and ``n_missing_<score>``."""

    def __init__(
        self, plan: Sequence[tuple[int, int]], ids: Sequence[str], n_ctx: int, na: NotApplicable | None = None
    ) -> None:
        self.plan, self.ids, self.n_ctx = plan, ids, n_ctx
        self.na = na if na is not None and na.active else None
        self.rows: list[dict[str, Any]] = []

    def add(self, sl: slice, columns: dict[str, np.ndarray]) -> None:
        n_ctx = self.n_ctx
        for k in range(sl.start, sl.stop):
            i, j = self.plan[k]
            part = slice((k - sl.start) * n_ctx, (k - sl.start + 1) * n_ctx)
            row: dict[str, Any] = {"pair": k, "a": self.ids[i], "b": self.ids[j], "n": n_ctx}
            for name, values in columns.items():
                v = values[part]
                ok = ~np.isnan(v)
                row[name] = float(v[ok].mean()) if ok.any() else float("nan")
            for name, values in columns.items():
                row[f"n_missing_{name}"] = int(np.isnan(values[part]).sum())
            if self.na is not None:
                n_na = int(self.na.pair(i, j).sum())
                for name in self.na.names:
                    if name in columns:
                        row[f"n_missing_{name}"] -= n_na
                        row[f"n_na_{name}"] = n_na
            self.rows.append(row)

    def result(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)


class IntervalSink:
    """Per pair and score a percentile bootstrap interval of the mean, chunk by chunk of whole pairs:
    :func:`behavsim.analysis.means_with_ci` on each chunk's values (a pair's resamples depend only
    on its own values, the seed and their number, so the chunks give what the whole table gives)."""

    def __init__(self, names: Sequence[str], n_ctx: int, options: dict[str, Any]) -> None:
        self.names, self.n_ctx, self.options = list(names), n_ctx, options
        self.parts: list[pd.DataFrame] = []
        self.attrs: dict[str, Any] = {}

    def add(self, sl: slice, columns: dict[str, np.ndarray]) -> None:
        n_pairs = sl.stop - sl.start
        rows = pd.DataFrame(
            {
                "pair": np.repeat(np.arange(sl.start, sl.stop), self.n_ctx),
                "context": np.tile(np.arange(self.n_ctx), n_pairs),
                **columns,
            }
        )
        ci = means_with_intervals(rows, self.names, **self.options)
        self.attrs = dict(ci.attrs.get("bootstrap", {}))
        self.parts.append(ci[[c for s in self.names for c in (f"{s}_lo", f"{s}_hi")]])

    def add_to(self, means: pd.DataFrame) -> pd.DataFrame:
        """``means`` with the ``<score>_lo``, ``<score>_hi`` columns (as ``means_with_ci`` orders them)."""
        out = means.copy()
        ci = pd.concat(self.parts, ignore_index=True) if self.parts else pd.DataFrame()
        for s in self.names:
            for side in ("lo", "hi"):
                col = f"{s}_{side}"
                out[col] = ci[col].to_numpy() if col in ci else np.zeros(0)
        out.attrs["bootstrap"] = self.attrs
        return out


class FrameSink:
    """The per-context rows in memory: the values of every chunk in place, one DataFrame at the end."""

    def __init__(
        self,
        plan: Sequence[tuple[int, int]],
        tables: Sequence[ResponseTable],
        names: Sequence[str],
        answers: bool,
        na: NotApplicable | None = None,
    ) -> None:
        self.plan, self.tables, self.answers, self.na = plan, tables, answers, na
        self.n_ctx = len(tables[0])
        self.columns = {name: np.empty(len(plan) * self.n_ctx) for name in names}
        self.n_rows = 0

    def add(self, sl: slice, columns: dict[str, np.ndarray]) -> None:
        cells = slice(sl.start * self.n_ctx, sl.stop * self.n_ctx)
        for name, values in columns.items():
            self.columns[name][cells] = values
        self.n_rows += (sl.stop - sl.start) * self.n_ctx

    def result(self) -> pd.DataFrame:
        return rows_frame(self.plan, 0, self.tables, self.columns, self.answers, self.na)


class StreamSink:
    """The per-context rows to ``sink(rows)`` piece by piece: consecutive pieces of the table
    :class:`FrameSink` would keep (its order, columns and values; ``pair`` counts on)."""

    def __init__(
        self,
        plan: Sequence[tuple[int, int]],
        tables: Sequence[ResponseTable],
        sink: Callable[[pd.DataFrame], Any],
        answers: bool,
        na: NotApplicable | None = None,
    ) -> None:
        self.plan, self.tables, self.sink, self.answers, self.na = plan, tables, sink, answers, na
        self.n_rows = 0

    def add(self, sl: slice, columns: dict[str, np.ndarray]) -> None:
        rows = rows_frame(self.plan[sl.start : sl.stop], sl.start, self.tables, columns, self.answers, self.na)
        self.sink(rows)
        self.n_rows += len(rows)


def matrices(
    ids: Sequence[str],
    n_ctx: int,
    names: Sequence[str],
    symmetric: dict[str, bool],
    sums: dict[str, np.ndarray],
    counts: dict[str, np.ndarray],
    na: NotApplicable | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame], dict[str, pd.DataFrame] | None]:
    """Per score the P×P DataFrame of means (row = first argument), of the contexts missing
    (failures) and — where ``na`` is active — of the contexts where a semantic score does not
    apply, from the kernel's sums and counts over its matrix pairs."""
    na = na if na is not None and na.active else None
    na_counts = na.matrix() if na is not None else None
    not_applicable: dict[str, pd.DataFrame] | None = {} if na is not None else None
    n_pol = len(ids)
    means: dict[str, pd.DataFrame] = {}
    missing: dict[str, pd.DataFrame] = {}
    for name in names:
        if symmetric[name]:
            ia, ib = np.triu_indices(n_pol)
        else:
            ia, ib = (x.ravel() for x in np.indices((n_pol, n_pol)))
        total = np.full((n_pol, n_pol), np.nan)
        cnt = np.zeros((n_pol, n_pol), dtype=np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(counts[name] > 0, sums[name] / np.maximum(counts[name], 1), np.nan)
        total[ia, ib] = mean
        cnt[ia, ib] = counts[name]
        if symmetric[name]:
            total[ib, ia] = mean
            cnt[ib, ia] = counts[name]
        index, columns = pd.Index(ids, name="a"), pd.Index(ids, name="b")
        means[name] = pd.DataFrame(total, index=index, columns=columns)
        left_out = n_ctx - cnt
        if na is not None and na_counts is not None and not_applicable is not None and name in na.names:
            left_out = left_out - na_counts
            not_applicable[name] = pd.DataFrame(na_counts.copy(), index=index.copy(), columns=columns.copy())
        missing[name] = pd.DataFrame(left_out, index=index.copy(), columns=columns.copy())
    return means, missing, not_applicable


class PerContextWriter:
    """A per-context sink for :func:`behavsim.compare` writing the rows to one CSV or Parquet file
    as they come.

    CSV: the bytes ``per_context.to_csv(path, index=False, float_format="%.10g")`` gives for the
    whole table. Parquet: one row group per piece (pyarrow). Use as a context manager; the file is
    written under a temporary name beside it and moved into place when the stream ends without an
    error (an error leaves nothing behind).
    """

    def __init__(self, path: str | os.PathLike, fmt: str | None = None) -> None:
        path = Path(path)
        if fmt is None:
            fmt = "parquet" if path.suffix.lower() == ".parquet" else "csv"
        if fmt not in ("csv", "parquet"):
            raise ConfigError(f"per-context format must be csv or parquet, got {fmt!r}")
        self.path = path
        self.fmt = fmt
        self._tmp = self.path.with_name(f".{self.path.name}.partial")
        self._fh: Any = None
        self._writer: Any = None
        self._schema: Any = None
        self.rows = 0

    def __enter__(self) -> PerContextWriter:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.fmt == "csv":
                self._fh = open(self._tmp, "w", newline="", encoding="utf-8")
        except OSError as exc:  # name the user's file, not the temporary one
            what = exc.strerror or type(exc).__name__
            for parent in self.path.parents:
                if parent.exists() and not parent.is_dir():
                    what = f"{parent} is a file, not a folder"
                    break
            raise OSError(exc.errno, what, str(self.path)) from None
        return self

    def __call__(self, rows: pd.DataFrame) -> None:
        if self.fmt == "csv":
            rows.to_csv(self._fh, index=False, header=self.rows == 0, float_format="%.10g")
        else:
            import pyarrow.parquet as pq  # a measured start-up cost: loaded when a Parquet file is read or written

            if self._schema is None:  # text columns are strings even where a first piece has only nulls
                schema = pa.Schema.from_pandas(rows, preserve_index=False)
                for k, f in enumerate(schema):
                    if f.name in ("a", "b", "context_id", *ANSWER_COLUMNS):
                        schema = schema.set(k, pa.field(f.name, pa.string()))
                self._schema = schema
            table = pa.Table.from_pandas(rows, schema=self._schema, preserve_index=False)
            if self._writer is None:
                try:
                    self._writer = pq.ParquetWriter(self._tmp, table.schema)
                except OSError as exc:
                    raise OSError(exc.errno, exc.strerror or str(exc), str(self.path)) from None
            self._writer.write_table(table)
        self.rows += len(rows)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._fh is not None:
            self._fh.close()
        if self._writer is not None:
            self._writer.close()
        if exc_type is None:
            if self.fmt == "parquet" and self._writer is None:  # no rows: an empty file with no columns
                pd.DataFrame().to_parquet(self._tmp)
            self._tmp.replace(self.path)
        else:
            self._tmp.unlink(missing_ok=True)
