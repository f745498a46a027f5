"""Rewards R_TS and R_IQ and their registry."""

from __future__ import annotations

import pytest

from policies.simulation.rewards import (
    InteractionQualityReward,
    Reward,
    TaskSuccessReward,
    UnknownReward,
    get_reward,
    list_rewards,
)


class FixedIQ:
    name = "fixed"
    signature = "iq:fixed"

    def __init__(self, iq):
        self.iq = iq
        self.calls = 0

    def estimate(self, exchanges):
        self.calls += 1
        return self.iq


def test_ts_reward():
    r = get_reward("ts")
    assert isinstance(r, TaskSuccessReward) and isinstance(r, Reward)
    assert r.final_reward({"success": True}) == 20.0
    assert r.final_reward({"success": False}) == 0.0
    assert r.dialogue_return(5, {"success": True}) == 15.0
    assert r.dialogue_return(25, {"success": False}) == -25.0
    assert "success:20" in r.signature


@pytest.mark.parametrize("iq, expected", [(1, 0.0), (3, 10.0), (5, 20.0)])
def test_iq_reward(iq, expected):
    est = FixedIQ(iq)
    r = InteractionQualityReward(_estimator=est)
    assert r.final_reward({"exchanges": [{}]}) == expected
    assert r.dialogue_return(4, {"exchanges": [{}]}) == expected - 4
    assert est.calls == 2
    assert r.final_reward({}, iq=2) == 5.0 and est.calls == 2  # a known iq skips the estimator
    assert r.signature.endswith("iq:fixed")


def test_iq_reward_rejects_bad_iq():
    r = InteractionQualityReward(_estimator=FixedIQ(7))
    with pytest.raises(ValueError, match="expected 1..5"):
        r.final_reward({"exchanges": []})
    with pytest.raises(ValueError, match="iq"):
        r.final_reward({}, iq=0)
    with pytest.raises(ValueError, match="exchanges"):
        r.final_reward({})


def test_bad_info_and_turns():
    r = get_reward("ts")
    with pytest.raises(ValueError, match="success"):
        r.final_reward({})
    with pytest.raises(ValueError, match="turns"):
        r.dialogue_return(-1, {"success": True})


def test_registry():
    assert list_rewards() == ["iq", "ts"]
    with pytest.raises(UnknownReward, match="Did you mean 'ts'") as err:
        get_reward("tss")
    assert "Valid rewards: ts, iq" in str(err.value)
    with pytest.raises(LookupError):
        get_reward("IQQ")
    from behavsim import BehavsimError

    assert issubclass(UnknownReward, BehavsimError) and issubclass(UnknownReward, KeyError)
    assert isinstance(get_reward("TS"), TaskSuccessReward)  # case-insensitive


def test_iq_reward_with_the_project_estimator():
    iq = pytest.importorskip("policies.simulation.iq")
    if not hasattr(iq, "get_iq_estimator"):
        pytest.skip("policies.simulation.iq.get_iq_estimator not available yet")
    r = get_reward("iq")
    assert r.estimator.name == "parameters"
    assert r.signature.startswith("reward:iq|turn:-1|weight:5|iq:parameters")
