"""People's dialogues: what the end-to-end model imitates when it trains on a corpus.

``behavsim train --policy e2e --corpus PATH --split train`` reads a corpus in ConvLab-3's unified
data format (:mod:`policies.corpora`) instead of playing a teacher. Every system turn of the split
is one example, made as :func:`contexts.from_unified` makes its contexts
(:func:`policies.corpora.dialogue_contexts`):

* the **history** is the turns before it (speaker and words as the person wrote them), read as
  the model reads any history (:mod:`._format`, :mod:`._session`);
* the **belief span's label** at each decision point is what behavsim's focus tracker holds after
  the user turns' acts, replayed as a perfect recogniser would give them (the ``tracker`` beliefs
  of ``contexts import``);
* the **act** is the wizard's act in PyDial's terms (an act set ``a(..)|b(..)`` when the turn has
  several intents), written as the model writes acts; a turn without an act (none annotated, or
  none the act table keeps: greetings, thanks, goodbyes) has an empty act as its target — the
  model learns that the wizard wrote no act there and answers such a moment with words alone
  (``no_act_turns = "empty"``; ``"words"``: its words alone are targets, the rule before);
* the **response** is the wizard's words delexicalised with the domain's ontology
  (:func:`~._format.delex_words`).

The result is a context set with histories and the wizard's response table on it, as the
teacher's dialogues are (:mod:`._data`); the examples are then made the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from behavsim import ContextSet, ResponseTable
from policies.corpora import (
    ActMapper,
    Beliefs,
    ImportCounts,
    LogFormatError,
    UnifiedCorpus,
    dialogue_contexts,
    read_unified,
    select_dialogues,
)

__all__ = ["corpus_data", "corpus_dialogues", "CORPUS_DEFAULTS", "WIZARD_ID"]

#: The id of the corpus's human wizard as the model's teacher.
WIZARD_ID = "wizard"
#: A corpus run's defaults where they differ from a teacher run's (a few hundred dialogues, not
#: thousands: more passes, and more dialogues per step). No chat mode by default
#: (:func:`~policies.e2e.corpus_e2e_config`): it is for tools that know nothing of behavsim, and
#: costs training time.
CORPUS_DEFAULTS: dict[str, Any] = {"epochs": 12, "batch_dialogues": 4, "patience": 2, "validation": "validation"}


def corpus_dialogues(path: str | Path, split: str | None) -> int:
    """How many dialogues the split has in the corpus's domain alone (a missing split, a damaged
    file: one error naming it)."""
    dialogues, _, _ = select_dialogues(read_unified(path), split, None)
    return len(dialogues)


def corpus_data(
    path: str | Path, split: str | None, domain: Any, corpus: UnifiedCorpus | None = None
) -> tuple[ContextSet, ResponseTable, list[list[int]]]:
    """One split of a corpus as a context set with histories (tracker beliefs), the wizard's
    response table on it, and each dialogue's contexts (indices, in order). ``corpus``: the file
    at ``path`` already read (read here if None), so that two splits cost one read."""
    if corpus is None:
        corpus = read_unified(path)
    dialogues, cdomain, others = select_dialogues(corpus, split, None)
    counts = ImportCounts()
    mapper = ActMapper(domain, cdomain, counts)
    templates: dict[tuple[str, str], dict] = {}
    base = {"origin": "logged", "corpus": corpus.name, "split": split}
    rows: list[tuple] = []
    groups: list[list[int]] = []
    for d in dialogues:
        where = f"{corpus.source}: dialogue {d['dialogue_id']!r}"
        got = dialogue_contexts(d, where, mapper, Beliefs(domain, "tracker", templates), base)
        groups.append(list(range(len(rows), len(rows) + len(got))))
        rows += got
    if not rows:
        raise LogFormatError(f"{corpus.source}: split {split!r} has no system turns (every system turn is an example)")
    beliefs, histories, metas, ids = (list(x) for x in zip(*rows))
    meta = {
        "builder": "e2e-corpus",
        "origin": "logged",
        "source": str(path),
        "corpus": corpus.name,
        "split": split,
        "corpus_domain": cdomain,
        "domain": domain.name,
        "dialogues": len(dialogues),
        "dialogues_left_out": dict(sorted(others.items())),
        "import": counts.to_meta(),
    }
    cs = ContextSet(beliefs, metas, ids, meta, source=str(path), histories=histories)
    policy = {"id": WIZARD_ID, "name": WIZARD_ID, "kind": "corpus", "corpus": corpus.name, "split": split}
    table = ResponseTable(
        policy=policy,
        context_fingerprint=cs.fingerprint,
        acts=[m["system_act"] for m in metas],
        prompts=[m["system_text"] for m in metas],
        context_ids=ids,
    )
    return cs, table, groups
