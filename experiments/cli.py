"""``behavsim reproduce``: the paper's study on a named or given config (see :mod:`experiments.study`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from behavsim.commands import add_executor_option
from experiments.study import list_configs, load_config, run_study

__all__ = ["register_reproduce"]


def register_reproduce(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "reproduce",
        help="run the paper's study end to end (train, contexts, respond, compare, report)",
        description="Train GP-SARSA trials, build C_gen and C_col, respond every checkpoint, compare "
        "(convergence, seeds, rewards), analyse, plot and write an HTML report. Resumes in "
        "the same output folder.",
    )
    p.add_argument(
        "--config",
        default="quick",
        help=f"built-in config ({', '.join(list_configs())}) or a .toml/.json file (default: quick)",
    )
    p.add_argument("-o", "--output", help="run folder (default: runs/<config name>)")
    p.add_argument("--dialogues", type=int, help="override: training dialogues per trial")
    p.add_argument("--seeds", type=int, nargs="+", help="override: seeds per reward")
    p.add_argument("--no-report", action="store_true", help="skip the HTML report")
    p.add_argument(
        "--domain",
        metavar="NAME|RULES_JSON",
        help="override: the study's domain (camrestaurants: PyDial's Cambridge restaurants; default: the config's)",
    )
    p.add_argument(
        "--corpus",
        metavar="PATH",
        help="a corpus in ConvLab-3's unified format (its data.zip): the study against people compares "
        "every policy with the human wizard of its split (config camrest676: CamRest676's test split)",
    )
    add_executor_option(p, default=None)
    p.set_defaults(func=_cmd_reproduce)
    return p


def _cmd_reproduce(args: argparse.Namespace) -> int:
    overrides = {
        "dialogues": args.dialogues,
        "seeds": args.seeds,
        "domain": args.domain,
        "executor": args.executor,
        "corpus": str(Path(args.corpus).resolve()) if args.corpus else None,
    }
    if args.no_report:
        overrides["report"] = False
    cfg = load_config(args.config, **overrides)
    out = Path(args.output) if args.output else Path("runs") / cfg.name
    run = run_study(cfg, out)
    if cfg.report:  # once, at the end (not a report an earlier run left behind)
        print(f"\nreport: {(run / 'report.html').resolve()}")
    return 0
