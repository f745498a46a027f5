"""Other policies in a study (``policies = [...]``, ``repeat``): they answer the collected contexts
and are compared with the last checkpoint of every trial, the handcrafted policy and each other,
with their self-agreement beside the scores; the study's own comparisons keep their bytes."""

import dataclasses
import math
import shutil

import pandas as pd
import pytest

from behavsim import ConfigError, ResponseTable
from experiments.study import load_config, run_study

OTHERS = ("handcrafted:nlg_seed=7", "handcrafted:nlg_seed=none")


@pytest.fixture(scope="module")
def with_others(tiny_run, tmp_path_factory):
    run = tmp_path_factory.mktemp("others") / "run"
    run.mkdir()
    shutil.copytree(tiny_run / "train", run / "train")  # the trials as they are: nothing trained again
    cfg = dataclasses.replace(load_config("tiny"), policies=OTHERS, repeat=2, report=False, robustness=())
    run_study(cfg, run, log=lambda m: None)
    return run


def test_the_other_policies_are_compared_with_every_trial_and_each_other(with_others):
    cfg = load_config("tiny")
    m = pd.read_csv(with_others / "results" / "policies.csv")
    n_base = len(cfg.rewards) * len(cfg.seeds) + 1  # last checkpoints and handcrafted
    assert len(m) == 2 * n_base + 1  # each other policy vs the base, and the two others once
    assert set(m["context_set"]) == {"ccol-all"}
    cols = list(m.columns)
    assert cols.index("self_agreement_a") > cols.index("TMR")  # beside the scores
    both = m[(m["a"] == "handcrafted-nlg7") & (m["b"] == "handcrafted")].iloc[0]
    assert both["TMR"] == 1.0 and both["DMR"] == 1.0  # the same rules: the same acts
    assert both["self_agreement_a"] == 1.0  # asked twice, a deterministic policy agrees with itself
    assert math.isnan(both["self_agreement_b"])  # the trained and handcrafted ones are asked once
    quiet = m[(m["a"] == "handcrafted-nlg7") & (m["b"] == "handcrafted-nlgnone")]
    assert len(quiet) == 1 and quiet.iloc[0]["n_missing_BLEU4"] == quiet.iloc[0]["n"]  # no prompts: no text score
    table = ResponseTable.load(next((with_others / "responses" / "ccol-all").glob("handcrafted-nlg7*.jsonl")))
    assert table.n_repeats == 2 and table.self_agreement_tmr == 1.0


def test_the_studys_own_comparisons_keep_their_bytes(with_others, tiny_run):
    for name in ("convergence.csv", "seeds.csv", "rewards.csv", "table1.csv"):
        assert (with_others / "results" / name).read_bytes() == (tiny_run / "results" / name).read_bytes(), name
    assert not (tiny_run / "results" / "policies.csv").exists()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"policies": ("handcrafted", "handcrafted")}, r"study config 'policies': a policy is listed twice"),
        ({"policies": (3,)}, r"study config 'policies': expected policy spec strings, got 3"),
        ({"repeat": 0}, r"study config 'repeat': expected a positive integer, got 0"),
    ],
)
def test_bad_other_policies_are_refused_in_one_line(change, message):
    with pytest.raises(ConfigError, match=message):
        dataclasses.replace(load_config("tiny"), **change)


@pytest.mark.parametrize("spec", ["recorded:", "nosuchmodule_xyz:policy", "handcrafted:foo"])
def test_another_policy_that_cannot_be_loaded_is_refused_before_training(spec, tmp_path):
    cfg = dataclasses.replace(load_config("tiny"), policies=(spec,))
    with pytest.raises(ConfigError, match=rf"^study config 'policies': '{spec}'"):
        run_study(cfg, tmp_path / "run", log=lambda m: None)
    assert not (tmp_path / "run").exists()


def test_the_report_shows_the_other_policies_with_their_self_agreement(with_others, tmp_path):
    from experiments.report import build_report

    html = build_report(with_others, tmp_path / "r.html").read_text(encoding="utf-8")
    section = html[html.index('id="policies"') :]
    section = section[: section.index("</section>")]
    assert "Other policies" in section and "self-agreement a" in section
    assert section.count("handcrafted-nlg7") >= 6  # a row per comparison with it
    assert "1.000" in section
