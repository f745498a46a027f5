"""Exceptions of the interaction-quality package, inside behavsim's hierarchy.

All derive from :class:`IQError` (a :class:`behavsim.BehavsimError`); each also derives from
the built-in class a caller would naturally catch (``ValueError`` for bad input, ``KeyError``
via :class:`behavsim.UnknownName` for unknown names, ``RuntimeError`` via
:class:`behavsim.ModelNotAvailable` for a missing model).
"""

from __future__ import annotations

from behavsim import BehavsimError, ModelNotAvailable, UnknownName

__all__ = ["IQError", "IQInputError", "IQDataError", "UnknownIQEstimator", "IQModelError"]


class IQError(BehavsimError):
    """Base class of every error raised by :mod:`policies.simulation.iq`."""


class IQInputError(IQError, ValueError):
    """A list of exchanges given to ``estimate`` / ``exchange_features`` is malformed."""


class IQDataError(IQError, ValueError):
    """An exchange-level CSV file is malformed; the message names file, row and column."""


class UnknownIQEstimator(IQError, UnknownName):
    """``get_iq_estimator`` was given a name that is not registered."""


class IQModelError(IQError, ModelNotAvailable):
    """A saved BiLSTM model is missing, incomplete or incompatible with this code."""
