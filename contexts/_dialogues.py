"""Logged dialogues with utterances: a lab's own corpus as a context set with histories.

:func:`from_dialogues_jsonl` reads JSON Lines, **one dialogue per line**::

    {"id": "d17", "meta": {...},
     "turns": [{"speaker": "user", "text": "i want thai food", "act": "inform(food=thai)"},
               {"speaker": "system", "text": "which area?", "act": "request(area)",
                "belief": {"beliefs": {...}}},
               ...]}

``id`` (a string or number) and ``meta`` (an object) are optional; ``turns`` is a non-empty
list of turns with ``speaker`` (``"user"`` or ``"system"``) and ``text`` (a string), and
optionally ``act`` (a dialogue-act string) and, on a system turn, ``belief`` (the belief state
the system acted on, PyDial's layout). Blank lines are skipped.

**Every system turn becomes a context**: its history is the turns before it (speaker, text,
act), its belief the system turn's ``belief`` (none: a text-only context, which an end-to-end
policy answers and a modular one cannot). The context's ``meta``: ``origin="logged"``,
``dialogue`` (the dialogue's id), ``turn`` (1-based system turn), ``log_line``, the dialogue's
``meta``, and what the logged system did there — ``system_text`` and ``system_act`` — so the
logged system itself can be compared with other policies (:func:`logged_responses`). Every
problem raises :class:`~policies.corpora.LogFormatError` naming ``file:line`` and the turn; with
``strict=False`` (``contexts import --lenient``) the bad lines are skipped instead and listed in
the set's ``meta["skipped"]``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from behavsim import ContextSet, ResponseTable, TableFormatError, canonical_copy, check_history
from contexts._logged import check_belief
from contexts.commands import output_path
from policies.corpora import LogFormatError, reject_non_finite

__all__ = ["from_dialogues_jsonl", "logged_responses", "is_dialogue_log", "register_wizard"]

_DIALOGUE_KEYS = ("id", "meta", "turns")
_TURN_KEYS = ("speaker", "text", "act", "belief")


def _lines(path: Path) -> list[tuple[int, str]]:
    if not path.is_file():
        raise LogFormatError(f"{path}: no such log file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise LogFormatError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _parse(line: str, where: str) -> Any:
    try:
        return json.loads(line, parse_constant=reject_non_finite)
    except json.JSONDecodeError as exc:
        raise LogFormatError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:
        raise LogFormatError(f"{where}: {exc}") from None


def is_dialogue_log(path: str | os.PathLike) -> bool:
    """Is ``path`` a log of dialogues (its first object has ``turns``) rather than of belief states?"""
    lines = _lines(Path(path))
    if not lines:
        return False
    obj = _parse(lines[0][1], f"{path}:{lines[0][0]}")
    return isinstance(obj, dict) and "turns" in obj


def from_dialogues_jsonl(path: str | os.PathLike, *, strict: bool = True, description: str | None = None) -> ContextSet:
    """Import logged dialogues (see the module doc): one context per system turn.

    ``strict`` (the default): the first bad line refuses the file. ``strict=False``: a bad line
    (invalid JSON, a bad turn, a belief not in the layout, a repeated dialogue id) is skipped —
    its whole dialogue — and listed in ``meta["skipped"]`` as ``{"line": n, "problem": "file:n:
    ..."}``; a file with no good dialogue is still refused."""
    path = Path(path)
    beliefs: list[Any] = []
    histories: list[list] = []
    metas: list[dict] = []
    ids: list[str] = []
    n_dialogues = 0
    seen: dict[str, int] = {}
    skipped: list[dict[str, Any]] = []
    for n, line in _lines(path):
        where = f"{path}:{n}"
        try:
            did, contexts = _read_dialogue(line, where, n, path, seen)
        except LogFormatError as exc:
            if strict:
                raise
            skipped.append({"line": n, "problem": str(exc)})
            continue
        seen[did] = n
        n_dialogues += 1
        for belief, history, cmeta, cid in contexts:
            beliefs.append(belief)
            histories.append(history)
            metas.append(cmeta)
            ids.append(cid)
    if not metas:
        more = f" ({len(skipped)} bad lines skipped; the first: {skipped[0]['problem']})" if skipped else ""
        raise LogFormatError(f"{path}: no system turns in the file (every system turn becomes a context){more}")
    meta: dict[str, Any] = {
        "builder": "logged-dialogues",
        "origin": "logged",
        "source": str(path),
        "description": description,
        "dialogues": n_dialogues,
        "size": len(metas),
    }
    if skipped:
        meta["skipped"] = skipped
    return ContextSet(beliefs, metas, ids, meta, source=str(path), histories=histories)


def _read_dialogue(line: str, where: str, n: int, path: Path, seen: dict[str, int]) -> tuple[str, list[tuple]]:
    """One line's dialogue id and contexts ``(belief, history, meta, id)``; a
    :class:`LogFormatError` naming ``where`` for any problem."""
    obj = _parse(line, where)
    if not isinstance(obj, dict) or "turns" not in obj:
        raise LogFormatError(
            f'{where}: expected a dialogue {{"turns": [...]}} (one per line); a log of belief states '
            "cannot be mixed with a log of dialogues"
        )
    extra = sorted(set(obj) - set(_DIALOGUE_KEYS))
    if extra:
        raise LogFormatError(f"{where}: unexpected keys {extra} (a dialogue has turns, and optionally id and meta)")
    did = obj.get("id", f"{path.name}:{n}")
    if isinstance(did, bool) or not isinstance(did, (str, int)):
        raise LogFormatError(f"{where}: 'id' must be a string or a number, got {type(did).__name__}")
    did = str(did)
    if did in seen:
        raise LogFormatError(f"{where}: dialogue id {did!r} also on line {seen[did]}")
    dmeta = obj.get("meta") or {}
    if not isinstance(dmeta, dict):
        raise LogFormatError(f"{where}: 'meta' must be an object, got {type(dmeta).__name__}")
    turns = obj["turns"]
    if not isinstance(turns, list) or not turns:
        raise LogFormatError(f"{where}: 'turns' must be a non-empty list of turns")
    out: list[tuple] = []
    so_far: list[dict] = []
    system_turn = 0
    for k, turn in enumerate(turns):
        at = f"{where}: turn {k}"
        if not isinstance(turn, dict):
            raise LogFormatError(f"{at}: a turn must be an object, got {type(turn).__name__}")
        bad = sorted(set(turn) - set(_TURN_KEYS))
        if bad:
            raise LogFormatError(f"{at}: unexpected keys {bad} (a turn has speaker, text, act, belief)")
        try:
            (clean,) = check_history([{k2: v for k2, v in turn.items() if k2 != "belief"}], at)
        except TableFormatError as exc:
            raise LogFormatError(str(exc).replace(": history turn 0", "")) from None
        belief = turn.get("belief")
        if belief is not None:
            if clean["speaker"] != "system":
                raise LogFormatError(f"{at}: only a system turn carries a belief (the one it acted on)")
            problem = check_belief(belief)
            if problem:
                raise LogFormatError(f"{at}: {problem}")
        if clean["speaker"] == "system":
            system_turn += 1
            meta = {
                **dmeta,
                "origin": "logged",
                "dialogue": did,
                "turn": system_turn,
                "log_line": n,
                "system_text": clean["text"],
                "system_act": clean["act"],
            }
            history = [dict(t) for t in so_far]
            out.append((None if belief is None else canonical_copy(belief), history, meta, f"{did}/t{system_turn}"))
        so_far.append(clean)
    return did, out


def logged_responses(cs: ContextSet, *, policy_id: str = "logged-system", name: str | None = None) -> ResponseTable:
    """The logged system's own answers on a set of logged dialogues (:func:`from_dialogues_jsonl`,
    :func:`contexts.corpus.from_unified`): its act and text at each system turn (a turn logged
    without an act: a text-only answer). ``name``: how reports name it (default: ``policy_id``)."""
    acts: list[str | None] = []
    prompts: list[str | None] = []
    errors: list[str | None] = []
    for i, m in enumerate(cs.metas):
        if "system_text" not in m:
            where = f"{cs.source}: " if cs.source else ""
            raise LogFormatError(
                f"{where}context {cs.ids[i]!r} is not from logged dialogues (no system_text in its meta; "
                "'behavsim contexts import' makes such sets from a log of dialogues or a corpus)"
            )
        acts.append(m.get("system_act"))
        prompts.append(m["system_text"])
        errors.append(None)
    meta = {"id": policy_id, "name": name or policy_id, "kind": "logged", "source": cs.meta.get("source")}
    return ResponseTable(meta, cs.fingerprint, acts, prompts, errors, list(cs.ids))


# ------------------------------------------------------------------------------ command
def register_wizard(subparsers: Any) -> argparse.ArgumentParser:
    """``behavsim contexts wizard``: :func:`logged_responses` on the command line (entry point ``wizard``)."""
    w = subparsers.add_parser(
        "wizard",
        help="the logged system's own answers (a corpus's human wizard) as a response table",
        description="What the system of a logged dialogue — in a corpus, the person in the system's seat — did "
        "at each context of a set imported from dialogues (contexts import): its act and text, as a response "
        "table any policy's table is compared with (a turn logged without an act: a text-only answer).",
    )
    w.add_argument("input", metavar="SET", help="a context set imported from logged dialogues")
    w.add_argument("--id", default="wizard", help="the table's policy id (default: wizard)")
    w.add_argument("--name", default="human wizard", help="its name in reports (default: 'human wizard')")
    w.add_argument("-o", "--output", required=True, help="response table (.jsonl or .parquet)")
    w.set_defaults(func=_cmd_wizard)
    return w


def _cmd_wizard(args: argparse.Namespace) -> int:
    out = output_path(args.output)
    table = logged_responses(ContextSet.load(args.input), policy_id=args.id, name=args.name)
    table.save(out)
    with_act = sum(a is not None for a in table.acts)
    print(
        f"wrote the answers of {args.name!r} to {len(table)} contexts ({with_act} with an act, "
        f"{len(table) - with_act} text only) to {out}"
    )
    return 0
