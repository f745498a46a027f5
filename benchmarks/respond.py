"""Benchmark of step 2 (respond) next to step 3 (scoring) on the paper's generated grid.

Responds 3 GP-SARSA checkpoints on the 1,296-context grid (step 0.2) — serially and with
``respond_many`` — and times ``behavsim.compare`` on the same 3 tables (3 pairs, the chosen
scores), printing seconds, contexts/s and the ratio scoring / responding::

    python benchmarks/respond.py                          # trains 3 tiny checkpoints first
    python benchmarks/respond.py --checkpoints runs/paper # any 3 ckpt-*.npz found there
    python benchmarks/respond.py --scores TMR DMR CER CMR # semantic scores only

The tiny checkpoints (``--dialogues`` training dialogues, default 300, seeds 0-2) have small GP
dictionaries; a decision costs O(dictionary size), so fully trained policies respond slower.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def _grid(step: float):
    try:
        from contexts import generate_grid
    except ImportError:  # before the contexts package existed
        import itertools

        from behavsim import ContextSet
        from policies.simulation.domain import Domain
        from policies.simulation.tracker import make_belief

        d = Domain.builtin()
        n = round(1 / step)
        levels = [round(i * step, 10) for i in range(n + 1)]
        return ContextSet([make_belief(d, {"area": {"centre": a}, "pricerange": {"cheap": p}, "food": {"italian": f}},
                                       method={"byconstraints": m})
                           for a, p, f, m in itertools.product(levels, repeat=4)])
    return generate_grid(step=step)


def _checkpoints(args: argparse.Namespace, tmp: Path) -> list[str]:
    if args.checkpoints:
        found = sorted(Path(args.checkpoints).rglob("ckpt-*.npz"))
        if len(found) < 3:
            sys.exit(f"need 3 checkpoints under {args.checkpoints}, found {len(found)}")
        # the last checkpoint of up to three trials, else the last three
        by_trial: dict[Path, Path] = {}
        for p in found:
            by_trial[p.parent] = p
        picked = list(by_trial.values())[:3] if len(by_trial) >= 3 else found[-3:]
        return [str(p) for p in picked]
    from policies.training.train import TrainConfig, run_training

    t0 = time.perf_counter()
    run_training(TrainConfig(rewards=("ts",), seeds=(0, 1, 2), dialogues=args.dialogues,
                             checkpoint_every=args.dialogues, eval_dialogues=10), tmp / "run", progress=False)
    print(f"trained 3 tiny checkpoints ({args.dialogues} dialogues each) in {time.perf_counter() - t0:.1f} s")
    return [str(p) for p in sorted((tmp / "run").rglob("ckpt-*.npz"))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoints", metavar="DIR", help="use checkpoints found in DIR instead of training tiny ones")
    ap.add_argument("--dialogues", type=int, default=300, help="training dialogues of the tiny checkpoints")
    ap.add_argument("--step", type=float, default=0.2, help="grid step (0.2: 1,296 contexts)")
    ap.add_argument("--scores", nargs="+", default=None, help="scores for compare (default: all eight)")
    ap.add_argument("--repeat", type=int, default=3, help="best of N for the respond timings")
    ap.add_argument("--no-cache", action="store_true", help="embed prompts afresh (no on-disk embedding cache)")
    args = ap.parse_args(argv)

    from behavsim import DEFAULT_SCORES, compare, load_policy
    from behavsim.policy import respond, respond_many

    contexts = _grid(args.step)
    with tempfile.TemporaryDirectory() as d:
        ckpts = _checkpoints(args, Path(d))
        adapters = [load_policy(c) for c in ckpts]
        sizes = [a.policy.learner.dictionary_size for a in adapters]
        print(f"contexts: {len(contexts)} (grid step {args.step}); checkpoints: {[a.id for a in adapters]}, "
              f"GP dictionary sizes {sizes}; cores: {os.cpu_count()}")

        def best(fn):
            times, out = [], None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                out = fn()
                times.append(time.perf_counter() - t0)
            return min(times), out

        t_load, _ = best(lambda: [load_policy(c) for c in ckpts])
        t_serial, tables = best(lambda: [respond(a, contexts, progress=False) for a in adapters])
        t_many, many = best(lambda: respond_many(ckpts, contexts, progress=False))
        assert [t.acts for t in many] == [t.acts for t in tables]
        n = len(ckpts) * len(contexts)
        print(f"load 3 checkpoints          {t_load:8.3f} s")
        print(f"respond serial (3 x {len(contexts)})   {t_serial:8.3f} s  {n / t_serial:10,.0f} contexts/s")
        print(f"respond_many ({min(3, os.cpu_count() or 1)} workers)      {t_many:8.3f} s  {n / t_many:10,.0f} contexts/s "
              "(incl. process start and loading)")

        scores = args.scores or list(DEFAULT_SCORES)
        opts = {s: {"cache": False} for s in ("USE_cos", "USE_ang", "BERTScore") if s in scores} if args.no_cache else {}
        t0 = time.perf_counter()
        compare(tables, "all", scores=scores, score_options=opts, progress=False)
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        comp = compare(tables, "all", scores=scores, score_options=opts, progress=False)
        t_score = time.perf_counter() - t0
        pairs = len(comp.means)
        print(f"compare {pairs} pairs, {len(scores)} scores   {t_score:8.3f} s  "
              f"{pairs * len(contexts) / t_score:10,.0f} context pairs/s "
              f"(first call {t_first:.3f} s incl. model loading and embedding)")
        print(f"ratio scoring / respond (serial): {t_score / t_serial:.2f}; first scoring call / respond: "
              f"{t_first / t_serial:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
