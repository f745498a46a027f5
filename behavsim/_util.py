"""Small helpers every package of behavsim shares: closest-name suggestions, package versions."""

from __future__ import annotations

import ctypes
import difflib
import os
import signal
import sys
from collections.abc import Iterable
from importlib import metadata
from typing import Any

from ._interrupt import ignore_interrupts

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


def die_with_parent() -> None:
    """In a worker process: ask the kernel to kill this process when its parent dies (Linux's
    ``PR_SET_PDEATHSIG``, SIGKILL included), so that a killed ``train``/``respond``/``reproduce``
    leaves no orphans holding its run folder. Elsewhere (or if the call fails) nothing happens.
    If the parent is already gone, exit at once. SIGINT and SIGTERM are ignored: the parent
    stops its workers (a Ctrl-C reaches the whole process group; the command's handlers,
    inherited through fork, are for the parent)."""
    ignore_interrupts()
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover (no libc prctl)
        return
    if os.getppid() != parent or parent == 1:  # the parent died before the call
        os._exit(1)
