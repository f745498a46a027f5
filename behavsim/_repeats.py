"""Self-agreement: how often a policy gives the same answer when a context is asked again.

``respond(policy, contexts, repeat=K)`` asks every context ``K`` times (repeat ``r`` through
:meth:`behavsim.Adapter.for_repeat`); the table keeps every answer. Two answers to one context
*agree* when they are the same act (canonical form); an answer that failed agrees with another
failure that kept the same raw text (the model said the same unusable thing twice) or, without raw
text, the same error message — never with an act. A context's **agreement** is the fraction of
its ``K(K-1)/2`` pairs of answers that agree (1: all ``K`` the same, 0: all different); the
policy's **self-agreement TMR** is the mean over the contexts — the TMR of the policy with
itself, which is 1 for any deterministic policy. Answers are compared on acts only: prompts
(the utterance) may differ while the acts agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

__all__ = ["answer_key", "agreement", "self_agreement"]


def answer_key(act: str | None, error: str | None = None, raw: str | None = None) -> str:
    """What two answers are compared on: the canonical act, or for a failure its raw text (else
    its error), marked so that no act can equal it."""
    if act is not None:
        return "act:" + act
    return "failed-raw:" + raw if raw is not None else "failed:" + (error or "")


def agreement(keys: Sequence[str]) -> float:
    """The fraction of pairs among ``keys`` (one context's ``K >= 2`` answers) that are equal."""
    k = len(keys)
    if k < 2:
        raise ValueError(f"agreement needs at least two answers, got {k}")
    same = sum(c * (c - 1) // 2 for c in Counter(keys).values())
    return same / (k * (k - 1) // 2)


def self_agreement(per_context: Sequence[float]) -> float:
    """The mean of the per-context agreements (``nan`` for no context)."""
    return sum(per_context) / len(per_context) if per_context else float("nan")
