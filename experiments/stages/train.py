"""Stage ``train``: the GP-SARSA trials, every reward x seed, a checkpoint every K dialogues, each
evaluated on M dialogues (Table 1) — :mod:`policies.training.train`, which resumes a trial from its
checkpoints; its results (``metrics.csv``, ``table1.csv``) are written on every run."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from experiments.study import Stage, Study, StudyConfig
from policies.training.evaluation import table1
from policies.training.files import METRIC_COLUMNS
from policies.training.train import TrainConfig, run_training

__all__ = ["TRAIN", "gp_spec", "trial_specs"]


def gp_spec(cfg: StudyConfig, path: Path, seed: int) -> str:
    """The policy spec of a GP-SARSA checkpoint of the trial with ``seed``.

    nlg "per-trial": each trial realises its acts with its own paraphrase choice (template
    generator seeded with the trial's seed), so two trials may say one act differently, as the
    paper's generator did (Appendix A row 3); "shared": one generator seed for every policy."""
    return f"checkpoint:{path}:nlg_seed={seed}" if cfg.nlg == "per-trial" else str(path)


def trial_specs(study: Study) -> dict[tuple[str, int], list[str]]:
    """``{(reward, seed): the policy specs of that trial's checkpoints, in training order}``."""
    cfg, run = study.cfg, study.run
    return {(r, s): [gp_spec(cfg, p, s) for p in run.checkpoints(r, s)] for r in cfg.rewards for s in cfg.seeds}


def _title(cfg: StudyConfig) -> str:
    return (
        f"training: rewards {list(cfg.rewards)} x seeds {list(cfg.seeds)}, {cfg.dialogues:,} dialogues each, "
        f"checkpoint every {cfg.checkpoint_every:,}, {cfg.eval_dialogues} evaluation dialogues"
    )


def _train(study: Study) -> None:
    cfg = study.cfg
    tc = TrainConfig(
        policy="gp",
        rewards=cfg.rewards,
        seeds=cfg.seeds,
        dialogues=cfg.dialogues,
        checkpoint_every=cfg.checkpoint_every,
        eval_dialogues=cfg.eval_dialogues,
        domain=cfg.domain,
        user=cfg.user,
        eval_scale=cfg.eval_scale,
    )
    rows = run_training(tc, study.run.path("train"), progress=sys.stderr.isatty(), executor=study.executor)
    metrics = pd.DataFrame(rows)
    metrics = metrics[[c for c in METRIC_COLUMNS if c in metrics] + [c for c in metrics if c not in METRIC_COLUMNS]]
    study.run.write_csv("results/metrics.csv", metrics)
    study.run.write_csv("results/table1.csv", pd.DataFrame(table1(rows)))


TRAIN = Stage(
    name="train",
    order=100,
    title=_title,
    run=_train,
    outputs={
        "train/": "one folder per trial (<reward>-seed<seed>): its checkpoints, metrics.csv, config.json",
        "results/metrics.csv": "every trial evaluated at every checkpoint",
        "results/table1.csv": "Table 1: TSR, AIQ, ADL per number of dialogues and reward, mean over seeds",
    },
    record=("results/metrics.csv", "results/table1.csv"),
)
