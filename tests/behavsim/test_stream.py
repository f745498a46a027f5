"""compare(per_context=sink) and `compare --per-context`: the engine's per-context rows and means, streamed."""

import io
import re

import numpy as np
import pandas as pd
import pytest
from test_engine import FAST, _ConceptErrorScore, _LengthShare
from test_matrix import _NaNOnBye, _saved, _tables

from behavsim import DEFAULT_SCORES, ConfigError, compare
from behavsim._sinks import PerContextWriter  # private: the writer the engine streams through

SCORES = [*FAST, _ConceptErrorScore(), _LengthShare(), _NaNOnBye()]


def _csv(df: pd.DataFrame) -> str:
    buf = io.StringIO()
    df.to_csv(buf, index=False, float_format="%.10g")
    return buf.getvalue()


@pytest.mark.parametrize("pairs", ["all", [("p0", "p3"), ("p3", "p0"), ("p4", "p4"), ("p2", "p1")]])
@pytest.mark.parametrize("chunk_cells", [1, 7, 12, 10_000])
def test_streamed_rows_and_means_equal_the_engine(pairs, chunk_cells):
    """Symmetric and asymmetric scores, failed contexts, NaN values, a policy without prompts;
    every chunk size (1 cell: one pair per piece; 7: pieces cut inside no pair)."""
    tables = _tables()
    ref = compare(tables, pairs, scores=SCORES)
    pieces: list[pd.DataFrame] = []
    got = compare(tables, pairs, scores=SCORES, per_context=pieces.append, chunk_cells=chunk_cells)
    rows = pd.concat(pieces, ignore_index=True)
    pd.testing.assert_frame_equal(rows, ref.per_context, check_exact=True)
    pd.testing.assert_frame_equal(got.means, ref.means, check_exact=True)
    assert got.n_rows == len(ref.per_context) and got.signatures == ref.signatures
    assert np.isnan(rows["NaNBye"]).any() and np.isnan(rows["TMR"]).any()  # both kinds of gap are there
    # the CSV written piece by piece is the engine's CSV, byte for byte
    assert "".join(_csv(p) if k == 0 else _csv(p).split("\n", 1)[1] for k, p in enumerate(pieces)) == _csv(
        ref.per_context
    )


def test_all_eight_scores_streamed_equal_the_engine():
    tables = _tables()
    ref = compare(tables, "all", scores=DEFAULT_SCORES)
    pieces: list[pd.DataFrame] = []
    got = compare(tables, "all", scores=DEFAULT_SCORES, per_context=pieces.append, chunk_cells=12)
    pd.testing.assert_frame_equal(pd.concat(pieces, ignore_index=True), ref.per_context, check_exact=True)
    pd.testing.assert_frame_equal(got.means, ref.means, check_exact=True)


def test_without_a_sink_only_the_means():
    tables = _tables()
    got = compare(tables, "all", scores=["TMR"], per_context=False, chunk_cells=6)
    pd.testing.assert_frame_equal(got.means, compare(tables, "all", scores=["TMR"]).means, check_exact=True)
    with pytest.raises(ConfigError, match="chunk_cells"):
        compare(tables, "all", scores=["TMR"], per_context=False, chunk_cells=0)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_writer(tmp_path, fmt):
    tables = _tables()
    ref = compare(tables, "all", scores=["TMR", "CER"])
    path = tmp_path / f"rows.{fmt}"
    with PerContextWriter(path, fmt) as w:
        compare(tables, "all", scores=["TMR", "CER"], per_context=w, chunk_cells=6)
    got = pd.read_csv(path, dtype={"context_id": str}) if fmt == "csv" else pd.read_parquet(path)
    assert w.rows == len(ref.per_context) and not list(tmp_path.glob(".*partial"))
    pd.testing.assert_frame_equal(got, ref.per_context, check_dtype=False, check_exact=fmt == "parquet", rtol=1e-9)


def test_writer_leaves_nothing_on_error(tmp_path):
    path = tmp_path / "rows.csv"
    with pytest.raises(RuntimeError):
        with PerContextWriter(path, "csv") as w:
            w(pd.DataFrame({"x": [1]}))
            raise RuntimeError("boom")
    assert not path.exists() and not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------------ CLI
def _run(args, capsys):
    from behavsim.cli import main

    rc = main(["compare", *args])
    return rc, capsys.readouterr()


def test_cli_per_context_csv_is_todays_output(tmp_path, capsys):
    """The default (no flag) and --per-context csv write the engine's per-context CSV and means."""
    tables = _tables()
    paths = _saved(tmp_path, tables)
    ref = compare(tables, "all", scores=["TMR", "CER", "BLEU4"])
    for flag in ([], ["--per-context", "csv"]):
        out = tmp_path / f"o{len(flag)}" / "out.csv"
        rc, cap = _run([*paths, "--scores", "TMR,CER,BLEU4", "-o", str(out), *flag], capsys)
        assert rc == 0, cap.err
        assert out.read_text() == _csv(ref.per_context)
        assert out.with_name("out.means.csv").read_text() == _csv(ref.means)


def test_cli_per_context_parquet_and_none(tmp_path, capsys):
    tables = _tables()
    paths = _saved(tmp_path, tables)
    ref = compare(tables, [("p1", "p0"), ("p3", "p4")], scores=["TMR", "CER"])
    out = tmp_path / "p" / "out.parquet"
    rc, cap = _run([*paths, "--scores", "TMR", "CER", "--pair", "p1,p0", "--pair", "p3,p4", "-o", str(out)], capsys)
    assert rc == 0, cap.err  # the suffix chooses Parquet
    pd.testing.assert_frame_equal(pd.read_parquet(out), ref.per_context, check_exact=True)
    out = tmp_path / "n" / "out.csv"
    rc, cap = _run([*paths, "--scores", "TMR", "--per-context", "none", "-o", str(out)], capsys)
    assert rc == 0, cap.err
    assert not out.exists() and out.with_name("out.means.csv").exists()
    assert "per-context values: not written" in cap.out


def test_cli_matrix_without_dir_goes_beside_output(tmp_path, capsys):
    tables = _tables()
    paths = _saved(tmp_path, tables)
    out = tmp_path / "m" / "out.csv"
    rc, cap = _run([*paths, "--scores", "TMR", "--matrix", "-o", str(out)], capsys)
    assert rc == 0, cap.err
    m = pd.read_csv(tmp_path / "m" / "out.matrix" / "TMR.csv", index_col=0)
    assert m.shape == (5, 5) and not out.exists()  # with --matrix, per-context rows only when asked
    rc, cap = _run([*paths, "--scores", "TMR", "--matrix", "--matrix-format", "parquet", "-o", str(out)], capsys)
    assert rc == 0, cap.err
    pq = pd.read_parquet(tmp_path / "m" / "out.matrix" / "TMR.parquet")
    np.testing.assert_array_equal(pq.to_numpy(), m.to_numpy())  # CSV matrices keep every bit
    assert list(pq.index) == list(m.index)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--per-context", "csv"], "--per-context csv needs -o"),
        (["--per-context", "parquet", "-o", "x.csv"], "x.csv.*parquet"),
        (["--per-context", "csv", "-o", "x.parquet"], "x.parquet.*csv"),
        (["--matrix"], "--matrix needs a folder"),
    ],
)
def test_cli_per_context_bad_input(tmp_path, capsys, args, message):
    paths = _saved(tmp_path, _tables())
    rc, cap = _run([*paths, "--scores", "TMR", *args], capsys)
    assert rc == 2 and "Traceback" not in cap.err
    assert re.search(message, cap.err), cap.err


def test_cli_says_when_a_job_writes_millions_of_rows(tmp_path, capsys, monkeypatch):
    import behavsim.cli as cli

    monkeypatch.setattr(cli, "MANY_ROWS", 10)
    paths = _saved(tmp_path, _tables())
    rc, cap = _run([*paths, "--scores", "TMR", "-o", str(tmp_path / "o.csv")], capsys)
    assert rc == 0 and "60 per-context rows" in cap.err and "--per-context none" in cap.err
