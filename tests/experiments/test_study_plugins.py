"""A study stage and a report section registered from code — here, from this test file — run in a
study and appear in its report, where their ``order`` puts them, with no change to behavsim. A
package adds them the same way through the entry-point groups ``behavsim.study_stages`` and
``behavsim.report_sections`` (as the built-in ones are, in setup.cfg)."""

import json
import shutil
from importlib import metadata

import pandas as pd
import pytest

from behavsim import ConfigError, ResponseTable, plots
from behavsim.report import plain_table
from experiments.report import Report, Section, list_report_sections, register_section, report_sections
from experiments.study import (
    Stage,
    Study,
    list_study_stages,
    load_config,
    register_stage,
    run_study,
    stage_key,
    study_stages,
)

BUILT_IN_STAGES = [
    "legacy",
    "train",
    "e2e-train",
    "contexts",
    "corpus-contexts",
    "corpus-e2e",
    "respond",
    "e2e-respond",
    "corpus-respond",
    "compare",
    "e2e",
    "corpus",
    "analyse",
    "figures",
    "map",
    "robustness",
    "manifest",
    "report",
]
BUILT_IN_SECTIONS = [
    "answers",
    "run",
    "performance",
    "convergence",
    "seeds",
    "per_turn",
    "rewards",
    "policies",
    "e2e",
    "corpus",
    "scores",
    "map",
    "robustness",
    "tests",
    "slices",
    "disagreements",
    "other",
    "signatures",
    "config",
]


# ------------------------------------------------------------------- a stage and its section
def _count_requests(study: Study) -> None:
    """Per context set, how many contexts the handcrafted policy answers with a request, and a bar
    chart of it (in a folder of its own)."""
    rows = []
    for name in study.run.context_sets:
        acts = [str(a) for a in study.run.responses(name).tables["handcrafted"].acts]
        rows.append(
            {
                "context_set": name,
                "contexts": len(acts),
                "requests": sum(a.startswith("request") for a in acts),
                "label": study.cfg.settings["requests_label"],
            }
        )
    df = pd.DataFrame(rows)
    study.run.write_csv("results/requests.csv", df)
    fig = plots.new_figure(3, 2)
    fig.subplots().bar(df["context_set"], df["requests"])
    _, svg = plots.save_figure(fig, study.run.path("requests/requests"))
    study.run.add_figure(svg, "Requests per context set")


REQUESTS = Stage(
    name="requests",
    order=460,  # after the comparisons (400) and the end-to-end ones (450), before the analysis (500)
    title="requests: how often the handcrafted policy asks",
    run=_count_requests,
    inputs={"responses/": "the handcrafted policy's answers"},
    outputs={"results/requests.csv": "requests per context set", "requests/": "its bar chart"},
    key=lambda study: stage_key(study.cfg.to_dict(), [cs.fingerprint for cs in study.run.context_sets.values()]),
    settings={"requests_label": "handcrafted"},
)


def _requests_table(report: Report) -> str:
    df = report.csv("requests.csv", required=("context_set", "contexts", "requests"), numeric=("contexts", "requests"))
    return plain_table(
        df,
        ["context_set", "contexts", "requests"],
        "requests",
        "Requests per context set",
        int_cols=("contexts", "requests"),
        text_cols=("context_set",),
    )


REQUESTS_SECTION = Section(
    key="requests",
    title="Requests: how often the handcrafted policy asks",
    order=950,  # after the end-to-end models (900), before the score analysis (1000)
    render=_requests_table,
    inputs={"results/requests.csv": "requests per context set"},
    absent="no results/requests.csv",
    figures=("requests/*",),
)


@pytest.fixture
def registered():
    register_stage(REQUESTS)
    register_section(REQUESTS_SECTION)
    try:
        yield
    finally:
        study_stages.remove("requests")
        report_sections.remove("requests")


# ------------------------------------------------------------------------------------ tests
def test_the_built_in_stages_and_sections_are_registered_through_entry_points():
    assert list_study_stages() == BUILT_IN_STAGES
    assert list_report_sections() == BUILT_IN_SECTIONS
    assert {ep.name for ep in metadata.entry_points(group="behavsim.study_stages")} == set(BUILT_IN_STAGES)
    assert {ep.name for ep in metadata.entry_points(group="behavsim.report_sections")} == set(BUILT_IN_SECTIONS)


def test_a_registered_stage_and_section_run_and_appear_in_a_tiny_study(registered, tiny_run, tmp_path):
    stages = list_study_stages()
    assert stages[stages.index("compare") + 1 : stages.index("analyse")] == ["e2e", "corpus", "requests"]
    assert "requests" in list_report_sections()
    run = shutil.copytree(tiny_run, tmp_path / "run")  # everything else is up to date
    logs = []
    run_study(load_config("tiny"), run, log=logs.append)
    heads = [m for m in logs if m.startswith("[")]
    assert heads[3:6] == [
        "[4/11] comparisons: up to date",
        "[5/11] requests: how often the handcrafted policy asks",
        "[6/11] analysis: up to date",
    ]
    # the stage's numbers, counted here from the response tables themselves
    got = pd.read_csv(run / "results" / "requests.csv").set_index("context_set")
    for name in ("cgen", "ccol-ts", "ccol-iq", "ccol-all"):
        index = json.loads((run / "responses" / name / "index.json").read_text())
        table = ResponseTable.load(run / "responses" / name / index["handcrafted"])
        assert got.loc[name, "contexts"] == len(table) > 0
        assert got.loc[name, "requests"] == sum(str(a).startswith("request") for a in table.acts)
    assert set(got["label"]) == {"handcrafted"}  # the stage's setting, at its default
    assert {"file": "requests/requests.svg", "title": "Requests per context set"} in json.loads(
        (run / "manifest.json").read_text()
    )["figures"]
    # the section: in its place, with its figure (claimed by its path) and its table
    html = (run / "report.html").read_text(encoding="utf-8")
    present = [s for s in list_report_sections() if f'<section id="{s}">' in html]
    assert present[present.index("rewards") : present.index("scores") + 1] == ["rewards", "requests", "scores"]
    section = html[html.index('<section id="requests">') : html.index('<section id="scores">')]
    assert 'alt="Requests per context set"' in section and 'id="requests"' in section
    assert f'<td class="num">{got.loc["cgen", "requests"]}</td>' in section
    # resumable: done with the same inputs, the stage is not run again
    logs.clear()
    run_study(load_config("tiny"), run, log=logs.append)
    assert "[5/11] requests: up to date" in logs


def test_a_registered_stage_adds_its_settings_to_the_config(registered):
    cfg = load_config("tiny", requests_label="asked")
    assert cfg.settings["requests_label"] == "asked" and cfg.to_dict()["requests_label"] == "asked"
    assert "requests_label" not in load_config("tiny").to_dict()  # at its default: the study keeps its identity
    with pytest.raises(ConfigError, match=r"unknown keys 'requests_lable' \(did you mean 'requests_label'\?\)"):
        load_config("tiny", requests_lable="x")


def test_a_stage_reading_what_no_stage_before_it_writes_is_refused(tmp_path):
    early = Stage(
        name="early",
        order=50,
        title="early",
        run=lambda study: None,
        inputs={"results/requests.csv": "written by no stage before it"},
    )
    register_stage(early)
    try:
        with pytest.raises(
            ConfigError,
            match=r"study stage 'early' reads results/requests.csv, which no stage "
            r"before it writes \(the stages in order: early, train, contexts",
        ):
            run_study(load_config("tiny"), tmp_path / "run", log=lambda m: None)
    finally:
        study_stages.remove("early")
