"""The text the end-to-end model reads and writes, and how its words become an act and a prompt.

One training example (one context: a dialogue history and the teacher's answer to it) is the
sequence::

    <|endoftext|><|user|> i need a restaurant in the [area_1]<|system|> what kind of food would
    you like?<|user|> [food_1] food, please<|belief|> area = [area_1] ; food = [food_1]<|db|>
    matches 2 ; differ no ; [name_1] ; [name_2]<|act|> inform name = [v] ; area = [v] ;
    food = [v] ; pricerange = [v]<|response|> how about [name]? it is in the [area] area ...
    <|endoftext|>

* the **history** — every turn's speaker and text, nothing else (no acts, no beliefs),
  **delexicalised with the ontology** (:class:`Lexicon`): each value of an informable slot with
  many values (more than :data:`MAX_WORD_VALUES`: food and name on CamRestaurants) that occurs in
  the text (``chinese``, ``hakka``; longest first, whole words) becomes a placeholder of its slot
  numbered by first occurrence in the dialogue (``[food_1]``, ``[name_2]``), the same value
  always the same placeholder — as task-oriented end-to-end systems delexicalise, so that the
  model learns to refer to "the food the user named" instead of memorising ninety values; the
  values of small slots (area, pricerange) stay words, which the model learns as it learns any
  word. Every mention is replaced, whoever said it; deciding which mention is the user's
  constraint is the model's job;
* the **belief span** — the search constraints the model decodes from the history (slot = value,
  ``dontcare`` included, in the domain's order); at training time the label is what the
  environment's tracker held at that moment (the teacher's belief), at answer time the model
  writes it itself;
* the **database result** — *not* generated: behavsim queries the domain's database with the
  decoded constraints and writes the number of matching venues (``0``–``5``, ``many``), whether
  the matches still differ on a slot the constraints leave open (``differ yes/no``), and the
  names of five matches — those the dialogue's words mentioned first, the most recently
  mentioned first, then the others in database order — as placeholders (a venue the dialogue
  mentioned keeps its number, the others get the next ones);
* the **act** — the system act, delexicalised, its ``name`` items first: a slot whose value is
  the named venue's value in the database is written ``[v]`` (filled from the database
  afterwards), and so is the name of the venue the database result shows first, and in an act
  that says no venue matches (``inform(name=none,...)``) a value of the constraints the database
  was queried with; every other value (another venue's name, a confirmed value) is written as its
  placeholder (or as it is, if the dialogue never mentioned it);
* the **response** — the prompt with the act's values replaced by ``[slot]`` placeholders
  (``[pricerange_adv]``: the price adverb), filled from the final act afterwards.

The model reads the history and the database result; every decision — what the user wants,
which act, which venue, which slots, which words — is its own. Nothing here tracks beliefs or
applies a policy's rules: the functions below only format, query the database and fill values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from behavsim import DialogueAct, canonical_act, format_act, format_acts, parse_acts

__all__ = [
    "SPECIAL",
    "PLACEHOLDER",
    "MAX_MATCHES",
    "MAX_INDEX",
    "MAX_WORD_VALUES",
    "Lexicon",
    "history_text",
    "chat_text",
    "belief_text",
    "parse_belief",
    "db_query",
    "db_text",
    "delex_act",
    "parse_act_text",
    "lex_act",
    "delex_prompt",
    "delex_words",
    "lex_prompt",
    "fill_from_venue",
    "ACT_JOIN",
    "E2EFormatError",
]

#: The special tokens, by role.
SPECIAL = {
    "pad": "<|pad|>",
    "unk": "<|unk|>",
    "eos": "<|endoftext|>",
    "user": "<|user|>",
    "system": "<|system|>",
    "belief": "<|belief|>",
    "db": "<|db|>",
    "act": "<|act|>",
    "response": "<|response|>",
    "answer": "<|answer|>",
}
#: Between the acts of an act set as the model writes it (``inform name = [v] | request area``).
ACT_JOIN = " |"
#: In an act: "the named venue's value of this slot", filled from the database.
PLACEHOLDER = "[v]"
#: How many matching venues the database result names.
MAX_MATCHES = 5
#: Placeholders per slot in one dialogue (``[food_1]`` ... ``[food_12]``); later values stay words.
MAX_INDEX = 12
#: Slots with at most this many values are not delexicalised (their values stay words).
MAX_WORD_VALUES = 10
_PRICE_ADVERB = {"cheap": "cheaply", "moderate": "moderately", "expensive": "expensively"}
_WS = re.compile(r"\s+")


class E2EFormatError(ValueError):
    """The model wrote something that is not an act (the answer to that context fails)."""


def clean(text: str) -> str:
    """Lower-case, whitespace collapsed, stripped: the form every text takes in a sequence."""
    return _WS.sub(" ", str(text).lower()).strip()


_PATTERNS: dict[int, tuple[re.Pattern, dict[str, str]]] = {}


class Lexicon:
    """The placeholders of one dialogue (see the module doc): ``text(t)`` delexicalises a text,
    numbering new values as they come; ``ref(value)`` is a value's placeholder (or the value, if
    the dialogue never mentioned it); ``value(word)`` reads a placeholder back (a plain word is
    itself)."""

    def __init__(self, domain: Any) -> None:
        key = id(domain)
        if key not in _PATTERNS:
            slot_of = {v: s for s, values in domain.informable.items() if len(values) > MAX_WORD_VALUES for v in values}
            ordered = sorted(slot_of, key=lambda v: (-len(v), v))
            pattern = re.compile(r"(?<![a-z0-9])(?:" + "|".join(re.escape(v) for v in ordered) + r")(?![a-z0-9])")
            _PATTERNS[key] = (pattern, slot_of)
        self._pattern, self._slot_of = _PATTERNS[key]
        self._ref: dict[str, str] = {}
        self._value: dict[str, str] = {}
        self._count: dict[str, int] = {}
        self._said: dict[str, int] = {}  # value -> when the dialogue's words last mentioned it
        self._clock = 0  # mentions so far

    def add(self, value: str) -> str:
        """The placeholder of an ontology value, numbering it if it is new."""
        ref = self._ref.get(value)
        if ref is None:
            slot = self._slot_of.get(value)
            n = self._count.get(slot or "", 0) + 1
            if slot is None or n > MAX_INDEX:
                return value
            self._count[slot] = n
            ref = f"[{slot}_{n}]"
            self._ref[value], self._value[ref] = ref, value
        return ref

    def text(self, text: str) -> str:
        return self._pattern.sub(lambda m: self._mention(m.group(0)), clean(text))

    def _mention(self, value: str) -> str:
        self._clock += 1
        self._said[value] = self._clock
        return self.add(value)

    def recent(self, values: Iterable[str]) -> list[str]:
        """``values`` the dialogue's words have mentioned, the most recently mentioned first,
        then the others in their order."""
        values = list(values)
        said = sorted((v for v in values if v in self._said), key=lambda v: -self._said[v])
        return said + [v for v in values if v not in said]

    def copy(self) -> "Lexicon":
        """The placeholders so far, numbered on independently from here."""
        new = Lexicon.__new__(Lexicon)
        new._pattern, new._slot_of = self._pattern, self._slot_of
        new._ref, new._value, new._count = dict(self._ref), dict(self._value), dict(self._count)
        new._said, new._clock = dict(self._said), self._clock
        return new

    def placeholders(self) -> list[str]:
        """The placeholders numbered so far."""
        return list(self._value)

    def ref(self, value: str) -> str:
        return self._ref.get(value, value)

    def value(self, word: str) -> str:
        return self._value.get(word, word)


def history_text(history: Iterable[Mapping[str, Any]], lexicon: Lexicon) -> str:
    """The history part of a sequence: each turn's speaker token and delexicalised text (acts and
    beliefs are not read)."""
    return "".join(f"{SPECIAL[t['speaker']]} {lexicon.text(t['text'])}".rstrip() for t in history)


def chat_text(history: Iterable[Mapping[str, Any]]) -> str:
    """A history as the tokenizer's chat template renders it (the chat mode, see
    :mod:`policies.e2e._tokenizer`): each turn's speaker token and its words as said —
    not delexicalised, values as the ontology spells them."""
    return "".join(f"{SPECIAL[t['speaker']]} {clean(t['text'])}" for t in history)


# ------------------------------------------------------------------------- belief and database
def belief_text(constraints: Sequence[tuple[str, str]], lexicon: Lexicon) -> str:
    """`` area = [area_1] ; food = dontcare`` ("" without constraints)."""
    return " " + " ; ".join(f"{s} = {lexicon.ref(v)}" for s, v in constraints) if constraints else ""


def parse_belief(text: str, domain: Any, lexicon: Lexicon) -> list[tuple[str, str]]:
    """The constraints of a decoded belief span that the domain knows (a system-requestable slot,
    one of its values or ``dontcare``), in the domain's order; anything else is ignored."""
    found: dict[str, str] = {}
    for part in text.split(";"):
        slot, eq, value = part.partition("=")
        slot, value = slot.strip(), lexicon.value(value.strip())
        if not eq or slot not in domain.system_requestable or slot in found:
            continue
        if value == "dontcare" or value in domain.informable.get(slot, ()):
            found[slot] = value
    return [(s, found[s]) for s in domain.system_requestable if s in found]


@dataclass(frozen=True)
class DBResult:
    """What the database says about a set of constraints."""

    count: int
    differ: bool
    names: tuple[str, ...]


def db_query(domain: Any, constraints: Sequence[tuple[str, str]]) -> DBResult:
    """Query the domain's database: the venues matching the constraints (``dontcare`` matches
    anything), whether they differ on a slot the constraints leave open, and their names."""
    real = {s: v for s, v in constraints if v != "dontcare"}
    idx = domain.matches(real)
    ordered = tuple(sorted(constraints, key=lambda sv: sv[0]))
    return DBResult(len(idx), bool(domain.can_discriminate(ordered)), tuple(domain.venues[i]["name"] for i in idx))


def db_text(result: DBResult, lexicon: Lexicon) -> str:
    count = str(result.count) if result.count <= MAX_MATCHES else "many"
    names = "".join(f" ; {lexicon.add(n)}" for n in lexicon.recent(result.names)[:MAX_MATCHES])
    return f" matches {count} ; differ {'yes' if result.differ else 'no'}{names}"


# ------------------------------------------------------------------------- acts
def _venue_of(items: Sequence[tuple[str, str]], domain: Any) -> dict[str, str] | None:
    names = [v for s, v in items if s == "name" and domain.venue_index(v) is not None]
    return domain.venue(names[0]) if len(names) == 1 else None


def _no_venue(items: Sequence[tuple[str, str]], venue: dict[str, str] | None) -> bool:
    """An act that says no venue matches (``name = none``): its ``[v]`` are the query's own values."""
    return venue is None and ("name", "none") in items


def delex_act(
    act: str,
    domain: Any,
    lexicon: Lexicon,
    shown: Sequence[str] = (),
    constraints: Sequence[tuple[str, str]] = (),
) -> str:
    """The act as the model writes it: `` inform name = [name_1] ; area = [v]`` (see the module doc).
    The venue comes first (the model picks it, then says what the act says of it); the name of the
    first venue of the database result (``shown``) is written ``[v]``: the venue the database puts
    first, which :func:`lex_act` fills back. In an act that says no venue matches (``name = none``),
    a value of the constraints the database was queried with (``constraints``) is written ``[v]``."""
    acts = parse_acts(act)
    if len(acts) > 1:  # an act set (people's turns): each act as one, joined
        return ACT_JOIN.join(delex_act(format_act(x), domain, lexicon, shown, constraints) for x in acts)
    a = acts[0]
    venue = _venue_of(a.items, domain)
    top = shown[0] if shown and venue is not None else None
    held = dict(constraints) if _no_venue(a.items, venue) else {}
    parts = []
    for s, v in sorted(a.items, key=lambda sv: sv[0] != "name"):  # the venue first, then what it says of it
        if s == "name" and v == top:
            v = PLACEHOLDER
        elif venue is not None and s != "name" and venue.get(s) == v:
            v = PLACEHOLDER  # an empty database value too: the model cannot know it is empty
        elif s != "name" and held.get(s) == v:
            v = PLACEHOLDER
        elif v != "":
            v = lexicon.ref(v)
        parts.append(f"{s} = {v}" if v != "" else s)
    return f" {a.act_type}" + (" " + " ; ".join(parts) if parts else "")


def parse_act_text(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``(type, [(slot, value), ...])`` of an act the model wrote; :class:`E2EFormatError` if
    it is not one."""
    text = text.strip()
    head, _, rest = text.partition(" ")
    if not re.fullmatch(r"[a-z_]+", head or ""):
        raise E2EFormatError(f"the model wrote no act type: {text!r:.80}")
    items = []
    for part in rest.split(";") if rest.strip() else []:
        slot, eq, value = part.partition("=")
        slot, value = slot.strip(), value.strip()
        if not re.fullmatch(r"[a-z_]+!?", slot):
            raise E2EFormatError(f"the model wrote an item without a slot: {part.strip()!r:.80} in {text!r:.80}")
        items.append((slot, value if eq else ""))
    return head, items


def lex_act(
    text: str,
    domain: Any,
    lexicon: Lexicon,
    shown: Sequence[str] = (),
    constraints: Sequence[tuple[str, str]] = (),
    default_venue: str | None = None,
    lenient: bool = False,
) -> str:
    """The canonical act of what the model wrote: placeholders read back, ``[v]`` filled with the
    named venue's values. An act that names no venue but writes ``name = [v]`` is given the first
    venue of the database result the model read (``shown``, in the order shown), as task-oriented
    end-to-end systems lexicalise a name from the database; in an act that says no venue matches
    (``name = none``), ``[v]`` is the value of that slot in the constraints the database was
    queried with (``constraints``: the model's own belief span); an item written twice counts once.
    Acts joined by ``|`` (:data:`ACT_JOIN`) are an act set, each act read as one; an act of the
    set that names no venue fills its ``[v]`` from the venue another act of the set names.
    ``lenient`` (a model trained on people's noisier acts): an item whose ``[v]`` nothing fills
    is left out of the act instead of failing the answer."""
    if "|" in text:
        parts = text.split("|")
        named = [lexicon.value(v) for part in parts for s, v in parse_act_text(part)[1] if s == "name"]
        venues = {v for v in named if domain.venue_index(v) is not None}
        default = venues.pop() if len(venues) == 1 else None
        acts = [lex_act(part, domain, lexicon, shown, constraints, default, lenient) for part in parts]
        return format_acts([a for act in acts for a in parse_acts(act)])
    t, items = parse_act_text(text)
    items = [(s, v if v == PLACEHOLDER else lexicon.value(v)) for s, v in items]
    if shown and not any(s == "name" and v != PLACEHOLDER for s, v in items):
        items = [(s, shown[0] if (s, v) == ("name", PLACEHOLDER) else v) for s, v in items]
    items = list(dict.fromkeys(items))
    unknown = [v for _, v in items if re.fullmatch(r"\[[a-z]+_\d+\]", v)]
    if unknown:
        raise E2EFormatError(f"the act {text.strip()!r:.80} refers to {unknown[0]}, which the dialogue does not hold")
    venue = _venue_of([(s, v) for s, v in items if v != PLACEHOLDER], domain)
    if venue is None and default_venue is not None and not any(s == "name" for s, _ in items):
        venue = domain.venue(default_venue)
    held = dict(constraints) if _no_venue(items, venue) else {}
    out = []
    for s, v in items:
        if v == PLACEHOLDER:
            if venue is not None:
                v = venue.get(s, "none")
            elif s in held:
                v = held[s]
            elif lenient:
                continue
            elif _no_venue(items, venue):
                raise E2EFormatError(f"the act {text.strip()!r:.80} fills {s} from its constraints, which hold none")
            else:
                raise E2EFormatError(f"the act {text.strip()!r:.80} fills {s} from a venue but names none")
        out.append((s, v))
    try:
        return format_act(DialogueAct.create(t, out))
    except ValueError as exc:
        raise E2EFormatError(f"the model wrote an invalid act {text.strip()!r:.80}: {exc}") from None


# ------------------------------------------------------------------------- prompts
def _value_map(act: str) -> dict[str, str]:
    """Slot -> value for the act's slots that occur once with a value worth a placeholder (the
    acts of an act set together)."""
    items = [item for a in parse_acts(act) for item in a.items]
    counts: dict[str, int] = {}
    for s, _ in items:
        counts[s] = counts.get(s, 0) + 1
    return {s: v for s, v in items if counts[s] == 1 and v not in ("", "none", "dontcare")}


def _word(value: str) -> re.Pattern:
    return re.compile(r"(?<![a-z0-9])" + re.escape(value) + r"(?![a-z0-9])")


def delex_prompt(prompt: str, act: str) -> str:
    """The prompt with the act's values as ``[slot]`` placeholders (longest values first)."""
    text = clean(prompt)
    values = _value_map(act)
    for s, v in sorted(values.items(), key=lambda sv: (-len(sv[1]), sv[0])):
        text = _word(clean(v)).sub(f"[{s}]", text)
    price = values.get("pricerange")
    if price is not None:
        text = _word(_PRICE_ADVERB.get(price, price + "ly")).sub("[pricerange_adv]", text)
    return " " + text if text else ""


#: The venue fields whose values :func:`delex_words` replaces besides the informable slots'.
VENUE_FIELDS = ("name", "addr", "phone", "postcode")
_ONTOLOGY: dict[int, tuple[re.Pattern, dict[str, str]]] = {}


def _ontology(domain: Any) -> tuple[re.Pattern, dict[str, str]]:
    """A pattern of every value of the domain's ontology (informable values, the venues' names,
    addresses, phones and postcodes, the price adverbs), longest first, and each value's placeholder."""
    key = id(domain)
    if key not in _ONTOLOGY:
        ref: dict[str, str] = {}
        for v in domain.venues:
            for f in VENUE_FIELDS:
                value = clean(v.get(f) or "")
                if value and value not in ("none", "dontcare"):
                    ref.setdefault(value, f"[{f}]")
                    for variant in _postcode_variants(value) if f == "postcode" else ():
                        ref.setdefault(variant, f"[{f}]")
        for slot, values in domain.informable.items():
            for value in values:
                value = clean(value)
                if value and value not in ("none", "dontcare"):
                    ref.setdefault(value, f"[{slot}]")
        for price in domain.informable.get("pricerange", ()):
            ref.setdefault(_PRICE_ADVERB.get(price, price + "ly"), "[pricerange_adv]")
        ordered = sorted(ref, key=lambda v: (-len(v), v))
        pattern = re.compile(r"(?<![a-z0-9\[])(?:" + "|".join(re.escape(v) for v in ordered) + r")(?![a-z0-9\]])")
        _ONTOLOGY[key] = (pattern, ref)
    return _ONTOLOGY[key]


def _postcode_variants(value: str) -> list[str]:
    """How people write a postcode the database spells PyDial's way: ``c.b 4, 1 u.y`` is also
    ``cb4 1uy`` and ``cb41uy``."""
    parts = re.sub(r"[.,]", "", value).split()
    if len(parts) != 4:
        return []
    return [f"{parts[0]}{parts[1]} {parts[2]}{parts[3]}", "".join(parts)]


def delex_words(text: str, act: str | None, domain: Any) -> str:
    """A person's words as a response target: the act's values as ``[slot]`` placeholders
    (:func:`delex_prompt`; none without an act), then every value of the domain's ontology left in
    them — a venue's name, address, phone or postcode, a food, area or price range (and its
    adverb) — as its slot's placeholder, longest values first, whole words."""
    words = delex_prompt(text, act) if act else (" " + clean(text) if clean(text) else "")
    pattern, ref = _ontology(domain)
    return pattern.sub(lambda m: ref[m.group(0)], words)


def lex_prompt(text: str, act: str) -> str:
    """The model's response with its placeholders filled from the final act."""
    values = _value_map(act)

    def fill(m: re.Match) -> str:
        key = m.group(1)
        if key == "pricerange_adv" and "pricerange" in values:
            p = values["pricerange"]
            return _PRICE_ADVERB.get(p, p + "ly")
        return values.get(key, m.group(0))

    return re.sub(r"\[([a-z_!]+)\]", fill, text).strip()


def fill_from_venue(text: str, act: str, domain: Any) -> str:
    """A response's placeholders its act left unfilled (``[phone]`` after an act that names a venue
    but not its phone), filled from the database entry of the one venue the act names (the text as
    it is when the act names none, or several)."""
    names = {v for a in parse_acts(act) for s, v in a.items if s == "name" and domain.venue_index(v) is not None}
    if len(names) != 1:
        return text
    venue = domain.venue(names.pop())

    def fill(m: re.Match) -> str:
        key = m.group(1)
        if key == "pricerange_adv" and venue.get("pricerange"):
            return _PRICE_ADVERB.get(venue["pricerange"], venue["pricerange"] + "ly")
        return venue.get(key) or m.group(0)

    return re.sub(r"\[([a-z_]+)\]", fill, text)


def canonical(act: str) -> str:
    return canonical_act(act)
