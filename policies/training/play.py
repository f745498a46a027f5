"""Dialogues in the environment driven by any policy's acts — modular or end-to-end — and their
task success, measured alike for both.

:func:`play_dialogues` plays ``dialogues`` seeded dialogues of :class:`policies.simulation.env.DialogueEnv`
(dialogue ``j`` reset with the evaluation seed of :func:`policies.training.evaluation.eval_dialogue_seed`, so
every policy meets the same users and goals). At every system turn the policy is asked with what
it reads — the belief state, or the history with its text (:class:`~.history.DialogueText`) —
and its summary action drives the environment when it has one the environment knows, else its
act (PyDial's agent: an end-to-end model's act is played as it is). A policy that reads histories
and offers ``answer_histories(histories)`` (e.g. ``e2e:DIR``) answers all running dialogues' turns
at once. A failed answer ends its dialogue as a failure (counted in ``failed_turns``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from behavsim import ConfigError, canonical_copy
from behavsim.policy import answer_context, as_adapter, reads_of
from policies.simulation.domain import resolve_domain
from policies.simulation.env import DialogueEnv
from policies.simulation.history import DialogueText
from policies.training.evaluation import EVAL_SEED, eval_dialogue_seed

__all__ = ["PlayResult", "play_dialogues", "dialogue_groups"]


@dataclass
class PlayResult:
    """Per-dialogue outcomes (task success, turns) and failures of a policy's answers."""

    policy: str
    success: list[bool] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    failed_turns: int = 0
    first_failure: str | None = None

    @property
    def tsr(self) -> float:
        return sum(self.success) / len(self.success) if self.success else float("nan")

    @property
    def adl(self) -> float:
        return sum(self.turns) / len(self.turns) if self.turns else float("nan")


class _Dialogue:
    """One dialogue being played: its environment, its words, the belief and info of its last step."""

    def __init__(self, env: Any, text: Any, seed: int) -> None:
        self.env, self.text = env, text
        self.index = 0
        self.belief, info = env.reset(seed=seed)
        text.reset(seed, info)
        self.info = info
        self.done = False


def play_dialogues(
    policy: Any,
    dialogues: int,
    *,
    eval_seed: int | None = None,
    domain: Any = None,
    env_options: dict[str, Any] | None = None,
    batch: int = 64,
) -> PlayResult:
    """Play ``dialogues`` evaluation dialogues with ``policy`` (a spec string, an adapter, a policy
    object or a callable); see the module doc."""
    domain = resolve_domain(domain)
    adapter = as_adapter(policy, domain=domain)
    reads = reads_of(adapter)
    batched = getattr(adapter, "answer_histories", None) if "history" in reads and "belief" not in reads else None
    width = max(1, int(batch)) if batched is not None else 1
    seed0 = EVAL_SEED if eval_seed is None else int(eval_seed)
    out = PlayResult(adapter.id)
    with adapter.session():
        for group in dialogue_groups(
            int(dialogues), width, lambda j: eval_dialogue_seed(j, seed0), domain, env_options
        ):
            while True:
                live = [d for d in group if not d.done]
                if not live:
                    break
                if batched is not None:
                    answers = batched([d.text.turns for d in live])
                else:
                    answers = []
                    for d in live:
                        try:
                            answers.append(answer_context(adapter, canonical_copy(d.belief), d.text.turns))
                        except Exception as exc:  # recorded as a failed turn
                            answers.append(exc)
                for d, r in zip(live, answers):
                    _advance(d, r, out)
            for d in group:
                out.success.append(bool(d.info.get("success")) and not getattr(d, "failed", False))
                out.turns.append(int(d.info["turns"]))
    return out


def dialogue_groups(
    dialogues: int, width: int, seed_of: Callable[[int], int], domain: Any, env_options: dict[str, Any] | None
) -> Iterator[list[_Dialogue]]:
    """Dialogues ``0 .. dialogues-1`` in groups of ``width`` to play side by side, dialogue ``j``
    reset with ``seed_of(j)``; one environment per place in a group, reused by the next group."""
    envs: list[tuple[Any, Any]] = []
    for start in range(0, dialogues, width):
        group = []
        for k, j in enumerate(range(start, min(dialogues, start + width))):
            if k == len(envs):
                env = DialogueEnv(domain, **(env_options or {}))
                envs.append((env, DialogueText(env)))
            group.append(_Dialogue(*envs[k], seed_of(j)))
            group[-1].index = j
        yield group


def _advance(d: _Dialogue, r: Any, out: PlayResult) -> None:
    env = d.env
    alone = not isinstance(r, Exception) and r.act is None and r.summary_action is None
    if alone and env.closing:  # words alone after the user's bye(): the agent says bye() whatever was chosen
        step = env.step_closing()
    elif isinstance(r, Exception) or alone:
        out.failed_turns += 1
        if out.first_failure is None:
            out.first_failure = str(r) if isinstance(r, Exception) else "a text-only answer (no act to play)"
        d.done, d.failed = True, True  # type: ignore[attr-defined]
        return
    else:
        summary = r.summary_action if r.summary_action in env.actions else None
        try:
            step = env.step(summary) if summary is not None else env.step_act(r.act)
        except ConfigError as exc:
            out.failed_turns += 1
            out.first_failure = out.first_failure or str(exc)
            d.done, d.failed = True, True  # type: ignore[attr-defined]
            return
    d.belief, _, terminated, truncated, d.info = step
    d.text.step(d.info)
    d.done = terminated or truncated
