"""The end-to-end trials of a study (config keys ``e2e_teachers``, ``e2e_dialogues``, ``e2e_epochs``).

behavsim's end-to-end model (:mod:`policies.e2e`, ``behavsim train --policy e2e``) is
trained by imitation of each teacher with each seed of the study: ``handcrafted``, or ``gp`` — the
last checkpoint of the GP-SARSA trial of the same seed (the config's first reward), answering with
the same generator as in the study's own comparisons. A trial's folder is
``train/e2e-<teacher>-s<seed>/``, one checkpoint per epoch; the teacher's dialogues are its own
(``SeedSequence([seed, 7, i])``), so no collected context was trained on.

What the study measures with them, on the collected contexts C_col^all (they carry the dialogue
histories the models read; the grid C_gen has none):

* ``results/e2e_training.csv`` — per trial: the last checkpoint's loss, and task success and
  length over the study's ``eval_dialogues`` evaluation dialogues played by the model (its acts
  drive the dialogue) and by its teacher, on the same users and goals (greedy both);
* ``results/e2e.csv`` — every comparison, means with bootstrap intervals: ``teacher`` (each
  checkpoint against its teacher: when the imitation's behaviour converges, and how closely it
  reproduces its teacher), ``convergence`` (checkpoint k vs k−1) and ``seeds`` (the last
  checkpoints of one teacher's trials pairwise, beside the GP-SARSA trials' seed pairs);
* ``results/e2e_seeds.csv`` — per group and score, the mean over its seed pairs with a two-level
  bootstrap interval (trials, then contexts): do end-to-end seeds differ more than GP seeds?
* ``results/e2e_agreement.csv`` and ``e2e_score_corr.csv`` — the paper's Sec. 5 claim: CER (from
  the acts) against USE cosine (from the text alone) over every (pair, context) of the end-to-end
  comparisons, where both acts and text exist, beside the same over the GP-SARSA comparisons;
* ``results/e2e_disagreements.csv``, ``e2e_slices.csv`` — where each last checkpoint departs from
  its teacher;
* ``results/per_context/e2e.csv`` — every per-context value of those comparisons.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from behavsim import ConfigError, ContextSet, ResponseTable, analysis, compare, get_executor, slice_scores
from behavsim.io import atomic_path
from experiments.runfolder import write_csv
from policies.e2e import E2EConfig, list_e2e_checkpoints, train_e2e
from policies.training.play import play_dialogues

__all__ = [
    "E2ETrials",
    "e2e_config",
    "train_e2e_trials",
    "e2e_comparisons",
    "write_e2e_results",
    "E2E_RESULTS",
    "E2E_TRAIN_RESULTS",
]

#: What the training stage writes (every run, like ``metrics.csv``).
E2E_TRAIN_RESULTS = ("e2e_training.csv",)
#: What the compare stage writes.
E2E_RESULTS = ("e2e.csv", "e2e_seeds.csv", "e2e_agreement.csv", "e2e_score_corr.csv", "e2e_disagreements.csv")

_SUCCESS_FILE = "success.json"
#: The score pair of the paper's Sec. 5 claim.
_CLAIM = ("CER", "USE_cos")


def trial_dir(run: Path, teacher: str, seed: int) -> Path:
    return run / "train" / f"e2e-{teacher}-s{seed}"


def e2e_config(cfg: Any, teacher_spec: str, seed: int) -> E2EConfig:
    """The training configuration of one end-to-end trial of study ``cfg``: the trainer's defaults
    but for the teacher, the seed, the study's domain and user, ``e2e_dialogues`` and ``e2e_epochs``
    (when set), one checkpoint per epoch, no chat mode (the study asks the models as ``e2e:DIR``), no
    DAgger rounds (the teacher's dialogues alone: the study's time), one thread (the study trains
    one trial per core) and belief weight 1 (every target alike: the study's results as published,
    from before the trainer's default became 3)."""
    kw: dict[str, Any] = {"teacher": teacher_spec, "seed": seed, "domain": cfg.domain, "user": cfg.user}
    kw.update(chat=False, threads=1, dagger_dialogues=0, belief_weight=1.0)
    if cfg.e2e_dialogues:
        kw["dialogues"] = cfg.e2e_dialogues
    if cfg.e2e_epochs:
        kw["epochs"] = cfg.e2e_epochs
    kw["checkpoint_every"] = kw.get("dialogues", E2EConfig.dialogues)
    try:
        return E2EConfig(**kw)
    except ConfigError as exc:
        raise ConfigError(f"study config: end-to-end trials: {exc}") from None


@dataclass
class E2ETrials:
    """The end-to-end trials of a run: ``specs[(teacher, seed)]`` the ``e2e:DIR`` spec of each
    checkpoint in order; ``teachers[(teacher, seed)]`` the teacher's spec as the study answers with it."""

    specs: dict[tuple[str, int], list[str]]
    teachers: dict[tuple[str, int], str]

    @property
    def all_specs(self) -> list[str]:
        return [s for v in self.specs.values() for s in v]


def _train_task(job: tuple[dict[str, Any], str, int]) -> None:
    """One trial (in a worker process): train or resume, then play the evaluation dialogues with
    its last checkpoint and with its teacher (``success.json`` in the trial folder)."""
    import torch

    # one trial per core, on one thread throughout (training fixes its own; so the rest does): a
    # worker forked from a process whose thread pool ran would wait forever on more threads
    torch.set_num_threads(1)
    config_dict, out, eval_dialogues = job
    config = E2EConfig.from_dict(config_dict)
    if not _trained(config, Path(out)):
        train_e2e(config, out)
    _write_success(config, Path(out), eval_dialogues)


def _trained(config: E2EConfig, out: Path) -> bool:
    """The trial's last checkpoint is there (the study's own config.json vouches for its settings,
    so a finished trial is not opened again — nor refused when the run folder moved and its GP
    teacher's path with it)."""
    ckpts = list_e2e_checkpoints(out)
    return bool(ckpts) and ckpts[-1][0] == config.total


def _success_key(config: E2EConfig, out: Path, eval_dialogues: int) -> dict[str, Any]:
    return {"checkpoint": list_e2e_checkpoints(out)[-1][1].name, "eval_dialogues": eval_dialogues, "user": config.user}


def _read_success(config: E2EConfig, out: Path, eval_dialogues: int) -> dict[str, Any] | None:
    """The trial's ``success.json`` when it is of its last checkpoint and these settings."""
    path = out / _SUCCESS_FILE
    if not _trained(config, out) or not path.is_file():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return found if isinstance(found, dict) and found.get("key") == _success_key(config, out, eval_dialogues) else None


def _write_success(config: E2EConfig, out: Path, eval_dialogues: int) -> None:
    if _read_success(config, out, eval_dialogues) is not None:
        return
    last = list_e2e_checkpoints(out)[-1][1]
    env = {"user_config": config.user, "max_turns": config.max_turns}
    rec: dict[str, Any] = {"key": _success_key(config, out, eval_dialogues)}
    for side, policy in (("e2e", f"e2e:{last}"), ("teacher", config.teacher)):
        r = play_dialogues(policy, eval_dialogues, domain=config.domain, env_options=env)
        rec[side] = {"tsr": r.tsr, "adl": r.adl, "failed_turns": r.failed_turns}
    with atomic_path(out / _SUCCESS_FILE) as tmp:
        tmp.write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def train_e2e_trials(
    cfg: Any,
    run: Path,
    gp_teacher: Callable[[int], str],
    log: Callable[[str], None],
    executor: Any = None,
) -> E2ETrials:
    """Train (or resume) every end-to-end trial of ``cfg`` in ``run/train/``, measure their task
    success, write ``results/e2e_training.csv``; ``gp_teacher(seed)``: the spec of the GP-SARSA
    teacher of that seed. Trials run in processes on this machine (a local pool of the executor's
    size), each on one thread; finished trials are not opened again."""
    keys = [(teacher, seed) for teacher in cfg.e2e_teachers for seed in cfg.seeds]
    configs = [e2e_config(cfg, "handcrafted" if t == "handcrafted" else gp_teacher(s), s) for t, s in keys]
    outs = [trial_dir(run, t, s) for t, s in keys]
    log(
        f"      end-to-end trials: teachers {list(cfg.e2e_teachers)} x seeds {list(cfg.seeds)}, "
        f"{configs[0].dialogues:,} teacher dialogues, {configs[0].epochs} epochs each"
    )
    todo = [i for i, (c, out) in enumerate(zip(configs, outs)) if _read_success(c, out, cfg.eval_dialogues) is None]
    if todo:
        ex = get_executor(executor)
        workers = getattr(ex, "workers", None) if ex.is_local else None
        if not ex.is_local:
            log(f"      (the end-to-end trials train on this machine, not on {ex.spec})")

        def done(i: int, _: None) -> None:
            teacher, seed = keys[todo[i]]
            log(f"      e2e {teacher} seed {seed}: {len(list_e2e_checkpoints(outs[todo[i]]))} checkpoints")

        jobs = [(configs[i].to_dict(), str(outs[i]), cfg.eval_dialogues) for i in todo]
        get_executor("local" if workers is None else f"local:{workers}").map(_train_task, jobs, on_result=done)
    _write_training(cfg, run, keys, configs, outs)
    return E2ETrials(
        specs={k: [f"e2e:{p}" for _, p in list_e2e_checkpoints(out)] for k, out in zip(keys, outs)},
        teachers={k: c.teacher for k, c in zip(keys, configs)},
    )


def _write_training(
    cfg: Any, run: Path, keys: list[tuple[str, int]], configs: list[E2EConfig], outs: list[Path]
) -> None:
    rows = []
    for (teacher, seed), config, out in zip(keys, configs, outs):
        last_n, last = list_e2e_checkpoints(out)[-1]
        state = json.loads((last / "trainer_state.json").read_text(encoding="utf-8"))
        succ = json.loads((out / _SUCCESS_FILE).read_text(encoding="utf-8"))
        rows.append(
            {
                "teacher": teacher,
                "seed": seed,
                "teacher_dialogues": config.dialogues,
                "epochs": config.epochs,
                "checkpoint": last_n,
                "loss": state["losses"][-1]["loss"],
                "eval_dialogues": cfg.eval_dialogues,
                "tsr": succ["e2e"]["tsr"],
                "tsr_teacher": succ["teacher"]["tsr"],
                "adl": succ["e2e"]["adl"],
                "adl_teacher": succ["teacher"]["adl"],
                "failed_turns": succ["e2e"]["failed_turns"],
            }
        )
    write_csv(pd.DataFrame(rows), run / "results" / "e2e_training.csv")


# ----------------------------------------------------------------------------- comparisons
def _group(teacher: str) -> str:
    return f"e2e-{teacher}"


def e2e_comparisons(
    cfg: Any,
    tables: dict[str, ResponseTable],
    e2e: E2ETrials,
    gp_last: dict[int, str],
    executor: Any = None,
) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Yield ``(comparison, extra-columns, Comparison)`` on C_col^all (``tables``: spec -> table):
    each checkpoint of each trial against its teacher, consecutive checkpoints, and the seed pairs
    of each teacher's last checkpoints and of the GP-SARSA trials (``gp_last[seed]``: the spec of
    the last checkpoint of the seed's trial of the first reward)."""
    scores = list(cfg.scores)
    for (teacher, seed), specs in e2e.specs.items():
        t = tables[e2e.teachers[(teacher, seed)]]
        group = [t, *(tables[s] for s in specs)]
        comp = compare(
            group, [(t.id, tables[s].id) for s in specs], scores=scores, executor=executor, allow_unanswered=True
        )
        ck = [comp.policies[b]["checkpoint"] for b in comp.means["b"]]
        yield "teacher", {"group": _group(teacher), "teacher": teacher, "seed": seed, "checkpoint": ck}, comp
    for (teacher, seed), specs in e2e.specs.items():
        if len(specs) < 2:
            continue
        comp = compare(
            [tables[s] for s in specs], "consecutive", scores=scores, executor=executor, allow_unanswered=True
        )
        ck = [comp.policies[b]["checkpoint"] for b in comp.means["b"]]
        yield "convergence", {"group": _group(teacher), "teacher": teacher, "seed": seed, "checkpoint": ck}, comp
    if len(cfg.seeds) < 2:
        return
    groups = {_group(t): [e2e.specs[(t, s)][-1] for s in cfg.seeds] for t in cfg.e2e_teachers}
    groups[f"gp-{cfg.rewards[0]}"] = [gp_last[s] for s in cfg.seeds]
    for name, specs in groups.items():
        comp = compare([tables[s] for s in specs], "all", scores=scores, executor=executor, allow_unanswered=True)
        seeds = [
            f"{comp.policies[a].get('seed')} vs {comp.policies[b].get('seed')}"
            for a, b in comp.means[["a", "b"]].values
        ]
        yield "seeds", {"group": name, "teacher": name.removeprefix("e2e-"), "pair": seeds}, comp


def write_e2e_results(
    cfg: Any,
    cs: ContextSet,
    tables: dict[str, ResponseTable],
    e2e: E2ETrials,
    gp_last: dict[int, str],
    gp_per_context: pd.DataFrame,
    results: Path,
    executor: Any = None,
) -> None:
    """Run :func:`e2e_comparisons` and write the files of the module doc. ``gp_per_context``: the
    study's own per-context rows (the GP-SARSA comparisons), for the agreement beside."""
    scores = list(cfg.scores)
    frames, per_frames, dis_frames, slice_frames = [], [], [], []
    seed_rows = []
    for kind, extra, comp in e2e_comparisons(cfg, tables, e2e, gp_last, executor):
        m = analysis.means_with_ci(comp, scores, n_resamples=cfg.bootstrap, seed=cfg.analysis_seed)
        m = m.drop(columns=["pair"], errors="ignore")
        for col, val in reversed([("comparison", kind), *extra.items()]):
            m.insert(0, col, val)
        if "TMR" in scores:  # a failed context counts as a mismatch (the models may fail to answer)
            m["TMR_all"] = comp.per_context["TMR"].fillna(0.0).groupby(comp.per_context["pair"]).mean().to_numpy()
        frames.append(m)
        per = comp.per_context.copy()
        per.insert(0, "kind", f"e2e-{kind}")
        per.insert(1, "context_set", "ccol-all")
        per.insert(2, "group", extra["group"])
        per_frames.append(per)
        if kind == "teacher":
            p = len(comp.means) - 1  # the last checkpoint against its teacher
            ids = {comp.means["a"].iloc[p], comp.means["b"].iloc[p]}
            tl = [tb for tb in tables.values() if tb.id in ids]
            by = "CMR" if "CMR" in scores else scores[0]
            d = analysis.disagreements(comp, cs, tl, pair=p, top=cfg.disagreements, by=by)
            d.insert(0, "comparison", f"e2e/ccol-all/{comp.means['a'].iloc[p]} vs {comp.means['b'].iloc[p]}")
            dis_frames.append(d)
            kinds = ["acttype", "slot", "uncertainty"] + (["turn"] if any("turn" in x for x in cs.metas) else [])
            sl = slice_scores(comp, kinds, contexts=cs, tables=tl)
            sl = sl[sl["pair"] == p].copy()
            sl["pair"] = f"{extra['group']} seed {extra['seed']} vs teacher"
            sl.insert(0, "kind", "e2e")
            sl.insert(1, "context_set", "ccol-all")
            slice_frames.append(sl)
        if kind == "seeds":
            pairs = list(zip(comp.means["a"], comp.means["b"]))
            for score in scores:
                r = analysis.pairs_mean_ci(comp, pairs, score=score, n_resamples=cfg.bootstrap, seed=cfg.analysis_seed)
                seed_rows.append(
                    {
                        "group": extra["group"],
                        "score": score,
                        "mean": r.mean,
                        "lo": r.lo,
                        "hi": r.hi,
                        "n_pairs": r.n_pairs,
                        "n_trials": r.n_trials,
                        "n_contexts": r.n_contexts,
                        "pair_min": float(comp.means[score].min()),
                        "pair_max": float(comp.means[score].max()),
                    }
                )
    out = pd.concat(frames, ignore_index=True)
    for col in ("seed", "checkpoint"):
        out[col] = out[col].astype("Int64")
    first = ["comparison", "group", "teacher", "seed", "checkpoint", "pair"]
    out = out[[c for c in first if c in out] + [c for c in out if c not in first]]
    write_csv(out, results / "e2e.csv")
    per_all = pd.concat(per_frames, ignore_index=True)
    (results / "per_context").mkdir(exist_ok=True)
    write_csv(per_all, results / "per_context" / "e2e.csv")
    if seed_rows:
        write_csv(pd.DataFrame(seed_rows), results / "e2e_seeds.csv")
    write_csv(pd.concat(dis_frames, ignore_index=True), results / "e2e_disagreements.csv")
    write_csv(pd.concat(slice_frames, ignore_index=True), results / "e2e_slices.csv")
    _write_agreement(scores, per_all[per_all["group"].str.startswith("e2e-")], gp_per_context, results)


def _write_agreement(scores: Sequence[str], e2e_rows: pd.DataFrame, gp_rows: pd.DataFrame, results: Path) -> None:
    """The CER–USE cosine agreement (paper Sec. 5) over the end-to-end comparisons' rows, the
    GP-SARSA comparisons' rows and both; and every score pair's correlation over the first."""
    corr, _ = analysis.score_agreement(e2e_rows, scores)
    write_csv(corr.rename_axis("score").reset_index(), results / "e2e_score_corr.csv")
    if not all(s in scores for s in _CLAIM):
        return
    x, y = _CLAIM
    rows = []
    subsets = {"end-to-end pairs": e2e_rows, "GP-SARSA pairs": gp_rows, "all pairs": pd.concat([e2e_rows, gp_rows])}
    # mismatches only: the rows whose acts differ (TMR 0), when TMR is scored
    modes = (False, True) if "TMR" in scores else (False,)
    for name, df in subsets.items():
        for only in modes:
            c, mse = analysis.score_agreement(df, [x, y, *(["TMR"] if only else [])], only_mismatch=only)
            rows.append(
                {
                    "rows": name,
                    "only_mismatch": only,
                    "score_a": x,
                    "score_b": y,
                    "pearson": _num(c.loc[x, y]),
                    "mse": _num(mse.loc[x, y]),
                    "n": int(c.attrs["n_rows"]),
                    "n_dropped_nan": int(c.attrs["n_dropped_nan"]),
                }
            )
    write_csv(pd.DataFrame(rows), results / "e2e_agreement.csv")


def _num(v: Any) -> float:
    v = float(v)
    return v if math.isfinite(v) else math.nan


# ----------------------------------------------------------------------------- summaries
#: The scores of the summary tables (those of the config that are present).
SUMMARY_SCORES = ("TMR_all", "TMR", "DMR", "CMR", "CER", "USE_cos", "BLEU4", "BERTScore")


def summary_tables(results: Path) -> dict[str, pd.DataFrame]:
    """The end-to-end study's answers as small tables (the report's section and the README's,
    ``python -m experiments.readme_tables``), from ``results/``:

    * ``teacher`` — each trial's last checkpoint against its teacher, with failures and task
      success beside the teacher's;
    * ``curve`` — TMR (failures as mismatches) against the teacher at every checkpoint, one row per
      trial, one column per checkpoint;
    * ``seeds`` — per group, the mean over seed pairs with its two-level interval;
    * ``agreement`` — the CER–USE cosine agreement.
    """
    e2e = pd.read_csv(results / "e2e.csv")
    training = pd.read_csv(results / "e2e_training.csv")
    teach = e2e[e2e["comparison"] == "teacher"]
    last = teach.loc[teach.groupby(["group", "seed"])["checkpoint"].idxmax()].sort_index()
    scores = [s for s in SUMMARY_SCORES if s in last]
    t = last[["teacher", "seed", "checkpoint", "n", *scores]].copy()
    # the contexts left out of the means: those the model (or, seldom, its teacher) failed
    t["failed"] = last[next(c for c in last if c.startswith("n_missing_"))].to_numpy()
    succ = training.set_index(["teacher", "seed"])
    t["TSR"] = [succ.loc[(a, b), "tsr"] for a, b in zip(t["teacher"], t["seed"])]
    t["TSR teacher"] = [succ.loc[(a, b), "tsr_teacher"] for a, b in zip(t["teacher"], t["seed"])]
    curve = teach.pivot_table(index=["teacher", "seed"], columns="checkpoint", values="TMR_all", sort=False)
    curve.columns = [f"{int(c):,}" for c in curve.columns]
    out = {"teacher": t.reset_index(drop=True), "curve": curve.reset_index()}
    if (results / "e2e_seeds.csv").is_file():
        seeds = pd.read_csv(results / "e2e_seeds.csv")
        out["seeds"] = seeds[seeds["score"].isin(SUMMARY_SCORES)].reset_index(drop=True)
    if (results / "e2e_agreement.csv").is_file():
        out["agreement"] = pd.read_csv(results / "e2e_agreement.csv")
    return out
