"""Ontology + venue database of a slot-filling domain, in PyDial's file formats.

A domain is a *rules* JSON file (PyDial's ``<Domain>-rules.json``: ``type``, ``informable``
slot -> values, ``requestable``, ``system_requestable``, optional ``binary``, ``method``,
``discourseAct``) and an SQLite database with one table of venues (one column per slot).

Shipped domains are listed in :data:`DOMAINS` (a :class:`behavsim.Registry`):

* ``camrestaurants`` — PyDial's CamRestaurants ontology and database (``policies/simulation/data/
  camrestaurants/``, PyDial's files unchanged, Apache-2.0, with PyDial's NOTICE beside them);
  the domain of the paper's task and the default (``resolve_domain(None)``);
* ``example-restaurants`` — behavsim's own invented Cambridge-restaurants-style domain
  (``policies/simulation/data/``, written by ``policies/simulation/data/make_domain.py``, ``Domain.builtin()``): an
  example of a custom domain, and the domain of checkpoints written before the default changed.

``resolve_domain(x)`` accepts a registered name, a :class:`Domain`, a rules file path (the
database found beside it) or a ``(rules, db)`` pair; ``Domain.from_pydial(rules, db)`` loads
PyDial's files directly. As PyDial's ontology does, the system-requestable slots are kept in
sorted order (CamRestaurants' rules file lists them as food, pricerange, area).

Queries are answered from precomputed per-(slot, value) bitsets (Python ints, one bit per
venue), so ``count``/``matches`` cost well under a microsecond for cached constraint sets.
"""

from __future__ import annotations

import json
import os.path
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from behavsim import BehavsimError, ConfigError, Registry, UnknownName

__all__ = [
    "Domain",
    "DomainError",
    "UnknownDomain",
    "DOMAINS",
    "resolve_domain",
    "load_domain",
    "DONTCARE",
    "NONE_VALUE",
    "DATA_DIR",
    "DEFAULT_DOMAIN",
]

DONTCARE = "dontcare"
NONE_VALUE = "**NONE**"
DATA_DIR = Path(__file__).resolve().parent / "data"
_BUILTIN_RULES = DATA_DIR / "behavsim-restaurants-rules.json"
_BUILTIN_DB = DATA_DIR / "behavsim-restaurants-dbase.db"
_CAMREST_RULES = DATA_DIR / "camrestaurants" / "CamRestaurants-rules.json"
_CAMREST_DB = DATA_DIR / "camrestaurants" / "CamRestaurants-dbase.db"
#: The registered name of the domain used when none is given: PyDial's CamRestaurants, the paper's task.
DEFAULT_DOMAIN = "camrestaurants"
_REQUIRED_KEYS = ("type", "informable", "requestable", "system_requestable", "method", "discourseAct")


class DomainError(BehavsimError, ValueError):
    """A rules file or database is missing, unreadable or inconsistent."""


class UnknownDomain(UnknownName):
    """A domain name that :data:`DOMAINS` does not hold."""


def _str_list(value, key: str, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DomainError(f"{path}: key {key!r} must be a list of strings, got {type(value).__name__}")
    return tuple(v.strip().lower() for v in value)


class Domain:
    """Immutable ontology + database with fast constraint queries.

    Attributes: ``name`` (the rules' ``type``), ``informable`` (slot -> tuple of values, rules
    order), ``requestable``, ``system_requestable`` (sorted by :meth:`from_pydial`, as
    PyDial's ontology returns them), ``binary``, ``method``,
    ``discourse_act`` (PyDial's list plus ``none`` and ``bye``, as PyDial's ontology returns
    it: 7 entries for the usual rules), ``venues`` (tuple of dicts, database order),
    ``legacy_state`` (``True`` only for the invented example domain: its GP state keeps
    behavsim 0.1's ``lastActionInformNone`` flag, see :mod:`policies.simulation.features`).
    """

    def __init__(
        self,
        name: str,
        informable: Mapping[str, Iterable[str]],
        requestable: Iterable[str],
        system_requestable: Iterable[str],
        method: Iterable[str],
        discourse_act: Iterable[str],
        venues: Iterable[Mapping[str, str]],
        binary: Iterable[str] = (),
        source: str = "<memory>",
        legacy_state: bool = False,
    ) -> None:
        self.name = name
        self.source = source
        self.legacy_state = bool(legacy_state)
        self.informable: dict[str, tuple[str, ...]] = {s: tuple(v) for s, v in informable.items()}
        self.requestable = tuple(requestable)
        self.system_requestable = tuple(system_requestable)
        self.binary = tuple(binary)
        self.method = tuple(method)
        da = list(discourse_act)
        for extra in ("none", "bye"):
            if extra not in da:
                da.append(extra)
        self.discourse_act = tuple(da)
        self.venues: tuple[dict[str, str], ...] = tuple(dict(v) for v in venues)
        for s in self.system_requestable:
            if s not in self.informable:
                raise DomainError(f"{source}: system_requestable slot {s!r} is not informable")
        if "name" not in self.informable:
            raise DomainError(f"{source}: informable slots must include 'name'")
        if not self.venues:
            raise DomainError(f"{source}: the database has no venues")
        self.n_venues = len(self.venues)
        self.all_bits = (1 << self.n_venues) - 1
        self._name_index = {v["name"]: i for i, v in enumerate(self.venues)}
        # per (slot, value) bitset over venues
        self._bits: dict[str, dict[str, int]] = {}
        for slot in self.informable:
            table: dict[str, int] = {}
            for i, v in enumerate(self.venues):
                val = v.get(slot)
                if val is not None:
                    table[val] = table.get(val, 0) | (1 << i)
            self._bits[slot] = table
        self._count_cache: dict[tuple, int] = {}
        self._match_cache: dict[tuple, tuple[int, ...]] = {}
        self._disc_cache: dict[tuple, bool] = {}

    # ------------------------------------------------------------------ loading
    @classmethod
    def builtin(cls) -> "Domain":
        """behavsim's own invented restaurant domain, ``example-restaurants`` (cached;
        domains are immutable); the default is :data:`DEFAULT_DOMAIN`."""
        return _load_cached(str(_BUILTIN_RULES), str(_BUILTIN_DB), True)

    @classmethod
    def named(cls, name: str) -> "Domain":
        """A shipped domain by its registered name (see :data:`DOMAINS`); an unknown name
        raises :class:`UnknownDomain` naming the closest one."""
        return DOMAINS.create(name)

    @classmethod
    def from_pydial(cls, rules_json_path: str | Path, db_path: str | Path, table: str | None = None) -> "Domain":
        """Load a PyDial-format rules JSON + SQLite database.

        ``table`` defaults to the database's only table, or to the table named like the rules
        file's stem without ``-rules`` (PyDial's convention, e.g. ``CamRestaurants``). The
        system-requestable slots are sorted, as PyDial's ontology returns them.
        """
        return cls._load(rules_json_path, db_path, table)

    @classmethod
    def _load(cls, rules_json_path, db_path, table=None, legacy_state: bool = False) -> "Domain":
        rules_path, db_path = Path(rules_json_path), Path(db_path)
        rules = _read_rules(rules_path)
        venues = _read_db(db_path, rules, table, rules_path)
        return cls(
            name=rules["type"],
            informable=rules["informable"],
            requestable=rules["requestable"],
            system_requestable=sorted(rules["system_requestable"]),
            method=rules["method"],
            discourse_act=rules["discourseAct"],
            venues=venues,
            binary=rules.get("binary", ()),
            source=str(rules_path),
            legacy_state=legacy_state,
        )

    # ------------------------------------------------------------------ queries
    def _constraint_bits(self, constraints: Mapping[str, str]) -> int:
        bits = self.all_bits
        for slot, value in constraints.items():
            if value == DONTCARE or value == NONE_VALUE or value is None:
                continue
            table = self._bits.get(slot)
            if table is None:
                raise DomainError(
                    f"{self.source}: unknown slot {slot!r} in constraints; "
                    f"informable slots are {sorted(self.informable)}"
                )
            bits &= table.get(value, 0)
            if not bits:
                return 0
        return bits

    def count(self, constraints: Mapping[str, str]) -> int:
        """Number of venues matching ``constraints`` (``dontcare``/``**NONE**`` ignored)."""
        key = tuple(sorted(constraints.items()))
        n = self._count_cache.get(key)
        if n is None:
            n = self._constraint_bits(constraints).bit_count()
            if len(self._count_cache) < 100_000:
                self._count_cache[key] = n
        return n

    def matches(self, constraints: Mapping[str, str]) -> list[int]:
        """Indices (database order, ascending) of the venues matching ``constraints``."""
        key = tuple(sorted(constraints.items()))
        hit = self._match_cache.get(key)
        if hit is None:
            bits = self._constraint_bits(constraints)
            out = []
            while bits:
                low = bits & -bits
                out.append(low.bit_length() - 1)
                bits ^= low
            hit = tuple(out)
            if len(self._match_cache) < 100_000:
                self._match_cache[key] = hit
        return list(hit)

    def venue_index(self, name: str) -> int | None:
        return self._name_index.get(name)

    def venue(self, index_or_name: int | str) -> dict[str, str]:
        if isinstance(index_or_name, str):
            i = self._name_index.get(index_or_name)
            if i is None:
                raise DomainError(f"{self.source}: no venue named {index_or_name!r}")
            return self.venues[i]
        return self.venues[index_or_name]

    def values(self, slot: str) -> tuple[str, ...]:
        try:
            return self.informable[slot]
        except KeyError:
            raise DomainError(
                f"{self.source}: unknown informable slot {slot!r}; known: {sorted(self.informable)}"
            ) from None

    def can_discriminate(self, constraints: Iterable[tuple[str, str]]) -> bool:
        """PyDial's test: do ≥2 venues match and differ on an informable slot (not name,
        not a slot the constraints mark ``dontcare``)?"""
        key = tuple(constraints)
        hit = self._disc_cache.get(key)
        if hit is None:
            hit = self._can_discriminate(key)
            if len(self._disc_cache) < 100_000:
                self._disc_cache[key] = hit
        return hit

    def _can_discriminate(self, constraints: tuple) -> bool:
        real, dontcare = {}, set()
        for slot, value in constraints:
            if value == DONTCARE:
                dontcare.add(slot)
            else:
                real[slot] = value
        idx = self.matches(real)
        if len(idx) < 2:
            return False
        for slot in self.informable:
            if slot == "name" or slot in dontcare:
                continue
            first = self.venues[idx[0]].get(slot)
            for i in idx[1:]:
                if self.venues[i].get(slot) != first:
                    return True
        return False

    def __repr__(self) -> str:
        sizes = ", ".join(f"{s}:{len(v)}" for s, v in self.informable.items())
        return f"Domain({self.name!r}, venues={self.n_venues}, informable={{{sizes}}})"


@lru_cache(maxsize=8)
def _load_cached(rules: str, db: str, legacy_state: bool = False) -> Domain:
    return Domain._load(rules, db, legacy_state=legacy_state)


#: The shipped domains: name -> factory of a (cached, immutable) :class:`Domain`.
DOMAINS: Registry[Callable[..., Domain]] = Registry("domain", UnknownDomain)
DOMAINS.register("camrestaurants", lambda: _load_cached(str(_CAMREST_RULES), str(_CAMREST_DB)))
DOMAINS.register("example-restaurants", Domain.builtin)


def _db_beside(rules: Path) -> Path:
    stem = rules.name.removesuffix(".json").removesuffix("-rules")
    for cand in (rules.with_name(f"{stem}-dbase.db"), rules.with_name(f"{stem}.db")):
        if cand.is_file():
            return cand
    raise DomainError(
        f"{rules}: no database beside the rules file (looked for {stem}-dbase.db and {stem}.db); pass (rules, db)"
    )


def resolve_domain(domain: "Domain | str | Path | tuple | None" = None) -> Domain:
    """The :class:`Domain` that ``domain`` names.

    ``None`` → the default domain (:data:`DEFAULT_DOMAIN`); a :class:`Domain` as is; a
    registered name (``"camrestaurants"``, ``"example-restaurants"``, case-insensitive); a path
    to a PyDial rules JSON file (the database beside it: ``<X>-dbase.db`` for ``<X>-rules.json``);
    or a ``(rules, db)`` pair of paths. Unknown names raise :class:`UnknownDomain` (a
    ``KeyError``) with the closest name; unreadable files :class:`DomainError`."""
    if domain is None:
        return DOMAINS.create(DEFAULT_DOMAIN)
    if isinstance(domain, Domain):
        return domain
    if isinstance(domain, tuple) and len(domain) == 2:
        rules, db = (Path(p) for p in domain)
        return _load_cached(str(rules.resolve()), str(db.resolve()))
    if isinstance(domain, (str, Path)):
        text = str(domain)
        looks_like_path = isinstance(domain, Path) or text.endswith(".json") or "/" in text or "\\" in text
        if not looks_like_path:
            return DOMAINS.create(text)
        rules = Path(text)
        if not rules.is_file():
            raise DomainError(f"{rules}: rules file not found (domain names: {', '.join(DOMAINS.names())})")
        return _load_cached(str(rules.resolve()), str(_db_beside(rules).resolve()))
    raise DomainError(
        f"domain: expected a domain name, a Domain, a rules file path or a "
        f"(rules, db) pair, got {type(domain).__name__}"
    )


def _read_rules(path: Path) -> dict:
    if not path.is_file():
        raise DomainError(f"{path}: rules file not found")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise DomainError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise DomainError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(raw, dict):
        raise DomainError(f"{path}: expected a JSON object with keys {list(_REQUIRED_KEYS)}")
    missing = [k for k in _REQUIRED_KEYS if k not in raw]
    if missing:
        raise DomainError(f"{path}: missing key(s) {missing} (a PyDial rules file has {list(_REQUIRED_KEYS)})")
    if not isinstance(raw["type"], str):
        raise DomainError(f"{path}: key 'type' must be a string")
    inf = raw["informable"]
    if not isinstance(inf, dict) or not inf:
        raise DomainError(f"{path}: key 'informable' must be a non-empty object slot -> values")
    rules = {
        "type": raw["type"],
        "informable": {s.lower(): _str_list(v, f"informable.{s}", path) for s, v in inf.items()},
    }
    for key in ("requestable", "system_requestable", "method", "discourseAct"):
        rules[key] = _str_list(raw[key], key, path)
    rules["binary"] = _str_list(raw.get("binary", []), "binary", path)
    for s in rules["system_requestable"]:
        if s not in rules["informable"]:
            raise DomainError(f"{path}: system_requestable slot {s!r} is not in 'informable'")
    return rules


def _read_db(path: Path, rules: dict, table: str | None, rules_path: Path) -> list[dict]:
    if not path.is_file():
        raise DomainError(f"{path}: database file not found")
    with open(path, "rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            raise DomainError(f"{path}: not an SQLite database")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:  # pragma: no cover - rare
        raise DomainError(f"{path}: cannot open SQLite database ({exc})") from None
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        if table is None:
            stem = rules_path.name.removesuffix(".json").removesuffix("-rules")
            if len(tables) == 1:
                table = tables[0]
            elif stem in tables:
                table = stem
            else:
                raise DomainError(f"{path}: cannot tell which table holds the venues; tables are {tables}, pass table=")
        elif table not in tables:
            raise DomainError(f"{path}: no table {table!r}; tables are {tables}")
        cur = con.execute(f'SELECT * FROM "{table}"')
        cols = [c[0].lower() for c in cur.description]
        rows = cur.fetchall()
    except sqlite3.DatabaseError as exc:
        raise DomainError(f"{path}: cannot read SQLite database ({exc})") from None
    finally:
        con.close()
    needed = ["name", *rules["system_requestable"]]
    missing = [c for c in needed if c not in cols]
    if missing:
        raise DomainError(f"{path}: table {table!r} lacks column(s) {missing} needed by {rules_path.name}")
    venues = []
    for row in rows:
        v = {c: ("" if x is None else str(x).strip().lower()) for c, x in zip(cols, row)}
        venues.append(v)
    for slot in rules["system_requestable"]:
        known = set(rules["informable"][slot])
        for v in venues:
            if v[slot] not in known and v[slot] not in ("", "not available"):
                raise DomainError(
                    f"{path}: venue {v['name']!r} has {slot}={v[slot]!r}, which is "
                    f"not among the values of {slot!r} in {rules_path.name}"
                )
    return venues


def domain_spec(values: "Sequence[str] | None") -> "str | tuple[str, str] | None":
    """The domain a command line's ``--domain NAME | RULES_JSON [DB]`` names, checked (it must
    load), in a picklable form for :func:`resolve_domain`; ``None`` when the option is absent.
    Bad values raise :class:`behavsim.ConfigError` naming the option."""
    if not values:
        return None
    if len(values) > 2:
        raise ConfigError(
            f"--domain: expected a domain name, a rules file, or a rules file and its database; "
            f"got {len(values)} values"
        )
    spec: str | tuple[str, str] = values[0] if len(values) == 1 else (values[0], values[1])
    load_domain(spec, option="--domain")
    return spec


def load_domain(domain: "Domain | str | Path | tuple | None", *, option: str = "domain") -> Domain:
    """:func:`resolve_domain` for a domain a user gave: a missing, unreadable or unknown domain is a
    :class:`behavsim.ConfigError` whose message starts with ``option``."""
    try:
        return resolve_domain(domain)
    except (DomainError, KeyError) as exc:
        raise ConfigError(f"{option}: {exc}") from None


def add_domain_option(parser: Any) -> None:
    """Add ``--domain NAME | RULES_JSON [DB]`` to an argparse parser (read it with :func:`domain_spec`)."""
    parser.add_argument(
        "--domain",
        nargs="+",
        metavar="NAME|RULES_JSON [DB]",
        help="a shipped domain by name (" + ", ".join(DOMAINS.names()) + f"; default {DEFAULT_DOMAIN}) or a "
        "PyDial-format rules JSON (database beside it as <X>-dbase.db, or given second)",
    )


def shipped_domain(rules_name: str) -> "Domain | None":
    """The shipped domain whose rules file is called ``rules_name`` (a file name, as checkpoints and
    context sets record it), or ``None``."""
    for name in DOMAINS.names():
        domain = DOMAINS.create(name)
        if os.path.basename(str(domain.source)) == rules_name:
            return domain
    return None
