"""Scale-out benchmark: the same job on local process pools and on Ray, and a projection.

Prints, in one run:

1. the overhead per task: an empty task mapped ``--tasks`` times on ``local:W`` and on ``ray``;
2. the same job on both executors — ``respond_many`` of the checkpoints of a small training on
   the grid (step ``--step``) on ``local:W`` and on Ray, then the pair scoring of
   ``compare`` (all eight scores, only the means kept) in this process and as Ray tasks — wall times, and that
   the results are identical;
3. the projected time of a large study (``--checkpoints`` checkpoints × the fine grid's 14,641
   contexts, all eight scores) on 1…N nodes of ``--cores`` cores, from the per-context respond
   cost, the per-combination cost of each score and the per-task overhead measured above.

Ray must keep to the loopback: run it inside a private network namespace (as root)::

    unshare -n bash -c 'ip link set lo up; python benchmarks/scale.py'

``--executor ray:HOST:PORT`` measures an existing cluster instead of a Ray started here.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# a Ray started here stays on the loopback of its namespace: no token written to ~/.ray
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

from behavsim import Executor, compare, get_executor, list_scores, respond_many, score_info  # noqa: E402
from behavsim._scoring_tasks import COMBINATIONS_PER_TASK  # noqa: E402  # private: the task size the estimate uses

FINE_GRID = 14_641  # contexts of the grid at step 0.1


def _noop(x: int) -> int:
    return x


class _Counting(Executor):
    """An executor that counts the tasks it hands on."""

    def __init__(self, inner: Executor) -> None:
        self.inner, self.kind, self.spec, self.tasks = inner, inner.kind, inner.spec, 0

    def map(self, fn, items, **kw):
        items = list(items)
        self.tasks += len(items)
        return self.inner.map(fn, items, **kw)


def _timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def _train(tmp: Path, dialogues: int, seeds: int) -> list[str]:
    from policies.training.train import TrainConfig, run_training

    cfg = TrainConfig(seeds=tuple(range(seeds)), dialogues=dialogues, checkpoint_every=dialogues // 4, eval_dialogues=2)
    run_training(cfg, tmp / "train", progress=False)
    return sorted(str(p) for p in (tmp / "train").rglob("ckpt-*.npz"))


def _pairs_of_large_study(checkpoints: int, seeds: int = 3, rewards: int = 2) -> int:
    """Compared pairs of a study shaped like the paper's: consecutive checkpoints of each trial,
    every pair of seeds of one reward at each checkpoint, every TS trial against every IQ trial
    at the last checkpoint."""
    trials = seeds * rewards
    per_trial = checkpoints // trials
    return trials * (per_trial - 1) + rewards * per_trial * seeds * (seeds - 1) // 2 + seeds * seeds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executor", default="ray", help="the Ray executor to measure (default: a Ray started here)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local workers (default: the cores)")
    ap.add_argument("--tasks", type=int, default=200, help="empty tasks for the overhead (default 200)")
    ap.add_argument("--step", type=float, default=0.2, help="grid step of the measured job (default 0.2)")
    ap.add_argument("--dialogues", type=int, default=200, help="training dialogues per trial (default 200)")
    ap.add_argument("--seeds", type=int, default=2, help="trials of the measured job (default 2)")
    ap.add_argument("--checkpoints", type=int, default=240, help="checkpoints of the projected study (default 240)")
    ap.add_argument("--cores", type=int, default=16, help="cores per node in the projection (default 16)")
    args = ap.parse_args(argv)

    from contexts import generate_grid

    local = get_executor(f"local:{args.workers}")
    remote = get_executor(args.executor)
    if remote.is_local:
        sys.exit("--executor: name a Ray executor (ray or ray:ADDRESS)")
    items = list(range(args.tasks))
    # no embedding cache: each run embeds its prompts (a model per worker), as a first run does
    cold = {n: {"cache": False} for n in list_scores() if score_info(n).needs_model}
    with tempfile.TemporaryDirectory(prefix="behavsim-scale-") as tmp:
        # the local runs first: a process that has started Ray does not fork well
        ckpts = _train(Path(tmp), args.dialogues, args.seeds)
        cs = generate_grid(step=args.step)
        specs = [f"checkpoint:{p}:nlg_seed={i}" for i, p in enumerate(ckpts)]  # varied wording
        local.map(_noop, items[:4])
        _, t_noop_local = _timed(local.map, _noop, items)
        tables, t_resp_local = _timed(respond_many, specs, cs, executor=local)
        comp, t_cmp_here = _timed(compare, tables, "all", score_options=cold, per_context=False)  # models loaded here

        _, t_connect = _timed(remote.connect)
        nodes = remote.nodes()  # type: ignore[attr-defined]
        remote.map(_noop, items[:4])  # Ray workers started
        _, t_noop_ray = _timed(remote.map, _noop, items)
        tables_r, t_resp_ray = _timed(respond_many, specs, cs, executor=remote)
        counting = _Counting(remote)
        comp_r, t_cmp_ray = _timed(compare, tables, "all", score_options=cold, per_context=False, executor=counting)

        print(f"executors: {local.spec} and {remote.spec} ({nodes} node(s); connecting took {t_connect:.1f} s)")
        print(f"\n1. overhead per task ({args.tasks} empty tasks)")
        for ex, t in ((local, t_noop_local), (remote, t_noop_ray)):
            print(f"   {ex.spec:<10} {t:7.2f} s   {1000 * t / args.tasks:7.2f} ms per task")
        overhead = t_noop_ray / args.tasks
        print(
            f"\n2. the same job: {len(specs)} checkpoints on {len(cs):,} contexts, then all {len(list_scores())} scores"
        )
        same_tables = [(t.header(), t.rows()) for t in tables] == [(t.header(), t.rows()) for t in tables_r]
        print(
            f"   respond  {local.spec:<10} {t_resp_local:7.2f} s   {remote.spec:<10} {t_resp_ray:7.2f} s"
            f"   ({len(specs)} tasks; tables identical: {same_tables})"
        )
        same = comp.means.equals(comp_r.means)
        prompts = len({p for t in tables for p in t.prompts if p is not None})
        print(
            f"   compare  here       {t_cmp_here:7.2f} s   {remote.spec:<10} {t_cmp_ray:7.2f} s   ({len(comp.means)} pairs, "
            f"{prompts} distinct prompts; {counting.tasks} tasks of up to {COMBINATIONS_PER_TASK:,} combinations; "
            f"no embedding cache, models loaded by each process; means identical: {same})"
        )

        # 3. projection from measured per-unit costs
        n_pairs = len(comp.means)
        cells = n_pairs * len(cs)
        respond_per_ctx = t_resp_local * args.workers / (len(specs) * len(cs))  # one core's seconds per context
        score_time = sum(v for k, v in comp.timings.items() if k in list_scores())
        # distinct combinations per cell, measured: the scoring cost per cell of the measured job
        score_per_cell = score_time / cells
    large_pairs = _pairs_of_large_study(args.checkpoints)
    respond_core_s = respond_per_ctx * args.checkpoints * FINE_GRID
    score_core_s = score_per_cell * large_pairs * FINE_GRID
    respond_tasks = args.checkpoints
    # as many scoring tasks per cell as measured (an upper bound: distinct combinations grow slower than cells)
    score_tasks = max(1, round(counting.tasks * large_pairs * FINE_GRID / cells))
    print(
        f"\n3. projected: {args.checkpoints} checkpoints x {FINE_GRID:,} contexts, {large_pairs} compared pairs, "
        f"all eight scores\n   measured: respond {1e6 * respond_per_ctx:.1f} µs per context per core; scoring "
        f"{1e6 * score_per_cell:.2f} µs per (pair, context) cell (distinct combinations only, as measured); "
        f"{1000 * overhead:.1f} ms per task"
    )
    print(f"   {'nodes':>5} {'cores':>6} {'respond':>10} {'scoring':>10} {'overhead':>9} {'total':>10}")
    for n in (1, 2, 4, 8, 16, 32):
        cores = n * args.cores
        r = respond_core_s / min(cores, respond_tasks)
        s = score_core_s / cores
        o = overhead * (respond_tasks + score_tasks) / cores
        print(f"   {n:>5} {cores:>6} {r / 60:8.1f} m {s / 60:8.1f} m {o:7.1f} s {(r + s + o) / 60:8.1f} m")
    print(
        "   (training not included: one task per trial, as long as the longest trial; the compare and analysis "
        "stage of `reproduce` runs on the driver)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
