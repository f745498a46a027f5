import json
import re

import pandas as pd
import pytest

from behavsim import ConfigError
from behavsim.cli import main as cli_main
from behavsim.report import escape
from experiments.study import StudyConfig, load_config, run_study

SCORES = ["TMR", "DMR", "CER", "CMR", "USE_cos", "USE_ang", "BLEU4", "BERTScore"]


def test_every_table_and_figure_is_produced(tiny_run):
    res = tiny_run / "results"
    for name in (
        "table1",
        "metrics",
        "convergence",
        "seeds",
        "rewards",
        "per_turn",
        "score_corr",
        "score_mse",
        "score_corr_mismatch",
        "score_mse_mismatch",
        "disagreements",
    ):
        assert (res / f"{name}.csv").stat().st_size > 0, name
    tests = json.loads((res / "tests.json").read_text())
    assert {t["score"] for t in tests} == {"TMR", "DMR", "CMR"}
    manifest = json.loads((tiny_run / "manifest.json").read_text())
    assert manifest["config"]["dialogues"] == 300 and manifest["code_version"].startswith("behavsim")
    assert set(manifest["signatures"]) == set(SCORES)
    for f in manifest["figures"]:
        assert (tiny_run / f["file"]).stat().st_size > 0
        assert (tiny_run / f["file"]).with_suffix(".png").stat().st_size > 0
    assert (tiny_run / "report.html").stat().st_size > 0


def test_tables_have_the_papers_structure(tiny_run):
    res = tiny_run / "results"
    conv = pd.read_csv(res / "convergence.csv")
    # per trial: checkpoints 100, 200, 300 -> 2 consecutive pairs; TS trials on C_col^TS, IQ on C_col^IQ, all on C_gen
    assert len(conv) == 2 * 2 * 2 + 4 * 2
    assert set(conv["checkpoint"]) == {200, 300}
    seeds = pd.read_csv(res / "seeds.csv")
    assert len(seeds) == 2 * 2 * 3  # 2 sets x 2 rewards x 3 checkpoints, 1 pair of seeds each
    rewards = pd.read_csv(res / "rewards.csv")
    assert sorted(rewards["pair"]) == ["0 vs 0", "0 vs 1", "1 vs 0", "1 vs 1"]
    for s in SCORES:
        assert (rewards[f"{s}_lo"] <= rewards[s] + 1e-12).all() and (rewards[s] <= rewards[f"{s}_hi"] + 1e-12).all()


def test_means_equal_the_per_context_values(tiny_run):
    res = tiny_run / "results"
    per = pd.read_csv(res / "per_context" / "all.csv")
    rewards = pd.read_csv(res / "rewards.csv")
    got = per[per["kind"] == "rewards"].groupby(["a", "b"])["TMR"].mean()
    want = rewards.set_index(["a", "b"])["TMR"]
    assert got.sort_index().to_numpy() == pytest.approx(want.sort_index().to_numpy(), abs=1e-12)


def test_reward_vs_seed_is_tested_over_trials_first(tiny_run):
    res = tiny_run / "results"
    tests = json.loads((res / "tests.json").read_text())
    assert [t["unit"] for t in tests] == ["trials"] * 3 + ["contexts"] * 3
    trial = {t["score"]: t for t in tests if t["unit"] == "trials"}
    tmr = trial["TMR"]
    # 2 + 2 trials: 3 distinct splits, so p is 1/3, 2/3 or 1 and 0.05 is out of reach; 4 seeds per reward would do
    assert tmr["min_p"] == pytest.approx(1 / 3, abs=1e-9) and tmr["n_relabelings"] == 3 and tmr["exact"]
    assert round(tmr["p_value"] * 3) in (1, 2, 3) and tmr["p_value"] == pytest.approx(round(tmr["p_value"] * 3) / 3)
    assert tmr["trials_per_group_needed"] == 4 and tmr["n"] == 4
    assert (tmr["n_pairs_x"], tmr["n_pairs_y"]) == (4, 2)
    # mean_x: the four TS-vs-IQ pairs of rewards.csv, each averaged over contexts; mean_y: the seed pairs
    rewards = pd.read_csv(res / "rewards.csv")
    assert tmr["mean_x"] == pytest.approx(rewards["TMR"].mean(), abs=1e-12)
    seeds = pd.read_csv(res / "seeds.csv")
    last = seeds[(seeds["context_set"] == "ccol-all") & (seeds["checkpoint"] == 300)]
    assert tmr["mean_y"] == pytest.approx(last["TMR"].mean(), abs=1e-12)
    assert tmr["diff"] == pytest.approx(tmr["mean_x"] - tmr["mean_y"])
    assert tmr["mean_x_ci"][0] <= tmr["mean_x"] <= tmr["mean_x_ci"][1]
    ctx = [t for t in tests if t["unit"] == "contexts"]
    assert all(t["min_p"] == pytest.approx(1 / 501) for t in ctx)  # 500 sampled sign flips


def test_slices_recombine_to_the_pair_means(tiny_run):
    res = tiny_run / "results"
    sl = pd.read_csv(res / "slices.csv")
    rewards = pd.read_csv(res / "rewards.csv").set_index("pair")
    assert set(sl["slice"]) == {"acttype", "slot", "uncertainty", "turn"}
    assert set(sl.loc[sl["context_set"] == "cgen", "slice"]) == {"acttype", "slot", "uncertainty"}  # no turns
    rew = sl[(sl["kind"] == "rewards")]
    for (pair, kind), g in rew.groupby(["pair", "slice"]):
        if kind == "slot":
            assert not g["partition"].any()
            continue
        for s in SCORES:
            w = (g[f"n_{s}"] * g[s]).sum() / g[f"n_{s}"].sum()
            assert w == pytest.approx(rewards.loc[pair, s], abs=1e-9), (pair, kind, s)


def test_resume_recomputes_nothing(tiny_run):
    """Checkpoints, context sets, response tables and comparisons are not redone; the small
    summary files that are rewritten come out byte-identical."""
    expensive = [
        p
        for p in tiny_run.rglob("*")
        if p.is_file() and (p.suffix in (".npz", ".jsonl") or p.parent.name == "per_context")
    ]
    assert len([p for p in expensive if p.suffix == ".npz"]) == 12
    before = {p: p.stat().st_mtime_ns for p in expensive}
    csvs = {p: p.read_bytes() for p in tiny_run.rglob("*.csv")}
    run_study(load_config("tiny"), tiny_run, log=lambda m: None)
    assert [p for p in expensive if p.stat().st_mtime_ns != before[p]] == []
    assert {p: p.read_bytes() for p in tiny_run.rglob("*.csv")} == csvs


def test_configs_and_errors(tmp_path, capsys):
    assert load_config("paper").dialogues == 40_000 and load_config("quick").seeds == (0, 1, 2)
    with pytest.raises(ConfigError, match="did you mean 'seeds'"):
        StudyConfig.from_dict({"seedz": [1]})
    with pytest.raises(ConfigError, match="'scores': unknown score 'TMX'. Did you mean 'TMR'"):
        StudyConfig(scores=("TMX",))
    assert StudyConfig(scores=("tmr", "use_COS")).scores == ("TMR", "USE_cos")
    assert StudyConfig().scores == tuple(SCORES)
    with pytest.raises(ConfigError, match="multiple of checkpoint_every"):
        StudyConfig(dialogues=1500, checkpoint_every=1000)
    (tmp_path / "config.json").write_text(json.dumps(StudyConfig().to_dict()))
    with pytest.raises(ConfigError, match="another configuration"):
        run_study(load_config("tiny"), tmp_path, log=lambda m: None)
    assert cli_main(["reproduce", "--config", "nope", "-o", str(tmp_path / "x")]) == 2
    assert "built-in configs" in capsys.readouterr().err


def _report_checks():
    """The report tests' own parser and table checks (tests/experiments/test_study_report.py)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent / "test_study_report.py"
    spec = importlib.util.spec_from_file_location("_report_checks", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_report_of_a_real_run_shows_its_numbers(tiny_run, tmp_path):
    import os
    from pathlib import Path

    checks = _report_checks()
    html = (tiny_run / "report.html").read_text(encoding="utf-8")
    checks.check_tables(checks.parse(html), tiny_run)  # every table equals the run's CSVs
    if not os.path.exists(checks.CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("chromium is missing but CI is set")
        pytest.skip("chromium not installed")
    r = checks._chromium("--dump-dom", (tiny_run / "report.html").resolve().as_uri(), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    dom = checks.parse(r.stdout)
    figures = json.loads((tiny_run / "manifest.json").read_text())["figures"]
    matrices = {"score_corr", "score_mse", "score_corr_mismatch", "score_mse_mismatch"}  # shown as tables instead
    n_figures = len([f for f in figures if Path(f["file"]).stem not in matrices])
    assert n_figures == len(figures) - 4
    assert dom.body_attrs.get("data-figures-loaded") == f"{n_figures}/{n_figures}"
    checks.check_tables(dom, tiny_run)


def test_study_domain_option():
    """domain = "camrestaurants" (the default) is checked up front (closest name on a typo); the
    study's config names its domain and user, defaults included."""
    tiny = load_config("tiny").to_dict()
    assert (tiny["domain"], tiny["user"], tiny["eval_scale"]) == ("camrestaurants", "env1", 0.0)
    assert load_config("tiny", domain="camrestaurants") == load_config("tiny")
    cfg = load_config("tiny", domain="example-restaurants", user="legacy")
    assert cfg.to_dict()["domain"] == "example-restaurants" and StudyConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="Did you mean 'camrestaurants'"):
        load_config("tiny", domain="camrestaurnts")
    env1 = load_config("tiny", user="env1", eval_scale=1.0).to_dict()
    assert (env1["user"], env1["eval_scale"]) == ("env1", 1.0)
    assert (load_config("quick").eval_scale, load_config("paper").eval_scale) == (1.0, 1.0)
    with pytest.raises(ConfigError, match="study config: user: unknown user configuration 'env2'"):
        load_config("tiny", user="env2")


def test_resume_repairs_damaged_or_missing_outputs(tiny_run, tmp_path, capsys):
    """Damaged or missing stage outputs are found on resume and exactly those are made again; the
    results come out equal to an undamaged run's, and nothing else is redone. (A copy: paths in a
    run folder are relative to it, so a copied folder resumes.)"""
    import shutil

    run = shutil.copytree(tiny_run, tmp_path / "run")

    def csvs(folder):  # metrics.csv holds timings
        return {p.name: p.read_bytes() for p in (folder / "results").glob("*.csv") if p.name != "metrics.csv"}

    results = csvs(run)
    assert results == csvs(tiny_run)
    tables = sorted((run / "responses" / "cgen").glob("*-seed*.jsonl"))
    untouched = {p: p.stat().st_mtime_ns for p in tables[1:]}
    lines = tables[0].read_text().splitlines()
    lines[1] = lines[1].replace('"i":0', '"i":0 ', 1).replace('"act":"', '"act":"x', 1)  # valid JSON, one act changed
    tables[0].write_text("\n".join(lines) + "\n")
    (run / "results" / "seeds.csv").write_text((run / "results" / "seeds.csv").read_text()[:100])  # truncated
    (run / "results" / "tests.json").unlink()  # missing
    (run / "manifest.json").write_text("{damaged")
    capsys.readouterr()
    run_study(load_config("tiny"), run, log=lambda m: None)
    err = capsys.readouterr().err
    assert f"{tables[0]}" in err and "responding again" in err
    assert "is damaged (it changed since it was written); stage 'compare' is done again" in err
    assert csvs(run) == results
    assert (run / "results" / "tests.json").read_bytes() == (tiny_run / "results" / "tests.json").read_bytes()
    assert {p: p.stat().st_mtime_ns for p in tables[1:]} == untouched  # only the damaged table was redone
    assert json.loads((run / "manifest.json").read_text())["config_name"] == "tiny"
    # a damaged state file: every stage it recorded is checked again, with the same results
    state = run / "state.json"
    state.write_text(state.read_text().replace('"key"', '"kez"', 1))  # valid JSON, wrong checksum
    run_study(load_config("tiny"), run, log=lambda m: None)
    assert "state.json: damaged file" in capsys.readouterr().err
    assert csvs(run) == results


def test_the_analysis_alone_is_redone_from_the_per_context_values_read_back(tiny_run, tmp_path):
    """Outputs of the analysis removed: the comparisons are up to date, and the analysis is done
    again from results/per_context/all.csv as read back from the file (its exact values): the same
    bytes as when it ran on the comparisons' values in memory."""
    import shutil

    run = shutil.copytree(tiny_run, tmp_path / "run")
    (run / "results" / "tests.json").unlink()
    (run / "results" / "score_corr_mismatch.csv").unlink()
    logs = []
    run_study(load_config("tiny"), run, log=logs.append)
    assert "[4/10] comparisons: up to date" in logs
    assert "[5/10] analysis: score agreement, reward-vs-seed tests (over trials and over contexts)" in logs
    for name in ("tests.json", "score_corr.csv", "score_corr_mismatch.csv", "score_mse.csv", "score_mse_mismatch.csv"):
        assert (run / "results" / name).read_bytes() == (tiny_run / "results" / name).read_bytes(), name


def test_map_and_robustness_sections(tiny_run):
    """The behaviour map of every policy and the optional robustness probe (tiny sets its levels)."""
    coords = pd.read_csv(tiny_run / "map" / "map.csv")
    assert len(coords) == 13  # 4 trials x 3 checkpoints + handcrafted
    rob = pd.read_csv(tiny_run / "robustness" / "robustness.csv")
    assert sorted(rob["policy"].unique()) == [
        "handcrafted",
        "iq-seed0-000300",
        "iq-seed1-000300",
        "ts-seed0-000300",
        "ts-seed1-000300",
    ]
    assert (rob.loc[rob["noise"] == 0, "TMR"] == 1.0).all() and (rob.loc[rob["noise"] == 0, "changed"] == 0).all()
    assert (rob.loc[rob["noise"] > 0, "changed"] > 0).all()
    manifest = json.loads((tiny_run / "manifest.json").read_text())
    files = [f["file"] for f in manifest["figures"]]
    assert "map/map.svg" in files and "map/dendrogram.svg" in files
    assert [f for f in files if f.startswith("robustness/")]
    html = (tiny_run / "report.html").read_text()
    assert "Behaviour map: every policy against every other" in html and "Robustness: each policy" in html
    # each figure in the section that declares it (map/*, robustness/*)
    sections = re.split(r'<section id="(\w+)">', html)
    by_section = dict(zip(sections[1::2], sections[2::2]))
    for f in files:
        where = "map" if f.startswith("map/") else "robustness" if f.startswith("robustness/") else None
        if where:
            title = next(x["title"] for x in manifest["figures"] if x["file"] == f)
            assert f'alt="{escape(title)}"' in by_section[where], f


def test_robustness_levels_are_checked():
    with pytest.raises(ConfigError, match="robustness.*\\[0, 1\\]"):
        StudyConfig(robustness=(0.0, 1.5))
    assert "robustness" not in StudyConfig().to_dict()  # runs made before it existed resume unchanged


def test_report_of_a_real_run_prints_on_few_a4_pages(tiny_run, tmp_path):
    """The tiny run's report has every section (the map and the robustness probe included) and prints on
    A4 in at most 15 pages (the quick-sized report: tests/experiments/test_report_pages.py)."""
    import re

    from experiments.report import list_report_sections

    checks = _report_checks()
    html = tiny_run / "report.html"
    text = html.read_text(encoding="utf-8")
    assert re.findall(r'<section id="(\w+)">', text) == [
        k for k in list_report_sections() if k not in ("other", "policies", "e2e", "corpus")
    ]  # no other policies, no end-to-end trials, no corpus in the tiny run
    checks.need_chromium()
    pages, sizes = checks.print_pages(html, tmp_path)
    assert sizes == {checks.A4_POINTS} and pages <= 15, (pages, sizes)


def test_the_e2e_config_is_valid_and_adds_nothing_to_other_studies_identity():
    """experiments/configs/e2e.toml loads (its end-to-end keys checked); studies without
    end-to-end trials keep the identity they had (the new keys are left out at their default)."""
    from behavsim import ConfigError
    from experiments.study import load_config

    cfg = load_config("e2e")
    e2e = {k: v for k, v in cfg.settings.items() if k.startswith("e2e_")}
    assert e2e == {"e2e_teachers": ("handcrafted", "gp"), "e2e_dialogues": 1000, "e2e_epochs": 5}
    # the other stages' settings (the study against people's) stay at their defaults
    quick = load_config("quick").settings
    assert {k: v for k, v in cfg.settings.items() if k not in e2e} == {k: v for k, v in quick.items() if k not in e2e}
    assert cfg.to_dict()["e2e_teachers"] == ["handcrafted", "gp"]
    assert not {"e2e_teachers", "e2e_dialogues", "e2e_epochs"} & set(load_config("quick").to_dict())
    with pytest.raises(ConfigError, match=r"'e2e_teachers': expected some of \['handcrafted', 'gp'\], got 'pydial'"):
        load_config("e2e", e2e_teachers=["pydial"])
    with pytest.raises(ConfigError, match=r"'e2e_epochs': expected a non-negative integer"):
        load_config("e2e", e2e_epochs=-1)
    from experiments.e2e import e2e_config

    trial = e2e_config(cfg, "handcrafted", 1)  # the study's trials: the README's results, weight 1
    assert (trial.seed, trial.dialogues, trial.dagger_dialogues, trial.chat, trial.threads) == (1, 1000, 0, False, 1)
    assert trial.belief_weight == 1.0
