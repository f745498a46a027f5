"""Benchmark of ``behavsim.compare(tables, None, matrix=True)`` (all-pairs matrices in bounded memory) against
``behavsim.compare(pairs="all")`` (one row per pair and context).

P synthetic policies answer N contexts (default 60 x 14,641, the 0.1-step grid) with the
realistic restaurant-domain act vocabulary of ``benchmarks/engine.py`` (each policy deviates from
a shared base behaviour on 15-40 % of the contexts, so pairs agree on most contexts), and 2 % of
each policy's contexts are failures (act missing). Without ``--text`` the prompts are left out
(``None``) and the four act scores are run; ``--text`` adds template prompts and the four text
scores (USE cosine/angular, BLEU-4, BERTScore; default models, a fresh embedding cache).

1. the matrices on all P policies (P x P matrices, self-pairs included): time and the peak
   of traced memory during the call (``tracemalloc``, a second run; numpy reports its buffers).
2. On the first ``--engine-policies`` policies (a subset the engine can hold in memory):
   ``compare(pairs="all")`` and the matrices, the same two figures each, their ratio, and
   the largest difference between the engine's pair means and the matrix's upper triangle.

Run: ``python benchmarks/engine_matrix.py [--policies 60] [--contexts 14641] [--engine-policies 20] [--text]``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from engine import make_policies  # noqa: E402  (the shared synthetic policies)

ACT_SCORES = ["TMR", "DMR", "CER", "CMR"]
TEXT_SCORES = ["USE_cos", "USE_ang", "BLEU4", "BERTScore"]


def measure(fn):
    """(seconds of one run, peak traced MB of a second run, the first run's result)."""
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / 2**20, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", type=int, default=60)
    ap.add_argument("--contexts", type=int, default=14641)
    ap.add_argument("--engine-policies", type=int, default=20, help="policies of the subset the engine also runs")
    ap.add_argument("--failures", type=float, default=0.02, help="share of failed contexts per policy")
    ap.add_argument("--text", action="store_true", help="include the four text scores (prompts from templates)")
    ap.add_argument("--chunk-contexts", type=int, default=None)
    args = ap.parse_args()

    os.environ["BEHAVSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="behavsim-bench-cache-")
    from behavsim import ResponseTable, compare, context_fingerprint

    def compare_matrix(ts, **options):
        return compare(ts, None, matrix=True, **options)

    policies = make_policies(args.policies, args.contexts)
    fp = context_fingerprint({"i": i} for i in range(args.contexts))
    tables = []
    for k, (acts, prompts) in enumerate(policies):
        rnd = random.Random(5000 + k)
        fail = [rnd.random() < args.failures for _ in acts]
        tables.append(
            ResponseTable(
                policy={"id": f"pol{k:02d}"},
                context_fingerprint=fp,
                acts=[None if f else a for a, f in zip(acts, fail)],
                prompts=[None if f or not args.text else p for p, f in zip(prompts, fail)],
                errors=["RuntimeError: synthetic failure" if f else None for f in fail],
            )
        )
    scores = ACT_SCORES + (TEXT_SCORES if args.text else [])
    n_acts = len({a for t in tables for a in t.acts if a is not None})
    n_prompts = len({p for t in tables for p in t.prompts if p is not None})
    p, n = args.policies, args.contexts
    print(
        f"job: {p} policies x {n:,} contexts, scores {', '.join(scores)}; {n_acts:,} distinct acts"
        + (f", {n_prompts:,} distinct prompts" if args.text else "")
    )
    if args.text:  # load the models and embed every prompt once, outside the timings
        compare_matrix(tables, scores=scores, progress=False)

    def run_matrix(ts):
        return lambda: compare_matrix(ts, scores=scores, chunk_contexts=args.chunk_contexts, progress=False)

    sec, peak, mc = measure(run_matrix(tables))
    print(
        f"matrices, all {p} policies ({p * p:,} ordered pairs incl. self-pairs, "
        f"chunk {mc.chunk_contexts} contexts): {sec:7.2f} s, peak {peak:8.1f} MB"
    )
    print("  timings: " + ", ".join(f"{k} {v:.2f}s" for k, v in mc.timings.items()))
    combos = {f"{mc.n_distinct[s]:,}": None for s in scores}
    print(f"  distinct answer combinations scored (acts{', prompts' if args.text else ''}): {', '.join(combos)}")

    sub = tables[: args.engine_policies]
    q = len(sub)
    e_sec, e_peak, comp = measure(lambda: compare(sub, "all", scores=scores, progress=False))
    m_sec, m_peak, msub = measure(run_matrix(sub))
    print(f"subset: {q} policies x {n:,} contexts ({q * (q - 1) // 2} unordered pairs = {q * (q - 1) // 2 * n:,} rows)")
    print(f"  compare(pairs='all'): {e_sec:7.2f} s, peak {e_peak:8.1f} MB")
    print(f"  matrices:             {m_sec:7.2f} s, peak {m_peak:8.1f} MB  ({q * q} ordered pairs incl. self-pairs)")
    print(f"  ratio engine / matrix: time {e_sec / m_sec:.1f}x, peak memory {e_peak / m_peak:.1f}x")
    worst = 0.0
    for name in scores:
        m = msub.matrices[name]
        for a, b, v in zip(comp.means["a"], comp.means["b"], comp.means[name]):
            w = m.loc[a, b]
            if np.isnan(v) or np.isnan(w):
                assert np.isnan(v) and np.isnan(w), (name, a, b)
                continue
            worst = max(worst, abs(w - v))
        missing = comp.means[[f"n_missing_{name}"]].to_numpy().ravel()
        got = np.array([msub.n_missing[name].loc[a, b] for a, b in zip(comp.means["a"], comp.means["b"])])
        assert (missing == got).all(), name
    print(f"  largest |matrix - engine| over the subset's pair means: {worst:.1e} (n_missing equal)")


if __name__ == "__main__":
    main()
