"""The adapter protocol, policy spec strings, the registry of adapter kinds, built-in kinds.

An *adapter* turns one behaviour model into answers on belief states, deterministically: no
exploration, no learning, a fixed NLG seed. ``respond_one(belief, context_id=..., context_meta=...)``
returns a :class:`policies.base.Response` (act string, prompt or ``None``, summary action or
``None``); ``meta`` is the policy metadata that goes into the response table.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from behavsim import ConfigError, UnknownName
from behavsim._registry import Registry

from ..base import Response

__all__ = [
    "Adapter",
    "PolicyAdapter",
    "CallableAdapter",
    "PolicySpec",
    "UnknownAdapterKind",
    "adapter_kinds",
    "list_adapter_kinds",
    "parse_spec",
    "load_adapter",
    "as_adapter",
    "file_sha256",
    "source_info",
]


class UnknownAdapterKind(UnknownName):
    """A policy spec names an adapter kind that is not registered."""


def source_info(path: str | os.PathLike, **extra: Any) -> dict[str, Any]:
    """The ``path`` entry of an adapter's metadata: ``{"file": ..., "sha256": ...}`` plus ``extra``.

    Everything specific to one file lives under ``path`` because ``behavsim.compare`` groups the
    checkpoints of one trial by all metadata except ``id``, ``checkpoint`` and ``path``.
    """
    return {"file": os.fspath(path), "sha256": file_sha256(path), **extra}


def file_sha256(path: str | os.PathLike) -> str:
    """``sha256:<hex>`` of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


# ----------------------------------------------------------------------------- protocol
class Adapter:
    """One behaviour model answering belief states deterministically.

    Subclasses set ``kind`` and implement :meth:`respond_one`; ``meta`` holds at least ``id``,
    ``name`` and ``kind``. :func:`policies.respond.respond` hands each call a fresh copy of the
    belief (keys sorted), so an adapter may modify what it is given.
    """

    kind: str = "adapter"

    def __init__(self, meta: Mapping[str, Any]):
        meta = dict(meta)
        for key in ("id", "name"):
            if not isinstance(meta.get(key), str) or not meta[key]:
                raise ConfigError(f"adapter metadata: {key!r} must be a non-empty string, got {meta.get(key)!r}")
        meta["kind"] = meta.get("kind") or self.kind
        self.kind = meta["kind"]
        self.meta = meta

    @property
    def id(self) -> str:
        return self.meta["id"]

    @property
    def name(self) -> str:
        return self.meta["name"]

    def prepare(self, contexts: Any) -> None:
        """Called once before a run over ``contexts`` (a :class:`behavsim.ContextSet`)."""

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Context in which :meth:`respond_one` runs (working directory, globals, ...)."""
        yield

    def respond_one(self, belief: dict, *, context_id: str | None = None,
                    context_meta: Mapping[str, Any] | None = None) -> Response:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, kind={self.kind!r})"


class PolicyAdapter(Adapter):
    """Any object of the :class:`policies.base.Policy` protocol (``name``, ``act(belief)``)."""

    kind = "policy"

    def __init__(self, policy: Any, meta: Mapping[str, Any] | None = None):
        if not callable(getattr(policy, "act", None)):
            raise ConfigError(f"policy: expected an object with an act(belief) method, got {type(policy).__name__}")
        name = str(getattr(policy, "name", type(policy).__name__))
        super().__init__({"id": name, "name": name, "kind": self.kind, **(meta or {})})
        self.policy = policy

    def respond_one(self, belief, *, context_id=None, context_meta=None) -> Response:
        return _coerce_response(self.policy.act(belief))


class CallableAdapter(Adapter):
    """A Python callable ``belief -> act string | (act, prompt) | Response``."""

    kind = "callable"

    def __init__(self, fn: Callable[[dict], Any], meta: Mapping[str, Any] | None = None):
        if not callable(fn):
            raise ConfigError(f"callable: expected a function belief -> act, got {type(fn).__name__}")
        name = f"{getattr(fn, '__module__', None) or 'python'}.{getattr(fn, '__qualname__', type(fn).__name__)}"
        super().__init__({"id": name, "name": name, "kind": self.kind, **(meta or {})})
        self.fn = fn

    def respond_one(self, belief, *, context_id=None, context_meta=None) -> Response:
        return _coerce_response(self.fn(belief))


def _coerce_response(out: Any) -> Response:
    """A :class:`Response` from what a policy or callable returned; ``TypeError`` otherwise."""
    if isinstance(out, Response):
        return out
    if isinstance(out, str):
        return Response(act=out)
    if isinstance(out, (tuple, list)) and len(out) == 2:
        act, prompt = out
        if isinstance(act, str) and (prompt is None or isinstance(prompt, str)):
            return Response(act=act, prompt=prompt)
    act = getattr(out, "act", None)
    if isinstance(act, str):
        prompt = getattr(out, "prompt", None)
        if prompt is None or isinstance(prompt, str):
            return Response(act=act, prompt=prompt, summary_action=getattr(out, "summary_action", None))
    raise TypeError(f"expected an act string, an (act, prompt) pair of strings or a Response, "
                    f"got {type(out).__name__}: {out!r:.80}")


# ----------------------------------------------------------------------------- spec strings
adapter_kinds: Registry[Adapter] = Registry("adapter kind", UnknownAdapterKind)

_OPTION_RE = re.compile(r"^[A-Za-z_]\w*=[^:]*$")
_CALLABLE_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True)
class PolicySpec:
    """A parsed policy spec string: ``kind``, its ``target`` (path, ``module:function``, ...)
    and ``options`` (the trailing ``:key=value`` parts)."""

    text: str
    kind: str
    target: str = ""
    options: dict[str, str] = field(default_factory=dict)

    def check_options(self, allowed: tuple[str, ...]) -> None:
        import difflib

        for key in self.options:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                valid = ", ".join(allowed) if allowed else "none"
                raise ConfigError(f"policy spec {self.text!r}: unknown option {key!r} for kind {self.kind!r}.{hint} "
                                  f"Valid options: {valid}")


def list_adapter_kinds() -> list[str]:
    """The registered adapter kinds."""
    return adapter_kinds.names()


def parse_spec(text: str) -> PolicySpec:
    """Parse a policy spec string (no file is opened, nothing is imported).

    Forms: ``handcrafted[:nlg_seed=N]``; ``PATH.npz[:nlg_seed=N]`` (or ``checkpoint:PATH``);
    ``module:function`` (or ``callable:module:function``); ``recorded:FILE``;
    ``pydial:CFG[:domain=D][:nlg=off][:seed=S][:root=DIR]``. Options are trailing
    ``:key=value`` parts. An unknown kind raises :class:`UnknownAdapterKind` naming the closest.
    """
    if not isinstance(text, str):
        raise ConfigError(f"policy spec: expected a string, got {type(text).__name__}")
    raw = text.strip()
    if not raw:
        raise ConfigError("policy spec: empty string (expected e.g. 'handcrafted', 'runs/ts-seed0/ckpt-001000.npz', "
                          "'mymodule:policy', 'recorded:answers.jsonl' or 'pydial:config.cfg')")
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
    if sep and prefix.lower() in adapter_kinds:
        return PolicySpec(raw, adapter_kinds.canonical(prefix), rest, options)
    if not sep and head.lower() in adapter_kinds:
        return PolicySpec(raw, adapter_kinds.canonical(head), "", options)
    if head.lower().endswith(".npz"):
        return PolicySpec(raw, "checkpoint", head, options)
    if _CALLABLE_RE.match(head):
        return PolicySpec(raw, "callable", head, options)
    if Path(head).exists():
        raise ConfigError(f"policy spec {raw!r}: {head!r} exists but is not a GP-SARSA checkpoint (.npz); "
                          "recorded responses are given as recorded:FILE, PyDial configs as pydial:CFG")
    adapter_kinds.canonical(prefix if sep else head)  # raises UnknownAdapterKind with the closest kind
    raise ConfigError(f"policy spec {raw!r}: cannot tell its kind")  # pragma: no cover


def load_adapter(spec: str | PolicySpec, *, pydial_root: str | os.PathLike | None = None) -> Adapter:
    """The adapter a policy spec string describes (loads the checkpoint, imports the module, ...)."""
    if not isinstance(spec, PolicySpec):
        spec = parse_spec(spec)
    factory = adapter_kinds.get(spec.kind)
    return factory(spec, pydial_root=pydial_root)


def as_adapter(obj: Any, *, pydial_root: str | os.PathLike | None = None) -> Adapter:
    """An :class:`Adapter` from a spec string/path, an adapter, a policy object or a callable."""
    if isinstance(obj, Adapter):
        return obj
    if isinstance(obj, (str, PolicySpec)):
        return load_adapter(obj, pydial_root=pydial_root)
    if isinstance(obj, os.PathLike):
        return load_adapter(os.fspath(obj), pydial_root=pydial_root)
    if callable(getattr(obj, "act", None)):
        return PolicyAdapter(obj)
    if callable(obj):
        return CallableAdapter(obj)
    raise ConfigError(f"policy: expected a policy spec string, an Adapter, a policy object with act(belief) or a "
                      f"callable, got {type(obj).__name__}")


def _int_option(spec: PolicySpec, key: str, default: int | None) -> int | None:
    v = spec.options.get(key)
    if v is None:
        return default
    if v.lower() in ("none", "off", "no"):
        return None
    try:
        n = int(v)
    except ValueError:
        raise ConfigError(f"policy spec {spec.text!r}: option {key} must be an integer or 'none', got {v!r}") from None
    if n < 0:
        raise ConfigError(f"policy spec {spec.text!r}: option {key} must be non-negative, got {n}")
    return n


# ----------------------------------------------------------------------------- built-in kinds
@adapter_kinds.register("handcrafted")
def _handcrafted(spec: PolicySpec, **_: Any) -> Adapter:
    from ..handcrafted import HandcraftedPolicy

    spec.check_options(("nlg_seed",))
    if spec.target:
        raise ConfigError(f"policy spec {spec.text!r}: handcrafted takes no argument, only options "
                          "(handcrafted:nlg_seed=N)")
    nlg_seed = _int_option(spec, "nlg_seed", 0)
    pol = HandcraftedPolicy(nlg_seed=nlg_seed)
    pid = "handcrafted" if nlg_seed == 0 else f"handcrafted-nlg{nlg_seed if nlg_seed is not None else 'none'}"
    meta = {"id": pid, "name": pol.name, "kind": "handcrafted", "policy": "handcrafted", "domain": pol.domain.name,
            "nlg_seed": nlg_seed, "confirm_threshold": pol.confirm_threshold}
    return PolicyAdapter(pol, meta)


@adapter_kinds.register("checkpoint")
def _checkpoint(spec: PolicySpec, **_: Any) -> Adapter:
    from ..checkpoint import CheckpointError, read_checkpoint
    from ..gp import GPSarsaPolicy

    spec.check_options(("nlg_seed",))
    if not spec.target:
        raise ConfigError(f"policy spec {spec.text!r}: expected checkpoint:PATH.npz")
    path = Path(spec.target)
    if not path.is_file():
        raise ConfigError(f"policy spec {spec.text!r}: checkpoint file {str(path)!r} not found")
    try:
        learner, meta_file = read_checkpoint(path)
        pol = GPSarsaPolicy.from_checkpoint_meta(learner, meta_file, learning=False)
    except CheckpointError as exc:
        raise ConfigError(f"policy spec {spec.text!r}: {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"policy spec {spec.text!r}: {path}: {exc}") from None
    training = meta_file.get("training") or {}
    if "nlg_seed" in spec.options:  # same learner, another generator seed
        pol = GPSarsaPolicy(pol.domain, learner=learner, learning=False, name=pol.name,
                            nlg_seed=_int_option(spec, "nlg_seed", 0))
    reward, seed, dialogues = training.get("reward"), training.get("seed"), training.get("dialogues")
    if reward is not None and seed is not None and dialogues is not None:
        pid = f"{reward}-seed{seed}-{int(dialogues):06d}"
    else:
        pid = path.stem
    meta: dict[str, Any] = {"id": pid, "name": pol.name, "kind": "checkpoint", "policy": training.get("policy", "gp"),
                            "domain": pol.domain.name}
    for key in ("reward", "seed"):
        if training.get(key) is not None:
            meta[key] = training[key]
    if dialogues is not None:
        meta["checkpoint"] = int(dialogues)
    if training.get("reward_signature"):
        meta["reward_signature"] = training["reward_signature"]
    meta.update(nlg_seed=pol.nlg_seed, path=source_info(path))
    return PolicyAdapter(pol, meta)


@adapter_kinds.register("callable")
def _callable(spec: PolicySpec, **_: Any) -> Adapter:
    spec.check_options(())
    if not _CALLABLE_RE.match(spec.target or ""):
        raise ConfigError(f"policy spec {spec.text!r}: expected module:function (an importable module and a "
                          "callable in it, e.g. mypackage.policies:answer)")
    module_name, _, attr = spec.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = ""
        import difflib

        close = difflib.get_close_matches(module_name.lower(), adapter_kinds.names(), n=1, cutoff=0.6)
        if close:
            hint = f" (did you mean the adapter kind {close[0] + ':'!r}?)"
        raise ConfigError(f"policy spec {spec.text!r}: cannot import module {module_name!r}{hint}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"policy spec {spec.text!r}: module {module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise ConfigError(f"policy spec {spec.text!r}: {spec.target} is a {type(obj).__name__}, not a callable")
    name = f"{module_name}.{attr}"
    meta: dict[str, Any] = {"id": name, "name": name, "kind": "callable", "target": spec.target}
    src = getattr(module, "__file__", None)
    if src and os.path.isfile(src):
        meta["path"] = source_info(src)
    return CallableAdapter(obj, meta)



