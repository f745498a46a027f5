"""Safe, deterministic, atomic checkpoint files for GP-SARSA policies.

A checkpoint is a ``.npz`` file (a zip archive of ``.npy`` arrays, readable with
``np.load(path, allow_pickle=False)``) plus one ``meta.json`` member with the metadata as
JSON. Nothing is ever pickled. The archive is written so that the same content gives the same
bytes: members in sorted order, stored uncompressed, a fixed timestamp (1980-01-01), JSON with
sorted keys. It is written to a temporary file in the same folder and moved into place with
``os.replace``, so a reader (or a run killed while writing) never sees half a file.

``meta.json`` holds::

    {"format": "behavsim.gpsarsa", "version": 1,
     "learner": {... hyper-parameters, step counts, "rng_state": PCG64 state ...},
     "policy": {"name": ..., "summary_actions": [...], "dim": ..., "domain": ...},
     "training": {... whatever the training runner records: reward, seed, dialogues ...}}

Public API: :func:`save_checkpoint`, :func:`load_checkpoint` (→ ``GPSarsaPolicy``),
:func:`read_checkpoint` (→ learner + metadata, no domain needed), :func:`write_npz`,
:func:`read_npz`, :class:`CheckpointError`.
"""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from behavsim import BehavsimError, ConfigError
from behavsim.policy import Adapter, PolicySpec, source_info
from policies.adapters import DomainPolicyAdapter, option_domain
from policies.gp.policy import GPSarsaPolicy
from policies.gp.sarsa import GPSarsa

__all__ = [
    "FORMAT",
    "VERSION",
    "CheckpointError",
    "write_npz",
    "read_npz",
    "save_checkpoint",
    "load_checkpoint",
    "read_checkpoint",
    "read_meta",
    "policy_name",
    "checkpoint_kind",
]

FORMAT = "behavsim.gpsarsa"
VERSION = 1
_META = "meta.json"
_DATE = (1980, 1, 1, 0, 0, 0)
_ARRAYS = ("X", "actions", "alpha", "C", "Kinv", "U", "sinv")


class CheckpointError(BehavsimError, ValueError):
    """A checkpoint file is missing, corrupt, foreign or inconsistent; the message names it."""


def _member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_DATE)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    info.create_system = 3
    return info


def write_npz(path: str | os.PathLike, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> Path:
    """Write ``arrays`` and JSON ``meta`` to ``path`` atomically and byte-deterministically."""
    path = Path(path)
    for key in arrays:
        if not key.isidentifier():
            raise ValueError(f"arrays: key {key!r} is not an identifier")
    blob = json.dumps(meta, sort_keys=True, indent=1, allow_nan=False).encode("utf-8")
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
                for key in sorted(arrays):
                    arr = np.ascontiguousarray(arrays[key])
                    if arr.dtype.hasobject:
                        raise ValueError(f"arrays[{key!r}]: object arrays are not allowed")
                    buf = io.BytesIO()
                    np.lib.format.write_array(buf, arr, allow_pickle=False)
                    zf.writestr(_member(key + ".npy"), buf.getvalue())
                zf.writestr(_member(_META), blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def read_npz(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read a file written by :func:`write_npz`; any defect raises :class:`CheckpointError`."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint file not found")
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            if _META not in names:
                raise CheckpointError(f"{path}: not a behavsim checkpoint (no {_META} member)")
            meta = json.loads(zf.read(_META).decode("utf-8"))
            for name in names:
                if name == _META:
                    continue
                if not name.endswith(".npy"):
                    raise CheckpointError(f"{path}: unexpected member {name!r}")
                with zf.open(name) as fh:
                    arrays[name[:-4]] = np.lib.format.read_array(fh, allow_pickle=False)
    except CheckpointError:
        raise
    except _READ_ERRORS as err:
        raise CheckpointError(f"{path}: corrupt or unreadable checkpoint ({type(err).__name__}: {err})") from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path}: {_META} is not a JSON object")
    return arrays, meta


def read_meta(path: str | os.PathLike) -> dict[str, Any]:
    """Only the metadata of a checkpoint (cheap: the arrays are not read); checked like
    :func:`read_checkpoint` checks it."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint file not found")
    try:
        with zipfile.ZipFile(path) as zf:
            if _META not in zf.namelist():
                raise CheckpointError(f"{path}: not a behavsim checkpoint (no {_META} member)")
            meta = json.loads(zf.read(_META).decode("utf-8"))
    except CheckpointError:
        raise
    except _READ_ERRORS as err:
        raise CheckpointError(f"{path}: corrupt or unreadable checkpoint ({type(err).__name__}: {err})") from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path}: {_META} is not a JSON object")
    _check_meta(path, meta)
    return meta


def _check_meta(path: Path, meta: dict[str, Any]) -> None:
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a GP-SARSA checkpoint (format {meta.get('format')!r}, expected {FORMAT!r})")
    if meta.get("version") != VERSION:
        raise CheckpointError(
            f"{path}: unsupported checkpoint version {meta.get('version')!r} (this code reads {VERSION})"
        )
    for key in ("learner", "policy"):
        if not isinstance(meta.get(key), dict):
            raise CheckpointError(f"{path}: metadata lacks the {key!r} section")


#: What a damaged zip can raise while it is read (a flipped bit in a header can claim an unknown
#: compression method, an encrypted member, or an absurd size).
_READ_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    OSError,
    EOFError,
    ValueError,
    UnicodeDecodeError,
    NotImplementedError,
    RuntimeError,
    KeyError,
    MemoryError,
    OverflowError,
    zlib.error,
    struct.error,
)


def read_checkpoint(path: str | os.PathLike):
    """``(learner, meta)``: the :class:`~policies.gp.sarsa.GPSarsa` learner and the metadata."""

    path = Path(path)
    arrays, meta = read_npz(path)
    _check_meta(path, meta)
    missing = [k for k in _ARRAYS if k not in arrays]
    if missing:
        raise CheckpointError(f"{path}: missing arrays {missing}")
    try:
        learner = GPSarsa.from_state({k: arrays[k] for k in _ARRAYS}, meta["learner"])
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{path}: inconsistent learner state ({type(err).__name__}: {err})") from None
    return learner, meta


def save_checkpoint(path: str | os.PathLike, policy: Any, training: dict[str, Any] | None = None) -> Path:
    """Write ``policy`` (a ``GPSarsaPolicy``) and the ``training`` record to ``path``."""
    arrays, learner_meta = policy.learner.get_state()
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "learner": learner_meta,
        "policy": policy.describe(),
        "training": dict(training or {}),
    }
    return write_npz(path, arrays, meta)


def policy_name(meta: dict[str, Any]) -> str:
    """Default name of a checkpointed policy: ``gp-<reward>-seed<seed>-<dialogues>`` when the
    training record has them (e.g. ``gp-ts-seed0-40000``), else the saved policy name."""
    t = meta.get("training") or {}
    if all(k in t for k in ("reward", "seed", "dialogues")):
        return f"gp-{t['reward']}-seed{t['seed']}-{t['dialogues']}"
    return str(meta["policy"]["name"])


def load_checkpoint(path: str | os.PathLike, *, domain: Any = None, learning: bool = False, name: str | None = None):
    """The ``GPSarsaPolicy`` saved at ``path``: greedy and deterministic unless ``learning``;
    named ``name`` or :func:`policy_name` of the file (e.g. ``gp-ts-seed0-40000``)."""

    path = Path(path)
    learner, meta = read_checkpoint(path)
    try:
        pol = GPSarsaPolicy.from_checkpoint_meta(learner, meta, domain=domain, learning=learning)
        pol.name = name if name is not None else policy_name(meta)
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{path}: {err}") from None
    return pol


def checkpoint_kind(spec: PolicySpec, *, domain: Any = None, **_: Any) -> Adapter:
    """``PATH.npz[:nlg_seed=N]`` or ``checkpoint:PATH``: a GP-SARSA checkpoint, greedy."""
    spec.check_options(("nlg_seed",))
    if not spec.target:
        raise ConfigError(f"policy spec {spec.text!r}: expected checkpoint:PATH.npz")
    path = Path(spec.target)
    if not path.is_file():
        raise ConfigError(f"policy spec {spec.text!r}: checkpoint file {str(path)!r} not found")
    try:
        learner, meta_file = read_checkpoint(path)
        pol = GPSarsaPolicy.from_checkpoint_meta(learner, meta_file, domain=option_domain(domain), learning=False)
    except CheckpointError as exc:
        raise ConfigError(f"policy spec {spec.text!r}: {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"policy spec {spec.text!r}: {path}: {exc}") from None
    training = meta_file.get("training") or {}
    if "nlg_seed" in spec.options:  # same learner, another generator seed
        pol = GPSarsaPolicy(
            pol.domain, learner=learner, learning=False, name=pol.name, nlg_seed=spec.int_option("nlg_seed", 0)
        )
    reward, seed, dialogues = training.get("reward"), training.get("seed"), training.get("dialogues")
    if reward is not None and seed is not None and dialogues is not None:
        pid = f"{reward}-seed{seed}-{int(dialogues):06d}"
    else:
        pid = path.stem
    meta: dict[str, Any] = {
        "id": pid,
        "name": pol.name,
        "kind": "checkpoint",
        "policy": training.get("policy", "gp"),
        "domain": pol.domain.name,
    }
    for key in ("reward", "seed"):
        if training.get(key) is not None:
            meta[key] = training[key]
    if dialogues is not None:
        meta["checkpoint"] = int(dialogues)
    if training.get("reward_signature"):
        meta["reward_signature"] = training["reward_signature"]
    meta.update(nlg_seed=pol.nlg_seed, path=source_info(path))
    return DomainPolicyAdapter(pol, meta, label=policy_name(meta_file))


checkpoint_kind.path_suffixes = (".npz",)  # type: ignore[attr-defined]
checkpoint_kind.path_description = "GP-SARSA checkpoint"  # type: ignore[attr-defined]
