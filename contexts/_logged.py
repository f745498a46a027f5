"""Logged context sets: belief states recorded from dialogues of any system.

* :class:`ContextRecorder` — call ``recorder.record(belief, **meta)`` inside your own dialogue
  loop (at each system turn, before the system acts), then ``recorder.to_context_set()``.
* :func:`from_jsonl` — import a plain JSON Lines log: one JSON object per line, either a bare
  belief state or ``{"belief": {...}, "meta": {...}, "id": "..."}`` (``meta`` and ``id``
  optional); blank lines are skipped.

Beliefs are stored with their keys in sorted order (as a saved set holds them). A belief
state is checked to follow the layout every saved context set has (:func:`behavsim.belief_problem`:
a ``beliefs`` object mapping each slot to a ``{value: probability}`` object, probabilities in
[0, 1]; non-finite numbers are refused anywhere). Every context's ``meta`` gets
``origin="logged"`` (overriding any ``origin`` given); contexts imported from a file also get
``log_line``. :func:`from_jsonl` refuses a file at its first bad line with a
:class:`policies.corpora.LogFormatError` naming ``file:line``; with ``strict=False`` it skips the bad lines
instead and lists them in the set's ``meta["skipped"]`` (``behavsim contexts import --lenient``
prints them). ``ContextRecorder(strict=False)`` records any JSON object (for a policy of your
own that reads another layout; such a set is used in memory, and :meth:`ContextSet.save`
refuses it).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from behavsim import ConfigError, ContextSet, belief_problem, canonical_copy
from policies.corpora import LogFormatError, reject_non_finite

__all__ = ["ContextRecorder", "from_jsonl", "check_belief"]


def check_belief(belief: Any, strict: bool = True) -> str | None:
    """``None`` if ``belief`` is acceptable, else a description of the problem: with ``strict``
    (the default) the layout a saved context set must have (:func:`behavsim.belief_problem`),
    else any JSON object without non-finite numbers."""
    if strict:
        return belief_problem(belief)
    if not isinstance(belief, Mapping):
        return f"a belief state must be a JSON object, got {type(belief).__name__}"
    return _non_finite(belief)


def _non_finite(obj: Any, path: str = "") -> str | None:
    if isinstance(obj, float) and not math.isfinite(obj):
        return f"non-finite number {obj!r} at {path or 'top level'}"
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            bad = _non_finite(v, f"{path}.{k}" if path else str(k))
            if bad:
                return bad
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            bad = _non_finite(v, f"{path}[{i}]")
            if bad:
                return bad
    return None


class ContextRecorder:
    """Collects belief states from any dialogue loop into a :class:`~behavsim.ContextSet`.

    >>> rec = ContextRecorder(source="my-system")
    >>> rec.record({"beliefs": {"area": {"north": 1.0}}}, dialogue=0, turn=1)
    0
    >>> len(rec.to_context_set())
    1

    ``record`` stores a copy of the belief (later changes to the caller's dict do not leak in)
    and returns its index; metadata values must be JSON-serialisable.
    """

    def __init__(self, *, source: str | None = None, strict: bool = True) -> None:
        self.source = source
        self.strict = bool(strict)
        self._beliefs: list[dict] = []
        self._metas: list[dict] = []

    def record(self, belief: Mapping[str, Any], **meta: Any) -> int:
        problem = check_belief(belief, self.strict)
        if problem:
            raise LogFormatError(f"ContextRecorder.record: context {len(self._beliefs)}: {problem}")
        try:
            json.dumps(dict(belief), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise LogFormatError(
                f"ContextRecorder.record: context {len(self._beliefs)}: belief is not JSON-serialisable ({exc})"
            ) from None
        for k, v in meta.items():
            try:
                json.dumps(v, allow_nan=False)
            except (TypeError, ValueError):
                raise ConfigError(f"ContextRecorder.record: meta {k!r}: value {v!r} is not JSON-serialisable") from None
        self._beliefs.append(canonical_copy(dict(belief)))
        self._metas.append({**meta, "origin": "logged"})
        return len(self._beliefs) - 1

    def __len__(self) -> int:
        return len(self._beliefs)

    def clear(self) -> None:
        self._beliefs.clear()
        self._metas.clear()

    def to_context_set(self, description: str | None = None) -> ContextSet:
        """The recorded contexts in order (copies: recording more later does not change it)."""
        meta = {
            "builder": "logged",
            "origin": "logged",
            "source": self.source,
            "description": description,
            "size": len(self._beliefs),
        }
        return ContextSet(
            [canonical_copy(b) for b in self._beliefs],
            [dict(m) for m in self._metas],
            [f"log:{i}" for i in range(len(self._beliefs))],
            meta,
        )


def _read_line(line: str, where: str) -> tuple[Any, dict, Any]:
    """``(belief, meta, id)`` of one line of a log; a problem raises :class:`LogFormatError`."""
    try:
        obj = json.loads(line, parse_constant=reject_non_finite)
    except json.JSONDecodeError as exc:
        raise LogFormatError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:
        raise LogFormatError(f"{where}: {exc}") from None
    except RecursionError:
        raise LogFormatError(f"{where}: JSON nested too deeply to read") from None
    if not isinstance(obj, dict):
        raise LogFormatError(
            f'{where}: expected a JSON object (a belief state or {{"belief": ..., "meta": ...}}), '
            f"got {type(obj).__name__}"
        )
    if "belief" in obj:
        extra = sorted(set(obj) - {"belief", "meta", "id"})
        if extra:
            raise LogFormatError(f"{where}: unexpected keys {extra} beside 'belief' (allowed: belief, meta, id)")
        belief, meta, cid = obj["belief"], obj.get("meta") or {}, obj.get("id")
        if not isinstance(meta, dict):
            raise LogFormatError(f"{where}: 'meta' must be an object, got {type(meta).__name__}")
        if cid is not None and not isinstance(cid, (str, int)):
            raise LogFormatError(f"{where}: 'id' must be a string, got {type(cid).__name__}")
    else:
        belief, meta, cid = obj, {}, None
    problem = check_belief(belief)
    if problem:
        raise LogFormatError(f"{where}: {problem}")
    return belief, meta, cid


def from_jsonl(path: str | os.PathLike, *, strict: bool = True, description: str | None = None) -> ContextSet:
    """Import a JSONL log of belief states (see the module doc) as a context set.

    ``strict`` (the default): the first bad line refuses the file. ``strict=False``: bad lines are
    skipped and listed in ``meta["skipped"]`` as ``{"line": n, "problem": "file:n: ..."}`` (when
    there are any); a file with no good line is still refused."""
    path = Path(path)
    if not path.is_file():
        raise LogFormatError(f"{path}: no such log file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise LogFormatError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
    beliefs, metas, ids = [], [], []
    skipped: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        if '"behavsim-contexts"' in line:  # a saved set given as a log: the whole file is wrong
            try:
                is_set = json.loads(line).get("format") == "behavsim-contexts"
            except (ValueError, AttributeError, RecursionError):
                is_set = False
            if is_set:
                raise LogFormatError(
                    f"{where}: this is a saved behavsim context set, not a log; read it with "
                    "ContextSet.load (or 'behavsim contexts info')"
                )
        try:
            belief, row_meta, cid = _read_line(line, where)
        except LogFormatError as exc:
            if strict:
                raise
            skipped.append({"line": n, "problem": str(exc)})
            continue
        beliefs.append(canonical_copy(belief))
        metas.append({**row_meta, "origin": "logged", "log_line": n})
        ids.append(str(cid) if cid is not None else f"{path.name}:{n}")
    if not beliefs:
        more = f" ({len(skipped)} bad lines skipped; the first: {skipped[0]['problem']})" if skipped else ""
        raise LogFormatError(f"{path}: no belief states in the file{more}")
    meta: dict[str, Any] = {
        "builder": "logged",
        "origin": "logged",
        "source": str(path),
        "description": description,
        "size": len(beliefs),
    }
    if skipped:
        meta["skipped"] = skipped
    return ContextSet(beliefs, metas, ids, meta, source=str(path))
