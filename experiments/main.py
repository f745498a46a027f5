"""The main job: a small behaviour-comparison study, end to end, on the embedded defaults.

1. Train GP-SARSA policies for each reward (R_TS, R_IQ) and seed, with checkpoints (paper Table 1).
2. Build the context sets: C_gen (the 1,296-context grid) and C_col (belief states of seeded
   evaluation dialogues of the last checkpoints, per reward).
3. Respond every checkpoint (and the handcrafted policy) on the context sets.
4. Compare: convergence (checkpoint k-1 vs k), seeds (trial pairs at equal checkpoints),
   rewards (every TS trial vs every IQ trial at the last checkpoint, on C_col^TS ∪ C_col^IQ).

Every stage is resumable: training resumes from its checkpoints, context sets and response
tables are reused when their files exist for the same configuration. Outputs go to
``runs/main/`` (``--out``); the tables are printed.

    python -m experiments.main [--out DIR] [--dialogues N] [--seeds 0 1] [--config FILE.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from behavsim import BehavsimError, ConfigError, ContextSet, ResponseTable, compare


@dataclass(frozen=True)
class StudyConfig:
    """Everything that defines the study (stored as ``OUT/config.json``)."""

    rewards: tuple[str, ...] = ("ts", "iq")
    seeds: tuple[int, ...] = (0, 1, 2)
    dialogues: int = 5000
    checkpoint_every: int = 1000
    eval_dialogues: int = 100
    grid_step: float = 0.2
    collect_dialogues: int = 10
    collect_seed: int = 0
    scores: tuple[str, ...] = ("TMR", "DMR", "CER", "CMR", "USE_cos", "USE_ang", "BLEU4", "BERTScore")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "StudyConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"unknown study-config keys {unknown}; valid keys: {sorted(names)}")
        kw = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
        return cls(**kw)


def _say(msg: str) -> None:
    print(msg, flush=True)


def _train(cfg: StudyConfig, out: Path) -> list[dict[str, Any]]:
    from policies.train import TrainConfig, run_training

    tc = TrainConfig(policy="gp", rewards=cfg.rewards, seeds=cfg.seeds, dialogues=cfg.dialogues,
                     checkpoint_every=cfg.checkpoint_every, eval_dialogues=cfg.eval_dialogues)
    return run_training(tc, out / "train", progress=sys.stderr.isatty())


def _checkpoints(out: Path, reward: str, seed: int) -> list[Path]:
    from policies.train import list_checkpoints, trial_name

    return [p for _, p in list_checkpoints(out / "train" / trial_name(reward, seed))]


def _context_sets(cfg: StudyConfig, out: Path) -> dict[str, ContextSet]:
    from contexts import collect, generate_grid

    sets: dict[str, ContextSet] = {}
    cdir = out / "contexts"
    cdir.mkdir(parents=True, exist_ok=True)
    path = cdir / "cgen.jsonl"
    sets["cgen"] = ContextSet.load(path) if path.exists() else ContextSet.load(generate_grid(step=cfg.grid_step).save(path))
    parts = []
    for reward in cfg.rewards:
        path = cdir / f"ccol-{reward}.jsonl"
        if path.exists():
            cs = ContextSet.load(path)
        else:
            last = [str(_checkpoints(out, reward, s)[-1]) for s in cfg.seeds]
            cs = ContextSet.load(collect(last, dialogues=cfg.collect_dialogues, seed=cfg.collect_seed).save(path))
        sets[f"ccol-{reward}"] = cs
        parts.append(cs)
    path = cdir / "ccol-all.jsonl"
    sets["ccol-all"] = ContextSet.load(path) if path.exists() else ContextSet.load(
        ContextSet.concat(parts, description="union of the collected sets of all rewards").save(path))
    return sets


def _responses(specs: Sequence[str], cs: ContextSet, rdir: Path) -> list[ResponseTable]:
    from policies.respond import respond_many

    rdir.mkdir(parents=True, exist_ok=True)
    index_path = rdir / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    todo = [s for s in specs if s not in index or not (rdir / index[s]).exists()]
    if todo:
        for spec, table in zip(todo, respond_many(todo, cs)):
            name = f"{table.id}.jsonl"
            table.save(rdir / name)
            index[spec] = name
        index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    tables = [ResponseTable.load(rdir / index[s]) for s in specs]
    for t in tables:
        if t.context_fingerprint != cs.fingerprint:
            raise ConfigError(f"{t.source}: response table of another context set; delete {rdir} to recompute")
    return tables


def _fmt_means(comp, label: str, scores: Sequence[str]) -> pd.DataFrame:
    df = comp.means[["a", "b", *scores]].copy()
    df.insert(0, "comparison", label)
    return df


def run(cfg: StudyConfig, out: Path) -> dict[str, pd.DataFrame]:
    out.mkdir(parents=True, exist_ok=True)
    cfg_path = out / "config.json"
    if cfg_path.exists() and cfg_path.read_text() != cfg.to_json():
        raise ConfigError(f"{out} holds a study with another configuration ({cfg_path}); use another --out")
    cfg_path.write_text(cfg.to_json())
    t0 = time.perf_counter()

    _say(f"[1/4] training GP-SARSA: rewards {list(cfg.rewards)}, seeds {list(cfg.seeds)}, "
         f"{cfg.dialogues:,} dialogues, checkpoint every {cfg.checkpoint_every:,} ...")
    from policies.train import table1

    rows = _train(cfg, out)
    t1 = pd.DataFrame(table1(rows))
    results = {"table1": t1}

    _say("[2/4] building context sets ...")
    sets = _context_sets(cfg, out)
    for name, cs in sets.items():
        _say(f"      {name}: {len(cs):,} contexts ({cs.fingerprint})")

    _say("[3/4] responding every checkpoint on the context sets ...")
    trials = {(r, s): [str(p) for p in _checkpoints(out, r, s)] for r in cfg.rewards for s in cfg.seeds}
    all_specs = [p for ps in trials.values() for p in ps] + ["handcrafted"]
    tables = {name: _responses(all_specs, cs, out / "responses" / name) for name, cs in sets.items()}

    _say("[4/4] comparing ...")
    rdir = out / "results"
    rdir.mkdir(exist_ok=True)
    scores = list(cfg.scores)
    by_spec = {name: dict(zip(all_specs, ts)) for name, ts in tables.items()}
    frames = []
    signatures = None
    # 1. convergence on C_col of each reward and on C_gen
    for name in [f"ccol-{r}" for r in cfg.rewards] + ["cgen"]:
        reward_tables = [t for t in tables[name] if t.policy.get("reward") is not None
                         and (name == "cgen" or t.policy["reward"] == name.split("-", 1)[1])]
        comp = compare(reward_tables, "consecutive", scores=scores)
        comp.per_context.to_csv(rdir / f"convergence-{name}.csv", index=False, float_format="%.10g")
        frames.append(_fmt_means(comp, f"convergence/{name}", scores))
        signatures = comp.signatures
    # 2. seeds: pairs of trials of one reward at equal checkpoints
    for name in ("ccol-all", "cgen"):
        for reward in cfg.rewards:
            ckpts = sorted({t.policy["checkpoint"] for t in tables[name] if t.policy.get("reward") == reward})
            for ck in ckpts:
                group = [t for t in tables[name] if t.policy.get("reward") == reward and t.policy.get("checkpoint") == ck]
                if len(group) < 2:
                    continue
                comp = compare(group, "all", scores=scores)
                frames.append(_fmt_means(comp, f"seeds/{reward}/{name}/{ck}", scores))
    # 3. rewards: every TS trial vs every IQ trial at the last checkpoint, on the union of C_col
    if len(cfg.rewards) == 2:
        last = [by_spec["ccol-all"][trials[(r, s)][-1]] for r in cfg.rewards for s in cfg.seeds]
        comp = compare(last, "cross", by="reward", scores=scores)
        comp.per_context.to_csv(rdir / "rewards-ccol-all.csv", index=False, float_format="%.10g")
        frames.append(_fmt_means(comp, "rewards/ccol-all", scores))
    # handcrafted against the last checkpoint of every trial, on C_gen
    hc = by_spec["cgen"]["handcrafted"]
    comp = compare([hc] + [by_spec["cgen"][ps[-1]] for ps in trials.values()],
                   [(hc.id, by_spec["cgen"][ps[-1]].id) for ps in trials.values()], scores=scores)
    frames.append(_fmt_means(comp, "handcrafted-vs-gp/cgen", scores))

    summary = pd.concat(frames, ignore_index=True)
    summary.to_csv(rdir / "summary.csv", index=False, float_format="%.6g")
    t1.to_csv(rdir / "table1.csv", index=False, float_format="%.6g")
    (rdir / "signatures.json").write_text(json.dumps(signatures, indent=2, sort_keys=True) + "\n")
    results["summary"] = summary

    with pd.option_context("display.width", 220, "display.max_columns", 30, "display.max_rows", 500):
        _say("\nTable 1 — absolute performance per checkpoint (averaged over seeds):")
        _say(t1.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        _say("\nSimilarity scores (means over contexts):")
        _say(summary.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    _say(f"\nscore signatures: {rdir / 'signatures.json'}")
    _say(f"done in {time.perf_counter() - t0:.0f} s; results in {rdir}")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.main", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/main", help="output folder (default: runs/main); reused to resume")
    ap.add_argument("--config", help="a study config as JSON (keys of StudyConfig); flags below override it")
    ap.add_argument("--dialogues", type=int, help="training dialogues per trial")
    ap.add_argument("--seeds", type=int, nargs="+", help="random seeds (trials) per reward")
    args = ap.parse_args(argv)
    try:
        d: dict[str, Any] = {}
        if args.config:
            try:
                d = json.loads(Path(args.config).read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise ConfigError(f"--config {args.config}: {exc}") from None
        if args.dialogues is not None:
            d["dialogues"] = args.dialogues
        if args.seeds is not None:
            d["seeds"] = args.seeds
        run(StudyConfig.from_dict(d), Path(args.out))
    except BehavsimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
