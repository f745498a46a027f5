import numpy as np
import pandas as pd
import pytest

from behavsim import ConfigError, ContextSet, ContextSetMismatch, ResponseTable, compare
from behavsim._slices import (  # private: the slice assignment itself, beside slice_scores
    SLICE_KINDS,
    context_slices,
    slice_scores,
)
from behavsim.cli import main

N = "**NONE**"


def _belief(area, food):
    """area/food: (value, p) with the rest on **NONE**, or None for a slot nobody mentioned."""
    b = {"method": {"byconstraints": 1.0, "none": 0.0}}
    for slot, vp in (("area", area), ("food", food)):
        d = {N: 1.0, "north": 0.0, "thai": 0.0, "dontcare": 0.0}
        if vp is not None:
            d[vp[0]] = vp[1]
            d[N] = 1.0 - vp[1]
        b[slot] = d
    return {"beliefs": b}


# context: area, food, turn -> mentions; certainty (mean top prob of constrained slots)
CONTEXTS = [
    ((("north", 1.0)), None, 0),  # area; 1.0 -> [0.9, 1]
    ((("north", 0.6)), (("thai", 0.8)), 1),  # area food; 0.7 -> [0.7, 0.9)
    (None, None, 1),  # none; no constraint
    ((("north", 0.4)), (("thai", 0.5)), None),  # area food; only food constrained (tie) -> 0.5 -> [0.5, 0.7)
    (None, (("dontcare", 0.95)), 2),  # food; 0.95 -> [0.9, 1]
    ((("north", 0.3)), None, 2),  # area; not constrained -> no constraint
]
ACTS_A = ["request(food)", "request(area)", "hello()", "request(food)", None, "inform(name=x,area=north)"]
ACTS_B = ["request(food)", "request(food)", "hello()", "request(area)", "bye()", "inform(name=x,area=north)"]
# TMR:     1                0                1          0                 nan      1


@pytest.fixture()
def setup():
    cs = ContextSet(
        [_belief(a, f) for a, f, _ in CONTEXTS],
        [{"origin": "collected"} | ({} if t is None else {"turn": t}) for _, _, t in CONTEXTS],
    )
    tables = [
        ResponseTable(
            policy={"id": pid},
            context_fingerprint=cs.fingerprint,
            acts=acts,
            prompts=[None] * 6,
            errors=[None if x is not None else "failed" for x in acts],
        )
        for pid, acts in (("pa", ACTS_A), ("pb", ACTS_B))
    ]
    return cs, tables, compare(tables, "all", scores=["TMR", "DMR", "CMR"])


def test_context_slices_by_hand(setup):
    cs, _, _ = setup
    assert context_slices("slot", cs) == [
        ["area"],
        ["area", "food"],
        ["(no slot)"],
        ["area", "food"],
        ["food"],
        ["area"],
    ]
    assert context_slices("uncertainty", cs) == [
        ["[0.9, 1]"],
        ["[0.7, 0.9)"],
        ["no constraint"],
        ["[0.5, 0.7)"],
        ["[0.9, 1]"],
        ["no constraint"],
    ]
    assert context_slices("uncertainty", cs, bins=[0.8]) == [
        ["[0.8, 1]"],
        ["[0, 0.8)"],
        ["no constraint"],
        ["[0, 0.8)"],
        ["[0.8, 1]"],
        ["no constraint"],
    ]
    assert context_slices("turn", cs) == [["0"], ["1"], ["1"], ["(no turn)"], ["2"], ["2"]]


def test_acttype_slices_by_hand_and_recombine(setup):
    cs, tables, comp = setup
    out = slice_scores(comp, "acttype", tables=tables)
    assert list(out["value"]) == ["hello", "inform", "request", "(no act)"]
    assert list(out["n_contexts"]) == [1, 1, 3, 1]
    assert list(out["n"]) == [1, 1, 3, 0]  # the failed context counts in no n
    assert list(out["TMR"][:3]) == pytest.approx([1.0, 1.0, 1 / 3]) and np.isnan(out["TMR"].iloc[3])
    assert list(out["DMR"][:3]) == pytest.approx([1.0, 1.0, 1.0]) and list(out["n_DMR"]) == [1, 1, 3, 0]
    assert out["partition"].all() and set(out["slice"]) == {"acttype"}
    assert ((out["a"] == "pa") & (out["b"] == "pb")).all()
    for s in ("TMR", "DMR", "CMR"):
        ok = out[out["n"] > 0]
        assert (ok["n"] * ok[s]).sum() / ok["n"].sum() == pytest.approx(comp.means[s].iloc[0], abs=1e-12)
        ok = out[out[f"n_{s}"] > 0]
        assert (ok[f"n_{s}"] * ok[s]).sum() / ok[f"n_{s}"].sum() == pytest.approx(comp.means[s].iloc[0], abs=1e-12)


def test_every_partition_recombines_and_slots_overlap(setup):
    cs, tables, comp = setup
    out = slice_scores(comp, ["turn", "uncertainty", "slot", "acttype"], contexts=cs, tables=tables)
    assert list(dict.fromkeys(out["slice"])) == ["turn", "uncertainty", "slot", "acttype"]  # asked order
    for kind, g in out.groupby("slice"):
        assert g["n_contexts"].sum() == (6 if kind != "slot" else 8)
        if kind != "slot":
            assert g["partition"].all()
            w = (g["n"] * g["TMR"].fillna(0)).sum() / g["n"].sum()
            assert w == pytest.approx(0.6, abs=1e-12)  # TMR 1, 0, 1, 0, (nan), 1
    turn = out[out["slice"] == "turn"].set_index("value")
    assert list(turn.index) == ["0", "1", "2", "(no turn)"]
    assert turn.loc["1", "TMR"] == 0.5 and turn.loc["2", "n"] == 1 and turn.loc["2", "n_contexts"] == 2
    unc = out[out["slice"] == "uncertainty"].set_index("value")
    assert list(unc.index) == ["[0.5, 0.7)", "[0.7, 0.9)", "[0.9, 1]", "no constraint"]
    slot = out[out["slice"] == "slot"].set_index("value")
    assert list(slot.index) == ["area", "food", "(no slot)"] and not slot["partition"].any()
    assert slot.loc["area", "n_contexts"] == 4 and slot.loc["area", "TMR"] == pytest.approx(0.5)


def test_slices_of_several_pairs_and_determinism(setup):
    cs, tables, _ = setup
    third = ResponseTable(
        policy={"id": "pc"}, context_fingerprint=cs.fingerprint, acts=["bye()"] * 6, prompts=[None] * 6
    )
    comp = compare(tables + [third], "all", scores=["TMR"])
    out = slice_scores(comp, "acttype", tables=tables + [third])
    assert list(out["pair"].unique()) == [0, 1, 2]
    for p, g in out.groupby("pair"):
        ok = g[g["n"] > 0]
        assert (ok["n"] * ok["TMR"]).sum() / ok["n"].sum() == pytest.approx(comp.means["TMR"].iloc[p], abs=1e-12)
    pd.testing.assert_frame_equal(out, slice_scores(comp, "acttype", tables=tables + [third]))


def test_slice_errors(setup):
    cs, tables, comp = setup
    with pytest.raises(ConfigError, match="unknown slice 'acttyp'. Did you mean 'acttype'"):
        slice_scores(comp, "acttyp", tables=tables)
    with pytest.raises(ConfigError, match="needs the response tables"):
        slice_scores(comp, "acttype")
    with pytest.raises(ConfigError, match="slice 'slot' needs the context set"):
        slice_scores(comp, "slot")
    generated = ContextSet(cs.beliefs)
    with pytest.raises(ConfigError, match="no context carries a turn"):
        slice_scores(comp, "turn", contexts=generated)
    with pytest.raises(ContextSetMismatch):
        slice_scores(comp, "slot", contexts=ContextSet(cs.beliefs[:5]))
    flat = ContextSet([{"x": 1}] * 6)
    with pytest.raises(ConfigError, match="no context has a belief over slots"):
        context_slices("uncertainty", flat)
    with pytest.raises(ConfigError, match="bins must be increasing"):
        slice_scores(comp, "uncertainty", contexts=cs, bins=[0.9, 0.5])
    with pytest.raises(ConfigError, match="no pair, or no context"):
        slice_scores(comp.per_context.iloc[:0], "acttype", tables=tables)
    assert SLICE_KINDS == ("acttype", "slot", "uncertainty", "turn")


def test_compare_slice_cli(setup, tmp_path, capsys):
    cs, tables, _ = setup
    paths = [str(t.save(tmp_path / f"{t.id}.jsonl")) for t in tables]
    cs.save(tmp_path / "c.jsonl")
    out = tmp_path / "out.csv"
    assert (
        main(
            [
                "compare",
                *paths,
                "--scores",
                "TMR",
                "DMR",
                "--slice",
                "acttype",
                "--slice",
                "turn,slot",
                "--contexts",
                str(tmp_path / "c.jsonl"),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    per = pd.read_csv(out)
    sl = pd.read_csv(tmp_path / "out.slice-acttype.csv")
    ok = sl[sl["n"] > 0]
    assert (ok["n"] * ok["TMR"]).sum() / ok["n"].sum() == pytest.approx(per["TMR"].mean(), abs=1e-9)
    assert (tmp_path / "out.slice-turn.csv").exists() and (tmp_path / "out.slice-slot.csv").exists()
    capsys.readouterr()
    assert main(["compare", *paths, "--scores", "TMR", "--slice", "slot", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1:] == [
        "behavsim compare: error: --slice slot needs --contexts FILE (the context set the tables "
        "answered); only --slice acttype works from the tables alone"
    ]
    # the rows are read back from the file compare streamed them to (csv or parquet), in pieces
    _, tables, comp = setup
    ref = slice_scores(comp, ["acttype"], tables=tables, scores=["TMR", "DMR"])
    pd.testing.assert_frame_equal(sl, ref, check_exact=False, rtol=1e-9)
    pq = tmp_path / "out.parquet"
    assert main(["compare", *paths, "--scores", "TMR", "DMR", "--slice", "acttype", "-o", str(pq)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "out.slice-acttype.csv"), sl)
    capsys.readouterr()
    assert (
        main(["compare", *paths, "--scores", "TMR", "--per-context", "none", "--slice", "acttype", "-o", str(out)]) == 2
    )
    assert (
        capsys.readouterr()
        .err.strip()
        .splitlines()[-1]
        .startswith("behavsim compare: error: --slice needs the per-context rows")
    )
    other = ContextSet(cs.beliefs[:5])
    other.save(tmp_path / "other.jsonl")
    capsys.readouterr()
    assert (
        main(
            [
                "compare",
                *paths,
                "--scores",
                "TMR",
                "--slice",
                "turn",
                "--contexts",
                str(tmp_path / "other.jsonl"),
                "-o",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "".join(err) and "is not the context set the tables answered" in err[-1]
