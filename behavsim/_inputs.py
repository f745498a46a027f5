"""What the API takes: objects, or the paths of the files they were saved to.

Every public function that takes response tables or a context set also takes their paths
(``str`` or ``os.PathLike``); these helpers load them (a damaged file raises
:class:`~behavsim.TableFormatError` naming it) and refuse anything else in one line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ._contexts import ContextSet
from ._errors import ConfigError
from ._tables import ResponseTable

__all__ = ["is_path", "as_table", "as_tables", "as_table_map", "as_contexts", "as_optional_contexts", "PathLike"]

PathLike = str | os.PathLike


def is_path(obj: Any) -> bool:
    return isinstance(obj, (str, os.PathLike))


def as_table(obj: Any, name: str = "tables") -> ResponseTable:
    """A :class:`ResponseTable`, or the one saved at the path ``obj``."""
    if isinstance(obj, ResponseTable):
        return obj
    if is_path(obj):
        return ResponseTable.load(obj)
    raise ConfigError(
        f"{name}: expected behavsim.ResponseTable objects or paths of saved tables (.jsonl/.parquet), "
        f"got {type(obj).__name__}"
    )


def as_tables(objs: Any, name: str = "tables") -> list[ResponseTable]:
    """A list of :class:`ResponseTable` from tables and/or their paths (a sequence, not one path)."""
    if is_path(objs) or isinstance(objs, ResponseTable):
        raise ConfigError(
            f"{name}: expected a list of response tables or their paths, got one {type(objs).__name__} ({objs!s:.80})"
        )
    try:
        items = list(objs)
    except TypeError:
        raise ConfigError(
            f"{name}: expected a list of response tables or their paths, got {type(objs).__name__}"
        ) from None
    return [as_table(t, name) for t in items]


def as_table_map(objs: Any, name: str = "tables") -> dict[str, ResponseTable]:
    """Tables by policy id, from a mapping id -> table (or path) or a sequence of tables (or paths)."""
    if isinstance(objs, Mapping):
        return {str(k): as_table(t, name) for k, t in objs.items()}
    return {t.id: t for t in as_tables(objs, name)}


def as_contexts(obj: Any, name: str = "contexts") -> ContextSet:
    """A :class:`ContextSet`, or the one saved at the path ``obj``."""
    if isinstance(obj, ContextSet):
        return obj
    if is_path(obj):
        return ContextSet.load(obj)
    raise ConfigError(
        f"{name}: expected a behavsim.ContextSet, got {type(obj).__name__}; give a context set or the path of a "
        "saved one (.jsonl/.parquet)"
    )


def as_optional_contexts(obj: Any, name: str = "contexts") -> ContextSet | None:
    return None if obj is None else as_contexts(obj, name)
