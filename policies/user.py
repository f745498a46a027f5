"""Agenda-based simulated user (Schatzmann & Young), in the spirit of PyDial's ``UMHdcSim``.

Goal (PyDial's goal generator for CamRestaurants): every system-requestable slot gets a
constraint drawn uniformly over its values plus ``dontcare``, redrawn until 2–3 venues match
(we draw uniformly over the precomputed admissible combinations, which is the same
distribution); requests are ``name`` plus 0–2 of addr, phone, postcode, signature,
description. ``UserConfig(unsatisfiable_goals=True)`` skips the matching rule, so a goal may
have no venue; the user then relaxes a constraint when told ``name=none``.

Agenda: a stack of pending user act items — ``bye`` at the bottom, then the requests, then
the constraints in random order on top. Each system act pushes the user's reaction on top
(``inform`` for ``request``/``select``, ``affirm`` or ``negate(s=v)`` for ``confirm``, corrections
when an offered venue violates the goal, ...). A user turn pops the top item and, with the
dialogue's combination probability, further items of the same act type.

Patience (default 5) drops by one whenever the system repeats its previous act; at 0 the user
says ``bye()`` and gives up. The user also says ``bye()`` on success (a matching venue accepted
and every request answered) and in reply to the system's ``bye()``.

Behaviour probabilities are drawn once per dialogue, uniformly from the ranges in
:class:`UserConfig`. All randomness comes from the ``np.random.Generator`` given to
:meth:`SimulatedUser.reset`.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields

import numpy as np

from .actions import DiaAct
from .domain import DONTCARE, Domain

__all__ = ["UserConfig", "UserGoal", "SimulatedUser", "UserConfigError"]

_EXTRA_REQUESTS = ("addr", "phone", "postcode", "signature", "description")


class UserConfigError(ValueError):
    """Invalid simulated-user configuration."""


@dataclass(frozen=True)
class UserConfig:
    patience: int = 5
    min_matches: int = 2
    max_matches: int = 3
    max_extra_requests: int = 2
    unsatisfiable_goals: bool = False
    #: per-dialogue ranges (low, high) of behaviour probabilities
    p_combine_inform: tuple[float, float] = (0.2, 0.7)
    p_combine_request: tuple[float, float] = (0.3, 0.8)
    p_extra_constraint: tuple[float, float] = (0.0, 0.4)

    def __post_init__(self) -> None:
        if self.patience < 1:
            raise UserConfigError(f"UserConfig.patience must be >= 1, got {self.patience!r}")
        if not 0 <= self.min_matches <= self.max_matches:
            raise UserConfigError("UserConfig: need 0 <= min_matches <= max_matches, got "
                                  f"{self.min_matches!r}, {self.max_matches!r}")
        for f in fields(self):
            if f.name.startswith("p_"):
                lo, hi = getattr(self, f.name)
                if not 0.0 <= lo <= hi <= 1.0:
                    raise UserConfigError(f"UserConfig.{f.name} must be (low, high) with "
                                          f"0 <= low <= high <= 1, got {(lo, hi)!r}")

    @classmethod
    def from_dict(cls, d: dict | None) -> "UserConfig":
        if d is None:
            return cls()
        if isinstance(d, UserConfig):
            return d
        known = {f.name for f in fields(cls)}
        bad = sorted(set(d) - known)
        if bad:
            raise UserConfigError(f"unknown UserConfig key(s) {bad}; known: {sorted(known)}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


@dataclass
class UserGoal:
    constraints: dict[str, str]
    requests: list[str]
    answered: dict[str, bool] = field(default_factory=dict)


class SimulatedUser:
    """Agenda-based simulated user over a domain (see module doc)."""

    def __init__(self, domain: Domain, config: UserConfig | dict | None = None) -> None:
        self.domain = domain
        self.config = UserConfig.from_dict(config)
        self.slots = tuple(domain.system_requestable)
        self._extra = tuple(r for r in _EXTRA_REQUESTS if r in domain.requestable)
        options = [domain.informable[s] + (DONTCARE,) for s in self.slots]
        self._options = options
        c = self.config
        self._admissible = [combo for combo in itertools.product(*options)
                            if c.min_matches <= domain.count(dict(zip(self.slots, combo)))
                            <= c.max_matches]
        if not c.unsatisfiable_goals and not self._admissible:
            raise UserConfigError(f"no goal over {self.slots} has between {c.min_matches} and "
                                  f"{c.max_matches} matching venues in {domain.source}")
        self.rng = np.random.default_rng(0)
        self.goal: UserGoal | None = None

    # ------------------------------------------------------------------ dialogue start
    def reset(self, rng: np.random.Generator) -> UserGoal:
        self.rng = rng
        c = self.config
        if c.unsatisfiable_goals:
            combo = tuple(opts[int(rng.integers(len(opts)))] for opts in self._options)
        else:
            combo = self._admissible[int(rng.integers(len(self._admissible)))]
        constraints = dict(zip(self.slots, combo))
        k = int(rng.integers(0, min(c.max_extra_requests, len(self._extra)) + 1))
        extra = [self._extra[i] for i in sorted(rng.choice(len(self._extra), size=k, replace=False))] if k else []
        requests = ["name"] + extra
        self.goal = UserGoal(constraints, requests, {r: False for r in requests})
        lo_hi = lambda r: r[0] + (r[1] - r[0]) * rng.random()
        self.p_combine_inform = lo_hi(c.p_combine_inform)
        self.p_combine_request = lo_hi(c.p_combine_request)
        self.p_extra_constraint = lo_hi(c.p_extra_constraint)
        self.patience = c.patience
        self.accepted: str | None = None
        self.last_sys: DiaAct | None = None
        self.last_user: DiaAct | None = None
        self.finished = False
        self.gave_up = False
        order = rng.permutation(len(self.slots))
        # agenda: list used as a stack (end = top); items (type, slot, value)
        self.agenda: list[tuple] = [("bye", None, None)]
        self.agenda += [("request", r, None) for r in reversed(extra)]
        self.agenda += [("inform", self.slots[i], constraints[self.slots[i]]) for i in order]
        return self.goal

    # ------------------------------------------------------------------ queries
    @property
    def success(self) -> bool:
        g = self.goal
        return g is not None and self.accepted is not None and all(g.answered.values())

    def venue_matches_goal(self, name: str) -> bool:
        i = self.domain.venue_index(name)
        if i is None:
            return False
        v = self.domain.venues[i]
        return all(val == DONTCARE or v.get(s) == val for s, val in self.goal.constraints.items())

    # ------------------------------------------------------------------ agenda helpers
    def _remove(self, kind: str, slot: str | None = None) -> None:
        self.agenda = [it for it in self.agenda if not (it[0] == kind and (slot is None or it[1] == slot))]

    def _push_inform(self, slot: str, value: str) -> None:
        self._remove("inform", slot)
        self.agenda.append(("inform", slot, value))

    def _relax_goal(self) -> None:
        """Unsatisfiable goal told name=none: change one specific constraint (PyDial's user
        changes its goal) to a value that has venues, or to dontcare."""
        g = self.goal.constraints
        specific = [s for s in self.slots if g[s] != DONTCARE]
        if not specific:
            return
        s = specific[int(self.rng.integers(len(specific)))]
        cands = [v for v in self.domain.informable[s]
                 if v != g[s] and self.domain.count({**g, s: v}) > 0]
        g[s] = cands[int(self.rng.integers(len(cands)))] if cands else DONTCARE
        self._push_inform(s, g[s])

    # ------------------------------------------------------------------ reactions
    def _react(self, act: DiaAct) -> None:
        t = act.type
        g = self.goal.constraints
        if t == "request":
            for slot, _ in act.items[:1]:
                self._push_inform(slot, g.get(slot, DONTCARE))
        elif t == "confirm":
            for slot, value in act.items[:1]:
                want = g.get(slot, DONTCARE)
                self._remove("inform", slot)
                if value == want:
                    self.agenda.append(("affirm", None, None))
                else:
                    self.agenda.append(("negate", slot, want))
        elif t == "select":
            if act.items:
                slot = act.items[0][0]
                self._push_inform(slot, g.get(slot, DONTCARE))
        elif t == "inform":
            name = act.get("name")
            if name == "none":
                stated = [(s, v) for s, v in act.items if s in g]
                wrong = [(s, g[s]) for s, v in stated if g[s] != DONTCARE and g[s] != v]
                if wrong:
                    for s, v in reversed(wrong):
                        self._push_inform(s, v)
                elif any(s == "name!" for s, _ in act.items) and self.accepted is not None:
                    pass
                elif self.config.unsatisfiable_goals or self.domain.count(g) == 0:
                    self._relax_goal()
                else:
                    for s in self.slots:
                        self._push_inform(s, g[s])
            elif name:
                if self.venue_matches_goal(name):
                    if self.accepted is None:
                        self.accepted = name
                        self.goal.answered["name"] = True
                    if name == self.accepted:
                        for s, _ in act.items:
                            if s in self.goal.answered:
                                self.goal.answered[s] = True
                    self._remove("inform")
                elif self.accepted is None:
                    i = self.domain.venue_index(name)
                    v = self.domain.venues[i] if i is not None else {}
                    wrong = [s for s in self.slots if g[s] != DONTCARE and v.get(s) != g[s]]
                    if wrong:
                        for s in reversed(wrong):
                            self._push_inform(s, g[s])
                    else:
                        self.agenda.append(("reqalts", None, None))
        # hello, reqmore, null, others: no reaction beyond popping the agenda

    def _maintain(self) -> None:
        if self.accepted is not None:
            self.agenda = [it for it in self.agenda
                           if not (it[0] == "request" and self.goal.answered.get(it[1], False))]
            on = {it[1] for it in self.agenda if it[0] == "request"}
            missing = [r for r in self.goal.requests if not self.goal.answered[r] and r not in on]
            for r in reversed(missing):
                self.agenda.insert(1, ("request", r, None))
        if not self.agenda or self.agenda[0][0] != "bye":
            self._remove("bye")
            self.agenda.insert(0, ("bye", None, None))

    def _pop(self) -> DiaAct:
        rng = self.rng
        if self.success:
            return DiaAct("bye")
        top = self.agenda[-1]
        if self.accepted is None and top[0] in ("request", "bye"):
            # nothing left to tell but no venue yet: restate the whole goal
            return DiaAct("inform", tuple((s, self.goal.constraints[s]) for s in self.slots))
        if top[0] == "bye":
            return DiaAct("bye")
        self.agenda.pop()
        kind = top[0]
        if kind == "inform":
            items = [(top[1], top[2])]
            while self.agenda and self.agenda[-1][0] == "inform" and rng.random() < self.p_combine_inform:
                it = self.agenda.pop()
                items.append((it[1], it[2]))
            return DiaAct("inform", tuple(items))
        if kind == "request":
            items = [(top[1], None)]
            while self.agenda and self.agenda[-1][0] == "request" and rng.random() < self.p_combine_request:
                it = self.agenda.pop()
                items.append((it[1], None))
            return DiaAct("request", tuple(items))
        if kind == "negate":
            return DiaAct("negate", ((top[1], top[2]),))
        if kind == "affirm":
            # optionally volunteer one more pending constraint
            if self.agenda and self.agenda[-1][0] == "inform" and rng.random() < self.p_extra_constraint:
                it = self.agenda.pop()
                return DiaAct("affirm", ((it[1], it[2]),))
            return DiaAct("affirm")
        return DiaAct(kind)

    def respond(self, system_act: DiaAct | None) -> DiaAct:
        """The user's (true) act in reply to ``system_act`` (``None``: the user speaks first)."""
        if self.goal is None:
            raise RuntimeError("SimulatedUser.respond() before reset()")
        if self.finished:
            return DiaAct("bye")
        if system_act is not None:
            if self.last_sys is not None and system_act == self.last_sys:
                self.patience -= 1
            self.last_sys = system_act
            if self.patience <= 0:
                self.gave_up = True
                self.finished = True
                return self._said(DiaAct("bye"))
            if system_act.type == "bye":
                self.finished = True
                return self._said(DiaAct("bye"))
            if system_act.type == "repeat" and self.last_user is not None:
                return self.last_user
            self._react(system_act)
            self._maintain()
        act = self._pop()
        if act.type == "bye":
            self.finished = True
        return self._said(act)

    def _said(self, act: DiaAct) -> DiaAct:
        self.last_user = act
        return act
