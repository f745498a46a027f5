import json
import sqlite3

import pytest

from policies.simulation.data import make_domain
from policies.simulation.domain import DONTCARE, Domain, DomainError


def test_builtin_shape():
    d = Domain.builtin()
    assert d.name == "restaurant"
    assert set(d.system_requestable) == {"area", "food", "pricerange"}
    assert {"name", "addr", "phone", "postcode", "signature", "description"} <= set(d.requestable)
    assert 90 <= d.n_venues <= 120
    assert d.method == ("none", "byconstraints", "byname", "finished", "byalternatives", "restart")
    assert len(d.discourse_act) == 7 and {"none", "bye"} <= set(d.discourse_act)
    assert Domain.builtin() is d  # cached


def test_builtin_goal_coverage():
    d = Domain.builtin()
    ok = 0
    for f in d.informable["food"]:
        n = sum(
            2 <= d.count({"food": f, "area": a, "pricerange": p}) <= 3
            for a in d.informable["area"] + (DONTCARE,)
            for p in d.informable["pricerange"] + (DONTCARE,)
        )
        ok += n > 0
    assert ok >= 0.8 * len(d.informable["food"])  # most foods appear in a 2-3 venue goal


def test_matches_against_brute_force():
    d = Domain.builtin()
    for c in (
        {"area": "centre"},
        {"food": "indian", "pricerange": "cheap"},
        {"area": "north", "food": "chinese", "pricerange": DONTCARE},
        {},
        {"food": "no such food"},
    ):
        want = [i for i, v in enumerate(d.venues) if all(val == DONTCARE or v[s] == val for s, val in c.items())]
        assert d.matches(c) == want
        assert d.count(c) == len(want)


def test_generator_is_deterministic(tmp_path):
    a = make_domain.make_venues()
    assert a == make_domain.make_venues()
    make_domain.write(tmp_path)
    shipped = json.loads((make_domain.HERE / make_domain.RULES_FILE).read_text())
    assert json.loads((tmp_path / make_domain.RULES_FILE).read_text()) == shipped
    d = Domain.from_pydial(tmp_path / make_domain.RULES_FILE, tmp_path / make_domain.DB_FILE)
    assert d.venues == Domain.builtin().venues


def test_unknown_slot_is_an_error():
    with pytest.raises(DomainError, match="unknown slot 'colour'"):
        Domain.builtin().count({"colour": "red"})


def test_pydial_loader(pydial_ontology):
    RULES = pydial_ontology / "CamRestaurants-rules.json"
    DB = pydial_ontology / "CamRestaurants-dbase.db"
    d = Domain.from_pydial(RULES, DB)
    assert d.n_venues == 110
    assert d.system_requestable == ("area", "food", "pricerange")  # sorted, as PyDial's ontology returns them
    assert len(d.informable["food"]) == 91 and len(d.informable["name"]) == 113
    assert d.count({"food": "indian"}) == 22
    con = sqlite3.connect(DB)
    n = con.execute("select count(*) from CamRestaurants where food='italian' and area='centre'").fetchone()[0]
    assert d.count({"food": "italian", "area": "centre"}) == n


def test_missing_files(tmp_path):
    with pytest.raises(DomainError, match="rules file not found"):
        Domain.from_pydial(tmp_path / "x-rules.json", tmp_path / "x.db")
    rules = make_domain.HERE / make_domain.RULES_FILE
    with pytest.raises(DomainError, match="database file not found"):
        Domain.from_pydial(rules, tmp_path / "x.db")


def test_bad_json(tmp_path):
    p = tmp_path / "bad-rules.json"
    p.write_text('{"type": "restaurant",')
    with pytest.raises(DomainError, match=r"bad-rules.json: invalid JSON at line 1"):
        Domain.from_pydial(p, make_domain.HERE / make_domain.DB_FILE)


def test_missing_key(tmp_path):
    rules = json.loads((make_domain.HERE / make_domain.RULES_FILE).read_text())
    del rules["method"]
    p = tmp_path / "r-rules.json"
    p.write_text(json.dumps(rules))
    with pytest.raises(DomainError, match=r"missing key\(s\) \['method'\]"):
        Domain.from_pydial(p, make_domain.HERE / make_domain.DB_FILE)


def test_not_a_database(tmp_path):
    p = tmp_path / "x.db"
    p.write_text("hello")
    with pytest.raises(DomainError, match="x.db: not an SQLite database"):
        Domain.from_pydial(make_domain.HERE / make_domain.RULES_FILE, p)


def test_foreign_database(tmp_path):
    p = tmp_path / "other.db"
    con = sqlite3.connect(p)
    con.execute("create table cars (name text, colour text)")
    con.execute("insert into cars values ('a', 'red')")
    con.commit()
    con.close()
    with pytest.raises(DomainError, match=r"lacks column\(s\) \['area', 'food', 'pricerange'\]"):
        Domain.from_pydial(make_domain.HERE / make_domain.RULES_FILE, p)


def test_value_outside_ontology(tmp_path):
    rules = json.loads((make_domain.HERE / make_domain.RULES_FILE).read_text())
    rules["informable"]["food"].remove("indian")
    p = tmp_path / "r-rules.json"
    p.write_text(json.dumps(rules))
    with pytest.raises(DomainError, match="food='indian', which is not among the values"):
        Domain.from_pydial(p, make_domain.HERE / make_domain.DB_FILE)
