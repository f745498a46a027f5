"""Interaction-quality (IQ) estimation for the R_IQ reward (``policies.simulation.rewards``): R_IQ = -T + (iq - 1) * 5.

Two estimators share one protocol, :class:`InteractionQualityEstimator` (``name`` and
``estimate(exchanges) -> int`` in 1..5), and one feature function, :func:`exchange_features`:

* ``"parameters"`` (default): :class:`ParameterIQEstimator`, a transparent formula over
  LEGO-style interaction parameters; pure Python, microseconds per call, no torch.
* ``"bilstm"``: :class:`BiLSTMIQEstimator`, a BiLSTM with self-attention after Ultes (2019),
  trained on an exchange-level CSV corpus; imports torch on first use only.

See ``docs/interaction_quality.md``.
"""

from __future__ import annotations

from policies.simulation.iq._bilstm import BiLSTMIQEstimator
from policies.simulation.iq._corpus import (
    CSV_COLUMNS,
    REQUIRED_COLUMNS,
    LabelledDialogue,
    read_exchange_csv,
    write_exchange_csv,
)
from policies.simulation.iq._errors import IQDataError, IQError, IQInputError, IQModelError, UnknownIQEstimator
from policies.simulation.iq._features import FEATURE_NAMES, WINDOW, exchange_features, validate_exchanges
from policies.simulation.iq._parameters import ParameterIQEstimator, iq_from_parameters
from policies.simulation.iq._registry import (
    DEFAULT_IQ_ESTIMATOR,
    InteractionQualityEstimator,
    get_iq_estimator,
    list_iq_estimators,
)

__all__ = [
    "InteractionQualityEstimator",
    "ParameterIQEstimator",
    "BiLSTMIQEstimator",
    "get_iq_estimator",
    "list_iq_estimators",
    "DEFAULT_IQ_ESTIMATOR",
    "exchange_features",
    "validate_exchanges",
    "iq_from_parameters",
    "FEATURE_NAMES",
    "WINDOW",
    "CSV_COLUMNS",
    "REQUIRED_COLUMNS",
    "LabelledDialogue",
    "read_exchange_csv",
    "write_exchange_csv",
    "IQError",
    "IQInputError",
    "IQDataError",
    "IQModelError",
    "UnknownIQEstimator",
]
