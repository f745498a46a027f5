import numpy as np
import pandas as pd
import pytest
from scipy import stats

from behavsim import (ConfigError, ContextSet, ContextSetMismatch, ResponseTable, UnknownScore, compare)
from behavsim.analysis import (bootstrap_ci, disagreements, means_with_ci, paired_permutation_test, pair_table,
                               per_turn, reward_vs_seed_test, score_agreement)

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
            rows.append({"pair": p, "a": f"p{p}", "b": f"q{p}", "context": c, "context_id": f"c{c}",
                         "TMR": tmr[c], "DMR": dmr[c], "CER": cer[c], "CMR": cmr[c]})
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
    assert paired_permutation_test(x + 0.5, x, n_permutations=999, alternative="greater").p_value == pytest.approx(1 / 1000)
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
    per = pd.DataFrame({"pair": [0] * 4 + [1] * 4, "a": ["x"] * 4 + ["y"] * 4, "b": "z",
                        "context": [0, 1, 2, 3] * 2, "context_id": ["c0", "c1", "c2", "c3"] * 2,
                        "TMR": [1, 0, 1, 1, 0, 0, 1, np.nan], "DMR": [1, 1, 0, 1, 1, 0, 1, 1]})
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
ACTS = {"p": ["request(area)", "request(food)", "confirm(area=north)", "bye()", "inform(name=x,area=north)"],
        "q": ["request(food)", "request(food)", "confirm(area=south)", "reqmore()", "inform(name=x,area=south)"]}


def _setup():
    cs = ContextSet(CTX, METAS)
    tables = [ResponseTable(policy={"id": pid, "reward": pid.upper(), "seed": 0, "checkpoint": 1000},
                            context_fingerprint=cs.fingerprint, acts=acts, prompts=[f"{pid}{i}" for i in range(5)])
              for pid, acts in ACTS.items()]
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
