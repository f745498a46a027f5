"""Environment 1 statistics: PyDial3's handcrafted policy in PyDial's own simulation against
behavsim's handcrafted policy in behavsim's ``DialogueEnv`` (CamRestaurants, ``user_config="env1"``).

Prints, for each side, the success rate with its 95% Wilson interval, the mean number of turns
(counted as PyDial counts them) with its 95% t interval, and dialogues/s (per process), and the
speed ratio::

    python benchmarks/pydial_env.py                        # 1,000 dialogues a side
    python benchmarks/pydial_env.py --dialogues 2000 --workers 2
    python benchmarks/pydial_env.py --pydial-root DIR      # or $BEHAVSIM_SHARED/pydial3

Both sides are driven by ``tests/policies/simulation/_pydial_simulate.py`` (PyDial's side: its
``Simulate.SimulationSystem`` in subprocesses on a temporary copy of the PyDial root, config
derived from ``env1-configs/env1-gp-CR.cfg`` with ``policytype = hdc``; our side: the
environment run as PyDial's loop runs, opening ``hello()`` uncounted). A third line shows our
environment with its default opening (``hello=False``, the user speaks first). With
``--adapter``, two more lines: PyDial's handcrafted policy asked through behavsim's ``pydial:``
adapter (``env1-configs/adapter-hdc.cfg``, one context at a time, no prompts) inside our
environment, with either opening — the same policy on both environments. Skipped, saying so,
when there is no PyDial root.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HELPER = REPO / "tests" / "policies" / "simulation" / "_pydial_simulate.py"


def _helper():
    spec = importlib.util.spec_from_file_location("_pydial_simulate", HELPER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def summary(sim, label: str, rows: list[dict], seconds: float) -> str:
    n = len(rows)
    k = sum(r["success"] for r in rows)
    lo, hi = sim.wilson(k, n)
    m, tlo, thi = sim.mean_ci([r["turns"] for r in rows])
    return (
        f"{label:44s} success {100 * k / n:6.2f}% [{100 * lo:.2f}, {100 * hi:.2f}]  "
        f"turns {m:.3f} [{tlo:.3f}, {thi:.3f}]  {n / seconds:8.1f} dialogues/s"
    )


def run_adapter(sim, root: Path, n: int, seed: int, hello: bool) -> tuple[list[dict], float]:
    """PyDial's hdc policy through the ``pydial:`` adapter in ``DialogueEnv`` (turns as PyDial counts them)."""
    from policies.pydial._adapter import PyDialAdapter

    adapter = PyDialAdapter(root / "env1-configs" / "adapter-hdc.cfg", root=root, nlg=False)

    def step(env, belief):
        act = adapter.respond_one(belief, context_meta={"last_system_act": env.last_system_act}).act
        return env.step_act(act)

    return sim.run_ours(n, seed, step=step, hello=hello, max_turns=26 if hello else 25)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_root = str(Path(os.environ.get("BEHAVSIM_SHARED") or REPO.parent / "shared") / "pydial3")
    ap.add_argument("--pydial-root", default=default_root, help="PyDial3 root (default: %(default)s)")
    ap.add_argument("--dialogues", type=int, default=1000, help="dialogues a side (default 1,000)")
    ap.add_argument("--workers", type=int, default=1, help="PyDial processes (default 1)")
    ap.add_argument("--seed", type=int, default=1, help="PyDial's seed (process k: seed + k); ours: seed * 1e6 + i")
    ap.add_argument("--adapter", action="store_true", help="also PyDial's hdc policy inside our environment")
    args = ap.parse_args(argv)
    src = Path(args.pydial_root)
    if not (src / "Simulate.py").is_file():
        print(f"skipped: no PyDial3 root at {src} (pass --pydial-root or set BEHAVSIM_SHARED)")
        return 0
    sys.path.insert(0, str(REPO))
    sim = _helper()
    n = args.dialogues
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pydial3"
        shutil.copytree(src, root, ignore=shutil.ignore_patterns(".git", "_bslogs"))
        config = sim.write_config(root)
        t0 = time.perf_counter()
        theirs, their_s = sim.run_pydial(root, config, n, args.seed, workers=args.workers)
        wall = time.perf_counter() - t0
        adapted = {}
        if args.adapter:
            for hello in (True, False):
                adapted[hello] = run_adapter(sim, root, n, args.seed * 1_000_000, hello)
    ours, our_s = sim.run_ours(n, args.seed * 1_000_000)
    plain, plain_s = sim.run_ours(n, args.seed * 1_000_000, hello=False, max_turns=25)
    print(f"Environment 1, CamRestaurants, handcrafted policies, {n} dialogues a side (95% intervals)")
    print(summary(sim, "PyDial3 (hdc, Simulate.SimulationSystem)", theirs, their_s))
    print(summary(sim, "behavsim (HandcraftedPolicy, DialogueEnv)", ours, our_s))
    print(summary(sim, "behavsim, default opening (hello=False)", plain, plain_s))
    for hello, (rows, secs) in adapted.items():
        print(summary(sim, f"PyDial hdc via pydial: adapter, hello={hello}", rows, secs))
    print(
        f"speed: behavsim {n / our_s:.1f} vs PyDial {n / their_s:.1f} dialogues/s per process = "
        f"{(n / our_s) / (n / their_s):.0f}x; PyDial wall time {wall:.1f} s with {args.workers} process(es)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
