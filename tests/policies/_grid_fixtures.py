"""Small context sets and a tiny training run shared by the adapter and respond tests."""

from __future__ import annotations

import itertools

import pytest

from behavsim import ContextSet


def grid(levels=(0.0, 0.5, 1.0)) -> ContextSet:
    """A 3^4 grid over area/pricerange/food/method beliefs of the default domain (CamRestaurants)."""
    from policies.simulation.domain import resolve_domain
    from policies.simulation.tracker import make_belief

    d = resolve_domain(None)
    beliefs = [make_belief(d, {"area": {"centre": a}, "pricerange": {"cheap": p}, "food": {"italian": f}},
                           method={"byconstraints": m})
               for a, p, f, m in itertools.product(levels, repeat=4)]
    return ContextSet(beliefs, meta={"builder": "test-grid", "levels": list(levels)})


@pytest.fixture(scope="module")
def contexts() -> ContextSet:
    return grid()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """Two GP trials of 20 dialogues, a checkpoint every 10."""
    from policies.learners.train import TrainConfig, run_training

    out = tmp_path_factory.mktemp("run")
    run_training(TrainConfig(rewards=("ts",), seeds=(0, 1), dialogues=20, checkpoint_every=10, eval_dialogues=2),
                 out, workers=1, progress=False)
    return out
