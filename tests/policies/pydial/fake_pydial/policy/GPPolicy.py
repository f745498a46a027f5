"""Stand-in for PyDial3's policy/GPPolicy.py: state vector layout as PyDial's GPState, a linear
kernel that returns 0 for vectors of another length (as PyDial does), greedy when scale <= 0."""

import json
import os

import numpy as np
from policy.Policy import Policy
from utils import Settings


class GPAction:
    def __init__(self, act):
        self.act = act


class GPState:
    def __init__(self, belief):
        b = {}
        for elem, dist in belief["beliefs"].items():
            if elem in ("discourseAct", "method"):
                b["goal_" + elem] = list(dist.values())  # dict order, as PyDial
            elif elem == "requested":
                for slot, p in dist.items():
                    b["hist_" + slot] = [p, 1 - p]
            else:
                vals = dict(dist)
                none = vals.pop("**NONE**", 0.0)
                vals.setdefault("dontcare", 0.0)
                b["goal_" + elem] = [none] + sorted(vals.values(), reverse=True)
        f = belief["features"]
        b["hist_offerHappened"] = [1.0 if f["offerHappened"] else 0.0, 0.0 if f["offerHappened"] else 1.0]
        none = 1.0 if f["informedVenueSinceNone"] else 0.0
        b["hist_lastActionInformNone"] = [none, 1 - none]
        for i, x in enumerate(f["inform_info"]):
            b["hist_info_%d" % i] = [1.0 if x else 0.0, 0.0 if x else 1.0]
        self.beliefStateVec = np.concatenate([np.asarray(b[k], float) for k in sorted(b)])


def _kernel(s, t):
    if len(s.beliefStateVec) != len(t.beliefStateVec):
        return 0  # PyDial: "incorrect beliefStateVec padding/truncating, returning 0"
    return float(np.dot(s.beliefStateVec, t.beliefStateVec))


class _Learner:
    def __init__(self, infile):
        self.params = {"_dictionary": [], "_alpha_tilda": []}
        if os.path.isfile(infile + ".dct") and os.path.isfile(infile + ".prm"):  # relative to the cwd
            with open(infile + ".dct") as fh:
                points = json.load(fh)
            with open(infile + ".prm") as fh:
                self.params["_alpha_tilda"] = json.load(fh)
            self.params["_dictionary"] = [[GPState(b), GPAction(a)] for b, a in points]


class GPPolicy(Policy):
    def __init__(self, domainString, learning, sharedParams=None):
        super().__init__(domainString, learning)
        infile = ""
        for sec in ("policy", "policy_" + domainString):
            if Settings.config.has_option(sec, "inpolicyfile"):
                infile = Settings.config.get(sec, "inpolicyfile")
        self.scale = -1
        for sec in ("gpsarsa", "gpsarsa_" + domainString):
            if Settings.config.has_option(sec, "scale"):
                self.scale = Settings.config.getint(sec, "scale")
        self.learner = _Learner(infile)

    def get_State(self, belief):
        return GPState(belief)

    def nextAction(self, belief):
        state = self.get_State(belief)
        executable = [
            a for a in self.action_names if a != "inform" or belief["beliefs"]["method"].get("byconstraints", 0.0) > 0.5
        ]
        scored = []
        for a in executable:
            q = sum(
                alpha * _kernel(state, ds)
                for (ds, da), alpha in zip(self.learner.params["_dictionary"], self.learner.params["_alpha_tilda"])
                if da.act == a
            )
            if self.scale > 0:
                q += self.scale * Settings.random.randn()
            scored.append((q, a))
        best = sorted(scored, key=lambda qa: -qa[0])[0][1]
        self.actToBeRecorded = GPAction(best)
        return self.convert(belief, best)
