"""Learning curve of our GP-SARSA next to PyDial3's own GP-SARSA on the same task, and their speeds.

    python benchmarks/pydial_learning.py                      # ~10 minutes on 2 cores
    python benchmarks/pydial_learning.py --seeds 0 --points 20 --eval-dialogues 10   # seconds

Both learners are trained on CamRestaurants in Environment 1 (0% semantic error, the simulated
user of ``sampledUM.cfg``, patience 4-5) with R_TS (-1 per turn, +20 on success) and
exploration scale 3, one trial per seed, and evaluated after each of ``--points`` training
dialogues on ``--eval-dialogues`` dialogues with learning off and Q sampled at scale 1, as
PyDial's test does:

* PyDial3: ``env1-configs/env1-gp-CR.cfg`` of a PyDial3 root (``--pydial-root``, default
  ``../shared/pydial3`` beside the repository or ``$BEHAVSIM_SHARED/pydial3``), run on a temporary
  copy of that root by ``benchmarks/_pydial_learn.py`` in a subprocess per seed (``--workers`` at
  a time), with PyDial's logging at its quietest (``tracedialog = 0``, screen level CRITICAL, no
  log file). Its seeds drive PyDial's random stream; evaluation uses seed + 100 as
  ``pydial.py test`` does.
* behavsim: ``policies.training.train.run_training`` with ``TrainConfig(domain="camrestaurants",
  user="env1", eval_scale=1)`` — what ``behavsim train --domain camrestaurants --user env1
  --eval-scale 1`` runs — with ``--workers`` processes too, so both are timed under the same
  kind of load; run (and timed) once before PyDial and once after it, so a change in the load
  from other jobs during PyDial's long run shows (the seeded trials must give identical curves).

Prints the test success rate (TSR) per seed and the mean at every point, and the training speed
of both: dialogues/s per process, training only (evaluation excluded; PyDial's figure includes
building its simulation system and saving the policy at the end of each batch, which it does as
part of training), and the ratio behavsim / PyDial3 measured in this run (behavsim's two
timings pooled, and each alone). Skipped, saying so, when there is no PyDial root.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from functools import reduce
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HELPER = Path(__file__).resolve().with_name("_pydial_learn.py")
PYDIAL_CONFIG = "env1-configs/env1-gp-CR.cfg"
# one BLAS thread per process, as behavsim's training runner does
_ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def _pydial_seed(root: Path, seed: int, points: list[int], n_eval: int, timeout: float) -> dict:
    """One seed of PyDial's learning curve, by the helper in a fresh process (cwd = the root copy)."""
    out = root / f"_bslearn-seed{seed}.json"
    cmd = [
        sys.executable,
        "_bs_pydial_learn.py",
        "--config",
        PYDIAL_CONFIG,
        "--seed",
        str(seed),
        "--points",
        *map(str, points),
        "--eval-dialogues",
        str(n_eval),
        "--out",
        out.name,
    ]
    t0 = time.perf_counter()
    r = subprocess.run(
        cmd, cwd=root, env={**os.environ, **_ONE_THREAD}, capture_output=True, text=True, timeout=timeout
    )
    if r.returncode != 0 or not out.is_file():
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"PyDial (seed {seed}) failed with exit code {r.returncode}:\n{tail}")
    res = json.loads(out.read_text())
    res["pid_wall_seconds"] = time.perf_counter() - t0
    return res


def run_pydial(src: Path, seeds: list[int], points: list[int], n_eval: int, workers: int) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bs-pydial-learn-") as tmp:
        root = Path(tmp) / "pydial3"
        shutil.copytree(src, root, ignore=shutil.ignore_patterns(".git", "_bslogs", "_bslearn*"))
        shutil.copy(HELPER, root / "_bs_pydial_learn.py")
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_pydial_seed, root, s, points, n_eval, 3600.0) for s in seeds]
            return [f.result() for f in futures]


def run_ours(seeds: list[int], points: list[int], n_eval: int, workers: int) -> list[dict]:
    """Our trials through the training runner; per seed the rows at ``points`` and the training time."""
    from policies.training.train import TrainConfig, run_training

    every = reduce(math.gcd, points)
    config = TrainConfig(
        rewards=("ts",),
        seeds=tuple(seeds),
        dialogues=max(points),
        checkpoint_every=every,
        eval_dialogues=n_eval,
        scale=3.0,
        eval_scale=1.0,
        domain="camrestaurants",
        user="env1",
    )
    with tempfile.TemporaryDirectory(prefix="bs-learn-") as tmp:
        rows = run_training(config, Path(tmp) / "run", workers=workers, progress=False)
    out = []
    for s in seeds:
        mine = [r for r in rows if r["seed"] == s]
        by_n = {r["dialogues"]: r for r in mine}
        out.append(
            {
                "seed": s,
                "points": [
                    {
                        "dialogues": n,
                        "tsr": by_n[n]["tsr"],
                        "adl": by_n[n]["adl"],
                        "mean_reward": by_n[n]["mean_reward"],
                        "dictionary_size": by_n[n]["dictionary_size"],
                    }
                    for n in points
                ],
                "train_seconds": sum(r["train_seconds"] for r in mine),
                "train_dialogues": max(points),
            }
        )
    return out


def _speed(per_seed: list[dict]) -> tuple[float, float, list[float]]:
    """(total training dialogues, total training seconds, dialogues/s per seed)."""
    n = [p["train_dialogues"] for p in per_seed]
    t = [p["train_seconds"] for p in per_seed]
    return sum(n), sum(t), [a / b for a, b in zip(n, t)]


def _pydial_speed_rows(res: list[dict]) -> list[dict]:
    return [
        {
            "train_dialogues": sum(p["train_dialogues"] for p in r["points"]),
            "train_seconds": sum(p["train_seconds"] for p in r["points"]),
        }
        for r in res
    ]


def _per(xs, fmt: str = ".2f") -> str:
    return " / ".join(format(x, fmt) for x in xs)


def report(
    pyd: list[dict], ours: list[dict], ours_after: list[dict], points: list[int], n_eval: int, workers: int
) -> dict:
    seeds = [r["seed"] for r in ours]
    print(
        f"GP-SARSA learning curves: CamRestaurants, Environment 1, R_TS, training scale 3; TSR on {n_eval} "
        f"evaluation dialogues (learning off, scale 1) per point; seeds {' '.join(map(str, seeds))}"
    )
    print(
        "\n| training dialogues | PyDial3 TSR per seed | PyDial3 mean | behavsim TSR per seed | behavsim mean "
        "| ADL PyDial3 / behavsim | dictionary PyDial3 / behavsim |"
    )
    print("|---|---|---|---|---|---|---|")
    curve = []
    for k, n in enumerate(points):
        p = [r["points"][k] for r in pyd]
        o = [r["points"][k] for r in ours]
        pm = sum(x["tsr"] for x in p) / len(p)
        om = sum(x["tsr"] for x in o) / len(o)
        padl = sum(x["adl"] for x in p) / len(p)
        oadl = sum(x["adl"] for x in o) / len(o)
        pd_ = sum(x["dictionary_size"] for x in p) / len(p)
        od_ = sum(x["dictionary_size"] for x in o) / len(o)
        print(
            f"| {n:,} | {_per(x['tsr'] for x in p)} | {pm:.3f} | {_per(x['tsr'] for x in o)} | {om:.3f} | "
            f"{padl:.2f} / {oadl:.2f} | {pd_:.0f} / {od_:.0f} |"
        )
        curve.append(
            {
                "dialogues": n,
                "pydial_tsr": [x["tsr"] for x in p],
                "pydial_mean": pm,
                "behavsim_tsr": [x["tsr"] for x in o],
                "behavsim_mean": om,
            }
        )
    pn, pt, pper = _speed(_pydial_speed_rows(pyd))
    prate = pn / pt
    print(f"\nTraining speed (training only, per process, {workers} process(es) at a time):")
    print(
        f"  PyDial3               : {pn:,} dialogues in {pt:7.1f} s = {prate:7.2f} dialogues/s "
        f"(per seed {_per(pper)}; logging at its quietest)"
    )
    speed = {"pydial_dialogues_per_s": prate, "workers": workers}
    for label, key, runs in (("before PyDial", "before", [ours]), ("after PyDial", "after", [ours_after])):
        on, ot, oper = _speed(runs[0])
        print(
            f"  behavsim, {label:13s}: {on:,} dialogues in {ot:7.1f} s = {on / ot:7.1f} dialogues/s "
            f"(per seed {_per(oper, '.0f')}) = {on / ot / prate:.0f}x PyDial3"
        )
        speed[f"behavsim_{key}_dialogues_per_s"] = on / ot
    on, ot, _ = _speed(ours + ours_after)
    orate = on / ot
    speed.update(behavsim_dialogues_per_s=orate, ratio=orate / prate)
    same = [r["points"] for r in ours] == [r["points"] for r in ours_after]
    print(f"  ratio behavsim / PyDial3 (both behavsim timings pooled): {orate / prate:.0f}x")
    print(f"  behavsim's two runs gave {'identical' if same else 'DIFFERENT'} curves (trials are seeded)")
    return {
        "curve": curve,
        "pydial": pyd,
        "behavsim": ours,
        "behavsim_after": ours_after,
        "speed": speed,
        "behavsim_reproduced": same,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_root = str(Path(os.environ.get("BEHAVSIM_SHARED") or REPO.parent / "shared") / "pydial3")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of both (default 0 1 2)")
    ap.add_argument(
        "--points",
        type=int,
        nargs="+",
        default=[100, 200, 500, 1000],
        help="training dialogues at which to evaluate (default 100 200 500 1000)",
    )
    ap.add_argument("--eval-dialogues", type=int, default=100, help="evaluation dialogues per point (default 100)")
    ap.add_argument("--pydial-root", default=default_root, help="PyDial3 root (default: %(default)s)")
    ap.add_argument(
        "--workers",
        type=int,
        default=min(3, os.cpu_count() or 1),
        help="processes at a time for each side (default: cores, at most 3)",
    )
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = ap.parse_args(argv)
    points = sorted(set(args.points))
    if points[0] < 1 or args.eval_dialogues < 1 or args.workers < 1 or len(set(args.seeds)) != len(args.seeds):
        ap.error("points, --eval-dialogues and --workers must be positive and the seeds distinct")
    src = Path(args.pydial_root)
    if not (src / "policy" / "GPPolicy.py").is_file():
        print(f"skipped: no PyDial3 root at {src} (pass --pydial-root or set BEHAVSIM_SHARED)")
        return 0
    workers = min(args.workers, len(args.seeds))

    t0 = time.perf_counter()
    ours = run_ours(args.seeds, points, args.eval_dialogues, workers)
    t1 = time.perf_counter()
    try:
        pyd = run_pydial(src, args.seeds, points, args.eval_dialogues, workers)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    t2 = time.perf_counter()
    ours_after = run_ours(args.seeds, points, args.eval_dialogues, workers)
    t3 = time.perf_counter()
    res = report(pyd, ours, ours_after, points, args.eval_dialogues, workers)
    res["wall_seconds"] = {"behavsim": t1 - t0, "pydial": t2 - t1, "behavsim_after": t3 - t2, "total": t3 - t0}
    print(
        f"  wall time with evaluations: behavsim {t1 - t0:.1f} s + {t3 - t2:.1f} s, PyDial3 {t2 - t1:.1f} s; "
        f"whole benchmark {(t3 - t0) / 60:.1f} min"
    )
    if args.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
