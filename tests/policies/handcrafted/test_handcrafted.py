import numpy as np

from behavsim.policy import Policy, Response, check_policy
from policies.handcrafted.policy import HandcraftedPolicy
from policies.simulation.domain import NONE_VALUE
from policies.simulation.env import DialogueEnv


def test_protocol_and_determinism_on_collected_and_odd_beliefs():
    env = DialogueEnv(hello=True)
    pol = HandcraftedPolicy(env.domain)
    assert isinstance(pol, Policy)
    beliefs = []
    for seed in range(10):
        b, info = env.reset(seed=seed)
        done = False
        while not done:
            beliefs.append(b)
            b, _, t, tr, info = env.step(pol.summary_action(b))
            done = t or tr
    # generated-style context: one value per slot with partial mass, rest **NONE**
    d = env.domain
    for p in (0.0, 0.4, 1.0):
        bel = {s: {**dict.fromkeys(d.informable[s], 0.0), "dontcare": 0.0, NONE_VALUE: 1.0} for s in d.informable}
        for s in d.system_requestable:
            bel[s][d.informable[s][0]] = p
            bel[s][NONE_VALUE] = 1.0 - p
        bel["method"] = {m: 0.0 for m in d.method} | {"byconstraints": p, "none": 1 - p}
        bel["discourseAct"] = {a: 0.0 for a in d.discourse_act} | {"none": 1.0}
        bel["requested"] = dict.fromkeys(d.requestable, 0.0)
        beliefs.append({"beliefs": bel})
    assert check_policy(pol, beliefs) == len(beliefs)
    r = pol.act(beliefs[0])
    assert isinstance(r, Response) and r.prompt and r.summary_action


def test_success_rate():
    env = DialogueEnv()
    pol = HandcraftedPolicy(env.domain)
    succ, turns = 0, []
    for seed in range(200):
        b, info = env.reset(seed=seed)
        done = False
        while not done:
            b, _, t, tr, info = env.step(pol.summary_action(b))
            done = t or tr
        succ += info["success"]
        turns.append(info["turns"])
    assert succ / 200 >= 0.95
    assert 2 <= np.mean(turns) <= 10


def test_without_generator():
    pol = HandcraftedPolicy(nlg_seed=None)
    env = DialogueEnv()
    b, _ = env.reset(seed=0)
    assert pol.act(b).prompt is None
