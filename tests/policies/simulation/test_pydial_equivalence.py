"""Our environment's pieces against PyDial3's own code, on the same inputs (CamRestaurants).

PyDial runs once for the whole module, in one subprocess (``_pydial_oracle.py``) with its root
folder as the working directory, over every input given as JSON. Compared, each required to
be equal:

* the flat GP state vector (``GPState.beliefStateVec``; ours in PyDial's order via
  :func:`policies.simulation.features.pydial_order`) and the masks (``SummaryAction.getNonExecutable``)
  on the 1,296-context grid and on contexts collected in dialogues with our simulated user;
* the focus tracker over the user-act sequences of those dialogues;
* the master act of each executable summary action (``SummaryAction.Convert``) on the
  collected contexts and on part of the grid.

PyDial is looked for in ``../shared/pydial3`` beside the repository root (or
``$BEHAVSIM_SHARED/pydial3``); the module is skipped, saying so, only when that folder is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from behavsim import parse_act
from policies.simulation.actions import DiaAct, action_mask, master_act, summary_actions, value_rank
from policies.simulation.domain import resolve_domain
from policies.simulation.env import DialogueEnv
from policies.simulation.features import belief_vector, pydial_order

REPO = Path(__file__).resolve().parents[3]
ORACLE = Path(__file__).resolve().parent / "_pydial_oracle.py"
N_DIALOGUES = 40


# Environment 1's [summaryacts] (env1-configs/env1-gp-CR.cfg), nothing else
_CONFIG = """\
[GENERAL]
domains = CamRestaurants
singledomain = True
[logging]
usecolor = False
screen_level = error
file_level = error
[summaryacts]
maxinformslots = 5
informmask = True
requestmask = True
informcountaccepted = 4
byemask = True
[policy]
belieftype = focus
useconfreq = False
"""


def pydial_layout(belief: dict, domain) -> dict:
    """The belief with its keys in the order PyDial's own tracker lists them (informable slots
    in rules order, their values in ontology order then ``dontcare`` and ``**NONE**``; method,
    discourseAct, requested), which is what PyDial's tie rules and unsorted blocks depend on."""
    b = belief["beliefs"]
    out = {}
    for slot, values in domain.informable.items():
        rank = value_rank(values)
        out[slot] = dict(sorted(b[slot].items(), key=lambda kv: rank.get(kv[0], len(rank))))
    out["method"] = {m: b["method"].get(m, 0.0) for m in domain.method}
    out["discourseAct"] = {d: b["discourseAct"].get(d, 0.0) for d in domain.discourse_act}
    out["requested"] = {r: b["requested"].get(r, 0.0) for r in domain.requestable if r in b["requested"]}
    feats = dict(belief["features"])
    feats.pop("dbMatches", None)
    return {"beliefs": out, "features": feats}


def _collect(domain, n: int, seed: int = 7):
    """Dialogues with our simulated user, the system choosing executable summary actions at
    random (Environment 1 user): user-act sequences (as PyDial's agent feeds its tracker) and (belief, last act)."""
    rng = np.random.default_rng(seed)
    env = DialogueEnv(domain, user_config="env1")
    actions = summary_actions(domain)
    dialogues, contexts = [], []
    for i in range(n):
        belief, info = env.reset(seed=seed * 1000 + i)
        turns = [[None, [[info["user_act"], 1.0]]]]
        last = None
        done = False
        while not done:
            contexts.append((belief, last))
            allowed = np.flatnonzero(info["action_mask"])
            action = actions[int(rng.choice(allowed))]
            belief, _, term, trunc, info = env.step(action)
            done = term or trunc
            if not info.get("closing_turn"):
                turns.append([info["master_act"], [[info["user_act"], 1.0]]])
            last = info["master_act"]
        dialogues.append(turns)
    return dialogues, contexts


@pytest.fixture(scope="module")
def cam():
    return resolve_domain("camrestaurants")


@pytest.fixture(scope="module")
def grid(cam):
    from contexts import generate_grid

    return generate_grid(cam, step=0.2).beliefs


@pytest.fixture(scope="module")
def collected(cam):
    return _collect(cam, N_DIALOGUES)


@pytest.fixture(scope="module")
def oracle(cam, grid, collected, tmp_path_factory, pydial_root):
    dialogues, contexts = collected
    cfg = tmp_path_factory.mktemp("pydial") / "equivalence.cfg"
    cfg.write_text(_CONFIG)
    acts = summary_actions(cam)
    master = []
    for belief, last in contexts + [(b, None) for b in grid[::9]]:
        mask = action_mask(belief, cam, last)
        for a, ok in zip(acts, mask):
            if ok:
                master.append((belief, a, last))
    job = {
        "config": str(cfg),
        "domain": "CamRestaurants",
        "seed": 1,
        "vectors": [pydial_layout(b, cam) for b in grid] + [pydial_layout(b, cam) for b, _ in contexts],
        "masks": [[pydial_layout(b, cam), None] for b in grid]
        + [[pydial_layout(b, cam), last] for b, last in contexts],
        "master": [[pydial_layout(b, cam), a, last] for b, a, last in master],
        "dialogues": dialogues,
    }
    proc = subprocess.run(
        [sys.executable, str(ORACLE)],
        input=json.dumps(job),
        cwd=pydial_root,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"},
    )
    if proc.returncode != 0:
        pytest.fail("PyDial3 oracle failed:\n" + textwrap.indent(proc.stderr[-4000:], "  "))
    out = json.loads(proc.stdout)
    out["inputs"] = {"master": master, "contexts": contexts}
    return out


def test_summary_actions_are_pydials(oracle, cam):
    assert list(summary_actions(cam)) == oracle["actions"]


def test_state_vector_equals_pydials(oracle, cam, grid, collected):
    beliefs = list(grid) + [b for b, _ in collected[1]]
    order = pydial_order(cam)
    assert len(oracle["vectors"]) == len(beliefs) == 1296 + len(collected[1])
    bad = []
    for i, (b, theirs) in enumerate(zip(beliefs, oracle["vectors"])):
        ours = belief_vector(b, cam)[order]
        if len(theirs) != len(ours) or not np.allclose(ours, theirs, rtol=0, atol=1e-12):
            bad.append(i)
    assert not bad, f"{len(bad)} of {len(beliefs)} vectors differ, first: {bad[:10]}"


def test_masks_equal_pydials(oracle, cam, grid, collected):
    acts = summary_actions(cam)
    inputs = [(b, None) for b in grid] + list(collected[1])
    bad = []
    for i, ((b, last), masked) in enumerate(zip(inputs, oracle["masks"])):
        ours = {a for a, ok in zip(acts, action_mask(b, cam, last)) if not ok}
        if ours != set(masked):
            bad.append((i, sorted(ours ^ set(masked))))
    assert not bad, f"{len(bad)} of {len(inputs)} masks differ, first: {bad[:5]}"


def _same_act(ours: str, theirs: str, summary: str, belief: dict) -> bool:
    a, b = parse_act(ours), parse_act(theirs)
    if a == b:
        return True
    # PyDial's inform_byname with nothing requested informs one random requestable slot
    # (ours: the first one); the venue must still be the same
    if summary == "inform_byname" and not any(p > 0.5 for p in belief["beliefs"]["requested"].values()):
        a, b = DiaAct.from_act(ours), DiaAct.from_act(theirs)
        return a.type == b.type and a.get("name") == b.get("name") and len(a.items) == len(b.items)
    return False


def test_master_acts_equal_pydials(oracle, cam):
    inputs = oracle["inputs"]["master"]
    assert len(inputs) == len(oracle["master"]) > 1000
    bad = []
    for (b, summary, last), theirs in zip(inputs, oracle["master"]):
        ours = str(master_act(summary, b, cam, last))
        if not _same_act(ours, theirs, summary, b):
            bad.append((summary, ours, theirs))
    assert not bad, f"{len(bad)} of {len(inputs)} master acts differ, first: {bad[:5]}"


def _tracker_state(belief: dict, domain) -> dict:
    """The comparable part of a tracker output. PyDial's tracker leaves a stale
    ``method["none"]`` that ``SummaryUtils.globalSummary`` sets to 1 − Σ (in place, before the
    GP policy reads the belief); ours stores that value directly: both are patched here."""
    b = dict(belief["beliefs"])
    method = {k: v for k, v in b["method"].items() if k != "none"}
    method["none"] = 1.0 - sum(method.values())
    b["method"] = method
    out = {}
    for key in [*domain.informable, "method", "discourseAct", "requested"]:
        out[key] = {k: round(float(v), 12) for k, v in b.get(key, {}).items() if abs(v) > 1e-12}
    f = belief["features"]
    for key in ("lastInformedVenue", "informedVenueSinceNone", "lastActionInformNone", "offerHappened", "inform_info"):
        out[key] = f.get(key)
    return out


def test_focus_tracker_equals_pydials(oracle, cam, collected):
    from policies.simulation.tracker import FocusTracker

    dialogues = collected[0]
    assert len(oracle["dialogues"]) == len(dialogues) == N_DIALOGUES
    bad = []
    n_turns = 0
    for d, (turns, theirs) in enumerate(zip(dialogues, oracle["dialogues"])):
        tracker = FocusTracker(cam)
        for t, ((sys_act, nbest), their_b) in enumerate(zip(turns, theirs)):
            ours = tracker.update([tuple(h) for h in nbest], sys_act)
            n_turns += 1
            a, b = _tracker_state(ours, cam), _tracker_state(their_b, cam)
            if a != b:
                diff = sorted(k for k in a if a[k] != b[k])
                bad.append((d, t, diff))
    assert n_turns > 5 * N_DIALOGUES
    assert not bad, f"{len(bad)} of {n_turns} tracker states differ, first: {bad[:5]}"
