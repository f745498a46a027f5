import numpy as np
import pytest

import behavsim
from behavsim import ActParseError, DialogueAct, parse_act
from policies.simulation.actions import (
    SUMMARY_ACTIONS,
    DiaAct,
    UnknownSummaryAction,
    action_mask,
    master_act,
    summary_actions,
    to_master_act,
)
from policies.simulation.domain import Domain
from policies.simulation.tracker import FocusTracker

D = Domain.builtin()
IDX = {a: i for i, a in enumerate(SUMMARY_ACTIONS)}


def allowed(b):
    m = action_mask(b, D)
    return {a for a, ok in zip(SUMMARY_ACTIONS, m) if ok}


def test_summary_action_names():
    assert len(SUMMARY_ACTIONS) == 16
    assert SUMMARY_ACTIONS[:3] == ("request_area", "confirm_area", "select_area")
    assert SUMMARY_ACTIONS[9:] == (
        "inform",
        "inform_byname",
        "inform_alternatives",
        "bye",
        "repeat",
        "reqmore",
        "restart",
    )
    assert summary_actions(D) == SUMMARY_ACTIONS


@pytest.mark.parametrize(
    "text,act",
    [
        ("request(food)", DiaAct("request", (("food", None),))),
        ('inform(name="pizza palace",area="centre")', DiaAct("inform", (("name", "pizza palace"), ("area", "centre")))),
        ('select(area="north",area="south")', DiaAct("select", (("area", "north"), ("area", "south")))),
        (
            'inform(name=none,name!="x, y",food="thai")',
            DiaAct("inform", (("name", "none"), ("name!", "x, y"), ("food", "thai"))),
        ),
        ('inform(name="a \\"b\\" c")', DiaAct("inform", (("name", 'a "b" c'),))),
        ("bye()", DiaAct("bye")),
    ],
)
def test_pydial_form_and_the_core_parser(text, act):
    """One parser: policies.simulation.actions re-exports behavsim's; DiaAct prints PyDial's form, which
    the core parser reads back to the act's canonical form."""
    assert parse_act is behavsim.parse_act and ActParseError is behavsim.ActParseError
    assert str(act) == text
    assert parse_act(text) == parse_act(str(act)) == act.canonical()
    assert act.canonical() == DialogueAct.create(act.type, [(s, v or "") for s, v in act.items])
    back = DiaAct.from_act(text)  # canonical item order, bare slots as None
    assert (
        back
        == DiaAct.from_act(act.canonical())
        == DiaAct(act.type, tuple(sorted(act.items, key=lambda x: (x[0], x[1] or ""))))
    )
    assert DiaAct.from_act(act) is act
    assert DiaAct.from_act('INFORM(Name = "Pizza Palace")') == DiaAct("inform", (("name", "pizza palace"),))


@pytest.mark.parametrize(
    "bad,where",
    [
        ('inform(food="thai)', "unterminated quoted value"),
        ("inform", "expected '\\('"),
        ("(food)", "expected a dialogue-act type"),
        ("inform(=x)", "expected a slot name"),
    ],
)
def test_act_strings_are_parsed_by_the_core(bad, where):
    from policies.simulation.nlg import TemplateNLG
    from policies.simulation.user import SimulatedUser

    for call in (
        lambda: FocusTracker(D).update([(bad, 1.0)]),
        lambda: FocusTracker(D).update([("null()", 1.0)], bad),
        lambda: TemplateNLG(0).generate(bad),
        lambda: DiaAct.from_act(bad),
    ):
        with pytest.raises(behavsim.ActParseError, match=where):
            call()
    u = SimulatedUser(D)
    u.reset(np.random.default_rng(0))
    with pytest.raises(behavsim.ActParseError, match=where):
        u.respond(bad)


def test_masks_through_a_dialogue():
    t = FocusTracker(D)
    b = t.update([("hello()", 1.0)])
    ok = allowed(b)
    assert {"request_area", "request_food", "request_pricerange"} <= ok
    assert not ok & {
        "confirm_area",
        "select_area",
        "inform_byname",
        "inform_alternatives",
        "bye",
        "repeat",
        "restart",
        "reqmore",
    }
    assert "inform" not in ok  # 102 venues can be told apart
    v = D.venues[0]
    b = t.update(
        [(f'inform(area="{v["area"]}",food="{v["food"]}",pricerange="{v["pricerange"]}")', 1.0)], "request(area)"
    )
    ok = allowed(b)
    assert "inform" in ok and "confirm_food" in ok and "select_food" not in ok
    act = to_master_act("inform", b, D)
    assert act == (f'inform(name="{v["name"]}",area="{v["area"]}",food="{v["food"]}",pricerange="{v["pricerange"]}")')
    b = t.update([("request(phone)", 1.0)], act)
    ok = allowed(b)
    assert {"inform_byname", "reqmore"} <= ok
    assert to_master_act("inform_byname", b, D) == f'inform(name="{v["name"]}",phone="{v["phone"]}")'
    b = t.update([("reqalts()", 1.0)], to_master_act("inform_byname", b, D))
    assert "inform_alternatives" in allowed(b)
    alt = to_master_act("inform_alternatives", b, D)
    others = [
        D.venues[i]["name"]
        for i in D.matches({s: v[s] for s in ("area", "food", "pricerange")})
        if D.venues[i]["name"] != v["name"]
    ]
    assert f'name="{others[0]}"' in alt
    b = t.update([("bye()", 1.0)], alt)
    assert "bye" in allowed(b) and to_master_act("bye", b, D) == "bye()"


def test_request_confirm_select_strings():
    t = FocusTracker(D)
    b = t.update([('inform(area="north")', 0.7), ('inform(area="south")', 0.3)])
    assert to_master_act("request_food", b, D) == "request(food)"
    assert to_master_act("confirm_area", b, D) == 'confirm(area="north")'
    assert to_master_act("select_area", b, D) == 'select(area="north",area="south")'
    assert {"select_area", "confirm_area"} <= allowed(b)


def test_inform_none_and_ties():
    t = FocusTracker(D)
    foods = [f for f in D.informable["food"] if D.count({"food": f, "area": "north", "pricerange": "cheap"}) == 0]
    b = t.update([(f'inform(area="north",food="{foods[0]}",pricerange="cheap")', 1.0)])
    assert to_master_act("inform", b, D) == f'inform(name=none,area="north",food="{foods[0]}",pricerange="cheap")'
    # a tie between two values: the first in ontology order wins (whatever the key order)
    a1, a2 = D.informable["area"][:2]
    b = t.update([(f'inform(area="{a2}")', 0.5), (f'inform(area="{a1}")', 0.5)], "request(area)")
    assert to_master_act("confirm_area", b, D) == f'confirm(area="{a1}")'


def test_unknown_summary_action():
    b = FocusTracker(D).update([("hello()", 1.0)])
    with pytest.raises(UnknownSummaryAction, match="Did you mean 'request_food'"):
        to_master_act("request_fod", b, D)


def test_generated_context_without_features():
    # C_gen-style context: one value per slot with some mass, the rest **NONE**; no features
    bel = {}
    for s in ("area", "food", "pricerange"):
        v = D.informable[s][0]
        bel[s] = {v: 0.6, "**NONE**": 0.4}
    bel["method"] = {"byconstraints": 0.6, "none": 0.4}
    b = {"beliefs": bel}
    m = action_mask(b, D)
    assert m.dtype == bool and m.shape == (16,)
    for a, ok in zip(SUMMARY_ACTIONS, m):
        if ok:
            act = parse_act(to_master_act(a, b, D))
            assert act.act_type in ("request", "confirm", "select", "inform", "reqmore", "bye")
    assert to_master_act("confirm_area", b, D) == f'confirm(area="{D.informable["area"][0]}")'


def test_alternatives_exhausted():
    t = FocusTracker(D)
    c = next(
        {"area": a, "food": f, "pricerange": p}
        for a in D.informable["area"]
        for f in D.informable["food"]
        for p in D.informable["pricerange"]
        if D.count({"area": a, "food": f, "pricerange": p}) == 2
    )
    names = [D.venues[i]["name"] for i in D.matches(c)]
    t.update([(DiaAct("inform", tuple(c.items())), 1.0)])
    b = t.update([("reqalts()", 1.0)], f'inform(name="{names[0]}")')
    assert to_master_act("inform_alternatives", b, D).startswith(f'inform(name="{names[1]}"')
    b = t.update([("reqalts()", 1.0)], f'inform(name="{names[1]}")')
    assert b["features"]["informedVenueSinceNone"] == names
    act = master_act("inform_alternatives", b, D)
    assert str(act) == to_master_act("inform_alternatives", b, D)
    assert act.items[0] == ("name", "none")
    assert [v for s, v in act.items if s == "name!"] == names
    assert {s: v for s, v in act.items if s in c} == c


# ---------------------------------------------------------------- ties: content, not key order
def _reorder(obj, order):
    """A deep copy with every dict's keys re-ordered by ``order(keys)``."""
    if isinstance(obj, dict):
        return {k: _reorder(obj[k], order) for k in order(list(obj))}
    if isinstance(obj, (list, tuple)):
        return [_reorder(v, order) for v in obj]
    return obj


def _tie_beliefs(n, seed=0):
    """make_belief beliefs full of exact ties: value vs **NONE**, value vs value, value vs
    dontcare, method and discourseAct ties, several requested slots, offered venues."""
    import numpy as np

    from policies.simulation.tracker import make_belief

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        slots = {}
        for s in D.system_requestable:
            vals = D.informable[s]
            a, b = (vals[int(i)] for i in rng.choice(len(vals), 2, replace=False))
            slots[s] = [
                {a: 0.5},
                {a: 0.4, b: 0.4},
                {a: 0.5, "dontcare": 0.5},
                {"dontcare": 0.5},
                {b: 1.0},
                {},
                {a: 0.25, b: 0.25},
            ][int(rng.integers(7))]
        method = [
            {"byconstraints": 0.5},
            {"byalternatives": 0.5},
            {"finished": 0.5, "byname": 0.5},
            {"byconstraints": 1.0},
            {"byname": 0.5},
            {"restart": 0.5},
        ][int(rng.integers(6))]
        da = [{}, {"thankyou": 0.5}, {"ack": 0.5, "thankyou": 0.5}][int(rng.integers(3))]
        req = {r: 0.6 for r in D.requestable if rng.random() < 0.3}
        feats = {}
        if rng.random() < 0.5:
            v = D.venues[int(rng.integers(len(D.venues)))]["name"]
            feats = {"lastInformedVenue": v, "informedVenueSinceNone": [v], "offerHappened": True}
        if rng.random() < 0.3:
            n1, n2 = (D.venues[int(i)]["name"] for i in rng.choice(len(D.venues), 2, replace=False))
            slots["name"] = {n1: 0.5, n2: 0.5}
        out.append(make_belief(D, slots, method=method, discourse_act=da, requested=req, features=feats))
    return out


def _env_beliefs(n_dialogues):
    from policies.handcrafted.policy import HandcraftedPolicy
    from policies.simulation.env import DialogueEnv
    from policies.simulation.tracker import ErrorModel

    out = []
    for env in (DialogueEnv(hello=True), DialogueEnv(error_model=ErrorModel(0.3, 3))):
        pol = HandcraftedPolicy(env.domain, nlg_seed=None)
        for seed in range(n_dialogues):
            b, info = env.reset(seed=seed)
            done = False
            while not done:
                out.append(b)
                b, _, t, tr, info = env.step(pol.summary_action(b))
                done = t or tr
            out.append(b)
    return out


def _everything(b):
    from policies.handcrafted.policy import HandcraftedPolicy
    from policies.simulation.actions import accepted_constraints
    from policies.simulation.features import belief_vector
    from policies.simulation.tracker import inform_info

    pol = HandcraftedPolicy(D)
    return (
        tuple(action_mask(b, D)),
        tuple(to_master_act(a, b, D) for a in SUMMARY_ACTIONS if a != "repeat"),
        pol.act(b),
        pol.summary_action(b),
        tuple(belief_vector(b, D)),
        inform_info(b, D),
        accepted_constraints(b, D),
    )


def test_decisions_do_not_depend_on_key_order():
    import random

    rnd = random.Random(0)
    beliefs = _tie_beliefs(300) + _env_beliefs(15)
    orders = (sorted, lambda ks: sorted(ks, reverse=True), lambda ks: rnd.sample(ks, len(ks)))
    for b in beliefs:
        ref = _everything(b)
        for order in orders:
            assert _everything(_reorder(b, order)) == ref


def test_ties_follow_the_domain_order():
    """A value at p = 0.5 beats **NONE** at 0.5 (ontology order, then dontcare, then **NONE**),
    also after a JSON round trip with sorted keys (the review's case)."""
    import json

    from policies.handcrafted.policy import HandcraftedPolicy
    from policies.simulation.actions import accepted_constraints, top_value, value_rank
    from policies.simulation.tracker import make_belief

    food = D.informable["food"]
    b = make_belief(D, {"food": {food[3]: 0.5}}, method={"byconstraints": 1.0})
    loaded = json.loads(json.dumps(b, sort_keys=True))
    assert list(loaded["beliefs"]["food"])[0] == "**NONE**"
    pol = HandcraftedPolicy(D)
    assert pol.act(b) == pol.act(loaded)
    assert [c[:2] for c in accepted_constraints(loaded, D)] == [("food", food[3])]
    assert to_master_act("confirm_food", loaded, D) == f'confirm(food="{food[3]}")'
    # value vs value: ontology order; value vs dontcare: the value; unknown keys alphabetically
    d = {food[5]: 0.4, food[2]: 0.4, "**NONE**": 0.2}
    rank = value_rank(food)
    assert top_value(d, rank) == top_value(dict(reversed(d.items())), rank) == (food[2], 0.4)
    assert top_value({"dontcare": 0.5, food[9]: 0.5}, rank)[0] == food[9]
    assert top_value({"**NONE**": 0.5, "dontcare": 0.5}, rank)[0] == "dontcare"
    assert top_value({"zz": 0.5, "aa": 0.5, "**NONE**": 0.5}, rank)[0] == "aa"
    assert top_value({"zz": 0.5, food[-1]: 0.5}, rank)[0] == food[-1]
    assert top_value({}) == ("**NONE**", -1.0)
    b = make_belief(D, {"area": {D.informable["area"][4]: 0.3, D.informable["area"][1]: 0.3}})
    assert (
        to_master_act("select_area", _reorder(b, sorted), D)
        == f'select(area="{D.informable["area"][1]}",area="{D.informable["area"][4]}")'
    )
