"""Dialogue rewards of the paper: task success (R_TS) and interaction quality (R_IQ).

The environment already gives −1 per turn; a reward object supplies the **final component**
added at the end of a dialogue, so that the return of a dialogue of ``T`` turns is

* ``"ts"`` — ``R_TS = −T + 20·1[success]``  (``info["success"]``);
* ``"iq"`` — ``R_IQ = −T + (iq − 1)·5``, ``iq ∈ {1..5}`` estimated after the final turn by an
  interaction-quality estimator (default ``policies.simulation.iq.get_iq_estimator("parameters")``) from
  the environment's ``info["exchanges"]``.

Names resolve through a small registry (:func:`get_reward`, :func:`list_rewards`); unknown
names raise :class:`UnknownReward` naming the closest valid one.

>>> r = get_reward("ts")
>>> r.final_reward({"success": True, "exchanges": []})
20.0
>>> r.dialogue_return(turns=5, info={"success": True})
15.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from behavsim import Registry, UnknownName
from policies.simulation.iq import get_iq_estimator

__all__ = [
    "Reward",
    "TaskSuccessReward",
    "InteractionQualityReward",
    "UnknownReward",
    "get_reward",
    "list_rewards",
    "final_iq",
]


class UnknownReward(UnknownName):
    """A reward name is not registered (a ``KeyError``/``LookupError`` and a ``BehavsimError``)."""


@runtime_checkable
class Reward(Protocol):
    """What the training runner needs from a reward."""

    @property
    def name(self) -> str: ...

    @property
    def signature(self) -> str: ...

    def final_reward(self, info: Mapping[str, Any], *, iq: int | None = None) -> float: ...

    def dialogue_return(self, turns: int, info: Mapping[str, Any], *, iq: int | None = None) -> float: ...


def _check_turns(turns: Any) -> int:
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 0:
        raise ValueError(f"turns: expected a non-negative integer, got {turns!r}")
    return turns


def final_iq(estimator: Any, info: Mapping[str, Any]) -> int:
    """The estimator's IQ (1..5) after the last exchange of ``info["exchanges"]``."""
    try:
        exchanges = info["exchanges"]
    except (KeyError, TypeError):
        raise ValueError("info: expected the environment's final info with key 'exchanges'") from None
    iq = estimator.estimate(exchanges)
    if isinstance(iq, bool) or int(iq) != iq or not 1 <= int(iq) <= 5:
        raise ValueError(f"IQ estimator {getattr(estimator, 'name', estimator)!r} returned {iq!r}, expected 1..5")
    return int(iq)


@dataclass(frozen=True)
class TaskSuccessReward:
    """``R_TS = −T + success_reward · 1[success]`` (paper: 20)."""

    success_reward: float = 20.0
    name: ClassVar[str] = "ts"
    needs_iq: ClassVar[bool] = False

    @property
    def signature(self) -> str:
        return f"reward:ts|turn:-1|success:{self.success_reward:g}"

    def final_reward(self, info: Mapping[str, Any], *, iq: int | None = None) -> float:
        try:
            success = info["success"]
        except (KeyError, TypeError):
            raise ValueError("info: expected the environment's final info with key 'success'") from None
        return self.success_reward if bool(success) else 0.0

    def dialogue_return(self, turns: int, info: Mapping[str, Any], *, iq: int | None = None) -> float:
        return -float(_check_turns(turns)) + self.final_reward(info, iq=iq)


@dataclass(frozen=True)
class InteractionQualityReward:
    """``R_IQ = −T + (iq − 1) · iq_weight`` (paper: 5), iq from an IQ estimator at the last turn."""

    estimator_name: str = "parameters"
    iq_weight: float = 5.0
    name: ClassVar[str] = "iq"
    needs_iq: ClassVar[bool] = True
    _estimator: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._estimator is None:
            object.__setattr__(self, "_estimator", get_iq_estimator(self.estimator_name))

    @property
    def estimator(self) -> Any:
        return self._estimator

    @property
    def signature(self) -> str:
        est = getattr(self._estimator, "signature", self.estimator_name)
        return f"reward:iq|turn:-1|weight:{self.iq_weight:g}|{est}"

    def final_reward(self, info: Mapping[str, Any], *, iq: int | None = None) -> float:
        """``(iq − 1)·weight``; pass ``iq`` when it is already known to skip the estimator."""
        if iq is None:
            iq = final_iq(self._estimator, info)
        elif isinstance(iq, bool) or int(iq) != iq or not 1 <= int(iq) <= 5:
            raise ValueError(f"iq: expected an integer in 1..5, got {iq!r}")
        return (int(iq) - 1) * self.iq_weight

    def dialogue_return(self, turns: int, info: Mapping[str, Any], *, iq: int | None = None) -> float:
        return -float(_check_turns(turns)) + self.final_reward(info, iq=iq)


_REGISTRY: Registry[Callable[..., Reward]] = Registry("reward", UnknownReward)
_REGISTRY.register("ts", TaskSuccessReward)
_REGISTRY.register("iq", InteractionQualityReward)


def list_rewards() -> list[str]:
    """Registered reward names."""
    return sorted(_REGISTRY.names())


def get_reward(name: str, **kwargs: Any) -> Reward:
    """The reward registered as ``name`` (``"ts"`` or ``"iq"``, case-insensitive), built with
    ``kwargs``; an unknown name raises :class:`UnknownReward` naming the closest valid one."""
    return _REGISTRY.create(name, **kwargs)
