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

**Histories.** A context may also carry the dialogue so far, ``history``: a list of turns
``{"speaker": "system" | "user", "text": str, "act": str | null}`` (acts in canonical form), with
or without a belief (``belief`` null: a text-only context). A set with histories has a
``history`` entry in every row (null for a context without one; Parquet: a ``history`` column)
and its header also holds ``text_fingerprint``, the fingerprint of its text-only view
(:meth:`ContextSet.text_only`: no beliefs, no turn acts). A set without histories is written
exactly as before.

The fingerprint covers what a policy sees, in order: the beliefs — and, in a set with histories,
each context's ``{"belief": ..., "history": ...}`` — not the metadata (so a set without histories
keeps the fingerprint it always had). It is checked on load, so a hand-edited or damaged file is
refused instead of half-read. One edit is recognised: a file of a set with histories from which
every belief and every turn act was removed loads as the set's text-only view when its content
matches the header's ``text_fingerprint`` (the file's checksum covered the full set and is not
compared then). A belief that departs from the layout is refused with the file, line and key
(``cgen.jsonl:17: beliefs.area: expected {value: probability}, got a list``). Sets in memory may
hold any mapping (a policy of your own may read another layout); :meth:`ContextSet.save` refuses
what :meth:`ContextSet.load` would.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._acts import canonical_act
from ._errors import ActParseError, TableFormatError
from ._io import VERIFIED, canonical_json, check_header, read_rows, write_jsonl, write_parquet
from ._repr import contextset_repr
from ._tables import context_fingerprint

__all__ = [
    "ContextSet",
    "CONTEXTS_FORMAT",
    "CONTEXTS_VERSION",
    "TURN_KEYS",
    "SPEAKERS",
    "check_history",
    "belief_problem",
]

CONTEXTS_FORMAT = "behavsim-contexts"
CONTEXTS_VERSION = 1

#: The keys of a history turn and the speakers a turn can have.
TURN_KEYS = ("speaker", "text", "act")
SPEAKERS = ("system", "user")


def check_history(history: Any, where: str) -> list[dict[str, Any]]:
    """A dialogue history in its stored form — a list of turns ``{"speaker", "text", "act"}``,
    ``act`` canonical or None (a missing ``act`` is None) — or a :class:`TableFormatError` naming
    ``where``, the turn and the problem."""
    if not isinstance(history, (list, tuple)):
        raise TableFormatError(f"{where}: 'history' must be a list of turns, got {type(history).__name__}")
    out = []
    for k, turn in enumerate(history):
        at = f"{where}: history turn {k}"
        if not isinstance(turn, Mapping):
            raise TableFormatError(f"{at}: a turn must be an object {{speaker, text, act}}, got {type(turn).__name__}")
        extra = sorted(set(turn) - set(TURN_KEYS))
        if extra:
            raise TableFormatError(f"{at}: unknown key(s) {extra} (a turn has speaker, text and an optional act)")
        speaker, text, act = turn.get("speaker"), turn.get("text"), turn.get("act")
        if speaker not in SPEAKERS:
            raise TableFormatError(f"{at}: speaker must be 'system' or 'user', got {speaker!r}")
        if not isinstance(text, str):
            raise TableFormatError(f"{at}: text must be a string, got {type(text).__name__}")
        if act is not None:
            if not isinstance(act, str):
                raise TableFormatError(f"{at}: act must be a dialogue-act string or null, got {type(act).__name__}")
            try:
                act = canonical_act(act)
            except ActParseError as exc:
                raise TableFormatError(f"{at}: {exc}") from None
        out.append({"speaker": speaker, "text": text, "act": act})
    return out


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
    """An ordered list of dialogue contexts — belief states and/or dialogue histories — with
    per-context metadata and a content fingerprint.

    ``beliefs[i]`` is context i's belief state (``None``: a text-only context, which must have a
    history); ``histories`` is ``None`` for a set without histories, else one entry per context:
    its turns (see :func:`check_history`) or ``None``.
    """

    beliefs: list[Any]
    metas: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    histories: list[Any] | None = None
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
        if self.histories is not None:
            if len(self.histories) != n:
                raise TableFormatError(f"context set: {n} beliefs but {len(self.histories)} histories")
            if all(h is None for h in self.histories):
                self.histories = None
            else:
                self.histories = [
                    None if h is None else check_history(h, f"context {i}") for i, h in enumerate(self.histories)
                ]
        for i, b in enumerate(self.beliefs):
            if b is None and self.history(i) is not None:
                continue
            if not isinstance(b, dict):
                what = (
                    "has neither a belief state nor a history"
                    if b is None
                    else (f"a belief state must be a mapping, got {type(b).__name__}")
                )
                raise TableFormatError(f"context {i}: {what}")

    @property
    def has_histories(self) -> bool:
        """Does any context carry a dialogue history?"""
        return self.histories is not None

    def history(self, i: int) -> list[dict[str, Any]] | None:
        """Context ``i``'s history (its turns), or None."""
        return None if self.histories is None else self.histories[i]

    @property
    def n_histories(self) -> int:
        """How many contexts carry a history."""
        return 0 if self.histories is None else sum(h is not None for h in self.histories)

    @property
    def n_beliefs(self) -> int:
        """How many contexts carry a belief state."""
        return sum(b is not None for b in self.beliefs)

    def _fingerprinted(self) -> Any:
        if self.histories is None:
            return self.beliefs
        return ({"belief": b, "history": h} for b, h in zip(self.beliefs, self.histories))

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = context_fingerprint(self._fingerprinted())
        return self._fingerprint

    @property
    def text_fingerprint(self) -> str | None:
        """The fingerprint of :meth:`text_only` (None for a set without histories)."""
        if self.histories is None:
            return None
        return context_fingerprint(
            {"belief": None, "history": None if h is None else [_text_turn(t) for t in h]} for h in self.histories
        )

    def text_only(self, description: str | None = None) -> "ContextSet":
        """The same contexts as an end-to-end system would see them: every history with its turns'
        speaker and text only (acts removed), no belief states. Every context must have a history.
        Ids and metadata are kept; the set's ``meta`` records the full set's fingerprint."""
        missing = [i for i in range(len(self)) if self.history(i) is None]
        if missing:
            raise TableFormatError(
                f"context set{_named(self)}: {len(missing)} of {len(self)} contexts have no history "
                f"(first: {self.ids[missing[0]]!r}); a text-only view needs one for every context"
            )
        assert self.histories is not None
        meta = {
            "builder": "text-only",
            "parent": self.fingerprint,
            "parent_meta": self.meta,
            "description": description,
        }
        return ContextSet(
            [None] * len(self),
            [dict(m) for m in self.metas],
            list(self.ids),
            meta,
            histories=[[_text_turn(t) for t in h] for h in self.histories],
        )

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
            [self.beliefs[i] for i in idx],
            [dict(self.metas[i]) for i in idx],
            [self.ids[i] for i in idx],
            meta,
            histories=None if self.histories is None else [self.histories[i] for i in idx],
        )

    @classmethod
    def concat(cls, sets: Sequence["ContextSet"], description: str | None = None) -> "ContextSet":
        """The union of several sets in order (duplicates kept: a context set is a sample)."""
        beliefs, metas, ids = [], [], []
        histories: list[Any] = []
        for s in sets:
            beliefs += s.beliefs
            metas += [dict(m) for m in s.metas]
            ids += list(s.ids)
            histories += s.histories if s.histories is not None else [None] * len(s)
        if len(set(ids)) != len(ids):  # make ids unique by prefixing the part index
            ids = [f"{k}:{cid}" for k, s in enumerate(sets) for cid in s.ids]
        meta = {
            "builder": "union",
            "parts": [s.meta | {"fingerprint": s.fingerprint} for s in sets],
            "description": description,
        }
        return cls(beliefs, metas, ids, meta, histories=histories)

    # ------------------------------------------------------------------ I/O
    def header(self) -> dict[str, Any]:
        header = {
            "format": CONTEXTS_FORMAT,
            "version": CONTEXTS_VERSION,
            "size": len(self),
            "fingerprint": self.fingerprint,
            "meta": self.meta,
        }
        if self.histories is not None:
            header["text_fingerprint"] = self.text_fingerprint
        return header

    def save(self, path: str | os.PathLike) -> Path:
        """Write as JSONL or Parquet (by suffix), atomically; a belief that departs from the
        documented layout (:func:`belief_problem`) is refused, naming the context."""
        path = Path(path)
        for i, b in enumerate(self.beliefs):  # what load would refuse is not written
            problem = None if b is None else belief_problem(b)  # None: a text-only context
            if problem:
                raise TableFormatError(f"{path}: cannot save context set: context {i} ({self.ids[i]}): {problem}")
        path.parent.mkdir(parents=True, exist_ok=True)
        hists = self.histories
        try:
            if path.suffix == ".parquet":
                columns: dict[str, list] = {
                    "i": list(range(len(self))),
                    "id": self.ids,
                    "belief": [canonical_json(b) for b in self.beliefs],
                    "meta": [canonical_json(m) for m in self.metas],
                }
                if hists is not None:
                    columns["history"] = [canonical_json(h) for h in hists]
                return write_parquet(path, self.header(), columns)
            if hists is None:
                rows: Any = (
                    {"i": i, "id": cid, "belief": b, "meta": m}
                    for i, (cid, b, m) in enumerate(zip(self.ids, self.beliefs, self.metas))
                )
            else:
                rows = (
                    {"i": i, "id": cid, "belief": b, "history": h, "meta": m}
                    for i, (cid, b, h, m) in enumerate(zip(self.ids, self.beliefs, hists, self.metas))
                )
            return write_jsonl(path, self.header(), rows)
        except ValueError as exc:  # NaN/inf are not JSON
            raise TableFormatError(f"{path}: cannot save context set: {exc}") from None

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ContextSet":
        """Read a set written by :meth:`save`; any problem raises :class:`TableFormatError`."""
        path = Path(path)
        built: list[ContextSet] = []

        def precheck(header: Any, rows: list) -> str | None:
            check_header(header, str(path), CONTEXTS_FORMAT, CONTEXTS_VERSION, "context set")
            if header.get("size") != len(rows):
                raise TableFormatError(
                    f"{path}: header says {header.get('size')} contexts but the file has {len(rows)} "
                    "(truncated or damaged file?)"
                )
            cs = cls._from_rows(header, rows, path)
            built.append(cs)
            if (
                header.get("fingerprint") != cs.fingerprint
                and cs.histories is not None
                and isinstance(header.get("text_fingerprint"), str)
                and header["text_fingerprint"] == cs.fingerprint
                and cs.n_beliefs == 0
                and all(t["act"] is None for h in cs.histories if h is not None for t in h)
            ):  # the text-only view of the set the header describes
                cs.meta = {"builder": "text-only", "parent": header.get("fingerprint"), "parent_meta": cs.meta}
                return VERIFIED
            if (
                header.get("fingerprint") != cs.fingerprint
                and cs.histories is not None
                and header.get("text_fingerprint")
                and (cs.n_beliefs == 0 or all(t["act"] is None for h in cs.histories if h is not None for t in h))
            ):
                raise TableFormatError(
                    f"{path}: content does not match the fingerprint in its header ({header.get('fingerprint')} != "
                    f"{cs.fingerprint}), nor its text-only view's; a text-only copy must remove every belief and "
                    "every turn act"
                )
            return None

        header, _ = read_rows(path, "context set", precheck)
        cs = built[0]
        if cs.meta.get("builder") == "text-only" and cs.meta.get("parent") == header.get("fingerprint"):
            return cs
        if header.get("fingerprint") != cs.fingerprint:
            raise TableFormatError(
                f"{path}: content does not match the fingerprint in its header "
                f"({header.get('fingerprint')} != {cs.fingerprint}); the file was edited or damaged"
            )
        return cs

    @classmethod
    def _from_rows(cls, header: dict, rows: list, path: Path) -> "ContextSet":
        beliefs, metas, ids, histories = [], [], [], []
        for k, (where, r) in enumerate(rows):
            if path.suffix == ".parquet":
                try:
                    r = {
                        **r,
                        "belief": json.loads(r["belief"]),
                        "meta": json.loads(r["meta"]) if r.get("meta") else {},
                        "history": json.loads(r["history"]) if r.get("history") else None,
                    }
                except (KeyError, TypeError, json.JSONDecodeError, RecursionError) as exc:
                    raise TableFormatError(f"{path}:{where}: damaged belief/history/meta column ({exc})") from None
            if r.get("i") != k:
                raise TableFormatError(f"{path}:{where}: expected context index i={k}")
            belief, history = r.get("belief"), r.get("history")
            if history is not None:
                history = check_history(history, f"{path}:{where}")
            if not isinstance(belief, dict) and not (belief is None and history is not None):
                got = _json_type(belief) if "belief" in r else "nothing"
                raise TableFormatError(
                    f"{path}:{where}: 'belief' must be a belief state (an object"
                    + (", or null in a context with a history" if header.get("text_fingerprint") else "")
                    + f"), got {got}"
                )
            if belief is not None:
                problem = belief_problem(belief)
                if problem:
                    raise TableFormatError(f"{path}:{where}: {problem}")
            beliefs.append(belief)
            histories.append(history)
            metas.append(r.get("meta") or {})
            ids.append(str(r.get("id", f"c{k}")))
        return cls(beliefs, metas, ids, dict(header.get("meta") or {}), source=str(path), histories=histories)

    def summary(self, i: int) -> str:
        """A one-line summary of context ``i``: top value and belief per informable slot, method
        (a text-only context: its last turn)."""
        if self.beliefs[i] is None:
            h = self.history(i) or []
            return f"[text] {h[-1]['speaker']}: {h[-1]['text']}" if h else "[text] (empty history)"
        b = self.beliefs[i].get("beliefs", {})
        parts = []
        for slot, dist in b.items():
            if slot in ("requested",) or not isinstance(dist, Mapping) or not dist:
                continue
            top = max(dist.items(), key=lambda kv: (kv[1], kv[0]))
            parts.append(f"{slot}={top[0]}:{top[1]:.2f}")
        return " ".join(parts)


def _text_turn(turn: Mapping[str, Any]) -> dict[str, Any]:
    return {"speaker": turn["speaker"], "text": turn["text"], "act": None}


def _named(cs: ContextSet) -> str:
    return f" {cs.source}" if cs.source else ""
