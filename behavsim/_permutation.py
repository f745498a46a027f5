"""Paired permutation tests over contexts: :func:`paired_permutation_test` and its use on a
per-context table, :func:`reward_vs_seed_test` (does switching the reward change behaviour more
than switching the seed?). Public from :mod:`behavsim.analysis`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._bootstrap import CHUNK, check_int, check_seed
from ._comparison import Comparison
from ._errors import ConfigError, ContextSetMismatch
from ._per_context import as_per_context, resolve_scores

__all__ = [
    "ALTERNATIVES",
    "PermutationResult",
    "paired_permutation_test",
    "reward_vs_seed_test",
    "sign_flip_min_p",
    "count_extreme",
]

#: The alternative hypotheses of the permutation tests.
ALTERNATIVES = ("two-sided", "greater", "less")


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


def count_extreme(stats: np.ndarray, observed: float, alternative: str, tol: float) -> int:
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
    n_permutations = check_int(n_permutations, "n_permutations", 1)
    seed = check_seed(seed)
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
        block = max(1, CHUNK // n)
        for start in range(0, total, block):
            codes = np.arange(start, min(total, start + block), dtype=np.int64)
            bits = (codes[:, None] >> np.arange(n, dtype=np.int64)) & 1
            stats = (1 - 2 * bits).astype(np.float64) @ d / n
            k += count_extreme(stats, observed, alternative, tol)
        p = k / total
        used = total
    else:
        rng = np.random.default_rng(seed)
        k = 0
        block = max(1, CHUNK // n)
        for start in range(0, n_permutations, block):
            rows = min(block, n_permutations - start)
            signs = 1.0 - 2.0 * rng.integers(0, 2, size=(rows, n), dtype=np.int8)
            stats = signs @ d / n
            k += count_extreme(stats, observed, alternative, tol)
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
    per = as_per_context(per_context_df)
    name = resolve_scores(per, [score], "score")[0]
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


def sign_flip_min_p(n: int, n_permutations: int, alternative: str = "two-sided") -> float:
    """The smallest p-value :func:`paired_permutation_test` can give for ``n`` contexts: exact
    enumeration (``2**n <= n_permutations``) reaches ``2 / 2**n`` two-sided (a sign vector and its
    mirror are equally extreme) or ``1 / 2**n`` one-sided; sampling reaches ``1 / (n_permutations + 1)``."""
    n = check_int(n, "n", 1)
    n_permutations = check_int(n_permutations, "n_permutations", 1)
    if n < 63 and 2**n <= n_permutations:
        return (2.0 if alternative == "two-sided" else 1.0) / 2**n
    return 1.0 / (n_permutations + 1)
