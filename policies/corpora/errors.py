"""What reading a logged dialogue or a corpus can refuse: :class:`LogFormatError` (a problem named
with its file and place) and :func:`reject_non_finite` (NaN and infinities in JSON)."""

from __future__ import annotations

from typing import Any

from behavsim import TableFormatError

__all__ = ["LogFormatError", "reject_non_finite"]


class LogFormatError(TableFormatError):
    """A logged belief state, a line of a JSONL log or a corpus is not usable; the message names where."""


def reject_non_finite(name: str) -> Any:
    """``json.loads(..., parse_constant=reject_non_finite)``: NaN and infinities are refused."""
    raise ValueError(f"non-finite number {name} is not allowed")
