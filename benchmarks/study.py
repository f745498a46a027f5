"""Wall time of the quick study end to end, and the projected time of the paper-scale study.

    python benchmarks/study.py            # runs the quick config in a temporary folder, cold caches
    python benchmarks/study.py --paper    # also runs the paper config (about 5-10 minutes)
    python benchmarks/study.py --e2e      # also runs the end-to-end study (about 20-35 minutes)
    python benchmarks/study.py --e2e --keep runs/bench  # keeps the run folders (runs/bench/e2e: the README's tables)

The projection scales each stage of the quick run by the work it does: training by the number of
training + evaluation dialogues, responding by the number of response tables, comparing and
analysing by the number of compared pairs (the embedding of distinct prompts is counted in the
quick run's comparison time, so the projection is an upper bound for it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def _run(config: str, out: Path) -> tuple[float, dict]:
    from experiments.study import load_config, run_study

    t0 = time.perf_counter()
    run_study(load_config(config), out, log=lambda m: None)
    wall = time.perf_counter() - t0
    return wall, json.loads((out / "timings.json").read_text())["stage_seconds"]


def _work(cfg) -> dict[str, float]:
    n_trials = len(cfg.rewards) * len(cfg.seeds)
    n_ckpt = cfg.dialogues // cfg.checkpoint_every
    dialogues = n_trials * (cfg.dialogues + n_ckpt * cfg.eval_dialogues)
    tables = (n_trials * n_ckpt + 1) * (len(cfg.rewards) + 2)
    seeds_pairs = len(cfg.seeds) * (len(cfg.seeds) - 1) // 2
    pairs = n_trials * (n_ckpt - 1) * 2 + len(cfg.rewards) * n_ckpt * seeds_pairs * 2 + len(cfg.seeds) ** 2
    return {"train": dialogues, "respond": tables, "compare": pairs, "analyse": pairs}


@contextlib.contextmanager
def _folder(keep: str | None) -> Iterator[str]:
    """Where the runs go: ``keep`` (made if missing; give an empty one: a run already there resumes), or a temporary folder."""
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory() as d:
        yield d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paper", action="store_true", help="also run the paper config for real")
    ap.add_argument("--e2e", action="store_true", help="also run the end-to-end study (config e2e)")
    ap.add_argument("--keep", metavar="DIR", help="keep the run folders in DIR (default: temporary, removed)")
    args = ap.parse_args()
    os.environ["BEHAVSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="behavsim-bench-cache-")
    from experiments.study import load_config

    with _folder(args.keep) as d:
        wall, stages = _run("quick", Path(d) / "quick")
    print(f"quick study, end to end (cold caches): {wall:.1f} s")
    print("  stages: " + ", ".join(f"{k} {v:.1f}s" for k, v in stages.items()))
    q, p = _work(load_config("quick")), _work(load_config("paper"))
    proj = {k: stages.get(k, 0.0) * (p[k] / q[k]) for k in q}
    rest = sum(v for k, v in stages.items() if k not in q)
    total = sum(proj.values()) + rest
    print(
        "paper study, projected: "
        + ", ".join(f"{k} {v:.0f}s (x{p[k] / q[k]:.1f} work)" for k, v in proj.items())
        + f", other stages {rest:.0f}s -> {total / 60:.1f} min"
    )
    if args.paper:
        with _folder(args.keep) as d:
            wall_p, stages_p = _run("paper", Path(d) / "paper")
        print(
            f"paper study, measured: {wall_p / 60:.1f} min ("
            + ", ".join(f"{k} {v:.0f}s" for k, v in stages_p.items())
            + f"); projection/measured = {total / wall_p:.2f}"
        )
    if args.e2e:
        with _folder(args.keep) as d:
            wall_e, stages_e = _run("e2e", Path(d) / "e2e")
        print(
            f"end-to-end study, measured: {wall_e / 60:.1f} min ("
            + ", ".join(f"{k} {v:.0f}s" for k, v in stages_e.items())
            + f"); {wall_e / wall:.1f}x the quick study"
        )


if __name__ == "__main__":
    main()
