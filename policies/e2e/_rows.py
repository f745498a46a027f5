"""The training rows of behavsim's end-to-end model: a dialogue's texts (:class:`DialogueTexts`),
its packed sequence for the main mode (:func:`main_row`) and for the chat mode (:func:`chat_row`),
with the targets and weights the trainer's loss reads (:class:`TrainRow`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from behavsim import ConfigError, ContextSet, ResponseTable
from policies.e2e._data import constraints_of
from policies.e2e._format import (
    MAX_MATCHES,
    belief_text,
    chat_text,
    db_query,
    db_text,
    delex_act,
    delex_prompt,
    delex_words,
)
from policies.e2e._model import LIMITS, special_ids
from policies.e2e._session import decision_points, history_parts, token_ids

#: The longest act (in tokens) the chat mode is trained on: values are spelled out there, and a
#: venue's description is long (below the 128 new tokens hf: and openai: ask for by default).
CHAT_ACT_LIMIT = 120


@dataclass
class TrainRow:
    """One packed training sequence: a teacher dialogue as the model reads it, and every context's
    answer after it.

    The shared part is the dialogue's last history with a belief span at every decision point
    (:mod:`._session`; the spans' labels: the teacher's belief there). Context k's block — the
    database result, the act, the response — sees the shared part up to its decision point's span
    (``seen[k]`` tokens) and itself, at the positions it would have alone: the same computation as
    one sequence per context, with the shared part computed once. The chat mode's row (``chat``)
    is built the same way: the turns as said (:func:`~._format.chat_text`), then per context
    ``<|answer|>``, the act, ``<|endoftext|>``.
    """

    ids: list[int]
    pos: list[int]
    block: list[int]  # -1: the shared part; k: context k's block
    seen: list[int]  # per block: how many shared tokens it sees
    targets: list[tuple[int, int]]  # (index whose output predicts it, token id)
    chat: bool = False  # the chat mode's row
    belief_targets: int = 0  # the first targets, the belief spans' (a main row's shared part)


@dataclass
class DialogueTexts:
    segments: list[str]  # per decision point: its turns' text
    beliefs: list[str]  # per decision point: the belief span's label
    blocks: list[tuple[int, str, str | None, str]]  # per context: decision point, db result, act (None: none), response
    chat: list[str]  # per decision point: its turns as said (the chat mode)
    chat_blocks: list[tuple[int, str]]  # per context: decision point, the act as behavsim writes it


def dialogue_texts(
    cs: ContextSet, table: ResponseTable, domain: Any, dialogue: list[int], people: bool = False
) -> DialogueTexts:
    """The texts of one teacher dialogue (its contexts' indices in order). ``people``: a corpus's
    dialogue (:mod:`._corpus`): a turn without an act trains its words only, and the words are
    delexicalised with the domain's ontology (:func:`~._format.delex_words`)."""
    last = dialogue[-1]
    segments, _, lexicons = history_parts(cs.history(last) or [], domain)
    chat = [chat_text(part) for part in decision_points(cs.history(last) or [])]
    labels: dict[int, int] = {}
    for c in dialogue:
        labels[len(decision_points(cs.history(c) or [])) - 1] = c
    beliefs = []
    for j, lex in enumerate(lexicons):
        at = labels.get(j)
        beliefs.append(belief_text(constraints_of(cs.beliefs[at], domain), lex) if at is not None else "")
    blocks, chat_blocks = [], []
    for j, c in sorted((j, c) for j, c in labels.items()):
        act = table.acts[c]
        if act is None and not people:
            raise ConfigError(f"teacher table: no act for context {cs.ids[c]!r} ({table.errors[c]})")
        lex = lexicons[j].copy()
        constraints = constraints_of(cs.beliefs[c], domain)
        result = db_query(domain, constraints)
        shown = lex.recent(result.names)[:MAX_MATCHES]
        db = db_text(result, lex)
        written = delex_act(act, domain, lex, shown, constraints) if act is not None else None
        if people:
            blocks.append((j, db, written, delex_words(table.prompts[c] or "", act, domain)))
        else:
            blocks.append((j, db, written, delex_prompt(table.prompts[c] or "", act or "")))
        if act is not None:
            chat_blocks.append((j, act))
    return DialogueTexts(segments, beliefs, blocks, chat, chat_blocks)


#: Token ids of texts (one list per text).
Encode = Callable[[Sequence[str]], list[list[int]]]


def all_texts(t: DialogueTexts) -> Iterator[str]:
    """Every text of a dialogue that becomes tokens (what the tokenizer's vocabulary covers)."""
    yield from (*t.segments, *t.beliefs, *(y or "" for b in t.blocks for y in b[1:]), *t.chat)
    yield from (a for _, a in t.chat_blocks)


def encoder(tokenizer: Any, texts: Iterable[str]) -> Encode:
    """Token ids of ``texts``, each distinct text encoded once, all in one call (most repeat: a
    dialogue's segments recur in its chat row, templates' acts and responses across dialogues)."""
    distinct = list(dict.fromkeys(texts))
    known = dict(zip(distinct, token_ids(tokenizer, distinct)))
    return lambda xs: [known[x] for x in xs]


def main_row(
    tokenizer: Any, t: DialogueTexts, n_positions: int, encode: Encode, empty_acts: bool = False
) -> tuple[TrainRow, int]:
    """A dialogue's packed row, and how many of its contexts did not fit the model's positions
    (a long dialogue's shared part ends at the last decision point that fits: the contexts after
    it are left out, as is a block that does not fit after its decision point). A person's turn
    without an act: its words are its only targets, or with ``empty_acts`` its empty act as well
    (``<|act|><|response|>``: the model learns that no act was written there)."""
    sp = special_ids(tokenizer)
    segs = encode(t.segments)
    bels = encode(t.beliefs)
    ids, targets, ends = [sp["eos"]], [], []
    for seg, bel in zip(segs, bels):
        span = [*bel[: LIMITS["belief"]], sp["db"]]
        if len(ids) + len(seg) + 1 + len(span) > n_positions:
            break
        ids += [*seg, sp["belief"]]
        targets += [(len(ids) + k - 1, tok) for k, tok in enumerate(span)]
        ids += span
        ends.append(len(ids))
    row = TrainRow(ids, list(range(len(ids))), [-1] * len(ids), [], targets, belief_targets=len(targets))
    cols = [encode([str(b[k] or "") for b in t.blocks]) for k in (1, 2, 3)]
    dropped = 0
    for (j, _, written, _), db, act, resp in zip(t.blocks, *cols):
        head = [*db[: LIMITS["db"]], sp["act"]]
        if written is None:  # a person's turn without an act: no act tokens
            act = []
            if not empty_acts:  # its words are the only targets
                head.append(sp["response"])
        block = [*head, *act[: LIMITS["act"]], sp["response"], *resp[: LIMITS["response"] - 1], sp["eos"]]
        if written is None and not empty_acts:
            block = [*head, *resp[: LIMITS["response"] - 1], sp["eos"]]
        if j >= len(ends) or ends[j] + len(block) > n_positions:
            dropped += 1
            continue
        seen = ends[j]
        start = len(row.ids)
        row.ids += block
        row.pos += list(range(seen, seen + len(block)))
        row.block += [len(row.seen)] * len(block)
        row.seen.append(seen)
        row.targets += [(start + i - 1, block[i]) for i in range(len(head), len(block))]
    return row, dropped


def chat_row(tokenizer: Any, t: DialogueTexts, n_positions: int, encode: Encode) -> TrainRow:
    """A dialogue's row in the chat mode (see :class:`TrainRow`); a context whose act is longer than
    :data:`CHAT_ACT_LIMIT` or that does not fit the model's positions is left out."""
    sp = special_ids(tokenizer)
    ids, ends = [sp["eos"]], []
    for seg in encode(t.chat):
        if len(ids) + len(seg) > n_positions:
            break  # a long dialogue ends at the last decision point that fits
        ids += seg
        ends.append(len(ids))
    row = TrainRow(ids, list(range(len(ids))), [-1] * len(ids), [], [], chat=True)
    for (j, _), act in zip(t.chat_blocks, encode([a for _, a in t.chat_blocks])):
        block = [sp["answer"], *act, sp["eos"]]
        if len(act) > CHAT_ACT_LIMIT or j >= len(ends) or ends[j] + len(block) > n_positions:
            continue  # never a cut act: the model would learn to write one
        seen = ends[j]
        start = len(row.ids)
        row.ids += block
        row.pos += list(range(seen, seen + len(block)))
        row.block += [len(row.seen)] * len(block)
        row.seen.append(seen)
        row.targets += [(start + i - 1, block[i]) for i in range(1, len(block))]
    return row
