"""``recorded:FILE`` — responses of a policy that ran elsewhere, keyed by context id.

The universal route for end-to-end or closed systems: run the system on the contexts yourself
and write one JSON line per context. Format ``behavsim-recorded`` version 1 (JSON Lines,
UTF-8):

* optional first line, a header:
  ``{"format": "behavsim-recorded", "version": 1, "policy": {"id": ..., "name": ..., ...},
  "context_set": {"fingerprint": "sha256:..."}}`` — ``policy`` becomes the table's metadata;
  when ``context_set.fingerprint`` is given it must equal the fingerprint of the contexts the
  file is used with (context ids such as ``c0`` are positional, so this guards against a file
  made for another context set);
* then one object per context: ``{"context_id": "c0", "act": "request(food)", "prompt": "what
  food would you like?"}``; ``prompt`` may be null or absent (no generator); a text-only answer
  (an end-to-end system's) has ``"act": null`` and a prompt; a context on which the system failed
  has ``"act": null, "error": "why"``. Order does not matter; ids
  must be unique; ids that the context set does not hold are ignored; ids of the context set
  missing from the file are an error that names them.

A response table file (``behavsim-responses``) is accepted as well: its rows carry the same keys.
Answers are looked up by context id, so a recorded file answers contexts of any kind — belief
states, histories, or both (``reads``: both).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from behavsim import ConfigError, ContextSetMismatch, TableFormatError
from behavsim.io import check_no_lone_surrogates
from behavsim.policy import Adapter, PolicySpec, Response, source_info

__all__ = ["RecordedAdapter", "RecordedFailure", "write_recorded", "RECORDED_FORMAT", "RECORDED_VERSION"]

RECORDED_FORMAT = "behavsim-recorded"
RECORDED_VERSION = 1
_TABLE_FORMAT = "behavsim-responses"


class RecordedFailure(Exception):
    """The recorded system failed on this context (the file's ``error``, verbatim)."""

    recorded = True  # behavsim.respond records the message as it is


def _canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class RecordedAdapter(Adapter):
    """Answers from a ``behavsim-recorded`` JSONL file (see the module documentation)."""

    kind = "recorded"
    reads = ("belief", "history")  # looked up by context id: any context

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        header, rows = self._read(self.path)
        self.rows = rows
        self.fingerprint = (header.get("context_set") or {}).get("fingerprint") if header else None
        policy = dict((header or {}).get("policy") or {})
        meta: dict[str, Any] = {**policy}
        if policy.get("kind") and policy.get("kind") != "recorded":
            meta["recorded_kind"] = policy["kind"]
        meta.setdefault("id", self.path.stem)
        meta.setdefault("name", str(meta["id"]))
        meta["id"], meta["name"] = str(meta["id"]), str(meta["name"])
        extra = {"recorded_from": policy["path"]} if "path" in policy else {}
        meta.update(kind="recorded", path=source_info(self.path, **extra))
        super().__init__(meta)

    @staticmethod
    def _read(path: Path) -> tuple[dict | None, dict[str, dict]]:
        if not path.is_file():
            raise ConfigError(f"recorded responses: file {str(path)!r} not found")
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise TableFormatError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
        header = None
        rows: dict[str, dict] = {}
        where: dict[str, int] = {}
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TableFormatError(f"{path}:{n}: invalid JSON ({exc})") from None
            except RecursionError:
                raise TableFormatError(f"{path}:{n}: JSON nested too deeply to read (a damaged file?)") from None
            check_no_lone_surrogates(obj, line, f"{path}:{n}")
            if not isinstance(obj, dict):
                raise TableFormatError(f"{path}:{n}: expected a JSON object, got {type(obj).__name__}")
            if "format" in obj:
                if header is not None or rows:
                    raise TableFormatError(f"{path}:{n}: a header line may only come first")
                if obj["format"] not in (RECORDED_FORMAT, _TABLE_FORMAT):
                    raise TableFormatError(
                        f"{path}:{n}: unknown format {obj['format']!r} (expected "
                        f"{RECORDED_FORMAT!r} or a response table)"
                    )
                if obj.get("version") != RECORDED_VERSION:
                    raise TableFormatError(
                        f"{path}:{n}: format version {obj.get('version')!r} is not supported "
                        f"(this behavsim reads version {RECORDED_VERSION})"
                    )
                if "policy" in obj and not isinstance(obj["policy"], dict):
                    raise TableFormatError(f"{path}:{n}: header 'policy' must be an object")
                header = obj
                continue
            cid = obj.get("context_id")
            if isinstance(cid, bool) or not isinstance(cid, (str, int)):
                raise TableFormatError(f"{path}:{n}: 'context_id' must be a string, got {cid!r}")
            cid = str(cid)
            for key in ("act", "prompt", "error"):
                v = obj.get(key)
                if v is not None and not isinstance(v, str):
                    raise TableFormatError(f"{path}:{n}: {key!r} must be a string or null, got {type(v).__name__}")
            if obj.get("act") is None and obj.get("error") is None and obj.get("prompt") is None:
                raise TableFormatError(f"{path}:{n}: context {cid!r} has neither an act, a prompt nor an error")
            if cid in rows:
                raise TableFormatError(f"{path}:{n}: context id {cid!r} recorded twice (first on line {where[cid]})")
            rows[cid] = {"act": obj.get("act"), "prompt": obj.get("prompt"), "error": obj.get("error")}
            where[cid] = n
        return header, rows

    def prepare(self, contexts: Any) -> None:
        if self.fingerprint is not None and self.fingerprint != contexts.fingerprint:
            raise ContextSetMismatch(
                f"{self.path}: recorded on context set {self.fingerprint}, but the contexts given "
                f"are {contexts.fingerprint}; record the system on these contexts"
            )
        missing = [cid for cid in dict.fromkeys(contexts.ids) if cid not in self.rows]
        if missing:
            shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
            raise ConfigError(
                f"{self.path}: no recorded response for {len(missing)} of {len(contexts)} contexts; "
                f"missing context ids: {shown}"
            )

    def respond_one(self, belief, *, context_id=None, context_meta=None, history=None) -> Response:
        if context_id is None:
            raise ConfigError(
                "recorded responses are looked up by context id, and none was given: a recorded policy "
                "answers only the contexts it was recorded on and cannot play new dialogues"
            )
        row = self.rows.get(str(context_id))
        if row is None:
            raise KeyError(f"no recorded response for context id {context_id!r}")
        if row["act"] is None and (row["error"] is not None or row["prompt"] is None):
            raise RecordedFailure(row["error"] or "no act")
        return Response(act=row["act"], prompt=row["prompt"])


def write_recorded(table: Any, path: str | os.PathLike, *, fingerprint: bool = True) -> Path:
    """Write a :class:`behavsim.ResponseTable` in the ``behavsim-recorded`` format.

    ``fingerprint=False`` leaves the context-set fingerprint out of the header (the file can
    then be used with any context set holding the same ids).
    """
    path = Path(path)
    header: dict[str, Any] = {"format": RECORDED_FORMAT, "version": RECORDED_VERSION, "policy": dict(table.policy)}
    if fingerprint:
        header["context_set"] = {"fingerprint": table.context_fingerprint}
    seen: set[str] = set()
    lines = [_canonical_json(header)]
    for cid, act, prompt, err in zip(table.context_ids, table.acts, table.prompts, table.errors):
        if cid in seen:
            continue
        seen.add(cid)
        row: dict[str, Any] = {"context_id": cid, "act": act, "prompt": prompt}
        if err is not None or (act is None and prompt is None):
            row["error"] = err if err is not None else "no act"
        lines.append(_canonical_json(row))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def recorded_kind(spec: PolicySpec, **_: Any) -> Adapter:
    spec.check_options(())
    if not spec.target:
        raise ConfigError(
            f"policy spec {spec.text!r}: expected recorded:FILE (a JSONL file of act/prompt per context id)"
        )
    return RecordedAdapter(spec.target)
