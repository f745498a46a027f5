"""A small registry of named items (usually factories): listable, rejects unknown names with the
closest one, and optionally filled from an entry-point group by the packages that build on behavsim."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any, Generic, TypeVar

from ._errors import UnknownName
from ._util import closest_name

T = TypeVar("T")  # what is registered: a factory (``Callable[..., Score]``) or a value

__all__ = ["Registry"]


class Registry(Generic[T]):
    """Maps case-insensitive names to items: factories (``Registry[Callable[..., Score]]``, with
    :meth:`create`) or values (``Registry[LearnerKind]``).

    ``kind`` names what is registered (``"score"``, ``"encoder"``) in error messages;
    ``error`` is the :class:`UnknownName` subclass raised for unknown names. With
    ``entry_points`` (a group such as ``"behavsim.scores"``), every entry point of that group that
    an installed distribution declares is registered under its name at the first look-up, after
    the items registered in code (a name registered in code wins; an entry point that fails to
    load is skipped with a warning naming it, so one broken package cannot take the others down).
    """

    def __init__(self, kind: str, error: type[UnknownName] = UnknownName, *, entry_points: str | None = None):
        self.kind = kind
        self.error = error
        self.entry_point_group = entry_points
        self._loaded = entry_points is None
        self._items: dict[str, T] = {}
        self._names: dict[str, str] = {}  # lower-case key -> registered spelling
        self._sources: dict[str, str] = {}  # registered spelling -> the entry point it came from

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        assert self.entry_point_group is not None
        for ep in sorted(metadata.entry_points(group=self.entry_point_group), key=lambda e: e.name):
            if ep.name.lower() in self._names:
                continue  # registered in code already
            try:
                item = ep.load()
            except Exception as exc:  # a broken plugin must not take the others down
                warnings.warn(
                    f"{self.kind} {ep.name!r} ({ep.value}) could not be loaded: {exc}", RuntimeWarning, stacklevel=3
                )
                continue
            self._add(ep.name, item)
            self._sources[ep.name] = f"{ep.value} ({ep.dist.name if ep.dist else 'entry point'})"

    def _add(self, name: str, item: T) -> None:
        key = name.lower()
        if key in self._names:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item
        self._names[key] = name

    def register(self, name: str, factory: T | None = None):
        """Register ``factory`` (any item) under ``name``; usable as a decorator."""

        def deco(f: T) -> T:
            self._add(name, f)
            return f

        return deco(factory) if factory is not None else deco

    def canonical(self, name: str) -> str:
        """The registered spelling of ``name``; raises the registry's error if unknown."""
        if not isinstance(name, str):
            raise TypeError(f"{self.kind} name must be a string, got {type(name).__name__}")
        self._load()
        key = name.lower()
        if key not in self._names:
            close = closest_name(key, self._names, cutoff=0.5)
            raise self.error(self.kind, name, self.names(), self._names[close] if close is not None else None)
        return self._names[key]

    def get(self, name: str) -> T:
        return self._items[self.canonical(name)]

    def create(self, name: str, **options) -> Any:
        """``get(name)(**options)``: a registered factory called."""
        factory: Callable[..., Any] = self.get(name)  # type: ignore[assignment]
        return factory(**options)

    def source(self, name: str) -> str | None:
        """Where a registered item came from: ``"module:attr (distribution)"`` for an entry point,
        None for one registered in code."""
        return self._sources.get(self.canonical(name))

    def names(self) -> list[str]:
        self._load()
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        self._load()
        return isinstance(name, str) and name.lower() in self._names

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(self._items)
