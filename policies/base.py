"""The policy protocol, re-exported from the core (:mod:`behavsim.policy`) where it lives.

A policy maps a belief state (PyDial layout, see :mod:`policies.tracker`) to a
:class:`~behavsim.Response`: the system act string, the prompt (``None`` without a generator) and
the summary action (``None`` for policies without one); ``act`` is deterministic on *any* belief
state. :func:`~behavsim.check_policy` checks a policy (or any policy spec) on belief states.
"""

from __future__ import annotations

from behavsim.policy import Policy, PolicyCheckError, Response, check_policy

__all__ = ["Response", "Policy", "check_policy", "PolicyCheckError"]
