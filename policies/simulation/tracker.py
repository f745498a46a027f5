"""PyDial's focus belief tracker and a semantic error model.

``FocusTracker(domain).update(nbest, system_act)`` takes the user's N-best list of semantic
hypotheses ``[(act, confidence), ...]`` (``act``: a :class:`~policies.simulation.actions.DiaAct`, a
:class:`behavsim.DialogueAct`, an act string — an act set ``a(...)|b(...)`` too —, or a sequence of
acts for one hypothesis) and the system act that preceded it (the same forms: a logged system turn
may hold several acts), and
returns a belief dict in PyDial's layout::

    {"beliefs": {<informable slot>: {value: p, ..., "dontcare": p, "**NONE**": p},
                 "method": {6 methods}, "discourseAct": {7 acts}, "requested": {slot: p}},
     "features": {"lastInformedVenue": str, "informedVenueSinceNone": [...],
                  "lastActionInformNone": bool, "offerHappened": bool,
                  "inform_info": [25 bools], "dbMatches": int}}

Update rules (PyDial ``belieftracking/baseline.py`` FocusTracker):

* the N-best list is merged (equal hypotheses add up, each clipped at 1) and normalised to 1;
* informable slot s: q = max(0, 1 − Σ_v P_turn(s=v)); b(v) ← q·b(v) + P_turn(s=v), divided by
  the total when it exceeds 1; ``**NONE**`` = 1 − Σ_v b(v);
* method: the same with q = P_turn(method = none) on the non-``none`` methods. PyDial's
  tracker adds a ``none`` entry of 1 − Σ the first time it is missing (its first turn) and then
  never updates it, but keeps it in the normalisation: after an opening without a method
  (``inform(type=restaurant)``, ``hello()``) it is 1, and ``byconstraints`` then grows
  0.5, 0.67, 0.75, … instead of being 1. ``SummaryUtils.globalSummary`` later sets ``none`` to
  1 − Σ of all entries, in place, before the policy reads the belief. We emulate both and
  store the patched value: ``none`` = 1 − Σ (non-``none`` methods) − the stale entry.
  The invented example domain (``Domain.legacy_state``) keeps behavsim 0.1's rule (no stale
  entry: ``none`` = 1 − Σ) so its results stay as they were until the defaults switch;
* discourseAct: this turn's distribution;
* requested(r) = clip((1 − [the system informed r last turn])·b(r) + P_turn(request r)).

Turn labels follow PyDial's ``labels``: ``inform`` items set goals (so do the items of
``affirm``, ``negate``, ``hello``, ``reqalts`` and the correcting items of
``deny(s=wrong,s=right)`` — PyDial splits such acts into a bare act plus ``inform``), the slot
``this`` stands for the slot the system just asked about, a bare ``affirm`` after
``confirm(s=v)`` sets s=v, ``request`` and user ``confirm`` slots are requests;
method = byalternatives (reqalts) > finished (bye) > byconstraints / byname (an informed
``name``) > restart > byname (only requests after a venue was offered) > none.

``features`` follow PyDial's ``BeliefTracker._updateMactFeat`` (computed from the *system* act
of the turn) plus ``dbMatches``: venues matching all accepted constraints. A system turn of several
acts (a logged human's "there is no such place; X is in the east") counts each: an ``inform`` with
``name=none`` says no venue matched, an ``inform`` naming a venue offers it, and the first
``request``, ``select`` or ``confirm`` with a slot is what ``this`` refers to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from behavsim import ConfigError, DialogueAct, parse_acts
from policies.simulation.actions import DiaAct, accepted_constraints
from policies.simulation.domain import DONTCARE, NONE_VALUE, Domain

__all__ = ["FocusTracker", "ErrorModel", "inform_info", "make_belief"]

_DA_ORDER = ("silence", "repeat", "thankyou", "ack", "hello", "bye")
# user act types whose slot-value items set goals (deny: the items after the denied one)
_GOAL_ACTS = frozenset(("inform", "affirm", "negate", "deny", "hello", "reqalts"))


def inform_info(belief: dict, domain: Domain, _cache: dict | None = None) -> tuple[list[bool], int]:
    """PyDial's 25 ``inform_info`` flags and the number of venues matching all accepted
    constraints. For n = 1..5 top-n accepted constraints (by belief, ties in domain order):
    [matches == 0, == 1, 2–4, > 4, discriminable]."""
    accepted = accepted_constraints(belief, domain)
    ordered = tuple((s, v) for s, v, _ in sorted(accepted, key=lambda x: -x[2]))
    if _cache is not None:
        hit = _cache.get(ordered)
        if hit is not None:
            return list(hit[0]), hit[1]
    flags: list[bool] = []
    for n in range(1, 6):
        part = ordered[:n]
        count = domain.count({s: v for s, v in part})
        disc = domain.can_discriminate(part)
        flags += [count == 0, count == 1, 2 <= count <= 4, count > 4, disc]
    total = domain.count({s: v for s, v in ordered})
    if _cache is not None:
        _cache[ordered] = (tuple(flags), total)
    return flags, total


def make_belief(
    domain: Domain,
    slots: dict | None = None,
    *,
    method: dict | None = None,
    discourse_act: dict | None = None,
    requested: dict | None = None,
    features: dict | None = None,
) -> dict:
    """A complete belief state in the tracker's layout from partial distributions — e.g. the
    generated contexts (see :mod:`contexts`): ``make_belief(d, {"area": {"north": 0.4}},
    method={"byconstraints": 0.4})``.

    Missing slots start as PyDial's initial belief (all mass on ``**NONE**``); a given slot
    gets ``**NONE**`` = 1 − Σ of the given values, ``method`` ``none`` and ``discourseAct``
    ``none`` likewise take the remaining mass. ``features`` default to a dialogue start
    (no venue offered); ``inform_info`` and ``dbMatches`` are computed from the beliefs unless
    given. Unknown slots or values raise :class:`behavsim.ConfigError` (a ``ValueError``)."""
    t = FocusTracker(domain)
    beliefs: dict[str, dict] = {}
    slots = slots or {}
    for s in slots:
        if s not in domain.informable:
            raise ConfigError(f"make_belief: unknown informable slot {s!r}; known: {sorted(domain.informable)}")
    for s in domain.informable:
        given = slots.get(s)
        if not given:
            beliefs[s] = t._tmpl_init[s].copy()
            continue
        d = t._tmpl_full[s].copy()
        mass = 0.0
        for v, p in given.items():
            if v == NONE_VALUE:
                continue
            if v not in d:
                raise ConfigError(f"make_belief: {v!r} is not a value of slot {s!r}")
            d[v] = float(p)
            mass += float(p)
        if mass > 1.0 + 1e-9:
            raise ConfigError(f"make_belief: probabilities of slot {s!r} sum to {mass} > 1")
        d[NONE_VALUE] = max(0.0, 1.0 - mass)
        beliefs[s] = d

    def dist(keys, given, rest, what):
        out = dict.fromkeys(keys, 0.0)
        mass = 0.0
        for k, p in (given or {}).items():
            if k not in out:
                raise ConfigError(f"make_belief: unknown {what} {k!r}; known: {list(keys)}")
            if k != rest:
                out[k] = float(p)
                mass += float(p)
        out[rest] = max(0.0, 1.0 - mass)
        return out

    beliefs["method"] = dist(domain.method, method, "none", "method")
    beliefs["discourseAct"] = dist(domain.discourse_act, discourse_act, "none", "discourseAct")
    req = dict.fromkeys(domain.requestable, 0.0)
    for k, p in (requested or {}).items():
        if k not in req:
            raise ConfigError(f"make_belief: unknown requestable slot {k!r}")
        req[k] = float(p)
    beliefs["requested"] = req
    belief: dict[str, Any] = {"beliefs": beliefs}
    feats = {
        "lastInformedVenue": "",
        "informedVenueSinceNone": [],
        "lastActionInformNone": False,
        "offerHappened": False,
    }
    feats.update(features or {})
    if "inform_info" not in feats or "dbMatches" not in feats:
        flags, n = inform_info(belief, domain)
        feats.setdefault("inform_info", flags)
        feats.setdefault("dbMatches", n)
    belief["features"] = feats
    return belief


def _convert(act, sys_acts: tuple[DiaAct, ...]) -> DiaAct:
    """An act string or :class:`behavsim.DialogueAct` as a :class:`DiaAct` (canonical item
    order). PyDial's ``deny(s=wrong,s=right)`` names the denied item first; canonical order may
    not, so the item the system act stated is moved to the front."""
    a = DiaAct.from_act(act)
    if a.type == "deny" and len(a.items) > 1 and sys_acts:
        said = {item for sys_act in sys_acts for item in sys_act.items}
        for i, item in enumerate(a.items):
            if item in said:
                if i:
                    a = DiaAct(a.type, (item,) + a.items[:i] + a.items[i + 1 :])
                break
    return a


def _as_acts(hyp, sys_acts: tuple[DiaAct, ...]) -> tuple[DiaAct, ...]:
    if isinstance(hyp, DiaAct):
        return (hyp,)
    if isinstance(hyp, str):
        return tuple(_convert(a, sys_acts) for a in parse_acts(hyp))
    if isinstance(hyp, DialogueAct):
        return (_convert(hyp, sys_acts),)
    return tuple(h if isinstance(h, DiaAct) else _convert(h, sys_acts) for h in hyp)


def _system_acts(system_act: Any) -> tuple[DiaAct, ...]:
    """The acts of the system turn before the user's: none, one, or several (an act set string
    ``a(...)|b(...)`` or a sequence of acts)."""
    if system_act is None:
        return ()
    if isinstance(system_act, DiaAct):
        return (system_act,)
    if isinstance(system_act, str):
        return tuple(DiaAct.from_act(a) for a in parse_acts(system_act))
    if isinstance(system_act, DialogueAct):
        return (DiaAct.from_act(system_act),)
    return tuple(a if isinstance(a, DiaAct) else DiaAct.from_act(a) for a in system_act)


def _merged(nbest: Iterable, sys_acts: tuple[DiaAct, ...]) -> list[tuple[tuple[DiaAct, ...], float]]:
    """The N-best list merged (equal hypotheses add up, each clipped at 1) and normalised to 1."""
    merged: dict[tuple, float] = {}
    for hyp, prob in nbest:
        key = _as_acts(hyp, sys_acts)
        p = min(1.0, float(prob))
        if p < 0:
            p = float(np.exp(p))
        merged[key] = merged.get(key, 0.0) + p
    total = sum(merged.values())
    return [(k, (min(1.0, p / total) if total > 0 else 0.0)) for k, p in merged.items()]


def _system_informs(sys_acts: tuple[DiaAct, ...]) -> tuple[str, bool, set[str]]:
    """``(the venue offered, whether no venue matched, the slots informed)`` by the system's acts."""
    offered = ""
    inform_none = False
    informed_slots: set[str] = set()
    for sys_act in sys_acts:
        if sys_act.type != "inform":
            continue
        name = sys_act.get("name")
        if name == "none":
            inform_none = True
        else:
            informed_slots |= {s for s, _ in sys_act.items}
            if name:
                offered = name
    return offered, inform_none, informed_slots


class FocusTracker:
    """Focus belief tracker over a :class:`~policies.simulation.domain.Domain` (see module doc)."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self._informable = tuple(domain.informable)
        self._sysreq = set(domain.system_requestable)
        # templates: value -> 0.0 in ontology order, then dontcare, then **NONE**
        self._tmpl_full: dict[str, dict] = {}
        self._tmpl_init: dict[str, dict] = {}
        for slot, values in domain.informable.items():
            full = dict.fromkeys(values, 0.0)
            full[DONTCARE] = 0.0
            full[NONE_VALUE] = 1.0
            self._tmpl_full[slot] = full
            if slot in self._sysreq:
                self._tmpl_init[slot] = full
            else:
                init = dict.fromkeys(values, 0.0)
                init[NONE_VALUE] = 1.0
                self._tmpl_init[slot] = init
        self._valid = {slot: set(values) | {DONTCARE} for slot, values in domain.informable.items()}
        self._info_cache: dict = {}
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        self.turn = 0
        self.goal: dict[str, dict[str, float]] = {}
        self.method: dict[str, float] = {}
        self.requested: dict[str, float] = {}
        self.last_informed_venue = ""
        self.informed_since_none: list[str] = []
        self.belief: dict | None = None

    # ------------------------------------------------------------------ labels
    def _labels(self, acts: Sequence[DiaAct], sys_acts: tuple[DiaAct, ...]):
        this_slot = None
        confirmed: list[tuple[str, str]] = []
        for sys_act in sys_acts:  # the first request, select or confirm with a slot: what 'this' is
            t = sys_act.type
            if t in ("request", "select", "confirm") and sys_act.items:
                this_slot = sys_act.items[0][0]
                if t == "confirm":
                    confirmed = [(s, v) for s, v in sys_act.items if v is not None]
                break
        informed: dict[str, str] = {}
        requested: list[str] = []
        types = set()
        has_inform = False
        informed_name = False
        for act in acts:
            t = act.type
            types.add(t)
            if t in _GOAL_ACTS:
                items = act.items[1:] if t == "deny" else act.items
                kept = 0
                for slot, value in items:
                    if slot == "this":
                        slot = this_slot
                    if slot is None or value is None or slot not in self._valid:
                        continue
                    if value not in self._valid[slot]:
                        continue
                    informed[slot] = value
                    kept += 1
                    if slot == "name":
                        informed_name = True
                if kept or (t == "inform" and not act.items):
                    has_inform = True
                if t == "affirm" and not act.items and len(confirmed) == 1:
                    s, v = confirmed[0]
                    if s in self._valid and v in self._valid[s]:
                        informed[s] = v
            elif t == "request":
                for slot, value in act.items:
                    if value is None:
                        requested.append(slot)
                    elif slot in self._valid and value in self._valid[slot]:
                        informed[slot] = value  # request(name="x",phone)
            elif t == "confirm":
                for slot, _value in act.items:
                    requested.append(slot)
        if "reqalts" in types:
            method = "byalternatives"
        elif "bye" in types:
            method = "finished"
        elif has_inform:
            method = "byname" if informed_name else "byconstraints"
        elif "restart" in types:
            method = "restart"
        elif "deny" not in types and ("request" in types or "confirm" in types) and self.last_informed_venue != "":
            method = "byname"
        else:
            method = "none"
        da = "none"
        for cand in _DA_ORDER:
            if cand in types:
                da = cand
                break
        return informed, requested, method, da

    # ------------------------------------------------------------------ update
    def update(self, nbest: Iterable, system_act: Any = None) -> dict:
        """Fold one user turn into the belief and return the new belief dict (a fresh dict
        each call, safe to mutate). Acts may be :class:`DiaAct` objects (the environment's,
        used as they are), :class:`behavsim.DialogueAct` objects or strings (parsed by
        :func:`behavsim.parse_acts`; a malformed one raises :class:`behavsim.ActParseError`);
        ``system_act`` may also be several acts (an act set string or a sequence)."""
        sys_acts = _system_acts(system_act)
        hyps = _merged(nbest, sys_acts)
        # features from the system act (PyDial updates lastInformedVenue while labelling)
        offered, inform_none, informed_slots = _system_informs(sys_acts)
        if offered:
            self.last_informed_venue = offered
        this_u, method_stats, req_stats, da_stats = self._turn_stats(hyps, sys_acts)
        self._update_goals(this_u)
        self._update_method(method_stats)
        # discourse act
        tot = sum(da_stats.values())
        if tot > 1.0:
            da_stats = {k: p / tot for k, p in da_stats.items()}
        # requested
        for slot in sorted(set(req_stats) | set(self.requested)):
            p = req_stats.get(slot, 0.0)
            prev_req = 0.0 if slot in informed_slots else self.requested.get(slot, 0.0)
            self.requested[slot] = min(1.0, max(0.0, prev_req + p))

        belief = self._build(da_stats)
        feats = belief["features"]
        if self.turn == 0 or not sys_acts:
            inform_none, offered = False, ""
        else:
            if inform_none:
                self.informed_since_none = []
            if offered:
                self.informed_since_none.append(offered)
        feats["lastInformedVenue"] = self.last_informed_venue
        feats["informedVenueSinceNone"] = list(self.informed_since_none)
        feats["lastActionInformNone"] = inform_none
        feats["offerHappened"] = bool(offered)
        flags, n = inform_info(belief, self.domain, self._info_cache)
        feats["inform_info"] = flags
        feats["dbMatches"] = n
        self.turn += 1
        self.belief = belief
        return belief

    def _turn_stats(self, hyps: list[tuple[tuple[DiaAct, ...], float]], sys_acts: tuple[DiaAct, ...]) -> tuple:
        """This turn's ``(goal values per slot, method, requested, discourse act)`` probabilities."""
        this_u: dict[str, dict[str, float]] = {}
        method_stats: dict[str, float] = {}
        req_stats: dict[str, float] = {}
        da_stats: dict[str, float] = {}
        for acts, score in hyps:
            informed, requested, method, da = self._labels(acts, sys_acts)
            method_stats[method] = method_stats.get(method, 0.0) + score
            for r in requested:
                req_stats[r] = req_stats.get(r, 0.0) + score
            for slot, value in informed.items():
                d = this_u.setdefault(slot, {})
                d[value] = d.get(value, 0.0) + score
            da_stats[da] = da_stats.get(da, 0.0) + score
        return this_u, method_stats, req_stats, da_stats

    def _update_goals(self, this_u: dict[str, dict[str, float]]) -> None:
        for slot, turn_d in this_u.items():
            q = max(0.0, 1.0 - sum(turn_d.values()))
            prev = self.goal.get(slot, {})
            new = {v: p * q for v, p in prev.items()}
            for v, p in turn_d.items():
                new[v] = new.get(v, 0.0) + p
            tot = sum(new.values())
            if tot > 1.0:
                new = {v: p / tot for v, p in new.items()}
            self.goal[slot] = new

    def _update_method(self, method_stats: dict[str, float]) -> None:
        q = min(1.0, max(0.0, method_stats.get("none", 0.0)))
        meth = {m: (p if m == "none" else p * q) for m, p in self.method.items()}
        for m, p in method_stats.items():
            if m != "none":
                meth[m] = meth.get(m, 0.0) + p
        if "none" not in meth and not self.domain.legacy_state:
            meth["none"] = max(0.0, 1.0 - sum(meth.values()))  # PyDial's stale entry, see doc
        tot = sum(meth.values())
        if tot > 1.0:
            meth = {m: p / tot for m, p in meth.items()}
        self.method = meth

    def _build(self, da_stats: dict[str, float]) -> dict:
        beliefs: dict[str, dict] = {}
        for slot in self._informable:
            tracked = self.goal.get(slot)
            if not tracked:
                beliefs[slot] = self._tmpl_init[slot].copy()
                continue
            d = self._tmpl_full[slot].copy()
            mass = 0.0
            for v, p in tracked.items():
                d[v] = p
                mass += p
            d[NONE_VALUE] = max(0.0, 1.0 - mass)
            beliefs[slot] = d
        method = dict.fromkeys(self.domain.method, 0.0)
        mass = 0.0
        for m, p in self.method.items():
            if m in method and m != "none":
                method[m] = p
                mass += p
        method["none"] = max(0.0, 1.0 - mass - self.method.get("none", 0.0))
        beliefs["method"] = method
        da = dict.fromkeys(self.domain.discourse_act, 0.0)
        for k, p in da_stats.items():
            if k in da:
                da[k] = p
        beliefs["discourseAct"] = da
        req = dict.fromkeys(self.domain.requestable, 0.0)
        for k, p in self.requested.items():
            if k in req:
                req[k] = p
        beliefs["requested"] = req
        return {"beliefs": beliefs, "features": {}}


@dataclass(frozen=True)
class ErrorModel:
    """Semantic error simulation between the user and the tracker.

    ``error_rate`` — probability that each slot value (or requested slot) of the user's act is
    replaced by another value of the same slot, chosen uniformly (``confusion="uniform"``);
    an ``affirm``/``negate`` is flipped with the same probability. ``nbest`` — size of the
    N-best list: the top hypothesis is the (possibly corrupted) act; the others are further
    corrupted variants, the true act being put at a random rank when it is not already in
    the list. Confidences: sorted Dirichlet(1, ..., 1) draws (descending), or 1.0 with a single
    hypothesis. ``error_rate=0`` (PyDial's Environment 1) returns ``[(act, 1.0)]``.
    """

    error_rate: float = 0.0
    nbest: int = 1
    confusion: str = "uniform"

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.error_rate) <= 1.0:
            raise ConfigError(f"ErrorModel: error_rate must be in [0, 1], got {self.error_rate!r}")
        if int(self.nbest) < 1:
            raise ConfigError(f"ErrorModel: nbest must be >= 1, got {self.nbest!r}")
        if self.confusion != "uniform":
            raise ConfigError(f"ErrorModel: confusion must be 'uniform', got {self.confusion!r}")

    def _corrupt(self, act: DiaAct, domain: Domain, rng: np.random.Generator, rate: float) -> DiaAct:
        t = act.type
        if t in ("affirm", "negate") and rng.random() < rate:
            t = "negate" if t == "affirm" else "affirm"
        items = []
        for slot, value in act.items:
            if rng.random() < rate:
                if value is None:
                    choices = [s for s in domain.requestable if s != slot]
                    if choices:
                        slot = choices[int(rng.integers(len(choices)))]
                elif slot in domain.informable:
                    choices = [v for v in domain.informable[slot] + (DONTCARE,) if v != value]
                    if choices:
                        value = choices[int(rng.integers(len(choices)))]
            items.append((slot, value))
        return DiaAct(t, tuple(items))

    def apply(self, act: DiaAct, domain: Domain, rng: np.random.Generator) -> list[tuple[DiaAct, float]]:
        """N-best list ``[(act, confidence), ...]`` (descending confidence) for a true act."""
        if self.error_rate == 0.0 and self.nbest == 1:
            return [(act, 1.0)]
        top = self._corrupt(act, domain, rng, self.error_rate)
        hyps = [top]
        for _ in range(self.nbest - 1):
            hyps.append(self._corrupt(act, domain, rng, 0.5))
        if self.nbest > 1 and act not in hyps:
            hyps[int(rng.integers(1, self.nbest))] = act
        if self.nbest == 1:
            return [(top, 1.0)]
        conf = np.sort(rng.dirichlet(np.ones(self.nbest)))[::-1]
        out: dict[DiaAct, float] = {}
        for h, c in zip(hyps, conf):
            out[h] = min(1.0, out.get(h, 0.0) + float(c))
        return sorted(out.items(), key=lambda x: -x[1])
