import numpy as np
import pytest

from policies.handcrafted.policy import HandcraftedPolicy
from policies.simulation.actions import SUMMARY_ACTIONS, UnknownSummaryAction
from policies.simulation.env import EXCHANGE_KEYS, DialogueEnv, EnvError
from policies.simulation.tracker import ErrorModel


def run(env, policy, seed):
    b, info = env.reset(seed=seed)
    trace = [(info["user_act"], tuple(info["action_mask"]))]
    done = False
    while not done:
        a = policy(b, info)
        b, r, term, trunc, info = env.step(a)
        assert r == -1.0
        trace.append((a, info["master_act"], info["prompt"], info["user_act"], tuple(info["action_mask"])))
        done = term or trunc
    return trace, info, b


def hdc(env):
    p = HandcraftedPolicy(env.domain)
    return lambda b, info: p.summary_action(b)


def random_policy(seed):
    rng = np.random.default_rng(seed)

    def act(b, info):
        ok = np.flatnonzero(info["action_mask"])
        return SUMMARY_ACTIONS[int(rng.choice(ok))]

    return act


def test_same_seed_same_dialogue():
    e1, e2 = DialogueEnv(), DialogueEnv()
    for seed in range(10):
        t1, i1, b1 = run(e1, random_policy(seed), seed)
        t2, i2, b2 = run(e2, random_policy(seed), seed)
        assert t1 == t2 and i1["exchanges"] == i2["exchanges"] and b1 == b2


def test_different_seeds_differ():
    env = DialogueEnv()
    goals = {str(env.reset(seed=s)[1]["goal"]) for s in range(20)}
    assert len(goals) > 10


def test_exchanges_and_info():
    env = DialogueEnv(hello=True)
    trace, info, _ = run(env, hdc(env), 5)
    ex = info["exchanges"]
    assert ex[0]["system_act"] == "hello()" and ex[0]["turn"] == 1
    assert len(ex) == info["turns"] == len(trace)
    for i, e in enumerate(ex, 1):
        assert tuple(e) == EXCHANGE_KEYS and e["turn"] == i
        assert isinstance(e["reprompt"], bool) and isinstance(e["confirmation"], bool)
        assert e["asr_confidence"] == 1.0 and e["user_goal_constraints"] == 3
        assert 0 <= e["constraints_filled"] <= 3
    assert any(e["informed_venue"] for e in ex)
    assert ex[-1]["success_so_far"] is True and info["success"] is True
    assert info["master_act"] == ex[-1]["system_act"] and env.last_system_act == ex[-1]["system_act"]


def test_reprompt_flag_and_truncation():
    env = DialogueEnv(max_turns=25, user_config={"patience": 30})
    env.reset(seed=1)
    steps = 0
    done = False
    while not done:
        b, r, term, trunc, info = env.step("request_area")
        steps += 1
        done = term or trunc
    assert trunc and not term and steps == 25 and info["turns"] == 25
    assert [e["reprompt"] for e in info["exchanges"]] == [False] + [True] * 24
    assert info["success"] is False
    with pytest.raises(EnvError, match="reset"):
        env.step("request_area")


def test_patience_ends_dialogue():
    env = DialogueEnv()
    env.reset(seed=2)
    for _i in range(5):  # patience 5: four repeats leave 1
        b, r, term, trunc, info = env.step("request_food")
        assert not term
    b, r, term, trunc, info = env.step("request_food")
    assert not term and info["user_act"] == "bye()" and info["gave_up"] and not info["success"]
    b, r, term, trunc, info = env.step("request_food")  # the closing turn
    assert term and info["closing_turn"] and info["master_act"] == "bye()"
    assert info["chosen_act"] == "request(food)" and info["turns"] == 7


def test_unknown_action_message():
    env = DialogueEnv()
    env.reset(seed=0)
    with pytest.raises(UnknownSummaryAction, match="Did you mean 'inform_byname'"):
        env.step("inform_by_name")


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_turns"):
        DialogueEnv(max_turns=0)
    with pytest.raises(TypeError, match="error_model"):
        DialogueEnv(error_model=0.1)


def test_errors_derive_from_the_core_hierarchy(tmp_path):
    """Errors on bad input are behavsim errors (the CLI prints them on one line) and keep their
    built-in bases."""
    import behavsim
    from behavsim.policy import PolicyCheckError, check_policy
    from policies.simulation.domain import Domain, DomainError
    from policies.simulation.tracker import make_belief
    from policies.simulation.user import UserConfig, UserConfigError

    for cls, core, builtin in (
        (DomainError, behavsim.BehavsimError, ValueError),
        (UserConfigError, behavsim.ConfigError, ValueError),
        (EnvError, behavsim.BehavsimError, RuntimeError),
        (UnknownSummaryAction, behavsim.UnknownName, ValueError),
        (PolicyCheckError, behavsim.BehavsimError, AssertionError),
    ):
        assert issubclass(cls, core) and issubclass(cls, builtin)
    env = DialogueEnv()
    env.reset(seed=0)
    with pytest.raises(UnknownSummaryAction) as err:
        env.step("request_fod")
    assert err.value.valid == list(env.actions) and err.value.name == "request_fod"
    assert str(err.value).startswith("unknown summary action 'request_fod'. Did you mean 'request_food'?")
    D = env.domain
    bad = [
        lambda: Domain.from_pydial(tmp_path / "none.json", tmp_path / "none.db"),
        lambda: UserConfig(patience=0),
        lambda: UserConfig(probs={"InformCombo": 0.5}),
        lambda: DialogueEnv(max_turns=0),
        lambda: ErrorModel(error_rate=2.0),
        lambda: make_belief(D, {"area": {"atlantis": 0.5}}),
        lambda: check_policy(object(), []),
        lambda: env.step(3),
    ]
    for call in bad:
        with pytest.raises(behavsim.BehavsimError) as err:
            call()
        assert "\n" not in str(err.value)
    with pytest.raises(behavsim.ConfigError, match="Did you mean 'InformCombination'"):
        UserConfig(probs={"InformCombo": 0.5})
    env2 = DialogueEnv(max_turns=1)
    env2.reset(seed=0)
    env2.step("request_food")
    with pytest.raises(EnvError, match="reset"):
        env2.step("request_food")


def test_noisy_environment_runs():
    env = DialogueEnv(error_model=ErrorModel(error_rate=0.3, nbest=3))
    succ = 0
    for seed in range(30):
        _, info, b = run(env, hdc(env), seed)
        succ += info["success"]
        assert all(0 < e["asr_confidence"] <= 1 for e in info["exchanges"])
    assert succ >= 10


def test_docs_quick_start_runs(capsys):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "environment.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(block, "docs/environment.md", "exec"), {})
    assert "success: True" in capsys.readouterr().out


def test_pydial_domain_environment(pydial_ontology):
    from policies.simulation.domain import Domain

    r = pydial_ontology
    d = Domain.from_pydial(r / "CamRestaurants-rules.json", r / "CamRestaurants-dbase.db")
    env = DialogueEnv(d)
    pol = HandcraftedPolicy(d)
    succ = 0
    for seed in range(50):
        b, info = env.reset(seed=seed)
        assert len(info["action_mask"]) == 16
        done = False
        while not done:
            b, _, t, tr, info = env.step(pol.summary_action(b))
            done = t or tr
        succ += info["success"]
    assert succ >= 45


@pytest.mark.parametrize("error_model", [None, ErrorModel(error_rate=0.4, nbest=4)])
def test_belief_invariants_under_random_play(error_model):
    from policies.simulation.features import belief_vector, vector_length

    env = DialogueEnv(error_model=error_model, hello=True)
    d = env.domain
    n = vector_length(d)
    for seed in range(40):
        pol = random_policy(seed)
        b, info = env.reset(seed=seed)
        done = False
        while not done:
            bel = b["beliefs"]
            for s in list(d.informable) + ["method", "discourseAct"]:
                if s == "method" and not d.legacy_state:
                    # PyDial's tracker: a stale method["none"] that the policy's summary replaces by
                    # 1 - sum before reading (docs/environment.md), so the raw sum may fall short
                    assert sum(bel[s].values()) <= 1.0 + 1e-9
                else:
                    assert sum(bel[s].values()) == pytest.approx(1.0)
                assert all(0.0 <= p <= 1.0 + 1e-12 for p in bel[s].values())
            assert all(0.0 <= p <= 1.0 for p in bel["requested"].values())
            assert len(b["features"]["inform_info"]) == 25
            assert info["action_mask"].any()
            v = belief_vector(b, d)
            assert v.shape == (n,) and np.isfinite(v).all()
            b, _, t, tr, info = env.step(pol(b, info))
            done = t or tr


def test_dialogues_do_not_depend_on_python_hash_seed():
    import os
    import subprocess
    import sys

    code = (
        "import hashlib, json\n"
        "from policies.simulation.env import DialogueEnv\n"
        "from policies.handcrafted.policy import HandcraftedPolicy\n"
        "from policies.simulation.tracker import ErrorModel\n"
        "env = DialogueEnv(error_model=ErrorModel(0.2, 3), hello=True, nlg_seed=3)\n"
        "pol = HandcraftedPolicy(env.domain)\n"
        "h = hashlib.sha256()\n"
        "for s in range(15):\n"
        "    b, info = env.reset(seed=s); done = False\n"
        "    while not done:\n"
        "        b, r, t, tr, info = env.step(pol.summary_action(b)); done = t or tr\n"
        "        h.update(info['prompt'].encode())\n"
        "    h.update(json.dumps([info['exchanges'], b], sort_keys=True).encode())\n"
        "print(h.hexdigest())\n"
    )
    outs = set()
    for hs in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hs}
        outs.add(
            subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        )
    assert len(outs) == 1


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"hello": True},
        {"error_model": ErrorModel(0.2, 3)},
        {"user_config": {"unsatisfiable_goals": True}},
        {"max_turns": 5},
    ],
)
def test_check_env(kw):
    from policies.simulation.env import check_env

    assert check_env(DialogueEnv(**kw), n_dialogues=5) > 0


def test_hello_opening_in_reset_info():
    b, info = DialogueEnv(hello=True).reset(seed=0)
    assert info["master_act"] == "hello()" and info["prompt"] and info["turns"] == 1
    b, info = DialogueEnv().reset(seed=0)
    assert "master_act" not in info and info["turns"] == 0 and info["exchanges"] == []


def test_closing_turn_after_user_bye():
    env = DialogueEnv()
    pol = HandcraftedPolicy(env.domain)
    for seed in range(20):
        b, info = env.reset(seed=seed)
        n_user_acts = 1
        done = False
        while not done:
            a = pol.summary_action(b)
            b, r, term, trunc, info = env.step(a)
            done = term or trunc
            if not info["closing_turn"]:
                n_user_acts += 1
        assert info["closing_turn"] and a == "bye" and info["chosen_act"] == "bye()"
        assert info["turns"] == n_user_acts  # one turn per user act, as PyDial counts
        ex = info["exchanges"][-1]
        assert ex["system_act"] == "bye()" and ex["user_act"] == "null()"
        assert info["exchanges"][-2]["user_act"] == "bye()"
    env = DialogueEnv(final_system_turn=False)
    b, info = env.reset(seed=0)
    done = False
    while not done:
        b, r, term, trunc, info = env.step(pol.summary_action(b))
        done = term or trunc
    assert info["user_act"] == "bye()" and not info["closing_turn"]
