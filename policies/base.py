"""The policy protocol every behaviour model in behavsim obeys.

A policy maps a belief state (PyDial layout, see :mod:`policies.tracker`) to a
:class:`Response`: the system act string, the prompt (``None`` without a generator) and the
summary action (``None`` for policies without one). ``act`` must be deterministic on *any*
belief state: the same belief always gives the same response.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Iterable, Protocol, runtime_checkable

from behavsim import BehavsimError

__all__ = ["Response", "Policy", "check_policy", "PolicyCheckError"]


@dataclass(frozen=True)
class Response:
    act: str
    prompt: str | None = None
    summary_action: str | None = None


@runtime_checkable
class Policy(Protocol):
    name: str

    def act(self, belief: dict) -> Response: ...


class PolicyCheckError(BehavsimError, AssertionError):
    """A policy broke the protocol in :func:`check_policy`."""


def check_policy(policy: Policy, beliefs: Iterable[dict]) -> int:
    """Run ``policy`` twice on every belief: it must answer with a :class:`Response` whose
    ``act`` is a non-empty string, the same both times, and must not change the belief.
    Returns the number of beliefs checked."""
    if not isinstance(getattr(policy, "name", None), str):
        raise PolicyCheckError(f"{policy!r} has no string attribute 'name'")
    n = 0
    for i, b in enumerate(beliefs):
        before = copy.deepcopy(b)
        r1 = policy.act(b)
        r2 = policy.act(copy.deepcopy(before))
        if not isinstance(r1, Response) or not isinstance(r1.act, str) or not r1.act:
            raise PolicyCheckError(f"{policy.name}: belief #{i}: expected a Response with a "
                                   f"non-empty act string, got {r1!r}")
        if r1 != r2:
            raise PolicyCheckError(f"{policy.name}: belief #{i}: not deterministic: {r1!r} vs {r2!r}")
        if b != before:
            raise PolicyCheckError(f"{policy.name}: belief #{i}: act() modified the belief")
        n += 1
    return n
