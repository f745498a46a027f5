"""Runs PyDial3's own simulation loop and prints one JSON line per dialogue.

Test helper for ``test_pydial_statistics.py`` and ``benchmarks/pydial_env.py``: run as a script
with a (writable copy of a) PyDial root folder as the working directory — PyDial opens its data
files by relative path and writes into its root. It drives PyDial's classes (``Simulate``'s
``SimulationSystem``, hence PyDial's ``Agent``, simulated user, error model, belief tracker,
policy and ``ObjectiveSuccessEvaluator``); it contains none of PyDial's code.

Usage: ``python _pydial_simulate.py CONFIG N SEED`` where CONFIG is a PyDial config (for the
statistics: Environment 1 with ``[policy] policytype = hdc``). Output on stdout, one line per
dialogue: ``{"success": bool, "turns": int, "reward": number}``, then a last line
``{"done": N, "seconds": float}``. PyDial's own prints and logs are kept off stdout.

How PyDial counts turns (``evaluation/EvaluationManager.py``, ``Agent.py``): the evaluator's
``num_turns`` goes up by one in ``Evaluator.turnReward``, which the agent calls from
``_evaluate_agents_turn`` once per ``continue_call`` — once per user act that the system
answers. The system's opening act in ``start_call`` (turn 0) is not evaluated and not counted.
The user's closing ``bye()`` is answered (and counted) like any other user act; when the agent
itself says ``bye()`` the user's reply is never processed. A dialogue reaching the turn limit
ends when ``continue_call`` is entered for the 26th time: that call returns ``bye()`` before
evaluating, so at most 25 turns are counted. These are the per-dialogue numbers PyDial
averages as "Average turns" in its results (``Evaluator.print_summary``), and the success is
the evaluator's ``outcome`` (objective success) recorded in ``finalReward`` at ``end_call``.

Imported (not run), the module gives the drivers both sides share, so the test and the
benchmark compare the same things: :func:`write_config` (Environment 1 with PyDial's
handcrafted policy, derived from ``env1-configs/env1-gp-CR.cfg``), :func:`run_pydial` (this
script in parallel processes on a PyDial root copy), :func:`run_ours` (behavsim's handcrafted
policy in behavsim's ``DialogueEnv``, turns counted as PyDial counts them) and the 95%
intervals :func:`wilson` and :func:`mean_ci`. Importing it imports nothing of PyDial.
"""

from __future__ import annotations

import configparser
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
Z95 = 1.959963984540054  # two-sided 95% normal quantile


def main(argv: list[str]) -> None:
    config, n, seed = argv[0], int(argv[1]), int(argv[2])
    out = sys.stdout
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("MPLBACKEND", "Agg")
    with contextlib.redirect_stdout(io.StringIO()):  # PyDial prints to stdout
        from utils import Settings

        Settings.init(config, seed)
        from ontology import Ontology

        Ontology.init_global_ontology()
        import Simulate

        system = Simulate.SimulationSystem(error_rate=0.0)
        agent = system.agent_factory.agents["Smith"]
    domain = Settings.config.get("GENERAL", "domains")
    t0 = time.perf_counter()
    for i in range(n):
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink):
            system.run(session_id=f"simulate_dialog{i}", sim_level=system.sim_level)
        ev = agent.evaluation_manager.domainEvaluators[domain]
        if len(ev.turns) != i + 1:  # a dialogue with no evaluated turn is not recorded
            raise RuntimeError(f"dialogue {i}: PyDial's evaluator recorded {len(ev.turns)} dialogues")
        row = {"success": bool(ev.outcomes[-1]), "turns": int(ev.turns[-1]), "reward": float(ev.rewards[-1])}
        out.write(json.dumps(row) + "\n")
    out.write(json.dumps({"done": n, "seconds": time.perf_counter() - t0}) + "\n")
    out.flush()


# ---------------------------------------------------------------------- drivers (imported)
def write_config(root: Path, name: str = "env1-hdc-statistics.cfg") -> Path:
    """Environment 1 as ``env1-configs/env1-gp-CR.cfg`` sets it (CamRestaurants, 0% error,
    N-best 1, 25 turns, ``config/sampledUM.cfg``, patience 4,6, new goal scenarios), with
    PyDial's handcrafted policy (``policytype = hdc``, no learning) and no log file, written
    into ``root`` (a copy: PyDial writes into its root). Returns its path."""
    cfg = configparser.ConfigParser()
    cfg.optionxform = str  # keep PyDial's option names as written
    cfg.read(root / "env1-configs" / "env1-gp-CR.cfg")
    cfg.set("policy", "policytype", "hdc")
    cfg.set("policy", "learning", "False")
    for section in ("gppolicy", "gpsarsa"):
        cfg.remove_section(section)
    cfg.set("logging", "screen_level", "warning")
    cfg.set("logging", "file_level", "warning")
    cfg.remove_option("logging", "file")
    path = root / name
    with path.open("w") as f:
        cfg.write(f)
    return path


def run_pydial(root: Path, config: Path, n: int, seed: int, workers: int = 2) -> tuple[list[dict], float]:
    """``n`` dialogues of PyDial's simulation, split over ``workers`` processes (process ``k``
    runs its share with seed ``seed + k``; PyDial seeds one global ``RandomState``). With the
    same seed PyDial's dialogues still vary from process to process with Python's string
    hashing (the iteration order of sets and the like), so the processes run with
    ``PYTHONHASHSEED=0``, which makes a run reproducible. Returns the per-dialogue rows and the summed seconds the
    processes spent simulating."""
    shares = [n // workers + (k < n % workers) for k in range(workers)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # PyDial draws from sets: their order must not vary
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE), str(config), str(m), str(seed + k)],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k, m in enumerate(shares)
        if m
    ]
    rows: list[dict] = []
    seconds = 0.0
    for proc in procs:
        out, err = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"PyDial simulation failed (exit {proc.returncode}): {err.strip()[-2000:]}")
        lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        rows += [r for r in lines if "success" in r]
        seconds += sum(r["seconds"] for r in lines if "done" in r)
    if len(rows) != n:
        raise RuntimeError(f"PyDial simulation returned {len(rows)} dialogues, expected {n}")
    return rows, seconds


#: ``DialogueEnv`` keywords that run our environment the way PyDial's loop runs Environment 1.
#: PyDial's single-domain agent always opens with ``hello()`` (``Agent._logical_requirements``
#: overrides ``startwithhello = False``) and the user answers it; that opening is turn 0 and is
#: not counted, and 25 counted turns are allowed after it. Our ``hello=True`` opening is
#: exchange 1 and counts as a turn, so we allow 26 and subtract 1 (:data:`TURN_OFFSET`).
PYDIAL_LOOP = {"hello": True, "max_turns": 26}
TURN_OFFSET = 1


def run_ours(n: int, seed: int, user_config="env1", step=None, **env_kwargs) -> tuple[list[dict], float]:
    """``n`` dialogues of behavsim's handcrafted policy in ``DialogueEnv(camrestaurants,
    user_config=...)`` (default: :data:`PYDIAL_LOOP`), dialogue ``i`` on seed ``seed + i``.
    Turns are PyDial's: ``info["turns"]`` counts one turn per system act that answers a user
    act (the closing ``bye()`` after the user's ``bye()`` included, as PyDial's evaluator
    counts the agent's answer to it), plus the counted opening ``hello()`` with ``hello=True``,
    which is taken off. ``step(env, belief)`` plays one system turn (default: the handcrafted
    policy's summary action). Returns the rows and the seconds spent."""
    from policies.handcrafted.policy import HandcraftedPolicy
    from policies.simulation.domain import resolve_domain
    from policies.simulation.env import DialogueEnv

    kwargs = {**PYDIAL_LOOP, **env_kwargs}
    offset = TURN_OFFSET if kwargs.get("hello") else 0
    cam = resolve_domain("camrestaurants")
    env = DialogueEnv(cam, user_config=user_config, **kwargs)
    if step is None:
        policy = HandcraftedPolicy(cam, nlg_seed=None)

        def step(env, belief):
            return env.step(policy.summary_action(belief))

    rows = []
    t0 = time.perf_counter()
    for i in range(n):
        belief, info = env.reset(seed=seed + i)
        done = False
        while not done:
            belief, _, terminated, truncated, info = step(env, belief)
            done = terminated or truncated
        rows.append({"success": bool(info["success"]), "turns": int(info["turns"]) - offset})
    return rows, time.perf_counter() - t0


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k / n`` (95% by default)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_ci(xs: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean and its Student-t interval (sample standard deviation): ``(mean, low, high)``."""
    from scipy import stats

    n = len(xs)
    m = sum(xs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return m, m - half, m + half


if __name__ == "__main__":
    main(sys.argv[1:])
