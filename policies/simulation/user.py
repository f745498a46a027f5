"""Agenda-based simulated user (Schatzmann & Young) modelled on PyDial's ``UMHdcSim``.

Goal (PyDial's goal generator): each system-requestable slot gets a constraint drawn uniformly
over its values plus ``dontcare``, redrawn until 2–3 venues match (we draw uniformly over the
precomputed admissible combinations: the same distribution, without a rejection loop);
requests are ``name`` plus 0–2 of addr, phone, postcode, signature, description.
``UserConfig(unsatisfiable_goals=True)`` drops the matching rule.

Agenda: a stack of user acts — ``bye()`` at the bottom, one ``inform`` per constraint (random
order) and ``inform(type=restaurant)`` on top. Each system act pushes the user's reaction
(see ``_receive_*``); a turn pops the top act and, with probability ``InformCombination``
each, merges further ``inform`` acts into it. Requests are not on the initial agenda: they are
pushed once a venue has been offered.

Behaviour (one probability per decision, named as in PyDial; each drawn per dialogue
uniformly from the range in :data:`DEFAULT_PROBS`, Environment 1's ``sampledUM.cfg`` ranges):

* ``request(s)`` → ``inform(s=goal)`` (the pending inform for s moves to the top); after a
  venue was offered with requests still open, the user asks for them instead;
  ``request`` of a slot the user can only ask about → ``negate()``;
* ``confirm(s=v)`` → ``affirm()`` (merged with the next pending inform with
  ``AffirmCombination``) or a correction: ``negate(s=goal)`` / ``deny(s=v,s=goal)`` /
  ``inform(s=goal)`` (``CorrectingAct1/2``); every correction may make the user give up with
  probability (1 − patience/max_patience)²;
* ``select(s=a,s=b)`` → ``inform(s=goal)``;
* ``inform(name=x, …)``: stated values are checked against the goal (corrections as above);
  the first offered venue may be rejected (``ReqAltsAfterVenRec1``: ``reqalts()``) or trigger
  a goal change (``ReqAltsAfterVenRec2``); otherwise the user stores the venue, fills its
  requests from the act's slots (an empty database value counts: PyDial's policies say
  ``description=""``, which reaches the user as a valueless item and fills the request with
  ``""``, as in PyDial), maybe says ``thankyou()``/``ack()``, and asks for open
  requests (``request(phone)``, more slots with ``AddSlotToReq``);
  ``inform(name=none, …)`` with correct values → the user relaxes one constraint
  (``dontcare`` with ``ConstraintRelax``, else a new value) and says ``reqalts(s=new)``;
* ``reqmore()`` → open requests, or ``negate()``/``bye()`` when all is done (``NoAfterReqmore``);
* ``hello()`` → maybe ``hello()`` (``Greeting``); ``repeat()`` → the last user act;
  ``bye()`` → ``bye()``.

Patience (Environment 1, the default: 4 or 5, drawn per dialogue; ``legacy``: 5) drops
by one whenever the system repeats its previous act (or says
``null()``); below 1 the user says ``bye()``. The user says ``bye()`` when its agenda runs
out, normally right after its last request was answered.

Success (PyDial's ``ObjectiveSuccessEvaluator``): every request has been filled and the venue
the user holds satisfies the goal constraints (current goal, after any change) in the database.

Deviations from PyDial, for a closed, deterministic simulator: answers to
``inform(=dontcare)`` use the placeholder slot ``this`` (PyDial: an empty slot); a new value
chosen in a goal change must keep the goal satisfiable; ``confreq`` is not supported (no summary
action produces it). All randomness comes from the ``np.random.Generator`` given to
:meth:`SimulatedUser.reset`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np

from behavsim import ConfigError, DialogueAct, Registry, UnknownName, did_you_mean
from policies.simulation.actions import DiaAct, system_turn, turn_acts
from policies.simulation.domain import DONTCARE, Domain

__all__ = [
    "UserConfig",
    "UserGoal",
    "SimulatedUser",
    "UserConfigError",
    "UnknownUserConfig",
    "DEFAULT_PROBS",
    "LEGACY_PROBS",
    "LEGACY_PATIENCE",
    "ENV1_PROBS",
    "ENV1_UNMODELLED",
    "ENV1_PATIENCE",
    "USER_CONFIGS",
    "DEFAULT_USER",
]

_EXTRA_REQUESTS = ("addr", "phone", "postcode", "signature", "description")

#: Environment 1's behaviour ranges (PyDial's ``config/sampledUM.cfg``, which
#: ``env1-hdc-CR.cfg`` names as ``[usermodel] configfile``), each probability drawn uniformly
#: per dialogue; restated here as behavsim's own data. Decisions our user does not model are in
#: :data:`ENV1_UNMODELLED`.
ENV1_PROBS: dict[str, tuple[float, float]] = {
    "InformCombination": (0.2, 0.7),
    "AddSlotToReq": (0.2, 0.4),
    "NoAfterReqmore": (0.8, 0.9),
    "YesAfterReqmore": (0.2, 0.3),
    "Greeting": (0.3, 0.7),
    "ConstraintRelax": (0.5, 0.8),
    "TellAboutChange": (0.4, 0.6),
    "DealWithPending": (0.4, 0.6),
    "AddVenueNameToRequest": (0.01, 0.2),
    "NoSlotWithDontcare": (0.7, 0.9),
    "InformToConfirm": (0.01, 0.2),
    "CombAffirmWithAgdItem": (0.01, 0.2),
    "OverruleCorrection": (0.01, 0.2),
    "ConfirmRandomConstr": (0.01, 0.3),
    "ReqAltsAfterVenRec1": (0.01, 0.3),
    "ReqAltsAfterVenRec2": (0.01, 0.3),
    "CorrectingAct1": (0.3, 0.5),
    "CorrectingAct2": (0.3, 0.5),
    "ThankAck1": (0.01, 0.2),
    "ThankAck2": (0.01, 0.2),
    "AffirmCombination": (0.2, 0.7),
}
#: The default user's decision probabilities, (low, high) ranges drawn per dialogue: Environment 1's.
DEFAULT_PROBS: dict[str, tuple[float, float]] = ENV1_PROBS
#: behavsim 0.1's user (the ``legacy`` configuration): (low, high) ranges around PyDial's
#: ``defaultUM.cfg`` values, which lie inside them
LEGACY_PROBS: dict[str, tuple[float, float]] = {
    "InformCombination": (0.4, 0.8),  # PyDial 0.6
    "AddSlotToReq": (0.2, 0.5),  # 0.333
    "NoAfterReqmore": (0.5, 0.9),  # 0.7
    "YesAfterReqmore": (0.1, 0.4),  # 0.25
    "Greeting": (0.3, 0.7),  # 0.5
    "ConstraintRelax": (0.5, 0.8),  # 0.667
    "TellAboutChange": (0.3, 0.7),  # 0.5
    "DealWithPending": (0.3, 0.7),  # 0.5
    "AddVenueNameToRequest": (0.0, 0.1),  # 0.05
    "NoSlotWithDontcare": (0.6, 1.0),  # 0.8
    "InformToConfirm": (0.0, 0.1),  # 0.05
    "CombAffirmWithAgdItem": (0.0, 0.1),  # 0.05
    "OverruleCorrection": (0.0, 0.2),  # 0.1
    "ConfirmRandomConstr": (0.0, 0.2),  # 0.1
    "ReqAltsAfterVenRec1": (0.05, 0.25),  # 0.143
    "ReqAltsAfterVenRec2": (0.05, 0.25),  # 0.143
    "CorrectingAct1": (0.3, 0.6),  # 0.45
    "CorrectingAct2": (0.2, 0.4),  # 0.4
    "ThankAck1": (0.0, 0.2),  # 0.1
    "ThankAck2": (0.0, 0.2),  # 0.1
    "AffirmCombination": (0.8, 1.0),  # 1.0
}

#: sampledUM.cfg entries without a decision in our user: ``Repeat`` and ``NullResp`` are 0
#: there (never taken); the other three are decisions our user does not make.
ENV1_UNMODELLED: dict[str, float | tuple[float, float]] = {
    "Repeat": 0.0,
    "NullResp": 0.0,
    "ByeOrStartOver": (0.2, 0.5),
    "NewRequestResp1": (0.1, 0.4),
    "NewRequestResp2": (0.1, 0.4),
}
#: Environment 1's ``[usermodel] patience = 4,6``: drawn per dialogue as PyDial does
#: (``randint(4, 6)``, upper bound exclusive: 4 or 5).
ENV1_PATIENCE = (4, 6)
#: behavsim 0.1's fixed patience (the ``legacy`` configuration).
LEGACY_PATIENCE = 5


class UserConfigError(ConfigError):
    """Invalid simulated-user configuration (a :class:`behavsim.ConfigError`, so a ``ValueError``)."""


@dataclass(frozen=True)
class UserConfig:
    """Simulated-user settings; ``probs`` overrides entries of :data:`DEFAULT_PROBS`
    (a number fixes a probability, a pair gives a range). ``patience`` is a number, or a pair
    ``(low, high)`` drawn per dialogue with the upper bound exclusive, as PyDial draws
    ``patience = 4,6``. Named configurations: :data:`USER_CONFIGS` (``"env1"``, the default, and ``"legacy"``);
    :meth:`from_dict` also takes such a name."""

    patience: int | tuple[int, int] = ENV1_PATIENCE
    min_matches: int = 2
    max_matches: int = 3
    max_extra_requests: int = 2
    unsatisfiable_goals: bool = False
    new_goal_scenarios: bool = True
    probs: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        pat = self.patience
        if isinstance(pat, list):
            object.__setattr__(self, "patience", pat := tuple(pat))
        if isinstance(pat, tuple):
            if not (
                len(pat) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in pat)
                and 1 <= pat[0] < pat[1]
            ):
                raise UserConfigError(
                    "UserConfig.patience: a range must be two ints (low, high) with "
                    f"1 <= low < high (high exclusive), got {pat!r}"
                )
        elif not isinstance(pat, int) or isinstance(pat, bool) or pat < 1:
            raise UserConfigError(f"UserConfig.patience must be an int >= 1 or a range (low, high), got {pat!r}")
        if not 0 <= self.min_matches <= self.max_matches:
            raise UserConfigError(
                f"UserConfig: need 0 <= min_matches <= max_matches, got {self.min_matches!r}, {self.max_matches!r}"
            )
        if not 0 <= self.max_extra_requests <= len(_EXTRA_REQUESTS):
            raise UserConfigError(
                f"UserConfig.max_extra_requests must be in 0..{len(_EXTRA_REQUESTS)}, got {self.max_extra_requests!r}"
            )
        for k, v in self.probs.items():
            if k not in DEFAULT_PROBS:
                hint = did_you_mean(k, DEFAULT_PROBS, cutoff=0.6)
                raise UserConfigError(f"UserConfig.probs: unknown probability {k!r}.{hint}")
            lo, hi = (v, v) if isinstance(v, (int, float)) else tuple(v)
            if not 0.0 <= lo <= hi <= 1.0:
                raise UserConfigError(
                    f"UserConfig.probs[{k!r}] must be a probability or a range "
                    f"(low, high) with 0 <= low <= high <= 1, got {v!r}"
                )

    def ranges(self) -> dict[str, tuple[float, float]]:
        out = dict(DEFAULT_PROBS)
        for k, v in self.probs.items():
            out[k] = (float(v), float(v)) if isinstance(v, (int, float)) else (float(v[0]), float(v[1]))
        return out

    @classmethod
    def named(cls, name: str) -> "UserConfig":
        """A named configuration (:data:`USER_CONFIGS`); unknown names raise
        :class:`UnknownUserConfig` with the closest one."""
        return USER_CONFIGS.create(name)

    @classmethod
    def from_dict(cls, d) -> "UserConfig":
        if d is None:
            return cls()
        if isinstance(d, UserConfig):
            return d
        if isinstance(d, str):
            return cls.named(d)
        if not isinstance(d, dict):
            raise UserConfigError(
                f"user_config must be a UserConfig, a dict, a name "
                f"({', '.join(USER_CONFIGS.names())}) or None, got {type(d).__name__}"
            )
        known = {f.name for f in fields(cls)}
        bad = sorted(set(d) - known)
        if bad:
            raise UserConfigError(f"unknown UserConfig key(s) {bad}; known: {sorted(known)}")
        return cls(**d)


class UnknownUserConfig(UnknownName, UserConfigError):
    """A user-configuration name that :data:`USER_CONFIGS` does not hold."""


#: Named simulated-user configurations: ``env1`` (the default, ``UserConfig()``: Environment 1 of
#: Casanueva et al. 2017 as PyDial's ``env1`` configs set it: :data:`ENV1_PROBS`, patience drawn
#: from :data:`ENV1_PATIENCE`; goals: all three constraints, 2–3 matching venues, ``name`` plus
#: 0–2 extra requests) and ``legacy`` (behavsim 0.1's user: patience 5, the
#: :data:`LEGACY_PROBS` ranges; same goals).
USER_CONFIGS: Registry[Callable[..., UserConfig]] = Registry("user config", UnknownUserConfig)
USER_CONFIGS.register("env1", UserConfig)
#: The named configuration of the default user (``UserConfig()``, ``user_config=None``).
DEFAULT_USER = "env1"
USER_CONFIGS.register("legacy", lambda: UserConfig(patience=LEGACY_PATIENCE, probs=dict(LEGACY_PROBS)))


@dataclass
class UserGoal:
    """Constraints (slot -> value or ``dontcare``), requests (slot -> value heard, or None),
    and name constraints (``name_eq``: the venue the user holds to; ``name_neq``: rejected)."""

    constraints: dict[str, str]
    requests: dict[str, str | None]
    name_eq: str | None = None
    name_neq: set[str] = field(default_factory=set)

    def all_filled(self) -> bool:
        return None not in self.requests.values()


def _heard(slot: str, value: str | None) -> str | None:
    """The value a system ``inform``/``confirm`` item gives a requested slot, or None if it gives none.

    An empty database value reaches us valueless: a toolkit policy says ``description=""``
    and the act parser (:func:`behavsim.parse_act`, whose canonical items cannot tell ``""``
    from a bare slot) hands the user ``("description", None)``. PyDial's user fills a request
    with whatever value the system's item carries (``""`` there), so that is an answer: such an
    item gives ``""``. The venue ``name`` needs a real value, and a negated item (``name!``)
    never answers."""
    if slot.endswith("!"):
        return None
    if value is None:
        return None if slot == "name" else ""
    return value


def _act(t: str, *items) -> list:
    """Mutable agenda act: [type, [(slot, value), ...]]."""
    return [t, list(items)]


class SimulatedUser:
    """Agenda-based simulated user over a domain (see module doc)."""

    def __init__(self, domain: Domain, config: UserConfig | dict | str | None = None) -> None:
        self.domain = domain
        self.config = UserConfig.from_dict(config)
        self.slots = tuple(domain.system_requestable)
        self._slotset = set(self.slots)
        self._informable = set(domain.informable)
        self._only_requestable = set(domain.requestable) - self._informable
        self._extra = tuple(r for r in _EXTRA_REQUESTS if r in domain.requestable)
        self._options = [domain.informable[s] + (DONTCARE,) for s in self.slots]
        c = self.config
        self._admissible = [
            combo
            for combo in itertools.product(*self._options)
            if c.min_matches <= domain.count(dict(zip(self.slots, combo))) <= c.max_matches
        ]
        if not c.unsatisfiable_goals and not self._admissible:
            raise UserConfigError(
                f"no goal over {self.slots} has between {c.min_matches} and "
                f"{c.max_matches} matching venues in {domain.source}"
            )
        self._ranges = c.ranges()
        self.rng = np.random.default_rng(0)
        self.goal = UserGoal({}, {"name": None})  # no goal before reset(): nothing accepted, no success

    # ------------------------------------------------------------------ start
    def reset(self, rng: np.random.Generator) -> UserGoal:
        self.rng = rng
        c = self.config
        if c.unsatisfiable_goals:
            combo = tuple(opts[int(rng.integers(len(opts)))] for opts in self._options)
        else:
            combo = self._admissible[int(rng.integers(len(self._admissible)))]
        order = [int(i) for i in rng.permutation(len(self.slots))]
        constraints = {self.slots[i]: combo[i] for i in order}
        k = int(rng.integers(0, min(c.max_extra_requests, len(self._extra)) + 1))
        extra = [self._extra[int(i)] for i in sorted(rng.choice(len(self._extra), size=k, replace=False))] if k else []
        self.goal = UserGoal(constraints, {"name": None, **{r: None for r in extra}})
        u = rng.random(len(self._ranges))
        self.p = {name: lo + (hi - lo) * x for (name, (lo, hi)), x in zip(self._ranges.items(), u)}
        if isinstance(c.patience, tuple):  # drawn after the probabilities: fixed patience
            pat = int(rng.integers(c.patience[0], c.patience[1]))  # draws nothing extra
        else:
            pat = c.patience
        self.max_patience = pat
        self.patience = pat
        self.prev_used = {s: {v} for s, v in constraints.items()}
        self.first_recommendation = True
        self.last_sys: DiaAct | None = None
        self._last_turn: tuple[DiaAct, ...] = ()
        self._received = 0
        self.last_user: DiaAct | None = None
        self.finished = False
        self.gave_up = False
        self.agenda: list[list] = [_act("bye")]
        for s in reversed(list(constraints)):
            self.agenda.append(_act("inform", (s, constraints[s])))
        self.agenda.append(_act("inform", ("type", self.domain.name)))
        return self.goal

    # ------------------------------------------------------------------ queries
    @property
    def accepted(self) -> str | None:
        return self.goal.requests.get("name")

    @property
    def success(self) -> bool:
        g = self.goal
        if not g.all_filled():
            return False
        return self.venue_matches_goal(g.requests["name"])

    def venue_matches_goal(self, name: str | None) -> bool:
        g = self.goal
        if not name or name in g.name_neq or (g.name_eq is not None and g.name_eq != name):
            return False
        i = self.domain.venue_index(name)
        if i is None:
            return False
        v = self.domain.venues[i]
        return all(val == DONTCARE or v.get(s) == val for s, val in g.constraints.items())

    def _r(self) -> float:
        return float(self.rng.random())

    def _choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    # ------------------------------------------------------------------ agenda helpers
    def _push(self, t: str, *items) -> None:
        self.agenda.append(_act(t, *items))

    def _filter_slot(self, slot: str) -> None:
        self.agenda = [
            a for a in self.agenda if not (a[0] in ("inform", "confirm", "affirm") and any(s == slot for s, _ in a[1]))
        ]

    def _reset_requests(self) -> None:
        for r in self.goal.requests:
            self.goal.requests[r] = None

    def _unfilled(self) -> list[str]:
        return [r for r, v in self.goal.requests.items() if v is None]

    # ------------------------------------------------------------------ checks
    def _confirmable(self, act: DiaAct) -> list[tuple[str, str]]:
        """Goal constraints (not dontcare) the system act does not mention with their value."""
        said = set(act.items)
        return [(s, v) for s, v in self.goal.constraints.items() if v != DONTCARE and (s, v) not in said]

    def _check_values(self, act: DiaAct, from_confirm: bool) -> bool:
        """PyDial's implicit-confirmation check: correct the first wrong value in ``act``.
        Returns True when everything stated is consistent with the goal."""
        g = self.goal
        name_none = act.get("name") == "none"
        informs_requested = any(s in self._only_requestable for s, _ in act.items)
        explicit_confirm = False
        for slot, value in act.items:
            if slot in ("count", "option") or slot.endswith("!") or value is None:
                continue
            wrong = False
            if slot == "name":
                if value != "none" and value in g.name_neq:
                    wrong = True
                elif not informs_requested:
                    continue  # PyDial skips the venue name of a plain offer
            elif slot in g.constraints:
                want = g.constraints[slot]
                wrong = want != DONTCARE and value != want
            else:
                continue  # informational slot (phone, ...) or not in the goal
            if wrong:
                pat = self.patience / self.max_patience
                if self._r() < (1.0 - pat) ** 2:
                    self.agenda = [_act("bye")]
                    self.gave_up = True
                    return False
                if slot == "name":
                    self._push("reqalts")
                else:
                    planned = None
                    if not name_none and self._r() < self.p["OverruleCorrection"]:
                        conf = self._confirmable(act)
                        if conf:  # ask about another constraint instead of correcting
                            planned = _act("confirm", self._choice(conf))
                    if planned is None:
                        want = g.constraints[slot]
                        f = self._r()
                        if f < self.p["CorrectingAct1"]:
                            planned = _act("negate", (slot, want))
                        elif f < self.p["CorrectingAct1"] + self.p["CorrectingAct2"]:
                            planned = _act("deny", (slot, value), (slot, want))
                        else:
                            planned = _act("inform", (slot, want))
                    self.agenda.append(planned)
                self._reset_requests()
                return False
            if (
                not explicit_confirm
                and not from_confirm
                and not name_none
                and self._r() < self.p["ConfirmRandomConstr"]
            ):
                conf = self._confirmable(act)
                if conf:
                    self._push("confirm", self._choice(conf))
                    explicit_confirm = True
        if explicit_confirm:
            for s, v in act.items:
                heard = _heard(s, v)
                if s in g.requests and heard is not None:
                    g.requests[s] = heard
            return False
        return True

    # ------------------------------------------------------------------ reactions
    def _receive_request(self, act: DiaAct) -> None:
        g = self.goal
        slot = act.items[0][0] if act.items else None
        if g.requests.get("name") is not None:
            open_ = self._unfilled()
            if open_:
                self._push("request", ("name", g.requests["name"]), (open_[0], None))
                return
        if slot is None or slot in ("venue", "task", "type"):
            self._push("inform", ("type", self.domain.name))
            return
        if slot in self._only_requestable:
            self._push("negate")
            return
        for i in range(len(self.agenda) - 1, -1, -1):
            a = self.agenda[i]
            if a[0] == "inform" and any(s == slot for s, _ in a[1]):
                self.agenda.append(self.agenda.pop(i))
                return
        if slot in g.constraints:
            self._push("inform", (slot, g.constraints[slot]))
        else:
            g.constraints[slot] = DONTCARE
            self._push("inform", (slot, DONTCARE))

    def _receive_confirm(self, act: DiaAct) -> None:
        if not self._check_values(act, from_confirm=True):
            return
        for slot, value in act.items:
            if slot not in self.goal.constraints and slot != "name" and value != DONTCARE:
                self._push("negate", (slot, DONTCARE))
                return
        aff = _act("affirm")
        if self.agenda and self.agenda[-1][0] == "inform" and self._r() < self.p["AffirmCombination"]:
            aff[1].extend(self.agenda.pop()[1])
        self.agenda.append(aff)

    def _receive_select(self, act: DiaAct) -> None:
        if not act.items:
            return
        slot, value = act.items[0]
        if slot == "name":
            self._push("inform", ("name", value))
            return
        if slot not in self.goal.constraints:
            self.goal.constraints[slot] = DONTCARE
        self._push("inform", (slot, self.goal.constraints[slot]))

    def _receive_reqmore(self, act: DiaAct) -> None:
        g = self.goal
        if len(self.agenda) > 1:
            top = self.agenda[-1]
            if (
                top[0] == "inform"
                and not any(s == "type" for s, _ in top[1])
                and self._r() < self.p["CombAffirmWithAgdItem"]
            ):
                self.agenda[-1] = ["affirm", list(top[1])]
            return
        if g.all_filled():
            if self._r() < self.p["NoAfterReqmore"]:
                self._push("negate")
            else:
                self.agenda = [_act("bye")]
        elif g.requests.get("name") is not None:
            for r in self._unfilled():
                self._push("request", (r, None))
        elif self._r() < self.p["YesAfterReqmore"]:
            self._push("affirm")
        else:
            self._push(
                "inform", ("type", self.domain.name), *[(s, v) for s, v in g.constraints.items() if v != DONTCARE]
            )

    def _change_goal(self, act: DiaAct, name_none: bool) -> None:
        g = self.goal
        cands = [
            s for s, v in act.items if s in self._slotset and v is not None and v != DONTCARE and v != self.domain.name
        ]
        slot = self._choice(cands) if cands else self._choice(list(g.constraints))
        g.name_eq = None
        g.name_neq = set()
        if self._r() < self.p["ConstraintRelax"] or slot not in self.prev_used:
            value = DONTCARE
        else:
            others = {s: v for s, v in g.constraints.items() if s != slot}
            options = [
                v
                for v in self.domain.informable[slot]
                if v not in self.prev_used[slot] and self.domain.count({**others, slot: v}) > 0
            ]
            value = self._choice(options) if options else DONTCARE
        self.prev_used.setdefault(slot, set()).add(value)
        g.constraints[slot] = value
        self._filter_slot(slot)
        if name_none or self._r() < self.p["TellAboutChange"]:
            self._push("reqalts", (slot, value))
        else:
            self._push("reqalts")
            offered = act.get("name")
            if value == DONTCARE:
                if offered and offered != "none":
                    g.name_neq.add(offered)
            else:
                g.requests[slot] = None

    def _receive_inform(self, act: DiaAct) -> None:
        g = self.goal
        name = act.get("name")
        name_none = name == "none"
        listed = [v for s, v in act.items if s == "name!"]
        if name and not name_none and g.requests.get("name") != name:
            self._reset_requests()
        if not self._check_values(act, from_confirm=False):
            return
        if self._goal_changed_by(act, name, name_none, listed):
            return
        chosen = self._choose_listed(act, listed) if listed else None
        self._note_answers(act, chosen)
        if self._r() < self.p["InformToConfirm"]:
            for a in self.agenda:
                if a[0] == "inform" and a[1] and a[1][0][1] != DONTCARE and a[1][0][0] != "type":
                    a[0] = "confirm"
        f = self._r()
        if f < self.p["ThankAck1"]:
            self._push("thankyou")
            return
        if f < self.p["ThankAck1"] + self.p["ThankAck2"]:
            self._push("ack")
            return
        if len(self.agenda) > 1 and self._r() < self.p["DealWithPending"]:
            return
        self._request_open(chosen)

    def _goal_changed_by(self, act: DiaAct, name: str | None, name_none: bool, listed: list) -> bool:
        """The user's reaction to a recommendation (or to ``name=none``) when it changes the goal or
        asks for alternatives; ``True`` when the turn is handled."""
        g = self.goal
        if self.config.new_goal_scenarios:
            change = False
            if name_none and not listed:
                change = True
            elif name and not name_none:
                if self.first_recommendation:
                    self.first_recommendation = False
                    f = self._r()
                    if f < self.p["ReqAltsAfterVenRec1"]:
                        if g.name_eq != name:
                            g.name_neq.add(name)
                        self._push("reqalts")
                        return True
                    if f < self.p["ReqAltsAfterVenRec1"] + self.p["ReqAltsAfterVenRec2"]:
                        change = True
                    else:
                        g.name_eq = name
                else:
                    g.name_eq = name
                    g.name_neq.discard(name)
            if change:
                self._change_goal(act, name_none)
                return True
        elif name_none and not listed:
            self._change_goal(act, True)
            return True
        return False

    def _choose_listed(self, act: DiaAct, listed: list) -> str | None:
        """One of the venues a "no more venues" inform lists that meets the goal (the goal's venue
        name forgotten when none does); the slots the act did not mention become ``dontcare``."""
        g = self.goal
        chosen = None
        ok = [v for v in listed if self.venue_matches_goal(v)]
        if not ok:
            g.name_eq = None
            g.name_neq = set()
            ok = [v for v in listed if self.venue_matches_goal(v)]
        if ok:
            chosen = self._choice(ok)
            said = {s for s, _ in act.items}
            for s in list(g.constraints):
                if s not in said:
                    g.constraints[s] = DONTCARE
                    self._filter_slot(s)
        return chosen

    def _note_answers(self, act: DiaAct, chosen: str | None) -> None:
        """The goal's requests the act answers (the chosen venue's name for ``name``)."""
        g = self.goal
        for r in g.requests:
            if r == "name" and chosen is not None:
                g.requests[r] = chosen
                continue
            for s, v in act.items:
                heard = _heard(s, v)
                if s == r and heard is not None and not (r == "name" and heard == "none"):
                    g.requests[r] = heard

    def _request_open(self, chosen: str | None) -> None:
        """Ask for the requests still open (with the chosen venue's name), adding each further one
        with probability ``AddSlotToReq``."""
        g = self.goal
        open_ = [r for r in self._unfilled() if r != "name"]
        if open_ and g.requests.get("name") is not None or chosen is not None and open_:
            items: list[tuple[str, str | None]] = []
            if chosen is not None:
                items.append(("name", chosen))
            items.append((open_[0], None))
            for r in open_[1:]:
                if self._r() < self.p["AddSlotToReq"]:
                    items.append((r, None))
                else:
                    break
            self._push("request", *items)

    def _receive(self, act: DiaAct) -> None:
        t = act.type
        if t == "hello":
            if not act.items and self._r() < self.p["Greeting"]:
                self._push("hello")
        elif t == "bye":
            self.agenda = [_act("bye")]
        elif t == "request":
            self._receive_request(act)
        elif t == "confirm":
            self._receive_confirm(act)
        elif t == "select":
            self._receive_select(act)
        elif t in ("inform", "affirm", "negate"):
            self._receive_inform(act)
        elif t == "reqmore":
            self._receive_reqmore(act)
        elif t == "repeat":
            if self.last_user is not None and self.last_user.type != "silence":
                self.agenda.append([self.last_user.type, list(self.last_user.items)])
        else:  # null, badact, unknown
            if self.patience < 1:
                self.agenda = [_act("bye")]
            elif self.last_user is not None:
                self.agenda.append([self.last_user.type, list(self.last_user.items)])

    # ------------------------------------------------------------------ turn
    def _pop(self) -> DiaAct:
        if not self.agenda:
            self.agenda.append(_act("bye"))
        t, items = self.agenda.pop()
        items = list(items)
        if t in ("inform", "confirm") or (t in ("affirm", "negate") and items):
            for s, _ in items:
                self._filter_slot(s)
        last = self.last_sys.type if self.last_sys is not None else None
        if t in ("thankyou", "silence", "repeat", "ack", "deny", "confirm", "bye") or last == "reqmore":
            return DiaAct(t, tuple(items))
        if (
            last in ("request", "select")
            and self._received == 1  # after several acts, "this" would not say which slot
            and t == "inform"
            and items
            and items[0][1] == DONTCARE
            and self._r() < self.p["NoSlotWithDontcare"]
        ):
            items[0] = ("this", DONTCARE)
        if (
            t == "request"
            and len(items) == 1
            and self.goal.requests.get("name") is not None
            and self._r() < self.p["AddVenueNameToRequest"]
        ):
            items.insert(0, ("name", self.goal.requests["name"]))
        if t in ("inform", "negate", "hello", "affirm"):
            while self.agenda and (
                self.agenda[-1][0] == "inform" or (t == "hello" and self.agenda[-1][0] == "request")
            ):
                if self._r() < self.p["InformCombination"]:
                    nxt = self.agenda.pop()
                    items.extend(nxt[1])
                    for s, _ in nxt[1]:
                        self._filter_slot(s)
                else:
                    break
        return DiaAct(t, tuple(items))

    def respond(self, system_act: "DiaAct | DialogueAct | str | tuple | None") -> DiaAct:
        """The user's (true) act in reply to ``system_act`` (``None``: the user speaks first): a
        :class:`DiaAct` as it is, an act string or :class:`behavsim.DialogueAct` converted by
        :func:`~policies.simulation.actions.system_turn`. An act set (``a(...)|b(...)`` or a sequence)
        is one turn: its acts received in turn (:func:`_received_order`), one reply; patience falls
        once, when all its acts are null/badact or the whole set repeats the previous turn."""
        if self.goal is None:
            raise RuntimeError("SimulatedUser.respond() before reset()")
        if self.finished:
            return DiaAct("bye")
        if system_act is not None:
            acts = turn_acts(system_turn(system_act))  # a DiaAct passes as it is
            if all(a.type in ("null", "badact") for a in acts) or (
                self._last_turn
                and self.last_user is not None
                and self.last_user.type != "repeat"
                and acts == self._last_turn
            ):
                self.patience -= 1
            if self.patience < 1:
                self.gave_up = True
                self.agenda = [_act("bye")]
            else:
                ordered = _received_order(acts)
                self.last_sys = ordered[-1]
                self._last_turn, self._received = acts, len(ordered)
                for act in ordered:
                    self._receive(act)
        act = self._pop()
        if act.type == "bye":
            self.finished = True
        self.last_user = act
        return act


#: The system act types the user reacts to (any other is heard as ``null``).
_KNOWN = frozenset(("hello", "bye", "request", "confirm", "select", "inform", "affirm", "negate", "reqmore", "repeat"))


def _received_order(acts: tuple[DiaAct, ...]) -> tuple[DiaAct, ...]:
    """The order in which the user receives a turn's acts: a single act as it is; in a set, the
    acts in the set's order with ``bye`` last (the turn then ends the dialogue), leaving out acts of
    types the user does not know (a greeting beside an inform) unless the set has no other."""
    if len(acts) == 1:
        return acts
    known = [a for a in acts if a.type in _KNOWN] or list(acts)
    return tuple([a for a in known if a.type != "bye"] + [a for a in known if a.type == "bye"])
