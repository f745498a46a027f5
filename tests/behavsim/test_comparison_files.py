"""Comparison.save and Comparison.load: the files of `behavsim compare`, written and read by the library."""

import json

import numpy as np
import pandas as pd
import pytest
from test_engine import FP
from test_matrix import _saved, _tables

from behavsim import Comparison, ConfigError, ResponseTable, TableFormatError, compare
from behavsim.cli import main

SCORES = ["TMR", "DMR", "CER", "BLEU4"]


def _text_only():
    """A policy that answers with text alone: the semantic scores do not apply beside it (n_na).
    Its id sorts first, though it comes last."""
    prompts = ["what food", "which area", "bye", "what price", "hello", "goodbye"]
    return ResponseTable(policy={"id": "a5"}, context_fingerprint=FP, acts=[None] * 6, prompts=prompts)


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# (the command's options after the tables, compare's pairs and options, save's path and options); {d}: the folder
CASES = {
    "rows-csv": (["-o", "{d}/r.csv"], "all", {}, "r.csv", {}),
    "rows-parquet-explicit-pairs": (
        ["-o", "{d}/sub/r.parquet", "--pair", "p1,p0", "--pair", "p3,a5"],
        [("p1", "p0"), (3, 5)],
        {},
        "sub/r.parquet",
        {},
    ),
    "rows-and-matrices": (
        ["-o", "{d}/r.csv", "--matrix", "--per-context", "csv"],
        "all",
        {"matrix": True},
        "r.csv",
        {},
    ),
    "bare-matrix-means-only": (
        ["-o", "{d}/r.csv", "--matrix"],
        "all",
        {"matrix": True, "per_context": False},
        "r.csv",
        {},
    ),
    "means-only": (["-o", "{d}/r.csv", "--per-context", "none"], "all", {"per_context": False}, "r.csv", {}),
    "matrices-alone-parquet": (
        ["--matrix", "{d}/m", "--matrix-format", "parquet"],
        None,
        {"matrix": True},
        None,
        {"matrix_dir": "m", "matrix_format": "parquet"},
    ),
    "matrix-folder-and-rows": (
        ["-o", "{d}/r.csv", "--matrix", "{d}/m", "--pairs", "all"],
        "all",
        {"matrix": True},
        "r.csv",
        {"matrix_dir": "m"},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_command_writes_what_save_writes(tmp_path, capsys, monkeypatch, case):
    """Byte for byte, heatmaps included; the tables named as given (``./p0.jsonl`` stays so)."""
    args, pairs, options, path, save_options = CASES[case]
    monkeypatch.chdir(tmp_path)
    paths = [f"./{p.rsplit('/', 1)[1]}" for p in _saved(tmp_path, [*_tables(), _text_only()])]
    cli, lib = tmp_path / "cli", tmp_path / "lib"
    rc = main(["compare", *paths, "--scores", *SCORES, *[a.format(d=cli) for a in args]])
    assert rc == 0, capsys.readouterr().err
    comp = compare(paths, pairs, scores=SCORES, **options)
    assert comp.table_files == paths
    save = {k: (lib / v if k == "matrix_dir" else v) for k, v in save_options.items()}
    files = comp.save(None if path is None else lib / path, **save)
    written = _files(cli)
    assert written == _files(lib)
    assert (files.meta is not None) == (path is not None) and (files.matrix_dir is not None) == ("matrix" in options)
    if files.matrix_dir is not None:
        assert files.n_na is not None and (files.n_na.name in {"n_na.csv", "n_na.parquet"})
        assert set(files.matrices) == set(files.figures) == set(SCORES)
    if path is not None:
        meta = json.loads(files.meta.read_text())
        assert meta["tables"] == paths and meta["pairs"] == (pairs if isinstance(pairs, str) else ["p1,p0", "p3,a5"])


def test_load_gives_back_what_was_saved(tmp_path):
    """The rows and means as written (ten significant digits), the matrices and counts exactly;
    saving what was loaded writes the same bytes again."""
    tables = [*_tables(), _text_only()]
    comp = compare(tables, [("p0", "p1"), ("p3", "a5")], scores=SCORES, matrix=True, answers=True)
    comp.save(tmp_path / "a" / "r.csv")
    back = Comparison.load(tmp_path / "a" / "r.csv")
    assert back.pairs == [("p0", "p1"), ("p3", "a5")] and back.table_files == [None] * len(tables)
    assert list(back.signatures.items()) == list(comp.signatures.items())  # the scores' order too
    assert list(back.policies.items()) == list(comp.policies.items()) and list(comp.policies)[-1] == "a5"
    assert back.context_fingerprint == comp.context_fingerprint and back.n_contexts == comp.n_contexts == 6
    assert back.n_rows == len(comp.per_context) == 12
    pd.testing.assert_frame_equal(back.per_context, comp.per_context, check_exact=False, rtol=1e-9)
    pd.testing.assert_frame_equal(back.means, comp.means, check_exact=False, rtol=1e-9)
    for name in SCORES:
        pd.testing.assert_frame_equal(back.matrices[name], comp.matrices[name], check_exact=True)
        pd.testing.assert_frame_equal(back.n_missing[name], comp.n_missing[name], check_exact=True)
    assert set(back.n_na) == set(comp.n_na) == {"TMR", "DMR", "CER"}
    for name in back.n_na:
        pd.testing.assert_frame_equal(back.n_na[name], comp.n_na[name], check_exact=True)
    assert back.n_na["TMR"].loc["a5", "p0"] == 6  # text only beside p0's acts: TMR applies nowhere
    back.save(tmp_path / "b" / "r.csv")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_load_the_matrices_alone_and_parquet_rows(tmp_path):
    tables = _tables()
    alone = compare(tables, None, scores=["TMR"], matrix=True)
    alone.save(None, matrix_dir=tmp_path / "m", matrix_format="parquet")
    back = Comparison.load(None, matrix_dir=tmp_path / "m")
    assert back.pairs is None and back.per_context is None and back.means.empty
    pd.testing.assert_frame_equal(back.matrices["TMR"], alone.matrices["TMR"], check_exact=True)
    rows = compare(tables, "all", scores=["TMR", "BLEU4"])
    rows.save(tmp_path / "r.parquet")
    back = Comparison.load(tmp_path / "r.parquet")
    pd.testing.assert_frame_equal(back.per_context, rows.per_context, check_exact=True)
    assert back.matrices is None and back.pairs == "all"


def test_save_and_load_refuse_in_one_line(tmp_path):
    comp = compare(_tables(), "all", scores=["TMR"])
    with pytest.raises(ConfigError, match="needs a path"):
        comp.save(None)
    with pytest.raises(ConfigError, match="matrix_format"):
        comp.save(tmp_path / "r.csv", matrix_format="xlsx")
    with pytest.raises(TableFormatError, match=r"r\.meta\.json: not found"):
        Comparison.load(tmp_path / "r.csv")
    comp.save(tmp_path / "r.csv")
    (tmp_path / "r.meta.json").write_text("{not json")
    with pytest.raises(TableFormatError, match=r"r\.meta\.json: damaged JSON"):
        Comparison.load(tmp_path / "r.csv")
    (tmp_path / "r.meta.json").write_text('{"signatures": {}}')
    with pytest.raises(TableFormatError, match="not the signatures of a saved comparison"):
        Comparison.load(tmp_path / "r.csv")
    with pytest.raises(ConfigError, match="load needs"):
        Comparison.load(None)
    assert np.isfinite(comp.means["TMR"]).all()


def test_heatmaps_drawn_on_two_cores_are_the_bytes_drawn_in_one_process(tmp_path, monkeypatch):
    """Several heatmaps are drawn by a pool of a process per core; the files are those one
    process draws (a machine of one core), and a pool's own worker draws them itself."""
    import os
    from types import SimpleNamespace

    import behavsim._comparison as comparison  # private: the drawing step is what this test checks

    comp = compare(_tables(), None, scores=SCORES, matrix=True)
    drawn = []
    real = comparison.LocalExecutor.map
    monkeypatch.setattr(
        comparison.LocalExecutor, "map", lambda self, *a, **k: drawn.append(self.workers) or real(self, *a, **k)
    )
    cores = os.cpu_count()
    comp.save(tmp_path / "two" / "r.csv")
    with monkeypatch.context() as m:
        m.setattr(comparison.mp, "current_process", lambda: SimpleNamespace(daemon=True))  # a pool's worker
        comp.save(tmp_path / "worker" / "r.csv")
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    comp.save(tmp_path / "one" / "r.csv")
    assert drawn == [cores, 1, 1]
    two, one = _files(tmp_path / "two"), _files(tmp_path / "one")
    assert two == one == _files(tmp_path / "worker") and sum(k.endswith(".png") for k in two) == len(SCORES)


def test_reading_a_table_pauses_the_garbage_collector_and_restores_it(tmp_path):
    import gc

    from behavsim._io import gc_paused  # private: the pause itself is what this test checks

    path = _saved(tmp_path, _tables()[:1])[0]
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    ResponseTable.load(path)
    assert gc.isenabled()
    (tmp_path / "bad.jsonl").write_text('{"format": "x"}\n{"i": 0}\n')
    with pytest.raises(TableFormatError):
        ResponseTable.load(tmp_path / "bad.jsonl")
    assert gc.isenabled()  # restored after an error too
    gc.disable()
    try:
        ResponseTable.load(path)
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()
