"""Response tables: what one policy answered on every context of one context set.

File format ``behavsim-responses`` version 1, as JSON Lines (``.jsonl``) or Parquet
(``.parquet``):

* JSONL: the first line is a header object
  ``{"format": "behavsim-responses", "version": 1, "policy": {"id": ..., ...},
  "context_set": {"fingerprint": ..., "size": N}}``; then exactly N lines, one per context in
  context-set order: ``{"i": 0, "context_id": "c0", "act": "request(food)", "prompt": "..." | null,
  "error": null | "message"}``. ``act`` is null only when the policy failed on that context
  (``error`` says why) or the table has no act for it.
* Parquet: the same columns (``i, context_id, act, prompt, error``) with the header object stored
  as JSON under the schema metadata key ``behavsim``.

``policy`` holds at least ``id`` (unique among the tables compared) and any metadata: ``name``,
``seed``, ``reward``, ``checkpoint`` (training dialogues), ``nlg_seed``, ... Acts are stored in
canonical form. Loading validates everything and names the file and line of any problem.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ._acts import canonical_act
from ._errors import ActParseError, TableFormatError

__all__ = ["ResponseTable", "context_fingerprint", "FORMAT_NAME", "FORMAT_VERSION"]

FORMAT_NAME = "behavsim-responses"
FORMAT_VERSION = 1


def _canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def context_fingerprint(contexts: Iterable[Mapping[str, Any]]) -> str:
    """Content fingerprint of an ordered sequence of contexts (JSON-serialisable mappings).

    ``sha256:`` + the hex digest of the canonical JSON (sorted keys, no whitespace) of each
    context, one per line, in order. Changing, adding, removing or reordering a context changes it.
    """
    h = hashlib.sha256()
    n = 0
    for ctx in contexts:
        h.update(_canonical_json(ctx).encode("utf-8"))
        h.update(b"\n")
        n += 1
    return f"sha256:{h.hexdigest()[:32]}:{n}"


@dataclass
class ResponseTable:
    """One policy's responses on a context set.

    ``acts[i]``/``prompts[i]`` answer context ``i``; ``None`` marks a missing act (policy error,
    see ``errors[i]``) or a policy without a generator (prompt). ``policy`` is its metadata with at
    least ``id``.
    """

    policy: dict[str, Any]
    context_fingerprint: str
    acts: list[str | None]
    prompts: list[str | None]
    errors: list[str | None] = field(default_factory=list)
    context_ids: list[str] = field(default_factory=list)
    source: str | None = None

    def __post_init__(self) -> None:
        where = self.source or f"table of policy {self.policy.get('id')!r}"
        if not isinstance(self.policy, dict) or "id" not in self.policy:
            raise TableFormatError(f"{where}: policy metadata must be a mapping with an 'id'")
        self.policy["id"] = str(self.policy["id"])
        n = len(self.acts)
        if not self.prompts:
            self.prompts = [None] * n
        if not self.errors:
            self.errors = [None] * n
        if not self.context_ids:
            self.context_ids = [str(i) for i in range(n)]
        for name in ("prompts", "errors", "context_ids"):
            if len(getattr(self, name)) != n:
                raise TableFormatError(f"{where}: {name} has {len(getattr(self, name))} entries, acts has {n}")
        canon = []
        for i, a in enumerate(self.acts):
            if a is None:
                canon.append(None)
                continue
            try:
                canon.append(canonical_act(a))
            except ActParseError as exc:
                raise TableFormatError(f"{where}: context {i}: {exc}") from None
        self.acts = canon

    @property
    def id(self) -> str:
        return self.policy["id"]

    def __len__(self) -> int:
        return len(self.acts)

    @property
    def n_errors(self) -> int:
        return sum(e is not None for e in self.errors)

    # ------------------------------------------------------------------ saving
    def header(self) -> dict[str, Any]:
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "policy": self.policy,
                "context_set": {"fingerprint": self.context_fingerprint, "size": len(self)}}

    def rows(self) -> list[dict[str, Any]]:
        return [{"i": i, "context_id": c, "act": a, "prompt": p, "error": e}
                for i, (c, a, p, e) in enumerate(zip(self.context_ids, self.acts, self.prompts, self.errors))]

    def save(self, path: str | os.PathLike) -> Path:
        """Write as JSONL or Parquet (by suffix), atomically."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        if path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            rows = self.rows()
            tbl = pa.table({k: [r[k] for r in rows] for k in ("i", "context_id", "act", "prompt", "error")},
                           schema=pa.schema([("i", pa.int64()), ("context_id", pa.string()), ("act", pa.string()),
                                             ("prompt", pa.string()), ("error", pa.string())]))
            tbl = tbl.replace_schema_metadata({"behavsim": _canonical_json(self.header())})
            pq.write_table(tbl, tmp)
        else:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(_canonical_json(self.header()) + "\n")
                for r in self.rows():
                    f.write(_canonical_json(r) + "\n")
        os.replace(tmp, path)
        return path

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | os.PathLike) -> "ResponseTable":
        """Read a table written by :meth:`save`; any problem raises :class:`TableFormatError`."""
        path = Path(path)
        if not path.is_file():
            raise TableFormatError(f"{path}: no such response-table file")
        if path.suffix == ".parquet":
            return cls._load_parquet(path)
        return cls._load_jsonl(path)

    @staticmethod
    def _check_header(header: Any, where: str) -> dict[str, Any]:
        if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
            raise TableFormatError(f"{where}: not a behavsim response table (the header must have "
                                   f"format={FORMAT_NAME!r})")
        if header.get("version") != FORMAT_VERSION:
            raise TableFormatError(f"{where}: response-table format version {header.get('version')!r} is not "
                                   f"supported (this behavsim reads version {FORMAT_VERSION})")
        cs = header.get("context_set")
        if not isinstance(cs, dict) or not isinstance(cs.get("fingerprint"), str) or not isinstance(cs.get("size"), int):
            raise TableFormatError(f"{where}: header needs context_set.fingerprint (string) and .size (integer)")
        if not isinstance(header.get("policy"), dict) or "id" not in header["policy"]:
            raise TableFormatError(f"{where}: header needs a policy object with an 'id'")
        return header

    @classmethod
    def _from_rows(cls, header: dict, rows: Sequence[dict], path: Path, line_of) -> "ResponseTable":
        size = header["context_set"]["size"]
        if len(rows) != size:
            raise TableFormatError(f"{path}: header says {size} contexts but the file has {len(rows)} rows "
                                   "(truncated or damaged file?)")
        acts, prompts, errors, ids = [], [], [], []
        for k, r in enumerate(rows):
            where = f"{path}:{line_of(k)}"
            if r.get("i") != k:
                raise TableFormatError(f"{where}: expected context index i={k}, found {r.get('i')!r}")
            for key in ("act", "prompt", "error"):
                v = r.get(key)
                if v is not None and not isinstance(v, str):
                    raise TableFormatError(f"{where}: {key!r} must be a string or null, found {type(v).__name__}")
            if r.get("act") is None and r.get("error") is None and r.get("prompt") is None:
                raise TableFormatError(f"{where}: row has neither an act, a prompt nor an error")
            try:
                acts.append(None if r.get("act") is None else canonical_act(r["act"]))
            except ActParseError as exc:
                raise TableFormatError(f"{where}: {exc}") from None
            prompts.append(r.get("prompt"))
            errors.append(r.get("error"))
            ids.append(str(r.get("context_id", k)))
        return cls(policy=dict(header["policy"]), context_fingerprint=header["context_set"]["fingerprint"],
                   acts=acts, prompts=prompts, errors=errors, context_ids=ids, source=str(path))

    @classmethod
    def _load_jsonl(cls, path: Path) -> "ResponseTable":
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise TableFormatError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
        if not lines:
            raise TableFormatError(f"{path}: empty file")
        parsed = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                raise TableFormatError(f"{path}:{n}: blank line inside a response table")
            try:
                parsed.append(json.loads(line, parse_constant=_reject_constant))
            except (json.JSONDecodeError, ValueError) as exc:
                raise TableFormatError(f"{path}:{n}: invalid JSON ({exc})") from None
        header = cls._check_header(parsed[0], f"{path}:1")
        if not all(isinstance(r, dict) for r in parsed[1:]):
            raise TableFormatError(f"{path}: every line after the header must be a JSON object")
        return cls._from_rows(header, parsed[1:], path, lambda k: k + 2)

    @classmethod
    def _load_parquet(cls, path: Path) -> "ResponseTable":
        import pyarrow.parquet as pq

        try:
            tbl = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for damaged files
            raise TableFormatError(f"{path}: cannot read Parquet file ({exc})") from None
        meta = (tbl.schema.metadata or {}).get(b"behavsim")
        if meta is None:
            raise TableFormatError(f"{path}: Parquet file without behavsim header metadata")
        try:
            header = json.loads(meta)
        except json.JSONDecodeError as exc:
            raise TableFormatError(f"{path}: damaged header metadata ({exc})") from None
        header = cls._check_header(header, str(path))
        missing = {"i", "act", "prompt", "error"} - set(tbl.column_names)
        if missing:
            raise TableFormatError(f"{path}: missing columns {sorted(missing)}")
        rows = tbl.to_pylist()
        return cls._from_rows(header, rows, path, lambda k: f"row {k}")


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")
