"""The words of a dialogue in :class:`policies.simulation.env.DialogueEnv`: a history of turns with text.

:class:`DialogueText` follows an environment through one dialogue and keeps the turns so far,
each ``{"speaker": "system" | "user", "text": str, "act": str}`` (the act in canonical form):
the system's text is the environment's generator's (``info["prompt"]``, the act it played),
the user's comes from :class:`~policies.simulation.user_nlg.UserTemplateNLG` with the dialogue's
own random stream (:func:`~policies.simulation.user_nlg.user_nlg_rng` of the seed the dialogue
was reset with). It only reads the environment — beliefs, acts and results are the same with or
without it. At every system turn, :attr:`DialogueText.turns` is what an end-to-end policy reads:
the dialogue up to that moment (the belief in front of a modular policy is the same moment).

>>> from policies.simulation.env import DialogueEnv
>>> env = DialogueEnv()
>>> text = DialogueText(env)
>>> belief, info = env.reset(seed=1)
>>> text.reset(1, info)
>>> [t["speaker"] for t in text.turns]
['user']
"""

from __future__ import annotations

from typing import Any

from behavsim import canonical_act
from policies.simulation.user_nlg import UserTemplateNLG, user_nlg_rng

__all__ = ["DialogueText", "Turn", "TURN_KEYS", "SPEAKERS"]

#: The keys of a turn, in order, and the speakers a turn can have.
TURN_KEYS = ("speaker", "text", "act")
SPEAKERS = ("system", "user")

Turn = dict[str, Any]


class DialogueText:
    """The turns of the dialogue an environment is playing (see the module doc)."""

    def __init__(self, env: Any, user_nlg: UserTemplateNLG | None = None) -> None:
        self.env = env
        self.user_nlg = user_nlg or UserTemplateNLG(getattr(env.domain, "name", "restaurant"))
        self._turns: list[Turn] = []
        self._rng = user_nlg_rng(0)

    @property
    def turns(self) -> list[Turn]:
        """A copy of the turns so far."""
        return [dict(t) for t in self._turns]

    def __len__(self) -> int:
        return len(self._turns)

    def reset(self, dialogue_seed: int, info: dict) -> None:
        """Start the words of a dialogue just reset with ``seed=dialogue_seed`` (``info``: what
        ``reset`` returned): the opening system turn with ``hello=True``, then the user's first."""
        self._turns = []
        self._rng = user_nlg_rng(dialogue_seed)
        if info.get("master_act") is not None:
            self._system(info)
        self._user(info)

    def step(self, info: dict) -> None:
        """Add the exchange ``step``/``step_act`` just played: the system's turn, then the user's
        reply (none after the system's closing turn, where the user says nothing)."""
        self._system(info)
        if not info.get("closing_turn") and info.get("user_act_type") != "null":
            self._user(info)

    def _system(self, info: dict) -> None:
        self._turns.append(
            {"speaker": "system", "text": str(info.get("prompt") or ""), "act": canonical_act(info["master_act"])}
        )

    def _user(self, info: dict) -> None:
        act = getattr(getattr(self.env, "user", None), "last_user", None)
        if act is None or str(act) != info["user_act"]:  # not the simulator's own: its string form
            act = info["user_act"]
        text = self.user_nlg.generate(act, self._rng)
        self._turns.append({"speaker": "user", "text": text, "act": canonical_act(str(act))})
