"""Training runner: determinism, resume (also after a real kill), errors, CLI."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from behavsim import ConfigError
from policies.gp.checkpoint import CheckpointError, load_checkpoint
from policies.training.evaluation import evaluate_policy
from policies.training.files import METRIC_COLUMNS, list_checkpoints, read_metrics
from policies.training.train import ConfigMismatch, TrainConfig, run_training

TINY = dict(dialogues=60, checkpoint_every=20, eval_dialogues=5)
TIMING = {"train_seconds", "wall_seconds"}


def files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("ckpt-*.npz"))}


def rows_wo_timing(rows):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted tiny run with two trials (serial)."""
    d = tmp_path_factory.mktemp("ref")
    cfg = TrainConfig(rewards=("ts", "iq"), seeds=(0,), **TINY)
    rows = run_training(cfg, d, workers=1, progress=False)
    return d, rows


def test_layout_and_metrics(reference):
    d, rows = reference
    assert (d / "config.json").is_file()
    assert [n for n, _ in list_checkpoints(d / "ts-seed0")] == [20, 40, 60]
    assert [n for n, _ in list_checkpoints(d / "iq-seed0")] == [20, 40, 60]
    top = read_metrics(d / "metrics.csv")
    assert list(top[0]) == list(METRIC_COLUMNS)
    assert [(r["reward"], r["dialogues"]) for r in top] == [
        ("iq", 20),
        ("iq", 40),
        ("iq", 60),
        ("ts", 20),
        ("ts", 40),
        ("ts", 60),
    ]
    for r in top:
        assert 0 <= r["tsr"] <= 1 and 1 <= r["aiq"] <= 5 and 1 <= r["adl"] <= 25
        assert r["dictionary_size"] > 0 and r["policy"] == "gp" and r["seed"] == 0
    assert rows_wo_timing(rows) == rows_wo_timing(
        [r for r in top if r["reward"] == "ts"] + [r for r in top if r["reward"] == "iq"]
    )
    pol = load_checkpoint(d / "ts-seed0" / "ckpt-000060.npz")
    assert pol.name == "gp-ts-seed0-60"
    ev = evaluate_policy(pol, 5, reward="ts")
    last = [r for r in top if r["reward"] == "ts"][-1]
    assert (ev.tsr, ev.aiq, ev.adl, ev.mean_reward) == (last["tsr"], last["aiq"], last["adl"], last["mean_reward"])


def test_same_seed_gives_identical_checkpoints_also_in_parallel(reference, tmp_path):
    d, rows = reference
    cfg = TrainConfig(rewards=("ts", "iq"), seeds=(0,), **TINY)
    rows2 = run_training(cfg, tmp_path, workers=2, progress=False)
    assert files(tmp_path) == files(d)
    assert rows_wo_timing(rows2) == rows_wo_timing(rows)


def test_other_seed_differs(reference, tmp_path):
    d, _ = reference
    run_training(TrainConfig(rewards=("ts",), seeds=(1,), **TINY), tmp_path, workers=1, progress=False)
    a = (d / "ts-seed0" / "ckpt-000060.npz").read_bytes()
    b = (tmp_path / "ts-seed1" / "ckpt-000060.npz").read_bytes()
    assert a != b


def test_resume_after_half_equals_uninterrupted(reference, tmp_path):
    d, rows = reference
    half = dict(TINY, dialogues=40)  # two of the three checkpoints, then the rest
    run_training(TrainConfig(rewards=("ts", "iq"), seeds=(0,), **half), tmp_path, workers=1, progress=False)
    assert [n for n, _ in list_checkpoints(tmp_path / "ts-seed0")] == [20, 40]
    rows2 = run_training(TrainConfig(rewards=("ts", "iq"), seeds=(0,), **TINY), tmp_path, workers=1, progress=False)
    assert files(tmp_path) == files(d)
    assert rows_wo_timing(rows2) == rows_wo_timing(rows)
    # a third start has nothing to do and changes nothing
    before = files(tmp_path)
    run_training(TrainConfig(rewards=("ts", "iq"), seeds=(0,), **TINY), tmp_path, workers=1, progress=False)
    assert files(tmp_path) == before


def test_resume_after_kill_equals_uninterrupted(reference, tmp_path):
    d, _ = reference
    code = (
        "from policies.training.train import TrainConfig, run_training\n"
        f"run_training(TrainConfig(rewards=('ts', 'iq'), seeds=(0,), **{TINY!r}), {str(tmp_path)!r}, "
        "workers=1, progress=False)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and not list_checkpoints(tmp_path / "ts-seed0"):
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL  # really interrupted, not finished
    assert not list_checkpoints(tmp_path / "iq-seed0") or list_checkpoints(tmp_path / "iq-seed0")[-1][0] < 60
    run_training(TrainConfig(rewards=("ts", "iq"), seeds=(0,), **TINY), tmp_path, workers=1, progress=False)
    assert files(tmp_path) == files(d)
    assert rows_wo_timing(read_metrics(tmp_path / "metrics.csv")) == rows_wo_timing(read_metrics(d / "metrics.csv"))
    assert not [p for p in tmp_path.rglob(".*tmp*")]


def test_stale_temporary_files_are_removed(reference, tmp_path):
    d, _ = reference
    shutil.copytree(d, tmp_path / "run")
    stale = tmp_path / "run" / "ts-seed0" / ".ckpt-000080.npz.tmp4242"
    stale.write_bytes(b"half a file")
    run_training(TrainConfig(rewards=("ts",), seeds=(0,), **TINY), tmp_path / "run", workers=1, progress=False)
    assert not stale.exists()


def test_missing_metrics_row_is_rebuilt(reference, tmp_path):
    d, _ = reference
    shutil.copytree(d, tmp_path / "run")
    m = tmp_path / "run" / "ts-seed0" / "metrics.csv"
    m.write_text("\n".join(m.read_text().splitlines()[:2]) + "\n")  # header + first row only
    run_training(TrainConfig(rewards=("ts", "iq"), seeds=(0,), **TINY), tmp_path / "run", workers=1, progress=False)
    got = read_metrics(tmp_path / "run" / "metrics.csv")
    assert rows_wo_timing(got) == rows_wo_timing(read_metrics(d / "metrics.csv"))


def test_corrupt_and_foreign_checkpoints_are_refused(reference, tmp_path):
    d, _ = reference
    run = tmp_path / "run"
    shutil.copytree(d, run)
    cfg = TrainConfig(rewards=("ts", "iq"), seeds=(0,), **dict(TINY, dialogues=80))
    bad = run / "ts-seed0" / "ckpt-000060.npz"
    bad.write_bytes(bad.read_bytes()[:1000])
    with pytest.raises(CheckpointError) as err:
        run_training(cfg, run, workers=1, progress=False)
    assert str(bad) in str(err.value)
    shutil.copy(run / "iq-seed0" / "ckpt-000060.npz", bad)  # an iq checkpoint in the ts trial
    with pytest.raises(CheckpointError, match="foreign checkpoint.*reward='iq'") as err:
        run_training(cfg, run, workers=1, progress=False)
    assert str(bad) in str(err.value)
    shutil.copy(d / "ts-seed0" / "ckpt-000060.npz", bad)
    older = run / "ts-seed0" / "ckpt-000020.npz"
    shutil.copy(d / "ts-seed0" / "ckpt-000040.npz", older)  # right trial, wrong position
    with pytest.raises(CheckpointError, match="foreign checkpoint.*dialogues=40") as err:
        run_training(cfg, run, workers=1, progress=False)
    assert str(older) in str(err.value)


def test_config_mismatch_is_refused(reference, tmp_path):
    d, _ = reference
    shutil.copytree(d, tmp_path / "run")
    with pytest.raises(ConfigMismatch, match="checkpoint_every: 20 there, 10 now"):
        run_training(TrainConfig(**dict(TINY, checkpoint_every=10)), tmp_path / "run", progress=False)
    with pytest.raises(ConfigMismatch, match="sigma"):
        run_training(TrainConfig(sigma=4.0, **TINY), tmp_path / "run", progress=False)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("x")
    with pytest.raises(ConfigMismatch, match="not empty"):
        run_training(TrainConfig(**TINY), tmp_path / "other", progress=False)
    assert [p.name for p in (tmp_path / "other").iterdir()] == ["x.txt"]


def test_concurrent_run_in_the_same_folder_is_refused(tmp_path):
    import fcntl

    from policies.training.files import RunLocked

    tmp_path.joinpath(".lock").touch()
    with open(tmp_path / ".lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # another process would hold this
        code = (
            "from policies.training.train import TrainConfig, run_training\n"
            f"run_training(TrainConfig(**{TINY!r}), {str(tmp_path)!r}, workers=1, progress=False)\n"
        )
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert res.returncode != 0 and "RunLocked" in res.stderr and "in use by another" in res.stderr
    run_training(TrainConfig(**TINY), tmp_path, workers=1, progress=False)  # released: fine
    assert RunLocked.__mro__[1] is ConfigError


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"policy": "gpp"}, "policy: unknown policy 'gpp'.*Did you mean 'gp'"),
        ({"rewards": ("tx",)}, "rewards: unknown reward 'tx'.*Did you mean 'ts'"),
        ({"rewards": ()}, "rewards: expected at least one"),
        ({"rewards": ("ts", "ts")}, "rewards: duplicate"),
        ({"seeds": (-1,)}, "seeds: expected non-negative integers"),
        ({"seeds": (1, 1)}, "seeds: duplicate"),
        ({"seeds": ("a",)}, "seeds"),
        ({"dialogues": 0}, "dialogues: expected a positive integer"),
        ({"checkpoint_every": 2.5}, "checkpoint_every"),
        (
            {"dialogues": 150, "checkpoint_every": 100},
            r"dialogues \(150\) is not a multiple of checkpoint_every \(100\).*100 or 200",
        ),
        ({"eval_dialogues": -3}, "eval_dialogues"),
        ({"gamma": 1.5}, "gamma: expected a number in"),
        ({"sigma": 0.0}, "sigma"),
        ({"nu": float("nan")}, "nu"),
    ],
)
def test_bad_configs(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        TrainConfig(**kwargs)


def test_config_json_roundtrip_and_unknown_key():
    cfg = TrainConfig(rewards=("ts", "iq"), seeds=(0, 1, 2))
    assert TrainConfig.from_json(cfg.to_json()) == cfg
    assert cfg.schedule()[:2] == [1000, 2000] and cfg.schedule()[-1] == 40_000 and len(cfg.schedule()) == 40
    assert TrainConfig(dialogues=500).schedule() == [500]  # fewer dialogues than the interval: one checkpoint
    with pytest.raises(ConfigError, match="not a multiple"):
        TrainConfig(dialogues=2500)
    with pytest.raises(ConfigError, match="unknown key 'seed'.*Did you mean 'seeds'"):
        TrainConfig.from_dict({"seed": 1})
    with pytest.raises(TypeError):
        run_training({"policy": "gp"}, "/nonexistent", progress=False)
    with pytest.raises(ConfigError, match="workers: expected a positive integer, got 0"):
        run_training(TrainConfig(), "/nonexistent/never-created", workers=0, progress=False)
    assert not Path("/nonexistent").exists()


def test_handcrafted_only_evaluates(tmp_path):
    rows = run_training(TrainConfig(policy="handcrafted", **TINY), tmp_path, workers=1, progress=False)
    assert [r["dialogues"] for r in rows] == [20, 40, 60]
    assert not list(tmp_path.rglob("*.npz"))
    assert len({(r["tsr"], r["aiq"], r["adl"]) for r in rows}) == 1  # same fixed evaluation dialogues
    assert rows[0]["dictionary_size"] is None and rows[0]["train_tsr"] is None
    again = run_training(TrainConfig(policy="handcrafted", **TINY), tmp_path, workers=1, progress=False)
    assert rows_wo_timing(again) == rows_wo_timing(rows)


def test_learning_improves_task_success(tmp_path):
    cfg = TrainConfig(rewards=("ts",), seeds=(0,), dialogues=300, checkpoint_every=300, eval_dialogues=40)
    (row,) = run_training(cfg, tmp_path, workers=1, progress=False)
    assert row["tsr"] >= 0.85


def _parse(argv):
    from policies.commands.train import register_train

    parser = argparse.ArgumentParser(prog="behavsim")
    sub = parser.add_subparsers(dest="command")
    register_train(sub)
    return parser.parse_args(argv)


def test_cli(reference, tmp_path, capsys):
    d, _ = reference
    args = _parse(
        [
            "train",
            "--rewards",
            "ts",
            "iq",
            "--seed",
            "0",
            "--dialogues",
            "60",
            "--checkpoint-every",
            "20",
            "--eval-dialogues",
            "5",
            "--no-progress",
            "-o",
            str(tmp_path),
        ]
    )
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "ts-seed0" in out and "iq-seed0" in out and "metrics.csv" in out
    assert files(tmp_path) == files(d)
    args = _parse(["train", "--reward", "tss", "-o", str(tmp_path / "x")])
    assert args.func(args) == 2
    assert "Did you mean 'ts'" in capsys.readouterr().err
    args = _parse(["train", "--dialogues", "60", "--checkpoint-every", "30", "-o", str(tmp_path)])
    assert args.func(args) == 2
    assert "another configuration" in capsys.readouterr().err


def test_cli_entry_point_through_behavsim(tmp_path):
    exe = shutil.which("behavsim") or os.path.join(os.path.dirname(sys.executable), "behavsim")
    if not os.path.exists(exe):
        pytest.skip("behavsim console script not installed")
    res = subprocess.run(
        [
            exe,
            "train",
            "--policy",
            "handcrafted",
            "--dialogues",
            "10",
            "--checkpoint-every",
            "10",
            "--eval-dialogues",
            "3",
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert "metrics.csv" in res.stdout
    assert "10/10 dialogues" in res.stderr  # one line per checkpoint when not a terminal


def test_run_dialogue_collects_beliefs_and_seeds_are_stable(reference):
    from policies.simulation.env import DialogueEnv
    from policies.training.evaluation import eval_dialogue_seed, run_dialogue, train_dialogue_seed

    d, _ = reference
    pol = load_checkpoint(d / "ts-seed0" / "ckpt-000060.npz")
    seen: list = []
    vecs, acts, total, info = run_dialogue(DialogueEnv(), pol, eval_dialogue_seed(0), beliefs=seen)
    assert len(seen) == len(acts) == len(vecs) == -int(total) and "beliefs" in seen[0]
    assert [pol.decide(b)[0] for b in seen] == acts  # greedy: replaying the beliefs gives the acts
    assert eval_dialogue_seed(0) != eval_dialogue_seed(1) != train_dialogue_seed(0, 1)
    assert train_dialogue_seed(0, 5) == train_dialogue_seed(0, 5) >= 0


def test_table1():
    from policies.training.evaluation import table1

    rows = [
        {"dialogues": 10, "reward": "ts", "seed": 0, "tsr": 1.0, "aiq": 4.0, "adl": 5.0},
        {"dialogues": 10, "reward": "ts", "seed": 1, "tsr": 0.5, "aiq": 3.0, "adl": 6.0},
        {"dialogues": 10, "reward": "iq", "seed": 0, "tsr": 0.9, "aiq": 4.5, "adl": 4.0},
        {"dialogues": 20, "reward": "ts", "seed": 0, "tsr": 1.0, "aiq": 4.0, "adl": 4.0},
    ]
    t = table1(rows)
    assert [(r["dialogues"], r["reward"], r["n_seeds"]) for r in t] == [(10, "iq", 1), (10, "ts", 2), (20, "ts", 1)]
    assert t[1]["tsr"] == 0.75 and t[1]["aiq"] == 3.5 and t[1]["adl"] == 5.5
    assert [r["dialogues"] for r in table1(rows, at=[20])] == [20]


def test_parallel_error_stops_the_other_trials_quickly(reference, tmp_path):
    d, _ = reference
    run = tmp_path / "run"
    shutil.copytree(d, run)
    (run / "iq-seed0" / "ckpt-000060.npz").write_bytes(b"broken")
    cfg = TrainConfig(rewards=("ts", "iq"), seeds=(0,), **dict(TINY, dialogues=100_000))  # ts would run long
    t0 = time.time()
    with pytest.raises(CheckpointError, match="iq-seed0"):
        run_training(cfg, run, workers=2, progress=False)
    assert time.time() - t0 < 30
    # the interrupted ts trial resumes cleanly afterwards
    run_training(TrainConfig(rewards=("ts",), seeds=(0,), **dict(TINY, dialogues=80)), run, workers=1, progress=False)
    assert [n for n, _ in list_checkpoints(run / "ts-seed0")][-1] == 80


def test_evaluate_any_protocol_policy():
    from behavsim.policy import Response
    from policies.handcrafted.policy import HandcraftedPolicy

    hc = HandcraftedPolicy(nlg_seed=None)

    class ActOnly:
        name = "act-only"

        def act(self, belief):
            return hc.act(belief)

    a = evaluate_policy(ActOnly(), 5)
    b = evaluate_policy(hc, 5)
    assert (a.tsr, a.aiq, a.adl) == (b.tsr, b.aiq, b.adl)

    class NoSummary:
        name = "no-summary"

        def act(self, belief):
            return Response(act="bye()")

    with pytest.raises(TypeError, match="no summary action"):
        evaluate_policy(NoSummary(), 1)


def test_learner_kinds_are_a_registry(tmp_path, monkeypatch):
    from behavsim import Registry
    from policies.handcrafted.policy import HandcraftedPolicy
    from policies.training import train

    assert train.list_learners() == ["gp", "handcrafted"]
    assert train.learner_kind("gp").learns and not train.learner_kind("handcrafted").learns
    # adding a kind of policy is one registration
    learners = Registry("policy")
    for name in train.list_learners():
        learners.register(name, train.learner_kind(name))
    learners.register(
        "quiet", train.LearnerKind("quiet", lambda config, seed: HandcraftedPolicy(nlg_seed=seed), learns=False)
    )
    monkeypatch.setattr(train, "LEARNERS", learners)
    rows = run_training(TrainConfig(policy="quiet", **TINY), tmp_path, workers=1, progress=False)
    assert [r["dialogues"] for r in rows] == [20, 40, 60] and {r["policy"] for r in rows} == {"quiet"}
    assert not list(tmp_path.rglob("*.npz"))
    with pytest.raises(
        ConfigError,
        match=r"policy: unknown policy 'quiett'; valid: \['gp', 'handcrafted', 'quiet'\]"
        r"\. Did you mean 'quiet'\?",
    ):
        TrainConfig(policy="quiett")


def test_training_on_another_domain(tmp_path):
    """A run on PyDial's CamRestaurants: its config and checkpoints name the domain, a checkpoint
    loads on it without being told, and the default domain is named in the config too."""
    import json

    from policies.simulation.domain import resolve_domain

    cfg = TrainConfig(
        rewards=("ts",), seeds=(0,), dialogues=40, checkpoint_every=20, eval_dialogues=3, domain="camrestaurants"
    )
    run_training(cfg, tmp_path / "cam")
    assert json.loads((tmp_path / "cam" / "config.json").read_text())["domain"] == "camrestaurants"
    pol = load_checkpoint(tmp_path / "cam" / "ts-seed0" / "ckpt-000040.npz")
    cam = resolve_domain("camrestaurants")
    assert pol.domain.source == cam.source and pol.dim == 305
    assert TrainConfig().to_dict()["domain"] == "camrestaurants"  # the default, named
    with pytest.raises(ConfigError, match="Did you mean 'camrestaurants'"):
        TrainConfig(domain="camrestaurnts")


def test_environment_1_user_and_sampled_evaluation(tmp_path):
    """user="env1" and eval_scale=1 (PyDial's test-time sampling) reach the trials; a sampled
    evaluation is deterministic (seeded per dialogue) and leaves the policy greedy afterwards."""
    import json

    cfg = TrainConfig(
        rewards=("ts",),
        seeds=(0,),
        dialogues=40,
        checkpoint_every=20,
        eval_dialogues=10,
        domain="camrestaurants",
        user="env1",
        eval_scale=1.0,
    )
    a = run_training(cfg, tmp_path / "a")
    b = run_training(cfg, tmp_path / "b")
    strip = [{k: v for k, v in r.items() if k not in TIMING} for r in a]
    assert strip == [{k: v for k, v in r.items() if k not in TIMING} for r in b]
    saved = json.loads((tmp_path / "a" / "config.json").read_text())
    assert (saved["user"], saved["eval_scale"]) == ("env1", 1.0)
    assert (TrainConfig().to_dict()["user"], TrainConfig().to_dict()["eval_scale"]) == ("env1", 0.0)
    pol = load_checkpoint(tmp_path / "a" / "ts-seed0" / "ckpt-000040.npz")
    from policies.simulation.env import DialogueEnv

    env = DialogueEnv(pol.domain, user_config="env1")
    greedy = evaluate_policy(pol, 10, env=env)
    sampled = [evaluate_policy(pol, 10, env=env, scale=1.0) for _ in range(2)]
    assert sampled[0] == sampled[1] and pol.eval_scale == 0.0
    assert evaluate_policy(pol, 10, env=env) == greedy
    with pytest.raises(ConfigError, match="Did you mean 'env1'"):
        TrainConfig(user="env2")
    with pytest.raises(ConfigError, match="eval_scale"):
        TrainConfig(eval_scale=-1)
