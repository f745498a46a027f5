"""``behavsim train --policy e2e --teacher SPEC``: behavsim's end-to-end model by imitation.

The options that only the end-to-end model has (``--teacher``, ``--epochs``, ``--batch-dialogues``,
``--threads``, the model's size) are added to ``behavsim train`` by :func:`add_e2e_options`;
:func:`cmd_train_e2e` runs :func:`policies.e2e.train_e2e` with them::

    behavsim train --policy e2e --teacher handcrafted --seed 0 -o runs/e2e-hc0
    behavsim train --policy e2e --teacher runs/gp/ts-seed0/ckpt-010000.npz --seed 1 -o runs/e2e-gp1
    behavsim train --policy e2e --corpus camrest676/data.zip --split train --seed 0 -o runs/e2e-people0

``--corpus PATH`` trains on people's dialogues (a corpus in ConvLab-3's unified format) instead
of a teacher's: every system turn of ``--split`` is an example, ``--validation-split`` chooses
the checkpoint and stops training early (:mod:`policies.e2e._corpus`).

Running it again on the same folder resumes from the last checkpoint; a folder holding a run with
other settings is refused.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from behavsim import BehavsimError, ConfigError
from policies.e2e._corpus import CORPUS_DEFAULTS
from policies.e2e._train import BEST_FILE, NO_ACT_TURNS, E2EConfig, corpus_e2e_config, train_e2e

__all__ = ["add_e2e_options", "cmd_train_e2e", "e2e_config_from_args"]


def add_e2e_options(p: argparse.ArgumentParser) -> None:
    d = E2EConfig()
    g = p.add_argument_group("end-to-end model (--policy e2e)")
    g.add_argument(
        "--teacher",
        metavar="SPEC",
        help="the policy the model imitates: any policy spec (handcrafted, a GP-SARSA checkpoint .npz, pydial:CFG, ...)",
    )
    g.add_argument(
        "--corpus",
        metavar="PATH",
        help="train on people's dialogues instead of a teacher's: a corpus in ConvLab-3's unified format "
        "(its data.zip, folder or dialogues.json); every system turn of --split is an example",
    )
    g.add_argument("--split", help="--corpus: the split trained on (default train)")
    g.add_argument(
        "--validation-split",
        metavar="SPLIT",
        help="--corpus: the split that chooses the checkpoint and stops training early (default validation; "
        "none: no validation)",
    )
    g.add_argument(
        "--patience",
        type=int,
        default=None,
        metavar="N",
        help=f"--corpus: stop after N checkpoints without a better validation loss (default {CORPUS_DEFAULTS['patience']}; 0: never)",
    )
    g.add_argument(
        "--no-act-turns",
        choices=NO_ACT_TURNS,
        default=None,
        help="--corpus: a person's turn without an act (a greeting, a thank-you, a goodbye): empty — the model "
        "learns that no act was written there and answers such a moment with words only (default); words — "
        "only its words are targets (the model writes some act there anyway; runs before this option)",
    )
    g.add_argument(
        "--epochs",
        type=int,
        default=None,
        help=f"passes over the teacher's dialogues (default {d.epochs}; --corpus: {CORPUS_DEFAULTS['epochs']})",
    )
    g.add_argument(
        "--batch-dialogues",
        type=int,
        default=None,
        metavar="B",
        help=f"teacher dialogues (all their turns) per optimiser step (default {d.batch_dialogues}; --corpus: "
        f"{CORPUS_DEFAULTS['batch_dialogues']})",
    )
    g.add_argument(
        "--threads", type=int, default=d.threads, help=f"PyTorch threads, fixed for determinism (default {d.threads})"
    )
    g.add_argument("--layers", type=int, default=d.n_layer, help=f"transformer layers (default {d.n_layer})")
    g.add_argument("--width", type=int, default=d.n_embd, help=f"hidden size (default {d.n_embd})")
    g.add_argument("--heads", type=int, default=d.n_head, help=f"attention heads (default {d.n_head})")
    g.add_argument("--lr", type=float, default=d.lr, help=f"peak learning rate (default {d.lr})")
    g.add_argument(
        "--dagger-dialogues",
        type=int,
        default=None,
        metavar="N",
        help="DAgger: after each epoch from --dagger-from on (not the last), the model plays N dialogues and the "
        "teacher labels every turn of them; they join every later epoch (default: a tenth of --dialogues; 0: none)",
    )
    g.add_argument(
        "--dagger-from",
        type=int,
        default=d.dagger_from,
        metavar="E",
        help=f"the epoch after which the first DAgger round is played (default {d.dagger_from})",
    )
    g.add_argument(
        "--belief-weight",
        type=float,
        default=d.belief_weight,
        metavar="W",
        help="the loss weight of the belief spans' tokens, the model's own record of the user's constraints "
        f"(default {d.belief_weight:g}; 1: every target alike)",
    )
    g.add_argument(
        "--dropout",
        type=float,
        default=None,
        metavar="P",
        help=f"GPT-2's embedding and residual dropout while training (default {d.dropout:g}; each step's masks "
        "drawn from the seed and the step: deterministic and resumable)",
    )
    g.add_argument(
        "--chat",
        dest="chat",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the chat mode (the act after the turns as said, for hf:DIR and openai:; docs/e2e.md); --no-chat trains "
        "faster (default: on with --teacher, off with --corpus)",
    )


def e2e_config_from_args(args: argparse.Namespace):
    """The :class:`~policies.e2e.E2EConfig` of a ``train --policy e2e`` command line."""
    d = E2EConfig()
    corpus = getattr(args, "corpus", None)
    if corpus and args.teacher:
        raise ConfigError("--policy e2e: give --teacher SPEC or --corpus PATH, not both")
    if not corpus:
        given = [o for o, v in (("--split", args.split), ("--validation-split", args.validation_split),
                                ("--patience", args.patience),
                                ("--no-act-turns", getattr(args, "no_act_turns", None))) if v is not None]  # fmt: skip
        if given:
            raise ConfigError(f"{', '.join(given)}: for --corpus PATH (people's dialogues), not for a teacher")
    if corpus:
        return _corpus_config(args, corpus)
    if not args.teacher:
        raise ConfigError(
            "--policy e2e needs --teacher SPEC (the policy to imitate, e.g. handcrafted) or --corpus PATH (people's dialogues)"
        )
    seeds = args.seeds if args.seeds is not None else [0]
    if len(seeds) != 1:
        raise ConfigError(f"--policy e2e trains one seed per run folder; got --seed {' '.join(map(str, seeds))}")
    if args.rewards:
        raise ConfigError("--reward does not apply to --policy e2e (it imitates its teacher; it has no reward)")
    if args.dagger_dialogues is not None and args.dagger_dialogues < 0:
        raise ConfigError(f"--dagger-dialogues must be 0 (no DAgger rounds) or more, got {args.dagger_dialogues}")
    dialogues = args.dialogues if args.dialogues is not None else d.dialogues
    return E2EConfig(
        teacher=args.teacher,
        seed=int(seeds[0]),
        dialogues=dialogues,
        epochs=args.epochs if args.epochs is not None else d.epochs,
        checkpoint_every=args.checkpoint_every if args.checkpoint_every is not None else dialogues,
        batch_dialogues=args.batch_dialogues if args.batch_dialogues is not None else d.batch_dialogues,
        n_layer=args.layers,
        n_embd=args.width,
        n_head=args.heads,
        lr=args.lr,
        threads=args.threads,
        chat=getattr(args, "chat", None) is not False,
        **({} if args.dagger_dialogues is None else {"dagger_dialogues": args.dagger_dialogues}),
        dagger_from=args.dagger_from,
        belief_weight=args.belief_weight,
        dropout=args.dropout if args.dropout is not None else d.dropout,
        domain=args.domain,
        user=args.user,
    )


def _corpus_config(args: argparse.Namespace, corpus: str) -> E2EConfig:
    """A corpus run's configuration: every dialogue of the split in each epoch (the largest
    multiple of the batch; each epoch draws its own), unless ``--dialogues`` says fewer."""
    seeds = args.seeds if args.seeds is not None else [0]
    if len(seeds) != 1:
        raise ConfigError(f"--policy e2e trains one seed per run folder; got --seed {' '.join(map(str, seeds))}")
    if args.rewards:
        raise ConfigError("--reward does not apply to --policy e2e (it imitates people; it has no reward)")
    if args.dagger_dialogues:
        raise ConfigError("--dagger-dialogues: DAgger needs a teacher to label the model's dialogues, not --corpus")
    if args.user:
        raise ConfigError("--user: a corpus run plays no simulated user")
    return corpus_e2e_config(
        corpus,
        args.split or "train",
        validation=args.validation_split or CORPUS_DEFAULTS["validation"],
        seed=int(seeds[0]),
        dialogues=args.dialogues,
        epochs=args.epochs,
        batch_dialogues=args.batch_dialogues,
        checkpoint_every=args.checkpoint_every,
        patience=args.patience,
        n_layer=args.layers,
        n_embd=args.width,
        n_head=args.heads,
        lr=args.lr,
        threads=args.threads,
        chat=bool(getattr(args, "chat", None)),
        belief_weight=args.belief_weight,
        **({} if args.dropout is None else {"dropout": args.dropout}),
        **({} if getattr(args, "no_act_turns", None) is None else {"no_act_turns": args.no_act_turns}),
        domain=args.domain,
    )


def cmd_train_e2e(args: argparse.Namespace) -> int:
    """Run ``behavsim train --policy e2e``; returns the exit code (0 ok, 2 bad input)."""
    t0 = time.perf_counter()
    c0 = time.process_time()
    report: Any = (lambda line: print(line, file=sys.stderr, flush=True)) if args.progress else None
    try:
        config = e2e_config_from_args(args)
        ckpts = train_e2e(config, args.output, report=report)
    except BehavsimError as exc:
        print(f"behavsim train: error: {exc}", file=sys.stderr)
        return 2
    print(f"{'checkpoint':<28} {'dialogues':>9}")
    for n, path in ckpts:
        print(f"{str(path):<28} {n:>9}")
    best = Path(args.output) / BEST_FILE
    if best.is_file():
        info = json.loads(best.read_text(encoding="utf-8"))
        print(f"best on validation: {info['checkpoint']} (validation loss {info['validation']:.4f})")
    print(
        f"end-to-end model: {ckpts[-1][1] if ckpts else '-'} (wall {time.perf_counter() - t0:.1f} s, "
        f"CPU {time.process_time() - c0:.1f} s)"
    )
    return 0
