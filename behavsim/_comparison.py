"""The result of :func:`behavsim.compare`, :class:`Comparison`, and its files.

:meth:`Comparison.save` writes the files ``behavsim compare`` writes (the command is a layer over
it), :meth:`Comparison.load` reads them back:

* ``PATH`` — the per-context rows (CSV, or Parquet for a ``.parquet`` path), when the comparison
  kept them (``compare(..., per_context=True)``; the command streams them there itself);
* ``<stem>.means.csv`` — the pair means; ``<stem>.meta.json`` — the context set's fingerprint,
  the scores' signatures, the policies' metadata, the pairs asked for and the tables' files;
* with the matrices, a folder (default ``<stem>.matrix/`` beside ``PATH``): ``<score>.csv`` (or
  ``.parquet``) per score with its heatmap (``<score>.png``, and ``.svg`` up to 12 policies),
  ``n_missing.csv`` (the contexts left out of each mean), ``n_na.csv`` (beside text-only answers:
  where the semantic scores do not apply) and ``matrix.meta.json``.

Values are written as the command writes them: the rows and the means with ten significant digits
(``%.10g``), the matrices exactly (the shortest repr of each double).
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ._errors import ConfigError, TableFormatError
from ._executor import LocalExecutor
from ._io import atomic_path, read_json_checked
from ._repr import comparison_repr
from ._sinks import ANSWER_COLUMNS, PerContextWriter
from .plots import heatmap
from .scores import list_scores, score_info

__all__ = ["Comparison", "ComparisonFiles", "MATRIX_FORMATS", "MATRIX_PAIRS"]

#: The file formats of the matrices.
MATRIX_FORMATS = ("csv", "parquet")
#: What ``matrix.meta.json`` says of the pairs of the matrices.
MATRIX_PAIRS = "all ordered pairs and self-pairs; entry [a, b] = score(a's answer, b's answer)"
#: Matrices up to this many policies get their values written into the heatmap's cells.
ANNOTATE_UP_TO = 12
#: The per-context columns read back as text (policy ids, context ids, the answers).
_TEXT_COLUMNS = ("a", "b", "context_id", *ANSWER_COLUMNS)


@dataclass(frozen=True)
class ComparisonFiles:
    """The files :meth:`Comparison.save` wrote (None: not written).

    ``matrices`` and ``figures`` map each score to its matrix file and its heatmap (PNG)."""

    per_context: Path | None = None
    means: Path | None = None
    meta: Path | None = None
    matrix_dir: Path | None = None
    matrices: dict[str, Path] = field(default_factory=dict)
    figures: dict[str, Path] = field(default_factory=dict)
    n_missing: Path | None = None
    n_na: Path | None = None
    matrix_meta: Path | None = None


@dataclass(repr=False)
class Comparison:
    """The result of :func:`behavsim.compare`.

    ``per_context``: one row per (pair, context), pair-major, with columns ``pair, a, b, context,
    context_id`` (with ``answers=True`` also ``act_a, act_b, prompt_a, prompt_b``) and one column
    per score (NaN where a value is missing); None when the rows were streamed or not asked for.
    ``means``: one row per compared pair with the mean of each score over the contexts where it is
    defined, and ``n`` (contexts) and ``n_missing_<score>`` counts (no rows with ``pairs=None``).
    ``matrices`` (with ``matrix=True``, else None): per score the P×P DataFrame indexed and
    columned by policy id, entry ``[a, b]`` the mean over the contexts of ``score(a's answer, b's
    answer)`` (row = first argument, as the ``a`` column), NaN where no context has a defined
    value; ``n_missing``: the same shape, the contexts whose value is missing; ``n_na``: for the
    semantic scores where a compared table answered with text only (else None), the same shape,
    the contexts where the score does not apply (:mod:`behavsim._sinks`). ``signatures`` maps
    each score name to its signature; ``n_rows``: the per-context rows produced (kept or
    streamed); ``n_distinct``: per score the distinct answer combinations it was computed on.
    ``pairs``: the pairs asked for, a mode of :func:`behavsim.plan_pairs` or the explicit pairs as
    policy ids (None: none, only the matrices); ``table_files``: the file of each compared table
    as it was given (None for a table made in memory).

    :meth:`save` writes it to the files of ``behavsim compare``, :meth:`load` reads them back.
    """

    per_context: pd.DataFrame | None
    means: pd.DataFrame
    signatures: dict[str, str]
    context_fingerprint: str
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    matrices: dict[str, pd.DataFrame] | None = None
    n_missing: dict[str, pd.DataFrame] | None = None
    n_na: dict[str, pd.DataFrame] | None = None
    n_contexts: int = 0
    n_rows: int = 0
    n_distinct: dict[str, int] = field(default_factory=dict)
    chunk_contexts: int | None = None
    pairs: str | list[tuple[str, str]] | None = None
    table_files: list[str | None] = field(default_factory=list)

    @property
    def score_names(self) -> list[str]:
        return list(self.signatures)

    def __repr__(self) -> str:
        return comparison_repr(self)

    def save(
        self,
        path: str | os.PathLike | None,
        *,
        matrix_dir: str | os.PathLike | None = None,
        matrix_format: str = "csv",
    ) -> ComparisonFiles:
        """Write the comparison to the files of ``behavsim compare -o PATH [--matrix [DIR]]``.

        ``path``: the per-context file (CSV, or Parquet for a ``.parquet`` suffix), written when
        the rows were kept; the pair means and the signatures go beside it (``<stem>.means.csv``,
        ``<stem>.meta.json``). None writes the matrices alone (a comparison of no pairs).
        ``matrix_dir``: the folder of the matrices (default: ``<stem>.matrix/`` beside ``path``);
        ``matrix_format``: ``csv`` or ``parquet``. Every file is written atomically. Returns the
        files written (:class:`ComparisonFiles`).
        """
        if matrix_format not in MATRIX_FORMATS:
            raise ConfigError(f"matrix_format must be one of {MATRIX_FORMATS}, got {matrix_format!r}")
        out = None if path is None else Path(path)
        if out is None and self.pairs is not None:
            raise ConfigError("save needs a path: the comparison has pair means to write beside it")
        if out is None and (self.matrices is None or matrix_dir is None):
            raise ConfigError("save needs a path, or a matrix_dir for a comparison of the matrices alone")
        files = ComparisonFiles()
        if self.matrices is not None:
            folder = Path(matrix_dir) if matrix_dir is not None else _beside(out, ".matrix")
            files = _write_matrices(self, folder, matrix_format)
        if out is not None and self.pairs is not None:
            files = _write_pair_files(self, out, files)
        return files

    @classmethod
    def load(cls, path: str | os.PathLike | None, *, matrix_dir: str | os.PathLike | None = None) -> Comparison:
        """A comparison read back from the files :meth:`save` (or ``behavsim compare``) wrote.

        ``path`` as given to :meth:`save` (its rows are read when the file is there; the means and
        the signatures beside it must be); ``matrix_dir``: the matrices' folder (default:
        ``<stem>.matrix/`` beside ``path`` when it exists); None for ``path``: the matrices alone.
        Values come back as written (rows and means with ten significant digits); ``timings``,
        ``n_distinct`` and ``chunk_contexts`` are not saved. A damaged or missing file raises
        :class:`~behavsim.TableFormatError` naming it.
        """
        out = None if path is None else Path(path)
        folder = Path(matrix_dir) if matrix_dir is not None else None
        if folder is None and out is not None and _beside(out, ".matrix").is_dir():
            folder = _beside(out, ".matrix")
        if out is None and folder is None:
            raise ConfigError("load needs the path given to save, or the matrices' folder")
        fields: dict[str, Any] = {"per_context": None}
        if folder is not None:
            fields.update(_read_matrices(folder))
        if out is not None:
            pair_fields = _read_pair_files(out, fields.get("n_contexts"))
            if "matrices" in fields:  # the matrices keep the policies' order, the means only some of it
                pair_fields["policies"] = fields["policies"]
            fields.update(pair_fields)
        else:  # no pairs: no means, as compare gives them
            names = list(fields["signatures"])
            fields["means"] = pd.DataFrame(columns=["pair", "a", "b", "n", *names, *[f"n_missing_{k}" for k in names]])
        return cls(**fields)


# ----------------------------------------------------------------------------- writing
def _beside(path: Path | None, suffix: str) -> Path:
    """``<stem><suffix>`` beside ``path`` (``out.csv`` -> ``out.means.csv``)."""
    assert path is not None
    return path.with_name(path.stem + suffix)


def _write_text(path: Path, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return path


def _json(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def _pairs_json(pairs: str | list[tuple[str, str]]) -> str | list[str]:
    """The pairs asked for as the command writes them: a mode, or ``"ID_A,ID_B"`` per pair."""
    return pairs if isinstance(pairs, str) else [f"{a},{b}" for a, b in pairs]


def _write_pair_files(comp: Comparison, out: Path, files: ComparisonFiles) -> ComparisonFiles:
    """The per-context rows (when kept), the pair means and the signatures at ``out``."""
    assert comp.pairs is not None
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = None
    if comp.per_context is not None:
        with PerContextWriter(out) as writer:  # the bytes of the command's stream, in one piece
            writer(comp.per_context)
        rows = out
    means = _beside(out, ".means.csv")
    with atomic_path(means) as tmp:
        comp.means.to_csv(tmp, index=False, float_format="%.10g")
    meta = {
        "context_fingerprint": comp.context_fingerprint,
        "signatures": comp.signatures,
        "policies": comp.policies,
        "pairs": _pairs_json(comp.pairs),
        "tables": comp.table_files,
    }
    meta_path = _write_text(_beside(out, ".meta.json"), _json(meta))
    return ComparisonFiles(**{**files.__dict__, "per_context": rows, "means": means, "meta": meta_path})


def _write_counts(counts: Mapping[str, pd.DataFrame], stem: Path, fmt: str) -> Path:
    """Count matrices (``{score: P×P frame}``) as one long table ``a, b, <score>...`` at ``stem``.csv/.parquet."""
    table = pd.DataFrame({name: df.stack() for name, df in counts.items()}).reset_index()
    path = stem.with_suffix(f".{fmt}")
    with atomic_path(path) as tmp:
        if fmt == "parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False)
    return path


def _write_matrices(comp: Comparison, folder: Path, fmt: str) -> ComparisonFiles:
    """Per score the matrix and its heatmap, the counts and ``matrix.meta.json`` in ``folder``."""
    assert comp.matrices is not None and comp.n_missing is not None
    folder.mkdir(parents=True, exist_ok=True)
    matrices = {}
    registered = set(list_scores())
    drawings = []
    for name in comp.score_names:
        path = folder / f"{name}.{fmt}"
        with atomic_path(path) as tmp:
            if fmt == "parquet":
                comp.matrices[name].to_parquet(tmp)
            else:
                comp.matrices[name].to_csv(tmp)  # shortest round-trip repr: the exact double
        lo = hi = None
        if name in registered:
            info = score_info(name)
            lo = info.lower if math.isfinite(info.lower) else None
            hi = info.upper if math.isfinite(info.upper) else None
        title = f"{name}, mean over {comp.n_contexts} contexts"
        annotate = len(comp.policies) <= ANNOTATE_UP_TO
        drawings.append((comp.matrices[name], folder / name, title, lo, hi, annotate))
        matrices[name] = path
    figures = dict(zip(comp.score_names, _draw_heatmaps(drawings)))
    # the contexts left out of each mean, every score in one long table (a, b, <score>...)
    missing = _write_counts(comp.n_missing, folder / "n_missing", fmt)
    # beside text-only answers: the contexts where each semantic score does not apply
    na = None if comp.n_na is None else _write_counts(comp.n_na, folder / "n_na", fmt)
    meta = {
        "context_fingerprint": comp.context_fingerprint,
        "n_contexts": comp.n_contexts,
        "signatures": comp.signatures,
        "policies": comp.policies,
        "pairs": MATRIX_PAIRS,
        "tables": comp.table_files,
    }
    meta_path = _write_text(folder / "matrix.meta.json", _json(meta))
    return ComparisonFiles(
        matrix_dir=folder, matrices=matrices, figures=figures, n_missing=missing, n_na=na, matrix_meta=meta_path
    )


def _heatmap(job: tuple) -> Path:
    matrix, path, title, lo, hi, annotate = job
    return heatmap(matrix, path, title, vmin=lo, vmax=hi, annotate=annotate)[0]


def _draw_heatmaps(jobs: list[tuple]) -> list[Path]:
    """The heatmaps' PNGs, drawn by a process per core when there are several (a figure is a
    fraction of a second of single-threaded drawing, most of ``compare --matrix``'s time beyond the
    engine; the bytes do not depend on the process; the executor uses no more processes than
    figures). Inline in a pool's worker, which may not start processes."""
    workers = 1 if len(jobs) < 2 or mp.current_process().daemon else os.cpu_count() or 1
    if workers > 1:
        import matplotlib.backends.backend_agg  # noqa: F401  (imported once here, not in each worker)
    return LocalExecutor(workers).map(_heatmap, jobs)


# ----------------------------------------------------------------------------- reading
def _read_table(path: Path, **options: Any) -> pd.DataFrame:
    """A CSV or Parquet file (by suffix) as a DataFrame; a damaged one raises TableFormatError."""
    try:
        if path.suffix.lower() == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, **options)
    except FileNotFoundError:
        raise TableFormatError(f"{path}: not found (a file of a saved comparison)") from None
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise TableFormatError(f"{path}: damaged file of a saved comparison ({reason})") from None


def _read_meta(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise TableFormatError(f"{path}: not found (the signatures of a saved comparison)")
    meta = read_json_checked(path)
    missing = [k for k in ("context_fingerprint", "signatures", "policies", "pairs", "tables") if k not in meta]
    if missing:
        raise TableFormatError(f"{path}: not the signatures of a saved comparison (no {', '.join(missing)})")
    return meta


def _in_order(by_name: Mapping[str, Any], order: Any) -> dict[str, Any]:
    """``by_name`` (the scores' signatures, the policies) in the order the JSON's sorted keys
    lost: the order of ``order``, names written in it (a table's score columns, its policy ids),
    then the others."""
    names = list(dict.fromkeys(str(n) for n in order if str(n) in by_name))
    return {n: by_name[n] for n in [*names, *[n for n in by_name if n not in names]]}


def _pairs_of(value: Any) -> str | list[tuple[str, str]]:
    if isinstance(value, str):
        return value
    pairs = []
    for p in value:
        a, _, b = str(p).partition(",")
        pairs.append((a, b))
    return pairs


def _read_pair_files(out: Path, n_contexts: int | None) -> dict[str, Any]:
    """The fields of a comparison from its per-context rows (when there), means and signatures."""
    meta = _read_meta(_beside(out, ".meta.json"))
    text = {c: str for c in _TEXT_COLUMNS}
    means = _read_table(_beside(out, ".means.csv"), dtype={"a": str, "b": str})
    per = _read_table(out, dtype=text) if out.is_file() else None
    if per is not None:
        for col in ANSWER_COLUMNS:
            if col in per.columns:  # as compare gives the answers: None where there is none
                per[col] = per[col].astype(object).where(per[col].notna(), None)
    if n_contexts is None:
        n_contexts = int(means["n"].max()) if len(means) and "n" in means.columns else 0
    return {
        "per_context": per,
        "means": means,
        "signatures": _in_order(meta["signatures"], means.columns),
        "context_fingerprint": meta["context_fingerprint"],
        "policies": _in_order(meta["policies"], pd.unique(means[["a", "b"]].to_numpy().ravel())),
        "n_contexts": n_contexts,
        "n_rows": 0 if per is None else len(per),
        "pairs": _pairs_of(meta["pairs"]),
        "table_files": list(meta["tables"]),
    }


def _square(long: pd.DataFrame, name: str, ids: list[str]) -> pd.DataFrame:
    """One score's P×P count matrix from the long table ``a, b, <score>...``."""
    square = long.pivot(index="a", columns="b", values=name).reindex(index=ids, columns=ids)
    square.index.name, square.columns.name = "a", "b"
    return square.astype(long[name].dtype)


def _read_matrices(folder: Path) -> dict[str, Any]:
    """The matrix fields of a comparison from the folder :meth:`Comparison.save` wrote."""
    meta = _read_meta(folder / "matrix.meta.json")
    fmt = "parquet" if (folder / "n_missing.parquet").is_file() else "csv"
    text = {"a": str, "b": str}
    missing = _read_table(folder / f"n_missing.{fmt}", dtype=text)
    signatures = _in_order(meta["signatures"], missing.columns)
    ids = _in_order(meta["policies"], pd.unique(missing["a"]))
    names = list(signatures)
    matrices = {}
    for name in names:
        m = _read_table(folder / f"{name}.{fmt}", index_col=0)
        m.index = pd.Index([str(i) for i in m.index], name="a")
        m.columns = pd.Index([str(c) for c in m.columns], name="b")
        matrices[name] = m
    na_path = folder / f"n_na.{fmt}"
    na = _read_table(na_path, dtype=text) if na_path.is_file() else None
    return {
        "signatures": signatures,
        "context_fingerprint": meta["context_fingerprint"],
        "policies": ids,
        "matrices": matrices,
        "n_missing": {n: _square(missing, n, list(ids)) for n in names},
        "n_na": None if na is None else {n: _square(na, n, list(ids)) for n in names if n in na.columns},
        "n_contexts": int(meta["n_contexts"]),
        "table_files": list(meta["tables"]),
    }
