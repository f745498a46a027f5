"""ConvLab-3's dialogue acts and states in PyDial's terms: the mapping table and what it keeps.

A corpus in ConvLab-3's unified data format gives each turn ``dialogue_acts`` — lists ``binary``,
``categorical`` and ``non-categorical`` of *entries* ``{intent, domain, slot[, value]}`` — and each
user turn an annotated ``state``. :class:`ActMapper` turns a turn's entries into PyDial acts on one
PyDial domain: one act per intent (:data:`INTENTS`; :data:`NO_VENUE_INTENTS` become PyDial's
``inform(name=none, …)``), slot names as PyDial spells them (:data:`SLOT_NAMES`), values
lower-cased, the turn's acts an act set (``inform(…)|request(…)``, :func:`behavsim.parse_acts`) —
and counts in :class:`ImportCounts` what it keeps, renames and cannot keep. Used by
:func:`contexts.corpus.from_unified` and the end-to-end model's training on a corpus
(:mod:`policies.e2e`); ``docs/contexts.md`` prints the table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from behavsim import DialogueAct, format_acts
from policies.corpora.errors import LogFormatError
from policies.simulation.domain import DONTCARE, Domain

__all__ = ["INTENTS", "NO_VENUE_INTENTS", "SLOT_NAMES", "GENERAL_DOMAIN", "ImportCounts", "ActMapper", "normalise"]

#: ConvLab-3 intents (of the corpora in the unified format) → PyDial's act types. An intent not
#: listed has no PyDial act (MultiWOZ's ``book``, SGD's ``notify_success``, ...): counted, not kept.
INTENTS: dict[str, str] = {
    "inform": "inform",
    "request": "request",
    "nooffer": "inform",
    "canthelp": "inform",
    "recommend": "inform",
    "offer": "inform",
    "select": "select",
    "confirm": "confirm",
    "expl-conf": "confirm",
    "reqmore": "reqmore",
    "req_more": "reqmore",
    "reqalts": "reqalts",
    "request_alts": "reqalts",
    "affirm": "affirm",
    "negate": "negate",
    "deny": "deny",
    "ack": "ack",
    "repeat": "repeat",
    "restart": "restart",
    "hello": "hello",
    "greet": "hello",
    "welcomemsg": "hello",
    "thank": "thankyou",
    "thankyou": "thankyou",
    "thank_you": "thankyou",
    "bye": "bye",
    "goodbye": "bye",
}

#: Intents that say no venue matches: PyDial's ``inform(name=none, …)`` with the act's own
#: slot-values, or — when it has none (CamRest676's ``nooffer`` is bare) — the user's
#: constraints in the corpus's annotated state at that moment (not ``dontcare``), as PyDial's
#: no-venue act carries the constraints its query used.
NO_VENUE_INTENTS = frozenset({"nooffer", "canthelp"})

#: ConvLab slot names PyDial spells otherwise; any other slot name is lower-cased with its spaces
#: removed, and kept only if the PyDial domain has the slot (informable or requestable).
SLOT_NAMES: dict[str, str] = {"price range": "pricerange", "price": "pricerange", "address": "addr"}

#: ConvLab's domain of acts that belong to no domain (MultiWOZ's greetings, thanks, goodbyes).
GENERAL_DOMAIN = "general"

_ACT_LISTS = ("binary", "categorical", "non-categorical")


@dataclass
class ImportCounts:
    """What an import kept, mapped and could not keep.

    Act *entries* are the corpus's ``{intent, domain, slot[, value]}`` objects: ``kept`` as they are,
    ``mapped`` under PyDial's names (``renamed``: which renaming, how often), or not kept
    (``dropped``: why — ``intent X``, ``slot X``, ``domain X``). Per speaker: turns with several
    intents (kept whole, as act sets), turns without an act, turns whose acts were all dropped.
    ``off_ontology``: informable slot values of the acts that the PyDial domain does not have
    (kept in the acts, not in the beliefs); ``off_ontology_state`` likewise in the annotated
    states (per user turn), ``state_dropped`` their slots the PyDial domain does not have;
    ``no_venue_from_state``: no-venue acts given the annotated constraints."""

    entries: int = 0
    kept: int = 0
    mapped: int = 0
    renamed: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)
    several_intents: Counter = field(default_factory=Counter)
    no_act: Counter = field(default_factory=Counter)
    nothing_kept: Counter = field(default_factory=Counter)
    off_ontology: Counter = field(default_factory=Counter)
    off_ontology_state: Counter = field(default_factory=Counter)
    state_dropped: Counter = field(default_factory=Counter)
    no_venue_from_state: int = 0

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> "ImportCounts":
        """The counts a set's ``meta["import"]`` holds."""
        values: dict[str, Any] = {k: Counter(v) if isinstance(v, dict) else v for k, v in meta.items()}
        return cls(**values)

    def to_meta(self) -> dict[str, Any]:
        """The counts as JSON (a set's ``meta["import"]``)."""
        out: dict[str, Any] = {}
        for name, value in vars(self).items():
            out[name] = dict(sorted(value.items())) if isinstance(value, Counter) else value
        return out

    def lines(self) -> list[str]:
        """The counts in a few printable lines."""

        def some(c: Counter, limit: int = 8) -> str:
            top = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))
            text = ", ".join(f"{k} {v}" for k, v in top[:limit])
            return text + (f", ... ({len(top)} kinds)" if len(top) > limit else "")

        def by_speaker(c: Counter) -> str:
            return f"{c['system']} system, {c['user']} user"

        lines = [
            f"act entries: {self.entries}: {self.kept} kept as they are, {self.mapped} mapped"
            + (f" ({some(self.renamed)})" if self.renamed else "")
            + f", {sum(self.dropped.values())} not kept"
            + (f" ({some(self.dropped)})" if self.dropped else ""),
            f"turns with several intents, kept whole as act sets: {by_speaker(self.several_intents)}; "
            f"without an act: {by_speaker(self.no_act)}; acts all not kept: {by_speaker(self.nothing_kept)}",
        ]
        if self.no_venue_from_state:
            lines.append(f"no-venue acts given the annotated constraints: {self.no_venue_from_state}")
        lines.append(
            "values off the ontology (in the acts, not in the beliefs): "
            + (some(self.off_ontology) if self.off_ontology else "none")
            + "; in the annotated states: "
            + (some(self.off_ontology_state) if self.off_ontology_state else "none")
            + (f"; state slots not in the domain: {some(self.state_dropped)}" if self.state_dropped else "")
        )
        return lines


def normalise(value: Any) -> str:
    """A value as PyDial writes it: lower-case, whitespace collapsed."""
    return " ".join(str(value).split()).lower()


def _entries(acts: Any, where: str) -> list[tuple[str, str, str, str | None]]:
    """A turn's act entries ``(intent, domain, slot, value)`` (``value`` None: a binary act)."""
    if acts is None:
        return []
    if not isinstance(acts, Mapping):
        raise LogFormatError(f"{where}: 'dialogue_acts' must be an object with {', '.join(_ACT_LISTS)}")
    out = []
    for kind in _ACT_LISTS:
        items = acts.get(kind) or []
        if not isinstance(items, list):
            raise LogFormatError(f"{where}: dialogue_acts.{kind} must be a list")
        for e in items:
            keys = ("intent", "domain", "slot") + (() if kind == "binary" else ("value",))
            if not isinstance(e, Mapping) or not all(isinstance(e.get(k), str) for k in keys):
                raise LogFormatError(
                    f"{where}: dialogue_acts.{kind}: expected {{{', '.join(keys)}}} strings, got {e!r:.80}"
                )
            out.append((e["intent"], e["domain"], e["slot"], None if kind == "binary" else e["value"]))
    return out


class ActMapper:
    """The corpus's acts and states in PyDial's terms, on one PyDial domain, counted in ``counts``."""

    def __init__(self, domain: Domain, corpus_domain: str | None, counts: ImportCounts) -> None:
        self.domain = domain
        self.corpus_domain = corpus_domain
        self.counts = counts
        self.slots = set(domain.informable) | set(domain.requestable)

    def slot(self, name: str) -> str | None:
        """PyDial's name of a ConvLab slot, or None if the domain has no such slot."""
        low = " ".join(name.split()).lower()
        slot = SLOT_NAMES.get(low, low.replace(" ", ""))
        return slot if slot in self.slots else None

    def _off_ontology(self, slot: str, value: str) -> bool:
        values = self.domain.informable.get(slot)
        return values is not None and value not in values and value not in (DONTCARE, "none", "")

    def turn(self, acts: Any, speaker: str, state: Mapping[str, str], where: str) -> str | None:
        """One turn's acts as a canonical PyDial act (set), or None (no act, or none kept)."""
        entries = _entries(acts, where)
        if not entries:
            self.counts.no_act[speaker] += 1
            return None
        if len({e[0] for e in entries}) > 1:
            self.counts.several_intents[speaker] += 1
        groups: dict[str, list[tuple[str, str]]] = {}
        for intent, dom, slot_name, value in entries:
            self.counts.entries += 1
            item = self._entry(intent, dom, slot_name, value)
            if item is not None:
                groups.setdefault(intent, []).extend(item)
        if not groups:
            self.counts.nothing_kept[speaker] += 1
            return None
        return format_acts([self._act(intent, items, state) for intent, items in groups.items()])

    def _entry(self, intent: str, dom: str, slot_name: str, value: str | None) -> list[tuple[str, str]] | None:
        """The items of one entry (none, or one), or None when it cannot be kept (counted)."""
        slot = self.slot(slot_name) if slot_name.strip() and slot_name.strip().lower() != "none" else ""
        if self.corpus_domain is not None and dom not in (self.corpus_domain, GENERAL_DOMAIN):
            reason = f"domain {dom}"
        elif intent not in INTENTS:
            reason = f"intent {intent}"
        elif slot is None:
            reason = f"slot {slot_name}"
        else:
            reason = ""
        if reason:
            self.counts.dropped[reason] += 1
            return None
        renames = []
        if intent in NO_VENUE_INTENTS:
            renames.append(f"{intent} -> inform(name=none)")
        elif INTENTS[intent] != intent:
            renames.append(f"{intent} -> {INTENTS[intent]}")
        if slot and slot != slot_name:
            renames.append(f"{slot_name} -> {slot}")
        if renames:
            self.counts.mapped += 1
            self.counts.renamed.update(renames)
        else:
            self.counts.kept += 1
        if not slot:
            return []
        v = "" if value is None else normalise(value)
        if self._off_ontology(slot, v):
            self.counts.off_ontology[f"{slot}={v}"] += 1
        return [(slot, v)]

    def _act(self, intent: str, items: list[tuple[str, str]], state: Mapping[str, str]) -> DialogueAct:
        if intent in NO_VENUE_INTENTS:
            if not items:
                items = [
                    (s, v) for s, v in sorted(state.items()) if v not in ("", DONTCARE) and s in self.domain.informable
                ]
                self.counts.no_venue_from_state += bool(items)
            items = [("name", "none"), *items]
        return DialogueAct.create(INTENTS[intent], items)

    def state(self, state: Any, where: str) -> dict[str, str] | None:
        """A user turn's annotated state of the corpus domain, PyDial's slot names (None: the turn
        has no state); a value with alternatives (``a|b``) gives its first in the ontology."""
        if state is None:
            return None
        dom_state = state.get(self.corpus_domain, {}) if isinstance(state, Mapping) else None
        if not isinstance(dom_state, Mapping) or not all(isinstance(v, str) for v in dom_state.values()):
            raise LogFormatError(f"{where}: 'state' must map each domain to {{slot: value string}}")
        out: dict[str, str] = {}
        for name, raw in dom_state.items():
            slot = self.slot(name)
            if slot is None:
                self.counts.state_dropped[f"slot {name}"] += 1
                continue
            options = [normalise(v) for v in raw.split("|")]
            value = next((v for v in options if not self._off_ontology(slot, v)), options[0])
            if self._off_ontology(slot, value):
                self.counts.off_ontology_state[f"{slot}={value}"] += 1
            out[slot] = value
        return out
