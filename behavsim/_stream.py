"""Per-context rows of any number of pairs, streamed in chunks, in bounded memory.

:func:`compare_stream` produces exactly what :func:`behavsim.compare` produces — the per-context
rows (pair-major, the same columns, the same values) and the means table — but hands the rows to
a sink chunk by chunk instead of holding pairs × contexts values at once.

Method, per score:

1. Intern the answers of all tables with one shared index (as :func:`behavsim.compare` does),
   giving a tables × contexts code array (-1: missing).
2. **Pass 1**, per chunk of pairs: the code combinations of the chunk's (pair, context) cells are
   collected as sorted integer keys — unordered (min, max) for a symmetric score — into the set of
   distinct combinations. It is the set the engine scores, in the engine's order (sorted by first,
   then second code), so the one batch call per score below sees the same inputs as the engine's.
3. Each score scores every distinct combination once (its batch API, the encoders' embedding
   cache).
4. **Pass 2**, per chunk of pairs: the chunk's per-context values are gathered from the distinct
   values by key, the chunk's rows are built as the engine builds them and given to the sink, and
   each pair's mean is taken from the same values the engine averages. Values are bit-identical to
   the engine's whatever the chunk size.

Memory beyond the tables and the codes: the distinct combinations with their values and a few
arrays of chunk × contexts cells; the chunk holds about :data:`DEFAULT_CHUNK_CELLS` cells.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._engine import _aggregate, _gather, _make_scores, _plan, _validate_tables
from ._errors import ConfigError
from ._matrix import _progress, combination_keys, combination_positions, distinct_combinations
from ._scoring_tasks import _pairwise, score_recipes
from ._tables import ResponseTable
from .scores import ALL_SCORES, Score
from .scores._base import intern

__all__ = ["compare_stream", "StreamedComparison", "PerContextWriter", "PER_CONTEXT_FORMATS"]

#: (pair, context) cells per chunk by default (~16 MB per float64 array).
DEFAULT_CHUNK_CELLS = 2**21

#: What ``behavsim compare --per-context`` accepts.
PER_CONTEXT_FORMATS = ("none", "csv", "parquet")


@dataclass
class StreamedComparison:
    """The result of :func:`compare_stream`: :class:`behavsim.Comparison` without the rows, which
    went to the sink. ``n_rows``: the number of per-context rows produced."""

    means: pd.DataFrame
    signatures: dict[str, str]
    context_fingerprint: str
    n_rows: int
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def score_names(self) -> list[str]:
        return list(self.signatures)


def compare_stream(
    tables: Sequence[ResponseTable],
    pairs: str | Sequence[tuple[Any, Any]] = "all",
    *,
    scores: Sequence[str | Score] = ALL_SCORES,
    score_options: Mapping[str, Mapping[str, Any]] | None = None,
    by: str | None = None,
    sink: Callable[[pd.DataFrame], None] | None = None,
    chunk_cells: int = DEFAULT_CHUNK_CELLS,
    progress: bool | None = None,
    executor: Any = None,
) -> StreamedComparison:
    """:func:`behavsim.compare`, with the per-context rows given to ``sink`` in chunks of pairs.

    Arguments as :func:`behavsim.compare`. ``sink(rows)`` receives consecutive pieces of the
    engine's ``per_context`` table (its row order, columns and values; the ``pair`` column counts
    on across pieces); with ``sink=None`` the rows are dropped and only the means are kept.
    ``chunk_cells``: about how many (pair, context) cells a piece holds; the output does not
    depend on it. ``executor``: where the distinct combinations are scored
    (:func:`behavsim.get_executor`): ``"local"`` (the default) scores them here, in one call per
    score; ``"local:N"`` and ``"ray[:ADDRESS]"`` score them as tasks of
    :data:`COMBINATIONS_PER_TASK` combinations (a score whose value depends on the whole batch,
    BERTScore with idf from the batch, as one task), gathered in order: the same values. Scores
    given as names are built on the workers (with ``score_options``); score objects are scored
    here.
    """
    from ._executor import get_executor

    where = get_executor(executor)
    tables = _validate_tables(tables)
    plan = _plan(tables, pairs, by)
    objs = _make_scores(scores, score_options)
    recipes = score_recipes(objs, scores, score_options)
    if not isinstance(chunk_cells, (int, np.integer)) or isinstance(chunk_cells, bool) or chunk_cells < 1:
        raise ConfigError(f"chunk_cells must be a positive integer, got {chunk_cells!r}")
    n_ctx = len(tables[0])
    ids = [t.id for t in tables]
    n_pairs = len(plan)
    per_chunk = max(1, int(chunk_cells) // max(n_ctx, 1))
    chunks = [slice(s, min(s + per_chunk, n_pairs)) for s in range(0, n_pairs, per_chunk)]
    show = progress if progress is not None else (n_pairs * n_ctx > 2_000_000)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    ia = np.array([p[0] for p in plan], dtype=np.int64)
    ib = np.array([p[1] for p in plan], dtype=np.int64)

    codes: dict[str, tuple[np.ndarray, list[str]]] = {}
    for level, attr in (("semantic", "acts"), ("text", "prompts")):
        if any(o.info.level == level for o in objs):
            index: dict[str, int] = {}
            arr = np.stack([intern(getattr(t, attr), index) for t in tables]).astype(np.int64)
            codes[level] = (arr, list(index))
    timings["intern"] = time.perf_counter() - t0

    # pass 1 and the scoring: per score, the distinct combinations and their values
    distinct: dict[str, tuple[np.ndarray, np.ndarray, int, np.ndarray | None]] = {}
    keys_of: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray | None]] = {}
    for s in objs:
        t1 = time.perf_counter()
        level, symmetric = s.info.level, bool(s.info.symmetric)
        arr, items = codes[level]
        base = max(len(items), 1)
        if (level, symmetric) not in keys_of:
            key_chunks = (
                _cell_keys(arr, ia[sl], ib[sl], base, symmetric) for sl in _progress(chunks, show, "combinations")
            )
            keys_of[(level, symmetric)] = distinct_combinations(key_chunks, base, per_chunk * n_ctx)
        keys, lut = keys_of[(level, symmetric)]
        encoder: Any = getattr(s, "encoder", None)
        if hasattr(encoder, "progress"):
            encoder.progress = show
        first = [items[i] for i in (keys // base).tolist()]
        second = [items[j] for j in (keys % base).tolist()]
        vals = _pairwise(s, recipes.get(s.name), first, second, where) if len(first) else np.zeros(0)
        distinct[s.name] = (keys, np.append(vals, np.nan), base, lut)  # last value: a missing side
        timings[s.name] = time.perf_counter() - t1

    # pass 2: gather, emit, average
    t2 = time.perf_counter()
    mean_parts: list[pd.DataFrame] = []
    n_rows = 0
    for start in _progress(chunks, show, "pairs"):
        sub_plan = plan[start.start : start.stop]
        columns: dict[str, np.ndarray] = {}
        for s in objs:
            arr, _ = codes[s.info.level]
            keys, vals, base, lut = distinct[s.name]
            k = _cell_keys(arr, ia[start], ib[start], base, bool(s.info.symmetric))
            columns[s.name] = vals[combination_positions(k, keys, lut)]
        means = _aggregate(sub_plan, ids, n_ctx, columns)  # the engine's means of the same values
        means["pair"] += start.start
        mean_parts.append(means)
        if sink is not None:
            rows = _gather(sub_plan, ids, n_ctx, tables[0].context_ids, columns)
            rows["pair"] += start.start
            sink(rows)
        n_rows += len(sub_plan) * n_ctx
    timings["gather"] = time.perf_counter() - t2
    timings["total"] = time.perf_counter() - t0
    return StreamedComparison(
        means=pd.concat(mean_parts, ignore_index=True),
        signatures={o.name: o.signature for o in objs},
        context_fingerprint=tables[0].context_fingerprint,
        n_rows=n_rows,
        policies={t.id: dict(t.policy) for t in tables},
        timings=timings,
    )


def _cell_keys(codes: np.ndarray, ia: np.ndarray, ib: np.ndarray, base: int, symmetric: bool) -> np.ndarray:
    """Combination keys of the (pair, context) cells of pairs ``(ia, ib)``, pair-major."""
    return combination_keys(codes[ia].ravel(), codes[ib].ravel(), base, symmetric)


class PerContextWriter:
    """A sink for :func:`compare_stream` writing the rows to one CSV or Parquet file as they come.

    CSV: the bytes ``per_context.to_csv(path, index=False, float_format="%.10g")`` gives for the
    whole table. Parquet: one row group per piece (pyarrow). Use as a context manager; the file is
    written under a temporary name and moved into place when the stream ends without an error.
    """

    def __init__(self, path: str | Path, fmt: str) -> None:
        if fmt not in ("csv", "parquet"):
            raise ConfigError(f"per-context format must be csv or parquet, got {fmt!r}")
        self.path = Path(path)
        self.fmt = fmt
        self._tmp = self.path.with_name(f".{self.path.name}.partial")
        self._fh: Any = None
        self._writer: Any = None
        self.rows = 0

    def __enter__(self) -> PerContextWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.fmt == "csv":
            self._fh = open(self._tmp, "w", newline="", encoding="utf-8")
        return self

    def __call__(self, rows: pd.DataFrame) -> None:
        if self.fmt == "csv":
            rows.to_csv(self._fh, index=False, header=self.rows == 0, float_format="%.10g")
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(rows, preserve_index=False)
            if self._writer is None:
                self._writer = pq.ParquetWriter(self._tmp, table.schema)
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
