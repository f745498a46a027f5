"""A score of another package (entry point ``behavsim.scores``, tests/_score_plugin.py) flows through
a whole study when its config names it: the comparisons, the score correlation and the report."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _score_plugin import install_plugin  # noqa: E402

CONFIG = """
rewards = ["ts", "iq"]
seeds = [0, 1]
dialogues = 200
checkpoint_every = 100
eval_dialogues = 5
grid_step = 0.5
collect_dialogues = 2
bootstrap = 50
permutations = 50
scores = ["TMR", "CMR", "WordJaccard"]
"""


@pytest.mark.timeout(1800)
def test_a_plugin_score_named_in_the_config_is_in_the_results_and_the_report(tmp_path):
    env = install_plugin(tmp_path / "plugin")
    (tmp_path / "cfg.toml").write_text(CONFIG)
    run = tmp_path / "run"
    r = subprocess.run(
        [sys.executable, "-m", "behavsim.cli", "reproduce", "--config", str(tmp_path / "cfg.toml"), "-o", str(run)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    corr = pd.read_csv(run / "results" / "score_corr.csv").set_index("score")
    assert list(corr.index) == ["TMR", "CMR", "WordJaccard"]
    assert corr.loc["WordJaccard", "WordJaccard"] == pytest.approx(1.0, abs=1e-9)
    seeds = pd.read_csv(run / "results" / "seeds.csv")
    assert "WordJaccard" in seeds.columns and seeds["WordJaccard"].between(0, 1).all()
    html = (run / "report.html").read_text()
    assert "word Jaccard" in html or "WordJaccard" in html
