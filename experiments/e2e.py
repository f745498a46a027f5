"""The end-to-end models in a study, in one module: their settings (``e2e_teachers``,
``e2e_dialogues``, ``e2e_epochs``), their study stages and their report section.

behavsim's end-to-end model (:mod:`policies.e2e`, ``behavsim train --policy e2e``) is
trained by imitation of each teacher with each seed of the study: ``handcrafted``, or ``gp`` — the
last checkpoint of the GP-SARSA trial of the same seed (the config's first reward), answering with
the same generator as in the study's own comparisons. A trial's folder is
``train/e2e-<teacher>-s<seed>/``, one checkpoint per epoch; the teacher's dialogues are its own
(``SeedSequence([seed, 7, i])``), so no collected context was trained on.

The stages (after the GP-SARSA trials, whose last checkpoints are the ``gp`` teachers):

* ``e2e-train`` (every run; finished trials are not opened again) — ``results/e2e_training.csv``,
  per trial: the last checkpoint's loss, and task success and length over the study's
  ``eval_dialogues`` evaluation dialogues played by the model (its acts drive the dialogue) and
  by its teacher, on the same users and goals (greedy both);
* ``e2e-respond`` — every checkpoint on the collected contexts C_col^all (they carry the dialogue
  histories the models read; the grid C_gen has none);
* ``e2e`` (up to date unless its inputs change):

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

The report's section (``e2e``): how closely each model reproduces its teacher and when, whether
end-to-end seeds differ more than GP-SARSA seeds, the CER–USE cosine agreement of the paper's
Sec. 5, and where the models depart from their teachers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from behavsim import ConfigError, ContextSet, ResponseTable, analysis, compare, get_executor, slice_scores
from behavsim.io import atomic_path, file_digest
from behavsim.report import escape, fmt_int, fmt_num, note, plain_table
from experiments.report import Section
from experiments.stages.analyse import CLAIM, claim_agreement
from experiments.stages.respond import respond_set
from experiments.stages.train import gp_spec
from experiments.study import Stage, Study, StudyConfig, stage_key
from policies.e2e import E2EConfig, list_e2e_checkpoints, train_e2e
from policies.training.play import play_dialogues

__all__ = [
    "E2E_TEACHERS",
    "E2ETrials",
    "e2e_config",
    "e2e_trials",
    "e2e_comparisons",
    "summary_tables",
    "e2e_section",
    "TRAIN_STAGE",
    "RESPOND_STAGE",
    "COMPARE_STAGE",
    "SECTION",
]

#: The teachers an end-to-end trial may imitate: the handcrafted policy, or the last checkpoint of
#: the GP-SARSA trial with the same seed (the config's first reward).
E2E_TEACHERS = ("handcrafted", "gp")
#: The study config's keys of the end-to-end trials, with their defaults (no trials).
SETTINGS = {"e2e_teachers": (), "e2e_dialogues": 0, "e2e_epochs": 0}

_SUCCESS_FILE = "success.json"
_PER_CONTEXT = "results/per_context/all.csv"


# ------------------------------------------------------------------------------- settings
def _teachers(cfg: StudyConfig) -> tuple[str, ...]:
    return tuple(cfg.settings["e2e_teachers"])


def _check(cfg: StudyConfig) -> None:
    """The end-to-end settings, and the trainer's own checks, before anything is trained."""
    teachers = _teachers(cfg)
    for t in teachers:
        if t not in E2E_TEACHERS:
            raise ConfigError(f"study config 'e2e_teachers': expected some of {list(E2E_TEACHERS)}, got {t!r}")
    for key in ("e2e_dialogues", "e2e_epochs"):
        v = cfg.settings[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ConfigError(f"study config {key!r}: expected a non-negative integer (0: the default), got {v!r}")
    if len(set(teachers)) != len(teachers):
        raise ConfigError(f"study config 'e2e_teachers': a teacher is listed twice: {list(teachers)}")
    if teachers:
        e2e_config(cfg, "handcrafted", cfg.seeds[0])


def e2e_config(cfg: StudyConfig, teacher_spec: str, seed: int) -> E2EConfig:
    """The training configuration of one end-to-end trial of study ``cfg``: the trainer's defaults
    but for the teacher, the seed, the study's domain and user, ``e2e_dialogues`` and ``e2e_epochs``
    (when set), one checkpoint per epoch, no chat mode (the study asks the models as ``e2e:DIR``), no
    DAgger rounds (the teacher's dialogues alone: the study's time), one thread (the study trains
    one trial per core) and belief weight 1 (every target alike: the study's results as published,
    from before the trainer's default became 3)."""
    kw: dict[str, Any] = {"teacher": teacher_spec, "seed": seed, "domain": cfg.domain, "user": cfg.user}
    kw.update(chat=False, threads=1, dagger_dialogues=0, belief_weight=1.0)
    if cfg.settings["e2e_dialogues"]:
        kw["dialogues"] = cfg.settings["e2e_dialogues"]
    if cfg.settings["e2e_epochs"]:
        kw["epochs"] = cfg.settings["e2e_epochs"]
    kw["checkpoint_every"] = kw.get("dialogues", E2EConfig.dialogues)
    try:
        return E2EConfig(**kw)
    except ConfigError as exc:
        raise ConfigError(f"study config: end-to-end trials: {exc}") from None


# --------------------------------------------------------------------------------- trials
@dataclass
class E2ETrials:
    """The end-to-end trials of a run: ``specs[(teacher, seed)]`` the ``e2e:DIR`` spec of each
    checkpoint in order; ``teachers[(teacher, seed)]`` the teacher's spec as the study answers with it;
    ``configs`` and ``dirs`` each trial's training configuration and folder; ``gp_last[seed]`` the
    spec of the last checkpoint of the seed's GP-SARSA trial of the first reward (a ``gp`` teacher)."""

    specs: dict[tuple[str, int], list[str]]
    teachers: dict[tuple[str, int], str]
    configs: dict[tuple[str, int], E2EConfig]
    dirs: dict[tuple[str, int], Path]
    gp_last: dict[int, str]

    @property
    def all_specs(self) -> list[str]:
        return [s for v in self.specs.values() for s in v]


def e2e_trials(study: Study) -> E2ETrials:
    """The end-to-end trials of the study, as its run folder holds them: every teacher x seed; a
    ``gp`` teacher is the last checkpoint of the GP-SARSA trial of the seed (the first reward)."""
    cfg, run = study.cfg, study.run
    keys = [(teacher, seed) for teacher in _teachers(cfg) for seed in cfg.seeds]
    gp_last = {s: gp_spec(cfg, run.checkpoints(cfg.rewards[0], s)[-1], s) for s in cfg.seeds}
    configs = {(t, s): e2e_config(cfg, "handcrafted" if t == "handcrafted" else gp_last[s], s) for t, s in keys}
    dirs = {(t, s): run.path(f"train/e2e-{t}-s{s}") for t, s in keys}
    return E2ETrials(
        specs={k: [f"e2e:{p}" for _, p in list_e2e_checkpoints(dirs[k])] for k in keys},
        teachers={k: c.teacher for k, c in configs.items()},
        configs=configs,
        dirs=dirs,
        gp_last=gp_last,
    )


def _train_task(job: tuple[dict[str, Any], str, int]) -> None:
    """One trial (in a worker process): train or resume, then play the evaluation dialogues with
    its last checkpoint and with its teacher (``success.json`` in the trial folder)."""
    import torch  # an optional dependency: only the end-to-end trials need it

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


def _train_title(cfg: StudyConfig) -> str:
    config = e2e_config(cfg, "handcrafted", cfg.seeds[0])
    return (
        f"end-to-end trials: teachers {list(_teachers(cfg))} x seeds {list(cfg.seeds)}, "
        f"{config.dialogues:,} teacher dialogues, {config.epochs} epochs each"
    )


def _train(study: Study) -> None:
    """Train (or resume) every end-to-end trial, measure their task success and write
    ``results/e2e_training.csv``. Trials run in processes on this machine (a local pool of the
    executor's size), each on one thread; finished trials are not opened again."""
    cfg, log = study.cfg, study.log
    trials = e2e_trials(study)
    keys = list(trials.configs)
    todo = [k for k in keys if _read_success(trials.configs[k], trials.dirs[k], cfg.eval_dialogues) is None]
    if todo:
        ex = get_executor(study.executor)
        workers = getattr(ex, "workers", None) if ex.is_local else None
        if not ex.is_local:
            log(f"      (the end-to-end trials train on this machine, not on {ex.spec})")

        def done(i: int, _: None) -> None:
            teacher, seed = todo[i]
            log(f"      e2e {teacher} seed {seed}: {len(list_e2e_checkpoints(trials.dirs[todo[i]]))} checkpoints")

        jobs = [(trials.configs[k].to_dict(), str(trials.dirs[k]), cfg.eval_dialogues) for k in todo]
        get_executor("local" if workers is None else f"local:{workers}").map(_train_task, jobs, on_result=done)
    rows = []
    for (teacher, seed), config in trials.configs.items():
        out = trials.dirs[(teacher, seed)]
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
    study.run.write_csv("results/e2e_training.csv", pd.DataFrame(rows))


def _respond(study: Study) -> None:
    specs = e2e_trials(study).all_specs
    study.log(f"      end-to-end checkpoints on ccol-all: {len(specs)}")
    respond_set(study, "ccol-all", specs)


# ---------------------------------------------------------------------------- comparisons
def _group(teacher: str) -> str:
    return f"e2e-{teacher}"


def e2e_comparisons(
    cfg: StudyConfig,
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
    groups = {_group(t): [e2e.specs[(t, s)][-1] for s in cfg.seeds] for t in _teachers(cfg)}
    groups[f"gp-{cfg.rewards[0]}"] = [gp_last[s] for s in cfg.seeds]
    for name, specs in groups.items():
        comp = compare([tables[s] for s in specs], "all", scores=scores, executor=executor, allow_unanswered=True)
        seeds = [
            f"{comp.policies[a].get('seed')} vs {comp.policies[b].get('seed')}"
            for a, b in comp.means[["a", "b"]].values
        ]
        yield "seeds", {"group": name, "teacher": name.removeprefix("e2e-"), "pair": seeds}, comp


def _compared(study: Study) -> dict[str, ResponseTable]:
    """The tables of C_col^all the comparisons use: every end-to-end checkpoint, the teachers and
    the GP-SARSA trials' last checkpoints."""
    e2e, tables = e2e_trials(study), study.run.responses("ccol-all").tables
    specs = [*e2e.all_specs, *e2e.teachers.values(), *e2e.gp_last.values()]
    return {s: tables[s] for s in dict.fromkeys(specs)}


def _key(study: Study) -> str:
    return stage_key(
        study.cfg.to_dict(),
        study.run.context_sets["ccol-all"].fingerprint,
        sorted(t.id for t in _compared(study).values()),
        file_digest(study.run.path(_PER_CONTEXT)),
    )


def _departures(cfg: StudyConfig, comp: Any, cs: ContextSet, tables: dict[str, ResponseTable], extra: dict) -> tuple:
    """Where the last checkpoint of a trial departs from its teacher: its most-disagreeing contexts
    and its slices."""
    scores = list(cfg.scores)
    p = len(comp.means) - 1  # the last checkpoint against its teacher
    ids = {comp.means["a"].iloc[p], comp.means["b"].iloc[p]}
    tl = [tb for tb in tables.values() if tb.id in ids]
    by = "CMR" if "CMR" in scores else scores[0]
    d = analysis.disagreements(comp, cs, tl, pair=p, top=cfg.disagreements, by=by)
    d.insert(0, "comparison", f"e2e/ccol-all/{comp.means['a'].iloc[p]} vs {comp.means['b'].iloc[p]}")
    kinds = ["acttype", "slot", "uncertainty"] + (["turn"] if any("turn" in x for x in cs.metas) else [])
    sl = slice_scores(comp, kinds, contexts=cs, tables=tl)
    sl = sl[sl["pair"] == p].copy()
    sl["pair"] = f"{extra['group']} seed {extra['seed']} vs teacher"
    sl.insert(0, "kind", "e2e")
    sl.insert(1, "context_set", "ccol-all")
    return d, sl


def _seed_rows(cfg: StudyConfig, comp: Any, group: str) -> list[dict[str, Any]]:
    """Per score, the mean over a group's seed pairs with its two-level interval."""
    pairs = list(zip(comp.means["a"], comp.means["b"]))
    rows = []
    for score in cfg.scores:
        r = analysis.pairs_mean_ci(comp, pairs, score=score, n_resamples=cfg.bootstrap, seed=cfg.analysis_seed)
        rows.append(
            {
                "group": group,
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
    return rows


def _means(cfg: StudyConfig, kind: str, extra: dict[str, Any], comp: Any) -> pd.DataFrame:
    m = analysis.means_with_ci(comp, list(cfg.scores), n_resamples=cfg.bootstrap, seed=cfg.analysis_seed)
    m = m.drop(columns=["pair"], errors="ignore")
    for col, val in reversed([("comparison", kind), *extra.items()]):
        m.insert(0, col, val)
    if "TMR" in cfg.scores:  # a failed context counts as a mismatch (the models may fail to answer)
        m["TMR_all"] = comp.per_context["TMR"].fillna(0.0).groupby(comp.per_context["pair"]).mean().to_numpy()
    return m


def _compare(study: Study) -> None:
    """Run :func:`e2e_comparisons` and write the files of the module doc; the agreement beside
    the study's own per-context rows (the GP-SARSA comparisons)."""
    cfg, run = study.cfg, study.run
    cs, tables, e2e = run.context_sets["ccol-all"], _compared(study), e2e_trials(study)
    frames, per_frames, dis_frames, slice_frames, seed_rows = [], [], [], [], []
    for kind, extra, comp in e2e_comparisons(cfg, tables, e2e, e2e.gp_last, study.executor):
        frames.append(_means(cfg, kind, extra, comp))
        per = comp.per_context.copy()
        per.insert(0, "kind", f"e2e-{kind}")
        per.insert(1, "context_set", "ccol-all")
        per.insert(2, "group", extra["group"])
        per_frames.append(per)
        if kind == "teacher":
            d, sl = _departures(cfg, comp, cs, tables, extra)
            dis_frames.append(d)
            slice_frames.append(sl)
        if kind == "seeds":
            seed_rows += _seed_rows(cfg, comp, extra["group"])
    out = pd.concat(frames, ignore_index=True)
    for col in ("seed", "checkpoint"):
        out[col] = out[col].astype("Int64")
    first = ["comparison", "group", "teacher", "seed", "checkpoint", "pair"]
    run.write_csv("results/e2e.csv", out[[c for c in first if c in out] + [c for c in out if c not in first]])
    per_all = pd.concat(per_frames, ignore_index=True)
    run.write_csv("results/per_context/e2e.csv", per_all)
    if seed_rows:
        run.write_csv("results/e2e_seeds.csv", pd.DataFrame(seed_rows))
    run.write_csv("results/e2e_disagreements.csv", pd.concat(dis_frames, ignore_index=True))
    run.write_csv("results/e2e_slices.csv", pd.concat(slice_frames, ignore_index=True))
    _write_agreement(study, per_all[per_all["group"].str.startswith("e2e-")], run.read_csv(_PER_CONTEXT))


def _write_agreement(study: Study, e2e_rows: pd.DataFrame, gp_rows: pd.DataFrame) -> None:
    """The CER–USE cosine agreement (paper Sec. 5) over the end-to-end comparisons' rows, the
    GP-SARSA comparisons' rows and both; and every score pair's correlation over the first."""
    scores: Sequence[str] = list(study.cfg.scores)
    corr, _ = analysis.score_agreement(e2e_rows, scores)
    study.run.write_csv("results/e2e_score_corr.csv", corr.rename_axis("score").reset_index())
    if not all(s in scores for s in CLAIM):
        return
    subsets = {"end-to-end pairs": e2e_rows, "GP-SARSA pairs": gp_rows, "all pairs": pd.concat([e2e_rows, gp_rows])}
    study.run.write_csv("results/e2e_agreement.csv", claim_agreement(subsets, scores, "rows"))


# ------------------------------------------------------------------------------ summaries
#: The scores of the summary tables (those of the config that are present).
SUMMARY_SCORES = ("TMR_all", "TMR", "DMR", "CMR", "CER", "USE_cos", "BLEU4", "BERTScore")
#: Disagreements shown per trial in the report (the file holds the config's ``disagreements``).
_SHOWN = 3


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


def _teacher_table(t: dict[str, pd.DataFrame]) -> str:
    teacher = t["teacher"].copy()
    teacher["trial"] = [f"{a} seed {int(b)}" for a, b in zip(teacher["teacher"], teacher["seed"])]
    teacher["failed"] = [f"{int(f)} of {int(n)}" for f, n in zip(teacher["failed"], teacher["n"])]
    scores = [c for c in SUMMARY_SCORES if c in teacher]
    return plain_table(
        teacher.rename(columns={"TMR_all": "TMR (all)"}),
        [
            "trial",
            "checkpoint",
            *[("TMR (all)" if s == "TMR_all" else s) for s in scores],
            "failed",
            "TSR",
            "TSR teacher",
        ],
        "e2e-teacher",
        "Each end-to-end model (last checkpoint) against its teacher on C<sub>col</sub><sup>all</sup>: "
        "TMR (all) counts a context the model failed to answer as a mismatch; the other scores are over "
        "the answered contexts. TSR: task success over the study's evaluation dialogues, the model's acts "
        "driving the dialogue, beside its teacher's on the same users and goals.",
        int_cols=("checkpoint",),
        text_cols=("trial", "failed"),
    )


def _curve_table(t: dict[str, pd.DataFrame]) -> str:
    curve = t["curve"].copy()
    curve["trial"] = [f"{a} seed {int(b)}" for a, b in zip(curve["teacher"], curve["seed"])]
    cks = [c for c in curve.columns if c not in ("teacher", "seed", "trial")]
    return plain_table(
        curve,
        ["trial", *cks],
        "e2e-curve",
        "Imitation over training: TMR (all contexts) of each checkpoint against the teacher, by teacher "
        "dialogues trained on (repeats counted); the behaviour has converged where the row stops rising.",
        text_cols=("trial",),
    )


def _seeds_table(seeds: pd.DataFrame) -> str:
    wide = []
    for group, g in seeds.groupby("group", sort=False):
        row: dict[str, object] = {"group": group, "seed pairs": str(int(g["n_pairs"].iloc[0]))}
        for _, r in g.iterrows():
            row[str(r["score"])] = f"{fmt_num(r['mean'])} [{fmt_num(r['lo'])}, {fmt_num(r['hi'])}]"
        wide.append(row)
    cols = ["group", "seed pairs", *[c for c in ("TMR", "DMR", "CMR", "USE_cos", "BLEU4") if c in wide[0]]]
    return plain_table(
        pd.DataFrame(wide),
        cols,
        "e2e-seeds",
        "Seeds: the last checkpoints of one group's trials against each other — the mean over the seed "
        "pairs with its 95% two-level bootstrap interval (trials within the group, then contexts). "
        "With a few seeds per group no test over runs can be significant: the intervals say how far "
        "the groups differ.",
        text_cols=cols,
    )


def _agreement_table(agreement: pd.DataFrame) -> str:
    a = agreement.copy()
    a["rows used"] = ["mismatches only" if m else "all" for m in a["only_mismatch"]]
    a["n"] = [fmt_int(v, grouped=True) for v in a["n"]]
    return plain_table(
        a,
        ["rows", "rows used", "pearson", "mse", "n"],
        "e2e-agreement",
        "CER (from the acts) against USE cosine (from the text alone) over every (pair, context): the "
        "paper's Sec. 5 finds them \u201cquite highly\u201d correlated, so that systems with text output "
        "only can be compared like those with acts. The end-to-end pairs answer with both, so the text "
        "score is checked against their act-level truth; mismatches only: the contexts where the acts "
        "differ (TMR 0).",
        text_cols=("rows", "rows used", "n"),
    )


def _departures_table(path: Path) -> str:
    d = pd.read_csv(path, dtype=str, keep_default_na=False)
    if d.empty:
        return ""
    d = d[d["rank"].astype(int) <= _SHOWN]
    rows = "".join(
        f"<tr><td>{escape(r['comparison'].split('/')[-1])}</td><td>{escape(r['summary'])}</td>"
        f"<td><code>{escape(r['act_a'])}</code></td><td><code>{escape(r['act_b'])}</code></td></tr>\n"
        for _, r in d.iterrows()
    )
    return (
        "<details><summary>Where the models depart from their teachers "
        f"(the {_SHOWN} contexts of lowest CMR per trial; all in <code>results/e2e_disagreements.csv</code>, "
        "by slice in <code>results/e2e_slices.csv</code>)</summary>\n"
        '<div class="wrap"><table class="data" id="e2e-disagreements"><thead><tr><th>teacher vs model</th>'
        "<th>belief state</th><th>teacher's act</th><th>model's act</th></tr></thead><tbody>\n"
        + rows
        + "</tbody></table></div></details>\n"
    )


def e2e_section(results: Path) -> str:
    """The report's section: each model against its teacher, imitation over training, seeds, the
    CER–USE agreement and, folded, where the models depart from their teachers."""
    t = summary_tables(results)
    out = [_teacher_table(t), _curve_table(t)]
    if "seeds" in t:
        out.append(_seeds_table(t["seeds"]))
    if "agreement" in t:
        out.append(_agreement_table(t["agreement"]))
    if (results / "e2e_disagreements.csv").is_file():
        out.append(_departures_table(results / "e2e_disagreements.csv"))
    return "".join(out) or note("<code>results/e2e.csv</code> has no rows.")


# ------------------------------------------------------------------------ stages, section
def _applies(study: Study) -> bool:
    return bool(_teachers(study.cfg))


TRAIN_STAGE = Stage(
    name="e2e-train",
    order=150,
    title=_train_title,
    run=_train,
    inputs={"train/": "the GP-SARSA trials' last checkpoints (the gp teachers)"},
    outputs={
        "train/e2e-*/": "one folder per trial (e2e-<teacher>-s<seed>): a checkpoint per epoch, success.json",
        "results/e2e_training.csv": "per trial: the last checkpoint's loss and task success beside its teacher's",
    },
    record=("results/e2e_training.csv",),
    applies=_applies,
    settings=SETTINGS,
    check=_check,
)
RESPOND_STAGE = Stage(
    name="e2e-respond",
    order=350,
    title="end-to-end answers on the collected contexts",
    run=_respond,
    inputs={"train/e2e-*/": "the end-to-end checkpoints", "contexts/ccol-all.jsonl": "C_col^all"},
    outputs={"responses/ccol-all/": "one response table per end-to-end checkpoint"},
    applies=_applies,
)
COMPARE_STAGE = Stage(
    name="e2e",
    order=450,
    title="end-to-end trials: against their teachers, over training, across seeds; CER-USE agreement",
    run=_compare,
    inputs={"responses/ccol-all/": "the answers", _PER_CONTEXT: "the GP-SARSA comparisons' rows, for the agreement"},
    outputs={
        "results/e2e.csv": "every comparison: teacher, convergence, seeds",
        "results/e2e_seeds.csv": "per group, the mean over its seed pairs with a two-level interval",
        "results/e2e_agreement.csv": "CER against USE cosine (paper Sec. 5)",
        "results/e2e_score_corr.csv": "every score pair's correlation over the end-to-end rows",
        "results/e2e_disagreements.csv": "where each last checkpoint departs from its teacher",
        "results/e2e_slices.csv": "the same by slice",
        "results/per_context/e2e.csv": "every per-context value of those comparisons",
    },
    key=_key,
    applies=_applies,
)
SECTION = Section(
    key="e2e",
    title="End-to-end models: imitation, seeds and the CER–USE agreement",
    order=900,
    render=lambda report: e2e_section(report.dir / "results"),
    inputs={"results/e2e.csv": "every end-to-end comparison (and the files beside it)"},
    absent='set <code>e2e_teachers = ["handcrafted", "gp"]</code> in the config',
)
