"""The matrix engine: all scores for many policy pairs on one context set.

Work is done once per distinct item: acts and prompts are interned, each score is computed on
the distinct (act, act') / (prompt, prompt') pairs met in any compared pair (unordered pairs for
a symmetric score, ordered pairs otherwise, as ``ScoreInfo.symmetric`` says), each
distinct prompt is embedded once per model (the encoders also keep an on-disk cache), and the
per-context values are gathered back with numpy indexing.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._errors import ConfigError, ContextSetMismatch
from ._tables import ResponseTable
from .scores import ALL_SCORES, Score, get_score
from .scores._base import intern, unique_pairs

__all__ = ["compare", "Comparison", "plan_pairs", "PAIR_MODES"]

PAIR_MODES = ("all", "consecutive", "cross")


def _trial_key(policy: Mapping[str, Any]) -> tuple:
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
            groups.setdefault(_trial_key(t.policy), []).append(i)
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


@dataclass
class Comparison:
    """The result of :func:`compare`.

    ``per_context``: one row per (pair, context) with columns ``pair, a, b, context, context_id``
    and one column per score (NaN where a value is missing). ``means``: one row per pair with the
    mean of each score over the contexts where it is defined, and ``n`` (contexts) and
    ``n_missing_<score>`` counts. ``signatures`` maps each score name to its signature.
    """

    per_context: pd.DataFrame
    means: pd.DataFrame
    signatures: dict[str, str]
    context_fingerprint: str
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def score_names(self) -> list[str]:
        return list(self.signatures)


def _score_unique(score: Score, codes_a: np.ndarray, codes_b: np.ndarray, items: list[str]) -> np.ndarray:
    """Score values for aligned code arrays (-1: missing -> NaN), computing each distinct pair once
    (unordered pairs for a symmetric score, ordered pairs otherwise)."""
    out = np.full(codes_a.shape, np.nan)
    valid = (codes_a >= 0) & (codes_b >= 0)
    if not valid.any():
        return out
    first, second, inverse = unique_pairs(codes_a[valid], codes_b[valid], symmetric=score.info.symmetric)
    vals = score.pairwise([items[i] for i in first.tolist()], [items[j] for j in second.tolist()])
    out[valid] = vals[inverse]
    return out


def compare(
    tables: Sequence[ResponseTable],
    pairs: str | Sequence[tuple[Any, Any]] = "all",
    *,
    scores: Sequence[str | Score] = ALL_SCORES,
    score_options: Mapping[str, Mapping[str, Any]] | None = None,
    by: str | None = None,
    progress: bool | None = None,
) -> Comparison:
    """Compare policies' response tables context by context.

    ``tables``: response tables produced on the same context set (same fingerprint; else
    :class:`ContextSetMismatch`). ``pairs``: ``"all"``, ``"consecutive"``, ``"cross"`` (see
    :func:`plan_pairs`; ``"cross"`` needs ``by``, the metadata key that splits the tables into
    two groups) or explicit pairs of table indices or policy ids. ``scores``: names or
    score objects; ``score_options`` maps a score name to its constructor options.
    """
    tables = _validate_tables(tables)
    plan = _plan(tables, pairs, by)
    objs = _make_scores(scores, score_options)
    n_ctx = len(tables[0])
    show = progress if progress is not None else (len(plan) * n_ctx > 200_000)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    items = _intern(tables, plan)
    timings["intern"] = time.perf_counter() - t0
    columns = _score_all(objs, items, show, timings)
    ids = [t.id for t in tables]
    per_context = _gather(plan, ids, n_ctx, tables[0].context_ids, columns)
    means = _aggregate(plan, ids, n_ctx, columns)
    timings["total"] = time.perf_counter() - t0
    return Comparison(
        per_context=per_context,
        means=means,
        signatures={o.name: o.signature for o in objs},
        context_fingerprint=tables[0].context_fingerprint,
        policies={t.id: dict(t.policy) for t in tables},
        timings=timings,
    )


def _validate_tables(tables: Sequence[ResponseTable]) -> list[ResponseTable]:
    """At least two tables, all of one context set, with distinct policy ids, each with an answer."""
    tables = list(tables)
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
    failed = [t for t in tables if len(t) and all(a is None for a in t.acts)]
    if failed:
        first = next((e for e in failed[0].errors if e), "no act")
        raise ConfigError(
            f"response table(s) {', '.join(repr(t.id) for t in failed)} answered none of their {len(ref)} contexts "
            f"(every act is an error; first: {first}): their scores would all be NaN; fix the policy and respond again"
        )
    return tables


def _plan(tables: list[ResponseTable], pairs: str | Sequence[tuple[Any, Any]], by: str | None) -> list[tuple[int, int]]:
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


def _make_scores(scores: Sequence[str | Score], score_options: Mapping[str, Mapping[str, Any]] | None) -> list[Score]:
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


@dataclass
class _Interned:
    """The distinct acts and prompts of all tables, and for every (pair, context) the codes of
    both sides' act and prompt (-1: missing), pair-major."""

    acts: list[str]
    prompts: list[str]
    a_act: np.ndarray
    b_act: np.ndarray
    a_prompt: np.ndarray
    b_prompt: np.ndarray


def _intern(tables: list[ResponseTable], plan: list[tuple[int, int]]) -> _Interned:
    act_index: dict[str, int] = {}
    prompt_index: dict[str, int] = {}
    act_codes = np.stack([intern(t.acts, act_index) for t in tables])
    prompt_codes = np.stack([intern(t.prompts, prompt_index) for t in tables])
    ia = np.array([p[0] for p in plan])
    ib = np.array([p[1] for p in plan])
    return _Interned(
        acts=list(act_index),
        prompts=list(prompt_index),
        a_act=act_codes[ia].ravel(),
        b_act=act_codes[ib].ravel(),
        a_prompt=prompt_codes[ia].ravel(),
        b_prompt=prompt_codes[ib].ravel(),
    )


def _score_all(objs: list[Score], items: _Interned, show: bool, timings: dict[str, float]) -> dict[str, np.ndarray]:
    """One column of per-(pair, context) values per score; each score's time into ``timings``."""
    columns: dict[str, np.ndarray] = {}
    it: Iterable[Score] = objs
    if show:
        from tqdm.auto import tqdm

        it = tqdm(objs, desc="scoring", unit="score")
    for s in it:
        t1 = time.perf_counter()
        if s.info.level == "semantic":
            columns[s.name] = _score_unique(s, items.a_act, items.b_act, items.acts)
        else:
            encoder: Any = getattr(s, "encoder", None)  # model scores show the encoder's progress
            if hasattr(encoder, "progress"):
                encoder.progress = show
            columns[s.name] = _score_unique(s, items.a_prompt, items.b_prompt, items.prompts)
        timings[s.name] = time.perf_counter() - t1
    return columns


def _gather(
    plan: list[tuple[int, int]], ids: list[str], n_ctx: int, context_ids: Sequence[str], columns: dict[str, np.ndarray]
) -> pd.DataFrame:
    """The per-context table: one row per (pair, context), pair-major."""
    n_pairs = len(plan)
    return pd.DataFrame(
        {
            "pair": np.repeat(np.arange(n_pairs), n_ctx),
            "a": np.repeat(np.array([ids[i] for i, _ in plan], dtype=object), n_ctx),
            "b": np.repeat(np.array([ids[j] for _, j in plan], dtype=object), n_ctx),
            "context": np.tile(np.arange(n_ctx), n_pairs),
            "context_id": np.tile(np.array(context_ids, dtype=object), n_pairs),
            **columns,
        }
    )


def _aggregate(plan: list[tuple[int, int]], ids: list[str], n_ctx: int, columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """The means table: per pair the mean of each score over its defined values and the counts."""
    mean_rows = []
    for k, (i, j) in enumerate(plan):
        sl = slice(k * n_ctx, (k + 1) * n_ctx)
        row: dict[str, Any] = {"pair": k, "a": ids[i], "b": ids[j], "n": n_ctx}
        for name, values in columns.items():
            v = values[sl]
            ok = ~np.isnan(v)
            row[name] = float(v[ok].mean()) if ok.any() else float("nan")
        for name, values in columns.items():
            row[f"n_missing_{name}"] = int(np.isnan(values[sl]).sum())
        mean_rows.append(row)
    return pd.DataFrame(mean_rows)
