import numpy as np
import pytest

from behavsim import parse_act
from policies.simulation.actions import DiaAct
from policies.simulation.domain import DONTCARE, Domain
from policies.simulation.user import DEFAULT_PROBS, SimulatedUser, UserConfig, UserConfigError

D = Domain.builtin()
# every optional behaviour off: the user only answers, never volunteers
PLAIN = {k: 0.0 for k in DEFAULT_PROBS} | {"CorrectingAct1": 1.0}


def fresh(seed=0, probs=None, **cfg):
    u = SimulatedUser(D, UserConfig(probs=PLAIN | (probs or {}), **({"patience": 5} | cfg)))  # fixed patience
    u.reset(np.random.default_rng(seed))
    return u


def seed_where(pred, **kw):
    return next(s for s in range(2000) if pred(fresh(s, **kw).goal))


def goal_venue(u):
    return D.venues[D.matches(u.goal.constraints)[0]]


def offer(v, *slots):
    return DiaAct("inform", (("name", v["name"]),) + tuple((s, v[s]) for s in slots))


def test_goals_have_two_or_three_matches_and_valid_requests():
    for s in range(200):
        g = SimulatedUser(D).reset(np.random.default_rng(s))
        assert set(g.constraints) == {"area", "food", "pricerange"}
        assert 2 <= D.count(g.constraints) <= 3
        assert list(g.requests)[0] == "name" and 1 <= len(g.requests) <= 3
        assert set(g.requests) - {"name"} <= {"addr", "phone", "postcode", "signature", "description"}
        assert all(v is None for v in g.requests.values())


def test_unsatisfiable_goals_option():
    counts = [
        D.count(SimulatedUser(D, {"unsatisfiable_goals": True}).reset(np.random.default_rng(s)).constraints)
        for s in range(200)
    ]
    assert min(counts) == 0


def test_first_turn():
    u = fresh(3)
    assert u.respond(None) == DiaAct("inform", (("type", "restaurant"),))
    u = fresh(3, {"InformCombination": 1.0})
    act = u.respond(None)
    assert act.type == "inform" and dict(act.items[1:]) == u.goal.constraints


def test_request_confirm_select():
    u = fresh(4)
    u.respond(None)
    g = u.goal.constraints
    assert u.respond(parse_act("request(food)")) == DiaAct("inform", (("food", g["food"]),))
    assert u.respond(DiaAct("confirm", (("food", g["food"]),))) == DiaAct("affirm")
    wrong = next(a for a in D.informable["food"] if a != g["food"])
    assert u.respond(DiaAct("confirm", (("food", wrong),))) == DiaAct("negate", (("food", g["food"]),))
    assert u.respond(DiaAct("select", (("pricerange", "cheap"), ("pricerange", "expensive")))) == DiaAct(
        "inform", (("pricerange", g["pricerange"]),)
    )
    assert u.respond(parse_act("request(phone)")) == DiaAct("negate")  # only the user asks for phones


def test_deny_correction_and_dontcare_this():
    s = seed_where(lambda g: g.constraints["area"] == DONTCARE and g.constraints["food"] != DONTCARE)
    u = fresh(s, {"CorrectingAct1": 0.0, "CorrectingAct2": 1.0, "NoSlotWithDontcare": 1.0})
    u.respond(None)
    assert u.respond(parse_act("request(area)")) == DiaAct("inform", (("this", DONTCARE),))
    wrong = next(a for a in D.informable["food"] if a != u.goal.constraints["food"])
    act = u.respond(DiaAct("confirm", (("food", wrong),)))
    assert act == DiaAct("deny", (("food", wrong), ("food", u.goal.constraints["food"])))


def test_affirm_combines_with_next_inform():
    u = fresh(5, {"AffirmCombination": 1.0})
    u.respond(None)  # inform(type) popped; the constraints are still on the agenda
    g = u.goal.constraints
    s0 = next(iter(g))
    act = u.respond(DiaAct("confirm", ((s0, g[s0]),)))
    assert act.type == "affirm" and len(act.items) == 1


def test_offer_then_requests_then_bye():
    for seed in range(30):
        u = fresh(seed, {"InformCombination": 1.0})
        u.respond(None)
        v = goal_venue(u)
        act = u.respond(offer(v, "area", "food", "pricerange"))
        extra = [r for r in u.goal.requests if r != "name"]
        if not extra:
            assert act == DiaAct("bye") and u.success
            continue
        assert act == DiaAct("request", ((extra[0], None),)) and not u.success
        act = u.respond(DiaAct("inform", (("name", v["name"]),) + tuple((r, v[r]) for r in extra)))
        assert act == DiaAct("bye") and u.success and u.accepted == v["name"]


def test_wrong_value_is_corrected_and_requests_reset():
    s = seed_where(lambda g: g.constraints["food"] != DONTCARE)
    u = fresh(s, {"InformCombination": 1.0})
    u.respond(None)
    g = u.goal.constraints
    bad = next(v for v in D.venues if v["food"] != g["food"])
    act = u.respond(offer(bad, "food"))
    assert act == DiaAct("negate", (("food", g["food"]),))
    assert u.accepted is None and not u.success


def test_reqalts_after_first_recommendation():
    u = fresh(6, {"InformCombination": 1.0, "ReqAltsAfterVenRec1": 1.0})
    u.respond(None)
    first, second = [D.venues[i] for i in D.matches(u.goal.constraints)[:2]]
    assert u.respond(offer(first, "area")) == DiaAct("reqalts")
    assert first["name"] in u.goal.name_neq
    u.respond(offer(second, "area"))
    assert u.accepted == second["name"] and not u.venue_matches_goal(first["name"])


def test_name_none_relaxes_goal():
    seed = seed_where(lambda g: D.count(g.constraints) == 0, unsatisfiable_goals=True)
    u = fresh(seed, {"ConstraintRelax": 1.0, "InformCombination": 1.0}, unsatisfiable_goals=True)
    u.respond(None)
    before = dict(u.goal.constraints)
    stated = tuple((k, v) for k, v in before.items() if v != DONTCARE)
    act = u.respond(DiaAct("inform", (("name", "none"),) + stated))
    assert act.type == "reqalts" and len(act.items) == 1
    slot, value = act.items[0]
    assert value == DONTCARE and before[slot] != DONTCARE and u.goal.constraints[slot] == DONTCARE


def test_name_none_with_wrong_values_is_corrected():
    s = seed_where(lambda g: g.constraints["area"] != DONTCARE)
    u = fresh(s, {"InformCombination": 1.0})
    u.respond(None)
    other = next(a for a in D.informable["area"] if a != u.goal.constraints["area"])
    act = u.respond(DiaAct("inform", (("name", "none"), ("area", other))))
    assert act == DiaAct("negate", (("area", u.goal.constraints["area"]),))


def test_reqmore_when_done():
    for p, want in ((1.0, DiaAct("negate")), (0.0, DiaAct("bye"))):
        s = seed_where(lambda g: len(g.requests) == 1)
        u = fresh(s, {"InformCombination": 1.0, "NoAfterReqmore": p, "ThankAck1": 1.0})
        u.respond(None)
        assert u.respond(offer(goal_venue(u), "area")) == DiaAct("thankyou")
        assert u.success
        assert u.respond(DiaAct("reqmore")) == want


def test_patience_runs_out_on_repeated_acts():
    u = fresh(9, patience=3)
    u.respond(None)
    acts = [u.respond(DiaAct("request", (("area", None),))) for _ in range(4)]
    assert acts[3] == DiaAct("bye") and acts[2] != DiaAct("bye") and u.gave_up and not u.success


def test_repeat_and_bye_and_hello():
    u = fresh(10, {"Greeting": 1.0})
    assert u.respond(DiaAct("hello")).type == "hello"
    last = u.respond(parse_act("request(food)"))
    assert u.respond(DiaAct("repeat")) == last
    assert u.respond(DiaAct("bye")) == DiaAct("bye") and u.finished


def test_same_seed_same_user():
    a = SimulatedUser(D)
    b = SimulatedUser(D)
    assert a.reset(np.random.default_rng(11)) == b.reset(np.random.default_rng(11))
    assert a.p == b.p
    acts = ["request(area)", 'confirm(food="thai")', "reqmore()"]
    assert [a.respond(None)] + [a.respond(parse_act(x)) for x in acts] == [b.respond(None)] + [
        b.respond(parse_act(x)) for x in acts
    ]


def test_probabilities_are_drawn_per_dialogue_within_ranges():
    u = SimulatedUser(D)
    draws = []
    for s in range(20):
        u.reset(np.random.default_rng(s))
        for k, (lo, hi) in DEFAULT_PROBS.items():
            assert lo <= u.p[k] <= hi
        draws.append(u.p["InformCombination"])
    assert len(set(draws)) == 20


@pytest.mark.parametrize(
    "cfg,msg",
    [
        ({"patience": 0}, "patience"),
        ({"probs": {"InformCombination": (0.5, 0.2)}}, "InformCombination"),
        ({"probs": {"InformCombinaton": 0.5}}, "Did you mean 'InformCombination'"),
        ({"min_matches": 4, "max_matches": 2}, "min_matches"),
    ],
)
def test_bad_config(cfg, msg):
    with pytest.raises(UserConfigError, match=msg):
        UserConfig(**cfg)


def test_unknown_config_key():
    with pytest.raises(UserConfigError, match="unknown UserConfig key"):
        UserConfig.from_dict({"patiense": 3})


def test_impossible_goal_range():
    with pytest.raises(UserConfigError, match="no goal"):
        SimulatedUser(D, UserConfig(min_matches=200, max_matches=300))


def test_null_system_act_repeats_and_costs_patience():
    u = fresh(12)
    first = u.respond(None)
    assert u.respond(DiaAct("null")) == first and u.patience == 4
