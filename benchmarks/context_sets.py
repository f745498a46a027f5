"""Speed of the context-set builders.

Times (best of ``--repeat`` runs, wall clock, one process): generating C_gen at step 0.2
(1,296 contexts) and 0.1 (14,641), its fingerprint, saving/loading it as JSONL and Parquet, the
belief-layout check that load and save run (alone, and as a share of the JSONL load), and collecting C_col from ``--dialogues`` handcrafted dialogues (and from a GP checkpoint if
``--checkpoint`` is given).

    python benchmarks/context_sets.py [--dialogues 30] [--repeat 3] [--checkpoint CKPT]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

# this file is named like the package it measures: keep its folder off the import path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from behavsim import ContextSet, belief_problem  # noqa: E402
from contexts import collect, generate_grid  # noqa: E402


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialogues", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--checkpoint", help="a GP checkpoint to collect from as well")
    args = ap.parse_args(argv)

    res: dict[str, float] = {}
    print(f"CPython {platform.python_version()} on {platform.machine()}, best of {args.repeat}")
    for step in (0.2, 0.1):
        t, cs = _best(lambda step=step: generate_grid(step=step), args.repeat)
        res[f"generate_{step}"] = t
        tf, _ = _best(lambda cs=cs: ContextSet(cs.beliefs).fingerprint, args.repeat)
        res[f"fingerprint_{step}"] = tf
        print(
            f"generate step {step}: {len(cs):>6,} contexts in {t * 1e3:8.1f} ms "
            f"({t / len(cs) * 1e6:.1f} µs/context); fingerprint {tf * 1e3:.1f} ms"
        )
    with tempfile.TemporaryDirectory() as d:
        for suffix in (".jsonl", ".parquet"):
            path = Path(d) / f"cgen{suffix}"
            ts, _ = _best(lambda path=path: cs.save(path), 1)
            tl, _ = _best(lambda path=path: ContextSet.load(path), 1)
            res[f"save{suffix}"], res[f"load{suffix}"] = ts, tl
            print(
                f"{len(cs):,} contexts {suffix:<8}: save {ts:.2f} s, load {tl:.2f} s, "
                f"{path.stat().st_size / 1e6:.1f} MB"
            )
    # the belief-layout check that load (and save) runs on every belief, timed alone in this run
    tc, _ = _best(lambda: [belief_problem(b) for b in cs.beliefs], args.repeat)
    res["layout_check"] = tc
    print(
        f"layout check of the {len(cs):,} beliefs: {tc:.2f} s ({tc / res['load.jsonl']:.0%} of the JSONL load, "
        f"{tc / len(cs) * 1e6:.0f} µs/belief)"
    )
    t, col = _best(lambda: collect("handcrafted", dialogues=args.dialogues, seed=0), args.repeat)
    res["collect_handcrafted"] = t
    print(
        f"collect handcrafted, {args.dialogues} dialogues: {len(col)} contexts in {t * 1e3:.1f} ms "
        f"({t / args.dialogues * 1e3:.2f} ms/dialogue)"
    )
    if args.checkpoint:
        t, col = _best(lambda: collect([args.checkpoint], dialogues=args.dialogues, seed=0), args.repeat)
        res["collect_checkpoint"] = t
        print(f"collect {args.checkpoint}, {args.dialogues} dialogues: {len(col)} contexts in {t * 1e3:.1f} ms")
    return res


if __name__ == "__main__":
    main()
