"""Small helpers every package of behavsim shares: closest-name suggestions, package versions."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from importlib import metadata
from typing import Any

__all__ = ["closest_name", "did_you_mean", "suggestion_hint", "package_version"]


def closest_name(name: Any, valid: Iterable[Any], *, cutoff: float = 0.5) -> str | None:
    """The entry of ``valid`` closest to ``name`` (difflib ratio ≥ ``cutoff``), or ``None``."""
    close = difflib.get_close_matches(str(name), [str(v) for v in valid], n=1, cutoff=cutoff)
    return close[0] if close else None


def did_you_mean(name: Any, valid: Iterable[Any], *, cutoff: float = 0.5) -> str:
    """``" Did you mean 'x'?"`` for the closest valid name, or an empty string."""
    return suggestion_hint(closest_name(name, valid, cutoff=cutoff))


def suggestion_hint(suggestion: str | None) -> str:
    """``" Did you mean 'x'?"`` for a suggestion already found, or an empty string for none."""
    return f" Did you mean {suggestion!r}?" if suggestion else ""


def package_version(dist: str, default: str = "unknown") -> str:
    """The installed version of distribution ``dist``, or ``default`` when it is not installed."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return default
