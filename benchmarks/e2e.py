"""behavsim's end-to-end model against its teacher: training time, agreement, text only, task
success, determinism, and loading with ``transformers``' own classes.

    python benchmarks/e2e.py                      # ~20-40 minutes on a quiet 2-core machine
    python benchmarks/e2e.py --quick              # no second and resumed training (no byte checks)
    python benchmarks/e2e.py --out runs/bench-e2e # keep the folders
    python benchmarks/e2e.py --quick --seeds 1 2 --belief-weight 1   # every training with that weight

Measures, each printed with the command or call that produced it:

1. ``behavsim train --policy e2e --teacher handcrafted --seed 0 -o DIR`` (the defaults): wall time
   and CPU time of the command (target: 300 s wall on a quiet 2-core machine; the machine's load
   is printed beside it, and the ratio to a GP-SARSA training of 1,000 dialogues run in the same
   process for scale);
2. the last checkpoint loads with ``AutoModelForCausalLM.from_pretrained`` and
   ``AutoTokenizer.from_pretrained``;
3. TMR against the teacher on ``behavsim contexts collect --policy handcrafted --dialogues 10
   --seed 424242`` (dialogues it was not trained on; a failed context counts as a mismatch), with
   both tables made by ``behavsim respond``; and on 100 such dialogues;
   3b. the chat mode (``respond --policy hf:DIR``: the folder's own prompt template and chat
   template, ``transformers``' ``generate``): TMR against the teacher on the 10 dialogues;
4. the same answers on the same file with every belief and every turn act removed (read text
   only);
5. task success over 1,000 evaluation dialogues of Environment 1, the model's acts driving the
   dialogue, next to the teacher's on the same dialogues (:func:`policies.training.play.play_dialogues`);
6. same seed → byte-identical checkpoint (a second training), and a training stopped after its
   first checkpoint and resumed by the same command → the same bytes;
7. with ``--seeds S [S ...]``: the default training with each further seed (the library's
   ``train_e2e``, the command's settings), and its task success over the same evaluation
   dialogues — a claim about training runs is a claim over seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(cmd: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return wall, cpu, proc


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()][1:]


def _tmr(teacher: Path, model: Path) -> tuple[float, int, int, int]:
    a, b = _rows(teacher), _rows(model)
    agree = sum(1 for x, y in zip(a, b) if not x.get("error") and not y.get("error") and x.get("act") == y.get("act"))
    failed = sum(1 for y in b if y.get("error"))
    return agree / len(a), agree, len(a), failed


def _gp_seconds() -> float:
    """A GP-SARSA training of 1,000 dialogues in this process (the scale of a familiar job)."""
    from policies.training.train import TrainConfig, run_training

    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        run_training(
            TrainConfig(dialogues=1000, checkpoint_every=1000, eval_dialogues=10), d, workers=1, progress=False
        )
        return time.perf_counter() - t0


def _same_bytes(a: Path, b: Path) -> bool:
    names = sorted(p.name for p in a.iterdir())
    return names == sorted(p.name for p in b.iterdir()) and all(
        (a / n).read_bytes() == (b / n).read_bytes() for n in names
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="work folder (default: a temporary one, removed)")
    ap.add_argument("--quick", action="store_true", help="skip the second and the resumed training")
    ap.add_argument("--dialogues", type=int, default=1000, help="task-success dialogues (default 1000)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[], help="further seeds to train and play (step 7)")
    ap.add_argument("--belief-weight", type=float, help="every training's --belief-weight (default: the trainer's)")
    args = ap.parse_args(argv)
    given = args.belief_weight is not None
    weight = ["--belief-weight", repr(args.belief_weight)] if given else []  # the command's
    settings = {"belief_weight": args.belief_weight} if given else {}  # the library's
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    work.mkdir(parents=True, exist_ok=True)
    behavsim = [sys.executable, "-m", "behavsim.cli"]
    print(f"work folder {work}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    # 1. training
    shutil.rmtree(work / "e2e", ignore_errors=True)
    cmd = [
        *behavsim,
        "train",
        "--policy",
        "e2e",
        "--teacher",
        "handcrafted",
        "--seed",
        "0",
        "-o",
        "e2e",
        "--no-progress",
        *weight,
    ]
    wall, cpu, _ = _run(cmd, work)
    load = os.getloadavg()[0]
    from policies.e2e import list_e2e_checkpoints

    ckpts = list_e2e_checkpoints(work / "e2e")
    last = ckpts[-1][1]
    gp = _gp_seconds()
    print(f"\n[1] {' '.join(cmd[2:])}")
    print(
        f"    wall {wall:.1f} s, CPU {cpu:.1f} s (target 300 s wall on a quiet machine: wall/target {wall / 300:.2f}, "
        f"CPU/target {cpu / 300:.2f}); load average after {load:.1f}"
    )
    print(
        f"    checkpoints: {', '.join(p.name for _, p in ckpts)}; a GP-SARSA training of 1,000 dialogues here took "
        f"{gp:.1f} s (e2e/GP wall ratio {wall / gp:.1f})"
    )

    # 2. transformers' own loaders
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(last)
    tok = AutoTokenizer.from_pretrained(last)
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"\n[2] AutoModelForCausalLM / AutoTokenizer.from_pretrained({last.name}): {type(model).__name__}, "
        f"{n_params:,} parameters, {type(tok).__name__} with {len(tok)} tokens; chat template: {bool(tok.chat_template)}"
    )

    # 3. agreement with the teacher on unseen dialogues, through the command line
    results = {}
    for n in (10, 100):
        c = f"c{n}.jsonl"
        _run(
            [
                *behavsim,
                "contexts",
                "collect",
                "--policy",
                "handcrafted",
                "--dialogues",
                str(n),
                "--seed",
                "424242",
                "-o",
                c,
            ],
            work,
        )
        _, _, _ = _run(
            [
                *behavsim,
                "respond",
                "--policy",
                "handcrafted",
                f"e2e:{last}",
                "--id",
                "teacher",
                "--id",
                "e2e",
                "--contexts",
                c,
                "-o",
                f"r{n}/",
                "--no-progress",
            ],
            work,
        )
        results[n] = _tmr(work / f"r{n}" / "teacher.jsonl", work / f"r{n}" / "e2e.jsonl")
        tmr, agree, size, failed = results[n]
        print(
            f"\n[3] TMR against the teacher, {n} unseen dialogues (collect --seed 424242): {tmr:.3f} ({agree}/{size}; "
            f"failed contexts, counted as mismatches: {failed})"
        )

    # 3b. the chat mode, through the LLM kind hf:DIR (transformers' own generate)
    if (last / "behavsim-prompt.toml").is_file():
        _run([*behavsim, "respond", "--policy", f"hf:{last}", "--id", "chat", "--contexts", "c10.jsonl", "-o",
              "rchat/", "--no-progress"], work)  # fmt: skip
        tmr, agree, size, failed = _tmr(work / "r10" / "teacher.jsonl", work / "rchat" / "chat.jsonl")
        print(
            f"\n[3b] the chat mode (respond --policy hf:DIR) against the teacher, 10 unseen dialogues: TMR {tmr:.3f} "
            f"({agree}/{size}; answers without a usable act: {failed})"
        )

    # 4. text only
    rows = [json.loads(line) for line in (work / "c10.jsonl").read_text().splitlines()]
    with open(work / "c10_text.jsonl", "w") as f:
        f.write(json.dumps(rows[0]) + "\n")
        for d in rows[1:]:
            d = {k: v for k, v in d.items() if k != "belief"}
            d["history"] = [{k: v for k, v in t.items() if k != "act"} for t in d["history"]]
            f.write(json.dumps(d) + "\n")
    _run(
        [
            *behavsim,
            "respond",
            "--policy",
            f"e2e:{last}",
            "--id",
            "e2e",
            "--contexts",
            "c10_text.jsonl",
            "-o",
            "rt/",
            "--no-progress",
        ],
        work,
    )
    a, b = _rows(work / "r10" / "e2e.jsonl"), _rows(work / "rt" / "e2e.jsonl")
    same = sum(1 for x, y in zip(a, b) if (x["act"], x["prompt"], x["error"]) == (y["act"], y["prompt"], y["error"]))
    print(f"\n[4] the same answers with beliefs and turn acts removed: {same}/{len(a)}")

    # 5. task success
    from policies.training.play import play_dialogues

    t0 = time.perf_counter()
    teacher = play_dialogues("handcrafted", args.dialogues)
    t1 = time.perf_counter()
    e2e = play_dialogues(f"e2e:{last}", args.dialogues)
    t2 = time.perf_counter()
    print(
        f"\n[5] task success over {args.dialogues} Environment 1 dialogues (evaluation seeds): teacher "
        f"{teacher.tsr:.3f} (ADL {teacher.adl:.2f}, {t1 - t0:.1f} s), e2e {e2e.tsr:.3f} (ADL {e2e.adl:.2f}, "
        f"{t2 - t1:.1f} s; failed turns {e2e.failed_turns}); difference {100 * (teacher.tsr - e2e.tsr):.1f} points"
    )

    # 6. determinism and resuming
    if not args.quick:
        shutil.rmtree(work / "e2e-again", ignore_errors=True)
        _run(
            [
                *behavsim,
                "train",
                "--policy",
                "e2e",
                "--teacher",
                "handcrafted",
                "--seed",
                "0",
                "-o",
                "e2e-again",
                "--no-progress",
                *weight,
            ],
            work,
        )
        again = list_e2e_checkpoints(work / "e2e-again")[-1][1]
        from policies.e2e import E2EConfig, train_e2e

        shutil.rmtree(work / "e2e-resumed", ignore_errors=True)
        first = E2EConfig(**settings).schedule()[0]
        train_e2e(E2EConfig(**settings), work / "e2e-resumed", stop_after=first)
        _run(
            [
                *behavsim,
                "train",
                "--policy",
                "e2e",
                "--teacher",
                "handcrafted",
                "--seed",
                "0",
                "-o",
                "e2e-resumed",
                "--no-progress",
                *weight,
            ],
            work,
        )
        resumed = list_e2e_checkpoints(work / "e2e-resumed")[-1][1]
        print(
            f"\n[6] same seed, same bytes: {_same_bytes(last, again)} ({len(list(last.iterdir()))} files of "
            f"{last.name}); stopped after {first} dialogues and resumed: {_same_bytes(last, resumed)}"
        )
    # 7. further seeds
    if args.seeds:
        from policies.e2e import E2EConfig, train_e2e

        tsrs = {0: e2e.tsr}
        for seed in args.seeds:
            shutil.rmtree(work / f"e2e-s{seed}", ignore_errors=True)
            t0 = time.perf_counter()
            ck = train_e2e(E2EConfig(seed=seed, **settings), work / f"e2e-s{seed}")[-1][1]
            t1 = time.perf_counter()
            res = play_dialogues(f"e2e:{ck}", args.dialogues)
            tsrs[seed] = res.tsr
            print(
                f"\n[7] seed {seed}: training {t1 - t0:.1f} s; TSR {res.tsr:.3f} (ADL {res.adl:.2f}; failed turns "
                f"{res.failed_turns}), {100 * (teacher.tsr - res.tsr):.1f} points below the teacher"
            )
        vals = list(tsrs.values())
        print(
            f"\n[7] over seeds {sorted(tsrs)}: TSR mean {sum(vals) / len(vals):.3f}, min {min(vals):.3f}, max "
            f"{max(vals):.3f} (teacher {teacher.tsr:.3f}); largest gap {100 * (teacher.tsr - min(vals)):.1f} points"
        )
    if not args.out:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
