"""Helper of ``benchmarks/pydial_learning.py``: one seed of PyDial3's GP-SARSA learning curve.

Runs *inside a copy* of a PyDial3 root (the working directory; PyDial opens its data files by
relative path and writes policies there) and is never imported by behavsim. It drives PyDial's
own classes the way ``pydial.py train`` and ``pydial.py test`` do:

* training: ``[policy] learning = True`` and the config's ``[gpsarsa] scale`` (3), one
  ``Simulate.SimulationSystem(error_rate=0)`` per batch running the batch's dialogues, the policy
  read from the previous batch's files and written to the batch's own — batches end at the
  evaluation points, and one random stream (``Settings.random``, seeded with ``--seed``) runs
  through all training batches, as in one ``pydial.py train`` run;
* evaluation at each point: ``learning = False`` and ``scale = 1`` (as ``pydial.py test``), on
  the policy saved at that point, with the stream ``--seed`` + 100 (``pydial.py test``'s
  offset), so every point sees the same user goals; the training stream is put back afterwards,
  so evaluating does not change the training.

Logging at PyDial's quietest: ``tracedialog = 0``, screen level CRITICAL, no log file.

    cd COPY_OF_PYDIAL && python _pydial_learn.py --config CFG --seed 1 --points 100 200 \\
        --eval-dialogues 100 --out result.json

Writes one JSON object to ``--out``: per point the success rate, mean turns, mean reward, the
dictionary size of the policy that was evaluated and the seconds spent training since the
previous point (``Simulate.SimulationSystem`` built, dialogues run, policy saved).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

DOMAIN = "CamRestaurants"
AGENT = "Smith"  # the agent id Simulate's factory uses


def _evaluator(sim):
    return sim.agent_factory.agents[AGENT].evaluation_manager.domainEvaluators[DOMAIN]


def _dictionary_size(sim) -> int:
    policy = sim.agent_factory.agents[AGENT].policy_manager.domainPolicies[DOMAIN]
    return len(policy.learner.params["_dictionary"])


def _configure(settings, *, learning: bool, scale: str, inpolicy: str, outpolicy: str) -> None:
    cfg = settings.config
    cfg.set("policy", "learning", str(learning))
    cfg.set("gpsarsa", "scale", scale)
    cfg.set("policy", "inpolicyfile", inpolicy)
    cfg.set("policy", "outpolicyfile", outpolicy)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--points", type=int, nargs="+", required=True)
    ap.add_argument("--eval-dialogues", type=int, required=True)
    ap.add_argument("--policy-dir", default="_bslearn/")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)

    sys.path.insert(0, os.getcwd())
    import numpy as np
    import Simulate
    from ontology import Ontology
    from utils import ContextLogger, Settings

    Settings.init(args.config, args.seed)
    cfg = Settings.config
    train_scale = cfg.get("gpsarsa", "scale")
    cfg.set("GENERAL", "tracedialog", "0")
    for opt in ("screen_level", "file_level"):
        cfg.set("logging", opt, "CRITICAL")
    if cfg.has_option("logging", "file"):
        cfg.remove_option("logging", "file")
    ContextLogger.createLoggingHandlers(config=cfg)
    Ontology.init_global_ontology()
    os.makedirs(args.policy_dir, exist_ok=True)

    def prefix(n: int) -> str:
        return f"{args.policy_dir}learn-seed{args.seed}-{n:06d}"

    out = {"seed": args.seed, "train_scale": train_scale, "points": []}
    done = 0
    for point in args.points:
        _configure(Settings, learning=True, scale=train_scale, inpolicy=prefix(done), outpolicy=prefix(point))
        t0 = time.perf_counter()
        sim = Simulate.SimulationSystem(error_rate=0.0)
        sim.run_dialogs(point - done)  # ends with the policy saved (power_down_factory)
        train_s = time.perf_counter() - t0
        train_ev = _evaluator(sim)
        train_dict = _dictionary_size(sim)

        train_stream = Settings.random
        Settings.random = np.random.RandomState(args.seed + 100)
        _configure(Settings, learning=False, scale="1", inpolicy=prefix(point), outpolicy=prefix(point) + "-eval")
        t0 = time.perf_counter()
        sim = Simulate.SimulationSystem(error_rate=0.0)
        sim.run_dialogs(args.eval_dialogues)
        eval_s = time.perf_counter() - t0
        Settings.random = train_stream
        ev = _evaluator(sim)
        eval_dict = _dictionary_size(sim)
        if eval_dict != train_dict:
            raise SystemExit(
                f"the evaluated policy has {eval_dict} dictionary points, the trained one {train_dict}: "
                f"{prefix(point)} was not read back"
            )
        out["points"].append(
            {
                "dialogues": point,
                "train_seconds": train_s,
                "train_dialogues": point - done,
                "train_tsr": float(np.mean(train_ev.outcomes)),
                "eval_seconds": eval_s,
                "eval_dialogues": len(ev.outcomes),
                "tsr": float(np.mean(ev.outcomes)),
                "adl": float(np.mean(ev.turns)),
                "mean_reward": float(np.mean(ev.rewards)),
                "dictionary_size": eval_dict,
            }
        )
        done = point
    with open(args.out, "w") as fh:
        json.dump(out, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
