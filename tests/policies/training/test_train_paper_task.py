"""The paper's task by default: GP-SARSA learns CamRestaurants in Environment 1 within 2,000 dialogues.

A claim about training runs, so it is checked over runs: three seeds per reward, each evaluated
on 100 fixed dialogues at every 500 training dialogues.
"""

from __future__ import annotations

import json

import pytest

from policies.simulation.domain import DEFAULT_DOMAIN, resolve_domain
from policies.simulation.user import DEFAULT_USER
from policies.training.train import TrainConfig, run_training


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    config = TrainConfig(rewards=("ts", "iq"), seeds=(0, 1, 2), dialogues=2000, checkpoint_every=500)
    out = tmp_path_factory.mktemp("paper-task")
    result = run_training(config, out, progress=False)
    stored = json.loads((out / "config.json").read_text())
    return result, stored


def test_the_default_is_the_papers_task(rows):
    _, stored = rows
    assert DEFAULT_DOMAIN == "camrestaurants" and DEFAULT_USER == "env1"
    assert stored["domain"] == "camrestaurants" and stored["user"] == "env1" and stored["version"] == 2
    cam = resolve_domain(None)
    assert len(cam.venues) == 110 and len(cam.informable["food"]) == 91


@pytest.mark.parametrize("reward", ["ts", "iq"])
def test_every_seed_reaches_095_within_2000_dialogues(rows, reward):
    result, _ = rows
    best = {}
    for r in result:
        if r["reward"] == reward and r["dialogues"] <= 2000:
            best[r["seed"]] = max(best.get(r["seed"], 0.0), float(r["tsr"]))
    assert sorted(best) == [0, 1, 2]
    assert all(v >= 0.95 for v in best.values()), best


def test_a_version_1_config_keeps_its_environment():
    old = TrainConfig.from_dict({"rewards": ["ts"], "seeds": [0], "dialogues": 10, "checkpoint_every": 10})
    assert (old.domain, old.user) == ("example-restaurants", "legacy")
    new = TrainConfig.from_dict(
        {"rewards": ["ts"], "seeds": [0], "dialogues": 10, "checkpoint_every": 10, "version": 2}
    )
    assert (new.domain, new.user) == ("camrestaurants", "env1")
    assert old.fixed() != new.fixed()


def test_resuming_a_version_1_run_with_todays_defaults_is_refused(tmp_path):
    """A run written before the CamRestaurants default (its config.json names no domain) is not
    silently continued on another domain: the mismatch names the settings."""
    from policies.training.train import ConfigMismatch

    small = dict(rewards=("ts",), seeds=(0,), dialogues=10, checkpoint_every=10, eval_dialogues=2)
    run_training(TrainConfig(**small, domain="example-restaurants", user="legacy"), tmp_path, progress=False)
    stored = json.loads((tmp_path / "config.json").read_text())
    for key in ("domain", "user", "eval_scale"):
        del stored[key]
    stored["version"] = 1
    (tmp_path / "config.json").write_text(json.dumps(stored))
    with pytest.raises(ConfigMismatch, match="domain: 'example-restaurants' there, 'camrestaurants' now"):
        run_training(TrainConfig(**{**small, "dialogues": 20}), tmp_path, progress=False)
