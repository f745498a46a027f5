"""Environment 1's simulated user: sampledUM.cfg ranges, patience 4..6 drawn per dialogue."""

from __future__ import annotations

import configparser
import json

import numpy as np
import pytest

from policies.simulation.actions import DiaAct
from policies.simulation.domain import resolve_domain
from policies.simulation.env import DialogueEnv
from policies.simulation.user import (
    DEFAULT_PROBS,
    ENV1_PATIENCE,
    ENV1_PROBS,
    ENV1_UNMODELLED,
    LEGACY_PROBS,
    USER_CONFIGS,
    SimulatedUser,
    UnknownUserConfig,
    UserConfig,
    UserConfigError,
)


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


def test_env1_probs_are_sampledUM_cfg(pydial_root):
    cfg = pydial_root / "config" / "sampledUM.cfg"
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
    env.read(pydial_root / "env1-configs" / "env1-gp-CR.cfg")
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


def _user_holding(venue: str, requests: dict) -> SimulatedUser:
    """An Environment 1 user whose goal is ``venue``'s constraints, the venue already accepted."""
    cam = resolve_domain("camrestaurants")
    user = SimulatedUser(cam, "env1")
    user.reset(np.random.default_rng(0))
    v = cam.venues[cam.venue_index(venue)]
    user.goal.constraints = {s: v[s] for s in ("area", "food", "pricerange")}
    user.goal.requests = {"name": venue, **requests}
    user.goal.name_eq = venue
    user.first_recommendation = False
    user.agenda = [["bye", []]]
    return user


@pytest.mark.parametrize("act", ['inform(name="prezzo",description="")', 'inform(description="",name="prezzo")'])
def test_empty_database_value_answers_the_request(act):
    """PyDial's policies inform an empty database value as ``description=""``; PyDial's user
    fills the request with whatever value the act carries (``UMHdcSim`` copies ``item.val``,
    here ``""``), so the request counts as answered and the dialogue can succeed. behavsim's
    act parser cannot tell ``description=""`` from a bare ``description``: both reach the
    user as a valueless item of a system inform, which must answer the request too."""
    user = _user_holding("prezzo", {"description": None})
    reply = user.respond(act)
    assert user.goal.requests == {"name": "prezzo", "description": ""}
    assert user.success
    assert reply.type != "request"  # nothing left to ask
    # the same act built by the environment itself (value "") behaves alike
    same = _user_holding("prezzo", {"description": None})
    same.respond(DiaAct("inform", (("name", "prezzo"), ("description", ""))))
    assert same.goal.requests == user.goal.requests and same.success


def test_empty_value_in_env_step_act_succeeds():
    """Through the environment: a toolkit policy's act string with an empty value."""
    env = DialogueEnv(resolve_domain("camrestaurants"), user_config="env1")
    env.reset(seed=0)
    env.user = _user_holding("prezzo", {"phone": None, "description": None})
    env.user.goal.requests["phone"] = "01799 521260"
    _, _, _, _, info = env.step_act('inform(name="prezzo",description="")')
    assert info["success"]


def test_valueless_name_or_request_act_is_not_an_answer():
    """Only informed slots answer requests: a ``request(description)`` or a bare ``name`` does not."""
    user = _user_holding("prezzo", {"description": None})
    user.respond("request(description)")
    assert user.goal.requests["description"] is None
    user = _user_holding("prezzo", {"description": None})
    user.goal.requests["name"] = None
    user.goal.name_eq = None
    user.respond('inform(name,description="")')
    assert user.goal.requests["name"] is None and not user.success
