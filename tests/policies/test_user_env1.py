"""Environment 1's simulated user: sampledUM.cfg ranges, patience 4..6 drawn per dialogue."""
from __future__ import annotations

import configparser
import json
from pathlib import Path

import numpy as np
import pytest

from policies.domain import resolve_domain
from policies.env import DialogueEnv
from policies.user import (DEFAULT_PROBS, ENV1_PATIENCE, ENV1_PROBS, ENV1_UNMODELLED, LEGACY_PROBS, USER_CONFIGS,
                           SimulatedUser, UnknownUserConfig, UserConfig, UserConfigError)

PYDIAL = Path(__file__).resolve().parents[3] / "shared" / "pydial3"


def test_named_configs():
    assert USER_CONFIGS.names() == ["env1", "legacy"]
    assert UserConfig.from_dict("env1") == UserConfig() == UserConfig.from_dict(None)
    legacy = UserConfig.from_dict("legacy")
    assert legacy.patience == 5 and legacy.ranges() == LEGACY_PROBS != ENV1_PROBS
    env1 = UserConfig.from_dict("env1")
    assert env1.patience == ENV1_PATIENCE == (4, 6)
    assert env1.ranges() == ENV1_PROBS
    with pytest.raises(UnknownUserConfig, match="Did you mean 'env1'"):
        UserConfig.from_dict("env2")


def test_env1_probs_cover_every_decision():
    assert set(ENV1_PROBS) == set(DEFAULT_PROBS)
    assert not set(ENV1_UNMODELLED) & set(ENV1_PROBS)


def test_env1_probs_are_sampledUM_cfg():
    cfg = PYDIAL / "config" / "sampledUM.cfg"
    if not cfg.is_file():
        pytest.skip(f"PyDial3 not found at {PYDIAL}")
    theirs = {}
    for line in cfg.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "=" not in line:
            continue
        key, val = (x.strip() for x in line.split("=", 1))
        v = json.loads(val)
        theirs[key] = tuple(v) if isinstance(v, list) else v
        if len(theirs) == len(ENV1_PROBS) + len(ENV1_UNMODELLED):
            break  # the error-model parameters follow
    assert theirs == {**ENV1_PROBS, **ENV1_UNMODELLED}
    env = configparser.ConfigParser()
    env.read(PYDIAL / "env1-configs" / "env1-gp-CR.cfg")
    low, high = (int(x) for x in env.get("usermodel", "patience").split(","))
    assert (low, high) == ENV1_PATIENCE
    assert env.get("usermodel", "configfile") == "config/sampledUM.cfg"
    assert env.getint("agent", "maxturns") == 25


def test_patience_drawn_per_dialogue_upper_bound_exclusive():
    user = SimulatedUser(resolve_domain("camrestaurants"), "env1")
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(200):
        user.reset(rng)
        assert user.patience == user.max_patience
        seen.add(user.patience)
        for k, (lo, hi) in ENV1_PROBS.items():
            assert lo <= user.p[k] <= hi
    assert seen == {4, 5}


def test_patience_validation():
    for bad in ((5, 5), (0, 3), (4.0, 6), (1, 2, 3), True):
        with pytest.raises(UserConfigError, match="patience"):
            UserConfig(patience=bad)
    assert UserConfig(patience=[4, 6]).patience == (4, 6)


def test_env_runs_environment_1_and_default_is_unchanged():
    env = DialogueEnv(resolve_domain("camrestaurants"), user_config="env1")
    belief, info = env.reset(seed=3)
    assert info["goal"]["constraints"]
    a = DialogueEnv(user_config="env1").reset(seed=5)[1]["goal"]
    b = DialogueEnv().reset(seed=5)[1]["goal"]
    assert a == b
