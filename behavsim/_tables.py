"""Response tables: what one policy answered on every context of one context set.

File format ``behavsim-responses`` version 1, as JSON Lines (``.jsonl``) or Parquet
(``.parquet``):

* JSONL: the first line is a header object
  ``{"format": "behavsim-responses", "version": 1, "policy": {"id": ..., ...},
  "context_set": {"fingerprint": ..., "size": N}}``; then exactly N lines, one per context in
  context-set order: ``{"i": 0, "context_id": "c0", "act": "request(food)", "prompt": "..." | null,
  "error": null | "message"}``. ``act`` is null only when the policy failed on that context
  (``error`` says why) or answered with text only (an end-to-end model: ``error`` null, ``prompt``
  given); a row has at least an act, a prompt or an error.
* Parquet: the same columns (``i, context_id, act, prompt, error``) with the header object stored
  as JSON under the schema metadata key ``behavsim``.

``policy`` holds at least ``id`` (unique among the tables compared) and any metadata: ``name``,
``seed``, ``reward``, ``checkpoint`` (training dialogues), ``nlg_seed``, ... Acts are stored in
canonical form. Loading validates everything and names the file and line of any problem.

Optional columns, present only when the table has them (tables without them are unchanged):

* ``raw``: the text a policy answered in, when it answers in free text (a language model): the
  act and prompt were read from it; on a row with an ``error`` (an unparsable or off-domain
  answer) it is the answer that was refused, kept for inspection;
* ``repeats`` and ``agreement``, for a table made with ``respond(..., repeat=K)`` (every
  context asked ``K`` times; :mod:`behavsim._repeats`): ``repeats`` lists the answers of repeats
  ``1 .. K-1`` as ``{"act", "prompt", "error", "raw"}`` objects (repeat 0 is the row itself),
  ``agreement`` is the context's self-agreement (the fraction of its pairs of answers with the
  same act), and the header's ``repeat`` object holds ``k`` and the mean, ``self_agreement_tmr``.
  In Parquet, ``repeats`` is a JSON string.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ._acts import canonical_act
from ._errors import ActParseError, TableFormatError
from ._io import canonical_json, check_header, read_rows, write_jsonl, write_jsonl_body, write_parquet
from ._repeats import agreement, answer_key, self_agreement
from ._repr import table_repr

__all__ = ["ResponseTable", "context_fingerprint", "FORMAT_NAME", "FORMAT_VERSION"]

#: A string as :func:`canonical_json` writes it (``ensure_ascii=False``: json's own encoder).
_encode_string = json.encoder.encode_basestring

FORMAT_NAME = "behavsim-responses"
FORMAT_VERSION = 1


def context_fingerprint(contexts: Iterable[Mapping[str, Any]]) -> str:
    """Content fingerprint of an ordered sequence of contexts (JSON-serialisable mappings).

    ``sha256:`` + the hex digest of the canonical JSON (sorted keys, no whitespace) of each
    context, one per line, in order. Changing, adding, removing or reordering a context changes it.
    """
    h = hashlib.sha256()
    n = 0
    for ctx in contexts:
        h.update(canonical_json(ctx).encode("utf-8"))
        h.update(b"\n")
        n += 1
    return f"sha256:{h.hexdigest()[:32]}:{n}"


@dataclass
class ResponseTable:
    """One policy's responses on a context set.

    ``acts[i]``/``prompts[i]`` answer context ``i``; ``None`` marks a missing act (policy error,
    see ``errors[i]``, or a text-only answer: ``errors[i]`` ``None``) or a policy without a
    generator (prompt). ``policy`` is its metadata with at least ``id``. ``raws[i]``: the free
    text the answer was read from (empty list: none kept); ``repeats[i]``: the answers of repeats
    ``1 .. K-1`` to context ``i`` (``None``: asked once).
    """

    policy: dict[str, Any]
    context_fingerprint: str
    acts: list[str | None]
    prompts: list[str | None]
    errors: list[str | None] = field(default_factory=list)
    context_ids: list[str] = field(default_factory=list)
    source: str | None = None
    raws: list[str | None] = field(default_factory=list)
    repeats: list[list[dict[str, str | None]]] | None = None

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
        if self.raws.count(None) == len(self.raws):
            self.raws = []
        for name in ("prompts", "errors", "context_ids") + (("raws",) if self.raws else ()):
            if len(getattr(self, name)) != n:
                raise TableFormatError(f"{where}: {name} has {len(getattr(self, name))} entries, acts has {n}")
        if self.repeats is not None:
            self.repeats = _check_repeats(self.repeats, n, where)
        try:  # each distinct act once (a table of many contexts repeats a few thousand)
            canon = {a: canonical_act(a) for a in dict.fromkeys(self.acts) if a is not None}
        except (ActParseError, TypeError):
            canon = None
        if canon is not None:
            self.acts = [None if a is None else canon[a] for a in self.acts]
            return
        acts: list[str | None] = []  # unhashable acts, or one that does not parse: named by its context
        for i, a in enumerate(self.acts):
            if a is None:
                acts.append(None)
                continue
            try:
                acts.append(canonical_act(a))
            except ActParseError as exc:
                raise TableFormatError(f"{where}: context {i}: {exc}") from None
        self.acts = acts

    @property
    def id(self) -> str:
        return self.policy["id"]

    def __len__(self) -> int:
        return len(self.acts)

    @property
    def n_errors(self) -> int:
        return sum(e is not None for e in self.errors)

    @property
    def n_text_only(self) -> int:
        """Contexts answered with a prompt and no act (an end-to-end model's text-only answers)."""
        return sum(a is None and e is None for a, e in zip(self.acts, self.errors))

    # ------------------------------------------------------------------ repeats
    @property
    def n_repeats(self) -> int:
        """How many times every context was asked (1 without repeats)."""
        return 1 + (len(self.repeats[0]) if self.repeats else 0)

    def raw(self, i: int) -> str | None:
        """The free text of context ``i``'s answer (``None``: not kept)."""
        return self.raws[i] if self.raws else None

    @property
    def agreement(self) -> list[float] | None:
        """Per context, the fraction of its pairs of answers that agree (:mod:`behavsim._repeats`);
        ``None`` for a table asked once."""
        if not self.repeats or self.n_repeats < 2:
            return None
        out = []
        for i, more in enumerate(self.repeats):
            keys = [answer_key(self.acts[i], self.errors[i], self.raw(i))]
            keys += [answer_key(r.get("act"), r.get("error"), r.get("raw")) for r in more]
            out.append(agreement(keys))
        return out

    @property
    def self_agreement_tmr(self) -> float | None:
        """The mean of :attr:`agreement` over the contexts: the policy's TMR with itself."""
        per = self.agreement
        return None if per is None else self_agreement(per)

    def repeat_tables(self) -> list["ResponseTable"]:
        """One table per repeat (``[self]`` when asked once): repeat ``r``'s answers, its policy id
        ``<id>#r<r>`` for ``r >= 1``, so that the repeats can be compared like policies."""
        if not self.repeats:
            return [self]
        out = [self]
        for r in range(1, self.n_repeats):
            rows = [more[r - 1] for more in self.repeats]
            out.append(
                ResponseTable(
                    policy={**self.policy, "id": f"{self.id}#r{r}", "repeat": r},
                    context_fingerprint=self.context_fingerprint,
                    acts=[x.get("act") for x in rows],
                    prompts=[x.get("prompt") for x in rows],
                    errors=[x.get("error") for x in rows],
                    context_ids=list(self.context_ids),
                    raws=[x.get("raw") for x in rows],
                )
            )
        return out

    def __repr__(self) -> str:  # short: kind, size, fingerprint, a summary (never the rows)
        return table_repr(self)

    # ------------------------------------------------------------------ saving
    def header(self) -> dict[str, Any]:
        out = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "policy": self.policy,
            "context_set": {"fingerprint": self.context_fingerprint, "size": len(self)},
        }
        if self.repeats is not None:
            out["repeat"] = {"k": self.n_repeats, "self_agreement_tmr": self.self_agreement_tmr}
        return out

    def rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = [
            {"i": i, "context_id": c, "act": a, "prompt": p, "error": e}
            for i, (c, a, p, e) in enumerate(zip(self.context_ids, self.acts, self.prompts, self.errors))
        ]
        if self.raws:
            for r, raw in zip(rows, self.raws):
                r["raw"] = raw
        per = self.agreement
        if self.repeats is not None and per is not None:
            for r, more, x in zip(rows, self.repeats, per):
                r["repeats"] = more
                r["agreement"] = x
        return rows

    def save(self, path: str | os.PathLike) -> Path:
        """Write as JSONL or Parquet (by suffix), atomically."""
        path = Path(path)
        if path.suffix == ".parquet":
            rows = self.rows()
            cols = ["i", "context_id", "act", "prompt", "error"]
            fields = [("i", pa.int64())] + [(c, pa.string()) for c in cols[1:]]
            if self.raws:
                cols.append("raw")
                fields.append(("raw", pa.string()))
            if self.repeats is not None:
                for r in rows:
                    r["repeats"] = canonical_json(r["repeats"])
                cols += ["repeats", "agreement"]
                fields += [("repeats", pa.string()), ("agreement", pa.float64())]
            return write_parquet(path, self.header(), {k: [r[k] for r in rows] for k in cols}, pa.schema(fields))
        body = self._jsonl_body()
        if body is not None:
            return write_jsonl_body(path, self.header(), body)
        return write_jsonl(path, self.header(), self.rows())

    def _jsonl_body(self) -> bytes | None:
        """The JSONL rows as :func:`canonical_json` writes them, made without a dict per row: each
        distinct act, prompt and error encoded once (a table of many contexts repeats a few
        thousand answers). ``None`` for a table with raw texts or repeats, or values that are not
        plain strings (the general path writes those)."""
        if self.raws or self.repeats is not None:
            return None
        enc = _encode_string
        memo: dict[Any, str] = {None: "null"}
        lines = []
        for i, (c, a, p, e) in enumerate(zip(self.context_ids, self.acts, self.prompts, self.errors)):
            try:
                ja, jp, je = memo[a], memo[p], memo[e]
            except KeyError:
                for v in (a, p, e):
                    if v not in memo:
                        if type(v) is not str:
                            return None
                        memo[v] = enc(v)
                ja, jp, je = memo[a], memo[p], memo[e]
            if type(c) is not str:
                return None
            lines.append(f'{{"act":{ja},"context_id":{enc(c)},"error":{je},"i":{i},"prompt":{jp}}}\n')
        return "".join(lines).encode("utf-8")

    # ------------------------------------------------------------------ loading
    @staticmethod
    def _columns(rows: Sequence[tuple[str, dict]]) -> tuple[list, list, list, list[str]] | None:
        """The act, prompt, error and context id columns when every row is well formed (checked
        column by column with builtins), else None."""
        get = [r.get for _, r in rows]
        if [g("i") for g in get] != list(range(len(rows))):
            return None
        cols = []
        for key in ("act", "prompt", "error"):
            col = [g(key) for g in get]
            if not all(v is None or type(v) is str for v in col):
                return None
            cols.append(col)
        acts, prompts, errors = cols
        if any(a is None and e is None and p is None for a, p, e in zip(acts, prompts, errors)):
            return None
        ids = [g("context_id", k) for k, g in enumerate(get)]
        return acts, prompts, errors, [v if type(v) is str else str(v) for v in ids]

    @staticmethod
    def _first_problem(rows: Sequence[tuple[str, dict]], path: Path) -> None:
        """Raise :class:`TableFormatError` naming the first malformed row."""
        for k, (line, r) in enumerate(rows):
            where = f"{path}:{line}"
            if r.get("i") != k:
                raise TableFormatError(f"{where}: expected context index i={k}, found {r.get('i')!r}")
            for key in ("act", "prompt", "error"):
                v = r.get(key)
                if v is not None and not isinstance(v, str):
                    raise TableFormatError(f"{where}: {key!r} must be a string or null, found {type(v).__name__}")
            if r.get("act") is None and r.get("error") is None and r.get("prompt") is None:
                raise TableFormatError(f"{where}: row has neither an act, a prompt nor an error")
            try:
                None if r.get("act") is None else canonical_act(r["act"])
            except ActParseError as exc:
                raise TableFormatError(f"{where}: {exc}") from None

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ResponseTable":
        """Read a table written by :meth:`save`; any problem raises :class:`TableFormatError`.
        The table's ``source`` is ``path`` as given (``./x.jsonl`` stays ``./x.jsonl``)."""
        source = os.fspath(path)
        path = Path(path)
        built: list[ResponseTable] = []

        def precheck(header: Any, rows: list) -> None:  # every row's own problem is named first
            header = cls._check_header(header, f"{path}:1" if path.suffix != ".parquet" else str(path))
            built.append(cls._from_rows(header, rows, path, source))

        read_rows(path, "response table", precheck)  # then the checksum
        return built[0]

    @staticmethod
    def _check_header(header: Any, where: str) -> dict[str, Any]:
        check_header(header, where, FORMAT_NAME, FORMAT_VERSION, "response table")
        cs = header.get("context_set")
        if (
            not isinstance(cs, dict)
            or not isinstance(cs.get("fingerprint"), str)
            or not isinstance(cs.get("size"), int)
        ):
            raise TableFormatError(f"{where}: header needs context_set.fingerprint (string) and .size (integer)")
        if not isinstance(header.get("policy"), dict) or "id" not in header["policy"]:
            raise TableFormatError(f"{where}: header needs a policy object with an 'id'")
        return header

    @classmethod
    def _from_rows(cls, header: dict, rows: Sequence[tuple[str, dict]], path: Path, source: str) -> "ResponseTable":
        size = header["context_set"]["size"]
        if len(rows) != size:
            raise TableFormatError(
                f"{path}: header says {size} contexts but the file has {len(rows)} rows (truncated or damaged file?)"
            )
        fast = cls._columns(rows)
        if fast is None:  # something is wrong: find the first bad row and name it
            cls._first_problem(rows, path)
            raise TableFormatError(f"{path}: damaged rows")  # pragma: no cover (found above)
        acts, prompts, errors, ids = fast
        canon: dict[str, str] = {}
        for a in dict.fromkeys(acts):
            if a is not None:
                try:
                    canon[a] = canonical_act(a)
                except ActParseError as exc:
                    line = rows[acts.index(a)][0]
                    raise TableFormatError(f"{path}:{line}: {exc}") from None
        acts = [None if a is None else canon[a] for a in acts]
        raws, repeats = cls._optional_columns(rows, path)
        return cls(
            policy=dict(header["policy"]),
            context_fingerprint=header["context_set"]["fingerprint"],
            acts=acts,
            prompts=prompts,
            errors=errors,
            context_ids=ids,
            source=source,
            raws=raws,
            repeats=repeats,
        )

    @staticmethod
    def _optional_columns(rows: Sequence[tuple[str, dict]], path: Path) -> tuple[list, list | None]:
        """The ``raw`` and ``repeats`` columns of a table that has them (see the module's notes)."""
        raws: list[str | None] = []
        if any("raw" in r for _, r in rows):
            for line, r in rows:
                v = r.get("raw")
                if v is not None and not isinstance(v, str):
                    raise TableFormatError(f"{path}:{line}: 'raw' must be a string or null, found {type(v).__name__}")
                raws.append(v)
        if not any("repeats" in r for _, r in rows):
            return raws, None
        repeats = []
        for line, r in rows:
            v = r.get("repeats")
            if isinstance(v, str):  # Parquet keeps it as JSON text
                try:
                    v = json.loads(v)
                except ValueError:
                    raise TableFormatError(f"{path}:{line}: 'repeats' is not JSON") from None
            repeats.append(v)
        return raws, _check_repeats(repeats, len(rows), str(path))


def _check_repeats(repeats: Any, n: int, where: str) -> list[list[dict[str, str | None]]]:
    """``repeats`` checked: one list per context, all of the same length ``K - 1 >= 1``, of
    ``{"act", "prompt", "error", "raw"}`` objects whose acts parse (kept canonical)."""
    if not isinstance(repeats, list) or len(repeats) != n:
        raise TableFormatError(f"{where}: repeats must hold one list per context ({n})")
    width = None
    out = []
    for i, more in enumerate(repeats):
        if not isinstance(more, list) or not more or (width is not None and len(more) != width):
            raise TableFormatError(f"{where}: context {i}: repeats must be a non-empty list, as long for every context")
        width = len(more)
        row = []
        for x in more:
            if not isinstance(x, dict) or any(v is not None and not isinstance(v, str) for v in x.values()):
                raise TableFormatError(f"{where}: context {i}: a repeat must be an object of strings or nulls")
            act = x.get("act")
            if act is None and x.get("error") is None:
                raise TableFormatError(f"{where}: context {i}: a repeat has neither an act nor an error")
            try:
                act = None if act is None else canonical_act(act)
            except ActParseError as exc:
                raise TableFormatError(f"{where}: context {i}: repeat: {exc}") from None
            row.append({"act": act, "prompt": x.get("prompt"), "error": x.get("error"), "raw": x.get("raw")})
        out.append(row)
    return out
