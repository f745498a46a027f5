"""PyDial-style dialogue acts: parsing, canonical form, printing.

An act is a dialogue-act type plus a *multiset* of slot–value items, e.g.
``inform(name="la mimosa",food=mediterranean)``, ``request(food)``,
``select(area=north,area=south)``, ``bye()``.

Canonical form: act type and slot names lower-cased, whitespace around names and values and
the quotes around values removed, items sorted by ``(slot, value)``. Two acts are equal iff
their canonical forms are equal. Values keep their case.

Grammar (whitespace allowed around every token)::

    act    := TYPE "(" [item ("," item)*] ")"
    item   := SLOT [("=" | "!=") value]
    value  := '"' (char | '\\"' | '\\\\')* '"'   (may hold spaces, commas, '=', parentheses)
            | bare                               (no quote, comma, '=' or parenthesis)
    TYPE, SLOT := letters, digits, '_', '-', '.'

A slot without a value (``request(food)``) has the empty value ``""``; ``food=""`` is the same
item. PyDial's negated items (``inform(name=none,name!="x")``: "no venue other than x") keep the
operator in the slot, ``("name!", "x")``, so they never equal a plain ``name`` item. Printing always quotes non-empty values, so ``parse_act(str(act)) == act``.

**Act sets.** A turn of a logged corpus may hold several acts at once ("There are three in the
south. What food would you like?"): an *act set*, its acts joined by ``|``::

    acts   := act ("|" act)*

e.g. ``inform(area=south)|request(food)``. A ``|`` separates acts only after an act's closing
parenthesis, so every string that was one act before is still that act (a bare value may hold a
``|``). An act set is a *set*: :func:`parse_acts` gives its distinct acts in canonical order
(sorted by type, then items), and its canonical form prints them so joined; an act set of one
act is that act. :func:`parse_act` reads one act and refuses a set; :func:`parse_acts` reads both
(a single act is a set of one). The act scores compare act sets (``behavsim/scores/_semantic.py``):
a set of one act scores exactly as the act.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from ._errors import ActParseError

__all__ = [
    "DialogueAct",
    "parse_act",
    "parse_acts",
    "format_act",
    "format_acts",
    "canonical_act",
    "ActLike",
    "ActsLike",
]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_BARE_STOP = frozenset(',()="')


@dataclass(frozen=True, slots=True)
class DialogueAct:
    """A dialogue act in canonical form.

    ``act_type`` is lower-case; ``items`` is a sorted tuple of ``(slot, value)`` pairs (a
    multiset: the same slot may appear more than once). Build one with :func:`parse_act` or
    :meth:`create` so that the canonical invariants hold.
    """

    act_type: str
    items: tuple[tuple[str, str], ...] = ()

    @classmethod
    def create(cls, act_type: str, items: Iterable[tuple[str, str | None]] = ()) -> "DialogueAct":
        """Build a canonical act from a type and (slot, value) pairs in any order."""
        t = _check_name(act_type.strip().lower(), "act type")
        norm = []
        for slot, value in items:
            raw = str(slot).strip().lower()
            s = _check_name(raw[:-1], "slot") + "!" if raw.endswith("!") else _check_name(raw, "slot")
            v = "" if value is None else str(value).strip()
            norm.append((s, v))
        return cls(t, tuple(sorted(norm)))

    @property
    def slots(self) -> tuple[str, ...]:
        return tuple(s for s, _ in self.items)

    def item_sequence(self) -> list[str]:
        """``[s1, v1, s2, v2, ...]`` in canonical order (the empty value is an item too)."""
        seq: list[str] = []
        for s, v in self.items:
            seq.append(s)
            seq.append(v)
        return seq

    def concepts(self) -> frozenset:
        """Distinct slots plus distinct (slot, value) pairs: the concepts CMR counts."""
        return frozenset([("slot", s) for s, _ in self.items] + [("pair", s, v) for s, v in self.items])

    def __str__(self) -> str:
        return format_act(self)


ActLike = str | DialogueAct
#: An act or an act set: a string (acts joined by ``|``), one act, or the acts of a set.
ActsLike = str | DialogueAct | tuple[DialogueAct, ...]

#: The separator of the acts of an act set.
ACT_SEPARATOR = "|"


def _check_name(name: str, what: str) -> str:
    if not name or any(c not in _NAME_CHARS for c in name):
        raise ValueError(f"invalid {what} {name!r}: use letters, digits, '_', '-' or '.'")
    return name


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _format_item(slot: str, value: str) -> str:
    if slot.endswith("!"):
        return f"{slot}={_quote(value)}"
    return slot if value == "" else f"{slot}={_quote(value)}"


def format_act(act: DialogueAct) -> str:
    """Print an act in canonical PyDial style: ``inform(area="centre",name="la mimosa")``."""
    inner = ",".join(_format_item(s, v) for s, v in act.items)
    return f"{act.act_type}({inner})"


def format_acts(acts: Iterable[DialogueAct]) -> str:
    """Print an act set in canonical form: its distinct acts in canonical order, joined by ``|``."""
    return ACT_SEPARATOR.join(format_act(a) for a in _canonical_set(acts))


def _canonical_set(acts: Iterable[DialogueAct]) -> tuple[DialogueAct, ...]:
    return tuple(sorted(set(acts), key=lambda a: (a.act_type, a.items)))


def parse_act(text: ActLike) -> DialogueAct:
    """Parse a PyDial-style act string into its canonical :class:`DialogueAct`.

    A :class:`DialogueAct` is returned unchanged. Raises :class:`ActParseError` naming the string
    and the position of the first problem; an act set of several acts (``a(...)|b(...)``) is
    refused (:func:`parse_acts` reads act sets).
    """
    if isinstance(text, DialogueAct):
        return text
    if not isinstance(text, str):
        raise TypeError(f"a dialogue act must be a string or DialogueAct, got {type(text).__name__}")
    acts = _parse_cached(text)
    if len(acts) > 1:
        first = _Parser(text)
        first.act()
        first.skip_ws()
        problem = f"an act set of {len(acts)} acts where one act was expected (parse_acts reads act sets)"
        raise ActParseError(text, first.pos, problem)
    return acts[0]


def parse_acts(text: ActsLike) -> tuple[DialogueAct, ...]:
    """The acts of an act or act set (acts joined by ``|``), distinct and in canonical order.

    A :class:`DialogueAct` gives a set of one; a tuple of acts is returned in canonical order.
    Raises :class:`ActParseError` naming the string and the position of the first problem.
    """
    if isinstance(text, str):
        return _parse_cached(text)
    if isinstance(text, DialogueAct):
        return (text,)
    if isinstance(text, tuple) and text and all(isinstance(a, DialogueAct) for a in text):
        return _canonical_set(text)
    raise TypeError(f"dialogue acts must be a string, a DialogueAct or a tuple of them, got {type(text).__name__}")


@lru_cache(maxsize=65536)
def _parse_cached(text: str) -> tuple[DialogueAct, ...]:
    acts = _Parser(text).parse_set()
    return acts if len(acts) == 1 else _canonical_set(acts)


def canonical_act(text: ActsLike) -> str:
    """The canonical string of an act or act set (parse, then print)."""
    if isinstance(text, str):
        return _canonical_cached(text)
    return format_acts(parse_acts(text))


@lru_cache(maxsize=65536)
def _canonical_cached(text: str) -> str:
    return format_acts(_parse_cached(text))


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.n = len(text)

    def error(self, problem: str, pos: int | None = None) -> ActParseError:
        return ActParseError(self.text, self.pos if pos is None else pos, problem)

    def skip_ws(self) -> None:
        while self.pos < self.n and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < self.n else ""

    def name(self, what: str) -> str:
        self.skip_ws()
        start = self.pos
        while self.pos < self.n and self.text[self.pos] in _NAME_CHARS:
            self.pos += 1
        if self.pos == start:
            found = repr(self.peek()) if self.peek() else "end of string"
            raise self.error(f"expected {what}, found {found}")
        return self.text[start : self.pos].lower()

    def expect(self, char: str) -> None:
        self.skip_ws()
        if self.peek() != char:
            found = repr(self.peek()) if self.peek() else "end of string"
            raise self.error(f"expected {char!r}, found {found}")
        self.pos += 1

    def quoted(self) -> str:
        start = self.pos
        self.pos += 1  # opening quote
        out: list[str] = []
        while self.pos < self.n:
            c = self.text[self.pos]
            if c == "\\":
                if self.pos + 1 >= self.n:
                    break
                nxt = self.text[self.pos + 1]
                if nxt not in '"\\':
                    raise self.error(f"unknown escape '\\{nxt}' in quoted value (use \\\" or \\\\)")
                out.append(nxt)
                self.pos += 2
            elif c == '"':
                self.pos += 1
                return "".join(out).strip()
            else:
                out.append(c)
                self.pos += 1
        raise self.error("unterminated quoted value", start)

    def bare(self) -> str:
        start = self.pos
        while self.pos < self.n and self.text[self.pos] not in _BARE_STOP:
            self.pos += 1
        if self.pos < self.n and self.text[self.pos] in '"=(':
            raise self.error(f"unexpected {self.text[self.pos]!r} in unquoted value (quote the value)")
        return self.text[start : self.pos].strip()

    def value(self) -> str:
        self.skip_ws()
        if self.peek() == '"':
            return self.quoted()
        return self.bare()

    def parse_set(self) -> tuple[DialogueAct, ...]:
        """The acts of the whole string: one act, or several joined by ``|``."""
        if not self.text.strip():
            raise self.error("empty string is not a dialogue act", 0)
        acts = [self.act()]
        while True:
            self.skip_ws()
            if self.pos == self.n:
                return tuple(acts)
            if self.peek() != ACT_SEPARATOR:
                raise self.error(f"unexpected text after ')': {self.text[self.pos :]!r}")
            self.pos += 1
            acts.append(self.act())

    def act(self) -> DialogueAct:
        act_type = self.name("a dialogue-act type")
        self.expect("(")
        items: list[tuple[str, str]] = []
        self.skip_ws()
        if self.peek() == ")":
            self.pos += 1
        else:
            while True:
                slot = self.name("a slot name")
                self.skip_ws()
                value = ""
                if self.peek() == "!" and self.text[self.pos + 1 : self.pos + 2] == "=":
                    self.pos += 2
                    slot += "!"
                    value = self.value()
                elif self.peek() == "=":
                    self.pos += 1
                    value = self.value()
                items.append((slot, value))
                self.skip_ws()
                c = self.peek()
                if c == ",":
                    self.pos += 1
                    continue
                if c == ")":
                    self.pos += 1
                    break
                found = repr(c) if c else "end of string"
                raise self.error(f"expected ',' or ')', found {found}")
        return DialogueAct(act_type, tuple(sorted(items)))
