"""The robustness probe of a study (``robustness = [noise levels]`` in the config): the last
checkpoint of each trial and the handcrafted policy, each against itself on C_gen perturbed at
each level (:mod:`contexts.robustness`). Its study stage (``robustness``, into ``robustness/``)
and its report section."""

from __future__ import annotations

from behavsim.report import plain_table
from contexts.robustness import robustness, write_robustness
from experiments.report import Report, Section
from experiments.stages.respond import response_tables
from experiments.stages.train import trial_specs
from experiments.study import Stage, Study

__all__ = ["STAGE", "SECTION"]


def _probe(study: Study) -> None:
    cfg, run = study.cfg, study.run
    specs = [v[-1] for v in trial_specs(study).values()] + ["handcrafted"]
    ids = [response_tables(study)["cgen"][s].id for s in specs]
    cgen = run.context_sets["cgen"]
    table, meta = robustness(specs, cgen, cfg.robustness, scores=cfg.scores, policy_ids=ids, domain=cfg.domain)
    for p in write_robustness(table, run.relative_meta(meta), run.path("robustness")):
        if p.suffix == ".svg":
            run.add_figure(p, f"Robustness: {p.stem.replace('_', ' ')}")


def _table(report: Report) -> str | None:
    """The probe's table; None without one."""
    path = report.dir / "robustness" / "robustness.csv"
    if not path.exists():
        return None
    df = report.csv(
        "robustness.csv", path=path, required=("policy", "noise"), numeric=("noise", "changed"), scores=True
    )
    assert df is not None
    cols = [c for c in ("policy", "noise", "changed", "TMR", "DMR", "CER", "CMR") if c in df.columns]
    return (
        "<p>Each policy's answer on a context against its own answer on the same context with a perturbed "
        "belief (value swaps, N-best confusions and jitter at the given rate; <code>contexts perturb</code>). "
        "TMR = 1 at noise 0 by construction.</p>\n"
        + plain_table(
            df,
            cols,
            "robustness",
            "Each policy against itself on C<sub>gen</sub> with noisier beliefs (<code>robustness/robustness.csv</code>).",
            int_cols=("changed",),
            text_cols=("policy",),
        )
    )


STAGE = Stage(
    name="robustness",
    order=800,
    title=lambda cfg: f"robustness: noise levels {list(cfg.robustness)} on cgen",
    run=_probe,
    inputs={"responses/cgen/": "the policies' ids", "contexts/": "C_gen, perturbed"},
    outputs={"robustness/": "robustness.csv and its figures"},
    record=("robustness/",),
    applies=lambda study: bool(study.cfg.robustness),
)
SECTION = Section(
    key="robustness",
    title="Robustness: each policy against itself on noisier beliefs",
    order=1200,
    render=_table,
    inputs={"robustness/robustness.csv": "each policy against itself at each noise level"},
    absent="set <code>robustness = [0, 0.05, 0.15, 0.3]</code> in the config",
    figures=("robustness/*",),
)
