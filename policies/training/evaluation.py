"""Evaluation of dialogue policies in the simulated environment (paper, Table 1): one dialogue
of a policy (:func:`run_dialogue`), an evaluation on fixed dialogues (:func:`evaluate_policy`:
greedy or sampling, no learning, the same user goals for every checkpoint and trial), the seeds of
training and evaluation dialogues, and Table 1 from metric rows (:func:`table1`).

Used by the trainer (:mod:`policies.training.train`) at every checkpoint and by anything that
measures a policy's task success (``behavsim train --policy handcrafted``, the end-to-end model).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.simulation.env import DialogueEnv
from policies.simulation.iq import get_iq_estimator
from policies.simulation.rewards import get_reward

__all__ = [
    "EVAL_SEED",
    "EvalResult",
    "run_dialogue",
    "evaluate_policy",
    "eval_dialogue_seed",
    "train_dialogue_seed",
    "table1",
]


#: Default seed of the evaluation dialogues (shared by every trial and checkpoint).
EVAL_SEED = 20_190_801


def _seed_int(*words: int) -> int:
    return int(np.random.SeedSequence([int(w) for w in words]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def eval_dialogue_seed(j: int, eval_seed: int = EVAL_SEED) -> int:
    """Environment seed of evaluation dialogue ``j`` (the same for every trial and checkpoint)."""
    return _seed_int(eval_seed, 3, j)


def train_dialogue_seed(seed: int, i: int) -> int:
    """Environment seed of training dialogue ``i`` (0-based) of the trial with ``seed``."""
    return _seed_int(seed, 2, i)


@dataclass
class EvalResult:
    """Per-dialogue outcomes of an evaluation and their means (TSR, AIQ, ADL, mean reward)."""

    success: list[bool]
    iq: list[int]
    turns: list[int]
    rewards: list[float]

    @property
    def tsr(self) -> float:
        return float(np.mean(self.success)) if self.success else math.nan

    @property
    def aiq(self) -> float:
        return float(np.mean(self.iq)) if self.iq else math.nan

    @property
    def adl(self) -> float:
        return float(np.mean(self.turns)) if self.turns else math.nan

    @property
    def mean_reward(self) -> float:
        return float(np.mean(self.rewards)) if self.rewards else math.nan

    def summary(self) -> dict[str, float]:
        return {"tsr": self.tsr, "aiq": self.aiq, "adl": self.adl, "mean_reward": self.mean_reward}


def run_dialogue(
    env: Any, policy: Any, seed: int, *, explore: bool = False, beliefs: list | None = None
) -> tuple[list, list[int], float, dict]:
    """One dialogue of ``policy`` in ``env`` (reset with ``seed``).

    Returns ``(belief vectors, action indices, sum of the environment's rewards, final info)``;
    vectors are recorded only for GP policies (``policy.decide``), the list is empty otherwise.
    ``beliefs``, if given, receives every belief state the policy acted on (one per turn).
    """
    belief, info = env.reset(seed=seed)
    mask = info["action_mask"]
    vecs: list = []
    acts: list[int] = []
    total = 0.0
    decide = getattr(policy, "decide", None)
    if decide is not None:
        policy.learning = explore
    choose = getattr(policy, "summary_action", None)
    if decide is None and choose is None:  # any protocol policy whose Response names a summary action

        def choose(b: dict) -> str:
            summary = policy.act(b).summary_action
            if summary is None:
                raise TypeError(
                    f"policy {getattr(policy, 'name', policy)!r} gives no summary action; the environment needs one"
                )
            return summary

    while True:
        if beliefs is not None:
            beliefs.append(belief)
        if decide is not None:
            a, v = decide(belief, mask)
            vecs.append(v)
            acts.append(a)
            summary = env.actions[a]
        else:
            assert choose is not None  # defined above when the policy has no decide
            summary = choose(belief)
        belief, r, terminated, truncated, info = env.step(summary)
        total += r
        mask = info["action_mask"]
        if terminated or truncated:
            return vecs, acts, total, info


def evaluate_policy(
    policy: Any,
    n_dialogues: int,
    *,
    reward: Any = "ts",
    eval_seed: int = EVAL_SEED,
    iq_estimator: Any = "parameters",
    env: Any = None,
    scale: float = 0.0,
) -> EvalResult:
    """Evaluation (no learning) on ``n_dialogues`` fixed dialogues: greedy (``scale=0``), or, for
    a GP-SARSA policy, sampling ``Q ~ N(mean, (scale·std)²)`` as PyDial's tests do (``scale=1``)
    from a generator seeded per dialogue by ``eval_seed`` (the same draws at every checkpoint)."""
    reward = get_reward(reward) if isinstance(reward, str) else reward
    est = get_iq_estimator(iq_estimator) if isinstance(iq_estimator, str) else iq_estimator
    env = env if env is not None else DialogueEnv()
    learning = getattr(policy, "learning", None)
    sampling = scale > 0 and hasattr(policy, "eval_scale")
    saved = (policy.eval_scale, policy._eval_rng) if sampling else None
    res = EvalResult([], [], [], [])
    try:
        for j in range(n_dialogues):
            if sampling:
                policy.eval_scale = float(scale)
                policy._eval_rng = np.random.default_rng(np.random.SeedSequence([int(eval_seed), 5, j]))
            _, _, total, info = run_dialogue(env, policy, eval_dialogue_seed(j, eval_seed), explore=False)
            iq = int(est.estimate(info["exchanges"]))
            res.success.append(bool(info["success"]))
            res.iq.append(iq)
            res.turns.append(int(info["turns"]))
            res.rewards.append(total + reward.final_reward(info, iq=iq))
    finally:
        if learning is not None:
            policy.learning = learning
        if saved is not None:
            policy.eval_scale, policy._eval_rng = saved
    return res


def table1(rows: Sequence[dict[str, Any]], at: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """The paper's Table 1 from metric rows: per checkpoint (``at``, default all) and reward,
    TSR, AIQ and ADL averaged over the seeds (``n_seeds`` says over how many)."""
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((int(r["dialogues"]), str(r["reward"])), []).append(r)
    points = sorted({n for n, _ in groups}) if at is None else [int(n) for n in at]
    out = []
    for n in points:
        for reward in sorted({rw for m, rw in groups if m == n}):
            g = groups[(n, reward)]
            out.append(
                {
                    "dialogues": n,
                    "reward": reward,
                    "n_seeds": len(g),
                    **{k: float(np.mean([float(r[k]) for r in g])) for k in ("tsr", "aiq", "adl")},
                }
            )
    return out
