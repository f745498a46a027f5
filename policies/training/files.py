"""A training run's files: trial folders and checkpoint names, ``metrics.csv`` (its columns,
written only when changed and read back), the run lock, and the clean-up of partial files.

A run folder ``DIR`` holds ``DIR/<reward>-seed<seed>/`` per trial with ``ckpt-NNNNNN.npz`` files
(:mod:`policies.gp.checkpoint`) and ``metrics.csv``, and ``DIR/metrics.csv`` (see
:mod:`policies.training.train`). Every file is written atomically (a temporary file beside it,
renamed), so a killed run leaves whole files and temporary ones this module removes.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from pathlib import Path
from typing import IO, Any

from behavsim import ConfigError

__all__ = [
    "METRIC_COLUMNS",
    "RunLocked",
    "RunLock",
    "trial_name",
    "checkpoint_path",
    "checkpoint_dialogues",
    "list_checkpoints",
    "trial_files",
    "row_from_meta",
    "read_metrics",
    "write_metrics",
    "write_if_changed",
    "remove_partial_files",
]


METRIC_COLUMNS = (
    "policy",
    "reward",
    "seed",
    "dialogues",
    "tsr",
    "aiq",
    "adl",
    "mean_reward",
    "train_tsr",
    "train_mean_reward",
    "dictionary_size",
    "train_seconds",
    "wall_seconds",
)


_CKPT_RE = re.compile(r"^ckpt-(\d{6,})\.npz$")


_TMP_RE = re.compile(r"^\.(ckpt-\d{6,}\.npz|metrics\.csv)\.tmp\d+$")


def trial_name(reward: str, seed: int) -> str:
    return f"{reward}-seed{int(seed)}"


def checkpoint_path(trial_dir: str | os.PathLike, dialogues: int) -> Path:
    return Path(trial_dir) / f"ckpt-{int(dialogues):06d}.npz"


def checkpoint_dialogues(name: str) -> int | None:
    """The training dialogues a checkpoint file name (``ckpt-NNNNNN.npz``) records, or ``None``
    when ``name`` is not a checkpoint's."""
    m = _CKPT_RE.match(name)
    return int(m.group(1)) if m else None


def list_checkpoints(trial_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(dialogues, path)`` of the checkpoint files of a trial folder, in order."""
    d = Path(trial_dir)
    if not d.is_dir():
        return []
    out = []
    for p in d.iterdir():
        n = checkpoint_dialogues(p.name)
        if n is not None:
            out.append((n, p))
    return sorted(out)


def row_from_meta(meta: dict[str, Any], wall: float | None = None, train_s: float | None = None) -> dict[str, Any]:
    """The ``metrics.csv`` row a checkpoint's metadata records (timings given: a checkpoint keeps none)."""
    t = meta["training"]
    return {
        "policy": t["policy"],
        "reward": t["reward"],
        "seed": t["seed"],
        "dialogues": t["dialogues"],
        **t["eval"],
        "train_tsr": t["train"]["tsr"],
        "train_mean_reward": t["train"]["mean_reward"],
        "dictionary_size": t["dictionary_size"],
        "train_seconds": train_s,
        "wall_seconds": wall,
    }


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return str(v)


def write_metrics(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as a ``metrics.csv`` (columns :data:`METRIC_COLUMNS`, blanks for ``None``), written
    with :func:`write_if_changed`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(METRIC_COLUMNS)
    for r in rows:
        w.writerow([_fmt(r.get(c)) for c in METRIC_COLUMNS])
    write_if_changed(path, buf.getvalue())


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` atomically, unless the file holds it already (a resumed run rewrites nothing)."""
    data = text.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


_INT_COLS = {"seed", "dialogues", "dictionary_size"}


_STR_COLS = {"policy", "reward"}


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Rows of a ``metrics.csv`` written by the runner (numbers parsed, blanks → None)."""
    path = Path(path)
    rows = []
    with open(path, newline="", encoding="utf-8") as fh:
        for raw in csv.DictReader(fh):
            row: dict[str, Any] = {}
            for k, v in raw.items():
                if k in _STR_COLS:
                    row[k] = v
                elif v in ("", None):
                    row[k] = None
                elif k in _INT_COLS:
                    row[k] = int(v)
                else:
                    row[k] = float(v)
            rows.append(row)
    return rows


class RunLocked(ConfigError):
    """Another process is running a training in the same folder."""


class RunLock:
    """Advisory lock on ``DIR/.lock`` (``flock``: released by the OS when the process dies)."""

    def __init__(self, out: Path) -> None:
        self.path = out / ".lock"
        self.fh: IO[str] | None = None

    def __enter__(self) -> "RunLock":
        try:
            import fcntl  # POSIX only
        except ImportError:  # pragma: no cover - not POSIX: no locking
            return self
        self.fh = fh = open(self.path, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip()[:20]
            fh.close()
            self.fh = None
            raise RunLocked(
                f"{self.path.parent} is in use by another training process"
                + (f" (pid {holder})" if holder.isdigit() else "")
                + f": wait for it to finish or stop it (lock {self.path})"
            ) from None
        # The lock dies with this process (the OS releases it; workers die with their parent), so a
        # .lock file left by a killed run is simply taken over. It records who holds it.
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fh is not None:
            self.fh.close()  # releases the lock


def remove_partial_files(out: Path, names: list[str]) -> None:
    """The temporary files of trials stopped while writing (their workers are gone)."""
    for name in names:
        tdir = out / name
        if tdir.is_dir():
            for p in tdir.iterdir():
                if _TMP_RE.match(p.name):
                    p.unlink(missing_ok=True)


def trial_files(tdir: Path) -> dict[str, bytes]:
    """The files of a trial folder a trial resumes from: its checkpoints and ``metrics.csv``."""
    if not tdir.is_dir():
        return {}
    names = sorted(p.name for p in tdir.iterdir() if _CKPT_RE.match(p.name) or p.name == "metrics.csv")
    return {n: (tdir / n).read_bytes() for n in names}
