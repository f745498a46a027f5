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

import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._bootstrap import (
    _CHUNK,
    _check_confidence,
    _check_int,
    _check_seed,
    _group_means,
    _means_from_per_context,
    bootstrap_ci,
    with_intervals,
)
from ._contexts import ContextSet
from ._engine import Comparison
from ._errors import ConfigError, ContextSetMismatch, UnknownScore
from ._inputs import PathLike, as_contexts, as_table_map, is_path
from ._sinks import ANSWER_COLUMNS
from ._tables import ResponseTable
from ._util import closest_name
from .scores import list_scores

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

ALTERNATIVES = ("two-sided", "greater", "less")
_KEY_COLUMNS = ("pair", "a", "b", "context", "context_id")


def _as_per_context(obj: Any, name: str = "per_context_df") -> pd.DataFrame:
    if isinstance(obj, Comparison):
        if obj.per_context is None:
            raise ConfigError(
                f"{name}: the comparison kept no per-context rows (they were streamed, or not asked for); "
                "compare(..., per_context=True) keeps them"
            )
        obj = obj.per_context
    if not isinstance(obj, pd.DataFrame):
        raise ConfigError(f"{name} must be a Comparison or its per_context DataFrame, got {type(obj).__name__}")
    missing = [c for c in ("pair", "context") if c not in obj.columns]
    if missing:
        raise ConfigError(
            f"{name} lacks the column(s) {missing}; expected the per-context table of "
            f"behavsim.compare (columns {list(_KEY_COLUMNS)} + one per score), got {list(obj.columns)}"
        )
    return obj


def _score_columns(df: pd.DataFrame) -> list[str]:
    """The score columns of a per-context table: registered names first (registry order), then others."""
    known = [s for s in list_scores() if s in df.columns]
    extra = [
        c
        for c in df.columns
        if c not in known
        and c not in _KEY_COLUMNS
        and c not in ANSWER_COLUMNS
        and not str(c).startswith("n_")
        and c != "n"
        and pd.api.types.is_float_dtype(df[c])
    ]
    return known + extra


def _resolve_scores(df: pd.DataFrame, scores: str | Iterable[str] | None, name: str = "scores") -> list[str]:
    available = _score_columns(df)
    if scores is None:
        if not available:
            raise ConfigError(f"the table has no score columns; columns: {list(df.columns)}")
        return available
    if isinstance(scores, str):
        scores = [scores]
    out = []
    lower = {s.lower(): s for s in available}
    for s in scores:
        if not isinstance(s, str):
            raise ConfigError(f"{name} must be score names, got {s!r}")
        if s in available:
            out.append(s)
        elif s.lower() in lower:
            out.append(lower[s.lower()])
        else:
            raise UnknownScore("score", s, available, closest_name(s, available, cutoff=0.6))
    if len(set(out)) != len(out):
        raise ConfigError(f"{name} lists a score twice: {out}")
    if not out:
        raise ConfigError(f"{name} is empty")
    return out


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
    n_resamples = _check_int(n_resamples, "n_resamples", 1)
    confidence = _check_confidence(confidence)
    seed = _check_seed(seed)
    per = _as_per_context(comparison_or_per_context_df, "comparison_or_per_context_df")
    names = _resolve_scores(per, scores)
    if isinstance(comparison_or_per_context_df, Comparison) and all(
        s in comparison_or_per_context_df.means.columns for s in names
    ):
        base = comparison_or_per_context_df.means.copy()
    else:
        base = _means_from_per_context(per, names)
    return with_intervals(base, per, names, n_resamples=n_resamples, confidence=confidence, seed=seed)


# ---------------------------------------------------------------------------- permutation test
@dataclass(frozen=True)
class PermutationResult:
    """Result of :func:`paired_permutation_test`.

    ``diff = mean_x - mean_y`` over the ``n`` contexts where both values exist. ``exact`` says
    whether all 2**n sign flips were enumerated (then ``p_value`` is exact) or ``n_permutations``
    random flips were drawn (then ``p_value = (k + 1) / (n_permutations + 1)``).
    """

    mean_x: float
    mean_y: float
    diff: float
    p_value: float
    n: int
    n_permutations: int = 0
    alternative: str = "two-sided"
    seed: int = 0
    exact: bool = False


def _count_extreme(stats: np.ndarray, observed: float, alternative: str, tol: float) -> int:
    if alternative == "two-sided":
        return int(np.count_nonzero(np.abs(stats) >= abs(observed) - tol))
    if alternative == "greater":
        return int(np.count_nonzero(stats >= observed - tol))
    return int(np.count_nonzero(stats <= observed + tol))


def paired_permutation_test(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    n_permutations: int = 10000,
    seed: int = 0,
    alternative: str = "two-sided",
) -> PermutationResult:
    """Paired sign-flip permutation test of ``mean(x - y) == 0`` over contexts.

    ``x[i]`` and ``y[i]`` are the values of two comparisons on the same context ``i`` (e.g. the TMR
    of a TS-vs-IQ pair and the TMR of a seed-vs-seed pair); pairs with a NaN are dropped. Under the
    null hypothesis the sign of each difference is exchangeable; the statistic is the mean
    difference. ``alternative``: ``"two-sided"`` (|stat| >= |observed|), ``"greater"`` (x larger)
    or ``"less"`` (x smaller). If ``2**n <= n_permutations`` all sign vectors are enumerated and the
    p-value is exact; otherwise ``n_permutations`` random sign vectors are drawn from
    ``np.random.default_rng(seed)`` and ``p = (k + 1) / (n_permutations + 1)`` (k = random flips at
    least as extreme), which is never 0 and keeps the test valid.
    """
    n_permutations = _check_int(n_permutations, "n_permutations", 1)
    seed = _check_seed(seed)
    if alternative not in ALTERNATIVES:
        raise ConfigError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    try:
        xa = np.asarray(x, dtype=np.float64)
        ya = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError("x and y must be one-dimensional sequences of numbers") from None
    if xa.ndim != 1 or ya.ndim != 1:
        raise ConfigError(f"x and y must be one-dimensional, got shapes {xa.shape} and {ya.shape}")
    if xa.shape != ya.shape:
        raise ConfigError(f"x and y must have one value per context each (paired), got {xa.size} and {ya.size} values")
    ok = ~(np.isnan(xa) | np.isnan(ya))
    xa, ya = xa[ok], ya[ok]
    n = int(xa.size)
    if n == 0:
        raise ConfigError("no context has a value in both x and y (all pairs contain NaN)")
    d = xa - ya
    observed = float(d.mean())
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    exact = n < 63 and 2**n <= n_permutations
    if exact:
        total = 2**n
        k = 0
        block = max(1, _CHUNK // n)
        for start in range(0, total, block):
            codes = np.arange(start, min(total, start + block), dtype=np.int64)
            bits = (codes[:, None] >> np.arange(n, dtype=np.int64)) & 1
            stats = (1 - 2 * bits).astype(np.float64) @ d / n
            k += _count_extreme(stats, observed, alternative, tol)
        p = k / total
        used = total
    else:
        rng = np.random.default_rng(seed)
        k = 0
        block = max(1, _CHUNK // n)
        for start in range(0, n_permutations, block):
            rows = min(block, n_permutations - start)
            signs = 1.0 - 2.0 * rng.integers(0, 2, size=(rows, n), dtype=np.int8)
            stats = signs @ d / n
            k += _count_extreme(stats, observed, alternative, tol)
        p = (k + 1) / (n_permutations + 1)
        used = n_permutations
    return PermutationResult(
        mean_x=float(xa.mean()),
        mean_y=float(ya.mean()),
        diff=observed,
        p_value=float(p),
        n=n,
        n_permutations=used,
        alternative=alternative,
        seed=seed,
        exact=exact,
    )


def _select_pairs(per: pd.DataFrame, pairs: Iterable[Any], name: str) -> pd.DataFrame:
    """Rows of the given pairs: pair indices, or (a, b) policy-id tuples (either order)."""
    pairs = list(pairs)
    if not pairs:
        raise ConfigError(f"{name} is empty")
    known = set(per["pair"].unique().tolist())
    mask = np.zeros(len(per), dtype=bool)
    for p in pairs:
        if isinstance(p, (int, np.integer)) and not isinstance(p, bool):
            if int(p) not in known:
                raise ConfigError(f"{name}: pair index {p!r} is not in the table (pairs: {sorted(known)})")
            mask |= (per["pair"] == int(p)).to_numpy()
        elif isinstance(p, (tuple, list)) and len(p) == 2 and {"a", "b"} <= set(per.columns):
            a, b = str(p[0]), str(p[1])
            hit = (((per["a"] == a) & (per["b"] == b)) | ((per["a"] == b) & (per["b"] == a))).to_numpy()
            if not hit.any():
                raise ConfigError(f"{name}: no pair of policies {a!r} and {b!r} in the table")
            mask |= hit
        else:
            raise ConfigError(f"{name}: each pair must be a pair index or an (a, b) tuple of policy ids, got {p!r}")
    return per[mask]


def _context_means(rows: pd.DataFrame, score: str) -> pd.Series:
    return rows.groupby("context", sort=True)[score].mean()


def reward_vs_seed_test(
    per_context_df: Comparison | pd.DataFrame,
    reward_pairs: Iterable[Any],
    seed_pairs: Iterable[Any],
    score: str = "TMR",
    *,
    n_permutations: int = 10000,
    seed: int = 0,
    alternative: str = "two-sided",
) -> PermutationResult:
    """Does switching the reward change behaviour more than switching the seed?

    For each context, ``score`` is averaged over the ``reward_pairs`` (x) and over the
    ``seed_pairs`` (y) (NaN ignored), then :func:`paired_permutation_test` compares x and y on the
    contexts both groups cover. Pairs are pair indices or ``(a, b)`` policy-id tuples; both groups
    must have been scored on the same context set (the ``context_id`` of each context index must
    agree). With a similarity score, ``alternative="less"`` asks whether cross-reward pairs are
    less similar than seed pairs.
    """
    per = _as_per_context(per_context_df)
    name = _resolve_scores(per, [score], "score")[0]
    if "context_id" in per.columns:
        ids_per_ctx = per.groupby("context")["context_id"].nunique()
        if (ids_per_ctx > 1).any():
            raise ContextSetMismatch(
                "per_context_df mixes context sets: some context index has several context "
                "ids; compare both groups of pairs on the same context set"
            )
    x = _context_means(_select_pairs(per, reward_pairs, "reward_pairs"), name)
    y = _context_means(_select_pairs(per, seed_pairs, "seed_pairs"), name)
    both = x.index.intersection(y.index)
    return paired_permutation_test(
        x.loc[both].to_numpy(),
        y.loc[both].to_numpy(),
        n_permutations=n_permutations,
        seed=seed,
        alternative=alternative,
    )


# ---------------------------------------------------------------------------- trial level
def distinct_relabelings(n_a: int, n_b: int) -> int:
    """How many distinct splits of ``n_a + n_b`` trials into groups of ``n_a`` and ``n_b`` exist.

    The trial-level statistic depends only on the split, not on which group is called A, so with
    equal sizes a split and its mirror count once: 2 + 2 trials give 3, 3 + 3 give 10, 2 + 3 give 10.
    """
    n_a = _check_int(n_a, "n_a", 1)
    n_b = _check_int(n_b, "n_b", 1)
    total = math.comb(n_a + n_b, n_a)
    return total // 2 if n_a == n_b else total


def trials_per_group_needed(alpha: float = 0.05, *, limit: int = 50) -> int:
    """The fewest trials (seeds) per group with which a permutation test over trials of two equal
    groups can reach ``p <= alpha`` (its smallest p-value is 1 / :func:`distinct_relabelings`):
    4 for 0.05 (1/35), 5 for 0.01 (1/126)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < float(alpha) < 1.0:
        raise ConfigError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")
    for k in range(2, limit + 1):
        if 1.0 / distinct_relabelings(k, k) <= alpha:
            return k
    raise ConfigError(f"alpha {alpha!r} needs more than {limit} trials per group")  # pragma: no cover


def sign_flip_min_p(n: int, n_permutations: int, alternative: str = "two-sided") -> float:
    """The smallest p-value :func:`paired_permutation_test` can give for ``n`` contexts: exact
    enumeration (``2**n <= n_permutations``) reaches ``2 / 2**n`` two-sided (a sign vector and its
    mirror are equally extreme) or ``1 / 2**n`` one-sided; sampling reaches ``1 / (n_permutations + 1)``."""
    n = _check_int(n, "n", 1)
    n_permutations = _check_int(n_permutations, "n_permutations", 1)
    if n < 63 and 2**n <= n_permutations:
        return (2.0 if alternative == "two-sided" else 1.0) / 2**n
    return 1.0 / (n_permutations + 1)


@dataclass(frozen=True)
class PairsMean:
    """Mean over pairs of trials of each pair's mean over contexts, with its interval.

    With two pairs or more the interval comes from a two-level bootstrap (trials resampled within
    their groups, then contexts), so it speaks of training runs like these. With one pair it is the
    context-level :func:`bootstrap_ci` of that pair and ``conditional`` is true: the interval is
    conditional on those two trials and says nothing about other seeds.
    """

    mean: float
    lo: float
    hi: float
    n_pairs: int
    n_trials: int
    n_contexts: int
    conditional: bool
    n_resamples: int
    n_degenerate: int = 0  # resamples in which no pair of distinct trials was drawn (left out)
    confidence: float = 0.95
    seed: int = 0

    @property
    def ci(self) -> tuple[float, float]:
        return (self.lo, self.hi)


@dataclass(frozen=True)
class TrialTestResult:
    """Result of :func:`trial_permutation_test` (and :func:`trial_level_test`).

    The units are trials: ``statistic = mean_between - mean_within``, the mean similarity of the
    pairs of trials from different groups minus that of the pairs within a group, each pair's
    similarity being its mean over contexts. ``p_value`` counts the relabelings of the trials
    (splits into groups of the same sizes) at least as extreme as the observed one: all
    ``n_relabelings`` distinct splits when ``exact``, else ``n_permutations`` random ones with
    ``p = (k + 1) / (n_permutations + 1)``. ``min_p`` is the smallest p-value this design and
    method can give (``1 / n_relabelings`` exact). ``between`` and ``within`` carry the means'
    intervals when computed from a per-context table (:func:`trial_level_test`).
    """

    group_a: tuple[str, ...]
    group_b: tuple[str, ...]
    mean_between: float
    mean_within: float
    statistic: float
    p_value: float
    min_p: float
    exact: bool
    n_relabelings: int
    n_permutations: int
    n_between: int
    n_within: int
    alternative: str = "two-sided"
    seed: int = 0
    unit: str = "trials"
    score: str | None = None
    between: PairsMean | None = None
    within: PairsMean | None = None

    @property
    def n_trials(self) -> int:
        return len(self.group_a) + len(self.group_b)

    def trials_per_group_needed(self, alpha: float = 0.05) -> int | None:
        """None when this design can reach ``alpha``; else the fewest trials per group that could."""
        return None if self.min_p <= alpha else trials_per_group_needed(alpha)


def _check_groups(group_a: Any, group_b: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    groups = []
    for name, g in (("group_a", group_a), ("group_b", group_b)):
        if isinstance(g, str) or not isinstance(g, Iterable):
            raise ConfigError(f"{name} must be a list of trial (policy) ids, got {g!r}")
        ids = tuple(str(x) for x in g)
        if len(ids) < 2:
            raise ConfigError(
                f"{name} has {len(ids)} trial(s) {list(ids)}: a test over trials needs at least two trials "
                "per group (one trial has no within-group pair to compare with)"
            )
        if len(set(ids)) != len(ids):
            raise ConfigError(f"{name} lists a trial twice: {list(ids)}")
        groups.append(ids)
    both = sorted(set(groups[0]) & set(groups[1]))
    if both:
        raise ConfigError(f"group_a and group_b share the trial(s) {both}; each trial belongs to one group")
    return groups[0], groups[1]


def _similarity_matrix(pair_means: Any, trials: Sequence[str]) -> np.ndarray:
    """N x N symmetric matrix (zero diagonal) of the pair means of ``trials``."""
    n = len(trials)
    mat = np.zeros((n, n))
    if isinstance(pair_means, pd.DataFrame):
        lookup: dict[tuple[str, str], float] = {}
        for a in pair_means.index:
            for b in pair_means.columns:
                lookup[(str(a), str(b))] = float(pair_means.loc[a, b])
    elif isinstance(pair_means, Mapping):
        lookup = {}
        for k, v in pair_means.items():
            if not (isinstance(k, tuple) and len(k) == 2):
                raise ConfigError(f"pair_means keys must be (trial_a, trial_b) tuples, got {k!r}")
            try:
                lookup[(str(k[0]), str(k[1]))] = float(v)
            except (TypeError, ValueError):
                raise ConfigError(f"pair_means[{k!r}] must be a number, got {v!r}") from None
    else:
        raise ConfigError(
            "pair_means must map (trial_a, trial_b) -> mean similarity, or be a square DataFrame "
            f"indexed by trial id (e.g. a matrix of compare(..., matrix=True)), got {type(pair_means).__name__}"
        )
    for i, j in itertools.combinations(range(n), 2):
        a, b = trials[i], trials[j]
        v = lookup.get((a, b), lookup.get((b, a)))
        if v is None or not math.isfinite(v):
            raise ConfigError(
                f"no similarity for the pair ({a!r}, {b!r}): a test over trials needs every pair of the "
                f"{n} trials, within and between the groups"
            )
        mat[i, j] = mat[j, i] = v
    return mat


def _split_statistics(mat: np.ndarray, signs: np.ndarray, n_between: int, n_within: int) -> np.ndarray:
    """mean(between) - mean(within) for each row of ``signs`` (+1 group A, -1 group B)."""
    total = float(np.triu(mat, 1).sum())
    q = ((signs @ mat) * signs).sum(axis=1) / 2.0  # sum over i<j of mat_ij * s_i * s_j
    within = (total + q) / 2.0
    between = total - within
    return between / n_between - within / n_within


def trial_permutation_test(
    pair_means: Mapping[tuple[str, str], float] | pd.DataFrame,
    group_a: Sequence[str],
    group_b: Sequence[str],
    *,
    n_permutations: int = 10000,
    seed: int = 0,
    alternative: str = "two-sided",
) -> TrialTestResult:
    """Permutation test over trials: do pairs across the groups differ from pairs within them?

    ``pair_means`` gives the similarity of every two trials (their score averaged over contexts):
    a mapping ``(a, b) -> value`` (either order) or a square DataFrame indexed by trial id, such as
    a matrix of ``behavsim.compare(..., matrix=True).matrices``. ``group_a`` and ``group_b`` (e.g. the TS and the
    IQ trials, at least two each) are relabeled: every split of the trials into groups of the same
    sizes gives ``mean(between-group pairs) - mean(within-group pairs)``. With a similarity score,
    a negative statistic means the groups' trials are less alike than trials of one group. If the
    distinct splits (:func:`distinct_relabelings`) are at most ``n_permutations`` all are
    enumerated and the p-value is exact (the observed split is one of them, so ``p >= 1 / D``);
    otherwise ``n_permutations`` random splits are drawn with ``np.random.default_rng(seed)`` and
    ``p = (k + 1) / (n_permutations + 1)``.
    """
    n_permutations = _check_int(n_permutations, "n_permutations", 1)
    seed = _check_seed(seed)
    if alternative not in ALTERNATIVES:
        raise ConfigError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    ga, gb = _check_groups(group_a, group_b)
    trials = list(ga) + list(gb)
    mat = _similarity_matrix(pair_means, trials)
    na, nb = len(ga), len(gb)
    n = na + nb
    n_between = na * nb
    n_within = math.comb(na, 2) + math.comb(nb, 2)
    observed_signs = np.array([1.0] * na + [-1.0] * nb)
    observed = float(_split_statistics(mat, observed_signs[None, :], n_between, n_within)[0])
    tol = 1e-12 * max(1.0, float(np.abs(mat).max()))
    d = distinct_relabelings(na, nb)
    exact = d <= n_permutations
    if exact:
        # the splits: every choice of group A's members; with equal sizes, those holding trial 0
        # (a split and its mirror give the same statistic)
        combos = [c for c in itertools.combinations(range(n), na) if na != nb or c[0] == 0]
        signs = -np.ones((len(combos), n))
        for r, c in enumerate(combos):
            signs[r, list(c)] = 1.0
        stats_ = _split_statistics(mat, signs, n_between, n_within)
        p = _count_extreme(stats_, observed, alternative, tol) / len(combos)
        used, min_p = len(combos), 1.0 / len(combos)
    else:
        rng = np.random.default_rng(seed)
        k = 0
        block = max(1, _CHUNK // n)
        for start in range(0, n_permutations, block):
            rows = min(block, n_permutations - start)
            order = np.argsort(rng.random((rows, n)), axis=1)
            signs = np.where(order < na, 1.0, -1.0)  # a random permutation's first na positions -> A
            k += _count_extreme(_split_statistics(mat, signs, n_between, n_within), observed, alternative, tol)
        p = (k + 1) / (n_permutations + 1)
        used, min_p = n_permutations, 1.0 / (n_permutations + 1)
    iu = np.triu_indices(n, 1)
    same = (observed_signs[:, None] == observed_signs[None, :])[iu]
    vals = mat[iu]
    return TrialTestResult(
        group_a=ga,
        group_b=gb,
        mean_between=float(vals[~same].mean()),
        mean_within=float(vals[same].mean()),
        statistic=observed,
        p_value=float(p),
        min_p=float(min_p),
        exact=exact,
        n_relabelings=d,
        n_permutations=used,
        n_between=n_between,
        n_within=n_within,
        alternative=alternative,
        seed=seed,
    )


def _pair_context_matrix(
    per: pd.DataFrame, score: str, pairs: Sequence[tuple[str, str]]
) -> tuple[np.ndarray, np.ndarray]:
    """(P x C) values of ``score`` per pair of trials (either order in the table) and context, the
    contexts being every context index of those pairs' rows (sorted); rows repeating one (pair,
    context) are averaged. Returns (values with NaN, context indices)."""
    if not {"a", "b"} <= set(per.columns):
        raise ConfigError(f"the per-context table needs the columns 'a' and 'b' (policy ids); got {list(per.columns)}")
    if "context_id" in per.columns:
        ids_per_ctx = per.groupby("context")["context_id"].nunique()
        if (ids_per_ctx > 1).any():
            raise ContextSetMismatch(
                "per_context_df mixes context sets: some context index has several context ids; "
                "compare every pair of trials on the same context set"
            )
    a = per["a"].astype(str).to_numpy()
    b = per["b"].astype(str).to_numpy()
    lo = np.where(a <= b, a, b)
    hi = np.where(a <= b, b, a)
    keys = pd.Series([f"{x}\x00{y}" for x, y in zip(lo, hi)], index=per.index)
    wanted = {}
    for i, (x, y) in enumerate(pairs):
        x, y = min(x, y), max(x, y)
        wanted[f"{x}\x00{y}"] = i
    mask = keys.isin(list(wanted)).to_numpy()
    rows = pd.DataFrame(
        {
            "p": keys[mask].map(wanted).to_numpy(),
            "context": per.loc[mask, "context"].to_numpy(),
            "v": per.loc[mask, score],
        }
    )
    missing = [pairs[i] for i in range(len(pairs)) if i not in set(rows["p"].tolist())]
    if missing:
        x, y = missing[0]
        raise ConfigError(
            f"the per-context table has no rows for the pair ({x!r}, {y!r}); a test over trials "
            "needs every pair of the trials, within and between the groups"
        )
    cell = rows.groupby(["p", "context"], sort=True)["v"].mean()
    contexts = np.array(sorted(set(rows["context"].tolist())))
    col = {c: j for j, c in enumerate(contexts.tolist())}
    mat = np.full((len(pairs), len(contexts)), np.nan)
    for (p, c), v in cell.items():
        mat[int(p), col[c]] = v
    return mat, contexts


def _two_level(
    values: np.ndarray,
    pair_trials: np.ndarray,
    strata: Sequence[np.ndarray],
    n_trials: int,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> tuple[float, float, int]:
    """Two-level percentile bootstrap of the mean over pairs of each pair's mean over contexts.

    Each resample draws the trials of every stratum (group) with replacement, then the contexts
    with replacement (one draw shared by all pairs); a pair (i, j) enters with weight
    count(i) * count(j). Resamples without any pair drawn are left out and counted.
    """
    n_pairs, n_ctx = values.shape
    defined = ~np.isnan(values)
    filled = np.where(defined, values, 0.0)
    rng = np.random.default_rng(seed)
    reps = np.empty(n_resamples)
    block = max(1, _CHUNK // max(1, n_ctx + n_trials))
    for start in range(0, n_resamples, block):
        rows = min(block, n_resamples - start)
        tcount = np.zeros((rows, n_trials))
        for members in strata:
            draw = members[rng.integers(0, len(members), size=(rows, len(members)))]
            for r in range(rows):
                np.add.at(tcount[r], draw[r], 1.0)
        idx = rng.integers(0, n_ctx, size=(rows, n_ctx)) + (np.arange(rows)[:, None] * n_ctx)
        ccount = np.bincount(idx.ravel(), minlength=rows * n_ctx).reshape(rows, n_ctx).astype(np.float64)
        num = ccount @ filled.T  # rows x pairs
        den = ccount @ defined.T.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            pm = num / den
        w = tcount[:, pair_trials[:, 0]] * tcount[:, pair_trials[:, 1]]
        w = np.where(np.isnan(pm), 0.0, w)
        wsum = w.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            reps[start : start + rows] = np.where(wsum > 0, (w * np.nan_to_num(pm)).sum(axis=1) / wsum, np.nan)
    ok = reps[~np.isnan(reps)]
    if ok.size == 0:
        return math.nan, math.nan, n_resamples
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(ok, [alpha, 1.0 - alpha])
    return float(lo), float(hi), int(n_resamples - ok.size)


def pairs_mean_ci(
    per_context_df: Comparison | pd.DataFrame,
    pairs: Iterable[tuple[str, str]],
    groups: Mapping[str, str] | None = None,
    score: str = "TMR",
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairsMean:
    """Mean over ``pairs`` of trials (``(a, b)`` policy ids) of each pair's mean ``score`` over
    contexts, with a two-level bootstrap interval (:class:`PairsMean`).

    ``groups`` maps each trial to its group (e.g. its reward): trials are resampled within their
    group, as the design drew them (default: all trials in one group). One pair gives the
    context-level interval, flagged ``conditional`` (on those two trials).
    """
    n_resamples = _check_int(n_resamples, "n_resamples", 1)
    confidence = _check_confidence(confidence)
    seed = _check_seed(seed)
    per = _as_per_context(per_context_df)
    name = _resolve_scores(per, [score], "score")[0]
    plist = [(str(x), str(y)) for x, y in pairs]
    if not plist:
        raise ConfigError("pairs is empty")
    for x, y in plist:
        if x == y:
            raise ConfigError(f"pairs: ({x!r}, {y!r}) pairs a trial with itself")
    if len({tuple(sorted(p)) for p in plist}) != len(plist):
        raise ConfigError(f"pairs lists a pair twice: {plist}")
    values, contexts = _pair_context_matrix(per, name, plist)
    with np.errstate(invalid="ignore"):
        pair_means = np.nanmean(np.where(np.isnan(values).all(axis=1)[:, None], 0.0, values), axis=1)
    defined_pairs = ~np.isnan(values).all(axis=1)
    if not defined_pairs.any():
        nan = math.nan
        return PairsMean(nan, nan, nan, len(plist), 0, len(contexts), len(plist) == 1, n_resamples, 0, confidence, seed)
    mean = float(pair_means[defined_pairs].mean())
    trials = sorted({t for p in plist for t in p})
    tindex = {t: i for i, t in enumerate(trials)}
    if len(plist) == 1:
        lo, hi = bootstrap_ci(values[0], n_resamples=n_resamples, confidence=confidence, seed=seed)
        return PairsMean(mean, lo, hi, 1, 2, len(contexts), True, n_resamples, 0, confidence, seed)
    group_of = {t: "" for t in trials} if groups is None else {t: str(groups.get(t, "")) for t in trials}
    if groups is not None:
        lacking = [t for t in trials if t not in groups]
        if lacking:
            raise ConfigError(f"groups has no group for the trial(s) {lacking}")
    strata = [
        np.array([tindex[t] for t in trials if group_of[t] == g], dtype=np.int64)
        for g in sorted(set(group_of.values()))
    ]
    pair_trials = np.array([[tindex[x], tindex[y]] for x, y in plist], dtype=np.int64)
    lo, hi, degenerate = _two_level(values, pair_trials, strata, len(trials), n_resamples, confidence, seed)
    return PairsMean(
        mean, lo, hi, len(plist), len(trials), len(contexts), False, n_resamples, degenerate, confidence, seed
    )


def trial_level_test(
    per_context_df: Comparison | pd.DataFrame,
    group_a: Sequence[str],
    group_b: Sequence[str],
    score: str = "TMR",
    *,
    n_permutations: int = 10000,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    alternative: str = "two-sided",
) -> TrialTestResult:
    """:func:`trial_permutation_test` from a per-context table, with the means' intervals.

    The table must hold every pair of the trials of ``group_a`` and ``group_b`` (policy ids in its
    ``a``/``b`` columns, either order, e.g. the concatenated per-context tables of the seed and
    reward comparisons) on one context set. Each pair's ``score`` is averaged over contexts (NaN
    ignored) and the test permutes the group labels of the trials. ``result.between`` and
    ``result.within`` are :func:`pairs_mean_ci` of the between- and within-group pairs, trials
    resampled within their group.
    """
    per = _as_per_context(per_context_df)
    name = _resolve_scores(per, [score], "score")[0]
    ga, gb = _check_groups(group_a, group_b)
    trials = list(ga) + list(gb)
    all_pairs = list(itertools.combinations(trials, 2))
    values, _ = _pair_context_matrix(per, name, all_pairs)
    defined = ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(defined, values, 0.0).sum(axis=1) / defined.sum(axis=1)
    result = trial_permutation_test(
        {p: float(m) for p, m in zip(all_pairs, means)},
        ga,
        gb,
        n_permutations=n_permutations,
        seed=seed,
        alternative=alternative,
    )
    group_of = {t: "a" for t in ga} | {t: "b" for t in gb}
    between = [(x, y) for x, y in all_pairs if group_of[x] != group_of[y]]
    within = [(x, y) for x, y in all_pairs if group_of[x] == group_of[y]]

    def interval(pairs: list[tuple[str, str]]) -> PairsMean:
        return pairs_mean_ci(per, pairs, group_of, name, n_resamples=n_resamples, confidence=confidence, seed=seed)

    return dataclasses.replace(
        result,
        score=name,
        between=interval(between),
        within=interval(within),
    )


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
    per = _as_per_context(per_context_df)
    names = _resolve_scores(per, scores)
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
    per = _as_per_context(per_context_df)
    names = _resolve_scores(per, scores)
    t = _turn_lookup(turns, per["context"].to_numpy())
    has = ~np.isnan(t)
    rows = per.loc[has, [c for c in ("pair", "a", "b") if c in per.columns] + names].copy()
    rows["turn"] = t[has].astype(np.int64)
    keys = [c for c in ("pair", "a", "b") if c in per.columns] + ["turn"]
    out = _group_means(rows, keys, names)
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
        top = _check_int(top, "top", 1)
    per = _as_per_context(comparison, "comparison")
    names = [s for s in comparison.score_names if s in per.columns] or _score_columns(per)
    by = _resolve_scores(per, [by], "by")[0]
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
