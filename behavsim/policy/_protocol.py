"""What a policy is to behavsim: a dialogue context in, a system act and/or a prompt out.

A context is a belief state, a dialogue history (turns with text), or both — the same moment of
one dialogue (:class:`behavsim.ContextSet`). What a model reads is its ``reads``: ``("belief",)``
for a modular policy (the default), ``("history",)`` for an end-to-end model, or both.

Two levels, one contract:

* a **policy object** obeys :class:`Policy` — a string ``name`` and ``act(belief) -> Response``
  (an object whose ``reads`` is ``("history",)`` is called ``act(history)``, one reading both
  ``act(belief, history=history)``); a plain callable of the same shape, returning an act, an
  ``(act, prompt)`` pair or a :class:`Response`, is accepted wherever a policy is;
* an :class:`Adapter` wraps any behaviour model (a policy object, a callable, a checkpoint file,
  a toolkit's policy, recorded answers, an end-to-end model) with the metadata that goes into its
  response table (``meta``: at least ``id``, ``name``, ``kind``) and answers one context at a time
  with :meth:`Adapter.respond_one` (an adapter reading histories gets ``history=`` too), or many
  at once with :meth:`Adapter.respond_batch` when it can (the same answers: the per-context path
  is the reference). A policy object may offer ``respond_batch(contexts, indices)`` too
  (:class:`PolicyAdapter` uses it), as the built-in GP-SARSA and handcrafted policies do.

An answer has an act, a prompt, or both: an end-to-end model may answer with text only
(``Response(act=None, prompt=...)``), which is not a failure. Answers must be deterministic:
the same context always gives the same :class:`Response`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .._errors import ConfigError

__all__ = [
    "Response",
    "READS",
    "reads_of",
    "Policy",
    "Adapter",
    "PolicyAdapter",
    "CallableAdapter",
    "coerce_response",
    "file_sha256",
    "source_info",
]


@dataclass(frozen=True)
class Response:
    """A policy's answer to one context: the system act string (``None``: a text-only answer of
    an end-to-end model), the prompt (``None`` without a generator), the summary action (``None``
    for policies without one) and ``raw``, the text the act and prompt were read from (``None``
    unless the model answers in free text, as a language model does). At least one of act and
    prompt is given."""

    act: str | None
    prompt: str | None = None
    summary_action: str | None = None
    raw: str | None = None


#: What a model can read of a context.
READS = ("belief", "history")


def reads_of(obj: Any, default: tuple[str, ...] = ("belief",)) -> tuple[str, ...]:
    """What ``obj`` (an adapter, a policy object or a callable) reads: its ``reads`` attribute,
    a non-empty tuple drawn from :data:`READS` (default: the belief state)."""
    reads = getattr(obj, "reads", None)
    if reads is None:
        return default
    if isinstance(reads, str):
        reads = (reads,)
    reads = tuple(reads)
    if not reads or any(r not in READS for r in reads):
        raise ConfigError(
            f"{type(obj).__name__}.reads: expected a non-empty tuple of {', '.join(map(repr, READS))}, got {reads!r}"
        )
    return reads


@runtime_checkable
class Policy(Protocol):
    """A policy object: a string ``name`` and a deterministic ``act(belief) -> Response``."""

    name: str

    def act(self, belief: dict) -> Response: ...


def coerce_response(out: Any) -> Response:
    """A :class:`Response` from what a policy or callable returned: a ``Response``, an act string,
    an ``(act, prompt)`` pair (``(None, prompt)``: text only), or any object with string ``act``
    (and optional ``prompt``, ``summary_action``) attributes; ``TypeError`` otherwise, and for an
    answer with neither an act nor a prompt."""
    if isinstance(out, Response):
        if out.act is None and out.prompt is None:
            raise TypeError("the answer has neither an act nor a prompt")
        return out
    if isinstance(out, str):
        return Response(act=out)
    if isinstance(out, (tuple, list)) and len(out) == 2:
        act, prompt = out
        if (act is None or isinstance(act, str)) and (prompt is None or isinstance(prompt, str)):
            if act is None and prompt is None:
                raise TypeError("the answer has neither an act nor a prompt")
            return Response(act=act, prompt=prompt)
    act = getattr(out, "act", None)
    if isinstance(act, str):
        prompt = getattr(out, "prompt", None)
        raw = getattr(out, "raw", None)
        if (prompt is None or isinstance(prompt, str)) and (raw is None or isinstance(raw, str)):
            return Response(act=act, prompt=prompt, summary_action=getattr(out, "summary_action", None), raw=raw)
    raise TypeError(
        f"expected an act string, an (act, prompt) pair of strings or a Response, got {type(out).__name__}: {out!r:.80}"
    )


def file_sha256(path: str | os.PathLike) -> str:
    """``sha256:<hex>`` of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def source_info(path: str | os.PathLike, **extra: Any) -> dict[str, Any]:
    """The ``path`` entry of an adapter's metadata: ``{"file": ..., "sha256": ...}`` plus ``extra``.

    Everything specific to one file lives under ``path`` because :func:`behavsim.compare` groups the
    checkpoints of one trial by all metadata except ``id``, ``checkpoint`` and ``path``.
    """
    return {"file": os.fspath(path), "sha256": file_sha256(path), **extra}


class Adapter:
    """One behaviour model answering belief states deterministically.

    Subclasses set ``kind`` and implement :meth:`respond_one`; ``meta`` holds at least ``id``,
    ``name`` and ``kind``. :func:`behavsim.respond` hands each call a fresh copy of the belief
    (keys sorted), so an adapter may modify what it is given. ``label`` names the adapter where a
    short human label is wanted (e.g. the source of collected contexts); it defaults to the id.

    ``reads`` says what the model reads of a context: ``("belief",)`` (the default: it is
    called ``respond_one(belief, context_id=..., context_meta=...)``), ``("history",)`` or both
    (it is also given ``history=``, the context's turns; ``belief`` may then be ``None``).
    :func:`behavsim.respond` refuses, before the first context, a set that has none of what the
    model reads (e.g. the grid, without histories, for an end-to-end model).
    """

    kind: str = "adapter"
    reads: tuple[str, ...] = ("belief",)

    def __init__(self, meta: Mapping[str, Any], *, label: str | None = None):
        meta = dict(meta)
        for key in ("id", "name"):
            if not isinstance(meta.get(key), str) or not meta[key]:
                raise ConfigError(f"adapter metadata: {key!r} must be a non-empty string, got {meta.get(key)!r}")
        meta["kind"] = meta.get("kind") or self.kind
        self.kind = meta["kind"]
        self.meta = meta
        self._label = label

    @property
    def id(self) -> str:
        return self.meta["id"]

    @property
    def name(self) -> str:
        return self.meta["name"]

    @property
    def label(self) -> str:
        return self._label or self.id

    def check_contexts(self, contexts: Any) -> None:
        """Refuse, before the first context, a context set this model cannot answer (e.g. built on
        another domain): raise a :class:`behavsim.ConfigError` naming both. Default: accept."""

    def prepare(self, contexts: Any) -> None:
        """Called once before a run over ``contexts`` (a :class:`behavsim.ContextSet`)."""

    def for_repeat(self, repeat: int) -> "Adapter":
        """The adapter that gives the ``repeat``-th answer to each context when a run asks every
        context several times (``respond(..., repeat=K)``: repeats ``0 .. K-1``; repeat 0 is the
        table's own answer). A deterministic model answers the same every time: the default
        returns ``self``. A model that samples (a language model) returns an adapter drawing with
        another seed, or asking again, for each ``repeat``."""
        return self

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Context in which :meth:`respond_one` runs (working directory, globals, ...)."""
        yield

    def respond_one(
        self, belief: dict, *, context_id: str | None = None, context_meta: Mapping[str, Any] | None = None
    ) -> Response:
        raise NotImplementedError

    def respond_batch(self, contexts: Any, indices: Sequence[int]) -> Sequence[Response | Exception] | None:
        """Many contexts at once: the answers to contexts ``indices`` of ``contexts`` (a
        :class:`behavsim.ContextSet`), in order, an exception in the place of a context it fails
        on — the same answers and errors :meth:`respond_one` gives one at a time, which stays the
        reference (``respond(..., per_context=True)``). :func:`behavsim.respond` calls it, in
        :meth:`session`, block by block instead of :meth:`prepare` and :meth:`respond_one`, with
        the contexts that have what the model reads; it must not modify them. ``None`` (the
        default): this adapter answers one context at a time."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, kind={self.kind!r})"


class PolicyAdapter(Adapter):
    """Any object of the :class:`Policy` protocol (``name``, ``act(belief)``).

    A policy with a boolean ``learning`` attribute answers greedily: ``learning`` is set to False
    for the run (:meth:`session`) and restored afterwards.
    """

    kind = "policy"

    def __init__(self, policy: Any, meta: Mapping[str, Any] | None = None, *, label: str | None = None):
        if not callable(getattr(policy, "act", None)):
            raise ConfigError(f"policy: expected an object with an act(belief) method, got {type(policy).__name__}")
        name = str(getattr(policy, "name", type(policy).__name__))
        super().__init__({"id": name, "name": name, "kind": self.kind, **(meta or {})}, label=label)
        self.policy = policy
        self.reads = reads_of(policy)

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        learning = getattr(self.policy, "learning", None)
        if isinstance(learning, bool):
            self.policy.learning = False
        try:
            yield
        finally:
            if isinstance(learning, bool):
                self.policy.learning = learning

    def respond_one(self, belief, *, context_id=None, context_meta=None, history=None) -> Response:
        return coerce_response(_call(self.policy.act, self.reads, belief, history))

    def respond_batch(self, contexts: Any, indices: Sequence[int]) -> Sequence[Response | Exception] | None:
        """The policy's own ``respond_batch(contexts, indices)`` when it has one (answers or
        exceptions, each answer coerced like ``act``'s; ``None``: one at a time), else ``None``."""
        batch = getattr(self.policy, "respond_batch", None)
        if not callable(batch):
            return None
        out = batch(contexts, indices)
        if out is None:
            return None
        out = list(out)
        distinct = {id(x): x for x in out}.values()  # a policy may give one answer object for many contexts
        if all(type(x) is Response and (x.act is not None or x.prompt is not None) for x in distinct):
            return out
        return [_coerced(x) for x in out]


def _coerced(out: Any) -> Response | Exception:
    """:func:`coerce_response` (an exception stays as it is), its ``TypeError`` returned in place
    of the answer."""
    if isinstance(out, Exception):
        return out
    try:
        return coerce_response(out)
    except TypeError as exc:
        return exc


class CallableAdapter(Adapter):
    """A Python callable ``belief -> act string | (act, prompt) | Response``."""

    kind = "callable"

    def __init__(self, fn: Callable[[dict], Any], meta: Mapping[str, Any] | None = None, *, label: str | None = None):
        if not callable(fn):
            raise ConfigError(f"callable: expected a function belief -> act, got {type(fn).__name__}")
        name = f"{getattr(fn, '__module__', None) or 'python'}.{getattr(fn, '__qualname__', type(fn).__name__)}"
        super().__init__({"id": name, "name": name, "kind": self.kind, **(meta or {})}, label=label)
        self.fn = fn
        self.reads = reads_of(fn)

    def respond_one(self, belief, *, context_id=None, context_meta=None, history=None) -> Response:
        return coerce_response(_call(self.fn, self.reads, belief, history))


def _call(fn: Callable[..., Any], reads: tuple[str, ...], belief: Any, history: Any) -> Any:
    """A policy object's ``act`` or a callable, given what it reads (see the module doc)."""
    if "history" not in reads:
        return fn(belief)
    if "belief" not in reads:
        return fn(history)
    return fn(belief, history=history)
