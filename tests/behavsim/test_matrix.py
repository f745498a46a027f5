import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from test_engine import ACTS, CONTEXTS, FAST, FP, PROMPTS, _ConceptErrorScore, _LengthShare, make

from behavsim import ConfigError, ContextSetMismatch, ResponseTable, compare, context_fingerprint
from behavsim.scores import ScoreInfo, SemanticScore, concept_error


class _NaNOnBye(SemanticScore):
    """A toy symmetric score that is NaN whenever one act is bye(): NaN values, not missing acts."""

    info = ScoreInfo("NaNBye", "1 if equal, NaN if either is bye()", "semantic")

    def _pairwise(self, a, b):
        return np.array([np.nan if "bye()" in (x, y) else float(x == y) for x, y in zip(a, b)])


def _tables():
    """The engine tests' three tables plus one that fails on two contexts and has no prompt on a
    third, and one without a generator (all prompts missing)."""
    extra = ResponseTable(
        policy={"id": "p3"},
        context_fingerprint=FP,
        acts=[None, "request(food)", "confirm(area=north)", None, "bye()", "request(area)"],
        prompts=[None, "what food", None, None, "bye", "which area"],
        errors=["RuntimeError: x", None, None, "RuntimeError: y", None, None],
    )
    mute = ResponseTable(policy={"id": "p4"}, context_fingerprint=FP, acts=ACTS["p2"][::-1], prompts=[None] * 6)
    return [make(p) for p in ACTS] + [extra, mute]


SCORES = [*FAST, _ConceptErrorScore(), _LengthShare(), _NaNOnBye()]


def compare_matrix(tables, scores, **options):
    """The matrices alone: ``compare`` with no pairs and ``matrix=True``."""
    return compare(tables, None, scores=scores, matrix=True, **options)


def _engine_means(tables, scores):
    ids = [t.id for t in tables]
    return compare(tables, [(a, b) for a in ids for b in ids], scores=scores).means


def test_matrix_equals_engine_on_every_ordered_pair_and_self_pair():
    tables = _tables()
    mc = compare_matrix(tables, scores=SCORES)
    ids = [t.id for t in tables]
    means = _engine_means(tables, SCORES)
    assert mc.score_names == [s if isinstance(s, str) else s.name for s in SCORES]
    assert mc.n_contexts == 6
    n_nan = 0
    for name in mc.score_names:
        m = mc.matrices[name]
        assert list(m.index) == ids and list(m.columns) == ids
        for _, row in means.iterrows():
            got, want = m.loc[row["a"], row["b"]], row[name]
            if np.isnan(want):
                n_nan += 1
                assert np.isnan(got), (name, row["a"], row["b"])
            else:
                assert abs(got - want) <= 1e-12, (name, row["a"], row["b"], got, want)
            assert mc.n_missing[name].loc[row["a"], row["b"]] == row[f"n_missing_{name}"]
    assert n_nan > 0  # p4 has no prompts: its text-score row and column are NaN (and the diagonal)
    # pairs="all" (a before b) is the upper triangle
    comp = compare(tables, "all", scores=FAST)
    for _, row in comp.means.iterrows():
        for name in FAST:
            want = row[name]
            got = mc.matrices[name].loc[row["a"], row["b"]]
            assert (np.isnan(want) and np.isnan(got)) or abs(got - want) <= 1e-12


def test_asymmetric_entries_follow_the_engines_argument_order():
    tables = _tables()
    mc = compare_matrix(tables, scores=[_ConceptErrorScore(), "CER"])
    ce = mc.matrices["CE"]
    # entry [a, b] = CE(a's act, b's act); p0 vs p2, hand-checked in test_engine: contexts 0..5
    forward = [concept_error(x, y) for x, y in zip(ACTS["p0"], ACTS["p2"])]
    backward = [concept_error(y, x) for x, y in zip(ACTS["p0"], ACTS["p2"])]
    assert ce.loc["p0", "p2"] == pytest.approx(np.mean(forward)) and forward[2] == 0.5
    assert ce.loc["p2", "p0"] == pytest.approx(np.mean(backward)) and backward[2] == 0.0
    assert ce.loc["p0", "p2"] != ce.loc["p2", "p0"]
    np.testing.assert_array_equal(mc.matrices["CER"].to_numpy(), mc.matrices["CER"].to_numpy().T)  # symmetric: exactly
    # self-pairs: every act against itself, error contexts missing
    assert mc.matrices["CER"].loc["p3", "p3"] == 1.0 and mc.n_missing["CER"].loc["p3", "p3"] == 2
    assert mc.n_missing["CER"].loc["p3", "p0"] == 2 and mc.n_missing["CER"].loc["p1", "p3"] == 3


def test_nan_values_and_missing_prompts():
    tables = _tables()
    mc = compare_matrix(tables, scores=["BLEU4", _NaNOnBye()])
    assert mc.n_missing["BLEU4"].loc["p0", "p4"] == 6 and np.isnan(mc.matrices["BLEU4"].loc["p0", "p4"])
    assert np.isnan(mc.matrices["BLEU4"].loc["p4", "p4"])
    # p3 has prompts on contexts 1, 4, 5; p1 misses context 5: 2 defined contexts
    assert mc.n_missing["BLEU4"].loc["p1", "p3"] == 4
    # NaNBye: NaN where either act is bye() (p0 at 4, p1 at 4)
    assert mc.n_missing["NaNBye"].loc["p0", "p1"] == 2  # context 4 (bye) and 5 (p1 failed)


@pytest.mark.parametrize("chunk", [1, 2, 7, None])
def test_chunking_gives_identical_matrices(chunk):
    tables = _tables()
    ref = compare_matrix(tables, scores=SCORES, chunk_contexts=6)
    got = compare_matrix(tables, scores=SCORES, chunk_contexts=chunk)
    for name in ref.score_names:
        pd.testing.assert_frame_equal(got.matrices[name], ref.matrices[name], check_exact=True)
        pd.testing.assert_frame_equal(got.n_missing[name], ref.n_missing[name], check_exact=True)


def test_chunking_invariance_on_many_contexts():
    """Sums fold context by context, so chunk sizes give bit-identical means on a longer set too."""
    rng = np.random.default_rng(0)
    vocab = ["request(area)", "request(food)", "confirm(area=north)", "bye()", 'inform(name="x",area=north)']
    ctx = [{"c": i} for i in range(203)]
    fp = context_fingerprint(ctx)
    tables = [
        ResponseTable(
            policy={"id": f"q{k}"},
            context_fingerprint=fp,
            acts=[None if rng.random() < 0.05 else vocab[rng.integers(len(vocab))] for _ in ctx],
            prompts=[None] * len(ctx),
        )
        for k in range(7)
    ]
    scores = ["CER", "CMR", _ConceptErrorScore()]
    ref = compare_matrix(tables, scores=scores, chunk_contexts=203)
    for chunk in (1, 7, 50):
        got = compare_matrix(tables, scores=scores, chunk_contexts=chunk)
        for name in ref.score_names:
            np.testing.assert_array_equal(got.matrices[name].to_numpy(), ref.matrices[name].to_numpy())
    means = _engine_means(tables, scores)
    for name in ref.score_names:
        want = means.pivot(index="a", columns="b", values=name).loc[
            ref.matrices[name].index, ref.matrices[name].columns
        ]
        np.testing.assert_allclose(ref.matrices[name].to_numpy(), want.to_numpy(), rtol=0, atol=1e-12)


def test_sorted_path_equals_lookup_path(monkeypatch):
    """Many distinct answers switch the lookup table off for sorting; both give the same result."""
    import behavsim._kernel as matrix  # private: the matrix kernel against the engine

    tables = _tables()
    ref = compare_matrix(tables, scores=SCORES, chunk_contexts=2)
    monkeypatch.setattr(matrix, "_use_lookup", lambda base, cells: False)
    got = compare_matrix(tables, scores=SCORES, chunk_contexts=2)
    for name in ref.score_names:
        pd.testing.assert_frame_equal(got.matrices[name], ref.matrices[name], check_exact=True)
        pd.testing.assert_frame_equal(got.n_missing[name], ref.n_missing[name], check_exact=True)


def test_deterministic():
    tables = _tables()
    a = compare_matrix(tables, scores=SCORES)
    b = compare_matrix(tables, scores=SCORES)
    for name in a.score_names:
        assert a.matrices[name].to_csv() == b.matrices[name].to_csv()


def test_bad_input():
    tables = _tables()
    with pytest.raises(ConfigError, match="at least two"):
        compare_matrix(tables[:1], scores=["TMR"])
    other = ResponseTable(
        policy={"id": "q"},
        context_fingerprint=context_fingerprint(CONTEXTS[:5] + [{"x": 1}]),
        acts=ACTS["p0"],
        prompts=PROMPTS["p0"],
    )
    with pytest.raises(ContextSetMismatch):
        compare_matrix([tables[0], other], scores=["TMR"])
    with pytest.raises(ConfigError, match="chunk_contexts"):
        compare_matrix(tables, scores=["TMR"], chunk_contexts=0)


def _saved(tmp_path, tables):
    paths = []
    for t in tables:
        paths.append(str(tmp_path / f"{t.id}.jsonl"))
        t.save(paths[-1])
    return paths


def test_cli_matrix_writes_files(tmp_path, capsys):
    from behavsim.cli import main

    tables = _tables()
    paths = _saved(tmp_path, tables)
    out = tmp_path / "m"
    rc = main(["compare", *paths, "--scores", "TMR,CER,BLEU4", "--matrix", str(out), "--pairs", "consecutive"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert str(out) in cap.out and "--matrix covers all pairs" in cap.err
    mc = compare_matrix(tables, scores=["TMR", "CER", "BLEU4"])
    for name in ("TMR", "CER", "BLEU4"):
        assert (out / f"{name}.png").stat().st_size > 0
        got = pd.read_csv(out / f"{name}.csv", index_col=0)
        assert list(got.index) == [t.id for t in tables] and list(got.columns) == [t.id for t in tables]
        np.testing.assert_allclose(got.to_numpy(), mc.matrices[name].to_numpy(), rtol=1e-9, equal_nan=True)
        miss = pd.read_csv(out / "n_missing.csv").pivot(index="a", columns="b", values=name)
        np.testing.assert_array_equal(miss.loc[got.index, got.columns].to_numpy(), mc.n_missing[name].to_numpy())
    meta = json.loads((out / "matrix.meta.json").read_text())
    assert (
        meta["context_fingerprint"] == FP
        and meta["n_contexts"] == 6
        and set(meta["signatures"])
        == {
            "TMR",
            "CER",
            "BLEU4",
        }
    )
    assert not list(tmp_path.glob("*.csv"))  # no -o: no per-context output


def test_cli_matrix_refuses_bad_input(tmp_path):
    tables = _tables()
    paths = _saved(tmp_path, tables)
    other = ResponseTable(
        policy={"id": "q"},
        context_fingerprint=context_fingerprint(CONTEXTS[:5] + [{"x": 1}]),
        acts=ACTS["p0"],
        prompts=PROMPTS["p0"],
    )
    other_path = str(tmp_path / "q.jsonl")
    other.save(other_path)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "behavsim.cli", *args], capture_output=True, text=True)

    for args, message in [
        ((paths[0], "--matrix", str(tmp_path / "a")), "at least two response tables"),
        ((paths[0], other_path, "--matrix", str(tmp_path / "b")), "different context sets"),
        ((paths[0], paths[2]), "needs -o/--output"),
        ((paths[0], paths[2], "--matrix", str(tmp_path / "c"), "--chunk-contexts", "0"), "chunk_contexts"),
    ]:
        r = run("compare", *args, "--scores", "TMR")
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr and message in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_model_scores_equal_the_engine():
    """USE cosine and angular and BERTScore (also with idf, a statistic over the prompts of one batch call)
    with the same models and cache: the distinct prompt pairs are scored in one call, as the
    engine does, so the idf and hence the values agree."""
    from behavsim.scores import BERTScore, USEAng, USECos

    tables = _tables()
    scores = [USECos(), USEAng(), BERTScore(), BERTScore(idf=True)]
    for s in scores[1:]:
        s.encoder.progress = False
    for score in scores:
        mc = compare_matrix(tables, scores=[score], chunk_contexts=1)
        means = _engine_means(tables, [score])
        comp = compare(tables, "all", scores=[score]).means  # the engine's own batch on a < b
        for frame in (means, comp):
            for _, row in frame.iterrows():
                got, want = mc.matrices[score.name].loc[row["a"], row["b"]], row[score.name]
                assert (np.isnan(want) and np.isnan(got)) or abs(got - want) <= 1e-12, (score, row["a"], row["b"])
