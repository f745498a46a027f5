"""Benchmark of step 2 (respond) next to step 3 (scoring) on the paper's generated grid.

Responds 3 GP-SARSA checkpoints on the 1,296-context grid (step 0.2) — serially and with
``respond_many`` — and times ``behavsim.compare`` on the same 3 tables (3 pairs, the chosen
scores), printing seconds, contexts/s and the ratio scoring / responding::

    python benchmarks/respond.py                          # trains 3 tiny checkpoints first
    python benchmarks/respond.py --checkpoints runs/paper # any 3 ckpt-*.npz found there
    python benchmarks/respond.py --scores TMR DMR CER CMR # semantic scores only

The tiny checkpoints (``--dialogues`` training dialogues, default 300, seeds 0-2) have small GP
dictionaries; a decision costs O(dictionary size), so fully trained policies respond slower.

``--at-scale``: every checkpoint of a paper-scale run (240: 2 rewards x 3 seeds x 40 checkpoints,
the paper config's training) answers the 14,641-context grid (step 0.1), acts and prompts, with
``behavsim respond`` (its own process, 2 workers; wall time and peak resident memory of its
process tree), against, in the same run:

* the floor, in this process: the context set loaded once; belief vectors and masks once per
  context; per checkpoint its dictionary read and one matrix product with a masked argmax; each
  distinct (summary action, context) made into a master act once and each distinct act into a
  prompt once; the tables' rows written (every row line made once per distinct (context, act,
  prompt), each table joined, hashed and written) — the rows equal the command's, byte for byte;
* the marginal cost of a checkpoint: ``behavsim respond`` with one worker on 1 and on 48
  checkpoints, ``(t48 - t1) / 47``;
* today's per-context path (``--per-context``) on ``--reference`` checkpoints (2 workers),
  extrapolated to all of them; its tables equal the batched ones byte for byte.

Without ``--checkpoints`` it trains the 240 checkpoints first (the paper's training: minutes)::

    python benchmarks/respond.py --at-scale [--checkpoints runs/paper/train] [--reference 4]
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
        return ContextSet(
            [
                make_belief(
                    d,
                    {"area": {"centre": a}, "pricerange": {"cheap": p}, "food": {"italian": f}},
                    method={"byconstraints": m},
                )
                for a, p, f, m in itertools.product(levels, repeat=4)
            ]
        )
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
    run_training(
        TrainConfig(
            rewards=("ts",),
            seeds=(0, 1, 2),
            dialogues=args.dialogues,
            checkpoint_every=args.dialogues,
            eval_dialogues=10,
        ),
        tmp / "run",
        progress=False,
    )
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
    ap.add_argument(
        "--at-scale",
        action="store_true",
        help="240 paper-scale checkpoints x the 14,641-context grid against the floor (see the module doc)",
    )
    ap.add_argument(
        "--reference",
        type=int,
        default=4,
        metavar="K",
        help="--at-scale: checkpoints answered by the per-context path too (default 4; 0: none)",
    )
    ap.add_argument("--workers", type=int, default=2, help="--at-scale: workers of the batched run (default 2)")
    args = ap.parse_args(argv)
    if args.at_scale:
        return at_scale(args)

    from behavsim import DEFAULT_SCORES, compare, load_policy
    from behavsim.policy import respond, respond_many

    contexts = _grid(args.step)
    with tempfile.TemporaryDirectory() as d:
        ckpts = _checkpoints(args, Path(d))
        adapters = [load_policy(c) for c in ckpts]
        sizes = [a.policy.learner.dictionary_size for a in adapters]
        print(
            f"contexts: {len(contexts)} (grid step {args.step}); checkpoints: {[a.id for a in adapters]}, "
            f"GP dictionary sizes {sizes}; cores: {os.cpu_count()}"
        )

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
        print(
            f"respond_many ({min(3, os.cpu_count() or 1)} workers)      {t_many:8.3f} s  {n / t_many:10,.0f} contexts/s "
            "(incl. process start and loading)"
        )

        scores = args.scores or list(DEFAULT_SCORES)
        opts = (
            {s: {"cache": False} for s in ("USE_cos", "USE_ang", "BERTScore") if s in scores} if args.no_cache else {}
        )
        t0 = time.perf_counter()
        compare(tables, "all", scores=scores, score_options=opts, progress=False)
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        comp = compare(tables, "all", scores=scores, score_options=opts, progress=False)
        t_score = time.perf_counter() - t0
        pairs = len(comp.means)
        print(
            f"compare {pairs} pairs, {len(scores)} scores   {t_score:8.3f} s  "
            f"{pairs * len(contexts) / t_score:10,.0f} context pairs/s "
            f"(first call {t_first:.3f} s incl. model loading and embedding)"
        )
        print(
            f"ratio scoring / respond (serial): {t_score / t_serial:.2f}; first scoring call / respond: "
            f"{t_first / t_serial:.2f}"
        )
    return 0


# ----------------------------------------------------------------------------- --at-scale
def _paper_checkpoints(args: argparse.Namespace, tmp: Path) -> list[Path]:
    """The checkpoints under ``--checkpoints`` (every ``ckpt-*.npz``), else those of the paper
    config's training, run here."""
    if args.checkpoints:
        found = sorted(Path(args.checkpoints).rglob("ckpt-*.npz"))
        if not found:
            sys.exit(f"no ckpt-*.npz under {args.checkpoints}")
        return found
    import tomllib

    from experiments.study import CONFIG_DIR
    from policies.training.train import TrainConfig, run_training

    cfg = tomllib.loads((CONFIG_DIR / "paper.toml").read_text())
    tc = TrainConfig(
        rewards=tuple(cfg["rewards"]),
        seeds=tuple(cfg["seeds"]),
        dialogues=cfg["dialogues"],
        checkpoint_every=cfg["checkpoint_every"],
        eval_dialogues=cfg["eval_dialogues"],
        eval_scale=cfg.get("eval_scale", 0.0),
    )
    t0 = time.perf_counter()
    run_training(tc, tmp / "train", progress=False)
    found = sorted((tmp / "train").rglob("ckpt-*.npz"))
    print(f"trained {len(found)} checkpoints with the paper config's settings in {time.perf_counter() - t0:.0f} s")
    return found


def _tree_rss(pid: int) -> int:
    """Resident bytes of process ``pid`` and every process below it (Linux /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            rest = stat[stat.rindex(")") + 2 :].split()
            children.setdefault(int(rest[1]), []).append(int(entry))
            rss[int(entry)] = int(rest[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack += children.get(p, [])
    return total


def _run_cli(argv: list[str]) -> tuple[float, float]:
    """``behavsim ARGV`` in its own process: (wall seconds, peak resident MB of its process tree)."""
    import subprocess
    import threading

    cmd = [sys.executable, "-c", "import sys; from behavsim.cli import console_main; sys.exit(console_main())", *argv]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = [0]

    def watch() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, _ = proc.communicate()
    seconds = time.perf_counter() - t0
    watcher.join()
    if proc.returncode:
        sys.exit(f"behavsim {' '.join(argv[:3])} ... failed ({proc.returncode}):\n{out[-2000:]}")
    return seconds, peak[0] / 2**20


def _body(path: Path) -> bytes:
    """A JSONL table's rows (its header line, which names the file's digest, left out)."""
    data = path.read_bytes()
    return data[data.index(b"\n") + 1 :]


def _floor(grid: Path, ckpts: list[Path], out: Path) -> dict[str, float]:
    """The floor of the module doc, step by step (seconds per step); the tables' rows to ``out``."""
    import hashlib
    import json
    import zipfile

    import numpy as np

    from behavsim import ContextSet, canonical_act
    from policies.simulation.actions import action_mask, summary_actions, to_master_act
    from policies.simulation.domain import resolve_domain
    from policies.simulation.features import belief_vector
    from policies.simulation.nlg import TemplateNLG

    t: dict[str, float] = {}
    t0 = time.perf_counter()
    cs = ContextSet.load(grid)
    t["load"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    d = resolve_domain(None)
    names = summary_actions(d)
    V = np.array([belief_vector(b, d) for b in cs.beliefs])
    M = np.array([action_mask(b, d) for b in cs.beliefs])
    t["features"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    A, n = len(names), len(cs)
    choices = np.empty((len(ckpts), n), dtype=np.int64)
    seeds = []
    for k, path in enumerate(ckpts):
        with zipfile.ZipFile(path) as zf:
            arr = {key: np.lib.format.read_array(zf.open(f"{key}.npy")) for key in ("X", "actions", "alpha")}
            seeds.append(json.loads(zf.read("meta.json"))["policy"].get("nlg_seed", 0))
        onehot = np.zeros((A, len(arr["actions"])))
        onehot[arr["actions"], np.arange(len(arr["actions"]))] = 1.0
        W = (onehot * arr["alpha"]) @ arr["X"]
        choices[k] = np.where(M, V @ W.T, -np.inf).argmax(axis=1)
    t["kernel"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pairs = np.unique(choices + np.arange(n)[None, :] * A).tolist()  # the distinct (context, action) codes
    raw_of = {c: to_master_act(names[c % A], cs.beliefs[c // A], d) for c in pairs}
    canonical = {a: canonical_act(a) for a in set(raw_of.values())}
    t["master acts"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    said = {seed: {a: TemplateNLG(seed).generate(a) for a in canonical} for seed in set(seeds)}
    t["prompts"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    enc = json.encoder.encode_basestring
    ids = [enc(c) for c in cs.ids]
    for k in range(len(ckpts)):
        head: dict[int, str] = {}  # per (context, action): the row's text before and after its id and index
        tail: dict[int, str] = {}
        p = said[seeds[k]]
        codes = (choices[k] + np.arange(n) * A).tolist()
        for c in set(codes):
            a = raw_of[c]
            head[c] = f'{{"act":{enc(canonical[a])},"context_id":'
            tail[c] = f',"prompt":{enc(p[a])}}}\n'
        body = "".join(f'{head[c]}{ids[i]},"error":null,"i":{i}{tail[c]}' for i, c in enumerate(codes)).encode("utf-8")
        hashlib.sha256(body).hexdigest()
        (out / f"{k}.rows").write_bytes(body)
    t["write"] = time.perf_counter() - t0
    return t


def at_scale(args: argparse.Namespace) -> int:
    from behavsim.policy import parse_spec
    from contexts import generate_grid
    from policies.gp.checkpoint import checkpoint_kind

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ckpts = _paper_checkpoints(args, tmp)
        grid = tmp / "g.jsonl"
        generate_grid(step=0.1).save(grid)
        n_ctx = sum(1 for _ in open(grid)) - 1
        print(
            f"{len(ckpts)} checkpoints x {n_ctx:,} contexts (grid step 0.1), acts and prompts; {os.cpu_count()} cores"
        )
        files = [str(c) for c in ckpts]
        common = ["--contexts", str(grid), "--format", "jsonl", "--no-progress"]

        wall, peak = _run_cli(
            ["respond", "--policy", *files, "-o", str(tmp / "batched"), "--workers", str(args.workers), *common]
        )
        print(
            f"batched, {args.workers} workers:   {wall:8.1f} s, peak {peak:6.0f} MB "
            f"({len(ckpts) * n_ctx / wall:,.0f} contexts/s)"
        )

        t1, _ = _run_cli(["respond", "--policy", files[-1], "-o", str(tmp / "one.jsonl"), "--workers", "1", *common])
        sub = files[:48]
        t48, _ = _run_cli(["respond", "--policy", *sub, "-o", str(tmp / "48"), "--workers", "1", *common])
        marginal = (t48 - t1) / (len(sub) - 1)
        print(
            f"one worker: 1 checkpoint {t1:.1f} s, {len(sub)} checkpoints {t48:.1f} s: marginal "
            f"{marginal:.3f} s per checkpoint"
        )

        floor_dir = tmp / "floor"
        floor_dir.mkdir()
        t0 = time.perf_counter()
        parts = _floor(grid, ckpts, floor_dir)
        floor = time.perf_counter() - t0
        print(
            f"floor (one process):      {floor:8.1f} s  (" + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()) + ")"
        )
        ids = [checkpoint_kind(parse_spec(f)).id for f in files]
        same = sum(
            _body(tmp / "batched" / f"{pid}.jsonl") == (floor_dir / f"{k}.rows").read_bytes()
            for k, pid in enumerate(ids)
        )
        print(f"  rows equal to the floor's: {same}/{len(ids)}")
        print(
            f"batched / floor: {wall / floor:.2f}x  (targets: <= 60 s wall, <= 4,096 MB, <= 2x the floor, "
            f"<= 0.25 s marginal per checkpoint)"
        )

        if args.reference:
            ref = files[:: max(1, len(files) // args.reference)][: args.reference]
            tr, peak_r = _run_cli(
                [
                    "respond",
                    "--policy",
                    *ref,
                    "-o",
                    str(tmp / "reference"),
                    "--workers",
                    str(args.workers),
                    "--per-context",
                    *common,
                ]
            )
            same = sum(
                (tmp / "reference" / f"{checkpoint_kind(parse_spec(f)).id}.jsonl").read_bytes()
                == (tmp / "batched" / f"{checkpoint_kind(parse_spec(f)).id}.jsonl").read_bytes()
                for f in ref
            )
            est = tr / len(ref) * len(files)
            print(
                f"per-context path (--per-context), {len(ref)} checkpoints, {args.workers} workers: {tr:.1f} s "
                f"-> {est / 60:.1f} min for {len(files)} ({est / wall:.0f}x the batched run); tables byte-identical: "
                f"{same}/{len(ref)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
