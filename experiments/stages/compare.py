"""Stage ``compare``: every comparison of the study with bootstrap CIs — convergence (checkpoint
k−1 vs k of each trial, on C_col of its reward and on C_gen), seeds (every pair of trials of one
reward at equal checkpoints, on C_col^all and C_gen), rewards (every TS trial vs every IQ trial
at the last checkpoint, on C_col^all), the other policies (each vs the last checkpoint of every
trial, the handcrafted policy and each other) — with the per-turn TMR/DMR, the most-disagreeing
contexts and the slices of the last checkpoint, and every per-context value."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pandas as pd

from behavsim import ContextSet, ResponseTable, analysis, compare, raise_if_interrupted, slice_scores
from experiments.stages.respond import response_tables
from experiments.stages.train import trial_specs
from experiments.study import Stage, Study, StudyConfig, stage_key

__all__ = ["COMPARE", "ANALYSIS_VERSION"]

#: Version of what the stage writes: 2 added the test over trials and slices.csv (a run compared
#: before is compared again once).
ANALYSIS_VERSION = 2

Tables = dict[str, dict[str, ResponseTable]]


def _key(study: Study) -> str:
    tables = response_tables(study)
    return stage_key(
        study.cfg.to_dict(),
        {n: cs.fingerprint for n, cs in study.run.context_sets.items()},
        {n: sorted(t.id for t in tb.values()) for n, tb in tables.items()},
        {"analysis": ANALYSIS_VERSION},
    )


def _pair_label(a: dict, b: dict) -> str:
    return f"{a.get('seed')} vs {b.get('seed')}"


def _nan_if_none(x: float | None) -> float:
    return math.nan if x is None else float(x)


def _comparisons(study: Study, tables: Tables, trials: dict[tuple[str, int], list[str]]) -> Iterator[tuple]:
    """Yield (kind, context_set, extra-columns, Comparison) for every comparison of the study, in
    the order of the module doc; the other policies' have the columns ``self_agreement_a``/``_b``
    (each side's self-agreement TMR where it was measured). The distinct answer combinations are
    scored where ``study.executor`` says (the values are the same under any executor)."""
    cfg, ex = study.cfg, study.executor
    scores = list(cfg.scores)
    for name in [f"ccol-{r}" for r in cfg.rewards] + ["cgen"]:
        for (reward, seed), specs in trials.items():
            if name not in ("cgen", f"ccol-{reward}") or len(specs) < 2:
                continue
            comp = compare([tables[name][s] for s in specs], "consecutive", scores=scores, executor=ex)
            checkpoints = [comp.policies[b]["checkpoint"] for b in comp.means["b"]]
            yield "convergence", name, {"reward": reward, "seed": seed, "checkpoint": checkpoints}, comp
    for name in ("ccol-all", "cgen"):
        for reward in cfg.rewards:
            n_ck = min(len(v) for (r, _), v in trials.items() if r == reward)
            for k in range(n_ck):
                group = [tables[name][trials[(reward, s)][k]] for s in cfg.seeds]
                if len(group) < 2:
                    continue
                comp = compare(group, "all", scores=scores, executor=ex)
                labels = [
                    _pair_label(comp.policies[a], comp.policies[b]) for a, b in zip(comp.means["a"], comp.means["b"])
                ]
                yield (
                    "seeds",
                    name,
                    {"reward": reward, "checkpoint": group[0].policy["checkpoint"], "pair": labels},
                    comp,
                )
    if len(cfg.rewards) == 2:
        group = [tables["ccol-all"][trials[(r, s)][-1]] for r in cfg.rewards for s in cfg.seeds]
        comp = compare(group, "cross", by="reward", scores=scores, executor=ex)
        labels = [_pair_label(comp.policies[a], comp.policies[b]) for a, b in zip(comp.means["a"], comp.means["b"])]
        yield "rewards", "ccol-all", {"pair": labels}, comp
    if cfg.policies:
        base = [trials[(r, s)][-1] for r in cfg.rewards for s in cfg.seeds] + ["handcrafted"]
        group = [tables["ccol-all"][sp] for sp in base + list(cfg.policies)]
        ids = [t.id for t in group]
        nb, n = len(base), len(group)
        pairs = [(ids[i], ids[j]) for i in range(nb, n) for j in [*range(nb), *range(i + 1, n)]]
        comp = compare(group, pairs, scores=scores, executor=ex)
        self_tmr = {t.id: t.self_agreement_tmr for t in group}
        extra = {
            "self_agreement_a": [_nan_if_none(self_tmr[a]) for a in comp.means["a"]],
            "self_agreement_b": [_nan_if_none(self_tmr[b]) for b in comp.means["b"]],
        }
        yield "policies", "ccol-all", extra, comp


def _means(cfg: StudyConfig, name: str, extra: dict[str, Any], comp: Any) -> pd.DataFrame:
    """The means with bootstrap CIs of one comparison, its keys in front, self-agreement after the scores."""
    m = analysis.means_with_ci(comp, list(cfg.scores), n_resamples=cfg.bootstrap, seed=cfg.analysis_seed)
    m = m.drop(columns=["pair"], errors="ignore")
    beside = {k: extra[k] for k in extra if k.startswith("self_agreement")}  # after the scores
    for col, val in reversed([("context_set", name), *((k, v) for k, v in extra.items() if k not in beside)]):
        m.insert(0, col, val)
    for col, val in beside.items():
        m[col] = val
    return m


def _compare(study: Study) -> None:
    """Every comparison: means with bootstrap CIs (``<kind>.csv``), per-turn TMR/DMR, the most
    disagreeing contexts, the slices and every per-context value (``per_context/all.csv``)."""
    cfg, run = study.cfg, study.run
    tables, trials, sets = response_tables(study), trial_specs(study), run.context_sets
    frames: dict[str, list[pd.DataFrame]] = {"convergence": [], "seeds": [], "rewards": [], "policies": []}
    signatures: dict[str, str] = {}
    per_turn_frames, agreement_frames, disagreement_frames, slice_frames = [], [], [], []
    for kind, name, extra, comp in _comparisons(study, tables, trials):
        raise_if_interrupted()
        signatures = comp.signatures
        frames[kind].append(_means(cfg, name, extra, comp))
        per = comp.per_context.copy()
        per.insert(0, "kind", kind)
        per.insert(1, "context_set", name)
        agreement_frames.append(per)
        last = kind == "seeds" and extra["checkpoint"] == cfg.dialogues
        if last and name.startswith("ccol"):
            per_turn_frames.append(_per_turn(comp, sets[name], name, extra, list(cfg.scores)))
        if kind == "rewards" or last:
            candidates = list(run.responses(name).tables.values())
            disagreement_frames += _disagreements(cfg, comp, sets[name], candidates, name, kind)
            slice_frames.append(_slices(comp, sets[name], candidates, name, kind, extra))
    for kind, fr in frames.items():
        if fr:
            run.write_csv(f"results/{kind}.csv", pd.concat(fr, ignore_index=True))
    for rel, fr in (("per_turn", per_turn_frames), ("disagreements", disagreement_frames), ("slices", slice_frames)):
        if fr:
            run.write_csv(f"results/{rel}.csv", pd.concat(fr, ignore_index=True))
    allper = pd.concat(agreement_frames, ignore_index=True)
    if "semantic_na" in allper.columns:  # rows of comparisons without text-only answers: applicable, not blank
        allper["semantic_na"] = allper["semantic_na"].eq(True)
    run.write_csv("results/per_context/all.csv", allper)
    run.write_text("results/signatures.json", json.dumps(signatures, indent=2, sort_keys=True) + "\n")


def _per_turn(comp: Any, cs: ContextSet, name: str, extra: dict[str, Any], scores: list[str]) -> pd.DataFrame:
    """Figure 4: TMR/DMR per system turn of the trial pairs at the last checkpoint."""
    turns = [meta.get("turn") for meta in cs.metas]
    pt = analysis.per_turn(comp.per_context, turns, scores=[s for s in ("TMR", "DMR") if s in scores])
    pt["pair"] = pt["pair"].map(dict(enumerate(extra["pair"])))
    pt.insert(0, "context_set", name)
    pt.insert(1, "reward", extra["reward"])
    pt.insert(2, "checkpoint", extra["checkpoint"])
    return pt


def _disagreements(
    cfg: StudyConfig, comp: Any, cs: ContextSet, candidates: list[ResponseTable], name: str, kind: str
) -> list[pd.DataFrame]:
    """The contexts where each compared pair disagrees most (by CMR when computed)."""
    scores = list(cfg.scores)
    ids = set(comp.means["a"]) | set(comp.means["b"])
    table_list = [t for t in candidates if t.id in ids]
    out = []
    for p in range(len(comp.means)):
        d = analysis.disagreements(
            comp, cs, table_list, pair=p, top=cfg.disagreements, by="CMR" if "CMR" in scores else scores[0]
        )
        d.insert(0, "comparison", f"{kind}/{name}/{comp.means['a'].iloc[p]} vs {comp.means['b'].iloc[p]}")
        out.append(d)
    return out


def _slices(
    comp: Any, cs: ContextSet, candidates: list[ResponseTable], name: str, kind: str, extra: dict[str, Any]
) -> pd.DataFrame:
    """Every score of each pair per act type (of the first trial), slot, belief certainty and, on
    collected contexts, turn."""
    ids = set(comp.means["a"]) | set(comp.means["b"])
    table_list = [t for t in candidates if t.id in ids]
    kinds = ["acttype", "slot", "uncertainty"] + (["turn"] if any("turn" in m for m in cs.metas) else [])
    sl = slice_scores(comp, kinds, contexts=cs, tables=table_list)
    sl["pair"] = sl["pair"].map(dict(enumerate(extra["pair"])))
    sl.insert(0, "kind", kind)
    sl.insert(1, "context_set", name)
    sl.insert(2, "reward", extra.get("reward"))
    return sl


COMPARE = Stage(
    name="compare",
    order=400,
    title="comparisons (convergence, seeds, rewards) with bootstrap CIs",
    run=_compare,
    inputs={"responses/": "every policy's answers", "contexts/": "the contexts (turns, beliefs for the slices)"},
    outputs={
        "results/convergence.csv": "checkpoint k vs k−1 of each trial (Table 2)",
        "results/seeds.csv": "the pairs of trials of one reward at each checkpoint (Table 4)",
        "results/rewards.csv": "every TS trial vs every IQ trial, last checkpoint (Table 3)",
        "results/policies.csv": "the other policies (with `policies` in the config)",
        "results/per_turn.csv": "TMR and DMR per system turn (Figure 4)",
        "results/disagreements.csv": "the contexts where each pair of the last checkpoint disagrees most",
        "results/slices.csv": "every score per act type, slot, belief certainty and turn",
        "results/signatures.json": "the scores' signatures",
        "results/per_context/all.csv": "every per-context value of every comparison",
    },
    key=_key,
)
