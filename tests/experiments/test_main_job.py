import json

import pandas as pd
import pytest

from behavsim import ConfigError
from experiments.main import StudyConfig, main, run

TINY = StudyConfig(rewards=("ts", "iq"), seeds=(0, 1), dialogues=200, checkpoint_every=100, eval_dialogues=5,
                   grid_step=0.5, collect_dialogues=2, scores=("TMR", "DMR", "CER", "CMR", "BLEU4"))


def test_tiny_study_end_to_end_and_resume(tmp_path, capsys):
    out = tmp_path / "study"
    res = run(TINY, out)
    summary = res["summary"]
    kinds = {c.split("/")[0] for c in summary["comparison"]}
    assert kinds == {"convergence", "seeds", "rewards", "handcrafted-vs-gp"}
    # convergence, 1 consecutive pair per trial: the 2 TS trials on C_col^TS, the 2 IQ trials on
    # C_col^IQ, all 4 trials on C_gen
    assert (summary["comparison"].str.startswith("convergence")).sum() == 8
    # rewards: every TS trial against every IQ trial
    assert (summary["comparison"] == "rewards/ccol-all").sum() == 4
    assert summary[["TMR", "DMR", "CER", "CMR", "BLEU4"]].stack().between(0, 1).all()
    # the per-context file agrees with the printed means
    per = pd.read_csv(out / "results" / "rewards-ccol-all.csv")
    means = per.groupby(["a", "b"])["TMR"].mean()
    rew = summary[summary["comparison"] == "rewards/ccol-all"].set_index(["a", "b"])["TMR"]
    assert means.sort_index().to_numpy() == pytest.approx(rew.sort_index().to_numpy())
    t1 = pd.read_csv(out / "results" / "table1.csv")
    assert set(t1.columns) >= {"dialogues", "reward", "tsr", "aiq", "adl"} and len(t1) == 4
    # resume: nothing is recomputed, the results are identical
    files = {p: p.stat().st_mtime_ns for p in (out / "responses").rglob("*.jsonl")}
    before = (out / "results" / "summary.csv").read_bytes()
    run(TINY, out)
    assert {p: p.stat().st_mtime_ns for p in files} == files
    assert (out / "results" / "summary.csv").read_bytes() == before


def test_another_config_in_the_same_folder_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(StudyConfig().to_json())
    with pytest.raises(ConfigError, match="another configuration"):
        run(TINY, tmp_path)


def test_bad_config_file_gives_a_message(tmp_path, capsys):
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({"seedz": [1]}))
    assert main(["--config", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "unknown study-config keys ['seedz']" in capsys.readouterr().err
