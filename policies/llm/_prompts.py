"""Prompt templates for language-model policies: a context in, chat messages out; text in, an act out.

A **template** is a TOML file (format ``behavsim-prompt`` version 1)::

    format = "behavsim-prompt"
    version = 1
    name = "camrestaurants"
    description = "..."
    needs_history = false          # true: refuse contexts without a dialogue history
    [answer]
    utterance = true               # ask for what the system says too (spec option utterance=yes|no)
    [[messages]]
    role = "system"
    content = '''... Jinja2 ...'''
    [[messages]]
    role = "history"               # expands to one message per turn of the context's history
    [[messages]]
    role = "user"
    content = '''...'''

Message contents are Jinja2 templates (a sandbox, undefined names are errors) rendered with:
``domain`` (``name``, ``acts``: the system acts with their forms and meanings, ``informable``:
slot -> values, ``requestable``, ``system_requestable``, ``n_venues``), ``belief`` (the summary
of :func:`belief_summary`: each slot's top value and probability, the requested slots, method,
last user act type, the venues matching the accepted constraints), ``belief_json`` (the whole
belief state as JSON), ``history`` (the turns ``{"speaker": "system"|"user", "text", "act"}``, or
``None``) and ``utterance`` (whether the answer should hold the utterance). A message with
``role = "history"`` becomes one message per turn: user turns as ``user``, system turns as
``assistant``, the turn's text (its act when it has no text). The history is the context set's
(:meth:`behavsim.ContextSet.history`): the one place a context keeps its dialogue so far.

What a template **reads** (:attr:`PromptTemplate.reads`, the policy's ``reads``) follows from
its text: ``"belief"`` when a message uses ``belief`` or ``belief_json``, ``"history"`` when one
uses ``history`` or has ``role = "history"``. A template that reads only the history (such as
``history-chat``) answers text-only contexts and is refused, before the first context, a set
without histories; one that reads the belief answers the grid, and a context with a history is
rendered with it when the template uses it.

Shipped templates live in ``policies/llm/prompts/`` (:func:`list_templates`); a model folder may
carry its own, ``behavsim-prompt.toml``, which is then its default. A template's **digest**
(sha256 of its bytes and of :data:`RENDER_VERSION`) identifies it in the answer cache and in a
table's metadata.

**Answers** are read by :meth:`PromptTemplate.parse`: the first non-empty line (surrounding
backticks removed) must be one act in behavsim's syntax (:func:`behavsim.parse_act`), else
:class:`UnparsableAnswer`; the act must fit the domain (:func:`check_act`: a system act type,
known slots, values of the ontology or the database), else :class:`OffDomainAnswer`; with the
utterance asked for, the next non-empty lines are the prompt. Both errors keep the raw text
(``exc.raw``), which the response table stores beside the error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from behavsim import ActParseError, ConfigError, DialogueAct, did_you_mean, parse_act
from behavsim.policy import Response
from policies.simulation.actions import NONE_VALUE, accepted_constraints, top_value, value_rank

__all__ = [
    "PromptTemplate",
    "load_template",
    "list_templates",
    "UnusableAnswer",
    "UnparsableAnswer",
    "OffDomainAnswer",
    "check_act",
    "belief_summary",
    "domain_view",
    "SYSTEM_ACTS",
    "TEMPLATES_DIR",
    "MODEL_TEMPLATE",
    "DEFAULT_TEMPLATE",
    "RENDER_VERSION",
]

TEMPLATE_FORMAT = "behavsim-prompt"
TEMPLATE_VERSION = 1
#: Changes when what a template is rendered with changes (the belief summary, the domain view):
#: part of every template's digest, so cached answers to older renderings are not reused.
RENDER_VERSION = "behavsim-prompt-render/1"
TEMPLATES_DIR = Path(__file__).resolve().parent / "prompts"
#: A model folder's own template, used by default for that model.
MODEL_TEMPLATE = "behavsim-prompt.toml"
DEFAULT_TEMPLATE = "camrestaurants"
_MAX_VENUES = 5  # matching venues listed in the belief summary

#: The system acts of behavsim's environment: (type, form, meaning).
SYSTEM_ACTS: tuple[tuple[str, str, str], ...] = (
    ("hello", "hello()", "greet the user and invite a request"),
    ("request", "request(SLOT)", "ask the user for the value of SLOT"),
    ("confirm", 'confirm(SLOT="VALUE")', "check a value the user may have given"),
    ("select", 'select(SLOT="VALUE1",SLOT="VALUE2")', "ask the user to choose between two values"),
    ("inform", 'inform(name="VENUE",SLOT="VALUE",...)', "offer a venue, with the slots the user asked for"),
    ("inform", 'inform(name=none,SLOT="VALUE",...)', "say that no venue matches these constraints"),
    ("reqmore", "reqmore()", "ask whether the user wants anything else"),
    ("bye", "bye()", "end the dialogue"),
    ("null", "null()", "say nothing new (repeat or restart)"),
)
_SYSTEM_TYPES = tuple(dict.fromkeys(t for t, _, _ in SYSTEM_ACTS))
#: How many slot-value items each system act takes: (fewest, most; None: no limit).
_ARITY = {
    "hello": (0, 0),
    "reqmore": (0, 0),
    "bye": (0, 0),
    "null": (0, 0),
    "request": (1, 1),
    "confirm": (1, None),
    "select": (2, 2),
    "inform": (1, None),
}
_FREE_VALUES = ("none", "dontcare")


class UnusableAnswer(ValueError):
    """A model's answer that gives no act for the context; ``raw`` is the answer as it came."""

    def __init__(self, message: str, raw: str):
        super().__init__(message)
        self.raw = raw


class UnparsableAnswer(UnusableAnswer):
    """The answer holds no act in behavsim's syntax where the template asks for one."""


class OffDomainAnswer(UnusableAnswer):
    """The answer's act is not an act of the domain (type, slot or value unknown)."""


# ----------------------------------------------------------------------------- what is rendered
def domain_view(domain: Any) -> dict[str, Any]:
    """What a template is told about a domain: its name, system acts, slots and values."""
    return {
        "name": domain.name,
        "acts": [{"type": t, "form": f, "meaning": m} for t, f, m in SYSTEM_ACTS],
        "informable": {s: [v for v in vals] for s, vals in domain.informable.items()},
        "requestable": list(domain.requestable),
        "system_requestable": list(domain.system_requestable),
        "n_venues": domain.n_venues,
    }


def _p(x: Any) -> float:
    return round(float(x), 3)


def belief_summary(belief: Mapping[str, Any], domain: Any) -> dict[str, Any]:
    """A belief state as a template sees it.

    ``slots``: per informable slot (domain order) its top value other than ``**NONE**`` and that
    value's probability (``value`` ``None`` when nothing has been said); ``requested``: the slots the
    user asked about (p > 0.5); ``method`` and ``discourse_act``: the top entries; ``accepted``:
    the constraints a database query uses (PyDial's acceptance rule); ``n_matches`` and
    ``venues``: the venues matching them (the first few, database order, with every slot);
    ``last_offered``: the venue last offered, if any.
    """
    beliefs = belief.get("beliefs") or {}
    slots = []
    for slot in domain.informable:
        dist = {k: v for k, v in (beliefs.get(slot) or {}).items() if k != NONE_VALUE}
        if dist and max(dist.values()) > 0:
            v, p = top_value(dist, value_rank(domain.informable[slot]))
            slots.append({"slot": slot, "value": v, "p": _p(p)})
        else:
            slots.append({"slot": slot, "value": None, "p": 0.0})
    requested = [s for s in domain.requestable if (beliefs.get("requested") or {}).get(s, 0.0) > 0.5]
    method = top_value(beliefs.get("method") or {"none": 1.0}, value_rank(domain.method))[0]
    disc = top_value(beliefs.get("discourseAct") or {"none": 1.0}, value_rank(domain.discourse_act))[0]
    try:
        accepted = accepted_constraints(dict(belief), domain)
    except (KeyError, TypeError):
        accepted = []
    matches = domain.matches({s: v for s, v, _ in accepted})
    feats = belief.get("features") or {}
    return {
        "slots": slots,
        "requested": requested,
        "method": method,
        "discourse_act": disc,
        "accepted": [{"slot": s, "value": v, "p": _p(p)} for s, v, p in accepted],
        "n_matches": len(matches),
        "venues": [_venue(domain, domain.venues[i]) for i in matches[:_MAX_VENUES]],
        "last_offered": feats.get("lastInformedVenue") or None,
    }


def _venue(domain: Any, venue: Mapping[str, Any]) -> dict[str, str]:
    """A venue's slots a user can hear about (the database's own columns, such as ids, left out;
    empty fields too)."""
    keep = set(domain.requestable) | set(domain.informable)
    return {k: str(v) for k, v in venue.items() if k in keep and str(v) != ""}


# ----------------------------------------------------------------------------- checking answers
def _allowed_values(domain: Any) -> dict[str, frozenset[str]]:
    cached = getattr(domain, "_llm_allowed_values", None)
    if cached is not None:
        return cached
    out: dict[str, set[str]] = {s: {v.lower() for v in vals} for s, vals in domain.informable.items()}
    for venue in domain.venues:
        for s, v in venue.items():
            if s in domain.requestable or s in domain.informable:
                out.setdefault(s, set()).add(str(v).lower())
    frozen = {s: frozenset(v | set(_FREE_VALUES) | {""}) for s, v in out.items()}
    try:
        domain._llm_allowed_values = frozen  # a domain is immutable: computed once
    except AttributeError:
        pass
    return frozen


def check_act(act: DialogueAct, domain: Any, raw: str) -> None:
    """Raise :class:`OffDomainAnswer` when ``act`` is not an act of ``domain``: its type is not a
    system act (:data:`SYSTEM_ACTS`), a slot is not the domain's, or a value is neither in the
    ontology nor in the database (``none`` and ``dontcare`` are always allowed), or the act has
    the wrong number of items for its type (``request(SLOT)``: one slot; ``select``: two items;
    ``hello()``, ``reqmore()``, ``bye()``, ``null()``: none)."""
    if act.act_type not in _SYSTEM_TYPES:
        raise OffDomainAnswer(
            f"act type {act.act_type!r} is not a system act of {domain.name} ({', '.join(_SYSTEM_TYPES)})."
            f"{did_you_mean(act.act_type, _SYSTEM_TYPES)}",
            raw,
        )
    low, high = _ARITY[act.act_type]
    n = len(act.items)
    if n < low or (high is not None and n > high):
        want = f"{low}" if low == high else f"at least {low}" if high is None else f"{low} to {high}"
        raise OffDomainAnswer(f"{act.act_type} takes {want} slot-value item(s), got {n}: {str(act)!r}", raw)
    if act.act_type == "request" and act.items[0][1]:
        raise OffDomainAnswer(f"request names a slot without a value, got {str(act)!r}", raw)
    allowed = _allowed_values(domain)
    for slot, value in act.items:
        base = slot[:-1] if slot.endswith("!") else slot
        if base not in allowed:
            raise OffDomainAnswer(
                f"slot {base!r} is not a slot of {domain.name}.{did_you_mean(base, list(allowed))}", raw
            )
        if value.lower() not in allowed[base]:
            raise OffDomainAnswer(f"{value!r} is not a value of slot {base!r} in {domain.name}", raw)


def _short(text: str, n: int = 80) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= n else one[: n - 1] + "…")


# ----------------------------------------------------------------------------- templates
@dataclass(frozen=True)
class PromptTemplate:
    """A loaded template (see the module documentation)."""

    name: str
    path: str
    digest: str
    messages: tuple[dict[str, str], ...]
    utterance: bool = True
    needs_history: bool = False
    description: str = ""
    reads: tuple[str, ...] = ("belief",)
    _compiled: tuple[Any, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "PromptTemplate":
        path = Path(path)
        try:
            data_bytes = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"prompt template {str(path)!r}: cannot read it ({exc.strerror or exc})") from None
        try:
            data = tomllib.loads(data_bytes.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"prompt template {path}: not a TOML file ({exc})") from None
        where = f"prompt template {path}"
        if data.get("format") != TEMPLATE_FORMAT or data.get("version") != TEMPLATE_VERSION:
            raise ConfigError(f"{where}: expected format = {TEMPLATE_FORMAT!r} and version = {TEMPLATE_VERSION}")
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ConfigError(f"{where}: expected [[messages]] entries (role and content)")
        out = []
        for k, m in enumerate(messages):
            role = m.get("role") if isinstance(m, dict) else None
            if role not in ("system", "user", "assistant", "history"):
                raise ConfigError(
                    f"{where}: message {k}: role must be system, user, assistant or history, got {role!r}"
                )
            content = m.get("content", "")
            if role != "history" and (not isinstance(content, str) or not content.strip()):
                raise ConfigError(f"{where}: message {k} ({role}): expected a non-empty content string")
            out.append({"role": role, "content": content if isinstance(content, str) else ""})
        answer = data.get("answer") or {}
        if not isinstance(answer, dict) or not isinstance(answer.get("utterance", True), bool):
            raise ConfigError(f"{where}: [answer] utterance must be true or false")
        needs = data.get("needs_history", False)
        if not isinstance(needs, bool):
            raise ConfigError(f"{where}: needs_history must be true or false")
        digest = "sha256:" + hashlib.sha256(RENDER_VERSION.encode() + b"\n" + data_bytes).hexdigest()
        from jinja2 import StrictUndefined, TemplateSyntaxError  # optional dependency (the llm extra)
        from jinja2.sandbox import ImmutableSandboxedEnvironment  # optional dependency (the llm extra)

        env = ImmutableSandboxedEnvironment(
            undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False
        )
        from jinja2 import meta as jinja_meta  # optional dependency (the llm extra)

        compiled: list[Any] = []
        used: set[str] = set()
        for k, m in enumerate(out):
            if m["role"] == "history":
                compiled.append(None)
                used.add("history")
                continue
            try:
                compiled.append(env.from_string(m["content"]))
                used |= jinja_meta.find_undeclared_variables(env.parse(m["content"]))
            except TemplateSyntaxError as exc:
                raise ConfigError(f"{where}: message {k}: template error on line {exc.lineno}: {exc.message}") from None
        reads = tuple(
            r for r, names in (("belief", {"belief", "belief_json"}), ("history", {"history"})) if used & names
        )
        if needs and "history" not in reads:
            raise ConfigError(f"{where}: needs_history = true, but no message uses the history")
        return cls(
            name=str(data.get("name") or path.stem),
            path=str(path),
            digest=digest,
            messages=tuple(out),
            utterance=answer.get("utterance", True),
            needs_history=needs,
            description=str(data.get("description", "")),
            reads=reads or ("belief",),
            _compiled=tuple(compiled),
        )

    def info(self) -> dict[str, Any]:
        """The template's entry in a table's policy metadata."""
        return {"name": self.name, "digest": self.digest}

    def render(
        self,
        belief: Mapping[str, Any] | None,
        domain: Any,
        *,
        history: Sequence[Mapping[str, Any]] | None = None,
        utterance: bool | None = None,
    ) -> list[dict[str, str]]:
        """The chat messages (``[{"role", "content"}]``) for one context: its belief state
        (``None`` for a text-only context, if the template does not read it) and its history
        (``None`` without one; required when the template ``needs_history``)."""
        from jinja2 import TemplateError  # optional dependency (the llm extra)

        if self.needs_history and history is None:
            raise ConfigError(f"prompt template {self.name!r} needs a dialogue history, and this context has none")
        if belief is None and "belief" in self.reads:
            raise ConfigError(
                f"prompt template {self.name!r} reads the belief state, and this context has none (text only)"
            )
        variables = {
            "domain": domain_view(domain),
            "belief": None if belief is None else belief_summary(belief, domain),
            "belief_json": json.dumps(belief, sort_keys=True, ensure_ascii=False),
            "history": [dict(t) for t in history] if history else None,
            "utterance": self.utterance if utterance is None else utterance,
        }
        out: list[dict[str, str]] = []
        for m, tpl in zip(self.messages, self._compiled):
            if m["role"] == "history":
                for turn in history or ():
                    text = turn.get("text") or turn.get("act") or ""
                    out.append({"role": "user" if turn.get("speaker") == "user" else "assistant", "content": str(text)})
                continue
            try:
                content = tpl.render(**variables).strip()
            except TemplateError as exc:
                raise ConfigError(f"prompt template {self.name!r} ({self.path}): {type(exc).__name__}: {exc}") from None
            out.append({"role": m["role"], "content": content})
        return out

    def parse(self, text: str, domain: Any, *, utterance: bool | None = None) -> Response:
        """The act (and prompt) in a model's answer, checked against ``domain``; raises
        :class:`UnparsableAnswer` or :class:`OffDomainAnswer` (both keep ``text``)."""
        lines = [line.strip().strip("`").strip() for line in text.strip().splitlines()]
        lines = [line for line in lines if line]
        if not lines:
            raise UnparsableAnswer("empty answer (expected an act in behavsim's syntax on the first line)", text)
        try:
            act = parse_act(lines[0])
        except ActParseError:
            raise UnparsableAnswer(
                f"the first line is not an act in behavsim's syntax (TYPE(slot=value,...)): {_short(lines[0])}", text
            ) from None
        check_act(act, domain, text)
        wants = self.utterance if utterance is None else utterance
        prompt = " ".join(lines[1:]) if wants and len(lines) > 1 else None
        return Response(act=str(act), prompt=prompt, raw=text)


def list_templates() -> list[str]:
    """The names of the shipped templates (``policies/llm/prompts/*.toml``)."""
    return sorted(p.stem for p in TEMPLATES_DIR.glob("*.toml"))


def load_template(
    spec: str | os.PathLike | None = None, *, model_dir: str | os.PathLike | None = None
) -> PromptTemplate:
    """A template by shipped name or file path; ``None``: the model folder's own
    (``MODEL_DIR/behavsim-prompt.toml``) when there is one, else :data:`DEFAULT_TEMPLATE`."""
    if spec is None:
        own = Path(model_dir) / MODEL_TEMPLATE if model_dir is not None else None
        if own is not None and own.is_file():
            return PromptTemplate.from_file(own)
        spec = DEFAULT_TEMPLATE
    text = os.fspath(spec)
    path = Path(text).expanduser()
    if path.is_file():
        return PromptTemplate.from_file(path)
    shipped = TEMPLATES_DIR / f"{text}.toml"
    if shipped.is_file():
        return PromptTemplate.from_file(shipped)
    names = list_templates()
    raise ConfigError(
        f"prompt template {text!r}: neither a file nor a shipped template.{did_you_mean(text, names)} "
        f"Shipped: {', '.join(names)}"
    )
