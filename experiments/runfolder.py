"""A study's run folder as one object, :class:`RunFolder`: where each file lives, which stages are
done (``state.json``), the manifest, the context sets and response tables kept there, and the
paths and keys stored inside. The stages read and write the folder through it alone.

A run folder may be copied or moved (to a colleague, to a cluster's disk) and resume there with
nothing recomputed, so nothing stored inside it names a file by where the folder happened to be:

* the response index (``responses/<set>/index.json``) names each policy by its spec with the
  checkpoint path relative to the run folder (``checkpoint:train/ts-seed0/ckpt-000100.npz:nlg_seed=0``)
  and says so (``"__paths__": "run"``);
* the ``path.file`` of a checkpoint in a response table's policy metadata, in a collected context
  set's ``sources`` (and the parts of a union) and in the behaviour map's and the robustness
  probe's metadata, and the robustness probe's context-set ``source``, are relative to the run
  folder (POSIX separators); a path outside the folder is kept as it was given.

Folders written by earlier versions (absolute paths in the indexes, keys beside the sets, ...) are
brought to today's form in one place, before any other stage: :mod:`experiments.stages.legacy`.
The layout is documented in ``docs/report.md``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from behavsim import ConfigError, ContextSet, ResponseTable, TableFormatError
from behavsim.io import atomic_path, file_digest, read_json_checked, write_json_checked
from policies.training.train import list_checkpoints, trial_name

__all__ = [
    "RunFolder",
    "ResponseStore",
    "TRAIN_RESULTS",
    "RESULT_COLUMNS",
    "PATHS_KEY",
    "PATHS_RUN",
    "split_checkpoint_spec",
    "spec_checkpoint",
    "write_csv",
]

#: The index entry saying how its keys name files; ``"run"``: relative to the run folder.
PATHS_KEY = "__paths__"
PATHS_RUN = "run"

#: The results the training stage writes (every other file in results/ is a later stage's).
TRAIN_RESULTS = ("metrics.csv", "table1.csv")

#: The columns each result file of the study must have (the report refuses one without them).
RESULT_COLUMNS: dict[str, tuple[str, ...]] = {
    "table1.csv": ("dialogues", "reward", "n_seeds", "tsr", "aiq", "adl"),
    "metrics.csv": ("policy", "reward", "seed", "dialogues", "tsr", "aiq", "adl"),
    "convergence.csv": ("context_set", "reward", "seed", "checkpoint", "a", "b", "n"),
    "seeds.csv": ("context_set", "reward", "checkpoint", "pair", "a", "b", "n"),
    "rewards.csv": ("context_set", "pair", "a", "b", "n"),
    "policies.csv": ("context_set", "a", "b", "n"),
    "per_turn.csv": ("context_set", "reward", "pair", "turn", "n"),
    "slices.csv": ("kind", "context_set", "pair", "slice", "value", "n"),
    "disagreements.csv": (
        "comparison",
        "rank",
        "context",
        "context_id",
        "summary",
        "turn",
        "act_a",
        "act_b",
        "prompt_a",
        "prompt_b",
    ),
}

#: Metadata keys whose string values are file paths (``path.file`` of a policy, ``source`` of a
#: context set).
_PATH_KEYS = ("file", "source")


def _note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def _abs(path: str | os.PathLike) -> str:
    return os.path.normpath(os.path.abspath(os.fspath(path)))


def split_checkpoint_spec(spec: str) -> tuple[str, str, str] | None:
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


def spec_checkpoint(spec: str) -> Path | None:
    """The checkpoint file of a policy spec the study writes; None for another policy."""
    parts = split_checkpoint_spec(spec)
    return None if parts is None else Path(parts[1])


def table_matches_checkpoint(policy: Mapping[str, Any], checkpoint: Path, digest: str | None) -> bool:
    """Whether a response table's policy metadata was made from the checkpoint whose file digest
    is ``digest``: true when the table records no digest (another kind of policy) or the same."""
    recorded = policy.get("path", {}).get("sha256") if isinstance(policy.get("path"), Mapping) else None
    if recorded is None or not str(checkpoint).lower().endswith(".npz"):
        return True
    return recorded == digest


def write_csv(df: Any, path: Path) -> None:
    """A results table (a pandas DataFrame) written atomically, without its index, floats in their
    shortest round-trip repr: the CSVs hold the exact values."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


class RunFolder:
    """The run folder ``root`` of one study (see the module doc and ``docs/report.md``).

    Besides the files, it holds what the stages of this run built or read from it — the context
    sets (:attr:`context_sets`, in the order they were built), the response tables
    (:meth:`responses`), the result tables written (:meth:`read_csv` returns them without reading
    them back) and the figures drawn (:attr:`figures`, as the manifest lists them)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        #: the context sets of this run, by name, in the order they were built
        self.context_sets: dict[str, ContextSet] = {}
        #: the figures drawn in this run: ``{"file": run-relative path, "title": ...}``
        self.figures: list[dict[str, str]] = []
        self._state: dict[str, Any] | None = None
        self._stores: dict[str, ResponseStore] = {}
        self._frames: dict[str, pd.DataFrame] = {}
        self._digests: dict[tuple[str, int, int], str | None] = {}

    # ------------------------------------------------------------------------------ places
    def path(self, rel: str) -> Path:
        """``root / rel`` (``rel``: a path relative to the run folder, POSIX separators)."""
        return self.root / rel

    def trial_dir(self, reward: str, seed: int) -> Path:
        """The folder of a GP-SARSA trial: ``train/<reward>-seed<seed>``."""
        return self.root / "train" / trial_name(reward, seed)

    def checkpoints(self, reward: str, seed: int) -> list[Path]:
        """The checkpoints of a GP-SARSA trial, in training order."""
        return [p for _, p in list_checkpoints(self.trial_dir(reward, seed))]

    def files(self, patterns: Iterable[str]) -> list[Path]:
        """The files that ``patterns`` name (globs relative to the folder; ``dir/``: every file
        directly in it), sorted; never a hidden file (one being written)."""
        found: set[Path] = set()
        for pattern in patterns:
            if pattern.endswith("/"):
                folder = self.root / pattern
                candidates: Iterable[Path] = folder.iterdir() if folder.is_dir() else ()
            else:
                candidates = self.root.glob(pattern)
            found.update(p for p in candidates if p.is_file() and not p.name.startswith("."))
        return sorted(found)

    def create(self, config_json: str) -> None:
        """Make the folder (or check that it holds this very study) and store its config."""
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "results").mkdir(exist_ok=True)
        (self.root / "figures").mkdir(exist_ok=True)
        cfg_path = self.root / "config.json"
        if cfg_path.exists() and cfg_path.read_text() != config_json:
            raise ConfigError(
                f"{self.root} holds a study with another configuration (see {cfg_path}); use another folder"
            )
        cfg_path.write_text(config_json)

    # ------------------------------------------------------------------- stages done
    @property
    def state(self) -> dict[str, Any]:
        """``state.json`` (checksummed): per stage ``{"key": <hash of its inputs>, "outputs":
        {path: digest}}``; the stages redone on every run are recorded with the key ``"recorded"``.
        A damaged file counts as no stage done."""
        if self._state is None:
            self._state = {}
            path = self.root / "state.json"
            if path.exists():
                try:
                    self._state = read_json_checked(path)
                except TableFormatError as exc:
                    _note(f"{exc}; the stages it recorded are done again")
        return self._state

    def save_state(self) -> None:
        write_json_checked(self.root / "state.json", self.state)

    def done(self, stage: str, key: str) -> bool:
        """Whether ``stage`` is done with inputs ``key``: the same key, and every output it wrote
        still there with its digest."""
        entry = self.state.get(stage)
        if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("outputs"), dict):
            return False
        for rel, digest in sorted(entry["outputs"].items()):
            if file_digest(self.root / rel) != digest:
                what = "missing" if not (self.root / rel).exists() else "damaged (it changed since it was written)"
                _note(f"{self.root / rel} is {what}; stage {stage!r} is done again")
                return False
        return True

    def mark(self, stage: str, key: str, outputs: Sequence[Path] = ()) -> None:
        """Record ``stage`` as done with inputs ``key`` and the digest of every file it wrote."""
        digests = {str(p.relative_to(self.root)): file_digest(p) for p in outputs}
        self.state[stage] = {"key": key, "outputs": dict(sorted(digests.items()))}
        self.save_state()

    def record(self, stage: str, outputs: Sequence[Path]) -> None:
        """The digests of the files a stage that runs every time wrote (training results, figures):
        ``behavsim report`` checks every recorded file."""
        self.mark(stage, "recorded", [p for p in outputs if p.is_file()])

    def problems(self) -> list[str]:
        """What is wrong with the files ``state.json`` records (one phrase per file: ``results/seeds.csv
        is missing``, ``figures/x.svg was changed since it was written (...)``), in stage order; a
        damaged ``state.json`` is one problem. Empty for a folder without ``state.json``."""
        path = self.root / "state.json"
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
                if not (self.root / rel).is_file():
                    problems.append(f"{rel} is missing")
                elif file_digest(self.root / rel) != digest:
                    problems.append(f"{rel} was changed since the study wrote it (truncated, edited or damaged)")
        return problems

    # --------------------------------------------------------------------- the manifest
    def read_manifest(self) -> dict[str, Any]:
        """``manifest.json`` as the study wrote it; empty when absent or damaged (it is written again)."""
        path = self.root / "manifest.json"
        if not path.exists():
            return {}
        try:
            return read_json_checked(path)
        except TableFormatError as exc:
            _note(f"{exc}; it is written again")
            return {}

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        write_json_checked(self.root / "manifest.json", manifest)

    # ------------------------------------------------------------- paths stored inside
    def relative(self, path: str | os.PathLike) -> str | None:
        """``path`` relative to the run folder, with POSIX separators, when it lies inside it (an
        absolute path, or one relative to the working directory); else None."""
        p, root = _abs(path), _abs(self.root)
        try:
            rel = os.path.relpath(p, root)
        except ValueError:  # another drive (Windows)
            return None
        if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
            return None
        return PurePosixPath(*Path(rel).parts).as_posix()

    def relative_meta(self, meta: Any) -> Any:
        """A copy of JSON-like metadata with every ``file``/``source`` path inside the run folder
        made relative to it (other values, and paths outside the folder, unchanged)."""
        if isinstance(meta, Mapping):
            out = {}
            for k, v in meta.items():
                rel = self.relative(v) if k in _PATH_KEYS and isinstance(v, str) and v else None
                out[k] = rel if rel is not None else self.relative_meta(v)
            return out
        if isinstance(meta, list):
            return [self.relative_meta(v) for v in meta]
        return meta

    def index_key(self, spec: str) -> str:
        """The response-index key of a policy spec: checkpoint paths inside the run folder relative
        to it, and so an end-to-end checkpoint folder (``e2e:DIR``); other specs as they are."""
        if spec.startswith("e2e:"):
            rel = self.relative(spec[len("e2e:") :])
            return spec if rel is None else f"e2e:{rel}"
        parts = split_checkpoint_spec(spec)
        if parts is None:
            return spec
        prefix, path, options = parts
        rel = self.relative(path)
        return spec if rel is None else f"{prefix}{rel}{options}"

    def checkpoint_digest(self, path: Path) -> str | None:
        """``sha256:<hex>`` of a checkpoint file (cached by path, size and modification time)."""
        try:
            st = path.stat()
        except OSError:
            return None
        key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
        if key not in self._digests:
            self._digests[key] = file_digest(path)
        return self._digests[key]

    # ---------------------------------------------------------------- context sets
    def cached_context_set(self, name: str, key: str, build: Callable[[], ContextSet]) -> ContextSet:
        """The context set ``contexts/NAME.jsonl`` when it was built from inputs ``key`` (kept in
        ``contexts/keys/NAME.key``) and loads; else ``build()`` saved there, its checkpoint paths
        relative to the folder. Either way it joins :attr:`context_sets`."""
        path = self.root / "contexts" / f"{name}.jsonl"
        # in contexts/keys/: beside the set, contexts/NAME.* would be taken for another form of it
        keyfile = self.root / "contexts" / "keys" / f"{name}.key"
        cs = None
        if path.exists() and keyfile.exists() and keyfile.read_text() == key:
            try:
                cs = ContextSet.load(path)
            except TableFormatError as exc:
                _note(f"{exc}; building it again")
        if cs is None:
            built = build()
            built.meta = self.relative_meta(built.meta)
            path.parent.mkdir(parents=True, exist_ok=True)
            built.save(path)
            self.write_text(f"contexts/keys/{name}.key", key)
            cs = ContextSet.load(path)
        self.context_sets[name] = cs
        return cs

    # ------------------------------------------------------------------ responses
    def responses(self, name: str) -> ResponseStore:
        """The response tables of the context set ``name`` (built or loaded in this run)."""
        if name not in self._stores:
            self._stores[name] = ResponseStore(self, name, self.context_sets[name])
        return self._stores[name]

    # -------------------------------------------------------------------- results
    def write_csv(self, rel: str, df: pd.DataFrame) -> None:
        """A result table written atomically (see :func:`write_csv`) and kept for :meth:`read_csv`."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_csv(df, path)
        self._frames[rel] = df

    def read_csv(self, rel: str) -> pd.DataFrame:
        """A result table: as written in this run, else read with its exact values."""
        if rel not in self._frames:
            self._frames[rel] = pd.read_csv(self.root / rel, float_precision="round_trip")
        return self._frames[rel]

    def write_text(self, rel: str, text: str) -> None:
        """Write atomically: a temporary file renamed into place."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")

    def add_figure(self, path: Path, title: str) -> None:
        """A figure drawn in this run (its SVG), for the manifest (the report shows it in the
        section that declares it)."""
        self.figures.append({"file": path.relative_to(self.root).as_posix(), "title": title})


class ResponseStore:
    """The response tables of one context set: ``responses/<set>/``, one table per policy and
    ``index.json``, which names each by :meth:`RunFolder.index_key` (checkpoint paths relative to
    the run folder), so a copied or moved run folder finds its tables. A table is reused only when
    it loads (its checksum holds) and, for a checkpoint, was made from a file with the
    checkpoint's digest; an index of another context set counts as empty."""

    def __init__(self, run: RunFolder, name: str, contexts: ContextSet) -> None:
        self.run = run
        self.dir = run.root / "responses" / name
        self.dir.mkdir(parents=True, exist_ok=True)
        #: the tables found or made in this run, by policy spec
        self.tables: dict[str, ResponseTable] = {}
        index: dict[str, Any] = {}
        if (self.dir / "index.json").exists():
            try:
                index = read_json_checked(self.dir / "index.json")
            except TableFormatError as exc:
                _note(f"{exc}; its tables are made again")
        if index.get("__fingerprint__") != contexts.fingerprint:
            index = {"__fingerprint__": contexts.fingerprint, PATHS_KEY: PATHS_RUN}
        self.index = index

    def key(self, spec: str, repeat: int = 1) -> str:
        return self.run.index_key(spec) + (f"#repeat={repeat}" if repeat > 1 else "")

    def find(self, spec: str, repeat: int = 1) -> ResponseTable | None:
        """The stored table of ``spec`` (asked ``repeat`` times), or None when it is to be made."""
        name = self.index.get(self.key(spec, repeat))
        if not isinstance(name, str) or not (self.dir / name).exists():
            return None
        try:
            table = ResponseTable.load(self.dir / name)
        except TableFormatError as exc:  # damaged: made again, exactly this one
            _note(f"{exc}; responding again")
            return None
        ckpt = spec_checkpoint(spec)
        if ckpt is not None and not table_matches_checkpoint(table.policy, ckpt, self.run.checkpoint_digest(ckpt)):
            _note(f"{self.dir / name} was made from another {ckpt}; responding again")
            return None
        self.tables[spec] = table
        return table

    def add(self, spec: str, table: ResponseTable, repeat: int = 1) -> None:
        """Save a new table (its checkpoint paths relative to the run folder) and index it at once:
        kept if the run is interrupted."""
        name = f"{table.id}.jsonl"
        table.policy = self.run.relative_meta(table.policy)
        table.save(self.dir / name)
        self.index[self.key(spec, repeat)] = name
        write_json_checked(self.dir / "index.json", self.index)

    def load(self, spec: str, repeat: int = 1) -> ResponseTable:
        """The table of ``spec`` as saved (after :meth:`add`)."""
        self.tables[spec] = ResponseTable.load(self.dir / self.index[self.key(spec, repeat)])
        return self.tables[spec]
