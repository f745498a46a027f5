"""The comparison kernel: every score on the distinct answer combinations, in two passes.

:func:`behavsim.compare` runs it for whichever outputs it is asked for — per-context rows, pair
means, P×P matrices — and hands the gathered values to its sinks (``behavsim/_sinks.py``).

1. **Intern** the answers of all tables with one shared index per level (acts for the semantic
   scores, prompts for the text scores), table by table in order of first appearance: a
   tables × contexts array of integer codes (-1: missing).
2. **Pass 1**, per group of scores on the same level and of the same symmetry: the code
   combinations (x, x') of the cells asked for — the compared pairs' (pair, context) cells,
   pair-major, and/or every pair of the matrices, context-major — are collected chunk by chunk as
   integer keys ``x * base + x'`` (``(min, max)`` for a symmetric score) into the sorted set of
   distinct combinations.
3. **Scoring**: each score scores every distinct combination once, in one batch call (its batch
   API, the encoders' embedding cache), here or as tasks of an executor
   (``behavsim/_scoring_tasks.py``), in order: the same values.
4. **Pass 2**, per chunk: the cells' values are gathered from the distinct values by key
   (a dense lookup table, or a binary search when the lookup would be bigger than a chunk) and
   given to the sinks: the compared pairs chunk by chunk of whole pairs, the matrices chunk by
   chunk of whole :data:`FOLD_BLOCK` contexts.

When both the compared pairs and the matrices are asked for, a built-in score whose values do not
depend on its batch is scored once on the matrices' combinations (a superset of the pairs'); any
other score (BERTScore with idf from the batch, a score object of the caller's) is scored on each
set of cells separately, so every output equals the one it would be alone.

Memory beyond the tables and the codes: the distinct combinations with their values and a few
arrays of one chunk's cells (about :data:`DEFAULT_CHUNK_CELLS` by default).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._scoring_tasks import score_pairwise, splittable
from ._tables import ResponseTable
from .scores import Score
from .scores._base import intern

__all__ = [
    "DEFAULT_CHUNK_CELLS",
    "FOLD_BLOCK",
    "Answers",
    "Scored",
    "PairCells",
    "MatrixCells",
    "intern_answers",
    "score_cells",
    "gather_pairs",
    "fold_matrix",
    "combination_keys",
    "distinct_combinations",
    "combination_positions",
]

#: (pair, context) cells per chunk by default (~16 MB per float64 array).
DEFAULT_CHUNK_CELLS = 2**21

#: Contexts summed as one block before the matrices' compensated fold; matrix chunks are whole
#: blocks, so the blocks, and the sums, are the same for every chunk size.
FOLD_BLOCK = 64

_ATTR = {"semantic": "acts", "text": "prompts"}


@dataclass
class Answers:
    """One level's answers: ``codes`` (tables × contexts, int64, -1: missing) and the distinct
    ``items`` they index."""

    codes: np.ndarray
    items: list[str]

    @property
    def base(self) -> int:
        return max(len(self.items), 1)


def intern_answers(tables: Sequence[ResponseTable], levels: Iterable[str]) -> dict[str, Answers]:
    """The interned acts and/or prompts of ``tables`` (one shared index per level)."""
    out: dict[str, Answers] = {}
    n_ctx = len(tables[0])
    for level in levels:
        if level in out:
            continue
        index: dict[str, int] = {}
        if n_ctx:
            codes = np.stack([intern(getattr(t, _ATTR[level]), index) for t in tables]).astype(np.int64)
        else:
            codes = np.zeros((len(tables), 0), dtype=np.int64)
        out[level] = Answers(codes, list(index))
    return out


# ------------------------------------------------------------------------------ the cells
class PairCells:
    """The (pair, context) cells of the compared pairs ``(ia[k], ib[k])``, pair-major, in chunks
    of whole pairs of about ``chunk_cells`` cells."""

    def __init__(self, ia: np.ndarray, ib: np.ndarray, n_ctx: int, chunk_cells: int) -> None:
        self.ia, self.ib, self.n_ctx = ia, ib, n_ctx
        n_pairs = ia.size
        self.per_chunk = max(1, int(chunk_cells) // max(n_ctx, 1))
        self.chunks = [slice(s, min(s + self.per_chunk, n_pairs)) for s in range(0, n_pairs, self.per_chunk)]
        self.chunk_cells = self.per_chunk * n_ctx

    def keys(self, codes: np.ndarray, sl: slice, base: int, symmetric: bool) -> np.ndarray:
        """The combination keys of chunk ``sl``'s cells, pair-major."""
        return combination_keys(codes[self.ia[sl]].ravel(), codes[self.ib[sl]].ravel(), base, symmetric)


class MatrixCells:
    """The (pair, context) cells of every pair of P tables — the P(P+1)/2 unordered pairs with the
    diagonal for a symmetric score, the P² ordered pairs otherwise — context-major, in chunks of
    ``chunk`` contexts (whole :data:`FOLD_BLOCK` blocks)."""

    def __init__(self, n_pol: int, n_ctx: int, symmetric: bool, chunk: int) -> None:
        if symmetric:
            self.ia, self.ib = np.triu_indices(n_pol)
        else:
            self.ia, self.ib = (x.ravel() for x in np.indices((n_pol, n_pol)))
        self.chunks = [slice(s, min(s + chunk, n_ctx)) for s in range(0, n_ctx, chunk)]
        self.chunk_cells = chunk * self.ia.size

    def keys(self, codes: np.ndarray, sl: slice, base: int, symmetric: bool) -> np.ndarray:
        """The combination keys of chunk ``sl``'s cells, contexts × pairs."""
        x = codes[:, sl].T
        return combination_keys(x[:, self.ia], x[:, self.ib], base, symmetric)


def matrix_chunk(n_pol: int, n_ctx: int, chunk_contexts: int | None) -> int:
    """Contexts per matrix chunk: ``chunk_contexts`` (default: about :data:`DEFAULT_CHUNK_CELLS`
    cells of the P² pairs), at most the contexts, rounded up to whole :data:`FOLD_BLOCK` blocks."""
    chunk = int(chunk_contexts) if chunk_contexts is not None else max(1, DEFAULT_CHUNK_CELLS // (n_pol * n_pol))
    chunk = max(1, min(chunk, max(n_ctx, 1)))
    return -(-chunk // FOLD_BLOCK) * FOLD_BLOCK


# ------------------------------------------------------------------------------ pass 1 and scoring
@dataclass
class Scored:
    """One score's values on the sorted distinct combination ``keys`` (``values[-1]`` is NaN, the
    value of a cell with a missing side); ``lut``: the dense key -> position lookup or None."""

    keys: np.ndarray
    lut: np.ndarray | None
    base: int
    values: np.ndarray

    def at(self, keys: np.ndarray) -> np.ndarray:
        return self.values[combination_positions(keys, self.keys, self.lut)]


def _shares_batches(score: Score) -> bool:
    """Whether a score may be scored once on a superset of the combinations it is gathered from:
    a built-in score whose values do not depend on the rest of its batch."""
    return type(score).__module__.startswith("behavsim.scores") and splittable(score)


def score_cells(
    objs: Sequence[Score],
    answers: dict[str, Answers],
    pairs: PairCells | None,
    matrix: dict[bool, MatrixCells] | None,
    recipes: dict[str, tuple[str, dict[str, Any]]],
    executor: Any,
    show: bool,
    timings: dict[str, float],
) -> tuple[dict[str, Scored], dict[str, Scored]]:
    """Pass 1 and the scoring: per score, its values on the distinct combinations of the compared
    pairs' cells (first dict; empty without ``pairs``) and of the matrices' cells (second; empty
    without ``matrix``)."""
    groups: dict[tuple[str, bool], list[Score]] = {}
    for s in objs:
        groups.setdefault((s.info.level, bool(s.info.symmetric)), []).append(s)
    for_pairs: dict[str, Scored] = {}
    for_matrix: dict[str, Scored] = {}
    for (level, symmetric), members in groups.items():
        ans = answers[level]
        t1 = time.perf_counter()
        m_set = _distinct(matrix[symmetric], ans, symmetric, show) if matrix is not None else None
        own = pairs is not None and (m_set is None or not all(_shares_batches(s) for s in members))
        p_set = _distinct(pairs, ans, symmetric, show) if own and pairs is not None else None
        timings[f"distinct_{level}"] = timings.get(f"distinct_{level}", 0.0) + time.perf_counter() - t1
        for s in members:
            t2 = time.perf_counter()
            if hasattr(getattr(s, "encoder", None), "progress"):  # model scores show the encoder's progress
                s.encoder.progress = show  # type: ignore[attr-defined]
            if m_set is not None:
                for_matrix[s.name] = _score(s, m_set, ans, recipes, executor)
            if pairs is not None:
                if m_set is not None and _shares_batches(s):
                    for_pairs[s.name] = for_matrix[s.name]
                else:
                    assert p_set is not None
                    for_pairs[s.name] = _score(s, p_set, ans, recipes, executor)
            timings[s.name] = timings.get(s.name, 0.0) + time.perf_counter() - t2
    return for_pairs, for_matrix


def _distinct(
    cells: PairCells | MatrixCells, ans: Answers, symmetric: bool, show: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    chunks = (cells.keys(ans.codes, sl, ans.base, symmetric) for sl in progress(cells.chunks, show, "combinations"))
    return distinct_combinations(chunks, ans.base, cells.chunk_cells)


def _score(
    s: Score,
    distinct: tuple[np.ndarray, np.ndarray | None],
    ans: Answers,
    recipes: dict[str, tuple[str, dict[str, Any]]],
    executor: Any,
) -> Scored:
    keys, lut = distinct
    base = ans.base
    first = [ans.items[i] for i in (keys // base).tolist()]
    second = [ans.items[j] for j in (keys % base).tolist()]
    vals = score_pairwise(s, recipes.get(s.name), first, second, executor) if first else np.zeros(0)
    return Scored(keys, lut, base, np.append(np.asarray(vals, dtype=np.float64), np.nan))


# ------------------------------------------------------------------------------ pass 2
def gather_pairs(
    cells: PairCells,
    objs: Sequence[Score],
    answers: dict[str, Answers],
    scored: dict[str, Scored],
    consume: Callable[[slice, dict[str, np.ndarray]], None],
    show: bool,
) -> None:
    """Per chunk of whole pairs, every score's per-context values (pair-major) to ``consume``."""
    for sl in progress(cells.chunks, show, "pairs"):
        columns: dict[str, np.ndarray] = {}
        positions: dict[int, np.ndarray] = {}  # scores sharing a distinct set share the gather
        for s in objs:
            t = scored[s.name]
            if id(t.keys) not in positions:
                k = cells.keys(answers[s.info.level].codes, sl, t.base, bool(s.info.symmetric))
                positions[id(t.keys)] = combination_positions(k, t.keys, t.lut)
            columns[s.name] = t.values[positions[id(t.keys)]]
        consume(sl, columns)


def fold_matrix(
    cells: dict[bool, MatrixCells],
    objs: Sequence[Score],
    answers: dict[str, Answers],
    scored: dict[str, Scored],
    show: bool,
    timings: dict[str, float],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per score, the sums (Neumaier-compensated, block by block in context order) and the counts
    of the defined values of every pair of its :class:`MatrixCells`."""
    sums: dict[str, np.ndarray] = {}
    counts: dict[str, np.ndarray] = {}
    groups: dict[tuple[str, bool], list[Score]] = {}
    for s in objs:
        groups.setdefault((s.info.level, bool(s.info.symmetric)), []).append(s)
    for (level, symmetric), members in groups.items():
        t0 = time.perf_counter()
        mc = cells[symmetric]
        codes = answers[level].codes
        total = {s.name: np.zeros(mc.ia.size) for s in members}
        comp = {s.name: np.zeros(mc.ia.size) for s in members}
        count = {s.name: np.zeros(mc.ia.size, dtype=np.int64) for s in members}
        for sl in progress(mc.chunks, show, "matrices"):
            positions: dict[int, np.ndarray] = {}
            for s in members:
                t = scored[s.name]
                if id(t.keys) not in positions:
                    positions[id(t.keys)] = combination_positions(mc.keys(codes, sl, t.base, symmetric), t.keys, t.lut)
                v = t.values[positions[id(t.keys)]]
                ok = ~np.isnan(v)
                count[s.name] += ok.sum(axis=0)
                v[~ok] = 0.0
                fold(total[s.name], comp[s.name], np.add.reduceat(v, np.arange(0, len(v), FOLD_BLOCK), axis=0))
        for s in members:
            sums[s.name] = total[s.name] + comp[s.name]
            counts[s.name] = count[s.name]
        timings[f"fold_{level}"] = timings.get(f"fold_{level}", 0.0) + time.perf_counter() - t0
    return sums, counts


# ------------------------------------------------------------------------------ keys and positions
def combination_keys(a: np.ndarray, b: np.ndarray, base: int, symmetric: bool) -> np.ndarray:
    """One integer per aligned pair of answer codes, ``first * base + second`` (first <= second for
    a symmetric score); -1 where a side is missing (code -1)."""
    if symmetric:
        a, b = np.minimum(a, b), np.maximum(a, b)
    keys = a * base + b
    keys[(a < 0) | (b < 0)] = -1
    return keys


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


def fold(total: np.ndarray, comp: np.ndarray, rows: np.ndarray) -> None:
    """Add the rows of ``rows`` (blocks × pairs) to ``total`` one block after the other, with
    Neumaier compensation in ``comp`` — the same sequence of operations whatever the chunking."""
    t = np.empty_like(total)
    big = np.empty_like(total, dtype=bool)
    for row in rows:
        np.add(total, row, out=t)
        np.greater_equal(np.abs(total), np.abs(row), out=big)
        comp += np.where(big, (total - t) + row, (row - t) + total)
        total[:] = t


def progress(items: list[slice], show: bool, desc: str) -> Iterable[slice]:
    """``items``, with a progress bar when ``show``."""
    if not show:
        return items
    from tqdm.auto import tqdm  # a measured start-up cost: loaded when a progress bar is shown

    return tqdm(items, desc=desc, unit="chunk")
