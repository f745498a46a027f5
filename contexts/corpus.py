"""Corpora of logged dialogues in ConvLab-3's unified data format as context sets.

ConvLab-3 publishes MultiWOZ, SGD, Taskmaster, WOZ 2.0, KVRET, CamRest676 and more in one JSON
layout: ``data.zip`` holding ``data/dialogues.json``, a list of dialogues with ``dialogue_id``,
``data_split``, ``domains`` and ``turns`` (``speaker`` ``user`` | ``system``, ``utterance``,
``dialogue_acts`` with ``binary``, ``categorical`` and ``non-categorical`` lists of ``{intent,
domain, slot[, value]}``, and on user turns the annotated ``state``). :func:`from_unified` reads one
split of such a corpus (``path``: the ``data.zip``, the corpus's folder or its ``dialogues.json``):

* **every system turn becomes a context**: its history is the turns before it (speaker, the text
  as the corpus has it, and the turn's acts in PyDial's terms), its id ``DIALOGUE/tK`` (K: the
  system turn's number, from 1), its ``meta`` the corpus, split, dialogue id, turn, ``utt_idx``,
  what the person in the system's seat did there (``system_text``, ``system_act``: the human
  wizard, :func:`contexts.logged_responses` makes them a response table) and the corpus's
  annotated constraints at that moment (``corpus_state``: the state of the last user turn before
  it, PyDial's slot names, ``""`` where not mentioned);
* **acts map to PyDial's** by one table (:data:`INTENTS`, :data:`NO_VENUE_INTENTS`,
  :data:`SLOT_NAMES`; ``docs/contexts.md`` prints it): ``price range`` is ``pricerange``,
  ``address`` is ``addr``, ``nooffer`` is ``inform(name=none, …)`` with the constraints. A turn of
  several intents is kept whole as an act set (``inform(…)|request(…)``,
  :func:`behavsim.parse_acts`). What the table cannot keep — an intent PyDial has no act for, a
  slot outside the PyDial domain, an act of another domain — is counted (:class:`ImportCounts`,
  printed by ``behavsim contexts import`` and kept in the set's ``meta["import"]``), and so are
  values outside the domain's ontology (kept in the acts, left out of the beliefs);
* **each context gets a belief** in PyDial's layout for the PyDial domain (``domain``, default
  CamRestaurants): ``belief="tracker"`` (the default) replays the user turns' acts through
  behavsim's focus tracker as a perfect recogniser would give them (N-best 1, confidence 1), with
  the system turn before each as the system act; ``belief="state"`` takes the same belief and
  puts the corpus's annotated state in its informable slots instead (probability 1 on the
  annotated value; ``inform_info`` and ``dbMatches`` recomputed); ``belief="none"`` gives
  text-only contexts.

Dialogues are those of the split that involve the corpus domain alone (``corpus_domain``: the
split's only domain, else required; ConvLab's ``general`` domain of greetings and thanks goes with
any); dialogues that also involve another domain are counted and left out. A damaged or foreign
file, a missing split or an unknown domain is one error naming the file and the problem.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from behavsim import ConfigError, ContextSet, DialogueAct, did_you_mean, format_acts, parse_acts
from contexts._common import copy_belief, domain_meta, resolve_domain
from contexts._dialogues import from_dialogues_jsonl, is_dialogue_log
from contexts._logged import LogFormatError, from_jsonl, reject_non_finite
from contexts.commands import add_output_option, option_domain, output_path, save_set
from policies.simulation.domain import DONTCARE, Domain, add_domain_option
from policies.simulation.tracker import FocusTracker, inform_info, make_belief

__all__ = [
    "from_unified",
    "read_unified",
    "is_unified",
    "UnifiedCorpus",
    "ImportCounts",
    "INTENTS",
    "NO_VENUE_INTENTS",
    "SLOT_NAMES",
    "GENERAL_DOMAIN",
    "BELIEF_SOURCES",
    "summary_lines",
    "register_import",
]

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

#: Where a context's belief comes from: the user acts replayed through the focus tracker, the
#: corpus's annotated state, or nowhere (text-only contexts).
BELIEF_SOURCES = ("tracker", "state", "none")

_ACT_LISTS = ("binary", "categorical", "non-categorical")


# ------------------------------------------------------------------------------ reading
@dataclass(frozen=True)
class UnifiedCorpus:
    """A corpus in the unified format as read: ``source`` names the file read (``data.zip:
    data/dialogues.json`` for a zip's member), ``dialogues`` its list of dialogues (their keys
    checked, the rest as the file has it)."""

    source: str
    dialogues: list[dict[str, Any]]

    @property
    def name(self) -> str:
        """The corpus's name: its dialogues' ``dataset``."""
        return str(self.dialogues[0].get("dataset") or Path(self.source.split(":")[0]).stem)

    def splits(self) -> Counter:
        """Dialogues per ``data_split``."""
        return Counter(d["data_split"] for d in self.dialogues)


def is_unified(path: str | Path) -> bool:
    """Does ``path`` name a unified-format corpus (a folder, a ``.zip`` or a ``.json`` file) rather
    than a JSON Lines log?"""
    p = Path(path)
    return p.is_dir() or p.suffix.lower() in (".zip", ".json")


def read_unified(path: str | Path) -> UnifiedCorpus:
    """Read a unified-format corpus: its ``data.zip``, its folder (holding ``dialogues.json``,
    ``data/dialogues.json`` or ``data.zip``) or its ``dialogues.json``. A missing, damaged or
    foreign file raises :class:`contexts.LogFormatError` naming it."""
    p = Path(path)
    if p.is_dir():
        for inside in (p / "dialogues.json", p / "data" / "dialogues.json", p / "data.zip"):
            if inside.is_file():
                return read_unified(inside)
        raise LogFormatError(
            f"{p}: no unified-format corpus in this folder (looked for dialogues.json, data/dialogues.json, data.zip)"
        )
    if not p.is_file():
        raise LogFormatError(f"{p}: no such corpus (give a unified-format corpus's data.zip, folder or dialogues.json)")
    if p.suffix.lower() == ".zip" or zipfile.is_zipfile(p):
        source, raw = _zip_member(p)
    else:
        source, raw = str(p), p.read_bytes()
    dialogues = _decode(raw, source)
    for i, d in enumerate(dialogues):
        _check_dialogue(d, f"{source}: dialogue {i}")
    return UnifiedCorpus(source, dialogues)


def _zip_member(path: Path) -> tuple[str, bytes]:
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            found = [n for n in names if n.rsplit("/", 1)[-1] == "dialogues.json"]
            if not found:
                shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
                raise LogFormatError(
                    f"{path}: not a unified-format corpus: no dialogues.json in the zip (it holds {shown or 'nothing'})"
                )
            name = "data/dialogues.json" if "data/dialogues.json" in found else sorted(found)[0]
            return f"{path}:{name}", z.read(name)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise LogFormatError(f"{path}: not a readable zip file ({exc})") from None


def _decode(raw: bytes, source: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=reject_non_finite)
    except UnicodeDecodeError as exc:
        raise LogFormatError(f"{source}: not a UTF-8 text file ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise LogFormatError(
            f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg} (damaged or truncated file?)"
        ) from None
    except ValueError as exc:
        raise LogFormatError(f"{source}: {exc}") from None
    except RecursionError:
        raise LogFormatError(f"{source}: JSON nested too deeply to read") from None
    if not isinstance(data, list) or not data:
        got = "an empty list" if data == [] else f"a JSON {type(data).__name__}"
        raise LogFormatError(
            f"{source}: not a unified-format corpus: expected a non-empty list of dialogues, got {got}"
        )
    return data


def _check_dialogue(d: Any, where: str) -> None:
    if not isinstance(d, dict):
        raise LogFormatError(
            f"{where}: not a unified-format corpus: a dialogue must be an object, got {type(d).__name__}"
        )
    missing = [k for k in ("dialogue_id", "data_split", "turns") if k not in d]
    if missing:
        raise LogFormatError(f"{where}: not a unified-format corpus: a dialogue has no {', '.join(map(repr, missing))}")
    if not isinstance(d["data_split"], str) or not isinstance(d["turns"], list):
        raise LogFormatError(f"{where}: 'data_split' must be a string and 'turns' a list")
    domains = d.get("domains", [])
    if not isinstance(domains, list) or not all(isinstance(x, str) for x in domains):
        raise LogFormatError(f"{where}: 'domains' must be a list of strings")


def _listing(counts: Counter, unit: str) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" {unit}"


def _select(
    corpus: UnifiedCorpus, split: str | None, corpus_domain: str | None
) -> tuple[list[dict], str | None, Counter]:
    """The dialogues of ``split`` in ``corpus_domain`` alone, that domain, and the other domains of
    the dialogues left out (dialogues per domain)."""
    splits = corpus.splits()
    if split is None or split not in splits:
        what = "choose a split" if split is None else f"no split {split!r}"
        raise ConfigError(
            f"{corpus.source}: {what} (--split; splits: {_listing(splits, 'dialogues')})."
            + (did_you_mean(split, splits) if split is not None else "")
        )
    in_split = [d for d in corpus.dialogues if d["data_split"] == split]
    domains = Counter(x for d in in_split for x in set(d.get("domains", [])) if x != GENERAL_DOMAIN)
    if corpus_domain is None and len(domains) > 1:
        raise ConfigError(
            f"{corpus.source}: split {split!r} has {len(domains)} domains ({_listing(domains, 'dialogues')}); "
            "choose one (--corpus-domain)"
        )
    if corpus_domain is None:
        corpus_domain = next(iter(domains), None)
    elif corpus_domain not in domains:
        known = _listing(domains, "dialogues") if domains else "none"
        raise ConfigError(
            f"{corpus.source}: no domain {corpus_domain!r} in split {split!r} (domains: {known})."
            + did_you_mean(corpus_domain, domains)
        )
    alone = {corpus_domain, GENERAL_DOMAIN}
    kept = [d for d in in_split if set(d.get("domains", [])) <= alone]
    others = Counter(
        x for d in in_split if not set(d.get("domains", [])) <= alone for x in d["domains"] if x not in alone
    )
    if not kept:
        raise ConfigError(
            f"{corpus.source}: no dialogue of split {split!r} is in domain {corpus_domain!r} alone "
            f"({sum(others.values())} involve other domains too)"
        )
    return kept, corpus_domain, others


# ------------------------------------------------------------------------------ acts
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


def _norm(value: Any) -> str:
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


class _ActMapper:
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
        v = "" if value is None else _norm(value)
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
            options = [_norm(v) for v in raw.split("|")]
            value = next((v for v in options if not self._off_ontology(slot, v)), options[0])
            if self._off_ontology(slot, value):
                self.counts.off_ontology_state[f"{slot}={value}"] += 1
            out[slot] = value
        return out


# ------------------------------------------------------------------------------ beliefs
class _Beliefs:
    """The belief at each moment of one dialogue (see the module doc for the sources)."""

    def __init__(self, domain: Domain, source: str, templates: dict[tuple[str, str], dict]) -> None:
        self.domain = domain
        self.source = source
        self.templates = templates
        self.tracker = FocusTracker(domain) if source != "none" else None
        self.belief = make_belief(domain) if source != "none" else None

    def user_turn(self, acts: str | None, system_acts: str | None, state: Mapping[str, str]) -> None:
        if self.tracker is None:
            return
        belief = self.tracker.update([(parse_acts(acts) if acts else (), 1.0)], system_acts)
        if self.source == "state":
            belief = self._with_state(belief, state)
        self.belief = belief

    def _slot(self, slot: str, value: str) -> dict:
        key = (slot, value)
        if key not in self.templates:
            given = {slot: {value: 1.0}} if value else {}
            self.templates[key] = make_belief(self.domain, given)["beliefs"][slot]
        return dict(self.templates[key])

    def _with_state(self, belief: dict, state: Mapping[str, str]) -> dict:
        for slot, value in state.items():
            if slot in self.domain.informable:
                known = value in self.domain.informable[slot] or value == DONTCARE
                belief["beliefs"][slot] = self._slot(slot, value if known else "")
        flags, n = inform_info(belief, self.domain)
        belief["features"]["inform_info"] = flags
        belief["features"]["dbMatches"] = n
        return belief

    def current(self) -> dict | None:
        return None if self.belief is None else copy_belief(self.belief)


# ------------------------------------------------------------------------------ contexts
def _check_turn(turn: Any, where: str) -> tuple[str, str]:
    if not isinstance(turn, Mapping):
        raise LogFormatError(f"{where}: a turn must be an object, got {type(turn).__name__}")
    speaker, text = turn.get("speaker"), turn.get("utterance")
    if speaker not in ("user", "system"):
        raise LogFormatError(f"{where}: speaker must be 'user' or 'system', got {speaker!r}")
    if not isinstance(text, str):
        raise LogFormatError(f"{where}: 'utterance' must be a string, got {type(text).__name__}")
    return speaker, text


def _dialogue_contexts(d: dict, where: str, mapper: _ActMapper, beliefs: _Beliefs, base: dict) -> list[tuple]:
    """One dialogue's contexts ``(belief, history, meta, id)``, one per system turn."""
    did = str(d["dialogue_id"])
    history: list[dict[str, Any]] = []
    out: list[tuple] = []
    state: dict[str, str] = {}
    system_acts: str | None = None
    n_system = 0
    for k, turn in enumerate(d["turns"]):
        at = f"{where}: turn {k}"
        speaker, text = _check_turn(turn, at)
        act = mapper.turn(turn.get("dialogue_acts"), speaker, state, at)
        if speaker == "user":
            annotated = mapper.state(turn.get("state"), at)
            if annotated is not None:
                state = annotated
            beliefs.user_turn(act, system_acts, state)
            system_acts = None
        else:
            n_system += 1
            meta = {
                **base,
                "dialogue": did,
                "turn": n_system,
                "utt_idx": turn.get("utt_idx", k),
                "system_text": text,
                "system_act": act,
                "corpus_state": dict(state),
            }
            out.append((beliefs.current(), [dict(t) for t in history], meta, f"{did}/t{n_system}"))
            system_acts = act
        history.append({"speaker": speaker, "text": text, "act": act})
    return out


def from_unified(
    path: str | Path,
    *,
    split: str | None,
    corpus_domain: str | None = None,
    domain: Any = None,
    belief: str = "tracker",
    description: str | None = None,
) -> ContextSet:
    """One split of a unified-format corpus as a context set with histories (see the module doc).

    ``path``: the corpus's ``data.zip``, folder or ``dialogues.json``; ``split``: ``train``,
    ``validation``, ``test``, ... (None: an error listing the splits); ``corpus_domain``: the
    corpus's domain to import (needed when the split has several); ``domain``: the PyDial domain of
    the acts and beliefs (default CamRestaurants); ``belief``: ``tracker``, ``state`` or ``none``.
    """
    if belief not in BELIEF_SOURCES:
        raise ConfigError(
            f"belief: expected one of {', '.join(BELIEF_SOURCES)}, got {belief!r}.{did_you_mean(belief, BELIEF_SOURCES)}"
        )
    corpus = read_unified(path)
    dialogues, cdomain, others = _select(corpus, split, corpus_domain)
    dom = resolve_domain(domain)
    counts = ImportCounts()
    mapper = _ActMapper(dom, cdomain, counts)
    templates: dict[tuple[str, str], dict] = {}
    base = {"origin": "logged", "corpus": corpus.name, "split": split}
    index = {id(d): i for i, d in enumerate(corpus.dialogues)}
    rows: list[tuple] = []
    for d in dialogues:
        where = f"{corpus.source}: dialogue {index[id(d)]} ({d['dialogue_id']!r})"
        rows += _dialogue_contexts(d, where, mapper, _Beliefs(dom, belief, templates), base)
    if not rows:
        raise LogFormatError(
            f"{corpus.source}: split {split!r} has no system turns (every system turn becomes a context)"
        )
    if belief == "state" and not any(m["corpus_state"] for _, _, m, _ in rows):
        raise ConfigError(f"{corpus.source}: split {split!r} has no annotated state; belief='tracker' replays the acts")
    meta = {
        "builder": "unified-corpus",
        "origin": "logged",
        "source": str(path),
        "corpus": corpus.name,
        "split": split,
        "corpus_domain": cdomain,
        **domain_meta(dom),
        "belief": belief,
        "dialogues": len(dialogues),
        "dialogues_left_out": dict(sorted(others.items())),
        "size": len(rows),
        "import": counts.to_meta(),
        "description": description,
    }
    beliefs, histories, metas, ids = (list(x) for x in zip(*rows))
    return ContextSet(beliefs, metas, ids, meta, source=str(path), histories=histories)


# ------------------------------------------------------------------------------ command
def register_import(subparsers: Any) -> argparse.ArgumentParser:
    """``behavsim contexts import`` (entry point ``import``): a unified-format corpus, or a JSON
    Lines log of belief states or of dialogues."""
    i = subparsers.add_parser(
        "import",
        help="logged contexts: a corpus in ConvLab-3's unified format, or a JSONL log of belief states or dialogues",
        description="PATH is a corpus in ConvLab-3's unified data format (its data.zip, its folder or its "
        "dialogues.json): every system turn of the split becomes a context with the turns before it as its "
        "history, a belief from the corpus and the human system's answer in its meta (docs/contexts.md). Or "
        'PATH.jsonl: one belief state, or {"belief": ..., "meta": ..., "id": ...}, per line; or one dialogue '
        '{"id": ..., "turns": [{"speaker": "user"|"system", "text": ..., "act": ..., "belief": ...}, ...]} '
        "per line — every system turn becomes a context whose history is the turns before it.",
    )
    i.add_argument("log", metavar="PATH")
    i.add_argument("--split", help="corpus: the split to import (train, validation, test, ...)")
    i.add_argument(
        "--corpus-domain", metavar="DOMAIN", help="corpus: its domain to import (default: the split's only one)"
    )
    i.add_argument(
        "--belief",
        choices=BELIEF_SOURCES,
        default="tracker",
        help="corpus: the beliefs from the user acts replayed through the focus tracker (default), from the "
        "corpus's annotated state, or none (text-only contexts)",
    )
    add_domain_option(i)
    i.add_argument(
        "--lenient",
        action="store_true",
        help="JSONL: skip and report bad lines (invalid JSON, a belief not in the layout; in a log of dialogues: "
        "the whole dialogue) instead of refusing the file",
    )
    add_output_option(i)
    i.set_defaults(func=_cmd_import)
    return i


#: Skipped lines ``contexts import --lenient`` prints one by one (the rest are counted).
_SHOW_SKIPPED = 20


def _cmd_import(args: argparse.Namespace) -> int:
    out = output_path(args.output)
    corpus_options = [o for o, given in (("--split", args.split), ("--corpus-domain", args.corpus_domain)) if given]
    if is_unified(args.log):
        if args.lenient:
            raise ConfigError(f"--lenient: applies to JSONL logs; {args.log} is read as a unified-format corpus")
        cs = from_unified(
            args.log, split=args.split, corpus_domain=args.corpus_domain, domain=option_domain(args), belief=args.belief
        )
        for line in summary_lines(cs):
            print(line)
        return save_set(cs, out)
    given = corpus_options + (["--belief"] if args.belief != "tracker" else []) + (["--domain"] if args.domain else [])
    if given:
        raise ConfigError(
            f"{', '.join(given)}: for a corpus in the unified format (data.zip, a folder, dialogues.json), "
            f"not for the JSONL log {args.log}"
        )
    return _import_jsonl(args.log, not args.lenient, out)


def summary_lines(cs: ContextSet) -> list[str]:
    """What :func:`from_unified` imported, in a few lines (``behavsim contexts import`` prints them)."""
    m = cs.meta
    left_out = sum(m["dialogues_left_out"].values())
    head = (
        f"{m['corpus']} split {m['split']}, domain {m['corpus_domain']}: {m['dialogues']} dialogue{'s' if m['dialogues'] != 1 else ''}, {len(cs)} "
        f"contexts (one per system turn); beliefs: {m['belief']}"
        + (f"; left out {left_out} dialogues that involve other domains too" if left_out else "")
    )
    return [head, *ImportCounts.from_meta(m["import"]).lines()]


def _import_jsonl(log: str, strict: bool, out: Path) -> int:
    if is_dialogue_log(log):
        cs = from_dialogues_jsonl(log, strict=strict)
        what = "bad dialogue lines"
    else:
        cs = from_jsonl(log, strict=strict)
        what = "bad lines"
    skipped = cs.meta.get("skipped") or []
    for item in skipped[:_SHOW_SKIPPED]:
        print(f"skipped {item['problem']}", file=sys.stderr)
    if len(skipped) > _SHOW_SKIPPED:
        print(
            f"skipped {len(skipped) - _SHOW_SKIPPED} more {what} (all listed in the set's meta 'skipped')",
            file=sys.stderr,
        )
    if skipped:
        print(f"skipped {len(skipped)} {what} of {log}; kept {len(cs)} contexts", file=sys.stderr)
    return save_set(cs, out)
