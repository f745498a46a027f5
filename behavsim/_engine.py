"""The comparison: :func:`compare` and its result, :class:`Comparison`.

One function compares response tables context by context and gives, as asked, the per-context
rows (in memory, or streamed to a callable or a file), the pair means and the P×P matrices of
every pair; all of them come from one two-pass kernel over the distinct answer combinations
(``behavsim/_kernel.py``) and its sinks (``behavsim/_sinks.py``), here or on any executor.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._bootstrap import check_confidence, check_int, check_seed
from ._comparison import Comparison
from ._errors import ConfigError, ContextSetMismatch
from ._executor import Executor, get_executor
from ._inputs import PathLike, as_tables, is_path
from ._kernel import (
    DEFAULT_CHUNK_CELLS,
    MatrixCells,
    PairCells,
    fold_matrix,
    gather_pairs,
    intern_answers,
    matrix_chunk,
    score_cells,
)
from ._scoring_tasks import score_recipes
from ._sinks import FrameSink, IntervalSink, MeansSink, NotApplicable, PerContextWriter, StreamSink, matrices
from ._tables import ResponseTable
from .scores import DEFAULT_SCORES, Score, get_score

__all__ = [
    "compare",
    "CompareOptions",
    "plan_pairs",
    "resolve_pairs",
    "validate_tables",
    "make_scores",
    "trial_key",
    "PAIR_MODES",
    "DEFAULT_CHUNK_CELLS",
]

PAIR_MODES = ("all", "consecutive", "cross")


def trial_key(policy: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in policy.items() if k not in ("id", "checkpoint", "path")))


def plan_pairs(tables: Sequence[ResponseTable], mode: str = "all", *, by: str | None = None) -> list[tuple[int, int]]:
    """Index pairs of ``tables`` to compare.

    * ``all``: every unordered pair, in input order.
    * ``consecutive``: within each trial (tables whose metadata agree on everything but ``id`` and
      ``checkpoint``), checkpoint k−1 against checkpoint k, in checkpoint order.
    * ``cross``: the tables split into exactly two groups by the metadata key ``by`` (required,
      e.g. ``"reward"`` or ``"seed"``), every table of the first group against every table of the
      second, the groups in order of first appearance.
    """
    if mode not in PAIR_MODES:
        raise ConfigError(f"pairs must be one of {PAIR_MODES} or a list of (a, b) pairs, got {mode!r}")
    n = len(tables)
    if mode == "all":
        return list(itertools.combinations(range(n), 2))
    if mode == "consecutive":
        groups: dict[tuple, list[int]] = {}
        for i, t in enumerate(tables):
            if "checkpoint" not in t.policy:
                raise ConfigError(
                    f"pairs='consecutive' needs a 'checkpoint' in every table's policy metadata; "
                    f"table {t.id!r} has none"
                )
            groups.setdefault(trial_key(t.policy), []).append(i)
        out: list[tuple[int, int]] = []
        for idx in groups.values():
            idx.sort(key=lambda i: float(tables[i].policy["checkpoint"]))
            out.extend(zip(idx, idx[1:]))
        return out
    if by is None:
        raise ConfigError(
            "pairs='cross' needs by=<the policy metadata key that splits the tables into two "
            "groups>, e.g. by='reward'; got by=None"
        )
    values: dict[str, list[int]] = {}
    for i, t in enumerate(tables):
        if by not in t.policy:
            raise ConfigError(f"pairs='cross' groups tables by {by!r}, but table {t.id!r} has no {by!r} metadata")
        values.setdefault(str(t.policy[by]), []).append(i)
    if len(values) != 2:
        raise ConfigError(f"pairs='cross' needs exactly two groups of {by!r}, found {sorted(values)}")
    ga, gb = values.values()
    return [(i, j) for i in ga for j in gb]


def compare(
    tables: Sequence[ResponseTable | PathLike],
    pairs: str | Sequence[tuple[Any, Any]] | None = "all",
    *,
    scores: Sequence[str | Score] = DEFAULT_SCORES,
    score_options: Mapping[str, Mapping[str, Any]] | None = None,
    by: str | None = None,
    per_context: bool | Callable[[pd.DataFrame], Any] | PathLike = True,
    matrix: bool = False,
    answers: bool = False,
    intervals: bool | Mapping[str, Any] = False,
    chunk_cells: int = DEFAULT_CHUNK_CELLS,
    chunk_contexts: int | None = None,
    executor: Any = None,
    progress: bool | None = None,
    allow_unanswered: bool = False,
) -> Comparison:
    """Compare policies' response tables context by context.

    ``tables``: response tables produced on the same context set (same fingerprint; else
    :class:`ContextSetMismatch`), or the paths of saved ones. ``pairs``: ``"all"``,
    ``"consecutive"``, ``"cross"`` (see :func:`plan_pairs`; ``"cross"`` needs ``by``, the metadata
    key that splits the tables into two groups), explicit pairs of table indices or policy ids, or
    None (no pairs: only the matrices). ``scores``: names or score objects; ``score_options`` maps a
    score name to its constructor options.

    The outputs (:class:`Comparison`; :meth:`Comparison.save` writes them to files):

    * ``per_context``: True (the default) keeps the rows of the compared pairs in memory
      (``result.per_context``); False keeps none (only the means); a callable ``sink(rows)``
      receives them in consecutive pieces of about ``chunk_cells`` (pair, context) cells (the
      same rows, columns and values; the ``pair`` column counts on across pieces); a path writes
      them to that CSV or ``.parquet`` file as they come (the bytes ``per_context.to_csv(path,
      index=False, float_format="%.10g")`` gives), in bounded memory. ``answers=True`` adds the
      answers compared: ``act_a, act_b, prompt_a, prompt_b``.
    * the pair means, always with pairs: ``result.means``; ``intervals=True`` (or the options of
      :func:`behavsim.analysis.means_with_ci`: ``n_resamples``, ``confidence``, ``seed``) adds
      ``<score>_lo`` and ``<score>_hi``, the percentile bootstrap interval of each pair's mean —
      what ``means_with_ci`` gives from the rows, also when the rows are streamed or not kept.
    * ``matrix=True``: per score the P×P matrix of means over every ordered pair and self-pair,
      whatever ``pairs`` says, in bounded memory (``chunk_contexts`` contexts per chunk, rounded
      up to whole blocks of 64; default: about ``chunk_cells`` cells per chunk).

    A table that answered none of its contexts is refused (its scores would all be NaN) unless
    ``allow_unanswered=True`` (a study's first checkpoints may fail everywhere): then every score
    of its pairs is NaN and ``n_missing_<score>`` counts every context.

    None of the outputs depends on the chunk sizes. ``executor``: where the distinct answer
    combinations are scored (:func:`behavsim.get_executor`): ``"local"`` (the default) here, in
    one call per score; ``"local:N"`` and ``"ray[:ADDRESS]"`` as tasks of 20,000 combinations (a
    score whose value depends on the whole batch, BERTScore with idf from the batch, as one task),
    gathered in order: the same values. Scores given as names are built on the workers (with
    ``score_options``); score objects are scored here. ``progress``: progress bars (default: for
    big jobs).
    """
    where = get_executor(executor)
    given = tables if is_path(tables) or isinstance(tables, ResponseTable) else _listed(tables)
    tables = validate_tables(given, allow_unanswered)
    if pairs is None and not matrix:
        raise ConfigError("pairs=None compares no pair: give pairs, or ask for the matrices alone with matrix=True")
    plan = resolve_pairs(tables, pairs, by) if pairs is not None else None
    options = CompareOptions.checked(
        scores=scores,
        score_options=score_options,
        has_pairs=plan is not None,
        per_context=per_context,
        matrix=matrix,
        answers=answers,
        intervals=intervals,
        chunk_cells=chunk_cells,
        chunk_contexts=chunk_contexts,
        executor=where,
        progress=progress,
    )
    result = _run(tables, plan, options)
    return dataclasses.replace(result, pairs=_asked_pairs(pairs, plan, tables), table_files=_table_files(given, tables))


@dataclass(frozen=True)
class CompareOptions:
    """The options of one :func:`compare` call, checked: the score objects and how to build them
    on workers (``recipes``), where the rows go (``keep_rows`` in memory, or ``row_sink``: a
    callable or a path), the intervals' options (None: none) and the chunking."""

    objs: tuple[Score, ...]
    recipes: dict[str, tuple[str, dict[str, Any]]]
    keep_rows: bool
    row_sink: Any
    answers: bool
    intervals: dict[str, Any] | None
    matrix: bool
    chunk_cells: int
    chunk_contexts: int | None
    executor: Executor
    progress: bool | None

    @property
    def names(self) -> list[str]:
        return [o.name for o in self.objs]

    @classmethod
    def checked(
        cls,
        *,
        scores: Sequence[str | Score],
        score_options: Mapping[str, Mapping[str, Any]] | None,
        has_pairs: bool,
        per_context: Any,
        matrix: bool,
        answers: bool,
        intervals: Any,
        chunk_cells: Any,
        chunk_contexts: Any,
        executor: Executor,
        progress: bool | None,
    ) -> CompareOptions:
        """The options of :func:`compare`, each checked (a bad one raises :class:`ConfigError`)."""
        objs = make_scores(scores, score_options)
        recipes = score_recipes(objs, list(scores), score_options)
        chunk_cells = _positive(chunk_cells, "chunk_cells")
        if chunk_contexts is not None:
            chunk_contexts = _positive(chunk_contexts, "chunk_contexts")
            if not matrix:
                raise ConfigError("chunk_contexts applies to the matrices only (matrix=True)")
        keep, sink = _rows_option(per_context, has_pairs, bool(matrix))
        ci_options = _intervals_option(intervals, has_pairs)
        if answers and not (keep or sink is not None):
            raise ConfigError("answers=True adds columns to the per-context rows, but per_context=False asks for none")
        return cls(
            objs=tuple(objs),
            recipes=recipes,
            keep_rows=keep,
            row_sink=sink,
            answers=bool(answers),
            intervals=ci_options,
            matrix=bool(matrix),
            chunk_cells=chunk_cells,
            chunk_contexts=chunk_contexts,
            executor=executor,
            progress=progress,
        )


def _run(tables: list[ResponseTable], plan: list[tuple[int, int]] | None, o: CompareOptions) -> Comparison:
    """The kernel's two passes for the outputs ``o`` asks for, gathered into a :class:`Comparison`."""
    n_pol, n_ctx = len(tables), len(tables[0])
    n_cells = len(plan) * n_ctx if plan is not None else 0
    big = n_cells > 2_000_000 or (o.matrix and n_pol * n_pol * n_ctx > 50_000_000)
    show = o.progress if o.progress is not None else big
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    answers_by_level = intern_answers(tables, [s.info.level for s in o.objs])
    na = NotApplicable(tables, [s.name for s in o.objs if s.info.level == "semantic"])
    timings["intern"] = time.perf_counter() - t0

    pair_cells = None
    if plan is not None:
        ia = np.array([p[0] for p in plan], dtype=np.int64)
        ib = np.array([p[1] for p in plan], dtype=np.int64)
        pair_cells = PairCells(ia, ib, n_ctx, o.chunk_cells)
    chunk = None
    matrix_cells = None
    if o.matrix:
        chunk = matrix_chunk(n_pol, n_ctx, o.chunk_contexts)
        symmetries = {bool(s.info.symmetric) for s in o.objs}
        matrix_cells = {sym: MatrixCells(n_pol, n_ctx, sym, chunk) for sym in symmetries}
    objs = list(o.objs)
    for_pairs, for_matrix = score_cells(
        objs, answers_by_level, pair_cells, matrix_cells, o.recipes, o.executor, show, timings
    )
    per: pd.DataFrame | None = None
    means = pd.DataFrame(columns=["pair", "a", "b", "n", *o.names, *[f"n_missing_{k}" for k in o.names]])
    n_rows = 0
    if plan is not None and pair_cells is not None:
        t1 = time.perf_counter()
        gathered = _Gathered(plan, tables, o, na)
        with gathered.writer:
            gather_pairs(pair_cells, objs, answers_by_level, for_pairs, gathered.consume, show)
        per, means, n_rows = gathered.result()
        timings["gather"] = time.perf_counter() - t1

    mats = missing = not_applicable = None
    if matrix_cells is not None:
        sums, counts = fold_matrix(matrix_cells, objs, answers_by_level, for_matrix, show, timings)
        sym = {s.name: bool(s.info.symmetric) for s in o.objs}
        mats, missing, not_applicable = matrices([t.id for t in tables], n_ctx, o.names, sym, sums, counts, na)
    timings["total"] = time.perf_counter() - t0
    distinct_of = for_matrix if o.matrix else for_pairs
    return Comparison(
        per_context=per,
        means=means,
        signatures={s.name: s.signature for s in o.objs},
        context_fingerprint=tables[0].context_fingerprint,
        policies={t.id: dict(t.policy) for t in tables},
        timings=timings,
        matrices=mats,
        n_missing=missing,
        n_na=not_applicable,
        n_contexts=n_ctx,
        n_rows=n_rows,
        n_distinct={k: int(distinct_of[k].keys.size) for k in o.names},
        chunk_contexts=chunk,
    )


class _Gathered:
    """Pass 2's sinks for the compared pairs: the means, the intervals and the rows (kept, or
    streamed to a callable or a file) as ``o`` asks."""

    def __init__(self, plan: list[tuple[int, int]], tables: list[ResponseTable], o: CompareOptions, na: Any) -> None:
        n_ctx = len(tables[0])
        self.means = MeansSink(plan, [t.id for t in tables], n_ctx, na)
        self.intervals = IntervalSink(o.names, n_ctx, o.intervals) if o.intervals is not None else None
        self.rows: FrameSink | StreamSink | None = None
        self.writer: Any = contextlib.nullcontext()
        sink = o.row_sink
        if o.keep_rows:
            self.rows = FrameSink(plan, tables, o.names, o.answers, na)
        elif sink is not None:
            if is_path(sink):
                self.writer = sink = PerContextWriter(sink)
            self.rows = StreamSink(plan, tables, sink, o.answers, na)

    def consume(self, sl: slice, columns: dict[str, np.ndarray]) -> None:
        self.means.add(sl, columns)
        if self.intervals is not None:
            self.intervals.add(sl, columns)
        if self.rows is not None:
            self.rows.add(sl, columns)

    def result(self) -> tuple[pd.DataFrame | None, pd.DataFrame, int]:
        """The rows kept (or None), the means (with their intervals) and the number of rows made."""
        means = self.means.result()
        if self.intervals is not None:
            means = self.intervals.add_to(means)
        per = self.rows.result() if isinstance(self.rows, FrameSink) else None
        return per, means, self.rows.n_rows if self.rows is not None else 0


def _asked_pairs(
    pairs: str | Sequence[tuple[Any, Any]] | None, plan: list[tuple[int, int]] | None, tables: list[ResponseTable]
) -> str | list[tuple[str, str]] | None:
    """The pairs asked for, as a :class:`Comparison` records them: a mode, or the explicit pairs
    as policy ids."""
    if pairs is None or plan is None:
        return None
    if isinstance(pairs, str):
        return pairs
    return [(tables[i].id, tables[j].id) for i, j in plan]


def _listed(tables: Any) -> Any:
    """``tables`` as a list when it is an iterable (a generator is read once), else as it is."""
    return list(tables) if isinstance(tables, Iterable) else tables


def _table_files(given: Any, tables: list[ResponseTable]) -> list[str | None]:
    """The file of each table as it was given: its path, or the file a table object was loaded from."""
    return [os.fspath(g) if is_path(g) else t.source for g, t in zip(given, tables)]


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _intervals_option(intervals: Any, has_pairs: bool) -> dict[str, Any] | None:
    """The options of the bootstrap intervals of the pair means, or None for none."""
    if intervals is False or intervals is None:
        return None
    if intervals is True:
        options: dict[str, Any] = {}
    elif isinstance(intervals, Mapping):
        options = dict(intervals)
        unknown = sorted(set(options) - {"n_resamples", "confidence", "seed"})
        if unknown:
            raise ConfigError(f"intervals: unknown option(s) {unknown}; valid: n_resamples, confidence, seed")
    else:
        raise ConfigError(
            "intervals must be True, False or a mapping of n_resamples, confidence, seed, "
            f"got {type(intervals).__name__}"
        )
    if not has_pairs:
        raise ConfigError("intervals are of the pair means, but pairs=None compares no pair")
    check_int(options.get("n_resamples", 1), "n_resamples", 1)  # refused before any scoring
    check_confidence(options.get("confidence", 0.5))
    check_seed(options.get("seed", 0))
    return options


def _rows_option(per_context: Any, has_pairs: bool, matrix: bool) -> tuple[bool, Any]:
    """``(keep the rows in memory, the sink or path they stream to)`` from ``per_context``."""
    if per_context is True or per_context is False:
        return (per_context and has_pairs), None
    if not (callable(per_context) or is_path(per_context)):
        raise ConfigError(
            "per_context must be True (rows in memory), False (none), a callable sink(rows) or the path of a "
            f".csv/.parquet file, got {type(per_context).__name__}"
        )
    if not has_pairs:
        raise ConfigError("per_context streams the rows of the compared pairs, but pairs=None compares none")
    return False, per_context


def validate_tables(tables: Any, allow_unanswered: bool = False) -> list[ResponseTable]:
    """At least two tables (or their paths, loaded), all of one context set, with distinct policy
    ids, each with an answer."""
    tables = as_tables(tables)
    if len(tables) < 2:
        raise ConfigError(f"compare needs at least two response tables, got {len(tables)}")
    ref = tables[0]
    for t in tables[1:]:
        if t.context_fingerprint != ref.context_fingerprint or len(t) != len(ref):
            raise ContextSetMismatch(
                f"response tables were produced on different context sets: {ref.id!r} "
                f"({ref.source or 'in memory'}) has {ref.context_fingerprint}, {t.id!r} "
                f"({t.source or 'in memory'}) has {t.context_fingerprint}; respond both policies on the same "
                "context set"
            )
    ids = [t.id for t in tables]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ConfigError(f"policy ids must be unique among the compared tables; repeated: {dupes}")
    # a context is answered by an act, or by text only (a prompt, no act, no error: not a failure)
    failed = [
        t
        for t in tables
        if len(t)
        and not any(a is not None or (p is not None and e is None) for a, p, e in zip(t.acts, t.prompts, t.errors))
    ]
    if failed and not allow_unanswered:
        first = next((e for e in failed[0].errors if e), "no act")
        raise ConfigError(
            f"response table(s) {', '.join(repr(t.id) for t in failed)} answered none of their {len(ref)} contexts "
            f"(every act is an error; first: {first}): their scores would all be NaN; fix the policy and respond again"
        )
    return tables


def resolve_pairs(
    tables: list[ResponseTable], pairs: str | Sequence[tuple[Any, Any]], by: str | None
) -> list[tuple[int, int]]:
    """The index pairs to compare: a :func:`plan_pairs` mode, or explicit pairs of table indices
    or policy ids."""
    if isinstance(pairs, str):
        plan = plan_pairs(tables, pairs, by=by)
    else:
        ids = [t.id for t in tables]
        pos = {pid: k for k, pid in enumerate(ids)}
        plan = []
        for p in pairs:
            if len(p) != 2:
                raise ConfigError(f"each pair must have two members, got {p!r}")
            idx = []
            for m in p:
                if isinstance(m, (int, np.integer)) and 0 <= m < len(tables):
                    idx.append(int(m))
                elif str(m) in pos:
                    idx.append(pos[str(m)])
                else:
                    raise ConfigError(f"pair member {m!r} is neither a table index nor a policy id; ids: {ids}")
            plan.append((idx[0], idx[1]))
    if not plan:
        raise ConfigError("no pairs to compare (check the pairs mode and the tables' metadata)")
    return plan


def make_scores(scores: Sequence[str | Score], score_options: Mapping[str, Mapping[str, Any]] | None) -> list[Score]:
    """Score objects from names (with their options) or objects; each score at most once."""
    options = dict(score_options or {})
    objs: list[Score] = []
    for s in scores:
        name = s if isinstance(s, str) else s.name
        opts = options.get(name, {}) if isinstance(s, str) else {}
        objs.append(get_score(s, **opts))
    names = [o.name for o in objs]
    if len(set(names)) != len(names):
        raise ConfigError(f"a score is listed twice: {names}")
    return objs
