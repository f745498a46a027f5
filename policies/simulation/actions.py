"""Dialogue acts, PyDial's summary actions, their masks and the summary -> master mapping.

Dialogue acts
-------------
Acts are parsed by the core's one parser, :func:`behavsim.parse_act` (a bad act string is a
:class:`behavsim.ActParseError`), which gives the canonical :class:`behavsim.DialogueAct`:
items sorted, values keeping their case. The environment *builds* acts as ``DiaAct(type,
items)``, a light named tuple whose ``items`` keep PyDial's order (``inform(name=...,area=...,
...)``, the denied item of ``deny`` first); ``value`` is ``None`` for a bare slot
(``request(food)``), and a negated item (``name!="x"``, used by PyDial's "no more venues"
inform) has the slot ``"name!"``. ``str(act)`` gives PyDial's string form (values quoted,
``none`` unquoted), which ``parse_act`` reads back to ``act.canonical()``.
``DiaAct.from_act(x)`` turns an act string or ``DialogueAct`` into a ``DiaAct`` (canonical item
order, values lower-cased as the domain stores them); the tracker, user and generator accept
any of the three and convert once, at their boundary — the environment itself hands
``DiaAct`` objects around and never re-parses its own strings.

Summary actions (PyDial's ``SummaryAction``)
--------------------------------------------
``summary_actions(domain)``: for each system-requestable slot in **alphabetical** order,
``request_s``, ``confirm_s``, ``select_s``; then ``inform``, ``inform_byname``,
``inform_alternatives``, ``bye``, ``repeat``, ``reqmore``, ``restart`` — 16 actions for a
three-slot domain (``SUMMARY_ACTIONS`` is that tuple for the built-in domain).

Deterministic tie rules (PyDial relies on dict order and on ``Settings.random``). Every
choice is a pure function of the belief's *content*: a belief gives the same mask, master act
and policy decision whatever the order of the keys in its dicts (e.g. after a JSON round trip
with sorted keys).

* the *top* value of a distribution is the one with the highest probability; ties go to the
  value that comes first in the **domain's order** (:func:`value_rank`): for a slot, its
  ontology values in rules order, then values unknown to the ontology (alphabetically), then
  ``dontcare``, then ``**NONE**`` — so a value at p = 0.5 beats ``**NONE**`` at 0.5; for
  ``method`` and ``discourseAct`` the domain's lists (``none`` first, as the tracker lists
  them). This is the order in which the tracker and ``make_belief`` list the keys, so
  dialogues in the environment choose exactly as with "first in dict order";
* ``confirm_s`` confirms the top value other than ``**NONE**``, ``select_s`` offers the top two
  (same tie rule);
* accepted constraints are ordered by belief, ties by the domain's ``system_requestable``
  order;
* requested slots (p > 0.5) are informed in the domain's ``requestable`` order;
* ``inform`` offers the last informed venue if it still matches, otherwise the matching
  venue that comes first in database order; ``inform_alternatives`` the first matching venue
  (database order) not yet offered since the last ``name=none``;
* ``inform_byname`` with nothing requested informs the first requestable slot other than
  ``name`` (PyDial picks one at random);
* with more than 5 accepted/requested slots (never in the built-in domain) the first 5 are
  used instead of a random 5.

Masks follow PyDial (``informcountaccepted = 4``, ``repeat`` and ``restart`` always masked)
with one difference: PyDial remembers in the mapper object that the user asked for
alternatives (top method ``byalternatives`` while the user neither thanks nor acknowledges)
until ``inform_alternatives`` is taken; ``action_mask`` is a pure function of the belief, so
``inform_alternatives`` is allowed when that condition holds *in this belief* and a venue has
been informed.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from behavsim import DialogueAct, UnknownName, closest_name, parse_act, parse_acts
from policies.simulation.domain import DONTCARE, NONE_VALUE, Domain

__all__ = [
    "DiaAct",
    "system_turn",
    "turn_acts",
    "turn_string",
    "summary_actions",
    "SUMMARY_ACTIONS",
    "action_mask",
    "to_master_act",
    "master_act",
    "accepted_constraints",
    "top_value",
    "value_rank",
    "method_summary",
    "thanks_or_ack",
    "unknown_action",
    "UnknownSummaryAction",
]

INFORM_COUNT_ACCEPTED = 4
MAX_INFORM_SLOTS = 5


class UnknownSummaryAction(UnknownName, ValueError):
    """A summary-action name is not one of the domain's actions (a :class:`behavsim.UnknownName`;
    the message names the closest valid action)."""


def _fmt_item(slot: str, value: str | None) -> str:
    if value is None:
        return slot
    if '"' in value or "\\" in value:  # escaped as behavsim.parse_act reads it
        value = value.replace("\\", "\\\\").replace('"', '\\"')
    elif value == "none":
        return f"{slot}=none" if not slot.endswith("!") else f'{slot[:-1]}!="none"'
    if slot.endswith("!"):
        return f'{slot[:-1]}!="{value}"'
    return f'{slot}="{value}"'


class DiaAct(NamedTuple):
    """An act as the environment builds it: ``items`` in PyDial's order (see module doc)."""

    type: str
    items: tuple = ()

    def __str__(self) -> str:  # PyDial string form
        return f"{self.type}({','.join(_fmt_item(s, v) for s, v in self.items)})"

    def slots(self) -> list[str]:
        return [s for s, _ in self.items]

    def get(self, slot: str, default=None):
        for s, v in self.items:
            if s == slot:
                return v
        return default

    @classmethod
    def from_act(cls, act: "DiaAct | DialogueAct | str") -> "DiaAct":
        """The environment's form of any act: a :class:`DiaAct` is returned as it is; a string
        is parsed with :func:`behavsim.parse_act` (the one act parser); a
        :class:`behavsim.DialogueAct` keeps its canonical (sorted) item order, with bare slots
        as ``None`` and values lower-cased like the domain's ontology and database."""
        if isinstance(act, DiaAct):
            return act
        return _from_canonical(parse_act(act))

    def canonical(self) -> DialogueAct:
        """The core's canonical act (:class:`behavsim.DialogueAct`, items sorted)."""
        return DialogueAct.create(self.type, self.items)


def system_turn(act: "DiaAct | DialogueAct | str | tuple | list") -> "DiaAct | tuple[DiaAct, ...]":
    """A system turn in the environment's form: one :class:`DiaAct` for a single act, a tuple of
    two or more for an act set — a string ``a(...)|b(...)`` (read by :func:`behavsim.parse_acts`:
    distinct acts in canonical order) or a sequence of acts. Raises ``ValueError`` (a bad act
    string), ``TypeError`` (not an act) or ``ValueError`` for an empty sequence."""
    if isinstance(act, DiaAct):
        return act
    if isinstance(act, (str, DialogueAct)):
        acts = parse_acts(act)
        return DiaAct.from_act(acts[0]) if len(acts) == 1 else tuple(_from_canonical(a) for a in acts)
    if isinstance(act, (tuple, list)):
        turn = tuple(dict.fromkeys(DiaAct.from_act(a) for a in act))
        if not turn:
            raise ValueError("an empty act set")
        return turn[0] if len(turn) == 1 else turn
    raise TypeError(f"expected an act string, a DialogueAct or a sequence of acts, got {type(act).__name__}")


def turn_acts(turn: "DiaAct | tuple[DiaAct, ...] | None") -> "tuple[DiaAct, ...]":
    """The acts of a system turn (:func:`system_turn`'s form): none, one, or the set's."""
    if turn is None:
        return ()
    return (turn,) if isinstance(turn, DiaAct) else tuple(turn)


def turn_string(turn: "DiaAct | tuple[DiaAct, ...]") -> str:
    """A system turn's string: PyDial's form of its act, or its acts joined by ``|``."""
    return str(turn) if isinstance(turn, DiaAct) else "|".join(str(a) for a in turn)


@lru_cache(maxsize=8192)
def _from_canonical(act: DialogueAct) -> DiaAct:
    return DiaAct(
        act.act_type, tuple((s, None if v == "" and not s.endswith("!") else v.lower()) for s, v in act.items)
    )


@lru_cache(maxsize=64)
def _actions_for(slots: tuple[str, ...]) -> tuple[str, ...]:
    names: list[str] = []
    for s in sorted(slots):
        names += [f"request_{s}", f"confirm_{s}", f"select_{s}"]
    names += ["inform", "inform_byname", "inform_alternatives", "bye", "repeat", "reqmore", "restart"]
    return tuple(names)


@lru_cache(maxsize=64)
def _action_set(slots: tuple[str, ...]) -> frozenset[str]:
    return frozenset(_actions_for(slots))


def summary_actions(domain: Domain) -> tuple[str, ...]:
    """The domain's summary actions in their fixed order (see module doc)."""
    return _actions_for(domain.system_requestable)


SUMMARY_ACTIONS: tuple[str, ...] = _actions_for(("area", "food", "pricerange"))


# ---------------------------------------------------------------- belief summaries
_UNKNOWN_RANK = 1 << 40  # values the domain does not list: after its own values
_TAIL_RANK = {DONTCARE: _UNKNOWN_RANK + 1, NONE_VALUE: _UNKNOWN_RANK + 2}


def value_rank(values: Iterable[str] = ()) -> dict[str, int]:
    """Tie-break ranks (lower wins) for a distribution whose known keys are ``values`` in
    order; keys not listed rank after them (alphabetically, see :func:`top_value`), then
    ``dontcare``, then ``**NONE**``."""
    rank = dict(_TAIL_RANK)
    for i, v in enumerate(values):
        if v not in _TAIL_RANK:
            rank[v] = i
    return rank


_DEFAULT_RANK = value_rank()


@lru_cache(maxsize=64)
def _ranks(domain: Domain) -> dict[str, dict[str, int]]:
    """Per distribution of a belief (informable slots, ``method``, ``discourseAct``,
    ``requested``): the domain's tie-break ranks (see module doc)."""
    out = {slot: value_rank(values) for slot, values in domain.informable.items()}
    out["method"] = value_rank(domain.method)
    out["discourseAct"] = value_rank(domain.discourse_act)
    out["requested"] = value_rank(domain.requestable)
    return out


def _tie_key(rank: dict[str, int]):
    return lambda k: (rank.get(k, _UNKNOWN_RANK), k)


def top_value(dist: dict, rank: dict[str, int] | None = None) -> tuple[str, float]:
    """Highest-probability key of a distribution and its probability; ties go to the key with
    the lowest ``rank`` (:func:`value_rank`; keys without a rank: alphabetically, before
    ``dontcare`` and ``**NONE**``). Independent of the dict's key order. An empty
    distribution gives ``("**NONE**", -1.0)``."""
    best_k, best_p, tie = NONE_VALUE, -1.0, False
    for k, p in dist.items():
        if p >= best_p:
            if p > best_p:
                best_k, best_p, tie = k, p, False
            else:
                tie = True
    if tie:  # decide by rank, never by dict order
        ties = [k for k, p in dist.items() if p == best_p]
        best_k = min(ties, key=_tie_key(_DEFAULT_RANK if rank is None else rank))
    return best_k, best_p


def _top_two_excluding_none(
    dist: dict, rank: dict[str, int] | None = None
) -> tuple[tuple[str, float], tuple[str, float]]:
    """The two most probable keys other than ``**NONE**`` (ties by rank); ``("", 0.0)`` fills
    in for missing ones."""
    key = _tie_key(_DEFAULT_RANK if rank is None else rank)
    ranked = sorted(((k, p) for k, p in dist.items() if k != NONE_VALUE), key=lambda kp: (-kp[1], key(kp[0])))
    ranked += [("", 0.0)] * (2 - len(ranked))
    return ranked[0], ranked[1]


def _n_positive_values(dist: dict) -> int:
    """How many keys other than ``**NONE**`` have positive probability, capped at 2 (the top
    two are both positive iff there are two)."""
    n = 0
    for k, p in dist.items():
        if p > 0 and k != NONE_VALUE:
            n += 1
            if n == 2:
                break
    return n


@lru_cache(maxsize=64)
def _accept_plan(domain: Domain) -> tuple[tuple[str, float, dict[str, int]], ...]:
    """Per system-requestable slot: (slot, acceptance threshold, tie-break ranks)."""
    ranks = _ranks(domain)
    return tuple((s, 1.0 / (len(domain.informable[s]) - 0.1), ranks[s]) for s in domain.system_requestable)


def accepted_constraints(belief: dict, domain: Domain) -> list[tuple[str, str, float]]:
    """PyDial's acceptance list: ``(slot, top value, belief)`` for each system-requestable slot
    whose top value is not ``**NONE**`` and whose belief exceeds 1/(|values| − 0.1); domain
    order (callers sort by belief when they need it)."""
    beliefs = belief["beliefs"]
    out = []
    for slot, thres, rank in _accept_plan(domain):
        dist = beliefs.get(slot)
        if not dist:
            continue
        v, p = top_value(dist, rank)
        if v != NONE_VALUE and p > thres:
            out.append((slot, v, p))
    return out


def method_summary(belief: dict, domain: Domain) -> str:
    """PyDial's global method summary: one of byalternatives, byname, finished, restart,
    byconstraints."""
    method = belief["beliefs"].get("method") or {"none": 1.0}
    top, p = top_value(method, _ranks(domain)["method"])
    if top == "byalternatives":
        return "byalternatives"
    if top == "byname":
        return "byname"
    if top == "finished" and p > 0.5:
        return "finished"
    if top == "restart" and p > 0.5:
        return "restart"
    return "byconstraints"


def thanks_or_ack(belief: dict, domain: Domain) -> bool:
    """Whether the user's top discourse act is ``thankyou`` or ``ack`` with belief above 0.5."""
    da = belief["beliefs"].get("discourseAct") or {}
    top, p = top_value(da, _ranks(domain)["discourseAct"]) if da else ("none", 1.0)
    return top in ("thankyou", "ack") and p > 0.5


def _features(belief: dict) -> dict:
    return belief.get("features") or {}


@lru_cache(maxsize=64)
def _mask_plan(domain: Domain) -> tuple:
    """Per summary action: (kind, slot) — computed once per domain."""
    plan: list[tuple[str, str | None]] = []
    for name in summary_actions(domain):
        if name.startswith(("request_", "confirm_", "select_")):
            kind, slot = name.split("_", 1)
            plan.append((kind, slot))
        else:
            plan.append((name, None))
    return tuple(plan)


def action_mask(belief: dict, domain: Domain, last_system_act: str | None = None) -> np.ndarray:
    """Boolean array over ``summary_actions(domain)``: True = executable."""
    beliefs = belief["beliefs"]
    feats = belief.get("features") or {}
    last_venue = feats.get("lastInformedVenue", "") or ""
    method = method_summary(belief, domain)
    tops = {}
    for slot in domain.system_requestable:
        n = _n_positive_values(beliefs.get(slot) or {})
        tops[slot] = (n >= 1, n >= 2)
    out = []
    for kind, slot in _mask_plan(domain):
        if kind == "request":
            ok = True
        elif kind == "confirm":
            ok = tops[slot][0]
        elif kind == "select":
            ok = tops[slot][1]
        elif kind == "inform":
            ok = method == "byconstraints"
            if ok:
                accepted = accepted_constraints(belief, domain)
                if len(accepted) < INFORM_COUNT_ACCEPTED and domain.can_discriminate(
                    tuple((s, v) for s, v, _ in accepted)
                ):
                    ok = False
        elif kind == "inform_byname":
            ok = method == "byname" and (
                last_venue != ""
                or top_value(beliefs.get("name") or {NONE_VALUE: 1.0}, _ranks(domain)["name"])[0] != NONE_VALUE
            )
        elif kind == "inform_alternatives":
            ok = method == "byalternatives" and last_venue != "" and not thanks_or_ack(belief, domain)
        elif kind == "bye":
            ok = method == "finished"
        elif kind == "reqmore":
            ok = last_venue != ""
        else:  # repeat, restart
            ok = False
        out.append(ok)
    return np.array(out, dtype=bool)


# ---------------------------------------------------------------- summary -> master
def _entity_act(domain: Domain, accepted: list[tuple[str, str, float]], ent: dict) -> DiaAct:
    items = [("name", ent["name"])]
    for slot, _value, _p in accepted[:MAX_INFORM_SLOTS]:
        if slot == "name":
            continue
        v = ent.get(slot)
        if v is not None and v != "" and v != "not available":
            items.append((slot, v))
    return DiaAct("inform", tuple(items))


def _none_act(constraints: list[tuple[str, str]]) -> DiaAct:
    items = [("name", "none")] + [(s, v) for s, v in constraints if v != DONTCARE and v not in ("", "not available")]
    return DiaAct("inform", tuple(items))


def master_act(
    summary: str, belief: dict, domain: Domain, last_system_act: "DiaAct | DialogueAct | str | None" = None
) -> DiaAct:
    """Like :func:`to_master_act` but returns a :class:`DiaAct`. ``last_system_act`` (any act
    form) is what ``repeat`` says again; given as a ``DiaAct`` it keeps its item order."""
    if summary not in _action_set(domain.system_requestable):
        raise unknown_action(summary, domain)
    beliefs = belief["beliefs"]
    feats = _features(belief)
    if summary.startswith("request_"):
        return DiaAct("request", ((summary[8:], None),))
    if summary.startswith("confirm_"):
        slot = summary[8:]
        (v, _), _ = _top_two_excluding_none(beliefs[slot], _ranks(domain).get(slot))
        return DiaAct("confirm", ((slot, v),))
    if summary.startswith("select_"):
        slot = summary[7:]
        (v1, _), (v2, _) = _top_two_excluding_none(beliefs[slot], _ranks(domain).get(slot))
        return DiaAct("select", ((slot, v1), (slot, v2)))
    if summary == "inform":
        accepted = accepted_constraints(belief, domain)
        idx = domain.matches({s: v for s, v, _ in accepted})
        if not idx:
            return _none_act([(s, v) for s, v, _ in accepted])
        last = domain.venue_index(feats.get("lastInformedVenue", "") or "")
        pick = last if last is not None and last in idx else idx[0]
        return _entity_act(domain, accepted, domain.venues[pick])
    if summary == "inform_byname":
        requested = sorted(
            (s for s, p in (beliefs.get("requested") or {}).items() if p > 0.5),
            key=_tie_key(_ranks(domain)["requested"]),
        )
        name, _ = top_value(beliefs.get("name") or {NONE_VALUE: 1.0}, _ranks(domain)["name"])
        if name == NONE_VALUE:
            name = feats.get("lastInformedVenue", "") or ""
        i = domain.venue_index(name)
        if i is None:
            if name:
                return DiaAct("inform", (("name", "none"), ("name", name)))
            i = 0
        ent = domain.venues[i]
        items = [("name", ent["name"])]
        if not requested:
            slot = next(s for s in domain.requestable if s != "name")
            items.append((slot, ent.get(slot, "none")))
        else:
            for slot in requested[:MAX_INFORM_SLOTS]:
                if slot in ("name", "location"):
                    continue
                items.append((slot, ent.get(slot, "none")))  # "" as PyDial gives it
        return DiaAct("inform", tuple(items))
    if summary == "inform_alternatives":
        accepted = accepted_constraints(belief, domain)
        idx = domain.matches({s: v for s, v, _ in accepted})
        if not idx:
            return _none_act([(s, v) for s, v, _ in accepted])
        told = set(feats.get("informedVenueSinceNone", ()) or ())
        for i in idx:
            if domain.venues[i]["name"] not in told:
                return _entity_act(domain, accepted, domain.venues[i])
        items = [("name", "none")] + [("name!", domain.venues[i]["name"]) for i in idx]
        items += [(s, v) for s, v, _ in accepted[:MAX_INFORM_SLOTS]]
        return DiaAct("inform", tuple(items))
    if summary == "bye":
        return DiaAct("bye")
    if summary == "reqmore":
        return DiaAct("reqmore")
    if summary == "repeat":
        return DiaAct.from_act(last_system_act) if last_system_act else DiaAct("null")
    if summary == "restart":
        return DiaAct("null")
    raise unknown_action(summary, domain)


def unknown_action(summary: str, domain: Domain) -> UnknownSummaryAction:
    """The error for a summary action the domain does not have (it names the closest one)."""
    names = list(summary_actions(domain))
    return UnknownSummaryAction("summary action", summary, names, closest_name(summary, names, cutoff=0.6))


def to_master_act(
    summary: str, belief: dict, domain: Domain, last_system_act: "DiaAct | DialogueAct | str | None" = None
) -> str:
    """PyDial-style master act string for a summary action in a belief state, e.g.
    ``inform(name="the olive",area="centre",food="italian",pricerange="cheap")``."""
    return str(master_act(summary, belief, domain, last_system_act))
