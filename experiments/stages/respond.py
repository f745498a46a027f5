"""Stage ``respond``: every checkpoint and the handcrafted policy on every context set, and the
config's other policies (``policies``, each asked ``repeat`` times) on the collected contexts
C_col^all, which carry the dialogue histories. A table that is there is not made again
(:class:`~experiments.runfolder.ResponseStore`); each new one is kept as soon as it is ready."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from behavsim import BehavsimError, ConfigError, ResponseTable, load_policy
from behavsim.policy import respond_many
from experiments.stages.train import trial_specs
from experiments.study import Stage, Study, StudyConfig

__all__ = ["RESPOND", "respond_set", "base_specs", "response_tables"]


def respond_set(study: Study, name: str, specs: Sequence[str], repeat: int = 1) -> dict[str, ResponseTable]:
    """Every policy of ``specs`` on the context set ``name`` (each context asked ``repeat``
    times); the tables already in the run folder are reused."""
    store = study.run.responses(name)
    found = {spec: store.find(spec, repeat) for spec in specs}
    todo = [spec for spec in specs if found[spec] is None]
    if todo:
        options: dict[str, Any] = {} if study.cfg.domain is None else {"domain": study.cfg.domain}

        def save(i: int, table: ResponseTable) -> None:  # each table as soon as it is ready: kept if interrupted
            store.add(todo[i], table, repeat)

        contexts = study.run.context_sets[name]
        respond_many(todo, contexts, executor=study.executor, on_result=save, repeat=repeat, **options)
    return {spec: t if (t := found[spec]) is not None else store.load(spec, repeat) for spec in specs}


def base_specs(study: Study) -> list[str]:
    """The policies that answer every context set: every checkpoint of every trial, then the
    handcrafted policy."""
    return [p for v in trial_specs(study).values() for p in v] + ["handcrafted"]


def response_tables(study: Study) -> dict[str, dict[str, ResponseTable]]:
    """``{set: {spec: table}}`` of this stage, in order: every checkpoint and the handcrafted
    policy on every set, and the other policies on C_col^all."""
    specs = base_specs(study)
    out = {name: {s: study.run.responses(name).tables[s] for s in specs} for name in study.run.context_sets}
    out["ccol-all"].update({s: study.run.responses("ccol-all").tables[s] for s in study.cfg.policies})
    return out


def _respond(study: Study) -> None:
    specs = base_specs(study)
    for name in study.run.context_sets:
        respond_set(study, name, specs)
    others = list(study.cfg.policies)
    if others:  # on the collected contexts, which carry the dialogue histories
        repeat = study.cfg.repeat
        study.log(
            f"      other policies on ccol-all: {', '.join(others)}"
            + (f" (each asked {repeat}x)" if repeat > 1 else "")
        )
        respond_set(study, "ccol-all", others, repeat=repeat)


def _check_other_policies(cfg: StudyConfig) -> None:
    """Each of the config's other policies loads (a model folder, a server's address, a module),
    named in one line if not."""
    options = {} if cfg.domain is None else {"domain": cfg.domain}
    for spec in cfg.policies:
        try:
            load_policy(spec, **options)
        except BehavsimError as exc:
            raise ConfigError(f"study config 'policies': {spec!r}: {exc}") from None
        except (ImportError, OSError, ValueError) as exc:
            raise ConfigError(f"study config 'policies': {spec!r} cannot be loaded: {exc}") from None


RESPOND = Stage(
    name="respond",
    order=300,
    title="responses of every checkpoint on every context set",
    run=_respond,
    inputs={"train/": "the trials' checkpoints", "contexts/": "the context sets they answer"},
    outputs={"responses/": "<set>/: one response table per policy (.jsonl) and index.json"},
    preflight=_check_other_policies,
)
