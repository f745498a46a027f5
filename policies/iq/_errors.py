"""Exceptions of the interaction-quality package.

All derive from :class:`IQError`; each also derives from the built-in class a caller would
naturally catch (``ValueError`` for bad input, ``LookupError`` for unknown names), so code that
knows nothing of this package still handles them.
"""

from __future__ import annotations

__all__ = ["IQError", "IQInputError", "IQDataError", "UnknownIQEstimator", "IQModelError"]


class IQError(Exception):
    """Base class of every error raised by :mod:`policies.iq`."""


class IQInputError(IQError, ValueError):
    """A list of exchanges given to ``estimate`` / ``exchange_features`` is malformed."""


class IQDataError(IQError, ValueError):
    """An exchange-level CSV file is malformed; the message names file, row and column."""


class UnknownIQEstimator(IQError, LookupError):
    """``get_iq_estimator`` was given a name that is not registered."""

    def __str__(self) -> str:  # LookupError would otherwise print the repr of the message
        return str(self.args[0]) if self.args else ""


class IQModelError(IQError, ValueError):
    """A saved BiLSTM model is missing, incomplete or incompatible with this code."""
