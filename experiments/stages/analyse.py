"""Stage ``analyse``: from every per-context value of the comparisons — the scores' agreement
(correlation and MSE over all compared contexts and the non-matching ones, Figure 6) and the
reward-vs-seed tests: first over trials (the training runs are the units), then over contexts."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from behavsim import analysis
from behavsim.io import file_digest
from experiments.stages.compare import ANALYSIS_VERSION
from experiments.stages.respond import response_tables
from experiments.stages.train import trial_specs
from experiments.study import Stage, Study, StudyConfig, stage_key

__all__ = ["ANALYSE", "CLAIM", "claim_agreement"]

#: The score pair of the paper's Sec. 5 claim (CER and USE cosine agree).
CLAIM = ("CER", "USE_cos")

_PER_CONTEXT = "results/per_context/all.csv"
_ALPHA = 0.05


def claim_agreement(subsets: Mapping[str, pd.DataFrame], scores: Sequence[str], key: str) -> pd.DataFrame:
    """The :data:`CLAIM` pair's correlation and MSE over each named subset of per-context rows (a
    row each; ``key``: the column naming the subset), and over its rows whose acts differ (TMR 0)
    when TMR is among ``scores``."""
    x, y = CLAIM
    modes = (False, True) if "TMR" in scores else (False,)
    rows = []
    for name, df in subsets.items():
        for only in modes:
            c, mse = analysis.score_agreement(df, [x, y, *(["TMR"] if only else [])], only_mismatch=only)
            rows.append(
                {
                    key: name,
                    "only_mismatch": only,
                    "score_a": x,
                    "score_b": y,
                    "pearson": _finite(c.loc[x, y]),
                    "mse": _finite(mse.loc[x, y]),
                    "n": int(c.attrs["n_rows"]),
                    "n_dropped_nan": int(c.attrs["n_dropped_nan"]),
                }
            )
    return pd.DataFrame(rows)


def _finite(v: Any) -> float:
    v = float(v)
    return v if math.isfinite(v) else math.nan


def _key(study: Study) -> str:
    digest = file_digest(study.run.path(_PER_CONTEXT))
    return stage_key(study.cfg.to_dict(), digest, {"analysis": ANALYSIS_VERSION})


def _analyse(study: Study) -> None:
    cfg, run = study.cfg, study.run
    allper = run.read_csv(_PER_CONTEXT)
    for suffix, only in (("", False), ("_mismatch", True)):  # Figure 6
        corr, mse = analysis.score_agreement(allper, list(cfg.scores), only_mismatch=only)
        run.write_csv(f"results/score_corr{suffix}.csv", corr.rename_axis("score").reset_index())
        run.write_csv(f"results/score_mse{suffix}.csv", mse.rename_axis("score").reset_index())
    tests = _reward_vs_seed_tests(study, allper)
    run.write_text("results/tests.json", json.dumps(tests, indent=2, sort_keys=True) + "\n")


def _reward_vs_seed_tests(study: Study, allper: pd.DataFrame) -> list[dict[str, Any]]:
    """Does switching the reward change the behaviour more than switching the seed? Per score, first
    the test over trials (the training runs are the units: group labels permuted over the trials
    of the last checkpoint, every pair averaged over C_col^all), then the paired test over contexts
    of the per-context means of the TS-vs-IQ pairs against the seed pairs (conditional on these
    trials); none without two rewards and two seeds."""
    cfg = study.cfg
    if not (len(cfg.rewards) == 2 and len(cfg.seeds) >= 2):
        return []
    scores = [s for s in ("TMR", "DMR", "CMR") if s in cfg.scores]
    trials, tables = trial_specs(study), response_tables(study)
    rew = allper[(allper["kind"] == "rewards") & (allper["context_set"] == "ccol-all")]
    groups = {r: [tables["ccol-all"][trials[(r, s)][-1]].id for s in cfg.seeds] for r in cfg.rewards}
    last_ids = {i for ids in groups.values() for i in ids}
    seeds_df = allper[
        (allper["kind"] == "seeds")
        & (allper["context_set"] == "ccol-all")
        & allper["a"].isin(last_ids)
        & allper["b"].isin(last_ids)
    ]
    trial_level = [_trial_level_entry(cfg, pd.concat([seeds_df, rew]), groups, score) for score in scores]
    return trial_level + [_context_level_entry(cfg, rew, seeds_df, score) for score in scores]


def _trial_level_entry(cfg: StudyConfig, per: pd.DataFrame, groups: dict[str, list[str]], score: str) -> dict:
    """The test over trials of one score (``"unit": "trials"``), with the two-level intervals."""
    ra, rb = cfg.rewards
    r = analysis.trial_level_test(
        per,
        groups[ra],
        groups[rb],
        score,
        n_permutations=cfg.permutations,
        n_resamples=cfg.bootstrap,
        seed=cfg.analysis_seed,
    )
    assert r.between is not None and r.within is not None
    method = (
        f"exact, all {r.n_relabelings} distinct splits"
        if r.exact
        else f"{r.n_permutations} random splits of the {r.n_relabelings} distinct ones"
    )
    return {
        "name": "reward vs seed",
        "unit": "trials",
        "score": score,
        "context_set": "ccol-all",
        "mean_x": r.mean_between,
        "mean_y": r.mean_within,
        "mean_x_ci": [r.between.lo, r.between.hi],
        "mean_y_ci": [r.within.lo, r.within.hi],
        "diff": r.statistic,
        "p_value": r.p_value,
        "min_p": r.min_p,
        "exact": r.exact,
        "n": r.n_trials,
        "n_pairs_x": r.n_between,
        "n_pairs_y": r.n_within,
        "n_relabelings": r.n_relabelings,
        "n_contexts": r.between.n_contexts,
        "groups": {ra: list(r.group_a), rb: list(r.group_b)},
        "alpha": _ALPHA,
        "trials_per_group_needed": r.trials_per_group_needed(_ALPHA),
        "description": f"mean {score} of the TS-vs-IQ pairs of trials (x) against the seed-vs-seed pairs of "
        f"one reward (y), each pair averaged over the contexts, last checkpoint; permutation test of the "
        f"reward labels over the {r.n_trials} trials ({method}); intervals: two-level bootstrap "
        f"(trials within their reward, then contexts), {cfg.bootstrap} resamples",
    }


def _context_level_entry(cfg: StudyConfig, rew: pd.DataFrame, seeds_df: pd.DataFrame, score: str) -> dict:
    """The paired test over contexts of one score (``"unit": "contexts"``): how surely these very
    trials differ, not whether the rewards do."""
    x = rew.groupby("context")[score].mean()
    y = seeds_df.groupby("context")[score].mean()
    common = x.index.intersection(y.index)
    r = analysis.paired_permutation_test(
        x.loc[common].to_numpy(), y.loc[common].to_numpy(), n_permutations=cfg.permutations, seed=cfg.analysis_seed
    )
    return {
        "name": "reward vs seed",
        "unit": "contexts",
        "score": score,
        "context_set": "ccol-all",
        "mean_x": r.mean_x,
        "mean_y": r.mean_y,
        "diff": r.diff,
        "p_value": r.p_value,
        "min_p": analysis.sign_flip_min_p(r.n, cfg.permutations, r.alternative),
        "n": r.n,
        "description": f"mean {score} per context of the TS-vs-IQ pairs (x) against the "
        f"seed-vs-seed pairs of the same reward (y), last checkpoint; paired "
        f"sign-flip permutation test over contexts, {cfg.permutations} permutations; the contexts are "
        f"the units, so it is conditional on these trials and says nothing about other seeds",
    }


ANALYSE = Stage(
    name="analyse",
    order=500,
    title="analysis: score agreement, reward-vs-seed tests (over trials and over contexts)",
    run=_analyse,
    inputs={_PER_CONTEXT: "every per-context value of the comparisons", "responses/": "the trials' policy ids"},
    outputs={
        "results/score_corr.csv": "Pearson correlation between the scores, all compared contexts (Figure 6)",
        "results/score_mse.csv": "mean squared error between the scores, all compared contexts",
        "results/score_corr_mismatch.csv": "the same on the contexts whose acts differ",
        "results/score_mse_mismatch.csv": "the same on the contexts whose acts differ",
        "results/tests.json": "the reward-vs-seed permutation tests",
    },
    key=_key,
)
