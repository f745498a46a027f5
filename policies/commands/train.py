"""``behavsim train``: GP-SARSA (or handcrafted) training runs from the command line.

Registered through the entry-point group ``behavsim.commands`` (``train =
policies.commands.train:register_train``); the command is a thin layer over
:func:`policies.training.train.run_training`::

    behavsim train --reward ts --seed 0 --dialogues 4000 -o runs/ts0
    behavsim train --rewards ts iq --seeds 0 1 2 -o runs/paper      # 6 trials in parallel

Running it again on the same folder resumes every trial from its last checkpoint (and extends
it when ``--dialogues`` grew); a folder holding a run with other settings is refused.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

from behavsim import BehavsimError, ConfigError, ContextSet, UnknownName
from behavsim.commands import CommandParser, add_executor_option
from behavsim.policy import parse_spec
from behavsim.scores import scores as registry
from behavsim.tensorboard import check_tensorboard_dir
from policies.e2e import add_e2e_options, cmd_train_e2e
from policies.gp.checkpoint import CheckpointError
from policies.training.evaluation import EVAL_SEED
from policies.training.train import TrainConfig, list_learners, run_training

__all__ = ["register_train", "cmd_train", "main"]


def register_train(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``train`` sub-command to an ``argparse`` sub-parser collection."""
    p = subparsers.add_parser(
        "train",
        help="train GP-SARSA policies (checkpoints + evaluations, paper Table 1)",
        description="Train GP-SARSA dialogue policies in PyDial's Cambridge-restaurants Environment 1 "
        "(0% semantic error, 25 turns) or another domain, checkpoint every K dialogues and evaluate each "
        "checkpoint on M fixed dialogues (TSR, AIQ, ADL; greedily, or sampling with --eval-scale). Several rewards/seeds run as parallel trials. "
        "Re-running on the same folder resumes.",
    )
    _add_run_options(p)
    _add_monitor_options(p)
    _add_environment_options(p)
    add_e2e_options(p)
    p.set_defaults(func=cmd_train)
    return p


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """The run: its folder, policy, trials, schedule, evaluation, workers and progress."""
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="run folder (created; resumed if it exists)")
    p.add_argument(
        "--policy",
        default="gp",
        metavar="NAME",
        help=f"policy to train/evaluate: {', '.join([*list_learners(), 'e2e'])} (default gp; e2e: behavsim's "
        "end-to-end model, by imitation of --teacher)",
    )
    p.add_argument(
        "--reward",
        "--rewards",
        dest="rewards",
        nargs="+",
        default=None,
        metavar="NAME",
        help="reward(s): ts (task success), iq (interaction quality); default ts",
    )
    p.add_argument(
        "--seed",
        "--seeds",
        dest="seeds",
        nargs="+",
        type=int,
        default=None,
        metavar="S",
        help="random seed(s), one trial per reward and seed; default 0",
    )
    p.add_argument(
        "--dialogues",
        type=int,
        default=None,
        metavar="N",
        help="training dialogues per trial (default 40000; e2e: the teacher's dialogues, default 2000)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=None,
        metavar="K",
        help="dialogues between checkpoints (default 1000; e2e: dialogues trained on, repeats counted, default --dialogues)",
    )
    p.add_argument(
        "--eval-dialogues", type=int, default=100, metavar="M", help="evaluation dialogues per checkpoint (default 100)"
    )
    p.add_argument(
        "--eval-seed",
        type=int,
        default=EVAL_SEED,
        metavar="S",
        help=f"seed of the evaluation dialogues (default {EVAL_SEED})",
    )
    p.add_argument(
        "--workers", type=int, default=None, metavar="W", help="parallel processes (default: min(trials, cores))"
    )
    add_executor_option(p, default=None)
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="progress bars on a terminal, one line per checkpoint otherwise (default on)",
    )


def _add_monitor_options(p: argparse.ArgumentParser) -> None:
    """What is watched while the run trains: the convergence monitor and TensorBoard."""
    p.add_argument(
        "--monitor",
        metavar="CONTEXTS",
        help="watch convergence while training: snapshot every checkpoint's responses on this context "
        "set and score it against the previous one (runs `behavsim monitor DIR --follow` beside the "
        "training; outputs in DIR/monitor/<trial>/)",
    )
    p.add_argument("--monitor-scores", nargs="+", metavar="NAME", help="scores of --monitor (default TMR DMR CER CMR)")
    p.add_argument(
        "--monitor-lag",
        type=int,
        default=None,
        metavar="K",
        help="--monitor also compares each checkpoint with the one K back (default 5)",
    )
    p.add_argument(
        "--monitor-reference",
        metavar="SPEC",
        default=None,
        help="--monitor also compares each checkpoint with this fixed policy (e.g. handcrafted)",
    )
    p.add_argument(
        "--tensorboard",
        metavar="TBDIR",
        help="TensorBoard scalars, one run folder per trial (TBDIR/<trial>/, step = training dialogues): each "
        "checkpoint's TSR, AIQ and ADL (behavsim/eval/...) and, with --monitor, the convergence scores "
        "(behavsim/<score>/vs_prev|vs_lag|vs_first|vs_final) and figure (needs pip install 'behavsim[tensorboard]')",
    )


def _add_environment_options(p: argparse.ArgumentParser) -> None:
    """GP-SARSA's hyper-parameters and the environment trained and evaluated in."""
    g = p.add_argument_group("GP-SARSA hyper-parameters (PyDial defaults)")
    g.add_argument("--gamma", type=float, default=1.0, help="discount (default 1.0)")
    g.add_argument("--sigma", type=float, default=5.0, help="noise standard deviation (default 5.0)")
    g.add_argument("--nu", type=float, default=0.001, help="sparsification threshold (default 0.001)")
    g.add_argument("--scale", type=float, default=3.0, help="exploration scale while training (default 3)")
    p.add_argument(
        "--domain",
        metavar="NAME|RULES_JSON",
        help="the domain to train and evaluate on: a shipped domain (camrestaurants: PyDial's Cambridge "
        "restaurants, the default; example-restaurants: behavsim's invented example) or a PyDial rules JSON "
        "with its <X>-dbase.db beside it",
    )
    p.add_argument(
        "--user",
        metavar="NAME",
        help="simulated-user configuration: env1 (the default: Environment 1's behaviour ranges and patience, "
        "drawn per dialogue) or legacy (behavsim's original user, before Environment 1: patience 5, its own ranges)",
    )
    p.add_argument(
        "--eval-scale",
        type=float,
        default=0.0,
        metavar="S",
        help="evaluation of GP-SARSA: 0 greedy on the posterior mean (default), 1 sampling as PyDial's tests do",
    )


def _config_from_args(args: argparse.Namespace) -> TrainConfig:
    return TrainConfig(
        policy=args.policy,
        rewards=tuple(args.rewards or ("ts",)),
        seeds=tuple(args.seeds if args.seeds is not None else (0,)),
        dialogues=args.dialogues if args.dialogues is not None else 40_000,
        checkpoint_every=args.checkpoint_every if args.checkpoint_every is not None else 1_000,
        eval_dialogues=args.eval_dialogues,
        eval_seed=args.eval_seed,
        gamma=args.gamma,
        sigma=args.sigma,
        nu=args.nu,
        scale=args.scale,
        domain=args.domain,
        user=args.user,
        eval_scale=args.eval_scale,
    )


def _start_monitor(args: argparse.Namespace) -> "subprocess.Popen":
    """``behavsim monitor OUTPUT --contexts F --follow`` in a process of its own, beside the trials."""
    if not Path(args.monitor).is_file():
        raise ConfigError(
            f"--monitor: context-set file {args.monitor!r} not found "
            "(make one with `behavsim contexts generate -o cgen.jsonl`)"
        )
    _check_monitor_inputs(args)
    cmd = [
        sys.executable,
        "-m",
        "behavsim.cli",
        "monitor",
        str(args.output),
        "--contexts",
        str(args.monitor),
        "--follow",
        "--interval",
        "1",
        "--stop-after",
        "900",
    ]
    if args.monitor_scores:
        cmd += ["--scores", *args.monitor_scores]
    if args.tensorboard:
        cmd += ["--tensorboard", str(args.tensorboard)]
    if args.monitor_lag is not None:
        if args.monitor_lag < 1:
            raise ConfigError(f"--monitor-lag: expected a positive number of checkpoints, got {args.monitor_lag}")
        cmd += ["--lag", str(args.monitor_lag)]
    if args.monitor_reference:
        cmd += ["--reference", args.monitor_reference]
    return subprocess.Popen(cmd)


def _check_monitor_inputs(args: argparse.Namespace) -> None:
    """What the monitor would refuse, refused before training starts: the context set (read and
    checked as the monitor reads it), the score names, the reference policy's spec."""
    ContextSet.load(args.monitor)  # a bad set names its file and line
    try:
        for value in args.monitor_scores or ():
            for name in value.split(","):
                if name.strip():
                    registry.canonical(name.strip())
    except UnknownName as exc:
        raise ConfigError(f"--monitor-scores: {exc}") from None
    if args.monitor_reference:
        try:
            parse_spec(args.monitor_reference)
        except (UnknownName, ConfigError) as exc:
            raise ConfigError(f"--monitor-reference: {exc}") from None


def cmd_train(args: argparse.Namespace) -> int:
    """Run the ``train`` command; returns the exit code (0 ok, 2 bad input)."""
    if args.policy == "e2e":
        return cmd_train_e2e(args)
    for option, name in (("--teacher", "teacher"), ("--corpus", "corpus")):
        if getattr(args, name, None):
            print(f"behavsim train: error: {option} applies to --policy e2e only", file=sys.stderr)
            return 2
    monitor = None
    try:
        config = _config_from_args(args)
        tensorboard = getattr(args, "tensorboard", None)
        if tensorboard:
            check_tensorboard_dir(tensorboard, "--tensorboard")
        if args.monitor:
            monitor = _start_monitor(args)
        rows = run_training(
            config,
            args.output,
            workers=args.workers,
            progress=args.progress,
            tensorboard=tensorboard,
            executor=args.executor,
        )
    except (ConfigError, CheckpointError, BehavsimError) as exc:
        print(f"behavsim train: error: {exc}", file=sys.stderr)
        if monitor is not None:
            monitor.terminate()
        return 2
    if monitor is not None:
        try:  # it stops by itself once every trial's last checkpoint is scored
            code = monitor.wait(timeout=600)
        except subprocess.TimeoutExpired:
            monitor.terminate()
            code = 1
        if code:
            print(f"behavsim train: warning: the convergence monitor ended with exit code {code}", file=sys.stderr)
        print(f"convergence: {Path(args.output) / 'monitor'}")
    if getattr(args, "tensorboard", None):
        print(f"tensorboard: {args.tensorboard} (tensorboard --logdir {args.tensorboard})")
    last: dict[tuple[str, int], dict] = {}
    for r in rows:
        last[(r["reward"], r["seed"])] = r
    print(f"{'trial':<16} {'dialogues':>9} {'TSR':>6} {'AIQ':>6} {'ADL':>6}")
    for (rew, seed), r in sorted(last.items()):
        print(f"{rew + '-seed' + str(seed):<16} {r['dialogues']:>9} {r['tsr']:>6.3f} {r['aiq']:>6.3f} {r['adl']:>6.2f}")
    print(f"metrics: {Path(args.output) / 'metrics.csv'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m policies.commands.train train ...``) for use without ``behavsim``."""
    parser = CommandParser(prog="behavsim")
    sub = parser.add_subparsers(dest="command", required=True)
    register_train(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
