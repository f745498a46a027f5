"""behavsim.compare as one function with its outputs chosen by options, and an API that takes what
it is given: paths wherever tables or context sets go, ``__version__``, short reprs, the answers
beside the per-context values."""

import io
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_engine import CONTEXTS, FP
from test_matrix import SCORES, _saved, _tables

import behavsim
from behavsim import ConfigError, ContextSet, ResponseTable, analysis, compare, context_fingerprint, respond
from behavsim._repr import LIMIT  # private: the repr's length limit


def _csv(df):
    buf = io.StringIO()
    df.to_csv(buf, index=False, float_format="%.10g")
    return buf.getvalue()


# ------------------------------------------------------------------------------ one function, three outputs
def test_one_call_gives_rows_means_and_matrices_each_as_alone():
    """matrix=True beside the pairs: the rows and means are those of the pairs alone, the matrices
    those of pairs=None — symmetric and asymmetric scores, failed contexts, NaN values."""
    tables = _tables()
    both = compare(tables, "all", scores=SCORES, matrix=True)
    rows = compare(tables, "all", scores=SCORES)
    mats = compare(tables, None, scores=SCORES, matrix=True)
    pd.testing.assert_frame_equal(both.per_context, rows.per_context, check_exact=True)
    pd.testing.assert_frame_equal(both.means, rows.means, check_exact=True)
    assert rows.matrices is None and mats.per_context is None and len(mats.means) == 0
    for name in both.score_names:
        pd.testing.assert_frame_equal(both.matrices[name], mats.matrices[name], check_exact=True)
        pd.testing.assert_frame_equal(both.n_missing[name], mats.n_missing[name], check_exact=True)
    assert both.n_rows == len(rows.per_context) == 10 * 6 and both.n_contexts == 6


def test_a_batch_dependent_score_is_scored_on_each_output_own_combinations():
    """BERTScore with idf from the batch gives other values on the matrices' (bigger) set of
    prompts: one call with both outputs still gives each output its own values."""
    tables = _tables()
    idf = {"BERTScore": {"idf": True}}
    pair = [("p0", "p1")]
    alone = compare(tables, pair, scores=["BERTScore"], score_options=idf)
    mats = compare(tables, None, scores=["BERTScore"], score_options=idf, matrix=True)
    both = compare(tables, pair, scores=["BERTScore"], score_options=idf, matrix=True)
    pd.testing.assert_frame_equal(both.per_context, alone.per_context, check_exact=True)
    pd.testing.assert_frame_equal(both.matrices["BERTScore"], mats.matrices["BERTScore"], check_exact=True)
    # and the guard matters: the matrices' value of (p0, p1) is not the pair's own
    assert both.matrices["BERTScore"].loc["p0", "p1"] != both.means.loc[0, "BERTScore"]


def test_rows_to_a_file_are_the_rows_in_memory(tmp_path):
    tables = _tables()
    ref = compare(tables, "all", scores=["TMR", "CER", "BLEU4"])
    got = compare(tables, "all", scores=["TMR", "CER", "BLEU4"], per_context=tmp_path / "rows.csv", chunk_cells=7)
    assert got.per_context is None and got.n_rows == len(ref.per_context)
    assert (tmp_path / "rows.csv").read_text() == _csv(ref.per_context)
    pd.testing.assert_frame_equal(got.means, ref.means, check_exact=True)
    compare(tables, "all", scores=["TMR"], per_context=str(tmp_path / "rows.parquet"), chunk_cells=6)
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "rows.parquet"), compare(tables, "all", scores=["TMR"]).per_context
    )


@pytest.mark.parametrize("chunk_cells", [1, 7, 10_000])
def test_intervals_of_the_means_are_those_from_the_rows(chunk_cells):
    """intervals=True: the pair means with analysis.means_with_ci's bootstrap intervals, computed
    chunk by chunk — also when the rows are not kept — equal to means_with_ci on all the rows."""
    tables = _tables()
    ref = analysis.means_with_ci(compare(tables, "all", scores=SCORES), n_resamples=200, seed=3)
    for rows in (True, False):
        got = compare(
            tables, "all", scores=SCORES, per_context=rows, intervals={"n_resamples": 200, "seed": 3},
            chunk_cells=chunk_cells,
        )  # fmt: skip
        pd.testing.assert_frame_equal(got.means, ref, check_exact=True)
        assert got.means.attrs["bootstrap"] == ref.attrs["bootstrap"]
    lo, hi = analysis.bootstrap_ci(compare(tables, [("p0", "p3")], scores=["CER"]).per_context["CER"], n_resamples=200,
                                   seed=3)  # fmt: skip
    row = ref[(ref.a == "p0") & (ref.b == "p3")].iloc[0]
    assert (row["CER_lo"], row["CER_hi"]) == (lo, hi) and lo < row["CER"] < hi


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"pairs": None}, "pairs=None compares no pair"),
        ({"pairs": None, "matrix": True, "per_context": print}, "pairs=None compares none"),
        ({"chunk_contexts": 4}, "chunk_contexts applies to the matrices only"),
        ({"chunk_cells": 0}, "chunk_cells must be a positive integer"),
        ({"per_context": 3}, "per_context must be True"),
        ({"per_context": False, "answers": True}, "answers=True adds columns"),
        ({"intervals": {"resamples": 10}}, r"intervals: unknown option\(s\) \['resamples'\]"),
        ({"intervals": {"confidence": 2}}, "confidence must be a number strictly between 0 and 1"),
        ({"pairs": None, "matrix": True, "intervals": True}, "intervals are of the pair means"),
    ],
)
def test_option_mistakes_are_one_line(kwargs, message):
    kwargs = {"pairs": "all", **kwargs}
    with pytest.raises(ConfigError, match=message) as info:
        compare(_tables(), kwargs.pop("pairs"), scores=["TMR"], **kwargs)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------------------ the answers beside the values
def _none(*values):
    """Missing answers as None (a missing string read back from Parquet is NaN in pandas 3)."""
    return tuple(None if pd.isna(v) else v for v in values)


def test_answers_columns_in_memory_and_streamed(tmp_path):
    tables = _tables()
    by_id = {t.id: t for t in tables}
    pairs = [("p0", "p3"), ("p3", "p4"), ("p1", "p1")]
    comp = compare(tables, pairs, scores=["TMR", "BLEU4"], answers=True)
    per = comp.per_context
    assert list(per.columns) == [
        "pair", "a", "b", "context", "context_id", "act_a", "act_b", "prompt_a", "prompt_b", "TMR", "BLEU4",
    ]  # fmt: skip
    for _, row in per.iterrows():
        ta, tb, i = by_id[row["a"]], by_id[row["b"]], row["context"]
        assert (row["act_a"], row["act_b"]) == (ta.acts[i], tb.acts[i])
        assert (row["prompt_a"], row["prompt_b"]) == (ta.prompts[i], tb.prompts[i])
    assert per.loc[(per.a == "p3") & (per.context == 0), "act_a"].item() is None  # p3 failed on context 0
    plain = compare(tables, pairs, scores=["TMR", "BLEU4"]).per_context
    pd.testing.assert_frame_equal(per.drop(columns=["act_a", "act_b", "prompt_a", "prompt_b"]), plain, check_exact=True)
    pieces = []
    compare(tables, pairs, scores=["TMR", "BLEU4"], answers=True, per_context=pieces.append, chunk_cells=1)
    pd.testing.assert_frame_equal(pd.concat(pieces, ignore_index=True), per, check_exact=True)
    # Parquet: p4 has no prompts, so a piece may hold only nulls; the file still has string columns
    compare(tables, pairs[1:], scores=["TMR"], answers=True, per_context=tmp_path / "r.parquet", chunk_cells=1)
    back = pd.read_parquet(tmp_path / "r.parquet")
    assert back["prompt_b"][:6].isna().all() and _none(*back["prompt_b"]) == tuple([None] * 6 + by_id["p1"].prompts)
    assert _none(*back["act_b"]) == tuple(by_id["p4"].acts + by_id["p1"].acts)
    # the analysis sees the score columns only
    m = analysis.means_with_ci(comp, n_resamples=50)
    assert [c for c in m.columns if c in ("act_a", "prompt_a")] == [] and "TMR_lo" in m.columns


# ------------------------------------------------------------------------------ paths wherever tables go
def test_compare_takes_paths(tmp_path):
    tables = _tables()
    paths = _saved(tmp_path, tables)
    ref = compare(tables, "all", scores=["TMR", "CER"])
    for given in (paths, [Path(p) for p in paths], [paths[0], *tables[1:]]):
        got = compare(given, "all", scores=["TMR", "CER"])
        pd.testing.assert_frame_equal(got.per_context, ref.per_context, check_exact=True)
        pd.testing.assert_frame_equal(got.means, ref.means, check_exact=True)
    with pytest.raises(ConfigError, match="expected a list of response tables or their paths, got one str"):
        compare(paths[0], scores=["TMR"])
    with pytest.raises(ConfigError, match="tables: expected behavsim.ResponseTable objects or paths.*got int"):
        compare([paths[0], 3], scores=["TMR"])
    with pytest.raises(behavsim.TableFormatError, match="nope.jsonl"):
        compare([paths[0], str(tmp_path / "nope.jsonl")], scores=["TMR"])


def _answer(belief):
    p = belief["beliefs"]["area"]["north"]
    return ("request(area)", "which area?") if p < 0.5 else ("confirm(area=north)", "north, right?")


def test_respond_and_check_policy_take_a_context_set_path(tmp_path):
    cs = ContextSet(CONTEXTS)
    path = cs.save(tmp_path / "c.jsonl")
    ref = respond(_answer, cs, policy_id="x")
    for given in (path, str(path)):
        t = respond(_answer, given, policy_id="x")
        assert t.acts == ref.acts and t.prompts == ref.prompts and t.context_fingerprint == FP
        (many,) = behavsim.respond_many([_answer], given, policy_ids=["x"], workers=1)
        assert many.acts == ref.acts
        assert behavsim.check_policy(_answer, given) == len(CONTEXTS)
    with pytest.raises(ConfigError, match="contexts: expected a behavsim.ContextSet, got int"):
        respond(_answer, 3)


def test_slices_map_and_analysis_take_paths(tmp_path):
    tables = _tables()
    paths = _saved(tmp_path, tables)
    cs = ContextSet(CONTEXTS, [{"turn": i % 3, "origin": "collected"} for i in range(len(CONTEXTS))])
    cpath = str(cs.save(tmp_path / "c.jsonl"))
    comp = compare(tables, "all", scores=["TMR", "CMR", "CER"])
    ref = behavsim.slice_scores(comp, ["acttype", "slot", "turn"], contexts=cs, tables=tables)
    got = behavsim.slice_scores(comp, ["acttype", "slot", "turn"], contexts=cpath, tables=paths)
    pd.testing.assert_frame_equal(got, ref, check_exact=True)
    got = behavsim.slice_scores(comp, ["acttype"], tables={t.id: p for t, p in zip(tables, paths)})
    pd.testing.assert_frame_equal(got, ref[ref["slice"] == "acttype"].reset_index(drop=True), check_exact=True)
    ref_map = behavsim.behaviour_map(tables, "TMR")
    got_map = behavsim.behaviour_map([Path(p) for p in paths], "TMR")
    pd.testing.assert_frame_equal(got_map.coords, ref_map.coords, check_exact=True)
    ref_d = analysis.disagreements(comp, cs, tables, pair=("p0", "p2"))
    got_d = analysis.disagreements(comp, Path(cpath), paths, pair=("p0", "p2"))
    pd.testing.assert_frame_equal(got_d, ref_d, check_exact=True)
    pd.testing.assert_frame_equal(
        analysis.per_turn(comp, cpath, ["TMR"]), analysis.per_turn(comp, cs, ["TMR"]), check_exact=True
    )
    with pytest.raises(ConfigError, match="no matrices"):
        behavsim.behaviour_map(comp, "TMR")


def test_an_analysis_of_streamed_rows_says_what_is_missing():
    comp = compare(_tables(), "all", scores=["TMR"], per_context=False)
    with pytest.raises(ConfigError, match="kept no per-context rows.*per_context=True"):
        analysis.means_with_ci(comp)


# ------------------------------------------------------------------------------ version and reprs
def test_version():
    assert behavsim.__version__ == metadata.version("behavsim") and behavsim.__version__[0].isdigit()


def test_reprs_are_short_whatever_the_size():
    n_ctx = 20_000
    cs = ContextSet(
        [{"beliefs": {"area": {"north": 0.5, "**NONE**": 0.5}}, "big": "q" * 1000} for _ in range(n_ctx)],
        [{"origin": "generated"}] * n_ctx,
        meta={"builder": "generated", "params": "w" * 10_000},
    )
    text = repr(cs)
    assert len(text) < LIMIT and text.startswith("ContextSet(20,000 contexts") and cs.fingerprint in text
    assert "origins: generated 20,000" in text
    long_act = 'inform(name="' + "a" * 3000 + '")'
    big = ResponseTable(
        policy={"id": "policy-" + "y" * 500, "notes": "z" * 5000, "seed": 3},
        context_fingerprint=cs.fingerprint,
        acts=[long_act if i % 3 else "request(area)" for i in range(n_ctx)],
        prompts=["p " * 400] * n_ctx,
        errors=[],
    )
    text = repr(big)
    assert len(text) < LIMIT and text.startswith("ResponseTable(policy 'policy-y") and "20,000 contexts" in text
    assert cs.fingerprint in text and "acts: 2 distinct" in text
    fp = context_fingerprint({"c": i} for i in range(300))
    many = [
        ResponseTable(
            policy={"id": f"policy-{k}-" + "y" * 200, "notes": "z" * 5000},
            context_fingerprint=fp,
            acts=["request(area)" if (i + k) % 4 else "bye()" for i in range(300)],
            prompts=[],
        )
        for k in range(40)
    ]
    comp = compare(many, "all", scores=["TMR", "CER"], matrix=True)
    text = repr(comp)
    assert len(text) < LIMIT and text.startswith("Comparison(780 pairs x 300 contexts, 2 scores")
    assert "first 5 of 780 pairs" in text and "40 x 40 per score" in text and "rows in memory" in text
    text = repr(compare(many[:3], "all", scores=["TMR"], per_context=False))
    assert len(text) < LIMIT and "not kept" in text


# ------------------------------------------------------------------------------ the command line
def test_cli_matrix_dir_with_output_writes_both(tmp_path, capsys):
    """`compare --matrix DIR -o FILE`: the matrices in DIR and the rows, means and signatures at
    FILE (before, -o was silently ignored); --per-context none leaves out the rows only."""
    from behavsim.cli import main

    tables = _tables()
    paths = _saved(tmp_path, tables)
    ref = compare(tables, "all", scores=["TMR", "CER"])
    mats = compare(tables, None, scores=["TMR", "CER"], matrix=True)
    out = tmp_path / "o" / "pairs.csv"
    assert main(["compare", *paths, "--scores", "TMR,CER", "--matrix", str(tmp_path / "m"), "-o", str(out)]) == 0
    cap = capsys.readouterr()
    assert out.read_text() == _csv(ref.per_context)
    assert out.with_name("pairs.means.csv").read_text() == _csv(ref.means)
    assert out.with_name("pairs.meta.json").exists()
    for name in ("TMR", "CER"):
        got = pd.read_csv(tmp_path / "m" / f"{name}.csv", index_col=0)
        np.testing.assert_array_equal(got.to_numpy(), mats.matrices[name].to_numpy())
    assert "matrices over 6 contexts written to" in cap.out and f"per-context values: {out}" in cap.out
    assert "10 pairs x 6 contexts" in cap.out
    out2 = tmp_path / "n" / "pairs.csv"
    args = ["compare", *paths, "--scores", "TMR", "--matrix", str(tmp_path / "m2"), "-o", str(out2)]
    assert main([*args, "--per-context", "none"]) == 0
    assert not out2.exists() and out2.with_name("pairs.means.csv").read_text() == _csv(
        compare(tables, "all", scores=["TMR"]).means
    )
    # a bare --matrix puts the matrices beside -o and writes the means there too
    out3 = tmp_path / "b" / "pairs.csv"
    assert main(["compare", *paths, "--scores", "TMR", "--matrix", "-o", str(out3)]) == 0
    assert (tmp_path / "b" / "pairs.matrix" / "TMR.csv").exists() and out3.with_name("pairs.means.csv").exists()
    assert "per-context values: not written (with a bare --matrix" in capsys.readouterr().out


def test_cli_unwritable_output_names_the_users_file(tmp_path, capsys):
    from behavsim.cli import main

    paths = _saved(tmp_path, _tables()[:2])
    (tmp_path / "afile").write_text("a file, not a folder\n")
    for suffix in ("csv", "parquet"):
        assert main(["compare", *paths, "--scores", "TMR", "-o", str(tmp_path / "afile" / f"x.{suffix}")]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]  # (after a note on p1's failed context)
        assert err.startswith("behavsim compare: error: ") and f"afile/x.{suffix}: " in err, err
        assert "afile is a file, not a folder" in err and ".partial" not in err
