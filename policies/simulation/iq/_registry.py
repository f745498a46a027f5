"""Registry of interaction-quality estimators: listable names, unknown names rejected."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from behavsim import Registry
from policies.simulation.iq._bilstm import BiLSTMIQEstimator
from policies.simulation.iq._errors import IQModelError, UnknownIQEstimator
from policies.simulation.iq._parameters import ParameterIQEstimator

__all__ = ["InteractionQualityEstimator", "get_iq_estimator", "list_iq_estimators", "DEFAULT_IQ_ESTIMATOR"]


@runtime_checkable
class InteractionQualityEstimator(Protocol):
    """What every IQ estimator offers (the contract the R_IQ reward codes against)."""

    name: str

    def estimate(self, exchanges: list[dict]) -> int:  # IQ in 1..5 after the last exchange
        ...


DEFAULT_IQ_ESTIMATOR = "parameters"

_REGISTRY: Registry[Callable[..., InteractionQualityEstimator]] = Registry("IQ estimator", UnknownIQEstimator)
_DESCRIPTIONS: dict[str, str] = {}


def _register(name: str, description: str):
    def deco(factory):
        _DESCRIPTIONS[name] = description
        return _REGISTRY.register(name, factory)

    return deco


@_register("parameters", "rule-based formula over LEGO-style interaction parameters (default)")
def _make_parameters(**kw: Any):
    if kw:
        raise TypeError(f"get_iq_estimator('parameters') takes no options, got {', '.join(sorted(kw))}")
    return ParameterIQEstimator()


@_register("bilstm", "BiLSTM with self-attention after Ultes (2019); needs path= of a saved model")
def _make_bilstm(path: Any = None, **kw: Any):
    if kw:
        raise TypeError(f"get_iq_estimator('bilstm') takes only path=..., got {', '.join(sorted(kw))}")
    if path is None:
        raise IQModelError("get_iq_estimator('bilstm') needs path=<directory written by BiLSTMIQEstimator.save()>")
    return BiLSTMIQEstimator.load(path)


def list_iq_estimators() -> dict[str, str]:
    """Registered names (default first) and a one-line description of each."""
    return {name: _DESCRIPTIONS[name] for name in _REGISTRY.names()}


def get_iq_estimator(name: str = DEFAULT_IQ_ESTIMATOR, **kw: Any) -> InteractionQualityEstimator:
    """The IQ estimator registered as ``name``: ``"parameters"`` (default) or ``"bilstm"`` (``path=``).

    Names are case-insensitive; an unknown name raises :class:`UnknownIQEstimator` (a
    ``KeyError``) naming the closest registered one.
    """
    return _REGISTRY.create(name, **kw)
