"""Stage ``figures``: every figure of ``results/`` (PNG and SVG; :func:`experiments.plots.study_figures`),
drawn on every run and recorded for the report's check."""

from __future__ import annotations

from experiments.plots import study_figures
from experiments.study import Stage, Study

__all__ = ["FIGURES"]


def _figures(study: Study) -> None:
    cfg, run = study.cfg, study.run
    metrics = run.read_csv("results/metrics.csv")
    run.figures += study_figures(run.root, metrics, rewards=cfg.rewards, seeds=cfg.seeds, scores=cfg.scores)


FIGURES = Stage(
    name="figures",
    order=600,
    title="figures",
    run=_figures,
    inputs={"results/metrics.csv": "the learning curves", "results/": "the comparisons and their analysis"},
    outputs={
        "figures/": "learning_curves, convergence, seeds_<set>_<reward>, per_turn_<reward>, rewards, "
        "score_corr(_mismatch), score_mse(_mismatch) (.png and .svg)"
    },
    record=("figures/",),
)
