"""Generated context sets (C_gen): a grid over the belief in one value per slot."""

import json
import math
import time

import pytest

from behavsim import ConfigError, ContextSet
from contexts import default_values, generate_grid, grid_levels
from policies.simulation.domain import Domain, resolve_domain
from policies.simulation.tracker import inform_info, make_belief

GRID_SLOTS = ("area", "pricerange", "food")


@pytest.fixture(scope="module")
def cgen():
    return generate_grid()


def test_paper_count_at_step_02(cgen):
    assert len(cgen) == 6**4 == 1296
    assert cgen.meta["levels"] == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert len(set(cgen.ids)) == 1296


def test_step_01_gives_14641_quickly():
    t = time.perf_counter()
    cs = generate_grid(step=0.1)
    elapsed = time.perf_counter() - t
    assert len(cs) == 11**4 == 14641
    assert elapsed < 5.0, f"generating 14,641 contexts took {elapsed:.2f} s"


def test_every_distribution_sums_to_one(cgen):
    for b in cgen.beliefs:
        for name, dist in b["beliefs"].items():
            if name == "requested":
                continue
            assert abs(math.fsum(dist.values()) - 1.0) < 1e-12, (name, dist)
            assert all(0.0 <= p <= 1.0 for p in dist.values())


def test_step_01_levels_exact_and_sums():
    levels = grid_levels(0.1)
    assert levels == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    cs = generate_grid(step=0.1)
    for b in cs.beliefs[::97]:
        for s in (*GRID_SLOTS, "method"):
            assert abs(math.fsum(b["beliefs"][s].values()) - 1.0) < 1e-12


def test_chosen_values_recorded_and_used(cgen):
    d = resolve_domain(None)
    assert (
        cgen.meta["values"]
        == default_values(d, GRID_SLOTS)
        == {"area": "centre", "pricerange": "expensive", "food": "indian"}
    )
    assert cgen.meta["slots"] == list(GRID_SLOTS)
    assert cgen.meta["domain"] == d.name and cgen.meta["step"] == 0.2 and cgen.meta["method"] == "byconstraints"
    for b, m in zip(cgen.beliefs, cgen.metas):
        assert m["origin"] == "generated"
        for s in GRID_SLOTS:
            v = cgen.meta["values"][s]
            assert b["beliefs"][s][v] == m["grid"][s]
            others = {k: p for k, p in b["beliefs"][s].items() if k not in (v, "**NONE**")}
            assert set(others.values()) == {0.0}
        assert b["beliefs"]["method"]["byconstraints"] == m["grid"]["method"]


def test_values_can_be_given():
    cs = generate_grid(values={"area": "north", "food": "thai"})
    assert cs.meta["values"] == {"area": "north", "pricerange": "expensive", "food": "thai"}
    assert cs.beliefs[-1]["beliefs"]["area"]["north"] == 1.0


def test_each_context_is_make_belief_of_its_grid_point(cgen):
    """Every context is exactly make_belief of its grid point (up to key order)."""
    d = resolve_domain(None)
    vals = cgen.meta["values"]
    for b, m in zip(cgen.beliefs, cgen.metas):
        g = m["grid"]
        ref = make_belief(d, {s: {vals[s]: g[s]} for s in GRID_SLOTS}, method={"byconstraints": g["method"]})
        assert b == ref


def test_features_follow_the_beliefs(cgen):
    full = [b for b, m in zip(cgen.beliefs, cgen.metas) if all(m["grid"][s] == 1.0 for s in GRID_SLOTS)]
    d = resolve_domain(None)
    n = d.count(cgen.meta["values"])
    assert n == 6 and full and all(b["features"]["dbMatches"] == n for b in full)  # centre, expensive, indian
    empty = [b for b, m in zip(cgen.beliefs, cgen.metas) if all(m["grid"][s] == 0.0 for s in GRID_SLOTS)]
    assert all(b["features"]["dbMatches"] == len(resolve_domain(None).venues) for b in empty)
    assert all(len(b["features"]["inform_info"]) == 25 for b in cgen.beliefs)


def test_ties_at_one_half_go_to_the_value():
    """Features agree with the stored belief, and ties do not depend on key order: at p = 0.5
    the value beats **NONE** (policies.simulation.actions' rule: ontology values, then dontcare, then
    **NONE**), so the value is accepted and every context, ties included, is make_belief of its
    grid point."""
    d = resolve_domain(None)
    cs = generate_grid(step=0.1)
    vals = cs.meta["values"]
    for b, m in zip(cs.beliefs, cs.metas):
        assert (b["features"]["inform_info"], b["features"]["dbMatches"]) == tuple(inform_info(b, d))
        g = m["grid"]
        if 0.5 in g.values():
            assert b == make_belief(d, {s: {vals[s]: g[s]} for s in GRID_SLOTS}, method={"byconstraints": g["method"]})
    tie = [
        b
        for b, m in zip(cs.beliefs, cs.metas)
        if m["grid"] == {"area": 0.0, "pricerange": 0.0, "food": 0.5, "method": 1.0}
    ]
    assert len(tie) == 1 and tie[0]["features"]["dbMatches"] == d.count({"food": vals["food"]}) < len(d.venues)


def test_in_memory_set_equals_its_file_key_order_included(tmp_path):
    cs = generate_grid(step=0.5)
    back = ContextSet.load(cs.save(tmp_path / "g.jsonl"))
    assert [json.dumps(b) for b in cs.beliefs] == [json.dumps(b) for b in back.beliefs]


def test_contexts_do_not_share_dicts(cgen):
    a, b = cgen.beliefs[0], cgen.beliefs[1]
    assert a["beliefs"]["area"] is not b["beliefs"]["area"]
    assert a["features"]["inform_info"] is not b["features"]["inform_info"]


def test_deterministic():
    assert generate_grid().fingerprint == generate_grid().fingerprint


@pytest.mark.parametrize(
    "step,pattern",
    [
        (0.3, r"step: 0.3 does not divide 1"),
        (0.0, r"step: expected a number in \(0, 1\]"),
        (-0.2, r"step: expected a number in \(0, 1\]"),
        (1.5, r"step: expected a number in \(0, 1\]"),
        (float("nan"), r"step: expected"),
        ("0.2", r"step: expected"),
        (True, r"step: expected"),
    ],
)
def test_bad_steps(step, pattern):
    with pytest.raises(ConfigError, match=pattern):
        generate_grid(step=step)


def test_huge_grid_refused_before_building():
    t = time.perf_counter()
    with pytest.raises(ConfigError, match=r"step: 0.001 gives 1,001\^4 = 1,004,006,004,001 contexts.*GB"):
        generate_grid(step=0.001)
    assert time.perf_counter() - t < 1.0


def test_unknown_slot_names_closest():
    with pytest.raises(ConfigError, match=r"slots: unknown slot 'prices'.*Did you mean 'pricerange'"):
        generate_grid(slots=("area", "prices"))
    with pytest.raises(ConfigError, match=r"slots: duplicate"):
        generate_grid(slots=("area", "area"))
    with pytest.raises(ConfigError, match=r"slots: expected a list"):
        generate_grid(slots="area")


def test_unknown_values_and_method():
    with pytest.raises(ConfigError, match=r"values: 'cntre' is not a value of slot 'area'.*Did you mean 'centre'"):
        generate_grid(values={"area": "cntre"})
    with pytest.raises(ConfigError, match=r"values: slot 'name' is not one of the grid slots"):
        generate_grid(values={"name": "x"})
    with pytest.raises(ConfigError, match=r"method: expected one of .*byconstraints.*Did you mean 'byconstraints'"):
        generate_grid(method="byconstraint")
    with pytest.raises(ConfigError, match=r"method: "):
        generate_grid(method="none")


def test_fewer_slots_and_other_method():
    cs = generate_grid(step=0.5, slots=("food",), method="byname")
    assert len(cs) == 9
    assert cs.beliefs[-1]["beliefs"]["method"] == {
        "none": 0.0,
        "byconstraints": 0.0,
        "byname": 1.0,
        "finished": 0.0,
        "byalternatives": 0.0,
        "restart": 0.0,
    }


@pytest.mark.parametrize("step", [1e-9, 1e-300])
def test_absurd_steps_refused_quickly(step):
    t = time.perf_counter()
    with pytest.raises(ConfigError, match=r"step: .* contexts, about .* GB in memory"):
        generate_grid(step=step)
    assert time.perf_counter() - t < 1.0


def test_pydial_domain_grid_and_policy(pydial_ontology):
    PYDIAL = pydial_ontology
    from behavsim.policy import check_policy
    from policies.handcrafted.policy import HandcraftedPolicy

    cam = Domain.from_pydial(PYDIAL / "CamRestaurants-rules.json", PYDIAL / "CamRestaurants-dbase.db")
    cs = generate_grid(cam, step=0.5)
    assert len(cs) == 81 and cs.meta["domain_rules"] == "CamRestaurants-rules.json"
    assert cs.meta["domain_venues"] == len(cam.venues)
    assert cs.fingerprint == generate_grid(step=0.5).fingerprint  # the default domain
    assert cs.fingerprint != generate_grid(Domain.builtin(), step=0.5).fingerprint
    assert check_policy(HandcraftedPolicy(cam), cs.beliefs) == 81
