"""End-to-end trials in a study (``e2e_teachers``): trained after the GP-SARSA trials, answering the
collected contexts, compared with their teachers, over training and across seeds, with the CER–USE
agreement — each value checked against the saved tables, scipy, or dialogues played again here."""

import math
import shutil

import pandas as pd
import pytest
from scipy.stats import pearsonr

from behavsim import ConfigError, ResponseTable
from experiments.study import load_config, run_study
from policies.training.play import play_dialogues

E2E = dict(e2e_teachers=("handcrafted", "gp"), e2e_dialogues=20, e2e_epochs=2, robustness=(), report=True)
# four trials of two checkpoints, answering the collected contexts and playing dialogues: minutes
pytestmark = pytest.mark.timeout(1200)


@pytest.fixture(scope="module")
def with_e2e(tiny_run, tmp_path_factory):
    run = tmp_path_factory.mktemp("e2e") / "run"
    run.mkdir()
    shutil.copytree(tiny_run / "train", run / "train")  # the GP-SARSA trials as they are
    cfg = load_config("tiny", **E2E)
    run_study(cfg, run, log=lambda m: None)
    return run


def _table(run, policy_id):
    return next(
        ResponseTable.load(p)
        for p in (run / "responses" / "ccol-all").glob("*.jsonl")
        if ResponseTable.load(p).id == policy_id
    )


def test_every_trial_is_compared_with_its_teacher_at_every_checkpoint(with_e2e):
    e2e = pd.read_csv(with_e2e / "results" / "e2e.csv")
    teach = e2e[e2e["comparison"] == "teacher"]
    # 2 teachers x 2 seeds x 2 checkpoints (one per epoch of 20 teacher dialogues)
    assert len(teach) == 8 and sorted(set(teach["checkpoint"])) == [20, 40]
    assert set(teach.loc[teach["teacher"] == "handcrafted", "a"]) == {"handcrafted"}
    assert set(teach.loc[teach["teacher"] == "gp", "a"]) == {"ts-seed0-000300", "ts-seed1-000300"}
    for _, row in teach.iterrows():  # TMR over every context, a failed answer a mismatch: by hand
        a, b = _table(with_e2e, row["a"]), _table(with_e2e, row["b"])
        same = sum(x is not None and x == y for x, y in zip(a.acts, b.acts))
        assert row["TMR_all"] == pytest.approx(same / len(a), abs=1e-12)
        assert row["n_missing_TMR"] == sum(y is None for y in b.acts)
    conv = e2e[e2e["comparison"] == "convergence"]
    assert len(conv) == 4 and set(conv["checkpoint"]) == {40}
    seeds = e2e[e2e["comparison"] == "seeds"]
    assert sorted(seeds["group"]) == ["e2e-gp", "e2e-handcrafted", "gp-ts"] and set(seeds["pair"]) == {"0 vs 1"}


def test_the_cer_use_agreement_is_pearsons_r_over_the_rows_with_acts_and_text(with_e2e):
    per = pd.read_csv(with_e2e / "results" / "per_context" / "e2e.csv")
    subsets = {
        "end-to-end pairs": per[per["group"].str.startswith("e2e-")],
        "GP-SARSA pairs": pd.read_csv(with_e2e / "results" / "per_context" / "all.csv"),
    }
    agree = pd.read_csv(with_e2e / "results" / "e2e_agreement.csv")
    for name, rows in subsets.items():
        rows = rows.dropna(subset=["CER", "USE_cos", "TMR"])
        for only in (False, True):
            use = rows[rows["TMR"] == 0] if only else rows
            mine = agree[(agree["rows"] == name) & (agree["only_mismatch"] == only)].iloc[0]
            assert mine["n"] == len(use)
            if len(use) > 2:
                assert mine["pearson"] == pytest.approx(pearsonr(use["CER"], use["USE_cos"])[0], abs=1e-9)
                assert mine["mse"] == pytest.approx(((use["CER"] - use["USE_cos"]) ** 2).mean(), abs=1e-12)
            else:  # the tiny models seldom write a prompt: too few rows for a correlation
                assert math.isnan(mine["pearson"])
    assert agree.loc[agree["rows"] == "GP-SARSA pairs", "n"].min() > 100


def test_task_success_is_measured_on_the_same_dialogues_as_the_teachers(with_e2e):
    training = pd.read_csv(with_e2e / "results" / "e2e_training.csv")
    assert len(training) == 4 and set(training["checkpoint"]) == {40}
    hc = training[training["teacher"] == "handcrafted"]
    again = play_dialogues("handcrafted", int(hc["eval_dialogues"].iloc[0]), env_options={"user_config": "env1"})
    assert set(hc["tsr_teacher"]) == {again.tsr}  # the same users and goals for each trial's teacher
    last = with_e2e / "train" / "e2e-handcrafted-s0" / "ckpt-000040"
    mine = play_dialogues(f"e2e:{last}", int(hc["eval_dialogues"].iloc[0]), env_options={"user_config": "env1"})
    assert hc[hc["seed"] == 0]["tsr"].iloc[0] == mine.tsr


def test_the_studys_own_results_keep_their_bytes_and_a_rerun_trains_nothing(with_e2e, tiny_run):
    for name in ("convergence.csv", "seeds.csv", "rewards.csv", "table1.csv", "tests.json"):
        assert (with_e2e / "results" / name).read_bytes() == (tiny_run / "results" / name).read_bytes(), name
    ckpt = with_e2e / "train" / "e2e-gp-s1" / "ckpt-000040" / "model.safetensors"
    before = (ckpt.stat().st_mtime_ns, (with_e2e / "results" / "e2e.csv").read_bytes())
    run_study(load_config("tiny", **E2E), with_e2e, log=lambda m: None)
    assert (ckpt.stat().st_mtime_ns, (with_e2e / "results" / "e2e.csv").read_bytes()) == before


def test_a_moved_run_folder_resumes_without_training_or_answering_again(with_e2e, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.copytree(with_e2e, moved)  # the GP teachers' checkpoint paths move with it
    answered = sorted(p.name for p in (moved / "responses" / "ccol-all").iterdir())
    run_study(load_config("tiny", **E2E), moved, log=lambda m: None)
    assert sorted(p.name for p in (moved / "responses" / "ccol-all").iterdir()) == answered
    for name in ("e2e.csv", "e2e_training.csv", "e2e_agreement.csv"):
        assert (moved / "results" / name).read_bytes() == (with_e2e / "results" / name).read_bytes(), name


def test_the_report_has_the_end_to_end_section(with_e2e):
    html = (with_e2e / "report.html").read_text()
    assert 'id="e2e"' in html and 'id="e2e-teacher"' in html and 'id="e2e-agreement"' in html
    training = pd.read_csv(with_e2e / "results" / "e2e_training.csv")
    assert not math.isnan(training["loss"].iloc[0])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"e2e_teachers": ("handcrafted", "handcrafted")}, r"study config 'e2e_teachers': a teacher is listed twice"),
        ({"e2e_teachers": ("pydial",)}, r"study config 'e2e_teachers': expected some of \['handcrafted', 'gp'\]"),
        ({"e2e_teachers": ("gp",), "e2e_dialogues": 21}, r"study config: end-to-end trials: .*multiples of batch"),
    ],
)
def test_bad_end_to_end_settings_are_refused_in_one_line(change, message):
    with pytest.raises(ConfigError, match=message):
        load_config("tiny", **change)
