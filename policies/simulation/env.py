"""Gymnasium-style dialogue environment: PyDial's Cambridge-restaurants Environment 1 in
pure Python (agenda-based user, focus tracker, 0% semantic error by default, 25 turns).

>>> from policies.simulation.env import DialogueEnv
>>> env = DialogueEnv()
>>> belief, info = env.reset(seed=1)
>>> belief, reward, terminated, truncated, info = env.step("request_food")

One ``step`` is one exchange: the system's summary action is mapped to a master act, the
simulated user replies, the reply passes the error model and the tracker, and the new belief
is returned. As in PyDial's agent, when the *user* says ``bye()`` the dialogue is not over yet
(``final_system_turn=True``, the default): the next ``step`` is the system's closing turn — the
policy acts on the final belief (where ``bye`` is executable), the agent says ``bye()``
whatever it chose (``info["chosen_act"]`` keeps the mapped act), the exchange's user act is
``null()``, and ``terminated`` is True. So ``info["turns"]`` counts one turn per user act, as
PyDial does (its opening ``hello()`` is turn 0 and not counted, like ``hello=False`` here).
A user ``bye()`` on the last allowed turn ends the dialogue at once; a system ``bye()`` ends it
after the user's reply. The reward is −1 per turn; the success bonus is *not* added here — the final
``info["success"]`` (PyDial's objective task success: a venue matching the user's
constraints was offered and every request was answered) is left to the reward functions.

``info`` keys after ``reset``: ``action_mask``, ``turns``, ``goal``, ``user_act``, ``exchanges``,
``success`` (and ``master_act``, ``prompt`` of the opening ``hello()`` with ``hello=True``); after ``step`` also ``master_act``, ``prompt``, ``summary_action``,
``masked_action`` (True if the action was not executable in the mask), ``user_act_type``,
``asr_confidence``. ``exchanges`` holds one dict per exchange (keys: see ``EXCHANGE_KEYS``);
with ``hello=True`` the opening ``hello()`` is exchange 1 and counts as a turn.
"""

from __future__ import annotations

import numpy as np

from behavsim import BehavsimError, ConfigError
from policies.simulation.actions import (
    DiaAct,
    accepted_constraints,
    action_mask,
    master_act,
    summary_actions,
    system_turn,
    turn_acts,
    turn_string,
    unknown_action,
)
from policies.simulation.domain import Domain, resolve_domain
from policies.simulation.nlg import TemplateNLG
from policies.simulation.tracker import ErrorModel, FocusTracker
from policies.simulation.user import SimulatedUser, UserConfig

__all__ = ["DialogueEnv", "EXCHANGE_KEYS", "EnvError", "check_env"]

EXCHANGE_KEYS = (
    "turn",
    "system_act",
    "system_act_type",
    "user_act",
    "user_act_type",
    "reprompt",
    "confirmation",
    "asr_confidence",
    "constraints_filled",
    "user_goal_constraints",
    "informed_venue",
    "success_so_far",
)


class EnvError(BehavsimError, RuntimeError):
    """The environment was used out of protocol (e.g. ``step`` after the end)."""


class DialogueEnv:
    """Simulated-user dialogue environment (see module doc)."""

    metadata: dict[str, list[str]] = {"render_modes": []}

    def __init__(
        self,
        domain: Domain | None = None,
        *,
        max_turns: int = 25,
        error_model: ErrorModel | None = None,
        hello: bool = False,
        user_config: UserConfig | dict | str | None = None,
        nlg_seed: int = 0,
        final_system_turn: bool = True,
    ) -> None:
        if not isinstance(max_turns, int) or max_turns < 1:
            raise ConfigError(f"DialogueEnv: max_turns must be a positive int, got {max_turns!r}")
        if error_model is not None and not isinstance(error_model, ErrorModel):
            raise TypeError(f"DialogueEnv: error_model must be an ErrorModel or None, got {type(error_model).__name__}")
        self.domain = resolve_domain(domain)
        self.max_turns = max_turns
        self.error_model = error_model or ErrorModel()
        self.hello = bool(hello)
        self.final_system_turn = bool(final_system_turn)
        self.actions = summary_actions(self.domain)
        self._action_index = {a: i for i, a in enumerate(self.actions)}
        self.tracker = FocusTracker(self.domain)
        self.user = SimulatedUser(self.domain, user_config)
        self.nlg = TemplateNLG(nlg_seed)
        self.np_random: np.random.Generator | None = None
        self.last_system_act: str | None = None
        self.belief: dict | None = None
        self._done = True

    # ------------------------------------------------------------------ protocol
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None or self.np_random is None:
            self.np_random = np.random.default_rng(seed)
        goal = self.user.reset(self.np_random)
        self.tracker.reset()
        self.turns = 0
        self.exchanges: list[dict] = []
        self.last_system_act = None
        self._last_sys: DiaAct | None = None
        self._last_turn: tuple[DiaAct, ...] = ()
        self._done = False
        self._closing = False
        self._goal_constraints = len(goal.constraints)
        sys_act = None
        if self.hello:
            sys_act = DiaAct("hello")
        user_act = self.user.respond(sys_act)
        belief, conf = self._observe(user_act, sys_act)
        if sys_act is not None:
            self.turns = 1
            self._log(sys_act, user_act, conf, belief)
            self.last_system_act = str(sys_act)
            self._remember(sys_act)
        self._mask = action_mask(belief, self.domain)
        info = {
            "action_mask": self._mask,
            "turns": self.turns,
            "goal": {"constraints": dict(goal.constraints), "requests": list(goal.requests)},
            "user_act": str(user_act),
            "exchanges": self.exchanges,
            "success": self.user.success,
        }
        if sys_act is not None:
            info["master_act"] = str(sys_act)
            info["prompt"] = self.nlg.generate(sys_act)
        if user_act.type == "bye":  # cannot happen with a fresh user, kept for safety
            self._done = True
        return belief, info

    def step(self, summary_action: str):
        """One exchange on a summary action (mapped to its master act as PyDial does)."""
        if self._done:
            raise EnvError("DialogueEnv.step() called after the dialogue ended; call reset()")
        idx = self._action_index.get(summary_action)
        if idx is None:
            raise unknown_action(summary_action, self.domain)
        masked = not bool(self._mask[idx])
        self.turns += 1
        if self._closing:
            return self._closing_step(summary_action, masked, None)
        assert self.belief is not None  # set by reset(); step() before it raised above
        sys_act = master_act(summary_action, self.belief, self.domain, self._last_sys)
        return self._exchange(sys_act, summary_action, masked)

    @property
    def closing(self) -> bool:
        """Whether the next step is the closing turn after the user's ``bye()`` (whatever the
        system chooses there, the agent says ``bye()``)."""
        return self._closing

    def step_closing(self):
        """The closing turn after the user's ``bye()`` without a chosen act, for a policy that
        answered it with words alone (a model of people says goodbye without an act, as the
        corpus's wizards did): the agent says ``bye()``, as it does whatever the system chose
        (``info["chosen_act"]`` is ``"None"``). Any other turn needs an act."""
        if self._done or not self._closing:
            raise EnvError("DialogueEnv.step_closing(): only the closing turn after the user's bye() takes no act")
        self.turns += 1
        return self._closing_step(None, False, None)

    def step_act(self, act: "DiaAct | str | object"):
        """One exchange on a system act given directly (a string such as ``request(food)``, a
        :class:`behavsim.DialogueAct` or a :class:`DiaAct`), for policies without summary actions
        (e.g. a callable or a toolkit's policy). ``info["summary_action"]`` is ``None`` and
        ``info["masked_action"]`` is False: there is no summary action to check against the mask.

        An act set — ``inform(...)|request(area)`` or a sequence of acts, as a model trained on
        human wizards answers — is one turn: the user receives its acts in turn and answers once
        (:meth:`SimulatedUser.respond`), the tracker reads all of them, and the exchange records
        the set (``system_act`` its acts joined by ``|`` in canonical order, ``system_act_type``
        their types joined likewise; ``confirmation`` and ``informed_venue`` hold when one of its
        acts does; the prompt is each act's words in turn). A set with ``bye`` ends the dialogue
        like ``bye()``; a later ``step("repeat")`` repeats the set's last act."""
        if self._done:
            raise EnvError("DialogueEnv.step_act() called after the dialogue ended; call reset()")
        try:
            sys_act = system_turn(act)  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"DialogueEnv.step_act: not a system act: {act!r:.80} ({exc})") from None
        self.turns += 1
        if self._closing:
            return self._closing_step(None, False, sys_act)
        return self._exchange(sys_act, None, False)

    def _exchange(self, sys_act: "DiaAct | tuple[DiaAct, ...]", summary_action: str | None, masked: bool):
        user_act = self.user.respond(sys_act)
        new_belief, conf = self._observe(user_act, sys_act)
        ex = self._log(sys_act, user_act, conf, new_belief)
        self.last_system_act = ex["system_act"]
        self._remember(sys_act)
        acts = turn_acts(sys_act)
        said_bye = any(a.type == "bye" for a in acts)
        terminated = user_act.type == "bye" or said_bye
        if terminated and not said_bye and self.final_system_turn and self.turns < self.max_turns:
            terminated = False  # the user hung up: the system still takes its closing turn
            self._closing = True
        truncated = (not terminated) and (not self._closing) and self.turns >= self.max_turns
        self._done = terminated or truncated
        self._mask = action_mask(new_belief, self.domain)
        info = {
            "action_mask": self._mask,
            "turns": self.turns,
            "master_act": ex["system_act"],
            "prompt": " ".join(self.nlg.generate(a) for a in acts),
            "summary_action": summary_action,
            "masked_action": masked,
            "user_act": ex["user_act"],
            "user_act_type": user_act.type,
            "asr_confidence": conf,
            "exchanges": self.exchanges,
            "success": self.user.success,
            "gave_up": self.user.gave_up,
            "closing_turn": False,
        }
        return new_belief, -1.0, terminated, truncated, info

    def _remember(self, sys_act: "DiaAct | tuple[DiaAct, ...]") -> None:
        """The turn just said: as a whole (a repeated turn is a reprompt) and its last act (the one
        ``step("repeat")`` repeats)."""
        self._last_turn = turn_acts(sys_act)
        self._last_sys = self._last_turn[-1]

    def _closing_step(self, summary_action: str | None, masked: bool, chosen: "DiaAct | tuple[DiaAct, ...] | None"):
        """PyDial's last turn after the user's bye: the policy acts on the final belief, the
        agent replaces whatever it chose by ``bye()``, and the dialogue ends."""
        belief = self.belief
        assert belief is not None  # the closing turn follows reset() and a user's bye
        if chosen is None and summary_action is not None:
            chosen = master_act(summary_action, belief, self.domain, self._last_sys)
        sys_act = DiaAct("bye")
        user_act = DiaAct("null")
        ex = self._log(sys_act, user_act, 1.0, belief)
        self.last_system_act = ex["system_act"]
        self._remember(sys_act)
        self._done = True
        self._closing = False
        info = {
            "action_mask": self._mask,
            "turns": self.turns,
            "master_act": ex["system_act"],
            "chosen_act": str(chosen) if chosen is None else turn_string(chosen),
            "prompt": self.nlg.generate(sys_act),
            "summary_action": summary_action,
            "masked_action": masked,
            "user_act": ex["user_act"],
            "user_act_type": user_act.type,
            "asr_confidence": 1.0,
            "exchanges": self.exchanges,
            "success": self.user.success,
            "gave_up": self.user.gave_up,
            "closing_turn": True,
        }
        return belief, -1.0, True, False, info

    # ------------------------------------------------------------------ internals
    def _observe(self, user_act: DiaAct, sys_act: "DiaAct | tuple[DiaAct, ...] | None"):
        assert self.np_random is not None  # seeded by reset()
        nbest = self.error_model.apply(user_act, self.domain, self.np_random)
        belief = self.tracker.update(nbest, sys_act)
        self.belief = belief
        return belief, float(nbest[0][1])

    def _log(self, sys_act: "DiaAct | tuple[DiaAct, ...]", user_act: DiaAct, conf: float, belief: dict) -> dict:
        acts = turn_acts(sys_act)
        ex = {
            "turn": len(self.exchanges) + 1,
            "system_act": turn_string(sys_act),
            "system_act_type": "|".join(a.type for a in acts),
            "user_act": str(user_act),
            "user_act_type": user_act.type,
            "reprompt": bool(self._last_turn) and acts == self._last_turn,
            "confirmation": any(a.type == "confirm" for a in acts),
            "asr_confidence": conf,
            "constraints_filled": len(accepted_constraints(belief, self.domain)),
            "user_goal_constraints": self._goal_constraints,
            "informed_venue": any(a.type == "inform" and a.get("name") not in (None, "none") for a in acts),
            "success_so_far": self.user.success,
        }
        self.exchanges.append(ex)
        return ex

    @property
    def goal(self):
        return self.user.goal

    def close(self) -> None:
        pass


def check_env(env: DialogueEnv, n_dialogues: int = 5, seed: int = 0) -> int:
    """Protocol check in the manner of Gymnasium's env checker: play ``n_dialogues`` seeded
    dialogues with a seeded random policy over the executable actions, twice, and require
    identical replays, a non-empty mask at every step, the documented exchange keys, and
    ``info["turns"]`` equal to the number of exchanges. Returns the number of turns played;
    raises :class:`EnvError` naming the first problem."""

    def play() -> list:
        trace: list[tuple] = []
        for j in range(n_dialogues):
            rng = np.random.default_rng([seed, j])
            belief, info = env.reset(seed=seed * 1_000_003 + j)
            done = False
            while not done:
                mask = np.asarray(info["action_mask"], dtype=bool)
                if mask.shape != (len(env.actions),) or not mask.any():
                    raise EnvError(f"check_env: dialogue {j}: bad action mask {mask!r}")
                a = env.actions[int(rng.choice(np.flatnonzero(mask)))]
                belief, reward, term, trunc, info = env.step(a)
                if reward != -1.0:
                    raise EnvError(f"check_env: dialogue {j}: turn reward {reward!r}, expected -1.0")
                trace.append((a, info["master_act"], info["user_act"], info["prompt"]))
                done = term or trunc
            ex = info["exchanges"]
            if any(tuple(e) != EXCHANGE_KEYS for e in ex):
                raise EnvError(f"check_env: dialogue {j}: exchange keys differ from {EXCHANGE_KEYS}")
            if info["turns"] != len(ex):
                raise EnvError(f"check_env: dialogue {j}: turns={info['turns']} but {len(ex)} exchanges")
            trace.append((bool(info["success"]), repr(belief)))
        return trace

    first, second = play(), play()
    if first != second:
        i = next(k for k, (x, y) in enumerate(zip(first, second)) if x != y)
        raise EnvError(f"check_env: not deterministic: replay differs at step {i}: {first[i]!r} vs {second[i]!r}")
    return sum(1 for t in first if len(t) == 4)
