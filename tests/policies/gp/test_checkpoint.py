"""Checkpoint files: safe format, determinism, atomic writes, clear errors."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from policies.gp.checkpoint import (
    CheckpointError,
    load_checkpoint,
    read_checkpoint,
    read_npz,
    save_checkpoint,
    write_npz,
)
from policies.gp.policy import GPSarsaPolicy


@pytest.fixture(scope="module")
def trained():
    from policies.simulation.env import DialogueEnv
    from policies.training.evaluation import run_dialogue

    env = DialogueEnv()
    pol = GPSarsaPolicy(seed=3)
    for i in range(40):
        vecs, acts, total, info = run_dialogue(env, pol, i, explore=True)
        pol.learner.learn_episode(np.asarray(vecs), acts, total + 20.0 * info["success"])
    pol.learning = False
    return pol


@pytest.fixture(scope="module")
def beliefs():
    from policies.handcrafted.policy import HandcraftedPolicy
    from policies.simulation.env import DialogueEnv

    env = DialogueEnv()
    out = []
    hc = HandcraftedPolicy()
    for i in range(5):
        b, info = env.reset(seed=100 + i)
        out.append(b)
        for _ in range(6):
            b, _, term, trunc, info = env.step(hc.summary_action(b))
            out.append(b)
            if term or trunc:
                break
    return out


def test_npz_roundtrip_is_safe_and_deterministic(tmp_path):
    arrays = {"a": np.arange(6.0).reshape(2, 3), "b": np.array([1, 2], dtype=np.int64)}
    meta = {"format": "x", "n": 1, "f": 0.1}
    p1 = write_npz(tmp_path / "one.npz", arrays, meta)
    p2 = write_npz(tmp_path / "two.npz", dict(reversed(list(arrays.items()))), dict(meta))
    assert p1.read_bytes() == p2.read_bytes()
    got, m = read_npz(p1)
    assert m == meta and set(got) == {"a", "b"}
    assert np.array_equal(got["a"], arrays["a"]) and got["b"].dtype == np.int64
    with np.load(p1, allow_pickle=False) as z:  # an ordinary npz for numpy
        assert np.array_equal(z["a"], arrays["a"])
    assert sorted(q.name for q in tmp_path.iterdir()) == ["one.npz", "two.npz"]  # no temp files
    with pytest.raises(ValueError, match="object arrays"):
        write_npz(tmp_path / "bad.npz", {"o": np.array([{}], dtype=object)}, meta)
    assert not (tmp_path / "bad.npz").exists()
    assert [q.name for q in tmp_path.iterdir() if q.name.startswith(".")] == []


def test_policy_roundtrip(tmp_path, trained, beliefs):
    from behavsim.policy import check_policy

    p = save_checkpoint(tmp_path / "c.npz", trained, {"reward": "ts", "seed": 3})
    pol = load_checkpoint(p)
    assert isinstance(pol, GPSarsaPolicy) and not pol.learning
    assert pol.name == "gp-sarsa"  # no dialogues in the training record: the saved name
    assert load_checkpoint(p, name="x").name == "x"
    assert pol.learner.dictionary_size == trained.learner.dictionary_size > 0
    assert [pol.act(b) for b in beliefs] == [trained.act(b) for b in beliefs]
    assert check_policy(pol, beliefs) == len(beliefs)
    _, meta = read_checkpoint(p)
    assert meta["training"] == {"reward": "ts", "seed": 3}
    assert meta["policy"]["summary_actions"] == list(pol.actions)
    # saving again gives the same bytes
    q = save_checkpoint(tmp_path / "d.npz", pol, {"reward": "ts", "seed": 3})
    assert p.read_bytes() == q.read_bytes()


def test_act_response_and_determinism(trained, beliefs):
    r = trained.act(beliefs[0])
    assert r.summary_action in trained.actions and isinstance(r.act, str) and r.prompt
    silent = GPSarsaPolicy(learner=trained.learner, nlg_seed=None)
    assert silent.act(beliefs[0]).prompt is None
    assert silent.act({"beliefs": {}}).act  # any belief state is accepted


def test_missing_file(tmp_path):
    with pytest.raises(CheckpointError, match="not found") as err:
        load_checkpoint(tmp_path / "nope.npz")
    assert "nope.npz" in str(err.value)


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_corrupt_checkpoint_names_the_file(tmp_path, trained, damage):
    p = save_checkpoint(tmp_path / "ckpt-000100.npz", trained)
    data = bytearray(p.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 3] ^= 0xFF  # inside an array: zip CRC check fails
    else:
        data = bytearray(b"hello world" * 10)
    p.write_bytes(bytes(data))
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(p)
    assert str(p) in str(err.value)


def test_foreign_files(tmp_path, trained):
    plain = tmp_path / "plain.npz"
    np.savez(plain, x=np.zeros(3))
    with pytest.raises(CheckpointError, match="not a behavsim checkpoint"):
        load_checkpoint(plain)
    other = write_npz(tmp_path / "other.npz", {"x": np.zeros(2)}, {"format": "something-else"})
    with pytest.raises(CheckpointError, match="not a GP-SARSA checkpoint"):
        load_checkpoint(other)
    arrays, meta = trained.learner.get_state()
    full = {"format": "behavsim.gpsarsa", "version": 99, "learner": meta, "policy": trained.describe()}
    with pytest.raises(CheckpointError, match="unsupported checkpoint version 99"):
        load_checkpoint(write_npz(tmp_path / "v.npz", arrays, full))
    full["version"] = 1
    del arrays["alpha"]
    with pytest.raises(CheckpointError, match=r"missing arrays \['alpha'\]"):
        load_checkpoint(write_npz(tmp_path / "m.npz", arrays, full))
    arrays, _ = trained.learner.get_state()
    arrays["alpha"] = arrays["alpha"][:-1]
    with pytest.raises(CheckpointError, match="inconsistent learner state"):
        load_checkpoint(write_npz(tmp_path / "s.npz", arrays, full))
    arrays, _ = trained.learner.get_state()
    bad = dict(full, policy=dict(full["policy"], summary_actions=["a", "b"]))
    with pytest.raises(CheckpointError, match="summary actions"):
        load_checkpoint(write_npz(tmp_path / "a.npz", arrays, bad))
    with zipfile.ZipFile(tmp_path / "extra.npz", "w") as zf:
        zf.writestr("meta.json", "[1, 2]")
    with pytest.raises(CheckpointError, match="not a JSON object"):
        load_checkpoint(tmp_path / "extra.npz")


def test_check_policy_on_generated_contexts(trained):
    import itertools

    from behavsim.policy import check_policy
    from policies.simulation.tracker import make_belief

    dom = trained.domain
    vals = {s: dom.informable[s][0] for s in ("area", "pricerange", "food")}
    beliefs = []
    for pa, pp, pf, pm in itertools.product((0.0, 0.4, 1.0), repeat=4):
        slots = {s: {vals[s]: p} for s, p in zip(("area", "pricerange", "food"), (pa, pp, pf)) if p > 0}
        beliefs.append(make_belief(dom, slots, method={"byconstraints": pm} if pm > 0 else None))
    assert check_policy(trained, beliefs) == 81
    assert len({trained.act(b).summary_action for b in beliefs}) > 1
