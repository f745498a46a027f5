"""Template natural-language generator: master act -> lower-case prompt.

Every act type has several paraphrases; ``inform`` also varies the phrasing of each slot and
the order of its clauses. The choice is a deterministic function of the generator's
``nlg_seed`` and the act's canonical form (items sorted), computed with BLAKE2b — never
Python's salted ``hash()`` — so a generator always says an act the same way, and two
generators with different seeds may say it differently (the paper's Appendix A, row 3).
"""

from __future__ import annotations

import hashlib
import itertools

from behavsim import DialogueAct
from policies.simulation.actions import DiaAct

__all__ = ["TemplateNLG"]

_PRICE_ADV = {"cheap": "cheaply", "moderate": "moderately", "expensive": "expensively"}

_CLAUSES = {
    "area": ("is in the {v} area", "is located in the {v} part of town"),
    "food": ("serves {v} food", "offers {v} cuisine"),
    "pricerange": ("is {adv} priced", "is in the {v} price range"),
    "addr": ("is at {v}", "can be found at {v}"),
    "phone": ("has the phone number {v}", "can be reached on {v}"),
    "postcode": ("has the postcode {v}", "is in the postcode area {v}"),
    "signature": ("is known for its {v}", "has {v} as its signature dish"),
    "description": ("is described as follows: {v}", "is, in short, {v}"),
    "type": ("is a {v}", "is a {v} in town"),
}
_DONTCARE_CLAUSES = {
    "area": "can be in any area",
    "food": "can serve any food",
    "pricerange": "can have any price",
}
_NONE_CLAUSES = {
    "area": "in the {v} area",
    "food": "serving {v} food",
    "pricerange": "in the {v} price range",
}
_INFORM = (
    "{name} {clauses}",
    "how about {name}? it {clauses}",
    "i would recommend {name}, which {clauses}",
    "{name} is a nice place, it {clauses}",
    "you might like {name}; it {clauses}",
)
_INFORM_NAME_ONLY = ("{name} is a good choice", "how about {name}?", "i can recommend {name}")
_INFORM_NONE = (
    "i am sorry, there is no restaurant {clauses}",
    "sorry, i could not find a restaurant {clauses}",
    "unfortunately there is no place {clauses}",
    "i'm afraid no restaurant {clauses} could be found",
)
_INFORM_NONE_OTHER = (
    "sorry, apart from {names} there is no other restaurant {clauses}",
    "there is no restaurant other than {names} {clauses}",
    "i'm afraid {names} are the only places {clauses}",
)
_REQUEST = {
    "area": ("what part of town do you have in mind?", "which area would you like?", "where would you like to eat?"),
    "food": (
        "what kind of food would you like?",
        "what type of cuisine are you looking for?",
        "which food type do you prefer?",
    ),
    "pricerange": (
        "what price range would you like?",
        "would you like something cheap, moderate or expensive?",
        "how much would you like to spend?",
    ),
}
_REQUEST_ANY = (
    "what {slot} would you like?",
    "which {slot} do you have in mind?",
    "could you tell me the {slot} you want?",
)
_CONFIRM = {
    "area": (
        "did you say you want a restaurant in the {v} area?",
        "so you would like the {v} of town, is that right?",
        "you are looking for a place in the {v}, right?",
    ),
    "food": ("you want {v} food, is that right?", "did you say {v} food?", "so you are looking for {v} cuisine?"),
    "pricerange": (
        "you are looking for something {v}, right?",
        "did you say the {v} price range?",
        "so you want a {v} place?",
    ),
}
_CONFIRM_ANY = ("you want {slot} {v}, right?", "did you say {slot} {v}?", "so {slot} {v}, is that right?")
_CONFIRM_DONTCARE = (
    "you don't mind about the {slot}, right?",
    "so any {slot} is fine?",
    "did you say the {slot} does not matter?",
)
_SELECT = ("would you like {a} or {b}?", "do you prefer {a} or {b}?", "{a} or {b}, which one would you like?")
_FIXED = {
    "bye": ("goodbye.", "thank you, goodbye.", "have a nice day, goodbye.", "bye, enjoy your meal."),
    "reqmore": (
        "can i help you with anything else?",
        "is there anything else?",
        "anything else i can do for you?",
        "would you like to know anything else?",
    ),
    "hello": (
        "hello, welcome to the restaurant system. how may i help you?",
        "hi! how can i help you?",
        "welcome! what kind of restaurant are you looking for?",
    ),
    "repeat": ("could you repeat that, please?", "sorry, say that again?", "pardon?"),
    "null": ("sorry, i did not get that.", "i am sorry, could you rephrase that?", "sorry, can you say that again?"),
}


class TemplateNLG:
    """Template generator; ``generate(act)`` accepts a :class:`DiaAct`, a
    :class:`behavsim.DialogueAct` or an act string (parsed by :func:`behavsim.parse_act`)."""

    name = "template"

    def __init__(self, nlg_seed: int = 0) -> None:
        self.nlg_seed = int(nlg_seed)
        self._cache: dict[str, str] = {}

    @property
    def signature(self) -> str:
        return f"nlg:template|seed:{self.nlg_seed}|version:1"

    def _pick(self, key: str, part: str, n: int) -> int:
        h = hashlib.blake2b(f"{self.nlg_seed}\x1f{key}\x1f{part}".encode(), digest_size=8).digest()
        return int.from_bytes(h, "big") % n

    def generate(self, act: DiaAct | DialogueAct | str) -> str:
        text = act if isinstance(act, str) else str(act)
        out = self._cache.get(text)
        if out is None:
            out = self._generate(DiaAct.from_act(act))
            if len(self._cache) < 50_000:
                self._cache[text] = out
        return out

    __call__ = generate

    def _generate(self, a: DiaAct) -> str:
        key = f"{a.type}(" + ",".join(f"{s}={v}" for s, v in sorted(a.items, key=lambda x: (x[0], x[1] or ""))) + ")"
        t = a.type
        opts: tuple[str, ...] | None
        if t == "inform":
            return self._inform(a, key)
        if t == "request":
            slot = a.items[0][0] if a.items else "thing"
            opts = _REQUEST.get(slot) or tuple(o.format(slot=slot) for o in _REQUEST_ANY)
            return opts[self._pick(key, "t", len(opts))]
        if t == "confirm" and a.items:
            slot, v = a.items[0]
            if v == "dontcare":
                opts = tuple(o.format(slot=slot) for o in _CONFIRM_DONTCARE)
            else:
                opts = (
                    tuple(o.format(v=v) for o in _CONFIRM[slot])
                    if slot in _CONFIRM
                    else tuple(o.format(slot=slot, v=v) for o in _CONFIRM_ANY)
                )
            return opts[self._pick(key, "t", len(opts))]
        if t == "select" and len(a.items) >= 2:
            (slot, v1), (_, v2) = a.items[0], a.items[1]
            if slot == "food":
                v1, v2 = f"{v1} food", f"{v2} food"
            elif slot == "area":
                v1, v2 = f"the {v1}", f"the {v2}"
            elif slot == "pricerange":
                v1, v2 = f"something {v1}", f"something {v2}"
            opts = _SELECT
            return opts[self._pick(key, "t", len(opts))].format(a=v1, b=v2)
        opts = _FIXED.get(t)
        if opts is None:
            body = ", ".join(f"{s} {v}" if v is not None else s for s, v in a.items)
            return f"{t.replace('_', ' ')} {body}".strip()
        return opts[self._pick(key, "t", len(opts))]

    def _clause(self, key: str, slot: str, v: str) -> str:
        if v == "dontcare" and slot in _DONTCARE_CLAUSES:
            return _DONTCARE_CLAUSES[slot]
        opts = _CLAUSES.get(slot)
        if opts is None:
            return f"has {slot} {v}"
        return opts[self._pick(key, "c:" + slot, len(opts))].format(v=v, adv=_PRICE_ADV.get(v, v + "ly"))

    def _order(self, key: str, part: str, items: list) -> list:
        if len(items) <= 1:
            return items
        if len(items) <= 5:
            perms = list(itertools.permutations(range(len(items))))
            return [items[i] for i in perms[self._pick(key, part, len(perms))]]
        return items

    def _inform(self, a: DiaAct, key: str) -> str:
        opts: tuple[str, ...]
        name = a.get("name")
        others = sorted((s, v) for s, v in a.items if s not in ("name", "name!") and v is not None)
        if name == "none":
            excluded = sorted(v for s, v in a.items if s == "name!")
            parts = [
                (_NONE_CLAUSES[s].format(v=v) if s in _NONE_CLAUSES else f"with {s} {v}")
                for s, v in others
                if v != "dontcare"
            ]
            parts = self._order(key, "o", parts)
            clauses = " ".join(parts) if parts else "like that"
            if excluded:
                opts = _INFORM_NONE_OTHER
                names = " and ".join(excluded)
                return opts[self._pick(key, "t", len(opts))].format(names=names, clauses=clauses)
            opts = _INFORM_NONE
            return opts[self._pick(key, "t", len(opts))].format(clauses=clauses)
        if name is None:
            parts = self._order(key, "o", [self._clause(key, s, v) for s, v in others])
            return "the place you want " + " and ".join(parts)
        if not others:
            opts = _INFORM_NAME_ONLY
            return opts[self._pick(key, "t", len(opts))].format(name=name)
        parts = self._order(key, "o", [self._clause(key, s, v) for s, v in others])
        opts = _INFORM
        return opts[self._pick(key, "t", len(opts))].format(name=name, clauses=" and ".join(parts))
