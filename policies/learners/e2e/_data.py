"""The teacher's dialogues: what the end-to-end model imitates.

The teacher — any policy behavsim can ask (a spec string: ``handcrafted``, a GP-SARSA checkpoint,
``pydial:CFG``, another ``e2e:DIR``) — plays seeded dialogues in
:class:`policies.simulation.env.DialogueEnv` (CamRestaurants and Environment 1's user by default) exactly as
``contexts collect`` plays them: at every system turn the context is recorded — the belief state,
and the history with its text (:class:`~policies.simulation.history.DialogueText`) — together
with the teacher's answer (act and prompt; a teacher without a generator: the environment's
generator's words for its act). Dialogue ``i`` of a training run with seed ``s`` is reset with
``SeedSequence([s, 7, i])``, a stream of its own (evaluation dialogues use ``[seed, 3, j]``).

The result is two ordinary behavsim files in the run folder: ``teacher-contexts.jsonl`` (a
context set with histories) and ``teacher-responses.jsonl`` (the teacher's response table on it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from behavsim import ConfigError, ContextSet, ResponseTable, canonical_act, canonical_copy
from behavsim.policy import answer_context, as_adapter, error_text

from ...simulation.actions import accepted_constraints
from ...simulation.domain import Domain

__all__ = ["teacher_dialogue_seed", "play_teacher", "constraints_of", "TEACHER_STREAM"]

#: The word of the teacher's dialogue seeds: ``SeedSequence([seed, TEACHER_STREAM, i])``.
TEACHER_STREAM = 7


def teacher_dialogue_seed(seed: int, i: int) -> int:
    """The environment seed of teacher dialogue ``i`` of a training run with ``seed``."""
    return int(np.random.SeedSequence([int(seed), TEACHER_STREAM, int(i)]).generate_state(1, np.uint64)[0] >> 1)


def constraints_of(belief: dict, domain: Domain) -> list[tuple[str, str]]:
    """The belief span's label: the constraints the tracker accepted, in the domain's slot order."""
    accepted = {s: v for s, v, _ in accepted_constraints(belief, domain)}
    return [(s, accepted[s]) for s in sorted(domain.system_requestable) if s in accepted]


def play_teacher(
    teacher: Any,
    *,
    dialogues: int,
    seed: int,
    domain: Domain,
    env_options: dict[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[ContextSet, ResponseTable]:
    """The teacher's dialogues as a context set with histories and its response table on it."""
    from ...simulation.env import DialogueEnv
    from ...simulation.history import DialogueText

    adapter = as_adapter(teacher, domain=domain)
    env = DialogueEnv(domain, **(env_options or {}))
    text = DialogueText(env)
    beliefs, histories, metas, ids = [], [], [], []
    acts: list[str | None] = []
    prompts: list[str | None] = []
    with adapter.session():
        for i in range(int(dialogues)):
            dseed = teacher_dialogue_seed(seed, i)
            belief, info = env.reset(seed=dseed)
            text.reset(dseed, info)
            done = False
            turn = 0
            while not done:
                turn += 1
                history = text.turns
                try:
                    r = answer_context(adapter, belief, history)
                except Exception as exc:
                    raise ConfigError(
                        f"teacher {adapter.id!r} failed in teacher dialogue {i}: {error_text(exc)}"
                    ) from None
                if r.act is None:
                    raise ConfigError(f"teacher {adapter.id!r} answered with text only; a teacher must give acts")
                act = canonical_act(r.act)
                summary = r.summary_action if r.summary_action in env.actions else None
                beliefs.append(canonical_copy(belief))
                histories.append(history)
                metas.append({"origin": "collected", "source_policy": adapter.label, "dialogue": i, "turn": turn})
                ids.append(f"teacher/d{i}/t{turn}")
                acts.append(act)
                belief, _, terminated, truncated, info = env.step(summary) if summary else env.step_act(act)
                prompts.append(r.prompt if r.prompt is not None else env.nlg.generate(act))
                text.step(info)
                done = terminated or truncated
            if progress is not None:
                progress(i + 1)
    meta = {
        "builder": "e2e-teacher",
        "origin": "collected",
        "domain": domain.name,
        "seed": int(seed),
        "dialogues": int(dialogues),
        "dialogue_seeds": f"SeedSequence([seed, {TEACHER_STREAM}, i])",
        "teacher": dict(adapter.meta),
        "env_options": {k: repr(v) for k, v in (env_options or {}).items()},
    }
    cs = ContextSet(beliefs, metas, ids, meta, histories=histories)
    table = ResponseTable(
        policy=dict(adapter.meta), context_fingerprint=cs.fingerprint, acts=acts, prompts=prompts, context_ids=ids
    )
    return cs, table
