"""All-pairs matrices from distinct answers, in bounded memory.

:func:`compare_matrix` gives, per score, the P×P matrix of pair means over the contexts for P
response tables — every ordered pair and the diagonal (self-pairs) — without ever holding
pairs × contexts values at once.

Method, per group of scores on the same level (acts or prompts) and of the same symmetry:

1. Intern the answers of all P tables with one shared index (as :func:`behavsim.compare` does,
   table by table), giving a P × contexts code array (-1: missing).
2. **Pass 1**, per chunk of ``chunk_contexts`` contexts: the code combinations (x, x') met by any
   pair of policies in the chunk — unordered (min, max) for a symmetric score, ordered otherwise —
   are collected as integer keys into the set of distinct combinations.
3. Each score scores every distinct combination once, in one batch call (its batch API and the
   encoders' embedding cache, exactly as the engine's ``_score_all`` does it; one call also keeps
   batch-level statistics such as BERTScore's idf over the same prompts as the engine).
4. **Pass 2**, per chunk: each pair's per-context values are gathered from the distinct values by
   the combination keys, summed in blocks of :data:`FOLD_BLOCK` contexts, and the block sums are
   folded in context order into per-pair sums (Neumaier-compensated) and counts of defined values.
   Chunks are whole blocks, so the blocks and the fold order do not depend on the chunk size:
   every ``chunk_contexts`` gives bit-identical matrices.

Pairs are the P(P+1)/2 unordered pairs (diagonal included) for a symmetric score and the P²
ordered pairs otherwise. Memory beyond the tables and the P × contexts codes: a few arrays of
chunk × pairs (keys, positions and values, 8 bytes each) plus the distinct combinations and their
values — i.e. O(chunk_contexts × P²), chosen by default so that a chunk holds about
``2**21`` (pair, context) cells (~16 MB per array).

NaN handling is the engine's: a missing answer (a failed context's act, a policy without prompts)
or a NaN value is left out of the mean, ``n_missing`` counts those contexts, and a pair with no
defined value has a NaN mean.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._engine import _make_scores, _validate_tables
from ._errors import ConfigError
from ._scoring_tasks import _pairwise
from ._tables import ResponseTable
from .scores import ALL_SCORES, Score
from .scores._base import intern

__all__ = ["compare_matrix", "MatrixComparison", "DEFAULT_CHUNK_CELLS"]

#: The default number of (pair, context) cells per chunk.
DEFAULT_CHUNK_CELLS = 2**21

#: Contexts summed as one block before the compensated fold; chunks are whole blocks, so the
#: blocks, and the sums, are the same for every chunk size.
FOLD_BLOCK = 64


@dataclass
class MatrixComparison:
    """The result of :func:`compare_matrix`.

    ``means[score]``: a P×P DataFrame indexed and columned by policy id; entry ``[a, b]`` is the
    mean over the contexts of ``score(a's answer, b's answer)`` (row = first argument, as the
    ``a`` column of :func:`behavsim.compare`), NaN where no context has a defined value.
    ``n_missing[score]``: the same shape, the number of contexts whose value is missing.
    ``n``: the number of contexts. ``n_distinct[score]``: the distinct answer combinations the
    score was computed on. ``matrix[score]`` is ``means[score]``.
    """

    means: dict[str, pd.DataFrame]
    n_missing: dict[str, pd.DataFrame]
    n: int
    signatures: dict[str, str]
    context_fingerprint: str
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    chunk_contexts: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    n_distinct: dict[str, int] = field(default_factory=dict)

    @property
    def score_names(self) -> list[str]:
        return list(self.signatures)

    def __getitem__(self, score: str) -> pd.DataFrame:
        return self.means[score]


def compare_matrix(
    tables: Sequence[ResponseTable],
    scores: Sequence[str | Score] = ALL_SCORES,
    *,
    score_options: Mapping[str, Mapping[str, Any]] | None = None,
    chunk_contexts: int | None = None,
    progress: bool | None = None,
    executor: Any = None,
) -> MatrixComparison:
    """Per score, the P×P matrix of pair means of ``tables`` (all ordered pairs and self-pairs).

    The values equal :func:`behavsim.compare`'s pair means (``pairs="all"`` for ``a`` before
    ``b``; explicit pairs for the other order and self-pairs) up to the order of summation, and
    the ``n_missing`` counts are the engine's. ``chunk_contexts``: contexts per chunk, rounded up to
    whole blocks of :data:`FOLD_BLOCK` (default:
    about ``DEFAULT_CHUNK_CELLS`` pair × context cells per chunk); the result does not depend on
    it. Peak extra memory is O(chunk_contexts × P²); see the module docstring. ``executor``: where
    the distinct combinations are scored (as in :func:`behavsim.compare_stream`); the matrices
    are the same.
    """
    from ._executor import get_executor
    from ._scoring_tasks import score_recipes

    where = get_executor(executor)
    tables = _validate_tables(tables)
    objs = _make_scores(scores, score_options)
    recipes = score_recipes(objs, list(scores), score_options)
    if chunk_contexts is not None and (not isinstance(chunk_contexts, (int, np.integer)) or chunk_contexts < 1):
        raise ConfigError(f"chunk_contexts must be a positive integer, got {chunk_contexts!r}")
    n_pol = len(tables)
    n_ctx = len(tables[0])
    ids = [t.id for t in tables]
    n_pairs_max = n_pol * n_pol
    chunk = int(chunk_contexts) if chunk_contexts is not None else max(1, DEFAULT_CHUNK_CELLS // n_pairs_max)
    chunk = max(1, min(chunk, max(n_ctx, 1)))
    chunk = -(-chunk // FOLD_BLOCK) * FOLD_BLOCK  # whole blocks
    show = progress if progress is not None else (n_pairs_max * n_ctx > 50_000_000)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()

    groups: dict[tuple[str, bool], list[Score]] = {}
    for s in objs:
        groups.setdefault((s.info.level, bool(s.info.symmetric)), []).append(s)
    codes_cache: dict[str, tuple[np.ndarray, list[str]]] = {}
    means: dict[str, pd.DataFrame] = {}
    n_distinct: dict[str, int] = {}
    missing: dict[str, pd.DataFrame] = {}
    for (level, symmetric), members in groups.items():
        if level not in codes_cache:
            t1 = time.perf_counter()
            index: dict[str, int] = {}
            attr = "acts" if level == "semantic" else "prompts"
            codes = np.stack([intern(getattr(t, attr), index) for t in tables]) if n_ctx else np.zeros((n_pol, 0), int)
            codes_cache[level] = (codes, list(index))
            timings[f"intern_{level}"] = time.perf_counter() - t1
        codes, items = codes_cache[level]
        if symmetric:
            ia, ib = np.triu_indices(n_pol)
        else:
            ia, ib = (x.ravel() for x in np.indices((n_pol, n_pol)))
        sums, counts, n_combos = _group_sums(
            members,
            codes,
            items,
            ia,
            ib,
            chunk,
            show,
            timings,
            lambda s, a, b: _pairwise(s, recipes.get(s.name), a, b, where),
        )
        for s in members:
            n_distinct[s.name] = n_combos
            total = np.full((n_pol, n_pol), np.nan)
            cnt = np.zeros((n_pol, n_pol), dtype=np.int64)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(counts[s.name] > 0, sums[s.name] / np.maximum(counts[s.name], 1), np.nan)
            total[ia, ib] = mean
            cnt[ia, ib] = counts[s.name]
            if symmetric:
                total[ib, ia] = mean
                cnt[ib, ia] = counts[s.name]
            means[s.name] = pd.DataFrame(total, index=pd.Index(ids, name="a"), columns=pd.Index(ids, name="b"))
            missing[s.name] = pd.DataFrame(n_ctx - cnt, index=pd.Index(ids, name="a"), columns=pd.Index(ids, name="b"))
    timings["total"] = time.perf_counter() - t0
    order = [o.name for o in objs]
    return MatrixComparison(
        means={k: means[k] for k in order},
        n_missing={k: missing[k] for k in order},
        n=n_ctx,
        signatures={o.name: o.signature for o in objs},
        context_fingerprint=tables[0].context_fingerprint,
        policies={t.id: dict(t.policy) for t in tables},
        chunk_contexts=chunk,
        timings=timings,
        n_distinct={k: n_distinct[k] for k in order},
    )


def combination_keys(a: np.ndarray, b: np.ndarray, base: int, symmetric: bool) -> np.ndarray:
    """One integer per aligned pair of answer codes, ``first * base + second`` (first <= second for
    a symmetric score); -1 where a side is missing (code -1)."""
    if symmetric:
        a, b = np.minimum(a, b), np.maximum(a, b)
    keys = a * base + b
    keys[(a < 0) | (b < 0)] = -1
    return keys


def _chunk_keys(codes: np.ndarray, ia: np.ndarray, ib: np.ndarray, sl: slice, base: int, symmetric: bool) -> np.ndarray:
    """Combination keys of a chunk, context-major (contexts × pairs)."""
    x = codes[:, sl].T  # contexts x policies
    return combination_keys(x[:, ia], x[:, ib], base, symmetric)


def _group_sums(
    members: list[Score],
    codes: np.ndarray,
    items: list[str],
    ia: np.ndarray,
    ib: np.ndarray,
    chunk: int,
    show: bool,
    timings: dict[str, float],
    pairwise: Any,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], int]:
    """Per score of one group, the per-pair sums and counts of defined values; and the number of
    distinct combinations."""
    symmetric = bool(members[0].info.symmetric)
    n_ctx = codes.shape[1]
    base = max(len(items), 1)
    slices = [slice(s, min(s + chunk, n_ctx)) for s in range(0, n_ctx, chunk)]
    t1 = time.perf_counter()
    # pass 1: the distinct combinations
    distinct, lut = distinct_combinations(
        (_chunk_keys(codes, ia, ib, sl, base, symmetric) for sl in _progress(slices, show, "combinations")),
        base,
        chunk * ia.size,
    )
    timings[f"distinct_{members[0].info.level}"] = timings.get(f"distinct_{members[0].info.level}", 0.0) + (
        time.perf_counter() - t1
    )
    first = [items[i] for i in (distinct // base).tolist()]
    second = [items[j] for j in (distinct % base).tolist()]
    values: dict[str, np.ndarray] = {}
    for s in members:
        t2 = time.perf_counter()
        encoder: Any = getattr(s, "encoder", None)
        if hasattr(encoder, "progress"):
            encoder.progress = show
        vals = pairwise(s, first, second) if len(first) else np.zeros(0)
        values[s.name] = np.append(np.asarray(vals, dtype=np.float64), np.nan)  # last: missing
        timings[s.name] = time.perf_counter() - t2
    # pass 2: gather and fold
    t3 = time.perf_counter()
    n_pairs = ia.size
    sums = {s.name: np.zeros(n_pairs) for s in members}
    comps = {s.name: np.zeros(n_pairs) for s in members}
    counts = {s.name: np.zeros(n_pairs, dtype=np.int64) for s in members}
    for sl in _progress(slices, show, "pairs"):
        pos = combination_positions(_chunk_keys(codes, ia, ib, sl, base, symmetric), distinct, lut)
        for s in members:
            v = values[s.name][pos]
            ok = ~np.isnan(v)
            counts[s.name] += ok.sum(axis=0)
            v[~ok] = 0.0
            _fold(sums[s.name], comps[s.name], np.add.reduceat(v, np.arange(0, len(v), FOLD_BLOCK), axis=0))
    timings[f"gather_{members[0].info.level}"] = timings.get(f"gather_{members[0].info.level}", 0.0) + (
        time.perf_counter() - t3
    )
    return {k: sums[k] + comps[k] for k in sums}, counts, int(distinct.size)


def distinct_combinations(
    key_chunks: Iterable[np.ndarray], base: int, chunk_cells: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """The sorted distinct non-negative keys of ``key_chunks`` (arrays of at most ``chunk_cells``
    keys; -1 = missing), and a dense key -> position lookup when one over all ``base**2``
    combinations is no bigger than a chunk (else None: positions by binary search)."""
    if _use_lookup(base, chunk_cells):
        seen = np.zeros(base * base, dtype=bool)
        for keys in key_chunks:
            seen[keys[keys >= 0]] = True
        distinct = np.flatnonzero(seen).astype(np.int64)
        del seen
        lut = np.full(base * base, distinct.size, dtype=np.int32)
        lut[distinct] = np.arange(distinct.size)
        return distinct, lut
    distinct = np.zeros(0, dtype=np.int64)
    pending: list[np.ndarray] = []
    n_pending = 0
    for keys in key_chunks:
        pending.append(np.unique(keys[keys >= 0]))
        n_pending += pending[-1].size
        if n_pending > max(distinct.size, chunk_cells):  # merge now and then: bounded, few merges
            distinct = np.unique(np.concatenate([distinct, *pending]))
            pending, n_pending = [], 0
    return np.unique(np.concatenate([distinct, *pending])), None


def combination_positions(keys: np.ndarray, distinct: np.ndarray, lut: np.ndarray | None) -> np.ndarray:
    """The position of each key in ``distinct`` (from :func:`distinct_combinations`);
    ``distinct.size`` where the key is -1 (missing): index a value array with one NaN appended."""
    if lut is not None:
        return np.where(keys >= 0, lut[np.maximum(keys, 0)], distinct.size)
    pos = np.searchsorted(distinct, keys)
    pos[keys < 0] = distinct.size
    return pos


def _use_lookup(base: int, chunk_cells: int) -> bool:
    """Whether a dense lookup table over all ``base**2`` combinations (int32) is used instead of
    sorting: when it is no bigger than one chunk array."""
    return base * base <= max(2 * chunk_cells, 2**16) and base * base < 2**31


def _fold(total: np.ndarray, comp: np.ndarray, rows: np.ndarray) -> None:
    """Add the rows of ``rows`` (blocks × pairs) to ``total`` one block after the other, with
    Neumaier compensation in ``comp`` — the same sequence of operations whatever the chunking."""
    t = np.empty_like(total)
    big = np.empty_like(total, dtype=bool)
    for row in rows:
        np.add(total, row, out=t)
        np.greater_equal(np.abs(total), np.abs(row), out=big)
        comp += np.where(big, (total - t) + row, (row - t) + total)
        total[:] = t


def _progress(slices: list[slice], show: bool, desc: str):
    if not show:
        return slices
    from tqdm.auto import tqdm

    return tqdm(slices, desc=desc, unit="chunk")
