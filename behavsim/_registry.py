"""A small registry of named items (usually factories): listable, rejects unknown names with the
closest one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from ._errors import UnknownName
from ._util import closest_name

T = TypeVar("T")  # what is registered: a factory (``Callable[..., Score]``) or a value

__all__ = ["Registry"]


class Registry(Generic[T]):
    """Maps case-insensitive names to items: factories (``Registry[Callable[..., Score]]``, with
    :meth:`create`) or values (``Registry[LearnerKind]``).

    ``kind`` names what is registered (``"score"``, ``"encoder"``) in error messages;
    ``error`` is the :class:`UnknownName` subclass raised for unknown names.
    """

    def __init__(self, kind: str, error: type[UnknownName] = UnknownName):
        self.kind = kind
        self.error = error
        self._items: dict[str, T] = {}
        self._names: dict[str, str] = {}  # lower-case key -> registered spelling

    def register(self, name: str, factory: T | None = None):
        """Register ``factory`` (any item) under ``name``; usable as a decorator."""

        def deco(f: T) -> T:
            key = name.lower()
            if key in self._names:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._items[name] = f
            self._names[key] = name
            return f

        return deco(factory) if factory is not None else deco

    def canonical(self, name: str) -> str:
        """The registered spelling of ``name``; raises the registry's error if unknown."""
        if not isinstance(name, str):
            raise TypeError(f"{self.kind} name must be a string, got {type(name).__name__}")
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

    def names(self) -> list[str]:
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)
