"""User-side template generator: a simulated user's act -> what the user says, in words.

The system's generator (:class:`policies.simulation.nlg.TemplateNLG`) says an act the same way every time;
real users do not, so this generator draws its paraphrases from a random stream — one stream per
dialogue, of its own (:func:`user_nlg_rng`), never the environment's. Beliefs, acts and every
result computed from them are therefore the same with or without the text.

Covered: every act Environment 1's simulated user (:class:`policies.simulation.user.SimulatedUser`) says on
CamRestaurants (and behavsim's example domain) — ``inform`` (with ``type``, ``this=dontcare``,
``dontcare`` values, several items at once), ``request`` (with or without the venue's name),
``confirm``, ``affirm``, ``negate``, ``deny``, ``reqalts``, ``thankyou``, ``ack``, ``hello``,
``bye``, ``repeat``, ``silence``. Every value the act carries appears verbatim in the text, so the
words determine the act's content (the paraphrases vary the wording around it); an act type the
templates do not know is said as ``type slot value ...``.

>>> import numpy as np
>>> nlg = UserTemplateNLG()
>>> nlg.generate('inform(area="centre",food="thai")', np.random.default_rng(0))
'i want something in the centre and serving thai food'
"""

from __future__ import annotations

import numpy as np

from behavsim import DialogueAct
from policies.simulation.actions import DiaAct

__all__ = ["UserTemplateNLG", "user_nlg_rng", "USER_NLG_STREAM"]

#: The word that separates the user generator's random stream from every other stream derived
#: from a dialogue's seed (``SeedSequence([dialogue_seed, USER_NLG_STREAM])``).
USER_NLG_STREAM = 0x75736572  # "user"

_SLOT_NOUN = {
    "addr": "address",
    "area": "area",
    "food": "type of food",
    "name": "name",
    "phone": "phone number",
    "postcode": "postcode",
    "pricerange": "price range",
    "signature": "signature dish",
    "description": "description",
}
# phrases that follow a noun ("a restaurant ...", "something ...")
_MOD = {
    "area": ("in the {v}", "in the {v} part of town", "in the {v} area"),
    "food": ("serving {v} food", "that serves {v} food", "with {v} food"),
    "pricerange": ("in the {v} price range", "that is {v}", "with {v} prices"),
    "name": ("called {v}", "named {v}"),
}
_MOD_DONTCARE = {
    "area": ("in any area", "anywhere in town", "in any part of town"),
    "food": ("serving any kind of food", "with any food", "that serves any type of food"),
    "pricerange": ("in any price range", "at any price", "with any prices"),
}
_THIS_DONTCARE = ("i don't care", "it doesn't matter", "any is fine", "i do not mind")
_INFORM_TYPE = (
    "i'm looking for a {type} {mods}",
    "i want a {type} {mods}",
    "can you find me a {type} {mods}",
    "i need a {type} {mods}",
)
_INFORM_TYPE_ONLY = ("i'm looking for a {type}", "i want to find a {type}", "i need a {type}")
_INFORM = (
    "i want something {mods}",
    "i'd like a place {mods}",
    "i'm looking for something {mods}",
    "something {mods}, please",
)
_REQUEST = (
    "what is the {slots}?",
    "could you give me the {slots}?",
    "can i have the {slots}, please?",
    "may i know the {slots}?",
)
_REQUEST_NAME = (
    "what is the {slots} of {name}?",
    "could you tell me the {slots} of {name}?",
    "{name}, what is its {slots}?",
)
_CONFIRM = ("is it {mod}?", "is that {mod}?", "is it really {mod}?")
_AFFIRM = ("yes", "yes, that's right", "right", "correct")
_AFFIRM_MORE = ("yes, and {rest}", "yes. {rest}", "right, and {rest}")
_NEGATE = ("no", "no, thank you", "no thanks", "nothing else")
_NEGATE_MORE = ("no, {rest}", "no. {rest}", "that's wrong, {rest}")
_DENY = ("no, not {wrong}, {rest}", "not {wrong}. {rest}", "i didn't say {wrong}, {rest}")
_REQALTS = (
    "is there anything else?",
    "do you have something else?",
    "what else is there?",
    "can you suggest another one?",
)
_REQALTS_MORE = ("how about something {mods}?", "is there anything {mods}?", "what about a place {mods}?")
_FIXED = {
    "thankyou": ("thank you", "thanks", "thank you very much", "great, thanks"),
    "ack": ("okay", "ok", "alright", "fine"),
    "hello": ("hello", "hi", "hello there"),
    "bye": ("goodbye", "bye", "thank you, goodbye", "that's all, bye"),
    "repeat": ("could you repeat that?", "sorry, can you say that again?", "pardon?"),
    "silence": ("...",),
}


def user_nlg_rng(dialogue_seed: int) -> np.random.Generator:
    """The user generator's random stream for the dialogue reset with ``dialogue_seed``:
    ``default_rng(SeedSequence([dialogue_seed, USER_NLG_STREAM]))`` — separate from the
    environment's stream, so drawing paraphrases never changes a belief or an act."""
    return np.random.default_rng(np.random.SeedSequence([int(dialogue_seed), USER_NLG_STREAM]))


class UserTemplateNLG:
    """Paraphrasing template generator for simulated-user acts (see the module doc).

    ``generate(act, rng)`` takes a :class:`~policies.simulation.actions.DiaAct` (items in the order the user
    said them), a :class:`behavsim.DialogueAct` or an act string, and the dialogue's generator
    (:func:`user_nlg_rng`); the same act and generator state give the same words.
    """

    name = "user-template"
    version = 1

    def __init__(self, domain_type: str = "restaurant") -> None:
        self.domain_type = str(domain_type)

    @property
    def signature(self) -> str:
        return f"user-nlg:template|type:{self.domain_type}|version:{self.version}"

    def generate(self, act: DiaAct | DialogueAct | str, rng: np.random.Generator) -> str:
        a = DiaAct.from_act(act)
        return self._say(a, rng)

    __call__ = generate

    # ------------------------------------------------------------------ pieces
    @staticmethod
    def _pick(options: tuple[str, ...], rng: np.random.Generator) -> str:
        return options[int(rng.integers(len(options)))]

    def _mod(self, slot: str, value: str | None, rng: np.random.Generator) -> str:
        if value == "dontcare":
            any_opts = _MOD_DONTCARE.get(slot)
            return self._pick(any_opts, rng) if any_opts else f"with any {_SLOT_NOUN.get(slot, slot)}"
        if value is None:
            return f"with a {_SLOT_NOUN.get(slot, slot)}"
        opts = _MOD.get(slot)
        return self._pick(opts, rng).format(v=value) if opts else f"with {slot} {value}"

    def _mods(self, items: list[tuple[str, str | None]], rng: np.random.Generator) -> str:
        return " and ".join(self._mod(s, v, rng) for s, v in items)

    def _statement(self, items: list[tuple[str, str | None]], rng: np.random.Generator) -> str:
        """What an ``inform`` with these items says (also the rest of affirm/negate/deny/hello)."""
        this = [v for s, v in items if s == "this"]
        types = [v for s, v in items if s == "type"]
        rest = [(s, v) for s, v in items if s not in ("this", "type")]
        parts = []
        if this:
            parts.append(self._pick(_THIS_DONTCARE, rng) if this[0] == "dontcare" else f"{this[0]}")
        if types or rest:
            kind = types[0] if types and types[0] else self.domain_type
            if rest:
                opts = _INFORM_TYPE if types else _INFORM
                parts.append(self._pick(opts, rng).format(type=kind, mods=self._mods(rest, rng)))
            else:
                parts.append(self._pick(_INFORM_TYPE_ONLY, rng).format(type=kind))
        return ", ".join(parts)

    def _say(self, a: DiaAct, rng: np.random.Generator) -> str:
        t, items = a.type, list(a.items)
        if t == "inform":
            return self._statement(items, rng) if items else self._pick(_AFFIRM, rng)
        if t == "request":
            name = next((v for s, v in items if s == "name" and v), None)
            slots = [s for s, v in items if not (s == "name" and v)]
            nouns = " and ".join(_SLOT_NOUN.get(s, s) for s in slots) or "details"
            if name:
                return self._pick(_REQUEST_NAME, rng).format(slots=nouns, name=name)
            return self._pick(_REQUEST, rng).format(slots=nouns)
        if t == "confirm" and items:
            s, v = items[0]
            mod = v if s == "name" and v else self._mod(s, v, rng)
            return self._pick(_CONFIRM, rng).format(mod=mod)
        if t == "affirm":
            if not items:
                return self._pick(_AFFIRM, rng)
            return self._pick(_AFFIRM_MORE, rng).format(rest=self._statement(items, rng))
        if t == "negate":
            if not items:
                return self._pick(_NEGATE, rng)
            return self._pick(_NEGATE_MORE, rng).format(rest=self._statement(items, rng))
        if t == "deny" and items:
            (ws, wv), rest = items[0], items[1:]
            wrong = self._mod(ws, wv, rng)
            said = self._statement(rest, rng) if rest else self._pick(_NEGATE, rng)
            return self._pick(_DENY, rng).format(wrong=wrong, rest=said)
        if t == "reqalts":
            if not items:
                return self._pick(_REQALTS, rng)
            return self._pick(_REQALTS_MORE, rng).format(mods=self._mods(items, rng))
        if t == "hello" and items:
            return f"{self._pick(_FIXED['hello'], rng)}, {self._statement(items, rng)}"
        opts = _FIXED.get(t)
        if opts is not None and not items:
            return self._pick(opts, rng)
        body = " ".join(f"{s} {v}" if v is not None else s for s, v in items)
        return f"{t} {body}".strip()
