"""The teacher's dialogues: what the end-to-end model imitates.

The teacher — any policy behavsim can ask (a spec string: ``handcrafted``, a GP-SARSA checkpoint,
``pydial:CFG``, another ``e2e:DIR``) — plays seeded dialogues in
:class:`policies.simulation.env.DialogueEnv` (CamRestaurants and Environment 1's user by default) exactly as
``contexts collect`` plays them: at every system turn the context is recorded — the belief state,
and the history with its text (:class:`~policies.simulation.history.DialogueText`) — together
with the teacher's answer (act and prompt; a teacher without a generator: the environment's
generator's words for its act). Dialogue ``i`` of a training run with seed ``s`` is reset with
``SeedSequence([s, 7, i])``, a stream of its own (evaluation dialogues use ``[seed, 3, j]``).

:func:`play_corrected` plays dialogues the other way round (DAgger's aggregation step): the model
being trained drives — its acts are played — and at every system turn the teacher says what it
would have done there, on the tracker's belief and the history of the model's own dialogue. These
labels teach the model what to do in the states its own mistakes lead to, which the teacher's
dialogues never visit. A turn the model fails to answer plays the teacher's act. Dialogue ``i`` of
the round after epoch ``e`` is reset with ``SeedSequence([s, 8, e, i])``.

The result is two ordinary behavsim files in the run folder: ``teacher-contexts.jsonl`` (a
context set with histories) and ``teacher-responses.jsonl`` (the teacher's response table on it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from behavsim import ConfigError, ContextSet, ResponseTable, canonical_act, canonical_copy
from behavsim.policy import answer_context, as_adapter, error_text
from policies.simulation.actions import accepted_constraints
from policies.simulation.domain import Domain
from policies.simulation.env import DialogueEnv
from policies.simulation.history import DialogueText
from policies.training.play import dialogue_groups

__all__ = ["teacher_dialogue_seed", "play_teacher", "play_corrected", "constraints_of", "TEACHER_STREAM"]

#: The word of the teacher's dialogue seeds: ``SeedSequence([seed, TEACHER_STREAM, i])``.
TEACHER_STREAM = 7
#: The word of the corrected dialogues' seeds: ``SeedSequence([seed, CORRECTED_STREAM, epoch, i])``.
CORRECTED_STREAM = 8


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
                act, prompt, summary = _teacher_answer(adapter, belief, history, env, f"teacher dialogue {i}")
                beliefs.append(canonical_copy(belief))
                histories.append(history)
                metas.append({"origin": "collected", "source_policy": adapter.label, "dialogue": i, "turn": turn})
                ids.append(f"teacher/d{i}/t{turn}")
                acts.append(act)
                prompts.append(prompt)
                belief, _, terminated, truncated, info = env.step(summary) if summary else env.step_act(act)
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
    return _tables(adapter, beliefs, histories, metas, ids, acts, prompts, meta)


def _tables(adapter, beliefs, histories, metas, ids, acts, prompts, meta) -> tuple[ContextSet, ResponseTable]:
    cs = ContextSet(beliefs, metas, ids, meta, histories=histories)
    table = ResponseTable(
        policy=dict(adapter.meta), context_fingerprint=cs.fingerprint, acts=acts, prompts=prompts, context_ids=ids
    )
    return cs, table


def _teacher_answer(adapter: Any, belief: dict, history: list, env: Any, where: str) -> tuple[str, str, Any]:
    """The teacher's act, prompt and summary action at one system turn (a teacher must give acts)."""
    try:
        r = answer_context(adapter, belief, history)
    except Exception as exc:
        raise ConfigError(f"teacher {adapter.id!r} failed in {where}: {error_text(exc)}") from None
    if r.act is None:
        raise ConfigError(f"teacher {adapter.id!r} answered with text only; a teacher must give acts")
    act = canonical_act(r.act)
    summary = r.summary_action if r.summary_action in env.actions else None
    return act, (r.prompt if r.prompt is not None else env.nlg.generate(act)), summary


def play_corrected(
    driver: Callable[[list[list[dict]]], list[Any]],
    teacher: Any,
    *,
    dialogues: int,
    seed: int,
    epoch: int,
    domain: Domain,
    env_options: dict[str, Any] | None = None,
    batch: int = 64,
) -> tuple[ContextSet, ResponseTable]:
    """Dialogues the model plays, labelled by the teacher (see the module doc): a context set with
    histories (the model's dialogues) and the teacher's response table on it.

    ``driver(histories)`` answers the running dialogues' histories at once (an answer, or the
    exception of a history it could not answer), e.g. :meth:`E2EModel.answer`.
    """
    adapter = as_adapter(teacher, domain=domain)
    beliefs, histories, metas, ids = [], [], [], []
    acts: list[str | None] = []
    prompts: list[str | None] = []
    played = taken = 0
    with adapter.session():
        for group in dialogue_groups(
            int(dialogues), batch, lambda i: corrected_dialogue_seed(seed, epoch, i), domain, env_options
        ):
            rows: dict[int, list[tuple[dict, list, int, str, str]]] = {d.index: [] for d in group}
            live = group
            while live:
                answers = driver([d.text.turns for d in live])
                for d, r in zip(live, answers):
                    env, history = d.env, d.text.turns
                    where = f"corrected dialogue {d.index} after epoch {epoch}"
                    act, prompt, summary = _teacher_answer(adapter, d.belief, history, env, where)
                    rows[d.index].append((canonical_copy(d.belief), history, len(rows[d.index]) + 1, act, prompt))
                    step = None
                    if not isinstance(r, Exception) and r.act is not None:
                        try:
                            step = env.step_act(r.act)
                            taken += 1
                        except ConfigError:
                            step = None
                    if step is None:  # the model gave no playable act: the teacher's is played
                        step = env.step(summary) if summary else env.step_act(act)
                    played += 1
                    d.belief, _, terminated, truncated, d.info = step
                    d.text.step(d.info)
                    d.done = terminated or truncated
                live = [d for d in live if not d.done]
            for i, dialogue in rows.items():
                for belief, history, turn, act, prompt in dialogue:
                    beliefs.append(belief)
                    histories.append(history)
                    metas.append({"origin": "collected", "source_policy": "e2e", "dialogue": i, "turn": turn})
                    ids.append(f"corrected/e{epoch}/d{i}/t{turn}")
                    acts.append(act)
                    prompts.append(prompt)
    meta = {
        "builder": "e2e-corrected",
        "origin": "collected",
        "domain": domain.name,
        "seed": int(seed),
        "epoch": int(epoch),
        "dialogues": int(dialogues),
        "dialogue_seeds": f"SeedSequence([seed, {CORRECTED_STREAM}, epoch, i])",
        "teacher": dict(adapter.meta),
        "model_turns": taken,
        "turns": played,
        "env_options": {k: repr(v) for k, v in (env_options or {}).items()},
    }
    return _tables(adapter, beliefs, histories, metas, ids, acts, prompts, meta)


def corrected_dialogue_seed(seed: int, epoch: int, i: int) -> int:
    """The environment seed of corrected dialogue ``i`` of the round after ``epoch``."""
    state = np.random.SeedSequence([int(seed), CORRECTED_STREAM, int(epoch), int(i)]).generate_state(1, np.uint64)
    return int(state[0] >> 1)
