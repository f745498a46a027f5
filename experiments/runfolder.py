"""Paths inside a study's run folder: stored relative to the folder, resolved against it when read.

A run folder may be copied or moved (to a colleague, to a cluster's disk) and resume there with
nothing recomputed, so nothing stored inside it names a file by where the folder happened to be:

* the response index (``responses/<set>/index.json``) names each policy by its spec with the
  checkpoint path relative to the run folder (``checkpoint:train/ts-seed0/ckpt-000100.npz:nlg_seed=0``)
  and says so (``"__paths__": "run"``);
* the ``path.file`` of a checkpoint in a response table's policy metadata, in a collected context
  set's ``sources`` (and the parts of a union) and in the behaviour map's and the robustness
  probe's metadata, and the robustness probe's context-set ``source``, are relative to the run
  folder (POSIX separators); a path outside the folder is kept as it was given.

Run folders written before this (absolute paths, or paths relative to the directory the study ran
in) are read too: an index without ``"__paths__"`` has its keys mapped to the run-relative form —
a path that lies in this folder directly, one that ended in ``train/<trial>/<file>`` by that tail
(a moved folder); the response tables' recorded checkpoint digests decide whether a mapped table
is still that checkpoint's (see :func:`table_matches_checkpoint`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from behavsim import TableFormatError
from behavsim.io import atomic_path, file_digest, read_json_checked

__all__ = [
    "TRAIN_RESULTS",
    "recorded_problems",
    "PATHS_KEY",
    "PATHS_RUN",
    "relative_path",
    "relative_meta",
    "index_key",
    "spec_checkpoint",
    "read_index_keys",
    "table_matches_checkpoint",
    "write_csv",
]

#: The index entry saying how its keys name files; ``"run"``: relative to the run folder.
PATHS_KEY = "__paths__"
PATHS_RUN = "run"

#: Metadata keys whose string values are file paths (``path.file`` of a policy, ``source`` of a
#: context set).
_PATH_KEYS = ("file", "source")


def _abs(path: str | os.PathLike) -> str:
    return os.path.normpath(os.path.abspath(os.fspath(path)))


def relative_path(path: str | os.PathLike, run: Path) -> str | None:
    """``path`` relative to the run folder, with POSIX separators, when it lies inside it (an
    absolute path, or one relative to the working directory); else None."""
    p, root = _abs(path), _abs(run)
    try:
        rel = os.path.relpath(p, root)
    except ValueError:  # another drive (Windows)
        return None
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return None
    return PurePosixPath(*Path(rel).parts).as_posix()


def relative_meta(meta: Any, run: Path) -> Any:
    """A copy of JSON-like metadata with every ``file``/``source`` path inside the run folder made
    relative to it (other values, and paths outside the folder, unchanged)."""
    if isinstance(meta, Mapping):
        out = {}
        for k, v in meta.items():
            if k in _PATH_KEYS and isinstance(v, str) and v:
                rel = relative_path(v, run)
                out[k] = v if rel is None else rel
            else:
                out[k] = relative_meta(v, run)
        return out
    if isinstance(meta, list):
        return [relative_meta(v, run) for v in meta]
    return meta


def _split_checkpoint_spec(spec: str) -> tuple[str, str, str] | None:
    """``(prefix, path, options)`` of a checkpoint spec as the study writes them
    (``checkpoint:PATH:nlg_seed=N`` or a bare ``PATH.npz``); None for another spec."""
    prefix = "checkpoint:" if spec.startswith("checkpoint:") else ""
    rest = spec[len(prefix) :]
    options = ""
    head, sep, tail = rest.rpartition(":")
    if sep and tail.startswith("nlg_seed="):
        rest, options = head, ":" + tail
    if not rest.lower().endswith(".npz"):
        return None
    return prefix, rest, options


def spec_checkpoint(spec: str) -> str | None:
    """The checkpoint path of a policy spec as the study writes them; None for another policy."""
    parts = _split_checkpoint_spec(spec)
    return None if parts is None else parts[1]


def index_key(spec: str, run: Path) -> str:
    """The response-index key of a policy spec: checkpoint paths inside the run folder relative to
    it, and so an end-to-end checkpoint folder (``e2e:DIR``); other specs (``handcrafted``) as they are."""
    if spec.startswith("e2e:"):
        rel = relative_path(spec[len("e2e:") :], run)
        return spec if rel is None else f"e2e:{rel}"
    parts = _split_checkpoint_spec(spec)
    if parts is None:
        return spec
    prefix, path, options = parts
    rel = relative_path(path, run)
    return spec if rel is None else f"{prefix}{rel}{options}"


def _legacy_key(key: str, run: Path) -> str:
    """A key of an index written before ``__paths__`` (a path as the study was given it: absolute,
    or relative to the directory it ran in), in today's form."""
    parts = _split_checkpoint_spec(key)
    if parts is None:
        return key
    prefix, path, options = parts
    rel = relative_path(path, run)
    if rel is None:  # the folder moved: its checkpoints are train/<trial>/<file>
        tail = PurePosixPath(*Path(path).parts).parts[-3:]
        if len(tail) == 3 and tail[0] == "train":
            rel = PurePosixPath(*tail).as_posix()
    return key if rel is None else f"{prefix}{rel}{options}"


def read_index_keys(index: dict[str, Any], run: Path) -> tuple[dict[str, Any], bool]:
    """``(index in today's form, whether it was in an older form)``: keys of an index without
    ``__paths__`` are mapped to run-relative ones (see the module doc)."""
    if index.get(PATHS_KEY) == PATHS_RUN:
        return index, False
    out: dict[str, Any] = {PATHS_KEY: PATHS_RUN}
    for k, v in index.items():
        if k == PATHS_KEY:
            continue
        out.setdefault(k if k.startswith("__") else _legacy_key(k, run), v)
    return out, True


def table_matches_checkpoint(policy: Mapping[str, Any], checkpoint: Path, digest: str | None) -> bool:
    """Whether a response table's policy metadata was made from the checkpoint whose file digest
    is ``digest``: true when the table records no digest (another kind of policy) or the same."""
    recorded = policy.get("path", {}).get("sha256") if isinstance(policy.get("path"), Mapping) else None
    if recorded is None or not str(checkpoint).lower().endswith(".npz"):
        return True
    return recorded == digest


#: The results the training stage writes (every other file in results/ is the compare stage's).
TRAIN_RESULTS = ("metrics.csv", "table1.csv")


def recorded_problems(run: Path) -> list[str]:
    """What is wrong with the files ``state.json`` records (one phrase per file: ``results/seeds.csv
    is missing``, ``figures/x.svg was changed since it was written (...)``), in stage order; a
    damaged ``state.json`` is one problem. Empty for a folder without ``state.json``."""
    path = run / "state.json"
    if not path.exists():
        return []
    try:
        data = read_json_checked(path)
    except TableFormatError:
        return ["state.json is damaged, so its results cannot be checked"]
    problems = []
    for entry in data.values():
        outputs = entry.get("outputs") if isinstance(entry, dict) else None
        if not isinstance(outputs, dict):
            continue
        for rel, digest in sorted(outputs.items()):
            if not (run / rel).is_file():
                problems.append(f"{rel} is missing")
            elif file_digest(run / rel) != digest:
                problems.append(f"{rel} was changed since the study wrote it (truncated, edited or damaged)")
    return problems


def write_csv(df: Any, path: Path) -> None:
    """A results table (a pandas DataFrame) written atomically, without its index, floats in their
    shortest round-trip repr: the CSVs hold the exact values."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)
