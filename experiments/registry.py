"""The registries of the study's stages and the report's sections: a :class:`behavsim.Registry`
filled from an entry-point group at its first use (the built-in ones are registered there too,
in ``setup.cfg``), so a package that builds on behavsim adds a stage or a section without a
change to behavsim; :meth:`OrderedPlugins.add` registers one from code. Listed in the order of
their ``order`` (ties by name)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Generic, Protocol, TypeVar

from behavsim import Registry

__all__ = ["OrderedPlugins"]


class _Ordered(Protocol):
    @property
    def order(self) -> int: ...


P = TypeVar("P", bound=_Ordered)


class OrderedPlugins(Registry[P], Generic[P]):
    """Items of type ``item_type`` by name (``name_of(item)``), loaded from the entry-point group
    ``group`` at the first look-up; an entry that cannot be loaded, or is not an ``item_type``, is
    left out with a warning (a broken plugin does not take the others down)."""

    def __init__(self, kind: str, group: str, item_type: type[P], name_of: Callable[[P], str]) -> None:
        super().__init__(kind)
        self.group = group
        self.item_type = item_type
        self.name_of = name_of
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for ep in metadata.entry_points(group=self.group):
            if ep.name.lower() in self._names:
                continue  # registered in code already
            try:
                item = ep.load()
            except Exception as exc:  # a broken plugin must not take the others down
                warnings.warn(f"{self.kind} {ep.name!r} ({ep.value}) could not be loaded: {exc}", RuntimeWarning)
                continue
            if not isinstance(item, self.item_type):
                warnings.warn(
                    f"{self.kind} {ep.name!r} ({ep.value}) is a {type(item).__name__}, not a {self.item_type.__name__}",
                    RuntimeWarning,
                )
                continue
            super().register(self.name_of(item), item)

    def add(self, item: P) -> P:
        """Register ``item`` under its own name (an error if the name is taken)."""
        if not isinstance(item, self.item_type):
            raise TypeError(f"expected a {self.item_type.__name__}, got {type(item).__name__}")
        self._load()
        return super().register(self.name_of(item), item)

    def remove(self, name: str) -> P:
        """Unregister the item ``name`` (one registered from code for a while, as a test does)."""
        canonical = self.canonical(name)
        self._names.pop(canonical.lower())
        return self._items.pop(canonical)

    def ordered(self) -> list[P]:
        """Every item, in the order of its ``order`` (ties by name)."""
        return sorted((self.get(n) for n in self.names()), key=lambda item: (item.order, self.name_of(item)))

    def register(self, name: str, factory: P | None = None):
        self._load()
        return super().register(name, factory)

    def canonical(self, name: str) -> str:
        self._load()
        return super().canonical(name)

    def names(self) -> list[str]:
        self._load()
        return super().names()

    def __contains__(self, name: object) -> bool:
        self._load()
        return super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self._load()
        return super().__iter__()
