"""Policy spec strings and the registry of policy kinds.

A **policy spec** names a behaviour model in one string: ``kind:target:key=value...`` —
``handcrafted``, ``checkpoint:runs/ts-seed0/ckpt-001000.npz``, ``mymodule:policy``,
``recorded:answers.jsonl``, ``pydial:config.cfg:root=DIR``. Options are trailing
``:key=value`` parts. The kinds live in :data:`policy_kinds`, filled from the entry-point group
``behavsim.policy_kinds`` (each entry is a factory ``(PolicySpec, **options) -> Adapter``), so
packages that build on behavsim add kinds without the core knowing them. A factory may carry
``path_suffixes`` (e.g. ``(".npz",)``): a bare path with such a suffix is taken as that kind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import ConfigError, UnknownName
from .._registry import Registry
from .._util import did_you_mean
from ._protocol import Adapter, CallableAdapter, PolicyAdapter

__all__ = [
    "PolicySpec",
    "UnknownPolicyKind",
    "policy_kinds",
    "list_policy_kinds",
    "parse_spec",
    "load_policy",
    "as_adapter",
    "ENTRY_POINT_GROUP",
]

ENTRY_POINT_GROUP = "behavsim.policy_kinds"

_OPTION_RE = re.compile(r"^[A-Za-z_]\w*=[^:]*$")
CALLABLE_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class UnknownPolicyKind(UnknownName):
    """A policy spec names a kind that is not registered."""


class _PolicyKinds(Registry[Callable[..., Adapter]]):
    """The registry of policy kinds; entry points are read at the first look-up."""

    def __init__(self) -> None:
        super().__init__("policy kind", UnknownPolicyKind, entry_points=ENTRY_POINT_GROUP)

    def suffixes(self) -> dict[str, str]:
        """``{".npz": "checkpoint", ...}``: path suffixes that identify a kind."""
        out: dict[str, str] = {}
        for name in self.names():
            for suffix in getattr(self.get(name), "path_suffixes", ()):
                out.setdefault(str(suffix).lower(), name)
        return out


#: The registry of policy kinds (listable, case-insensitive; an unknown kind is rejected with the closest).
policy_kinds = _PolicyKinds()


def list_policy_kinds() -> list[str]:
    """The registered policy kinds."""
    return policy_kinds.names()


@dataclass(frozen=True)
class PolicySpec:
    """A parsed policy spec string: ``kind``, its ``target`` (path, ``module:function``, ...)
    and ``options`` (the trailing ``:key=value`` parts)."""

    text: str
    kind: str
    target: str = ""
    options: dict[str, str] = field(default_factory=dict)

    def check_options(self, allowed: tuple[str, ...]) -> None:
        """Refuse options other than ``allowed``, naming the closest valid one."""
        for key in self.options:
            if key not in allowed:
                valid = ", ".join(allowed) if allowed else "none"
                raise ConfigError(
                    f"policy spec {self.text!r}: unknown option {key!r} for kind {self.kind!r}."
                    f"{did_you_mean(key, allowed)} Valid options: {valid}"
                )

    def int_option(self, key: str, default: int | None) -> int | None:
        """Option ``key`` as a non-negative integer (``none``/``off``/``no`` → ``None``)."""
        v = self.options.get(key)
        if v is None:
            return default
        if v.lower() in ("none", "off", "no"):
            return None
        try:
            n = int(v)
        except ValueError:
            raise ConfigError(
                f"policy spec {self.text!r}: option {key} must be an integer or 'none', got {v!r}"
            ) from None
        if n < 0:
            raise ConfigError(f"policy spec {self.text!r}: option {key} must be non-negative, got {n}")
        return n


def parse_spec(text: str) -> PolicySpec:
    """Parse a policy spec string (no file is opened, nothing is imported).

    ``KIND[:TARGET][:key=value...]`` for a registered kind; a bare path whose suffix a kind
    claims (``PATH.npz``: a checkpoint); ``module:function`` for a callable. An unknown kind
    raises :class:`UnknownPolicyKind` naming the closest.
    """
    if not isinstance(text, str):
        raise ConfigError(f"policy spec: expected a string, got {type(text).__name__}")
    raw = text.strip()
    if not raw:
        raise ConfigError(
            "policy spec: empty string (expected e.g. 'handcrafted', 'runs/ts-seed0/ckpt-001000.npz', "
            "'mymodule:policy', 'recorded:answers.jsonl' or 'pydial:config.cfg')"
        )
    parts = raw.split(":")
    options: dict[str, str] = {}
    while len(parts) > 1 and _OPTION_RE.match(parts[-1]):
        key, value = parts.pop().split("=", 1)
        if key in options:
            raise ConfigError(f"policy spec {raw!r}: option {key!r} given twice")
        options[key] = value
    options = dict(reversed(list(options.items())))
    head = ":".join(parts)
    prefix, sep, rest = head.partition(":")
    if sep and prefix.lower() in policy_kinds:
        return PolicySpec(raw, policy_kinds.canonical(prefix), rest, options)
    if not sep and head.lower() in policy_kinds:
        return PolicySpec(raw, policy_kinds.canonical(head), "", options)
    suffixes = policy_kinds.suffixes()
    for suffix, kind in suffixes.items():
        if head.lower().endswith(suffix):
            return PolicySpec(raw, kind, head, options)
    if CALLABLE_RE.match(head) and "callable" in policy_kinds:
        return PolicySpec(raw, policy_kinds.canonical("callable"), head, options)
    if Path(head).exists():
        known = " or ".join(f"{getattr(policy_kinds.get(k), 'path_description', k)} ({s})" for s, k in suffixes.items())
        raise ConfigError(
            f"policy spec {raw!r}: {head!r} exists but is not a {known or 'file any kind recognises'}; "
            f"other files take their kind as a prefix ({', '.join(k + ':' for k in policy_kinds)})"
        )
    policy_kinds.canonical(prefix if sep else head)  # raises UnknownPolicyKind with the closest kind
    raise ConfigError(f"policy spec {raw!r}: cannot tell its kind")  # pragma: no cover


def load_policy(spec: str | PolicySpec, **options: Any) -> Adapter:
    """The adapter a policy spec describes (loads the checkpoint, imports the module, ...).

    ``options`` go to the kind's factory, which takes what it knows (e.g. ``domain``,
    ``pydial_root``) and ignores the rest.
    """
    if not isinstance(spec, PolicySpec):
        spec = parse_spec(spec)
    factory = policy_kinds.get(spec.kind)
    return factory(spec, **options)


def as_adapter(obj: Any, **options: Any) -> Adapter:
    """An :class:`Adapter` from a spec string or path, an adapter, a policy object or a callable."""
    if isinstance(obj, Adapter):
        return obj
    if isinstance(obj, (str, PolicySpec)):
        return load_policy(obj, **options)
    if isinstance(obj, os.PathLike):
        return load_policy(os.fspath(obj), **options)
    if callable(getattr(obj, "act", None)):
        return PolicyAdapter(obj)
    if callable(obj):
        return CallableAdapter(obj)
    raise ConfigError(
        f"policy: expected a policy spec string, an Adapter, a policy object with act(belief) or a "
        f"callable, got {type(obj).__name__}"
    )
