"""Corpora in ConvLab-3's unified data format: reading them, choosing a split, and every system
turn of a dialogue as a context (the turns before it, a belief, what the wizard did there).

ConvLab-3 publishes MultiWOZ, SGD, Taskmaster, WOZ 2.0, KVRET, CamRest676 and more in one JSON
layout: ``data.zip`` holding ``data/dialogues.json``, a list of dialogues with ``dialogue_id``,
``data_split``, ``domains`` and ``turns`` (``speaker`` ``user`` | ``system``, ``utterance``,
``dialogue_acts``, and on user turns the annotated ``state``).

* :func:`read_unified` reads a corpus (its ``data.zip``, folder or ``dialogues.json``);
* :func:`select_dialogues` picks one split's dialogues of one corpus domain;
* :func:`dialogue_contexts` makes one dialogue's contexts ``(belief, history, meta, id)``, one per
  system turn, its acts mapped by :class:`~policies.corpora.convlab.ActMapper` and its beliefs
  from :class:`Beliefs`.

Used by :func:`contexts.corpus.from_unified` (``behavsim contexts import``, which documents the
contexts) and by the end-to-end model's training on a corpus (``behavsim train --policy e2e
--corpus PATH``). A damaged or foreign file, a missing split or an unknown domain is one error
naming the file and the problem.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from behavsim import ConfigError, canonical_copy, did_you_mean, parse_acts
from policies.corpora.convlab import GENERAL_DOMAIN, ActMapper
from policies.corpora.errors import LogFormatError, reject_non_finite
from policies.simulation.domain import DONTCARE, Domain
from policies.simulation.tracker import FocusTracker, inform_info, make_belief

__all__ = [
    "UnifiedCorpus",
    "is_unified",
    "read_unified",
    "select_dialogues",
    "Beliefs",
    "dialogue_contexts",
]


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
    foreign file raises :class:`~policies.corpora.LogFormatError` naming it."""
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


def select_dialogues(
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


# ------------------------------------------------------------------------------ beliefs
class Beliefs:
    """The belief at each moment of one dialogue: ``source`` ``tracker`` (the user acts replayed
    through the focus tracker), ``state`` (the corpus's annotated state in the informable slots) or
    ``none``; ``templates`` caches slot beliefs across dialogues."""

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
        return None if self.belief is None else canonical_copy(self.belief)


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


def dialogue_contexts(d: dict, where: str, mapper: ActMapper, beliefs: Beliefs, base: dict) -> list[tuple]:
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
