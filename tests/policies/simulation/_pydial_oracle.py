"""Runs PyDial3's own code on inputs given as JSON (stdin) and prints its outputs as JSON.

Test helper for ``test_pydial_equivalence.py``: run as a script with PyDial's root folder as the
working directory (PyDial opens its data files by relative path) and on ``sys.path``. It calls
PyDial's functions and classes; it contains none of PyDial's code.

Input: ``{"config": <path of a PyDial config>, "domain": "CamRestaurants", "seed": int,
"vectors": [belief, ...], "masks": [[belief, last system act or null], ...],
"master": [[belief, summary action, last system act or null], ...],
"dialogues": [[[system act or null, [[user act, p], ...]], ...], ...]}``.
Output: ``{"vectors": [[float, ...], ...], "masks": [[masked action, ...], ...],
"master": [act string, ...], "actions": [summary action, ...],
"dialogues": [[{"beliefs": ..., "features": ...}, ...], ...]}``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import sys


def main() -> None:
    job = json.load(sys.stdin)
    with contextlib.redirect_stdout(io.StringIO()):  # PyDial prints and logs to stdout
        out = run(job)
    json.dump(out, sys.stdout)


def run(job: dict) -> dict:
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("MPLBACKEND", "Agg")
    from utils import Settings

    Settings.init(job["config"], job.get("seed", 0))
    from ontology import Ontology

    Ontology.init_global_ontology()
    from belieftracking.baseline import FocusTracker
    from policy.GPPolicy import GPState
    from policy.SummaryAction import SummaryAction

    dom = job["domain"]
    out: dict = {"actions": SummaryAction(dom).action_names}
    out["vectors"] = [list(map(float, GPState(b, domainString=dom).beliefStateVec)) for b in job.get("vectors", [])]
    masks = []
    for belief, last in job.get("masks", []):
        masks.append(SummaryAction(dom).getNonExecutable(belief, last))  # fresh: no memory
    out["masks"] = masks
    master = []
    for belief, action, last in job.get("master", []):
        Settings.set_seed(job.get("seed", 0))
        mapper = SummaryAction(dom)
        mapper.getNonExecutable(belief, last)  # as the policy does before converting
        master.append(mapper.Convert(belief, action, last))
    out["master"] = master
    dialogues = []
    for turns in job.get("dialogues", []):
        tracker = FocusTracker(dom)
        tracker.restart()
        states = []
        for sys_act, nbest in turns:
            b = tracker.update_belief_state(sys_act, [tuple(h) for h in nbest])
            states.append({"beliefs": copy.deepcopy(b["beliefs"]), "features": copy.deepcopy(b["features"])})
        dialogues.append(states)
    out["dialogues"] = dialogues
    return out


if __name__ == "__main__":
    main()
