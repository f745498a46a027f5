"""Context sets: the ordered dialogue contexts (belief states) every policy answers.

The type lives in the core because response tables refer to it by fingerprint; the builders
(collected from dialogues, grid-generated, subsets) live in the ``contexts`` package.

File format ``behavsim-contexts`` version 1, JSON Lines (``.jsonl``) or Parquet (``.parquet``):

* JSONL: a header line ``{"format": "behavsim-contexts", "version": 1, "size": N,
  "fingerprint": "...", "meta": {...}}`` (``meta``: how the set was built — builder name,
  parameters, seeds), then exactly N lines ``{"i": k, "id": "...", "belief": {...}, "meta": {...}}``.
  ``belief`` is a SPEC §4 belief state (``beliefs`` with the informable slots, ``method``,
  ``discourseAct``, ``requested``; ``features`` as the policy needs); the per-context ``meta``
  holds ``origin`` (``collected``/``generated``/``logged``), and for collected contexts
  ``dialogue``, ``turn``, ``source_policy``.
* Parquet: columns ``i, id, belief, meta`` (the last two as JSON strings), the header under the
  schema metadata key ``behavsim``.

The fingerprint covers the beliefs and their order (what a policy sees), not the metadata; it is
checked on load, so a hand-edited or damaged file is refused instead of half-read.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from ._errors import TableFormatError
from ._tables import _canonical_json, context_fingerprint

__all__ = ["ContextSet", "CONTEXTS_FORMAT", "CONTEXTS_VERSION"]

CONTEXTS_FORMAT = "behavsim-contexts"
CONTEXTS_VERSION = 1


def _check_finite(obj: Any, where: str) -> None:
    if isinstance(obj, float) and not math.isfinite(obj):
        raise TableFormatError(f"{where}: non-finite number {obj!r} in a belief state")
    if isinstance(obj, dict):
        for k, v in obj.items():
            _check_finite(v, where)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _check_finite(v, where)


@dataclass
class ContextSet:
    """An ordered list of belief states with per-context metadata and a content fingerprint."""

    beliefs: list[dict[str, Any]]
    metas: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    _fingerprint: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        n = len(self.beliefs)
        if not self.metas:
            self.metas = [{} for _ in range(n)]
        if not self.ids:
            self.ids = [f"c{i}" for i in range(n)]
        if len(self.metas) != n or len(self.ids) != n:
            raise TableFormatError(f"context set: {n} beliefs but {len(self.metas)} metadata entries and "
                                   f"{len(self.ids)} ids")
        for i, b in enumerate(self.beliefs):
            if not isinstance(b, dict):
                raise TableFormatError(f"context {i}: a belief state must be a mapping, got {type(b).__name__}")

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = context_fingerprint(self.beliefs)
        return self._fingerprint

    def __len__(self) -> int:
        return len(self.beliefs)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.beliefs)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.beliefs[i]

    def select(self, keep: Callable[[dict[str, Any], dict[str, Any]], bool] | Sequence[int],
               description: str | None = None) -> "ContextSet":
        """A new set with the contexts for which ``keep(belief, meta)`` is true (or these indices).

        The subset records where it came from (parent fingerprint and indices) in its ``meta``.
        """
        if callable(keep):
            idx = [i for i, (b, m) in enumerate(zip(self.beliefs, self.metas)) if keep(b, m)]
        else:
            idx = [int(i) for i in keep]
            bad = [i for i in idx if not 0 <= i < len(self)]
            if bad:
                raise IndexError(f"context indices out of range 0..{len(self) - 1}: {bad[:5]}")
        meta = {"builder": "subset", "parent": self.fingerprint, "parent_meta": self.meta,
                "indices": idx, "description": description}
        return ContextSet([self.beliefs[i] for i in idx], [dict(self.metas[i]) for i in idx],
                          [self.ids[i] for i in idx], meta)

    @classmethod
    def concat(cls, sets: Sequence["ContextSet"], description: str | None = None) -> "ContextSet":
        """The union of several sets in order (duplicates kept: a context set is a sample)."""
        beliefs, metas, ids = [], [], []
        for k, s in enumerate(sets):
            beliefs += s.beliefs
            metas += [dict(m) for m in s.metas]
            ids += list(s.ids)
        if len(set(ids)) != len(ids):  # make ids unique by prefixing the part index
            ids = [f"{k}:{cid}" for k, s in enumerate(sets) for cid in s.ids]
        meta = {"builder": "union", "parts": [s.meta | {"fingerprint": s.fingerprint} for s in sets],
                "description": description}
        return cls(beliefs, metas, ids, meta)

    # ------------------------------------------------------------------ I/O
    def header(self) -> dict[str, Any]:
        return {"format": CONTEXTS_FORMAT, "version": CONTEXTS_VERSION, "size": len(self),
                "fingerprint": self.fingerprint, "meta": self.meta}

    def save(self, path: str | os.PathLike) -> Path:
        """Write as JSONL or Parquet (by suffix), atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        try:
            if path.suffix == ".parquet":
                import pyarrow as pa
                import pyarrow.parquet as pq

                tbl = pa.table({"i": list(range(len(self))), "id": self.ids,
                                "belief": [_canonical_json(b) for b in self.beliefs],
                                "meta": [_canonical_json(m) for m in self.metas]})
                tbl = tbl.replace_schema_metadata({"behavsim": _canonical_json(self.header())})
                pq.write_table(tbl, tmp)
            else:
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(_canonical_json(self.header()) + "\n")
                    for i, (cid, b, m) in enumerate(zip(self.ids, self.beliefs, self.metas)):
                        f.write(_canonical_json({"i": i, "id": cid, "belief": b, "meta": m}) + "\n")
        except ValueError as exc:  # NaN/inf are not JSON
            tmp.unlink(missing_ok=True)
            raise TableFormatError(f"{path}: cannot save context set: {exc}") from None
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ContextSet":
        """Read a set written by :meth:`save`; any problem raises :class:`TableFormatError`."""
        path = Path(path)
        if not path.is_file():
            raise TableFormatError(f"{path}: no such context-set file")
        if path.suffix == ".parquet":
            header, rows = cls._read_parquet(path)
        else:
            header, rows = cls._read_jsonl(path)
        if not isinstance(header, dict) or header.get("format") != CONTEXTS_FORMAT:
            raise TableFormatError(f"{path}: not a behavsim context set (header format must be {CONTEXTS_FORMAT!r})")
        if header.get("version") != CONTEXTS_VERSION:
            raise TableFormatError(f"{path}: context-set format version {header.get('version')!r} is not supported "
                                   f"(this behavsim reads version {CONTEXTS_VERSION})")
        if header.get("size") != len(rows):
            raise TableFormatError(f"{path}: header says {header.get('size')} contexts but the file has {len(rows)} "
                                   "(truncated or damaged file?)")
        beliefs, metas, ids = [], [], []
        for k, (where, r) in enumerate(rows):
            if not isinstance(r, dict) or r.get("i") != k:
                raise TableFormatError(f"{path}:{where}: expected context index i={k}")
            if not isinstance(r.get("belief"), dict):
                raise TableFormatError(f"{path}:{where}: 'belief' must be an object")
            _check_finite(r["belief"], f"{path}:{where}")
            beliefs.append(r["belief"])
            metas.append(r.get("meta") or {})
            ids.append(str(r.get("id", f"c{k}")))
        cs = cls(beliefs, metas, ids, dict(header.get("meta") or {}), source=str(path))
        if header.get("fingerprint") != cs.fingerprint:
            raise TableFormatError(f"{path}: content does not match the fingerprint in its header "
                                   f"({header.get('fingerprint')} != {cs.fingerprint}); the file was edited or damaged")
        return cs

    @staticmethod
    def _read_jsonl(path: Path) -> tuple[Any, list[tuple[Any, Any]]]:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise TableFormatError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
        if not lines:
            raise TableFormatError(f"{path}: empty file")
        parsed = []
        for n, line in enumerate(lines, 1):
            try:
                parsed.append((n, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise TableFormatError(f"{path}:{n}: invalid JSON ({exc})") from None
        return parsed[0][1], parsed[1:]

    @staticmethod
    def _read_parquet(path: Path) -> tuple[Any, list[tuple[Any, Any]]]:
        import pyarrow.parquet as pq

        try:
            tbl = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for damaged files
            raise TableFormatError(f"{path}: cannot read Parquet file ({exc})") from None
        raw = (tbl.schema.metadata or {}).get(b"behavsim")
        if raw is None:
            raise TableFormatError(f"{path}: Parquet file without behavsim header metadata")
        rows = []
        for k, r in enumerate(tbl.to_pylist()):
            try:
                rows.append((f"row {k}", {"i": r.get("i"), "id": r.get("id"), "belief": json.loads(r["belief"]),
                                          "meta": json.loads(r["meta"]) if r.get("meta") else {}}))
            except (KeyError, TypeError, json.JSONDecodeError) as exc:
                raise TableFormatError(f"{path}: row {k}: damaged belief/meta column ({exc})") from None
        return json.loads(raw), rows

    def summary(self, i: int) -> str:
        """A one-line summary of context ``i``: top value and belief per informable slot, method."""
        b = self.beliefs[i].get("beliefs", {})
        parts = []
        for slot, dist in b.items():
            if slot in ("requested",) or not isinstance(dist, Mapping) or not dist:
                continue
            top = max(dist.items(), key=lambda kv: (kv[1], kv[0]))
            parts.append(f"{slot}={top[0]}:{top[1]:.2f}")
        return " ".join(parts)
