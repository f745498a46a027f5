"""``contexts.perturb`` and ``behavsim contexts perturb``: robustness probes on belief states."""

import math

import pytest

from behavsim import ConfigError, ContextSet, respond
from behavsim.cli import main
from contexts import check_belief, generate_grid, perturb
from policies.simulation.domain import resolve_domain
from policies.simulation.tracker import inform_info, make_belief

NOT_SLOTS = ("method", "discourseAct", "requested")


@pytest.fixture(scope="module")
def grid():
    return generate_grid(step=0.5)  # 81 contexts


def one(belief):
    return ContextSet([belief], meta={"domain_rules": "CamRestaurants-rules.json"})


def test_noise_zero_is_the_identity(grid):
    p = perturb(grid, 0, seed=7)
    assert p.beliefs == grid.beliefs and p.ids == grid.ids and p.metas == grid.metas
    assert p.fingerprint == grid.fingerprint  # response tables on either are comparable
    assert p.meta["builder"] == "perturbed" and p.meta["noise"] == 0.0 and p.meta["parent"] == grid.fingerprint
    assert p.meta["changed"] == 0 and p.meta["parent_meta"] == grid.meta
    assert respond("handcrafted", p).acts == respond("handcrafted", grid).acts


@pytest.mark.parametrize("noise", [0.05, 0.3, 1.0])
def test_perturbed_beliefs_stay_valid(grid, noise):
    p = perturb(grid, noise, seed=1)
    assert p.ids == grid.ids and len(p) == len(grid)
    for b, q in zip(grid.beliefs, p.beliefs):
        assert check_belief(q) is None
        for name, dist in q["beliefs"].items():
            old = b["beliefs"][name]
            assert list(dist) == list(old)  # same keys, same order
            assert all(0.0 <= v <= 1.0 for v in dist.values())
            if name != "requested":  # a distribution: same total, never above 1
                assert math.fsum(dist.values()) <= 1.0
                assert math.fsum(dist.values()) == pytest.approx(math.fsum(old.values()), abs=1e-12)


def test_deterministic_and_seeded(grid, tmp_path):
    a, b, c = perturb(grid, 0.15, seed=3), perturb(grid, 0.15, seed=3), perturb(grid, 0.15, seed=4)
    a.save(tmp_path / "a.jsonl")
    b.save(tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert a.fingerprint != c.fingerprint != grid.fingerprint


def test_swap_by_hand():
    d = resolve_domain()
    b = make_belief(d, {"area": {"centre": 0.8}})
    p = perturb(one(b), 1.0, kinds=["swap"])
    area = p.beliefs[0]["beliefs"]["area"]
    moved = [v for v, x in area.items() if x == 0.8]
    assert area["centre"] == 0.0 and area["**NONE**"] == pytest.approx(0.2) and len(moved) == 1
    assert moved[0] in ("dontcare", "east", "north", "south", "west")
    assert p.metas[0]["perturbation"] == {"swapped": {"area": moved[0]}}
    assert p.beliefs[0]["beliefs"]["food"] == b["beliefs"]["food"]  # nothing to swap in an empty slot
    # the features follow the beliefs: centre is no longer a constraint, another area is
    assert p.beliefs[0]["features"]["dbMatches"] == inform_info(p.beliefs[0], d)[1] == d.count({"area": moved[0]})


def test_nbest_confusion_by_hand():
    d = resolve_domain()
    b = make_belief(d, {"pricerange": {"cheap": 0.9}})
    p = perturb(one(b), 1.0, kinds=["nbest"], nbest=2, seed=5)
    pr = p.beliefs[0]["beliefs"]["pricerange"]
    other = p.metas[0]["perturbation"]["confused"]["pricerange"]
    assert len(other) == 1 and other[0] != "cheap"
    assert pr["cheap"] + pr[other[0]] == pytest.approx(0.9)
    assert pr["cheap"] >= 0.45  # the top value keeps the larger confidence of a 2-best list
    assert pr["**NONE**"] == b["beliefs"]["pricerange"]["**NONE**"]


def test_jitter_keeps_zeros_and_totals():
    d = resolve_domain()
    b = make_belief(d, {"food": {"indian": 0.5, "thai": 0.3}}, method={"byconstraints": 0.6})
    q = perturb(one(b), 0.3, kinds=["jitter"], seed=2).beliefs[0]["beliefs"]
    food = q["food"]
    assert {v for v, x in food.items() if x > 0} == {"indian", "thai", "**NONE**"}
    assert food["indian"] != 0.5 and math.fsum(food.values()) <= 1.0
    assert math.fsum(q["method"].values()) == pytest.approx(1.0)


def test_levels_are_coupled(grid):
    """The same seed swaps at a higher level every slot it swapped at a lower one."""
    lo, hi = perturb(grid, 0.05, seed=0, kinds=["swap"]), perturb(grid, 0.3, seed=0, kinds=["swap"])
    for a, b in zip(lo.metas, hi.metas):
        assert set(a.get("perturbation", {}).get("swapped", {})) <= set(b.get("perturbation", {}).get("swapped", {}))
    assert lo.meta["swaps"] < hi.meta["swaps"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"noise": 1.5}, "noise: expected a noise level in [0, 1]"),
        ({"noise": -0.1}, "noise: expected a noise level in [0, 1]"),
        ({"noise": float("nan")}, "noise: expected a noise level"),
        ({"noise": 0.1, "kinds": ["swop"]}, "kinds: unknown perturbation 'swop'. Did you mean 'swap'?"),
        ({"noise": 0.1, "nbest": 1}, "nbest: expected an integer >= 2"),
        ({"noise": 0.1, "seed": -1}, "seed: expected an integer >= 0"),
    ],
)
def test_bad_arguments(grid, kwargs, message):
    with pytest.raises(ConfigError, match=None) as exc:
        perturb(grid, **kwargs)
    assert message in str(exc.value)


def test_cli(capsys, tmp_path, grid):
    grid.save(tmp_path / "g.jsonl")
    rc = main(
        [
            "contexts",
            "perturb",
            "--noise",
            "0",
            "--contexts",
            str(tmp_path / "g.jsonl"),
            "-o",
            str(tmp_path / "p0.jsonl"),
        ]
    )
    out, _ = capsys.readouterr()
    assert rc == 0 and "0 of 81 contexts changed" in out
    assert ContextSet.load(tmp_path / "p0.jsonl").fingerprint == grid.fingerprint
    for name in ("a", "b"):
        rc = main(
            [
                "contexts",
                "perturb",
                str(tmp_path / "g.jsonl"),
                "--noise",
                "0.15",
                "--seed",
                "2",
                "-o",
                str(tmp_path / f"{name}.jsonl"),
            ]
        )
        assert rc == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    capsys.readouterr()
    for argv, message in [
        (["--noise", "1.5"], "--noise: expected a noise level in [0, 1] (e.g. 0.15), got 1.5"),
        (["--noise", "x"], "--noise: expected a noise level in [0, 1] (e.g. 0.15), got 'x'"),
        (["--noise", "0.1", "--contexts", str(tmp_path / "g.jsonl")], "give the context set once"),
    ]:
        rc = main(["contexts", "perturb", str(tmp_path / "g.jsonl"), *argv, "-o", str(tmp_path / "x.jsonl")])
        _, err = capsys.readouterr()
        assert rc == 2 and len(err.strip().splitlines()) == 1 and message in err
    assert not (tmp_path / "x.jsonl").exists()


def test_collected_contexts_features_follow_the_beliefs():
    from contexts import collect

    cs = collect("handcrafted", dialogues=3, seed=0)
    d = resolve_domain()
    p = perturb(cs, 0.3, seed=0)
    assert "recorded in the set" in p.meta["features"] and p.meta["swaps"] > 0
    for b, q in zip(cs.beliefs, p.beliefs):
        flags, n = inform_info(q, d)
        assert q["features"]["inform_info"] == flags and q["features"]["dbMatches"] == n
        assert {k: v for k, v in q["features"].items() if k not in ("inform_info", "dbMatches")} == {
            k: v for k, v in b["features"].items() if k not in ("inform_info", "dbMatches")
        }


def test_lenient_beliefs_are_left_alone_where_not_numeric():
    cs = ContextSet([{"beliefs": {"area": {"north": 0.7, "**NONE**": 0.3}, "odd": {"x": "text"}}, "other": [1, 2]}])
    q = perturb(cs, 1.0, seed=0).beliefs[0]
    assert q["beliefs"]["odd"] == {"x": "text"} and q["other"] == [1, 2]
    area = q["beliefs"]["area"]  # no other value to swap with or confuse: only jittered
    assert area["north"] != 0.7 and math.fsum(area.values()) == pytest.approx(1.0)
