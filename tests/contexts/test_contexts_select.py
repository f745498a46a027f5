"""Subsets of context sets: contexts.select."""

import pytest

from behavsim import ConfigError, ContextSet
from contexts import collect, generate_grid, select, top_belief


@pytest.fixture(scope="module")
def cgen():
    return generate_grid()


@pytest.fixture(scope="module")
def ccol():
    return collect("handcrafted", dialogues=10, seed=0)


def test_turn(ccol):
    first = select(ccol, turn=1)
    assert len(first) == 10 and all(m["turn"] == 1 for m in first.metas)
    mid = select(ccol, turn=(2, 4))
    assert len(mid) == sum(2 <= m["turn"] <= 4 for m in ccol.metas)
    assert len(select(ccol, turn=(3, None))) == sum(m["turn"] >= 3 for m in ccol.metas)
    assert mid.meta["parent"] == ccol.fingerprint and mid.meta["criteria"] == {"turn": [2, 4]}


def test_generated_contexts_have_no_turn(cgen):
    assert len(select(cgen, turn=1)) == 0


def test_slot_belief_range_inclusive(cgen):
    sub = select(cgen, slot_belief={"food": (0.5, 1.0)})
    assert len(sub) == 3 * 6**3  # levels 0.6, 0.8, 1.0
    sub = select(cgen, slot_belief={"food": (0.6, 0.6), "area": (None, 0.0)})
    assert len(sub) == 6 * 6 and all(m["grid"]["food"] == 0.6 and m["grid"]["area"] == 0.0 for m in sub.metas)


def test_method_belief(cgen):
    sub = select(cgen, method_belief={"byconstraints": (0.8, 1)})
    assert len(sub) == 2 * 6**3


def test_origin_and_union(cgen, ccol):
    both = ContextSet.concat([cgen, ccol])
    assert select(both, origin="collected").beliefs == ccol.beliefs
    assert len(select(both, origin=["collected", "generated"])) == len(both)
    assert len(select(both, origin="logged")) == 0


def test_source_policy():
    cs = collect({"a": "handcrafted", "b": "handcrafted"}, dialogues=2, seed=0)
    assert len(select(cs, source_policy="b")) == len(cs) // 2
    with pytest.raises(ConfigError, match=r"source_policy: no context comes from 'c'"):
        select(cs, source_policy="c")


def test_combined_and_where(ccol):
    sub = select(
        ccol, turn=(2, None), slot_belief={"food": (0.5, 1)}, where=lambda b, m: m["summary_action"] == "inform"
    )
    assert all(
        m["turn"] >= 2 and m["summary_action"] == "inform" and top_belief(b["beliefs"]["food"]) >= 0.5
        for b, m in zip(sub.beliefs, sub.metas)
    )


def test_top_belief():
    assert top_belief({"a": 0.2, "dontcare": 0.5, "**NONE**": 0.3}) == 0.5
    assert top_belief({"**NONE**": 1.0}) == 0.0
    assert top_belief(None) == 0.0


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(turn="first"), r"turn: expected an integer or a \(low, high\) pair"),
        (dict(turn=1.5), r"turn: expected an integer"),
        (dict(turn=(4, 2)), r"turn: empty range"),
        (dict(origin="colected"), r"origin: unknown origin 'colected'. Did you mean 'collected'"),
        (dict(slot_belief={"fod": (0, 1)}), r"slot_belief: slot 'fod' appears in no context. Did you mean 'food'"),
        (dict(slot_belief={"food": "high"}), r"slot_belief\['food'\]: expected a number or a \(low, high\) pair"),
        (dict(slot_belief=[("food", (0, 1))]), r"slot_belief: expected a mapping"),
        (dict(method_belief={"byconstraint": (0, 1)}), r"method 'byconstraint' appears in no context.*'byconstraints'"),
    ],
)
def test_bad_criteria(ccol, kwargs, pattern):
    with pytest.raises(ConfigError, match=pattern):
        select(ccol, **kwargs)


def test_not_a_context_set():
    with pytest.raises(ConfigError, match="cs: expected a behavsim.ContextSet"):
        select([{"beliefs": {}}], turn=1)
