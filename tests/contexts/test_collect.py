"""Collected context sets (C_col: belief states met in seeded dialogues) and every built-in policy on every generated context."""

import pytest

from behavsim import ConfigError, ContextSet
from behavsim.policy import check_policy
from contexts import collect, dialogue_seed, generate_grid
from policies.gp.checkpoint import load_checkpoint
from policies.gp.policy import GPSarsaPolicy
from policies.handcrafted.policy import HandcraftedPolicy
from policies.training.evaluation import EVAL_SEED, evaluate_policy
from policies.training.train import TrainConfig, run_training


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """A GP checkpoint trained for 60 dialogues (about a second; after 20 it still asks for the food
    everywhere)."""
    d = tmp_path_factory.mktemp("run")
    run_training(
        TrainConfig(rewards=("ts",), seeds=(0,), dialogues=60, checkpoint_every=60, eval_dialogues=2),
        d,
        workers=1,
        progress=False,
    )
    (path,) = sorted(d.rglob("ckpt-*.npz"))
    return path


def test_handcrafted_same_seed_same_set():
    a = collect(["handcrafted"], dialogues=10, seed=3)
    b = collect(["handcrafted"], dialogues=10, seed=3)
    assert len(a) > 10 and a.fingerprint == b.fingerprint and a.metas == b.metas and a.ids == b.ids
    assert collect(["handcrafted"], dialogues=10, seed=4).fingerprint != a.fingerprint


def test_gp_checkpoint_same_seed_same_set(ckpt):
    a = collect([ckpt], dialogues=5, seed=1)
    b = collect([str(ckpt)], dialogues=5, seed=1)
    assert len(a) >= 5 and a.fingerprint == b.fingerprint
    src = a.meta["sources"][0]
    assert src["kind"] == "checkpoint" and src["checkpoint"] == 60
    assert {m["source_policy"] for m in a.metas} == {src["label"]}


def test_metadata_per_context():
    cs = collect("handcrafted", dialogues=4, seed=0)
    for m in cs.metas:
        assert m["origin"] == "collected" and m["source_policy"] == "handcrafted" and m["seed"] == 0
        assert m["dialogue_seed"] == dialogue_seed(0, m["dialogue"])
    by_dialogue = {}
    for m in cs.metas:
        by_dialogue.setdefault(m["dialogue"], []).append(m)
    assert sorted(by_dialogue) == [0, 1, 2, 3]
    for ms in by_dialogue.values():
        assert [m["turn"] for m in ms] == list(range(1, len(ms) + 1))  # 1-based system turns
        assert ms[-1]["dialogue_turns"] == len(ms)
        assert ms[-1]["closing_turn"] and not any(m["closing_turn"] for m in ms[:-1])
    assert cs.meta["builder"] == "collected" and cs.meta["dialogues"] == 4 and cs.meta["seed"] == 0


def test_evaluation_dialogues_of_training_are_replayed():
    """seed=EVAL_SEED gives the evaluation dialogues of policies.training.train: one context per turn."""
    cs = collect("handcrafted", dialogues=10, seed=EVAL_SEED)
    res = evaluate_policy(HandcraftedPolicy(), 10)
    assert len(cs) == sum(res.turns)
    assert [m["dialogue_turns"] for m in cs.metas if m["turn"] == 1] == res.turns


def test_recorded_beliefs_are_what_the_policy_saw():
    pol = HandcraftedPolicy()
    cs = collect([pol], dialogues=3, seed=2)
    assert [pol.summary_action(b) for b in cs.beliefs] == [m["summary_action"] for m in cs.metas]


def test_union_of_sources_and_labels(ckpt):
    cs = collect({"hc": "handcrafted", "gp": ckpt}, dialogues=3, seed=0)
    assert [s["label"] for s in cs.meta["sources"]] == ["hc", "gp"]
    hc = [m for m in cs.metas if m["source_policy"] == "hc"]
    alone = collect("handcrafted", dialogues=3, seed=0)
    assert len(hc) == len(alone)
    both = ContextSet.concat([alone, collect([ckpt], dialogues=3, seed=0)])
    assert both.fingerprint == cs.fingerprint
    twice = collect(["handcrafted", "handcrafted"], dialogues=2, seed=0)
    assert [s["label"] for s in twice.meta["sources"]] == ["handcrafted", "handcrafted#2"]


def test_dedupe_keeps_first():
    full = collect("handcrafted", dialogues=20, seed=0)
    dd = collect("handcrafted", dialogues=20, seed=0, dedupe=True)
    keys = [ContextSet([b]).fingerprint for b in full.beliefs]
    first = [i for i, k in enumerate(keys) if k not in keys[:i]]
    assert len(dd) == len(first) < len(full)
    assert dd.beliefs == [full.beliefs[i] for i in first]
    assert dd.ids == [full.ids[i] for i in first]
    assert dd.meta["duplicates_removed"] == len(full) - len(dd)


def test_exploring_gp_is_run_greedily_and_restored(ckpt):
    pol = load_checkpoint(ckpt, learning=True)
    a = collect([pol], dialogues=3, seed=0)
    assert pol.learning is True
    assert a.fingerprint == collect([load_checkpoint(ckpt)], dialogues=3, seed=0).fingerprint


def test_env_options():
    cs = collect("handcrafted", dialogues=3, seed=0, env_options={"max_turns": 2})
    assert max(m["turn"] for m in cs.metas) <= 2
    assert cs.meta["env_options"]["max_turns"] == 2
    noisy = collect("handcrafted", dialogues=3, seed=0, env_options={"error_model": {"error_rate": 0.3, "nbest": 2}})
    assert noisy.meta["env_options"]["error_model"]["error_rate"] == 0.3


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(policies=["handcraftd"]), r"policies\[0\]: unknown policy kind 'handcraftd'.*Did you mean 'handcrafted'"),
        (dict(policies=["/no/such/ckpt.npz"]), r"policies\[0\]: .*checkpoint file '/no/such/ckpt.npz' not found"),
        (dict(policies=[]), r"policies: expected at least one"),
        (
            dict(policies=[object()]),
            r"policies\[0\]: policy: expected a policy spec string, an Adapter, a policy object",
        ),
        (dict(policies="handcrafted", dialogues=0), r"dialogues: expected a positive integer"),
        (dict(policies="handcrafted", seed=-1), r"seed: expected a non-negative integer"),
        (
            dict(policies="handcrafted", env_options={"max_turn": 3}),
            r"env_options: unknown option 'max_turn'.*'max_turns'",
        ),
        (dict(policies="handcrafted", env_options={"max_turns": 0}), r"env_options: .*max_turns"),
    ],
)
def test_bad_arguments(kwargs, pattern):
    with pytest.raises(ConfigError, match=pattern):
        collect(**kwargs)


def test_damaged_checkpoint_is_a_clean_error(tmp_path):
    bad = tmp_path / "ckpt.npz"
    bad.write_bytes(b"not a zip")
    from behavsim import BehavsimError

    with pytest.raises(BehavsimError, match="ckpt.npz"):
        collect([bad], dialogues=1)


class _NoSummary:
    name = "text-only"

    def act(self, belief):
        from behavsim.policy import Response

        return Response("hello()", "hi", None)


def test_policy_without_summary_actions_plays_its_acts():
    """A policy that gives only acts (a callable, another toolkit's policy) is collected from: the
    environment plays its act as it is."""
    cs = collect([_NoSummary()], dialogues=1)
    assert len(cs) >= 1 and {m["summary_action"] for m in cs.metas} == {None}
    assert cs.meta["sources"][0]["label"] == "text-only" and cs.ids[0] == "text-only/d0/t1"


def _request_area(belief):
    return "request(area)"


def test_callable_and_spec_sources(tmp_path):
    """Every policy kind is a source: a callable object, a module:function spec, a recorded file fails cleanly."""
    by_fn = collect([_request_area], dialogues=2, seed=1)
    by_spec = collect([f"{__name__}:_request_area"], dialogues=2, seed=1)
    assert by_fn.fingerprint == by_spec.fingerprint
    assert by_fn.metas[0]["turn"] == 1 and all(m["summary_action"] is None for m in by_fn.metas)
    with pytest.raises(ConfigError, match="unknown policy kind 'handcraftd'"):
        collect(["handcraftd"], dialogues=1)


def test_every_builtin_policy_answers_every_generated_context(ckpt):
    cgen = generate_grid()
    for pol in (HandcraftedPolicy(), GPSarsaPolicy(), load_checkpoint(ckpt)):
        assert check_policy(pol, cgen.beliefs) == 1296


def test_progress_bar_on_request(capsys):
    collect("handcrafted", dialogues=3, seed=0, progress=True)
    assert "collecting" in capsys.readouterr().err
    collect("handcrafted", dialogues=3, seed=0, progress=False)
    assert capsys.readouterr().err == ""


def test_builtin_policies_answer_the_fine_grid(ckpt):
    """Step 0.1 crosses the acceptance thresholds (area: 1/4.9 ≈ 0.204) — no policy may fail there."""
    from behavsim import parse_act

    cs = generate_grid(step=0.1)
    for pol in (HandcraftedPolicy(nlg_seed=None), load_checkpoint(ckpt)):
        acts = {pol.act(b).act for b in cs.beliefs}
        assert all(parse_act(a) for a in acts) and len(acts) > 1


def test_collected_beliefs_stored_with_sorted_keys(tmp_path):
    import json

    cs = collect("handcrafted", dialogues=2, seed=0)
    back = ContextSet.load(cs.save(tmp_path / "c.jsonl"))
    assert [json.dumps(b) for b in cs.beliefs] == [json.dumps(b) for b in back.beliefs]
