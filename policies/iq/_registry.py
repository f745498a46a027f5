"""Registry of interaction-quality estimators: listable names, unknown names rejected."""

from __future__ import annotations

import difflib
from typing import Any, Protocol, runtime_checkable

from ._errors import UnknownIQEstimator

__all__ = ["InteractionQualityEstimator", "get_iq_estimator", "list_iq_estimators", "DEFAULT_IQ_ESTIMATOR"]


@runtime_checkable
class InteractionQualityEstimator(Protocol):
    """What every IQ estimator offers (the contract the R_IQ reward codes against)."""

    name: str

    def estimate(self, exchanges: list[dict]) -> int:  # IQ in 1..5 after the last exchange
        ...


DEFAULT_IQ_ESTIMATOR = "parameters"


def _make_parameters(**kw: Any):
    from ._parameters import ParameterIQEstimator

    if kw:
        raise TypeError(
            f"get_iq_estimator('parameters') takes no options, got {', '.join(sorted(kw))}"
        )
    return ParameterIQEstimator()


def _make_bilstm(path: Any = None, **kw: Any):
    from ._bilstm import BiLSTMIQEstimator
    from ._errors import IQModelError

    if kw:
        raise TypeError(f"get_iq_estimator('bilstm') takes only path=..., got {', '.join(sorted(kw))}")
    if path is None:
        raise IQModelError(
            "get_iq_estimator('bilstm') needs path=<directory written by BiLSTMIQEstimator.save()>"
        )
    return BiLSTMIQEstimator.load(path)


_REGISTRY = {
    "parameters": (_make_parameters, "rule-based formula over LEGO-style interaction parameters (default)"),
    "bilstm": (_make_bilstm, "BiLSTM with self-attention after Ultes (2019); needs path= of a saved model"),
}


def list_iq_estimators() -> dict[str, str]:
    """Registered names and a one-line description of each."""
    return {name: desc for name, (_, desc) in sorted(_REGISTRY.items())}


def get_iq_estimator(name: str = DEFAULT_IQ_ESTIMATOR, **kw: Any) -> InteractionQualityEstimator:
    """The IQ estimator registered as ``name`` (``"parameters"`` or ``"bilstm"``, path=...)."""
    if not isinstance(name, str) or name not in _REGISTRY:
        valid = sorted(_REGISTRY)
        close = difflib.get_close_matches(str(name).lower(), valid, n=1, cutoff=0.0)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownIQEstimator(
            f"name: unknown IQ estimator {name!r}.{hint} Valid names: {', '.join(valid)}"
        )
    factory, _ = _REGISTRY[name]
    return factory(**kw)
