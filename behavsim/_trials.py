"""Tests and intervals over trials (training runs), the units a claim about seeds speaks of:
:func:`trial_permutation_test` (relabel the trials of two groups), :func:`trial_level_test` (the
same from a per-context table, with the means' intervals), :func:`pairs_mean_ci` (a two-level
bootstrap: trials within their groups, then contexts) and the design's limits
(:func:`distinct_relabelings`, :func:`trials_per_group_needed`). Public from
:mod:`behavsim.analysis`.
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

from ._bootstrap import CHUNK, bootstrap_ci, check_confidence, check_int, check_seed
from ._comparison import Comparison
from ._errors import ConfigError, ContextSetMismatch
from ._per_context import as_per_context, resolve_scores
from ._permutation import ALTERNATIVES, count_extreme

__all__ = [
    "PairsMean",
    "TrialTestResult",
    "distinct_relabelings",
    "trials_per_group_needed",
    "trial_permutation_test",
    "pairs_mean_ci",
    "trial_level_test",
]


def distinct_relabelings(n_a: int, n_b: int) -> int:
    """How many distinct splits of ``n_a + n_b`` trials into groups of ``n_a`` and ``n_b`` exist.

    The trial-level statistic depends only on the split, not on which group is called A, so with
    equal sizes a split and its mirror count once: 2 + 2 trials give 3, 3 + 3 give 10, 2 + 3 give 10.
    """
    n_a = check_int(n_a, "n_a", 1)
    n_b = check_int(n_b, "n_b", 1)
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
    n_permutations = check_int(n_permutations, "n_permutations", 1)
    seed = check_seed(seed)
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
        p = count_extreme(stats_, observed, alternative, tol) / len(combos)
        used, min_p = len(combos), 1.0 / len(combos)
    else:
        rng = np.random.default_rng(seed)
        k = 0
        block = max(1, CHUNK // n)
        for start in range(0, n_permutations, block):
            rows = min(block, n_permutations - start)
            order = np.argsort(rng.random((rows, n)), axis=1)
            signs = np.where(order < na, 1.0, -1.0)  # a random permutation's first na positions -> A
            k += count_extreme(_split_statistics(mat, signs, n_between, n_within), observed, alternative, tol)
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
    block = max(1, CHUNK // max(1, n_ctx + n_trials))
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
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    confidence = check_confidence(confidence)
    seed = check_seed(seed)
    per = as_per_context(per_context_df)
    name = resolve_scores(per, [score], "score")[0]
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
    per = as_per_context(per_context_df)
    name = resolve_scores(per, [score], "score")[0]
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
