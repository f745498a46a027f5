import numpy as np
import pytest

from policies.simulation.actions import DiaAct
from policies.simulation.domain import DONTCARE, NONE_VALUE, Domain
from policies.simulation.features import belief_vector, vector_layout, vector_length
from policies.simulation.tracker import ErrorModel, FocusTracker, inform_info

D = Domain.builtin()


def approx(x):
    return pytest.approx(x, abs=1e-12)


def test_initial_layout():
    b = FocusTracker(D).update([("null()", 1.0)])
    bel = b["beliefs"]
    assert set(bel) == set(D.informable) | {"method", "discourseAct", "requested"}
    for s in D.system_requestable:
        assert list(bel[s])[-2:] == [DONTCARE, NONE_VALUE]
        assert bel[s][NONE_VALUE] == 1.0 and len(bel[s]) == len(D.informable[s]) + 2
    assert DONTCARE not in bel["name"] and bel["name"][NONE_VALUE] == 1.0
    assert bel["method"] == {
        "none": 1.0,
        "byconstraints": 0.0,
        "byname": 0.0,
        "finished": 0.0,
        "byalternatives": 0.0,
        "restart": 0.0,
    }
    assert len(bel["discourseAct"]) == 7 and bel["discourseAct"]["none"] == 1.0
    assert set(bel["requested"]) == set(D.requestable)
    f = b["features"]
    assert f["lastInformedVenue"] == "" and f["informedVenueSinceNone"] == []
    assert f["lastActionInformNone"] is False and f["offerHappened"] is False
    assert len(f["inform_info"]) == 25 and f["dbMatches"] == D.n_venues


def test_hand_computed_focus_updates():
    t = FocusTracker(D)
    b = t.update([('inform(food="italian")', 1.0)])
    assert b["beliefs"]["food"]["italian"] == 1.0 and b["beliefs"]["food"][NONE_VALUE] == 0.0
    assert b["beliefs"]["method"]["byconstraints"] == 1.0
    # N-best for area after request(area)
    b = t.update([('inform(area="centre")', 0.6), ('inform(area="north")', 0.4)], "request(area)")
    assert b["beliefs"]["area"]["centre"] == approx(0.6) and b["beliefs"]["area"]["north"] == approx(0.4)
    assert b["beliefs"]["food"]["italian"] == 1.0  # untouched slot keeps its belief
    # confirm(area=centre): affirm 0.5 -> centre; negate(area=north) 0.3 -> north; null 0.2
    b = t.update([("affirm()", 0.5), ('negate(area="north")', 0.3), ("null()", 0.2)], 'confirm(area="centre")')
    area = b["beliefs"]["area"]
    # q = 1 - 0.8 = 0.2: centre 0.2*0.6 + 0.5, north 0.2*0.4 + 0.3
    assert area["centre"] == approx(0.62) and area["north"] == approx(0.38)
    assert area[NONE_VALUE] == approx(0.0)
    # method: q = P(none) = 0.7; byconstraints 0.7*1 + 0.3
    assert b["beliefs"]["method"]["byconstraints"] == approx(1.0)


def test_nbest_is_merged_and_normalised():
    t = FocusTracker(D)
    x, y, z = D.informable["food"][:3]
    b = t.update([(f'inform(food="{x}")', 0.5), (f'inform(food="{x}")', 0.5), (f'inform(food="{y}")', 1.0)])
    assert b["beliefs"]["food"][x] == approx(0.5)
    assert b["beliefs"]["food"][y] == approx(0.5)
    b = t.update([(f'inform(food="{z}")', 0.25), ("null()", 0.75)], "request(food)")
    # q = 0.75: x .375, y .375, z .25
    f = b["beliefs"]["food"]
    assert (f[x], f[y], f[z]) == (approx(0.375), approx(0.375), approx(0.25))


def test_requested_slots_and_venue_features():
    t = FocusTracker(D)
    v = D.venues[0]
    t.update([(f'inform(food="{v["food"]}",area="{v["area"]}",pricerange="{v["pricerange"]}")', 1.0)])
    offer = f'inform(name="{v["name"]}",area="{v["area"]}")'
    b = t.update([("request(phone,addr)", 1.0)], offer)
    f = b["features"]
    assert f["lastInformedVenue"] == v["name"] and f["offerHappened"] is True
    assert f["informedVenueSinceNone"] == [v["name"]] and f["lastActionInformNone"] is False
    assert b["beliefs"]["requested"]["phone"] == 1.0 and b["beliefs"]["requested"]["addr"] == 1.0
    assert b["beliefs"]["method"]["byname"] == 1.0  # only requests after an offer
    b = t.update([("null()", 1.0)], f'inform(name="{v["name"]}",phone="{v["phone"]}")')
    assert b["beliefs"]["requested"]["phone"] == 0.0 and b["beliefs"]["requested"]["addr"] == 1.0
    assert b["features"]["offerHappened"] is True
    b = t.update([("null()", 1.0)], 'inform(name=none,food="korean")')
    f = b["features"]
    assert f["lastActionInformNone"] is True and f["informedVenueSinceNone"] == []
    assert f["lastInformedVenue"] == v["name"] and f["offerHappened"] is False
    b = t.update([("bye()", 1.0)], "reqmore()")
    assert b["beliefs"]["method"]["finished"] == 1.0 and b["beliefs"]["discourseAct"]["bye"] == 1.0


def test_affirm_uses_the_confirmed_value_and_dontcare():
    t = FocusTracker(D)
    t.update([("hello()", 1.0)])
    b = t.update([("affirm()", 1.0)], 'confirm(pricerange="cheap")')
    assert b["beliefs"]["pricerange"]["cheap"] == 1.0
    b = t.update([('inform(area="dontcare")', 1.0)], "request(area)")
    assert b["beliefs"]["area"][DONTCARE] == 1.0


def test_inform_info_by_hand():
    t = FocusTracker(D)
    b = t.update([('inform(food="indian")', 1.0)])
    n = D.count({"food": "indian"})
    block = b["features"]["inform_info"][:5]
    assert block[:4] == [n == 0, n == 1, 2 <= n <= 4, n > 4]
    assert block[4] == D.can_discriminate([("food", "indian")])
    assert b["features"]["inform_info"][5:10] == block  # only one constraint accepted
    assert b["features"]["dbMatches"] == n
    flags, total = inform_info(b, D)
    assert flags == b["features"]["inform_info"] and total == n


def test_error_model_off_is_identity():
    rng = np.random.default_rng(0)
    act = DiaAct("inform", (("food", "indian"),))
    assert ErrorModel().apply(act, D, rng) == [(act, 1.0)]


def test_error_model_confuses_and_nbest():
    rng = np.random.default_rng(1)
    act = DiaAct("inform", (("food", "indian"), ("area", "north")))
    em = ErrorModel(error_rate=1.0, nbest=1)
    for _ in range(20):
        [(hyp, c)] = em.apply(act, D, rng)
        assert c == 1.0 and hyp.items[0][1] != "indian" and hyp.items[1][1] != "north"
    em = ErrorModel(error_rate=0.3, nbest=3)
    for _ in range(50):
        nb = em.apply(act, D, rng)
        assert 1 <= len(nb) <= 3 and sum(c for _, c in nb) == pytest.approx(1.0)
        assert act in [h for h, _ in nb]
        assert [c for _, c in nb] == sorted((c for _, c in nb), reverse=True)
    a = ErrorModel(error_rate=0.3, nbest=3).apply(act, D, np.random.default_rng(5))
    assert a == ErrorModel(error_rate=0.3, nbest=3).apply(act, D, np.random.default_rng(5))


@pytest.mark.parametrize("kw", [{"error_rate": 1.5}, {"nbest": 0}, {"confusion": "acoustic"}])
def test_error_model_validation(kw):
    with pytest.raises(ValueError, match="ErrorModel"):
        ErrorModel(**kw)


def test_belief_vector_layout_and_values():
    assert vector_length(D) == 220
    t = FocusTracker(D)
    b = t.update([('inform(food="indian")', 0.7), ('inform(food="thai")', 0.3)])
    v = belief_vector(b, D)
    assert v.dtype == np.float64 and v.shape == (220,)
    lay = {name: (s, n) for name, s, n in vector_layout(D)}
    s, n = lay["slot:food"]
    assert n == len(D.informable["food"]) + 2
    assert v[s] == 0.0 and v[s + 1] == pytest.approx(0.7) and v[s + 2] == pytest.approx(0.3)
    assert not v[s + 3 : s + n].any()
    s, n = lay["slot:area"]
    assert v[s] == 1.0 and not v[s + 1 : s + n].any()
    s, n = lay["method"]
    assert list(v[s : s + n]) == [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    s, n = lay["inform_info"]
    flags = b["features"]["inform_info"]
    assert list(v[s : s + n : 2]) == [float(x) for x in flags]
    assert np.allclose(v[s : s + n : 2] + v[s + 1 : s + n : 2], 1.0)


def test_belief_vector_tolerates_sparse_beliefs():
    sparse = {
        "beliefs": {
            "area": {"north": 0.6},
            "food": {},
            "pricerange": {"cheap": 1.0, NONE_VALUE: 0.0},
            "method": {"byconstraints": 1.0},
            "discourseAct": {},
            "requested": {},
        }
    }
    v = belief_vector(sparse, D)
    assert v.shape == (220,)
    lay = {name: (s, n) for name, s, n in vector_layout(D)}
    s, _ = lay["slot:area"]
    assert v[s] == pytest.approx(0.4) and v[s + 1] == 0.6


def test_pydial_vector_length(pydial_ontology):
    r = pydial_ontology
    d = Domain.from_pydial(r / "CamRestaurants-rules.json", r / "CamRestaurants-dbase.db")
    assert vector_length(d) == 305  # PyDial's GP state size for CamRestaurants
    b = FocusTracker(d).update([('inform(food="italian")', 1.0)])
    assert belief_vector(b, d).shape == (305,)


def test_labels_of_other_user_acts():
    t = FocusTracker(D)
    a1, a2 = D.informable["area"][:2]
    f1 = D.informable["food"][0]
    b = t.update([(f'hello(food="{f1}")', 1.0)])
    assert b["beliefs"]["food"][f1] == 1.0 and b["beliefs"]["discourseAct"]["hello"] == 1.0
    b = t.update([(f'deny(area="{a1}",area="{a2}")', 1.0)], f'confirm(area="{a1}")')
    assert b["beliefs"]["area"][a2] == 1.0  # the correcting item of deny counts
    b = t.update([('inform(this="dontcare")', 1.0)], "request(pricerange)")
    assert b["beliefs"]["pricerange"][DONTCARE] == 1.0
    b = t.update([('inform(type="restaurant")', 1.0)], "reqmore()")
    assert b["beliefs"]["method"]["byconstraints"] == 1.0  # no informable item: method kept
    b = t.update([(f'reqalts(area="{DONTCARE}")', 1.0)], "reqmore()")
    assert b["beliefs"]["method"]["byalternatives"] == 1.0 and b["beliefs"]["area"][DONTCARE] == 1.0
    v = D.venues[3]
    b = t.update([(f'request(name="{v["name"]}",phone)', 1.0)], f'inform(name="{v["name"]}")')
    assert b["beliefs"]["name"][v["name"]] == 1.0 and b["beliefs"]["requested"]["phone"] == 1.0
    assert b["beliefs"]["method"]["byname"] == 1.0
    b = t.update([(f'confirm(food="{f1}")', 1.0)], f'inform(name="{v["name"]}",phone="1")')
    assert b["beliefs"]["requested"]["food"] == 1.0 and b["beliefs"]["requested"]["phone"] == 0.0


def test_make_belief_for_generated_contexts():
    from policies.simulation.tracker import make_belief

    a, f, p = D.informable["area"][0], D.informable["food"][0], D.informable["pricerange"][0]
    b = make_belief(D, {"area": {a: 0.6}, "food": {f: 1.0}, "pricerange": {p: 0.0}}, method={"byconstraints": 0.4})
    ref = FocusTracker(D).update([("null()", 1.0)])
    assert set(b["beliefs"]) == set(ref["beliefs"]) and set(b["features"]) == set(ref["features"])
    assert b["beliefs"]["area"][a] == 0.6 and b["beliefs"]["area"][NONE_VALUE] == pytest.approx(0.4)
    assert b["beliefs"]["food"][NONE_VALUE] == 0.0 and b["beliefs"]["pricerange"][NONE_VALUE] == 1.0
    assert b["beliefs"]["method"]["none"] == pytest.approx(0.6)
    assert list(b["beliefs"]["area"]) == list(ref["beliefs"]["area"])
    n = D.count({"area": a, "food": f})  # area 0.6 beats **NONE** and 1/(5 - 0.1): accepted
    assert b["features"]["dbMatches"] == n
    assert belief_vector(b, D).shape == (220,)
    with pytest.raises(ValueError, match="not a value of slot 'area'"):
        make_belief(D, {"area": {"atlantis": 0.5}})
    with pytest.raises(ValueError, match="unknown informable slot 'colour'"):
        make_belief(D, {"colour": {"red": 0.5}})
    with pytest.raises(ValueError, match="unknown method"):
        make_belief(D, method={"bycolour": 0.5})


def test_act_strings_and_core_acts_canonical_order():
    """Strings are parsed by behavsim.parse_act (items sorted, values lower-cased for the
    domain); deny's denied item is the one the system act stated, wherever it sorts."""
    from behavsim import parse_act

    a_late, a_early = sorted(D.informable["area"])[-1], sorted(D.informable["area"])[0]
    for act in (f'deny(area="{a_late}",area="{a_early}")', parse_act(f'deny(area="{a_late}",area="{a_early}")')):
        t = FocusTracker(D)
        b = t.update([(act, 1.0)], parse_act(f'confirm(area="{a_late}")'))
        assert b["beliefs"]["area"][a_early] == 1.0 and b["beliefs"]["area"][a_late] == 0.0
    t = FocusTracker(D)
    b = t.update([(f'deny(area="{a_early}",area="{a_late}")', 1.0)], f'confirm(area="{a_early}")')
    assert b["beliefs"]["area"][a_late] == 1.0
    b = FocusTracker(D).update([('inform(food="Indian")', 0.5), (parse_act("inform( FOOD = indian )"), 0.5)])
    assert b["beliefs"]["food"]["indian"] == 1.0


def test_system_turn_of_several_acts():
    """A logged system turn of several acts (an act set): each counts — the no-venue inform says no
    venue matched, the inform naming a venue offers it, the request is what 'this' refers to."""
    v = D.venues[0]
    t = FocusTracker(D)
    food = v["food"]
    t.update([(f'inform(food="{food}")', 1.0)])
    b = t.update([("inform(this=north)", 1.0)], f'request(area)|inform(name=none,food="{food}")')
    f = b["features"]
    assert b["beliefs"]["area"]["north"] == 1.0
    assert f["lastActionInformNone"] is True and f["offerHappened"] is False and f["informedVenueSinceNone"] == []
    offer = f'inform(name="{v["name"]}",phone="{v["phone"]}")'
    b = t.update([("request(addr)", 1.0)], ('inform(name="none")', offer))  # a sequence of acts: the same
    f = b["features"]
    assert f["lastActionInformNone"] is True and f["offerHappened"] is True
    assert f["informedVenueSinceNone"] == [v["name"]] and f["lastInformedVenue"] == v["name"]
    # the user's act set is one hypothesis: its acts together
    b = t.update([(f'inform(food="{food}")|request(phone)', 1.0)], "reqmore()")
    assert b["beliefs"]["requested"]["phone"] == 1.0 and b["beliefs"]["food"][food] == 1.0


def test_one_act_as_a_set_of_one_is_the_act():
    food = D.venues[0]["food"]
    for sys_act in (f'inform(name=none,food="{food}")', "request(area)", "confirm(pricerange=cheap)"):
        beliefs = []
        for given in (sys_act, (sys_act,), f"{sys_act}|{sys_act}"):
            t = FocusTracker(D)
            t.update([(f'inform(food="{food}")', 1.0)])
            beliefs.append(t.update([("inform(this=north)", 1.0), ("affirm()", 0.5)], given))
        assert beliefs[0] == beliefs[1] == beliefs[2]
