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
* **acts map to PyDial's** by one table (:mod:`policies.corpora.convlab`: ``INTENTS``, ``NO_VENUE_INTENTS``,
  ``SLOT_NAMES``; ``docs/contexts.md`` prints it): ``price range`` is ``pricerange``,
  ``address`` is ``addr``, ``nooffer`` is ``inform(name=none, …)`` with the constraints. A turn of
  several intents is kept whole as an act set (``inform(…)|request(…)``,
  :func:`behavsim.parse_acts`). What the table cannot keep — an intent PyDial has no act for, a
  slot outside the PyDial domain, an act of another domain — is counted (:class:`policies.corpora.ImportCounts`,
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
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from behavsim import ConfigError, ContextSet, did_you_mean
from contexts._common import domain_meta, resolve_domain
from contexts._dialogues import from_dialogues_jsonl, is_dialogue_log
from contexts._logged import from_jsonl
from contexts.commands import add_output_option, option_domain, output_path, save_set
from policies.corpora import (
    ActMapper,
    Beliefs,
    ImportCounts,
    LogFormatError,
    dialogue_contexts,
    is_unified,
    read_unified,
    select_dialogues,
)
from policies.simulation.domain import NONE_VALUE, add_domain_option

__all__ = [
    "from_unified",
    "BELIEF_SOURCES",
    "summary_lines",
    "state_agreement",
    "register_import",
]

#: Where a context's belief comes from: the user acts replayed through the focus tracker, the
#: corpus's annotated state, or nowhere (text-only contexts).
BELIEF_SOURCES = ("tracker", "state", "none")


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
    dialogues, cdomain, others = select_dialogues(corpus, split, corpus_domain)
    dom = resolve_domain(domain)
    counts = ImportCounts()
    mapper = ActMapper(dom, cdomain, counts)
    templates: dict[tuple[str, str], dict] = {}
    base = {"origin": "logged", "corpus": corpus.name, "split": split}
    index = {id(d): i for i, d in enumerate(corpus.dialogues)}
    rows: list[tuple] = []
    for d in dialogues:
        where = f"{corpus.source}: dialogue {index[id(d)]} ({d['dialogue_id']!r})"
        rows += dialogue_contexts(d, where, mapper, Beliefs(dom, belief, templates), base)
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


def state_agreement(cs: ContextSet) -> dict[str, Any]:
    """How often the beliefs of a set from :func:`from_unified` say what the corpus annotated: a
    context agrees when, for every informable slot of its ``corpus_state``, the belief's most
    probable value (the first in the belief's key order among equals) is the annotated one
    (``**NONE**`` for ``""``). Returns ``{"agree": n, "contexts": N, "by_slot": {slot: contexts
    that differ there}, "differ": [ids]}`` over the contexts with a belief."""
    agree, differ = 0, []
    by_slot: Counter = Counter()
    for cid, belief, meta in zip(cs.ids, cs.beliefs, cs.metas):
        if belief is None or "corpus_state" not in meta:
            continue
        bad = [
            slot
            for slot, value in meta["corpus_state"].items()
            if slot in belief["beliefs"]
            and max(belief["beliefs"][slot].items(), key=lambda kv: kv[1])[0] != (value or NONE_VALUE)
        ]
        by_slot.update(bad)
        agree += not bad
        if bad:
            differ.append(cid)
    return {"agree": agree, "contexts": agree + len(differ), "by_slot": dict(sorted(by_slot.items())), "differ": differ}


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
