"""Benchmark of the ``pydial:`` adapter on the 1,296-context CamRestaurants grid (step 0.2).

Runs PyDial's trained GP policy (``env1-configs/adapter-gp.cfg``) with template prompts and
without (``:nlg=off``) in one process, prints contexts/s for each, and checks that the acts of
both runs are equal. The baseline, in the same run: with prompts, PyDial's logger finding its
caller's place as PyDial does (``inspect.getouterframes``, reading the source of every frame)
instead of the adapter's frame-based lookup; the ratio to it is printed::

    python benchmarks/pydial_adapter.py                      # ../shared/pydial3 beside the repo
    python benchmarks/pydial_adapter.py --pydial-root DIR    # or $BEHAVSIM_SHARED/pydial3

PyDial writes into its root, so the benchmark runs on a temporary copy of it. Skipped, saying
so, when there is no PyDial root.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_root = str(Path(os.environ.get("BEHAVSIM_SHARED") or REPO.parent / "shared") / "pydial3")
    ap.add_argument("--pydial-root", default=default_root, help="PyDial3 root (default: %(default)s)")
    ap.add_argument("--config", default="env1-configs/adapter-gp.cfg", help="config, relative to the root")
    ap.add_argument("--step", type=float, default=0.2, help="grid step (default 0.2: 1,296 contexts)")
    args = ap.parse_args(argv)
    src = Path(args.pydial_root)
    if not (src / "policy" / "GPPolicy.py").is_file():
        print(f"skipped: no PyDial3 root at {src} (pass --pydial-root or set BEHAVSIM_SHARED)")
        return 0

    import contextlib

    from behavsim import respond
    from contexts import generate_grid
    from policies.pydial import _adapter as _pydial

    contexts = generate_grid("camrestaurants", step=args.step)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pydial3"
        shutil.copytree(src, root, ignore=shutil.ignore_patterns(".git", "_bslogs"))
        cfg = root / args.config
        tables, seconds = {}, {}
        quick = _pydial._quick_log_location
        runs = (
            ("baseline: PyDial's lookup", f"pydial:{cfg}", contextlib.nullcontext),
            ("with prompts", f"pydial:{cfg}", quick),
            ("without prompts (nlg=off)", f"pydial:{cfg}:nlg=off", quick),
        )
        for label, spec, lookup in runs:
            _pydial._quick_log_location = lookup  # type: ignore[assignment]
            try:
                t0 = time.perf_counter()
                tables[label] = table = respond(spec, contexts, pydial_root=root, progress=False)
                seconds[label] = dt = time.perf_counter() - t0
            finally:
                _pydial._quick_log_location = quick
            ratio = seconds[runs[0][0]] / dt
            print(
                f"{label:28s} {len(contexts)} contexts in {dt:6.2f} s = {len(contexts) / dt:7.1f} contexts/s "
                f"({ratio:4.2f}x the baseline; errors {table.n_errors}, "
                f"distinct prompts {len({p for p in table.prompts if p is not None})})"
            )
        acts = [t.acts for t in tables.values()]
        if any(a != acts[0] for a in acts):
            print("MISMATCH: the acts differ between the runs", file=sys.stderr)
            return 1
        if tables[runs[0][0]].prompts != tables[runs[1][0]].prompts:
            print("MISMATCH: the prompts differ from the baseline's", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
