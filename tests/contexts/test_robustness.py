"""Robustness probes (``contexts.robustness``, ``behavsim robustness``): a policy against itself
on perturbed contexts."""

import argparse

import pandas as pd
import pytest

from behavsim import BehavsimError, ConfigError
from contexts import generate_grid
from contexts.robustness import register_robustness, robustness

SEMANTIC = ["TMR", "DMR", "CER", "CMR"]


@pytest.fixture(scope="module")
def grid():
    return generate_grid(step=0.5)  # 81 contexts; area at 0, 0.5 or 1 in a third of them each


def constant(belief):
    return "bye()"


def top_area(belief):
    area = belief["beliefs"]["area"]
    best = max((v for v in area if v != "**NONE**" and area[v] > 0), key=lambda v: area[v], default="none")
    return f"inform(area={best})"


def test_noise_zero_gives_one_and_curves_by_hand(grid):
    table, meta = robustness(
        [constant, top_area, "handcrafted"],
        grid,
        [1.0, 0.0],
        kinds=["swap"],
        scores=SEMANTIC,
        policy_ids=["constant", "top_area", None],
        workers=1,
    )
    assert table["noise"].tolist() == [0.0, 1.0] * 3 and meta["levels"] == [0.0, 1.0]
    at0 = table[table["noise"] == 0]
    assert (at0[SEMANTIC] == 1.0).all().all() and (at0["changed"] == 0).all()
    by = table.set_index(["policy", "noise"])
    assert by.loc[("constant", 1.0), "TMR"] == 1.0  # a policy that ignores the belief cannot drift
    # at noise 1 every area with belief is swapped: only the 27 contexts without one keep the act
    assert by.loc[("top_area", 1.0), "TMR"] == pytest.approx(27 / 81)
    assert by.loc[("top_area", 1.0), "DMR"] == 1.0
    # changed: all but the 3 contexts (one per method level) where no slot has any belief to swap
    assert by.loc[("top_area", 1.0), "changed"] == 81 - 3
    assert meta["perturbed"][0]["fingerprint"] == grid.fingerprint


def test_bad_arguments(grid):
    with pytest.raises(ConfigError, match=r"levels: expected a noise level in \[0, 1\]"):
        robustness(["handcrafted"], grid, [0, 1.5])
    with pytest.raises(ConfigError, match="levels: a level is given twice"):
        robustness(["handcrafted"], grid, [0.1, 0.1])
    with pytest.raises(ConfigError, match="policy ids must be unique"):
        robustness(["handcrafted", "handcrafted"], grid, [0], scores=["TMR"], workers=1)


def run(*argv):
    parser = argparse.ArgumentParser(prog="behavsim")
    register_robustness(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["robustness", *map(str, argv)])
    return args.func(args)


def test_cli(grid, tmp_path, capsys):
    grid.save(tmp_path / "g.jsonl")
    out = tmp_path / "rob"
    rc = run(
        "handcrafted", "--contexts", tmp_path / "g.jsonl", "--levels", "0", "0.3", "--scores", "TMR", "DMR", "-o", out
    )
    printed = capsys.readouterr().out
    assert rc == 0 and "1 policies x 2 levels on 81 contexts" in printed
    csv = pd.read_csv(out / "robustness.csv")
    assert csv.columns.tolist() == ["policy", "noise", "n", "changed", "errors", "TMR", "DMR"]
    assert csv["TMR"].iloc[0] == 1.0 and csv["TMR"].iloc[1] < 1.0
    for name in ("handcrafted.png", "handcrafted.svg", "robustness.png", "robustness.svg", "robustness.meta.json"):
        assert (out / name).is_file()
    with pytest.raises(BehavsimError, match=r"--levels: expected noise levels in \[0, 1\] such as 0.15, got 'x'"):
        run("handcrafted", "--contexts", tmp_path / "g.jsonl", "--levels", "0", "x", "-o", out)
    with pytest.raises(BehavsimError, match=r"levels: expected a noise level in \[0, 1\] \(e.g. 0.15\), got 2.0"):
        run("handcrafted", "--contexts", tmp_path / "g.jsonl", "--levels", "2", "-o", out)


def test_trained_checkpoints_at_noise_zero_and_on_the_map(run_dir, grid):  # noqa: F811
    """Every trained checkpoint and the handcrafted policy score 1 against themselves at noise 0;
    the checkpoints' response tables give one map path per trial, in training order."""
    from behavsim import behaviour_map, respond_many

    ckpts = sorted(str(p) for p in run_dir.glob("*/ckpt-*.npz"))
    assert len(ckpts) == 4
    table, _ = robustness(["handcrafted", *ckpts], grid, [0, 0.3], scores=SEMANTIC, workers=1)
    at0 = table[table["noise"] == 0]
    assert len(at0) == 5 and (at0[SEMANTIC] == 1.0).all().all()
    assert (table[table["noise"] == 0.3]["TMR"] < 1).any()
    bm = behaviour_map(respond_many(["handcrafted", *ckpts], grid, workers=1), "TMR")
    assert bm.coords["trial"].tolist() == ["handcrafted", "ts-seed0", "ts-seed0", "ts-seed1", "ts-seed1"]
    assert bm.coords["checkpoint"].tolist()[1:] == [10.0, 20.0, 10.0, 20.0]
    assert bm.finals == ["handcrafted", "ts-seed0-000020", "ts-seed1-000020"]
