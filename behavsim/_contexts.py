"""Context sets: the ordered dialogue contexts (belief states) every policy answers.

The type lives in the core because response tables refer to it by fingerprint; the builders
(collected from dialogues, grid-generated, subsets) live in the ``contexts`` package.

File format ``behavsim-contexts`` version 1, JSON Lines (``.jsonl``) or Parquet (``.parquet``):

* JSONL: a header line ``{"format": "behavsim-contexts", "version": 1, "size": N,
  "fingerprint": "...", "meta": {...}}`` (``meta``: how the set was built — builder name,
  parameters, seeds), then exactly N lines ``{"i": k, "id": "...", "belief": {...}, "meta": {...}}``.
  ``belief`` is a belief state in PyDial's layout (``beliefs`` with the informable slots, ``method``,
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import TableFormatError
from ._io import canonical_json, check_header, read_rows, write_jsonl, write_parquet
from ._repr import contextset_repr
from ._tables import context_fingerprint

__all__ = ["ContextSet", "CONTEXTS_FORMAT", "CONTEXTS_VERSION"]

CONTEXTS_FORMAT = "behavsim-contexts"
CONTEXTS_VERSION = 1


def _check_finite(obj: Any, where: str) -> None:
    if isinstance(obj, float) and not math.isfinite(obj):
        raise TableFormatError(f"{where}: non-finite number {obj!r} in a belief state")
    if isinstance(obj, dict):
        for v in obj.values():
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
            raise TableFormatError(
                f"context set: {n} beliefs but {len(self.metas)} metadata entries and {len(self.ids)} ids"
            )
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

    def __repr__(self) -> str:  # short: kind, size, fingerprint, a summary (never the beliefs)
        return contextset_repr(self)

    def select(
        self, keep: Callable[[dict[str, Any], dict[str, Any]], bool] | Sequence[int], description: str | None = None
    ) -> "ContextSet":
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
        meta = {
            "builder": "subset",
            "parent": self.fingerprint,
            "parent_meta": self.meta,
            "indices": idx,
            "description": description,
        }
        return ContextSet(
            [self.beliefs[i] for i in idx], [dict(self.metas[i]) for i in idx], [self.ids[i] for i in idx], meta
        )

    @classmethod
    def concat(cls, sets: Sequence["ContextSet"], description: str | None = None) -> "ContextSet":
        """The union of several sets in order (duplicates kept: a context set is a sample)."""
        beliefs, metas, ids = [], [], []
        for s in sets:
            beliefs += s.beliefs
            metas += [dict(m) for m in s.metas]
            ids += list(s.ids)
        if len(set(ids)) != len(ids):  # make ids unique by prefixing the part index
            ids = [f"{k}:{cid}" for k, s in enumerate(sets) for cid in s.ids]
        meta = {
            "builder": "union",
            "parts": [s.meta | {"fingerprint": s.fingerprint} for s in sets],
            "description": description,
        }
        return cls(beliefs, metas, ids, meta)

    # ------------------------------------------------------------------ I/O
    def header(self) -> dict[str, Any]:
        return {
            "format": CONTEXTS_FORMAT,
            "version": CONTEXTS_VERSION,
            "size": len(self),
            "fingerprint": self.fingerprint,
            "meta": self.meta,
        }

    def save(self, path: str | os.PathLike) -> Path:
        """Write as JSONL or Parquet (by suffix), atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if path.suffix == ".parquet":
                return write_parquet(
                    path,
                    self.header(),
                    {
                        "i": list(range(len(self))),
                        "id": self.ids,
                        "belief": [canonical_json(b) for b in self.beliefs],
                        "meta": [canonical_json(m) for m in self.metas],
                    },
                )
            return write_jsonl(
                path,
                self.header(),
                (
                    {"i": i, "id": cid, "belief": b, "meta": m}
                    for i, (cid, b, m) in enumerate(zip(self.ids, self.beliefs, self.metas))
                ),
            )
        except ValueError as exc:  # NaN/inf are not JSON
            raise TableFormatError(f"{path}: cannot save context set: {exc}") from None

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ContextSet":
        """Read a set written by :meth:`save`; any problem raises :class:`TableFormatError`."""
        path = Path(path)

        def precheck(header: Any, rows: list) -> None:
            check_header(header, str(path), CONTEXTS_FORMAT, CONTEXTS_VERSION, "context set")
            if header.get("size") != len(rows):
                raise TableFormatError(
                    f"{path}: header says {header.get('size')} contexts but the file has {len(rows)} "
                    "(truncated or damaged file?)"
                )

        header, rows = read_rows(path, "context set", precheck)
        beliefs, metas, ids = [], [], []
        for k, (where, r) in enumerate(rows):
            if path.suffix == ".parquet":
                try:
                    r = {**r, "belief": json.loads(r["belief"]), "meta": json.loads(r["meta"]) if r.get("meta") else {}}
                except (KeyError, TypeError, json.JSONDecodeError, RecursionError) as exc:
                    raise TableFormatError(f"{path}:{where}: damaged belief/meta column ({exc})") from None
            if r.get("i") != k:
                raise TableFormatError(f"{path}:{where}: expected context index i={k}")
            if not isinstance(r.get("belief"), dict):
                raise TableFormatError(f"{path}:{where}: 'belief' must be an object")
            _check_finite(r["belief"], f"{path}:{where}")
            beliefs.append(r["belief"])
            metas.append(r.get("meta") or {})
            ids.append(str(r.get("id", f"c{k}")))
        cs = cls(beliefs, metas, ids, dict(header.get("meta") or {}), source=str(path))
        if header.get("fingerprint") != cs.fingerprint:
            raise TableFormatError(
                f"{path}: content does not match the fingerprint in its header "
                f"({header.get('fingerprint')} != {cs.fingerprint}); the file was edited or damaged"
            )
        return cs

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
