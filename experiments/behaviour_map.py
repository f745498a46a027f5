"""The behaviour map: every policy of the run on C_gen (TMR) as a point — classical MDS of
1 − TMR over every pair (:func:`behavsim.behaviour_map`), each trial's checkpoints joined in
training order — and the dendrogram of the final policies. Its study stage (``map``, drawn on
every run into ``map/``) and its report section."""

from __future__ import annotations

from behavsim import behaviour_map, write_map
from experiments.report import Report, Section
from experiments.stages.respond import response_tables
from experiments.study import Stage, Study

__all__ = ["STAGE", "SECTION"]


def _map(study: Study) -> None:
    run = study.run
    tables = list(response_tables(study)["cgen"].values())
    if len(tables) < 3:
        return
    bm = behaviour_map(tables, "TMR", executor=study.executor)
    bm.policies = run.relative_meta(bm.policies)  # tables of older run folders name checkpoints by absolute path
    paths = write_map(bm, run.path("map"))
    run.add_figure(
        paths["map.svg"], "Behaviour map: MDS of 1 − TMR on cgen, each trial's checkpoints joined in training order"
    )
    if "dendrogram.svg" in paths:
        run.add_figure(paths["dendrogram.svg"], "Dendrogram of the final policies (average linkage of 1 − TMR on cgen)")


def _note(report: Report) -> str | None:
    """How to read the behaviour map; None when the run has none."""
    if not (report.dir / "map" / "map.csv").exists():
        return None
    return (
        "<p>Each point is a policy; the distance between two points approximates 1 − TMR of the pair on "
        "C<sub>gen</sub> (classical MDS). A trial's checkpoints are joined in training order: a path that "
        "settles is a behaviour that converged, and where the seeds' end points lie shows how alike the "
        "trials became. Coordinates: <code>map/map.csv</code>; distances: <code>map/distances.csv</code>.</p>\n"
    )


STAGE = Stage(
    name="map",
    order=700,
    title="behaviour map (TMR on cgen)",
    run=_map,
    inputs={"responses/cgen/": "every policy's answers on C_gen"},
    outputs={"map/": "map.csv, distances.csv, dendrogram.csv, map.meta.json, map and dendrogram (.png, .svg)"},
    record=("map/",),
)
SECTION = Section(
    key="map",
    title="Behaviour map: every policy against every other",
    order=1100,
    render=_note,
    inputs={"map/map.csv": "every policy's coordinates"},
    figures=("map/*",),
)
