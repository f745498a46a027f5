"""``behavsim monitor``: follow the checkpoints of a training run as they appear (paper §4.2.1).

Registered through the entry-point group ``behavsim.commands`` (``monitor =
policies.commands.monitor:register_monitor``); a thin layer over :class:`behavsim.monitor.ConvergenceMonitor`::

    behavsim monitor runs/paper --contexts grid.jsonl                 # every trial, what is there now
    behavsim monitor runs/paper/ts-seed0 --contexts grid.jsonl --follow --interval 30

``DIR`` is a trial folder (``<reward>-seed<S>/`` holding ``ckpt-NNNNNN.npz``) or a run folder
holding trial folders; each trial gets its own monitor with outputs under ``OUT/<trial>/``
(default ``OUT``: ``<run folder>/monitor``) plus, for several trials, ``OUT/convergence.png``
(the first score of every trial, as the paper's Figure 2). Checkpoints are processed in
training order; only complete ``ckpt-*.npz`` files are listed (the trainer writes them under a
temporary name and renames them), and a file that cannot be read yet is retried at the next
poll when following. Running the command again continues where the outputs end.

``--lag K`` and ``--reference SPEC`` add the other lags (the checkpoint K back, the first, a fixed
policy; the last one is filled in when the command ends), ``--tensorboard TBDIR`` writes them as
TensorBoard scalars into ``TBDIR/<trial>/``, and ``--pattern GLOB --loader MODULE:FUNCTION``
follows the checkpoint files of any trainer (:class:`PatternWatch`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from behavsim import BehavsimError, ConfigError, ContextSet
from behavsim.commands import CommandParser
from policies.pydial import PyDialWatch, refuse_pydial_folder
from policies.simulation.domain import add_domain_option
from policies.training.follow import CheckpointWatch, PatternWatch, check_args, run_watch

__all__ = ["register_monitor", "cmd_monitor", "main"]


def register_monitor(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``monitor`` sub-command (entry point ``behavsim.commands``)."""
    p = subparsers.add_parser(
        "monitor",
        help="follow a training run: each checkpoint against the previous one (convergence)",
        description="Score each checkpoint of a training run against the previous one on a fixed context set "
        "(paper §4.2.1, Figure 2): one row per pair in OUT/<trial>/convergence.csv, the snapshot's responses, "
        "and a plot. DIR is a trial folder (<reward>-seed<S>/ with ckpt-NNNNNN.npz) or a run folder holding "
        "trial folders. With --follow, new checkpoints are picked up as the trainer writes them.",
    )
    _add_watch_options(p)
    _add_comparison_options(p)
    _add_trainer_options(p)
    _add_pydial_options(p)
    add_domain_option(p)  # checkpoints name their shipped domain; a rules file of one's own is given here
    p.set_defaults(func=cmd_monitor)
    return p


def _add_watch_options(p: argparse.ArgumentParser) -> None:
    """What is watched, on which contexts, how often, and where the outputs go."""
    p.add_argument("dir", metavar="DIR", help="trial folder or run folder of `behavsim train`")
    p.add_argument("--contexts", required=True, metavar="F", help="context set (.jsonl or .parquet)")
    p.add_argument(
        "--scores",
        nargs="+",
        metavar="NAME",
        default=None,
        help="scores (default: TMR DMR CER CMR; text scores need their models)",
    )
    p.add_argument(
        "--every",
        type=int,
        default=1,
        metavar="K",
        help="use only checkpoints at which a multiple of K dialogues was reached (default: every one)",
    )
    p.add_argument(
        "--stop-rule",
        metavar="SCORE:T:P",
        default=None,
        help="mark convergence: SCORE >= T in P consecutive comparisons (e.g. TMR:0.99:3); advice only",
    )
    p.add_argument("--follow", action="store_true", help="keep polling DIR for new checkpoints")
    p.add_argument("--interval", type=float, default=None, metavar="S", help="seconds between polls (default 10)")
    p.add_argument(
        "--stop-after",
        type=float,
        default=None,
        metavar="N",
        help="with --follow: stop after N seconds without a new checkpoint (default: never; the command "
        "also stops once every trial reached the run's last checkpoint)",
    )
    p.add_argument("-o", "--output", metavar="OUT", default=None, help="output folder (default: <run folder>/monitor)")
    p.add_argument("--no-plot", dest="plot", action="store_false", help="do not draw PNGs")


def _add_comparison_options(p: argparse.ArgumentParser) -> None:
    """Each checkpoint's comparisons beyond the previous one, and TensorBoard."""
    p.add_argument(
        "--lag",
        type=int,
        default=5,
        metavar="K",
        help="also compare each checkpoint with the one K checkpoints back (vs_lag; default 5); every checkpoint "
        "is also compared with the first (vs_first) and, when the command ends, with the last (vs_final)",
    )
    p.add_argument(
        "--reference",
        metavar="SPEC",
        default=None,
        help="also compare each checkpoint with this fixed policy (vs_ref), a policy spec such as handcrafted",
    )
    p.add_argument(
        "--tensorboard",
        metavar="TBDIR",
        default=None,
        help="write the scores as TensorBoard scalars behavsim/<score>/<lag> (step = training dialogues) and the "
        "figure into TBDIR/<trial>/ (needs pip install 'behavsim[tensorboard]')",
    )


def _add_trainer_options(p: argparse.ArgumentParser) -> None:
    """Following the checkpoint files of any trainer."""
    t = p.add_argument_group(
        "any trainer",
        "follow the checkpoints of a trainer of your own: DIR holds them, --pattern selects them, the "
        "training-dialogue count is read from each name and --loader turns one into a policy",
    )
    t.add_argument(
        "--pattern",
        metavar="GLOB",
        default=None,
        help="checkpoint files or model folders under DIR, e.g. 'ckpt-*.pt' or 'checkpoint-*' (a folder per step)",
    )
    t.add_argument(
        "--loader",
        metavar="MODULE:FUNCTION|SPEC",
        default=None,
        help="function path -> policy (anything a snapshot may be: a policy object, a callable belief -> act, "
        "a policy spec); MODULE is imported from the working folder or the Python path. Or a policy spec with {} "
        "standing for the checkpoint's path, e.g. 'hf:{}' or 'openai:{}@http://127.0.0.1:8000/v1' (a model folder "
        "per training step)",
    )
    t.add_argument(
        "--step-regex",
        metavar="RE",
        default=None,
        help="regular expression finding the training dialogues in a file's path below DIR (its first group, "
        "or the whole match; default: the last number in the name)",
    )


def _add_pydial_options(p: argparse.ArgumentParser) -> None:
    """Following the policies PyDial3 writes while it trains."""
    q = p.add_argument_group(
        "PyDial training",
        "follow the GP policies PyDial3's `pydial.py train` writes: DIR is its policy folder (e.g. _bspolicies/, "
        "files <name>-seed<S>-<err>.<batch>.dct/.prm); each batch is answered through the pydial: adapter "
        "(CFG with inpolicyfile set to that batch) and scored against the previous batch",
    )
    q.add_argument(
        "--pydial-config",
        metavar="CFG",
        default=None,
        help="the training config pydial.py train was run with (its [exec_config] gives the dialogues per batch, "
        "its name the policies'; not an adapter config); each batch is loaded with it, learning off; relative "
        "paths are also looked up under the PyDial root",
    )
    q.add_argument(
        "--pydial-root",
        metavar="DIR",
        default=None,
        help="PyDial3's root folder (default: $PYDIAL_ROOT or found on PYTHONPATH)",
    )


# ----------------------------------------------------------------------------- command
def cmd_monitor(args: argparse.Namespace) -> int:
    """Run the ``monitor`` command; returns the exit code (bad input raises BehavsimError → 2)."""
    root = Path(args.dir)
    if getattr(args, "pydial_config", None):
        if not root.is_dir():
            raise ConfigError(f"DIR {args.dir!r}: no such folder (PyDial's policy folder, e.g. _bspolicies/)")
        interval, stop_rule, score_names = check_args(args, root)
        contexts = ContextSet.load(args.contexts)
        watch: Any = PyDialWatch(args, root, contexts, score_names, stop_rule)
        return run_watch(watch, args, interval, f"{root}: no PyDial policies (<name>.<batch>.dct with .prm) found")
    if getattr(args, "pydial_root", None):
        raise ConfigError("--pydial-root only makes sense with --pydial-config (following a PyDial training)")
    interval, stop_rule, score_names = check_args(args, root)
    if not getattr(args, "pattern", None):
        refuse_pydial_folder(root)  # with or without --follow: no ckpt-*.npz would ever come
    contexts = ContextSet.load(args.contexts)
    if getattr(args, "pattern", None):
        watch = PatternWatch(args, root, contexts, score_names, stop_rule)
        return run_watch(watch, args, interval, f"{root}: no file matches --pattern {args.pattern!r}")
    watch = CheckpointWatch(args, root, contexts, score_names, stop_rule)
    nothing = f"{root}: no checkpoints (ckpt-NNNNNN.npz) found" + ("" if watch.single else " in any trial folder")
    return run_watch(watch, args, interval, nothing)


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m policies.commands.monitor DIR ...``) for use without the entry point."""
    parser = CommandParser(prog="behavsim")
    sub = parser.add_subparsers(dest="command", required=True)
    register_monitor(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "monitor":
        argv = ["monitor", *argv]
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BehavsimError as exc:
        print(f"behavsim monitor: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
