"""Stage ``contexts``: the context sets — C_gen (the grid), C_col per reward (the belief states of
seeded evaluation dialogues of the last checkpoint of every trial of that reward) and their union
C_col^all. Each set is kept with the key of its inputs and built again only when they change."""

from __future__ import annotations

from behavsim import ContextSet
from contexts import collect, generate_grid
from experiments.study import Stage, Study, stage_key
from policies.simulation.domain import resolve_domain

__all__ = ["CONTEXTS", "collected_key"]


def collected_key(study: Study, reward: str) -> str:
    """The key of C_col of ``reward``: its checkpoints relative to the run folder, by content (a
    moved folder keeps it), and the collection's settings."""
    cfg, run = study.cfg, study.run
    last = [run.checkpoints(reward, s)[-1] for s in cfg.seeds]
    return stage_key(
        "collect",
        [run.relative(p) for p in last],
        [run.checkpoint_digest(p) for p in last],
        cfg.collect_dialogues,
        cfg.collect_seed,
        cfg.user,
    )


def _contexts(study: Study) -> None:
    cfg, run = study.cfg, study.run
    domain = resolve_domain(cfg.domain)
    grid_key = stage_key("grid", cfg.grid_step, cfg.domain)
    run.cached_context_set("cgen", grid_key, lambda: generate_grid(domain, step=cfg.grid_step))
    parts = []
    for reward in cfg.rewards:
        last = [str(run.checkpoints(reward, s)[-1]) for s in cfg.seeds]

        def build(last: list[str] = last) -> ContextSet:
            env = {"user_config": cfg.user}
            return collect(last, dialogues=cfg.collect_dialogues, seed=cfg.collect_seed, domain=domain, env_options=env)

        parts.append(run.cached_context_set(f"ccol-{reward}", collected_key(study, reward), build))
    if len(parts) > 1:
        union = stage_key("union", [p.fingerprint for p in parts])
        run.cached_context_set(
            "ccol-all", union, lambda: ContextSet.concat(parts, description="union of C_col of every reward")
        )
    else:
        run.context_sets["ccol-all"] = parts[0]
    for name, cs in run.context_sets.items():
        study.log(f"      {name}: {len(cs):,} contexts")


CONTEXTS = Stage(
    name="contexts",
    order=200,
    title="context sets",
    run=_contexts,
    inputs={"train/": "the last checkpoint of every trial collects C_col"},
    outputs={
        "contexts/": "cgen.jsonl, ccol-<reward>.jsonl, ccol-all.jsonl; keys/NAME.key: the hash of each one's inputs"
    },
)
