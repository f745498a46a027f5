"""Context sets: the ordered dialogue contexts (belief states) every policy answers.

The type lives in the core because response tables refer to it by fingerprint; the builders
(collected from dialogues, grid-generated, subsets) live in the ``contexts`` package.

File format ``behavsim-contexts`` version 1, JSON Lines (``.jsonl``) or Parquet (``.parquet``):

* JSONL: a header line ``{"format": "behavsim-contexts", "version": 1, "size": N,
  "fingerprint": "...", "meta": {...}}`` (``meta``: how the set was built — builder name,
  parameters, seeds), then exactly N lines ``{"i": k, "id": "...", "belief": {...}, "meta": {...}}``.
  ``belief`` is a belief state in PyDial's layout (``beliefs`` with the informable slots, ``method``,
  ``discourseAct``, ``requested``; ``features`` as the policy needs), checked on load and on save
  by :func:`belief_problem` (``beliefs`` maps each slot to a ``{value: probability}`` object,
  probabilities are real numbers in [0, 1]); the per-context ``meta``
  holds ``origin`` (``collected``/``generated``/``logged``), and for collected contexts
  ``dialogue``, ``turn``, ``source_policy``.
* Parquet: columns ``i, id, belief, meta`` (the last two as JSON strings), the header under the
  schema metadata key ``behavsim``.

The fingerprint covers the beliefs and their order (what a policy sees), not the metadata; it is
checked on load, so a hand-edited or damaged file is refused instead of half-read. A belief that
departs from the layout is refused with the file, line and key (``cgen.jsonl:17: beliefs.area:
expected {value: probability}, got a list``). Sets in memory may hold any mapping (a policy of your
own may read another layout); :meth:`ContextSet.save` refuses what :meth:`ContextSet.load` would.
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

__all__ = ["ContextSet", "CONTEXTS_FORMAT", "CONTEXTS_VERSION", "belief_problem"]

CONTEXTS_FORMAT = "behavsim-contexts"
CONTEXTS_VERSION = 1


#: Rounding a probability may leave just outside [0, 1] (PyDial's ``1 - sum(...)``): accepted.
_PROB_TOLERANCE = 1e-9

#: Distributions that may also stand at the top level of a belief (in PyDial's layout they are
#: entries of ``beliefs``).
_TOP_LEVEL_DISTRIBUTIONS = ("method", "discourseAct", "requested")


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return f"the number {v!r}"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (list, tuple)):
        return "a list"
    if isinstance(v, Mapping):
        return "an object"
    return f"a {type(v).__name__}"


def _key_path(*keys: str) -> str:
    return ".".join(k if k and all(c.isalnum() or c in "_-*" for c in k) else json.dumps(k) for k in keys)


_NUMBER_TYPES = {int, float}


def _distribution_problem(dist: Any, *where: str) -> str | None:
    """A {value: probability} mapping's first problem, or None."""
    if not isinstance(dist, Mapping):
        return f"{_key_path(*where)}: expected {{value: probability}}, got {_json_type(dist)}"
    probs = dist.values()
    if set(map(type, probs)) <= _NUMBER_TYPES:  # the common case, at C speed: numbers (not bool) ...
        total = sum(probs)
        if (
            total == total
            and min(probs, default=0) >= -_PROB_TOLERANCE
            and max(probs, default=0) <= 1 + _PROB_TOLERANCE
        ):
            return None  # ... in range, none NaN (a NaN makes the sum NaN)
    for value, p in dist.items():
        if type(p) is float or (isinstance(p, (int, float)) and not isinstance(p, bool)):
            if -_PROB_TOLERANCE <= p <= 1 + _PROB_TOLERANCE:
                continue
            if p != p or p in (math.inf, -math.inf):
                return f"{_key_path(*where, str(value))}: expected a probability in [0, 1], got non-finite {p!r}"
            return f"{_key_path(*where, str(value))}: expected a probability in [0, 1], got {p!r}"
        return f"{_key_path(*where, str(value))}: expected a probability in [0, 1], got {_json_type(p)}"
    return None


def belief_problem(belief: Any) -> str | None:
    """The first way ``belief`` departs from the documented layout (``docs/contexts.md``), as
    ``"beliefs.area: expected {value: probability}, got a list"``; None when it follows it.

    A belief state is an object whose ``beliefs`` is a non-empty object mapping each slot —
    the informable slots, ``method``, ``discourseAct`` and ``requested`` — to a ``{value:
    probability}`` object (for ``requested``: requestable slot → probability); probabilities are
    real numbers in [0, 1] (within 1e-9); ``method``, ``discourseAct`` and ``requested`` at the
    top level, if there, likewise; ``features`` and any other top-level key are free, but no
    number anywhere may be NaN or infinite.
    """
    if not isinstance(belief, Mapping):
        return f"expected a belief state (an object), got {_json_type(belief)}"
    inner = belief.get("beliefs")
    if not isinstance(inner, Mapping):
        got = "nothing" if "beliefs" not in belief else _json_type(inner)
        return f"beliefs: expected {{slot: {{value: probability}}}}, got {got}"
    if not inner:
        return "beliefs: expected {slot: {value: probability}}, got an empty object"
    for slot, dist in inner.items():
        problem = _distribution_problem(dist, "beliefs", str(slot))
        if problem:
            return problem
    for key in _TOP_LEVEL_DISTRIBUTIONS:
        if key in belief:
            problem = _distribution_problem(belief[key], key)
            if problem:
                return problem
    for key, v in belief.items():
        if key != "beliefs":
            bad = _non_finite(v, key)
            if bad:
                return bad
    return None


#: Values that hold no float (checked for NaN and infinity without a look inside).
_PLAIN_TYPES = {str, int, bool, type(None)}


def _non_finite(obj: Any, where: str) -> str | None:
    """Where ``obj`` (JSON-like) holds NaN or an infinity, or None."""
    t = type(obj)
    if t is float:
        return None if math.isfinite(obj) else f"{where}: non-finite number {obj!r}"
    if t in _PLAIN_TYPES:
        return None
    if isinstance(obj, Mapping):
        values, keys = list(obj.values()), list(obj)
    elif isinstance(obj, (list, tuple)):
        values, keys = list(obj), None
    else:
        return None
    if set(map(type, values)) <= _PLAIN_TYPES:  # e.g. a list of flags: nothing to look into
        return None
    for i, v in enumerate(values):
        bad = _non_finite(v, f"{where}.{keys[i]}" if keys is not None else f"{where}[{i}]")
        if bad:
            return bad
    return None


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
        """Write as JSONL or Parquet (by suffix), atomically; a belief that departs from the
        documented layout (:func:`belief_problem`) is refused, naming the context."""
        path = Path(path)
        for i, b in enumerate(self.beliefs):  # what load would refuse is not written
            problem = belief_problem(b)
            if problem:
                raise TableFormatError(f"{path}: cannot save context set: context {i} ({self.ids[i]}): {problem}")
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
                got = _json_type(r["belief"]) if "belief" in r else "nothing"
                raise TableFormatError(f"{path}:{where}: 'belief' must be a belief state (an object), got {got}")
            problem = belief_problem(r["belief"])
            if problem:
                raise TableFormatError(f"{path}:{where}: {problem}")
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
