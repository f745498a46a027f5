"""Analysis of a comparison: per-context values first, aggregates second.

Every function here starts from the per-context table of :func:`behavsim.compare`
(``Comparison.per_context``: one row per (pair, context) with ``pair, a, b, context, context_id``
and one float column per score, NaN = missing), so means, bootstrap intervals, paired tests,
score agreement (paper Figure 6), per-turn breakdowns (Figure 4) and the list of contexts two
policies disagree on all come from the same numbers.

Randomness is explicit: every resampling function takes a ``seed`` and draws from its own
``np.random.Generator``; the seed and the settings are stored in the result (``DataFrame.attrs``
or the result's fields).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._bootstrap import (
    bootstrap_ci,
    check_confidence,
    check_int,
    check_seed,
    group_means,
    means_from_per_context,
    with_intervals,
)
from ._comparison import Comparison
from ._contexts import ContextSet
from ._errors import ConfigError, ContextSetMismatch
from ._inputs import PathLike, as_contexts, as_table_map, is_path
from ._per_context import as_per_context, resolve_scores, score_columns
from ._permutation import ALTERNATIVES, PermutationResult, paired_permutation_test, reward_vs_seed_test, sign_flip_min_p
from ._tables import ResponseTable
from ._trials import (
    PairsMean,
    TrialTestResult,
    distinct_relabelings,
    pairs_mean_ci,
    trial_level_test,
    trial_permutation_test,
    trials_per_group_needed,
)

__all__ = [
    "bootstrap_ci",
    "means_with_ci",
    "PermutationResult",
    "paired_permutation_test",
    "reward_vs_seed_test",
    "TrialTestResult",
    "trial_permutation_test",
    "trial_level_test",
    "PairsMean",
    "pairs_mean_ci",
    "distinct_relabelings",
    "trials_per_group_needed",
    "sign_flip_min_p",
    "score_agreement",
    "per_turn",
    "disagreements",
    "pair_table",
    "ALTERNATIVES",
]


def means_with_ci(
    comparison_or_per_context_df: Comparison | pd.DataFrame,
    scores: Iterable[str] | None = None,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """The means table with a bootstrap interval per pair and score.

    Returns one row per pair (``pair, a, b, n``, one mean column per score, ``n_missing_<score>``)
    plus ``<score>_lo`` and ``<score>_hi``: the :func:`bootstrap_ci` of that pair's per-context
    values (NaN ignored). Vectorised: all (pair, score) vectors with the same number of values share
    one resample matrix, so each row gets exactly what ``bootstrap_ci(values, seed=seed)`` gives.
    The settings are in ``result.attrs["bootstrap"]``.
    """
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    confidence = check_confidence(confidence)
    seed = check_seed(seed)
    per = as_per_context(comparison_or_per_context_df, "comparison_or_per_context_df")
    names = resolve_scores(per, scores)
    if isinstance(comparison_or_per_context_df, Comparison) and all(
        s in comparison_or_per_context_df.means.columns for s in names
    ):
        base = comparison_or_per_context_df.means.copy()
    else:
        base = means_from_per_context(per, names)
    return with_intervals(base, per, names, n_resamples=n_resamples, confidence=confidence, seed=seed)


# ---------------------------------------------------------------------------- score agreement
def score_agreement(
    per_context_df: Comparison | pd.DataFrame, scores: Iterable[str] | None = None, *, only_mismatch: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pearson correlation and mean squared error between every two scores (paper Figure 6).

    Computed over all (pair, context) rows of the table; rows where any of ``scores`` is NaN are
    dropped. With ``only_mismatch=True`` only rows whose acts do not match (``TMR == 0``) are used —
    matches make every score 1 and dominate the correlation. Returns ``(corr, mse)``, square
    DataFrames indexed by score; a constant column (or fewer than two rows) gives NaN correlations.
    Both carry ``attrs``: ``n_rows`` (rows used), ``n_dropped_nan`` (rows dropped for a NaN),
    ``n_dropped_match`` (rows dropped as matches), ``only_mismatch``.
    """
    per = as_per_context(per_context_df)
    names = resolve_scores(per, scores)
    if len(names) < 2:
        raise ConfigError(f"score_agreement needs at least two scores, got {names}")
    if only_mismatch and "TMR" not in per.columns:
        raise ConfigError("only_mismatch=True needs the TMR column (acts match <=> TMR == 1) in the table")
    cols = names + (["TMR"] if only_mismatch and "TMR" not in names else [])
    mat = per[cols].to_numpy(dtype=np.float64)
    keep = ~np.isnan(mat).any(axis=1)
    n_nan = int((~keep).sum())
    n_match = 0
    if only_mismatch:
        tmr = mat[:, cols.index("TMR")]
        match = keep & (tmr != 0)
        n_match = int(match.sum())
        keep &= tmr == 0
    x = mat[keep][:, : len(names)]
    n = x.shape[0]
    k = len(names)
    if n >= 2:
        xc = x - x.mean(axis=0)
        ss = np.sqrt((xc * xc).sum(axis=0))
        with np.errstate(invalid="ignore", divide="ignore"):
            corr = (xc.T @ xc) / np.outer(ss, ss)
        corr[:, ss == 0] = np.nan
        corr[ss == 0, :] = np.nan
        corr = np.clip(corr, -1.0, 1.0)
    else:
        corr = np.full((k, k), np.nan)
    if n >= 1:
        mse = np.stack([((x - x[:, [i]]) ** 2).mean(axis=0) for i in range(k)])
    else:
        mse = np.full((k, k), np.nan)
    attrs = {"n_rows": n, "n_dropped_nan": n_nan, "n_dropped_match": n_match, "only_mismatch": bool(only_mismatch)}
    out = []
    for m in (corr, mse):
        df = pd.DataFrame(m, index=pd.Index(names, name="score"), columns=names)
        df.attrs.update(attrs)
        out.append(df)
    return out[0], out[1]


# ---------------------------------------------------------------------------- per turn
def _turn_lookup(turns: Any, contexts: np.ndarray) -> np.ndarray:
    if is_path(turns):
        turns = as_contexts(turns, "turns")
    if isinstance(turns, ContextSet):
        turns = [m.get("turn") for m in turns.metas]
    if isinstance(turns, Mapping):
        vals = [turns.get(int(c), turns.get(str(c))) for c in contexts]
    elif isinstance(turns, (Sequence, np.ndarray, pd.Series)) and not isinstance(turns, str):
        seq = list(turns)
        if contexts.size and (contexts.min() < 0 or contexts.max() >= len(seq)):
            raise ConfigError(f"turns has {len(seq)} entries but the table refers to context {int(contexts.max())}")
        vals = [seq[int(c)] for c in contexts]
    else:
        raise ConfigError(
            "turns must map context index -> turn (a mapping, a sequence indexed by context, "
            f"or a ContextSet), got {type(turns).__name__}"
        )
    out = np.full(len(vals), np.nan)
    for i, v in enumerate(vals):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise ConfigError(f"turn of context {int(contexts[i])} must be a number, got {v!r}") from None
    return out


def per_turn(
    per_context_df: Comparison | pd.DataFrame, turns: Any, scores: Iterable[str] = ("TMR", "DMR")
) -> pd.DataFrame:
    """Mean of each score per (pair, turn) (paper Figure 4).

    ``turns`` maps context index -> turn index: a mapping, a sequence indexed by context (e.g.
    ``[m.get("turn") for m in contexts.metas]``) or a :class:`ContextSet` or its path (its
    ``metas[i]["turn"]``).
    Contexts without a turn (generated contexts) are left out; ``result.attrs["n_without_turn"]``
    counts them. Columns: ``pair, a, b, turn, n`` (contexts in the cell), one mean per score (NaN
    ignored) and ``n_missing_<score>``; sorted by pair and turn.
    """
    per = as_per_context(per_context_df)
    names = resolve_scores(per, scores)
    t = _turn_lookup(turns, per["context"].to_numpy())
    has = ~np.isnan(t)
    rows = per.loc[has, [c for c in ("pair", "a", "b") if c in per.columns] + names].copy()
    rows["turn"] = t[has].astype(np.int64)
    keys = [c for c in ("pair", "a", "b") if c in per.columns] + ["turn"]
    out = group_means(rows, keys, names)
    out.attrs["n_without_turn"] = int((~has).sum())
    return out


# ---------------------------------------------------------------------------- disagreements
def _pick_pair(comparison: Comparison, pair: Any) -> int:
    means = comparison.means
    if isinstance(pair, (int, np.integer)) and not isinstance(pair, bool):
        if int(pair) not in set(means["pair"].tolist()):
            raise ConfigError(f"pair must be one of the pair indices {means['pair'].tolist()}, got {pair!r}")
        return int(pair)
    if isinstance(pair, (tuple, list)) and len(pair) == 2:
        a, b = str(pair[0]), str(pair[1])
        hit = means[((means.a == a) & (means.b == b)) | ((means.a == b) & (means.b == a))]
        if hit.empty:
            raise ConfigError(f"no compared pair of policies {a!r} and {b!r}; pairs: {list(zip(means.a, means.b))}")
        return int(hit["pair"].iloc[0])
    raise ConfigError(f"pair must be a pair index or an (a, b) tuple of policy ids, got {pair!r}")


def disagreements(
    comparison: Comparison,
    contexts: ContextSet | PathLike,
    tables: Sequence[ResponseTable | PathLike] | Mapping[str, ResponseTable | PathLike],
    *,
    pair: Any = 0,
    top: int | None = 20,
    by: str = "CMR",
) -> pd.DataFrame:
    """The contexts on which the two policies of one compared pair disagree most.

    Rows of ``pair`` (a pair index or an ``(a, b)`` tuple of policy ids) sorted by ``by``
    ascending (least similar first; NaN last), ties broken by the other scores (ascending, in the
    comparison's order) and then by context index, so the order is deterministic; the first
    ``top`` rows (``None``: all). ``contexts`` and ``tables`` may be given as paths. Columns: ``rank, context, context_id, summary`` (from
    ``contexts.summary(i)``), ``turn, origin`` and, when present, ``dialogue, source_policy``
    (context metadata), ``act_a, act_b, prompt_a, prompt_b`` and every score.
    """
    if not isinstance(comparison, Comparison):
        raise ConfigError(f"comparison must be a behavsim.Comparison, got {type(comparison).__name__}")
    contexts = as_contexts(contexts)
    if top is not None:
        top = check_int(top, "top", 1)
    per = as_per_context(comparison, "comparison")
    names = [s for s in comparison.score_names if s in per.columns] or score_columns(per)
    by = resolve_scores(per, [by], "by")[0]
    k = _pick_pair(comparison, pair)
    if contexts.fingerprint != comparison.context_fingerprint:
        raise ContextSetMismatch(
            f"contexts ({contexts.fingerprint}) is not the context set the comparison was "
            f"made on ({comparison.context_fingerprint})"
        )
    by_id = as_table_map(tables)
    rows = per[per["pair"] == k]
    a, b = str(rows["a"].iloc[0]), str(rows["b"].iloc[0])
    for pid in (a, b):
        if pid not in by_id:
            raise ConfigError(f"tables has no response table of policy {pid!r}; got {sorted(by_id)}")
        if by_id[pid].context_fingerprint != comparison.context_fingerprint:
            raise ContextSetMismatch(
                f"the response table of {pid!r} was made on another context set ({by_id[pid].context_fingerprint})"
            )
    order = [by] + [s for s in names if s != by]
    rows = rows.sort_values(order + ["context"], ascending=True, na_position="last", kind="mergesort")
    if top is not None:
        rows = rows.head(top)
    ta, tb = by_id[a], by_id[b]
    ctx = rows["context"].to_numpy(dtype=np.int64)
    out = pd.DataFrame(
        {
            "rank": np.arange(1, len(rows) + 1),
            "context": ctx,
            "context_id": [contexts.ids[i] for i in ctx],
            "summary": [contexts.summary(int(i)) for i in ctx],
        }
    )
    metas = [contexts.metas[i] for i in ctx]
    out["turn"] = [m.get("turn") for m in metas]
    out["origin"] = [m.get("origin") for m in metas]
    for key in ("dialogue", "source_policy"):
        if any(key in m for m in contexts.metas):
            out[key] = [m.get(key) for m in metas]
    out["a"] = a
    out["b"] = b
    out["act_a"] = [ta.acts[i] for i in ctx]
    out["act_b"] = [tb.acts[i] for i in ctx]
    out["prompt_a"] = [ta.prompts[i] for i in ctx]
    out["prompt_b"] = [tb.prompts[i] for i in ctx]
    for s in names:
        out[s] = rows[s].to_numpy()
    out.attrs.update({"pair": k, "by": by, "top": top})
    return out


# ---------------------------------------------------------------------------- plotting input
def pair_table(
    comparison: Comparison, keys: Sequence[str] = ("reward", "seed", "checkpoint"), *, table: pd.DataFrame | None = None
) -> pd.DataFrame:
    """``table`` (default ``comparison.means``) with the policies' metadata joined on.

    For each key adds ``a_<key>`` and ``b_<key>`` (None where a policy lacks it), and ``<key>``
    itself when both policies agree on it — e.g. ``checkpoint`` for seed pairs, ``reward`` for
    within-reward pairs — which is what the plots use as ``x``/``group``.
    """
    if not isinstance(comparison, Comparison):
        raise ConfigError(f"comparison must be a behavsim.Comparison, got {type(comparison).__name__}")
    out = (comparison.means if table is None else table).copy()
    for key in keys:
        av = [comparison.policies.get(str(p), {}).get(key) for p in out["a"]]
        bv = [comparison.policies.get(str(p), {}).get(key) for p in out["b"]]
        out[f"a_{key}"] = av
        out[f"b_{key}"] = bv
        if key not in out.columns:
            out[key] = [x if x == y else None for x, y in zip(av, bv)]
    return out
