import pytest

from policies.actions import (SUMMARY_ACTIONS, ActParseError, DiaAct, UnknownSummaryAction,
                              action_mask, parse_act, summary_actions, to_master_act)
from policies.domain import Domain
from policies.tracker import FocusTracker

D = Domain.builtin()
IDX = {a: i for i, a in enumerate(SUMMARY_ACTIONS)}


def allowed(b):
    m = action_mask(b, D)
    return {a for a, ok in zip(SUMMARY_ACTIONS, m) if ok}


def test_summary_action_names():
    assert len(SUMMARY_ACTIONS) == 16
    assert SUMMARY_ACTIONS[:3] == ("request_area", "confirm_area", "select_area")
    assert SUMMARY_ACTIONS[9:] == ("inform", "inform_byname", "inform_alternatives", "bye",
                                   "repeat", "reqmore", "restart")
    assert summary_actions(D) == SUMMARY_ACTIONS


@pytest.mark.parametrize("text,act", [
    ("request(food)", DiaAct("request", (("food", None),))),
    ('inform(name="pizza palace",area=centre)', DiaAct("inform", (("name", "pizza palace"), ("area", "centre")))),
    ('select(area="north",area="south")', DiaAct("select", (("area", "north"), ("area", "south")))),
    ('inform(name=none,name!="x, y",food="thai")', DiaAct("inform", (("name", "none"), ("name!", "x, y"), ("food", "thai")))),
    ("bye()", DiaAct("bye")),
])
def test_parse_and_format(text, act):
    assert parse_act(text) == act
    assert parse_act(str(act)) == act


@pytest.mark.parametrize("bad,where", [("inform(food=\"thai)", "unclosed quote"), ("inform", "expected"),
                                        ("(food)", "expected"), ("inform(=x)", "empty slot")])
def test_parse_errors(bad, where):
    with pytest.raises(ActParseError, match=where):
        parse_act(bad)


def test_masks_through_a_dialogue():
    t = FocusTracker(D)
    b = t.update([("hello()", 1.0)])
    ok = allowed(b)
    assert {"request_area", "request_food", "request_pricerange"} <= ok
    assert not ok & {"confirm_area", "select_area", "inform_byname", "inform_alternatives", "bye",
                     "repeat", "restart", "reqmore"}
    assert "inform" not in ok  # 102 venues can be told apart
    v = D.venues[0]
    b = t.update([(f'inform(area="{v["area"]}",food="{v["food"]}",pricerange="{v["pricerange"]}")', 1.0)],
                 "request(area)")
    ok = allowed(b)
    assert "inform" in ok and "confirm_food" in ok and "select_food" not in ok
    act = to_master_act("inform", b, D)
    assert act == (f'inform(name="{v["name"]}",area="{v["area"]}",food="{v["food"]}",'
                   f'pricerange="{v["pricerange"]}")')
    b = t.update([("request(phone)", 1.0)], act)
    ok = allowed(b)
    assert {"inform_byname", "reqmore"} <= ok
    assert to_master_act("inform_byname", b, D) == f'inform(name="{v["name"]}",phone="{v["phone"]}")'
    b = t.update([("reqalts()", 1.0)], to_master_act("inform_byname", b, D))
    assert "inform_alternatives" in allowed(b)
    alt = to_master_act("inform_alternatives", b, D)
    others = [D.venues[i]["name"] for i in D.matches({s: v[s] for s in ("area", "food", "pricerange")})
              if D.venues[i]["name"] != v["name"]]
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
    # a tie between two values: the first in the belief (ontology order) wins
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
            assert act.type in ("request", "confirm", "select", "inform", "reqmore", "bye")
    assert to_master_act("confirm_area", b, D) == f'confirm(area="{D.informable["area"][0]}")'


def test_alternatives_exhausted():
    t = FocusTracker(D)
    c = next({"area": a, "food": f, "pricerange": p} for a in D.informable["area"]
             for f in D.informable["food"] for p in D.informable["pricerange"]
             if D.count({"area": a, "food": f, "pricerange": p}) == 2)
    names = [D.venues[i]["name"] for i in D.matches(c)]
    t.update([(DiaAct("inform", tuple(c.items())), 1.0)])
    b = t.update([("reqalts()", 1.0)], f'inform(name="{names[0]}")')
    assert to_master_act("inform_alternatives", b, D).startswith(f'inform(name="{names[1]}"')
    b = t.update([("reqalts()", 1.0)], f'inform(name="{names[1]}")')
    assert b["features"]["informedVenueSinceNone"] == names
    act = parse_act(to_master_act("inform_alternatives", b, D))
    assert act.items[0] == ("name", "none")
    assert [v for s, v in act.items if s == "name!"] == names
    assert {s: v for s, v in act.items if s in c} == c
