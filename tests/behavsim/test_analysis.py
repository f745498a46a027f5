import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from behavsim import ConfigError, ContextSet, ContextSetMismatch, ResponseTable, UnknownScore, compare
from behavsim.analysis import (
    bootstrap_ci,
    disagreements,
    distinct_relabelings,
    means_with_ci,
    pair_table,
    paired_permutation_test,
    pairs_mean_ci,
    per_turn,
    reward_vs_seed_test,
    score_agreement,
    sign_flip_min_p,
    trial_level_test,
    trial_permutation_test,
    trials_per_group_needed,
)

SEM = ["TMR", "DMR", "CER", "CMR"]


# ------------------------------------------------------------------ bootstrap
def test_bootstrap_ci_contains_mean_and_narrows_with_n():
    rng = np.random.default_rng(3)
    widths = []
    for n in (20, 200, 2000):
        v = rng.random(n)
        lo, hi = bootstrap_ci(v, seed=1)
        assert lo <= v.mean() <= hi
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2]


def test_bootstrap_ci_nan_seed_and_edge_cases():
    v = [0.0, 1.0, np.nan, 1.0, 0.0, 1.0]
    assert bootstrap_ci(v, seed=5) == bootstrap_ci([0.0, 1.0, 1.0, 0.0, 1.0], seed=5)
    assert bootstrap_ci(v, seed=5) == bootstrap_ci(v, seed=5)
    assert bootstrap_ci([0.7, 0.7, 0.7]) == (pytest.approx(0.7), pytest.approx(0.7))
    assert all(np.isnan(bootstrap_ci([np.nan, np.nan])))
    with pytest.raises(ConfigError, match="confidence"):
        bootstrap_ci([1.0], confidence=95)
    with pytest.raises(ConfigError, match="n_resamples"):
        bootstrap_ci([1.0], n_resamples=0)
    with pytest.raises(ConfigError, match="seed"):
        bootstrap_ci([1.0], seed=-1)


def _per_context(n_pairs=3, n_ctx=40, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_pairs):
        tmr = (rng.random(n_ctx) < 0.5 + 0.1 * p).astype(float)
        dmr = np.maximum(tmr, (rng.random(n_ctx) < 0.7).astype(float))
        cer = np.where(tmr == 1, 1.0, rng.random(n_ctx))
        cmr = np.where(tmr == 1, 1.0, np.clip(cer + rng.normal(0, 0.1, n_ctx), 0, 1))
        for c in range(n_ctx):
            rows.append(
                {
                    "pair": p,
                    "a": f"p{p}",
                    "b": f"q{p}",
                    "context": c,
                    "context_id": f"c{c}",
                    "TMR": tmr[c],
                    "DMR": dmr[c],
                    "CER": cer[c],
                    "CMR": cmr[c],
                }
            )
    df = pd.DataFrame(rows)
    df.loc[5, "CER"] = np.nan
    return df


def test_means_with_ci_matches_bootstrap_ci_per_row():
    per = _per_context()
    out = means_with_ci(per, n_resamples=500, seed=7)
    assert list(out["pair"]) == [0, 1, 2]
    for _, row in out.iterrows():
        for s in SEM:
            v = per.loc[per.pair == row["pair"], s].to_numpy()
            assert row[s] == pytest.approx(np.nanmean(v))
            assert (row[f"{s}_lo"], row[f"{s}_hi"]) == pytest.approx(bootstrap_ci(v, n_resamples=500, seed=7))
            assert row[f"{s}_lo"] <= row[s] <= row[f"{s}_hi"]
    assert out.loc[0, "n_missing_CER"] == 1 and out.loc[0, "n"] == 40
    assert out.attrs["bootstrap"]["seed"] == 7


def test_means_with_ci_on_comparison_and_unknown_score():
    comp = _comparison()
    out = means_with_ci(comp, ["TMR", "cmr"], n_resamples=200)
    assert {"TMR_lo", "TMR_hi", "CMR_lo", "CMR_hi"} <= set(out.columns)
    pd.testing.assert_series_equal(out["TMR"], comp.means["TMR"])
    with pytest.raises(UnknownScore, match="Did you mean 'TMR'"):
        means_with_ci(comp, ["TMX"])
    with pytest.raises(ConfigError, match="per_context"):
        means_with_ci([1, 2, 3])


# ------------------------------------------------------------------ permutation test
def test_permutation_identical_gives_p_one():
    x = np.random.default_rng(0).random(30)
    r = paired_permutation_test(x, x.copy(), n_permutations=999)
    assert r.p_value == 1.0 and r.diff == 0.0 and r.n == 30 and not r.exact


def test_permutation_constant_shift_gives_minimal_p():
    x = np.random.default_rng(0).random(40)
    r = paired_permutation_test(x + 0.5, x, n_permutations=999, seed=2)
    assert r.p_value == pytest.approx(1 / 1000)
    assert r.diff == pytest.approx(0.5) and r.mean_x == pytest.approx(x.mean() + 0.5)
    assert paired_permutation_test(x + 0.5, x, n_permutations=999, alternative="greater").p_value == pytest.approx(
        1 / 1000
    )
    assert paired_permutation_test(x + 0.5, x, n_permutations=999, alternative="less").p_value == 1.0


def test_permutation_exact_enumeration_by_hand():
    # d = (1, 1, 1): of the 8 sign vectors, mean |d| >= 1 only for +++ and ---
    r = paired_permutation_test([2, 2, 2], [1, 1, 1], n_permutations=10_000)
    assert r.exact and r.n_permutations == 8 and r.p_value == pytest.approx(2 / 8)
    r = paired_permutation_test([2, 2, 2], [1, 1, 1], alternative="greater")
    assert r.p_value == pytest.approx(1 / 8)
    # d = (3, -1): statistics of (+,+), (+,-), (-,+), (-,-) are 1, 2, -2, -1 -> |.| >= 1 all four
    assert paired_permutation_test([3, 0], [0, 1]).p_value == 1.0


def test_permutation_drops_nan_pairs_and_is_seeded():
    rng = np.random.default_rng(1)
    x, y = rng.random(50), rng.random(50)
    x[3] = np.nan
    y[7] = np.nan
    r1 = paired_permutation_test(x, y, n_permutations=2000, seed=4)
    r2 = paired_permutation_test(x, y, n_permutations=2000, seed=4)
    assert r1 == r2 and r1.n == 48 and 0 < r1.p_value <= 1
    with pytest.raises(ConfigError, match="paired"):
        paired_permutation_test([1, 2], [1, 2, 3])
    with pytest.raises(ConfigError, match="alternative"):
        paired_permutation_test([1, 2], [1, 2], alternative="bigger")
    with pytest.raises(ConfigError, match="no context"):
        paired_permutation_test([np.nan], [1.0])


def test_reward_vs_seed_averages_over_pairs_first():
    per = _per_context(n_pairs=4, n_ctx=30)
    r = reward_vs_seed_test(per, [0, 1], [("q2", "p2"), 3], "TMR", n_permutations=500)
    x = per[per.pair.isin([0, 1])].groupby("context")["TMR"].mean().to_numpy()
    y = per[per.pair.isin([2, 3])].groupby("context")["TMR"].mean().to_numpy()
    ref = paired_permutation_test(x, y, n_permutations=500)
    assert r == ref
    with pytest.raises(ConfigError, match="reward_pairs"):
        reward_vs_seed_test(per, [9], [0])
    bad = per.copy()
    bad.loc[bad.pair == 3, "context_id"] = "other"
    with pytest.raises(ContextSetMismatch):
        reward_vs_seed_test(bad, [0], [3])


# ------------------------------------------------------------------ trial level
_HAND = {
    ("a1", "a2"): 0.9,
    ("b1", "b2"): 0.8,
    ("a1", "b1"): 0.5,
    ("a1", "b2"): 0.6,
    ("a2", "b1"): 0.4,
    ("b2", "a2"): 0.55,
}


def test_trial_test_by_hand_two_plus_two():
    # the three splits: {a1 a2 | b1 b2}: between (.5+.6+.4+.55)/4 = .5125, within (.9+.8)/2 = .85 -> -.3375
    # {a1 b1 | a2 b2}: between (.9+.6+.4+.8)/4 = .675, within (.5+.55)/2 = .525 -> .15
    # {a1 b2 | a2 b1}: between (.9+.5+.55+.8)/4 = .6875, within (.6+.4)/2 = .5 -> .1875
    r = trial_permutation_test(_HAND, ["a1", "a2"], ["b1", "b2"])
    assert (r.mean_between, r.mean_within, r.statistic) == pytest.approx((0.5125, 0.85, -0.3375))
    assert r.exact and r.n_relabelings == 3 and r.n_permutations == 3
    assert r.p_value == pytest.approx(1 / 3) and r.min_p == pytest.approx(1 / 3)
    assert (r.n_between, r.n_within, r.n_trials, r.unit) == (4, 2, 4, "trials")
    assert trial_permutation_test(_HAND, ["a1", "a2"], ["b1", "b2"], alternative="less").p_value == pytest.approx(1 / 3)
    assert trial_permutation_test(_HAND, ["a1", "a2"], ["b1", "b2"], alternative="greater").p_value == 1.0
    # the split {a1 b1 | a2 b2} observed: |.15| is reached by .15, .1875 and -.3375 -> 3/3; greater: 2/3
    assert trial_permutation_test(_HAND, ["a1", "b1"], ["a2", "b2"]).p_value == 1.0
    assert trial_permutation_test(_HAND, ["a1", "b1"], ["a2", "b2"], alternative="greater").p_value == pytest.approx(
        2 / 3
    )
    assert r.trials_per_group_needed(0.05) == 4 and r.trials_per_group_needed(0.5) is None


def _brute_force_p(sim, ga, gb, alternative):
    """Every ordering of the trials, the first len(ga) taken as group A (each split equally often)."""
    trials = list(ga) + list(gb)

    def stat(a_set):
        between, within = [], []
        for x, y in itertools.combinations(trials, 2):
            v = sim[(x, y)] if (x, y) in sim else sim[(y, x)]
            (within if (x in a_set) == (y in a_set) else between).append(v)
        return sum(between) / len(between) - sum(within) / len(within)

    obs = stat(set(ga))
    hits = total = 0
    for perm in itertools.permutations(trials):
        s = stat(set(perm[: len(ga)]))
        total += 1
        if alternative == "two-sided":
            hits += abs(s) >= abs(obs) - 1e-12
        elif alternative == "greater":
            hits += s >= obs - 1e-12
        else:
            hits += s <= obs + 1e-12
    return hits / total


@pytest.mark.parametrize("na,nb", [(2, 2), (2, 3), (3, 3), (3, 4)])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_trial_test_exact_equals_brute_force(na, nb, alternative):
    rng = np.random.default_rng(10 * na + nb)
    ga, gb = [f"a{i}" for i in range(na)], [f"b{i}" for i in range(nb)]
    sim = {p: float(rng.choice([0.2, 0.4, 0.5, 0.7, 0.9])) for p in itertools.combinations(ga + gb, 2)}
    r = trial_permutation_test(sim, ga, gb, alternative=alternative)
    assert r.exact and r.n_relabelings == distinct_relabelings(na, nb)
    assert r.p_value == pytest.approx(_brute_force_p(sim, ga, gb, alternative), abs=1e-12)
    assert r.min_p == pytest.approx(1 / r.n_relabelings) and r.p_value >= r.min_p - 1e-12


def test_trial_test_square_matrix_input_and_sampling():
    ga, gb = [f"a{i}" for i in range(5)], [f"b{i}" for i in range(5)]
    rng = np.random.default_rng(0)
    ids = ga + gb
    m = rng.random((10, 10))
    m = pd.DataFrame(
        (m + m.T) / 2 + np.where(np.add.outer(np.arange(10) < 5, np.arange(10) < 5) != 1, 0.3, 0),
        index=ids,
        columns=ids,
    )
    exact = trial_permutation_test(m, ga, gb)
    assert exact.exact and exact.n_relabelings == 126 and exact.min_p == pytest.approx(1 / 126)
    sampled = trial_permutation_test(m, ga, gb, n_permutations=100, seed=3)
    assert not sampled.exact and sampled.n_permutations == 100 and sampled.min_p == pytest.approx(1 / 101)
    assert sampled == trial_permutation_test(m, ga, gb, n_permutations=100, seed=3)
    k = round(sampled.p_value * 101) - 1
    assert sampled.p_value == pytest.approx((k + 1) / 101)
    assert sampled.statistic == exact.statistic
    # many random splits come close to the exact p-value
    assert abs(trial_permutation_test(m, ga, gb, n_permutations=20000, seed=1).p_value - exact.p_value) < 0.02


def test_trial_test_errors():
    with pytest.raises(ConfigError, match="group_a has 1 trial"):
        trial_permutation_test(_HAND, ["a1"], ["b1", "b2"])
    with pytest.raises(ConfigError, match="share the trial"):
        trial_permutation_test(_HAND, ["a1", "a2"], ["a2", "b2"])
    with pytest.raises(ConfigError, match=r"no similarity for the pair \('a1', 'b1'\)"):
        trial_permutation_test({k: v for k, v in _HAND.items() if k != ("a1", "b1")}, ["a1", "a2"], ["b1", "b2"])
    with pytest.raises(ConfigError, match="pair_means must map"):
        trial_permutation_test([1, 2], ["a1", "a2"], ["b1", "b2"])


def test_design_helpers():
    assert [distinct_relabelings(2, 2), distinct_relabelings(3, 3), distinct_relabelings(2, 3)] == [3, 10, 10]
    assert distinct_relabelings(4, 4) == 35 and trials_per_group_needed(0.05) == 4
    assert trials_per_group_needed(0.01) == 5  # 1/126
    assert sign_flip_min_p(3, 10_000) == pytest.approx(2 / 8)
    assert sign_flip_min_p(3, 10_000, "less") == pytest.approx(1 / 8)
    assert sign_flip_min_p(300, 999) == pytest.approx(1 / 1000)


def _trial_per_context(n_ctx=12, seed=0):
    """Four trials (two per group); pair (x, y) has per-context TMR drawn around a pair level."""
    rng = np.random.default_rng(seed)
    level = {
        ("a1", "a2"): 0.9,
        ("b1", "b2"): 0.8,
        ("a1", "b1"): 0.5,
        ("a1", "b2"): 0.6,
        ("a2", "b1"): 0.4,
        ("a2", "b2"): 0.55,
    }
    rows = []
    for p, ((x, y), lv) in enumerate(level.items()):
        v = (rng.random(n_ctx) < lv).astype(float)
        for c in range(n_ctx):
            rows.append(
                {
                    "pair": p,
                    "a": y if p % 2 else x,
                    "b": x if p % 2 else y,
                    "context": c,
                    "context_id": f"c{c}",
                    "TMR": v[c],
                }
            )
    return pd.DataFrame(rows)


def test_trial_level_test_from_per_context_rows():
    per = _trial_per_context()
    r = trial_level_test(per, ["a1", "a2"], ["b1", "b2"], "tmr", n_resamples=300, seed=2)
    means = {}
    for (a, b), g in per.groupby(["a", "b"]):
        means[(a, b)] = g["TMR"].mean()
    ref = trial_permutation_test(means, ["a1", "a2"], ["b1", "b2"])
    assert (r.statistic, r.p_value, r.min_p) == pytest.approx((ref.statistic, ref.p_value, ref.min_p))
    assert r.score == "TMR"
    assert r.between.mean == pytest.approx(r.mean_between) and r.within.mean == pytest.approx(r.mean_within)
    assert r.between.n_pairs == 4 and r.within.n_pairs == 2 and not r.between.conditional
    assert r.between.lo <= r.between.mean <= r.between.hi and r.within.lo <= r.within.mean <= r.within.hi
    assert r == trial_level_test(per, ["a1", "a2"], ["b1", "b2"], "TMR", n_resamples=300, seed=2)
    with pytest.raises(ConfigError, match=r"no rows for the pair \('a1', 'c9'\)"):
        trial_level_test(per, ["a1", "a2"], ["b1", "c9"])
    with pytest.raises(ConfigError, match="group_b has 1 trial"):
        trial_level_test(per, ["a1", "a2"], ["b1"])


def test_pairs_mean_ci_one_pair_is_conditional_on_its_trials():
    per = _trial_per_context()
    one = pairs_mean_ci(per, [("a2", "a1")], score="TMR", n_resamples=400, seed=1)
    v = per[(per.a.isin(["a1", "a2"])) & (per.b.isin(["a1", "a2"]))]["TMR"].to_numpy()
    assert one.conditional and one.n_pairs == 1 and one.mean == pytest.approx(v.mean())
    assert one.ci == pytest.approx(bootstrap_ci(v, n_resamples=400, seed=1))


def test_two_level_bootstrap_by_hand():
    # every context of a pair has the same value: only the trial level varies. Pairs within group
    # "g" of three trials t0, t1, t2 with similarities 0.2 (t0-t1), 0.4 (t0-t2), 0.9 (t1-t2).
    rows = []
    for p, ((x, y), v) in enumerate({("t0", "t1"): 0.2, ("t0", "t2"): 0.4, ("t1", "t2"): 0.9}.items()):
        rows += [{"pair": p, "a": x, "b": y, "context": c, "TMR": v} for c in range(5)]
    per = pd.DataFrame(rows)
    r = pairs_mean_ci(per, [("t0", "t1"), ("t0", "t2"), ("t1", "t2")], score="TMR", n_resamples=2000, seed=0)
    assert r.mean == pytest.approx(0.5) and not r.conditional and r.n_trials == 3
    # a resample draws t0, t1, t2 with counts c; its mean is sum c_i c_j s_ij / sum c_i c_j: the
    # extremes are one pair alone (0.2 or 0.9), so the interval lies in [0.2, 0.9] and is wide
    assert 0.2 - 1e-12 <= r.lo < 0.45 and 0.55 < r.hi <= 0.9 + 1e-12
    # draws of one trial only (3 of 27 draws) give no pair and are left out
    assert 0.05 < r.n_degenerate / 2000 < 0.18
    # and with one context the contexts cannot add spread: a constant table gives a zero-width interval
    flat = per.assign(TMR=0.7)
    assert pairs_mean_ci(flat, [("t0", "t1"), ("t0", "t2"), ("t1", "t2")], score="TMR").ci == pytest.approx((0.7, 0.7))


# ------------------------------------------------------------------ score agreement
def test_score_agreement_against_numpy_and_scipy():
    per = _per_context()
    corr, mse = score_agreement(per)
    x = per[SEM].dropna().to_numpy()
    assert corr.attrs["n_rows"] == len(x) == len(per) - 1 and corr.attrs["n_dropped_nan"] == 1
    np.testing.assert_allclose(corr.to_numpy(), np.corrcoef(x.T), atol=1e-12)
    assert corr.loc["CER", "CMR"] == pytest.approx(stats.pearsonr(x[:, 2], x[:, 3])[0])
    for i, si in enumerate(SEM):
        for j, sj in enumerate(SEM):
            assert mse.loc[si, sj] == pytest.approx(np.mean((x[:, i] - x[:, j]) ** 2))
    assert list(corr.index) == SEM and list(mse.columns) == SEM


def test_score_agreement_only_mismatch_and_constant_columns():
    per = _per_context()
    corr, mse = score_agreement(per, ["DMR", "CER", "CMR"], only_mismatch=True)
    sub = per[(per.TMR == 0)][["DMR", "CER", "CMR"]].dropna().to_numpy()
    assert corr.attrs["n_rows"] == len(sub) and corr.attrs["only_mismatch"]
    assert corr.loc["CER", "CMR"] == pytest.approx(stats.pearsonr(sub[:, 1], sub[:, 2])[0])
    assert mse.loc["DMR", "CMR"] == pytest.approx(np.mean((sub[:, 0] - sub[:, 2]) ** 2))
    # on mismatches TMR is constant 0: NaN correlation, no crash
    corr, mse = score_agreement(per, only_mismatch=True)
    assert np.isnan(corr.loc["TMR", "CER"]) and np.isnan(corr.loc["TMR", "TMR"])
    assert mse.loc["TMR", "TMR"] == 0.0
    with pytest.raises(ConfigError, match="two scores"):
        score_agreement(per, ["TMR"])


# ------------------------------------------------------------------ per turn
def test_per_turn_by_hand():
    per = pd.DataFrame(
        {
            "pair": [0] * 4 + [1] * 4,
            "a": ["x"] * 4 + ["y"] * 4,
            "b": "z",
            "context": [0, 1, 2, 3] * 2,
            "context_id": ["c0", "c1", "c2", "c3"] * 2,
            "TMR": [1, 0, 1, 1, 0, 0, 1, np.nan],
            "DMR": [1, 1, 0, 1, 1, 0, 1, 1],
        }
    )
    per[["TMR", "DMR"]] = per[["TMR", "DMR"]].astype(float)
    out = per_turn(per, {0: 0, 1: 0, 2: 1, 3: None})
    assert out.attrs["n_without_turn"] == 2
    assert out[["pair", "turn", "n"]].values.tolist() == [[0, 0, 2], [0, 1, 1], [1, 0, 2], [1, 1, 1]]
    assert out["TMR"].tolist() == [0.5, 1.0, 0.0, 1.0]
    assert out["DMR"].tolist() == [1.0, 0.0, 0.5, 1.0]
    cs = ContextSet([{"beliefs": {}}] * 4, [{"turn": 0}, {"turn": 0}, {"turn": 1}, {"origin": "generated"}])
    pd.testing.assert_frame_equal(per_turn(per, cs), out)
    with pytest.raises(ConfigError, match="turns"):
        per_turn(per, 5)


# ------------------------------------------------------------------ disagreements
CTX = [{"beliefs": {"area": {"north": p, "south": 1 - p}}} for p in (0.1, 0.3, 0.5, 0.7, 0.9)]
METAS = [{"origin": "collected", "turn": t, "dialogue": 1, "source_policy": "p"} for t in range(5)]
ACTS = {
    "p": ["request(area)", "request(food)", "confirm(area=north)", "bye()", "inform(name=x,area=north)"],
    "q": ["request(food)", "request(food)", "confirm(area=south)", "reqmore()", "inform(name=x,area=south)"],
}


def _setup():
    cs = ContextSet(CTX, METAS)
    tables = [
        ResponseTable(
            policy={"id": pid, "reward": pid.upper(), "seed": 0, "checkpoint": 1000},
            context_fingerprint=cs.fingerprint,
            acts=acts,
            prompts=[f"{pid}{i}" for i in range(5)],
        )
        for pid, acts in ACTS.items()
    ]
    return cs, tables


def _comparison():
    cs, tables = _setup()
    return compare(tables, "all", scores=SEM)


def test_disagreements_order_and_content():
    cs, tables = _setup()
    comp = compare(tables, "all", scores=SEM)
    out = disagreements(comp, cs, tables, pair=("q", "p"), top=None, by="CMR")
    per = comp.per_context
    ref = per.sort_values(["CMR", "TMR", "DMR", "CER", "context"], kind="mergesort")["context"].tolist()
    assert out["context"].tolist() == ref
    assert out["CMR"].is_monotonic_increasing and out["rank"].tolist() == [1, 2, 3, 4, 5]
    assert out["context"].iloc[-1] == 1  # the only full match comes last
    row = out.iloc[0]
    i = int(row["context"])
    assert row["act_a"] == tables[0].acts[i] and row["act_b"] == tables[1].acts[i]
    assert row["prompt_a"] == f"p{i}" and row["summary"] == cs.summary(i)
    assert row["turn"] == i and row["origin"] == "collected" and row["context_id"] == cs.ids[i]
    assert len(disagreements(comp, cs, {t.id: t for t in tables}, top=2)) == 2


def test_disagreements_errors():
    cs, tables = _setup()
    comp = compare(tables, "all", scores=SEM)
    with pytest.raises(ContextSetMismatch):
        disagreements(comp, ContextSet(CTX[:4]), tables)
    with pytest.raises(ConfigError, match="pair"):
        disagreements(comp, cs, tables, pair=3)
    with pytest.raises(ConfigError, match="no response table"):
        disagreements(comp, cs, tables[:1])
    with pytest.raises(UnknownScore):
        disagreements(comp, cs, tables, by="BLEU")
    with pytest.raises(ConfigError, match="top"):
        disagreements(comp, cs, tables, top=0)


def test_pair_table_joins_metadata():
    out = pair_table(_comparison())
    assert out.loc[0, "a_reward"] == "P" and out.loc[0, "b_reward"] == "Q"
    assert out.loc[0, "reward"] is None and out.loc[0, "checkpoint"] == 1000


def test_docs_snippet_runs(tmp_path, monkeypatch):
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "analysis.md"
    if not doc.is_file():
        pytest.skip("docs/analysis.md not present")
    code = next(c for c in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S) if "fig6_corr" in c)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    exec(compile(code, str(doc), "exec"), {})
    assert list(tmp_path.glob("*/fig6_corr.svg"))
