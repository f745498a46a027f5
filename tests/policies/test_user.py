import numpy as np
import pytest

from policies.actions import DiaAct, parse_act
from policies.domain import DONTCARE, Domain
from policies.user import SimulatedUser, UserConfig, UserConfigError

D = Domain.builtin()


def fresh(seed=0, **cfg):
    u = SimulatedUser(D, UserConfig(**cfg) if cfg else None)
    u.reset(np.random.default_rng(seed))
    return u


def goal_venue(u):
    return D.venues[D.matches(u.goal.constraints)[0]]


def test_goals_have_two_or_three_matches_and_valid_requests():
    for s in range(200):
        u = fresh(s)
        g = u.goal
        assert set(g.constraints) == {"area", "food", "pricerange"}
        assert 2 <= D.count(g.constraints) <= 3
        assert g.requests[0] == "name" and 1 <= len(g.requests) <= 3
        assert set(g.requests[1:]) <= {"addr", "phone", "postcode", "signature", "description"}


def test_unsatisfiable_goals_option():
    counts = [D.count(fresh(s, unsatisfiable_goals=True).goal.constraints) for s in range(200)]
    assert min(counts) == 0


def test_first_turn_informs_constraints():
    u = fresh(3)
    act = u.respond(None)
    assert act.type == "inform"
    for s, v in act.items:
        assert u.goal.constraints[s] == v


def test_reactions_request_confirm_select():
    u = fresh(4)
    u.respond(None)
    g = u.goal.constraints
    assert u.respond(parse_act("request(food)")) .items[0] == ("food", g["food"])
    assert u.respond(DiaAct("confirm", (("area", g["area"]),))).type == "affirm"
    wrong = next(a for a in D.informable["area"] if a != g["area"])
    assert u.respond(DiaAct("confirm", (("area", wrong),))) == DiaAct("negate", (("area", g["area"]),))
    assert u.respond(DiaAct("select", (("pricerange", "cheap"), ("pricerange", "expensive")))).items[0] == \
        ("pricerange", g["pricerange"])


def test_offer_then_requests_then_bye():
    for seed in range(30):
        u = fresh(seed)
        u.respond(None)
        v = goal_venue(u)
        act = u.respond(DiaAct("inform", (("name", v["name"]),)))
        extra = u.goal.requests[1:]
        if not extra:
            assert act == DiaAct("bye") and u.success
            continue
        assert act.type == "request" and set(act.slots()) <= set(extra)
        answer = DiaAct("inform", (("name", v["name"]),) + tuple((r, v[r]) for r in extra))
        assert u.respond(answer) == DiaAct("bye") and u.success


def test_wrong_venue_is_corrected():
    u = fresh(7)
    u.respond(None)
    g = u.goal.constraints
    bad = next(v for v in D.venues if any(g[s] not in (DONTCARE, v[s]) for s in g))
    act = u.respond(DiaAct("inform", (("name", bad["name"]),)))
    assert act.type == "inform" and all(g[s] == val for s, val in act.items)
    assert not u.success and u.accepted is None


def test_name_none_with_wrong_constraints_and_reqmore_bye_hello():
    u = fresh(8)
    u.respond(None)
    g = u.goal.constraints
    s = next(s for s in g if g[s] != DONTCARE)
    other = next(v for v in D.informable[s] if v != g[s])
    act = u.respond(DiaAct("inform", (("name", "none"), (s, other))))
    assert (s, g[s]) in act.items
    assert u.respond(DiaAct("hello")).type in ("inform", "affirm")
    assert u.respond(DiaAct("bye")) == DiaAct("bye") and not u.success


def test_unsatisfiable_goal_is_relaxed():
    seed = next(s for s in range(500) if D.count(fresh(s, unsatisfiable_goals=True).goal.constraints) == 0)
    u = fresh(seed, unsatisfiable_goals=True)
    u.respond(None)
    before = dict(u.goal.constraints)
    stated = tuple((k, v) for k, v in before.items() if v != DONTCARE)
    act = u.respond(DiaAct("inform", (("name", "none"),) + stated))
    assert act.type == "inform" and u.goal.constraints != before


def test_patience_runs_out_on_repeated_acts():
    u = fresh(9, patience=3)
    u.respond(None)
    acts = [u.respond(DiaAct("reqmore")) for _ in range(4)]
    assert acts[3] == DiaAct("bye") and u.gave_up and not u.success


def test_repeat_repeats_last_user_act():
    u = fresh(10)
    first = u.respond(None)
    assert u.respond(DiaAct("repeat")) == first


def test_same_seed_same_user():
    a, b = fresh(11), fresh(11)
    assert a.goal == b.goal
    assert [a.respond(None), a.respond(parse_act("request(area)"))] == \
        [b.respond(None), b.respond(parse_act("request(area)"))]


@pytest.mark.parametrize("cfg,msg", [({"patience": 0}, "patience"), ({"p_combine_inform": (0.5, 0.2)}, "p_combine_inform"),
                                      ({"min_matches": 4, "max_matches": 2}, "min_matches")])
def test_bad_config(cfg, msg):
    with pytest.raises(UserConfigError, match=msg):
        UserConfig(**cfg)


def test_unknown_config_key():
    with pytest.raises(UserConfigError, match="unknown UserConfig key"):
        UserConfig.from_dict({"patiense": 3})


def test_impossible_goal_range():
    with pytest.raises(UserConfigError, match="no goal"):
        SimulatedUser(D, UserConfig(min_matches=200, max_matches=300))
