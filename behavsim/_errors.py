"""The exception hierarchy of behavsim.

Every error raised on bad user input derives from :class:`BehavsimError`, so callers can catch
one class; each also derives from the matching built-in (``ValueError``, ``KeyError``, ...)
so generic handlers keep working.
"""

from __future__ import annotations

from typing import Any

from ._util import suggestion_hint

__all__ = [
    "BehavsimError",
    "ActParseError",
    "UnknownName",
    "UnknownScore",
    "UnknownEncoder",
    "ModelNotAvailable",
    "ContextSetMismatch",
    "TableFormatError",
    "ConfigError",
]


class BehavsimError(Exception):
    """Base class of all behavsim errors."""

    def __reduce__(self) -> Any:
        # an error raised in a task of another process crosses back pickled: rebuilt from the
        # arguments of its own __init__ where it keeps them (``_args``)
        args = getattr(self, "_args", None)
        return (self.__class__, args) if args is not None else super().__reduce__()


#: Characters shown on each side of the problem when a long act cannot be parsed.
_SHOWN = 60


class ActParseError(BehavsimError, ValueError):
    """A dialogue-act string is malformed; the message names the string and the position."""

    def __init__(self, text: str, position: int, problem: str):
        self.text = text
        self.position = position
        self.problem = problem
        self._args = (text, position, problem)  # for pickling (errors of tasks in other processes)
        if len(text) <= 2 * _SHOWN + 20:
            pointer = " " * (position + 2) + "^"  # under the repr, after its opening quote
            super().__init__(
                f"cannot parse dialogue act {text!r} at position {position}: {problem}\n {text!r}\n{pointer}"
            )
            return
        # a long act is shown only around the problem, once
        start, end = max(0, position - _SHOWN), min(len(text), position + _SHOWN)
        shown = ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
        pointer = " " * (position - start + (1 if start else 0) + 2) + "^"
        super().__init__(
            f"cannot parse dialogue act of {len(text):,} characters at position {position}: {problem}\n"
            f" {shown!r}\n{pointer}"
        )


class UnknownName(BehavsimError, KeyError):
    """A name was looked up in a registry that does not hold it."""

    def __init__(self, kind: str, name: str, valid: list[str], suggestion: str | None):
        self.kind = kind
        self.name = name
        self.valid = valid
        self.message = f"unknown {kind} {name!r}.{suggestion_hint(suggestion)} Valid {kind}s: {', '.join(valid)}"
        self._args = (kind, name, valid, suggestion)
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return self.message


class UnknownScore(UnknownName):
    """An unknown similarity-score name."""


class UnknownEncoder(UnknownName):
    """An unknown text-encoder name."""


class ModelNotAvailable(BehavsimError, RuntimeError):
    """A model (weights) or a data set that behavsim needs is not installed on this machine."""


class ContextSetMismatch(BehavsimError, ValueError):
    """Two response tables were produced on different context sets."""


class TableFormatError(BehavsimError, ValueError):
    """A response-table file is damaged, foreign or of an unsupported version."""


class ConfigError(BehavsimError, ValueError):
    """A parameter has a value outside what is allowed."""
