"""Dialogue acts, PyDial's summary actions, their masks and the summary -> master mapping.

Dialogue acts
-------------
``DiaAct(type, items)`` is a light named tuple: ``items`` is a tuple of ``(slot, value)``
pairs; ``value`` is ``None`` for a bare slot (``request(food)``). A negated item
(``name!="x"``, used by PyDial's "no more venues" inform) is stored with the slot ``"name!"``.
``str(act)`` gives PyDial's string form (values quoted, ``none`` unquoted);
``parse_act`` reads such strings back (quotes optional).

Summary actions (PyDial's ``SummaryAction``)
--------------------------------------------
``summary_actions(domain)``: for each system-requestable slot in **alphabetical** order,
``request_s``, ``confirm_s``, ``select_s``; then ``inform``, ``inform_byname``,
``inform_alternatives``, ``bye``, ``repeat``, ``reqmore``, ``restart`` — 16 actions for a
three-slot domain (``SUMMARY_ACTIONS`` is that tuple for the built-in domain).

Deterministic tie rules (PyDial relies on dict order and on ``Settings.random``):

* the *top* value of a distribution is the one with the highest probability; ties go to the
  value listed first in the belief dict (the tracker lists ontology values in rules order,
  then ``dontcare``, then ``**NONE**``);
* accepted constraints are ordered by belief, ties by the domain's ``system_requestable``
  order;
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

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .domain import DONTCARE, NONE_VALUE, Domain

__all__ = ["DiaAct", "parse_act", "ActParseError", "summary_actions", "SUMMARY_ACTIONS",
           "action_mask", "to_master_act", "accepted_constraints", "top_value",
           "UnknownSummaryAction"]

INFORM_COUNT_ACCEPTED = 4
MAX_INFORM_SLOTS = 5


class ActParseError(ValueError):
    """A dialogue-act string is malformed."""


class UnknownSummaryAction(ValueError):
    """A summary-action name is not one of the domain's actions."""


def _fmt_item(slot: str, value: str | None) -> str:
    if value is None:
        return slot
    if slot.endswith("!"):
        return f'{slot[:-1]}!="{value}"'
    if value == "none":
        return f"{slot}=none"
    return f'{slot}="{value}"'


class DiaAct(NamedTuple):
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


@lru_cache(maxsize=4096)
def parse_act(text: str) -> DiaAct:
    """Parse ``type(slot="value",slot,slot!=value,...)``; quotes optional, values lower-cased."""
    s = text.strip()
    open_ = s.find("(")
    if open_ <= 0 or not s.endswith(")"):
        raise ActParseError(f"malformed dialogue act {text!r}: expected 'type(...)'")
    act_type = s[:open_].strip().lower()
    if not act_type.replace("-", "").replace("_", "").isalnum():
        raise ActParseError(f"malformed dialogue act {text!r}: bad act type {act_type!r}")
    body = s[open_ + 1:-1]
    items: list[tuple[str, str | None]] = []
    i, n = 0, len(body)
    while i < n:
        while i < n and body[i] in " ,":
            i += 1
        if i >= n:
            break
        j = i
        while j < n and body[j] not in "=!,":
            j += 1
        slot = body[i:j].strip().lower()
        if not slot:
            raise ActParseError(f"malformed dialogue act {text!r}: empty slot at position "
                                f"{open_ + 1 + i}")
        if j >= n or body[j] == ",":
            items.append((slot, None))
            i = j + 1
            continue
        neg = body[j] == "!"
        if neg:
            if j + 1 >= n or body[j + 1] != "=":
                raise ActParseError(f"malformed dialogue act {text!r}: '!' without '=' at "
                                    f"position {open_ + 1 + j}")
            j += 1
        k = j + 1
        while k < n and body[k] == " ":
            k += 1
        if k < n and body[k] in "\"'":
            q = body[k]
            end = body.find(q, k + 1)
            if end < 0:
                raise ActParseError(f"malformed dialogue act {text!r}: unclosed quote at "
                                    f"position {open_ + 1 + k}")
            value = body[k + 1:end]
            i = end + 1
        else:
            end = body.find(",", k)
            end = n if end < 0 else end
            value = body[k:end].strip()
            i = end
        items.append((slot + ("!" if neg else ""), value.strip().lower()))
    return DiaAct(act_type, tuple(items))


@lru_cache(maxsize=64)
def _actions_for(slots: tuple[str, ...]) -> tuple[str, ...]:
    names: list[str] = []
    for s in sorted(slots):
        names += [f"request_{s}", f"confirm_{s}", f"select_{s}"]
    names += ["inform", "inform_byname", "inform_alternatives", "bye", "repeat", "reqmore",
              "restart"]
    return tuple(names)


@lru_cache(maxsize=64)
def _action_set(slots: tuple[str, ...]) -> frozenset[str]:
    return frozenset(_actions_for(slots))


def summary_actions(domain: Domain) -> tuple[str, ...]:
    """The domain's summary actions in their fixed order (see module doc)."""
    return _actions_for(domain.system_requestable)


SUMMARY_ACTIONS: tuple[str, ...] = _actions_for(("area", "food", "pricerange"))


# ---------------------------------------------------------------- belief summaries
def top_value(dist: dict) -> tuple[str, float]:
    """Highest-probability key of a distribution (ties: first in dict order)."""
    best_k, best_p = NONE_VALUE, -1.0
    for k, p in dist.items():
        if p > best_p:
            best_k, best_p = k, p
    return best_k, best_p


def _top_two_excluding_none(dist: dict) -> tuple[tuple[str, float], tuple[str, float]]:
    k1, p1, k2, p2 = "", 0.0, "", 0.0
    first = True
    for k, p in dist.items():
        if k == NONE_VALUE:
            continue
        if first or p > p1:
            if not first:
                k2, p2 = k1, p1
            k1, p1 = k, p
            first = False
        elif k2 == "" or p > p2:
            k2, p2 = k, p
    return (k1, p1), (k2, p2)


@lru_cache(maxsize=64)
def _thresholds(domain: Domain) -> tuple[tuple[str, float], ...]:
    return tuple((s, 1.0 / (len(domain.informable[s]) - 0.1)) for s in domain.system_requestable)


def accepted_constraints(belief: dict, domain: Domain) -> list[tuple[str, str, float]]:
    """PyDial's acceptance list: ``(slot, top value, belief)`` for each system-requestable slot
    whose top value is not ``**NONE**`` and whose belief exceeds 1/(|values| − 0.1); domain
    order (callers sort by belief when they need it)."""
    beliefs = belief["beliefs"]
    out = []
    for slot, thres in _thresholds(domain):
        dist = beliefs.get(slot)
        if not dist:
            continue
        v, p = top_value(dist)
        if v != NONE_VALUE and p > thres:
            out.append((slot, v, p))
    return out


def _by_belief(accepted: list[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    return sorted(accepted, key=lambda x: -x[2])


def _method_flags(belief: dict) -> str:
    """PyDial's global method summary: one of byalternatives, byname, finished, restart,
    byconstraints."""
    method = belief["beliefs"].get("method") or {"none": 1.0}
    top, p = top_value(method)
    if top == "byalternatives":
        return "byalternatives"
    if top == "byname":
        return "byname"
    if top == "finished" and p > 0.5:
        return "finished"
    if top == "restart" and p > 0.5:
        return "restart"
    return "byconstraints"


def _thanks_or_ack(belief: dict) -> bool:
    da = belief["beliefs"].get("discourseAct") or {}
    top, p = top_value(da) if da else ("none", 1.0)
    return top in ("thankyou", "ack") and p > 0.5


def _features(belief: dict) -> dict:
    return belief.get("features") or {}


@lru_cache(maxsize=64)
def _mask_plan(domain: Domain) -> tuple:
    """Per summary action: (kind, slot) — computed once per domain."""
    plan = []
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
    method = _method_flags(belief)
    tops = {}
    for slot in domain.system_requestable:
        (_, p1), (_, p2) = _top_two_excluding_none(beliefs.get(slot) or {})
        tops[slot] = (p1 > 0, p1 > 0 and p2 > 0)
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
                        tuple((s, v) for s, v, _ in accepted)):
                    ok = False
        elif kind == "inform_byname":
            ok = method == "byname" and (
                last_venue != "" or top_value(beliefs.get("name") or {NONE_VALUE: 1.0})[0] != NONE_VALUE)
        elif kind == "inform_alternatives":
            ok = method == "byalternatives" and last_venue != "" and not _thanks_or_ack(belief)
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
    items = [("name", "none")] + [(s, v) for s, v in constraints
                                  if v != DONTCARE and v not in ("", "not available")]
    return DiaAct("inform", tuple(items))


def master_act(summary: str, belief: dict, domain: Domain,
               last_system_act: str | None = None) -> DiaAct:
    """Like :func:`to_master_act` but returns a :class:`DiaAct`."""
    if summary not in _action_set(domain.system_requestable):
        raise UnknownSummaryAction(_unknown_msg(summary, domain))
    beliefs = belief["beliefs"]
    feats = _features(belief)
    if summary.startswith("request_"):
        return DiaAct("request", ((summary[8:], None),))
    if summary.startswith("confirm_"):
        slot = summary[8:]
        (v, _), _ = _top_two_excluding_none(beliefs[slot])
        return DiaAct("confirm", ((slot, v),))
    if summary.startswith("select_"):
        slot = summary[7:]
        (v1, _), (v2, _) = _top_two_excluding_none(beliefs[slot])
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
        requested = [s for s, p in beliefs.get("requested", {}).items() if p > 0.5]
        name, _ = top_value(beliefs.get("name") or {NONE_VALUE: 1.0})
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
                items.append((slot, ent.get(slot, "none") or "none"))
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
        return parse_act(last_system_act) if last_system_act else DiaAct("null")
    if summary == "restart":
        return DiaAct("null")
    raise UnknownSummaryAction(_unknown_msg(summary, domain))


def _unknown_msg(summary: str, domain: Domain) -> str:
    import difflib
    names = summary_actions(domain)
    close = difflib.get_close_matches(str(summary), names, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"unknown summary action {summary!r}; valid: {list(names)}.{hint}"


def to_master_act(summary: str, belief: dict, domain: Domain,
                  last_system_act: str | None = None) -> str:
    """PyDial-style master act string for a summary action in a belief state, e.g.
    ``inform(name="the olive",area="centre",food="italian",pricerange="cheap")``."""
    return str(master_act(summary, belief, domain, last_system_act))
