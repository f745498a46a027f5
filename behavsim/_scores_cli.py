"""``behavsim scores``: the registered scores (``list``, also ``behavsim scores`` alone), STSScore's
model (``train-sts``) and every text score against human judgements (``validate``)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from .commands import CommandParser, add_model_options, score_names, score_options
from .scores import DEFAULT_SCORES, list_scores, score_info, scores

__all__ = ["register_scores"]


def _model_of(name: str, options: dict[str, Any]) -> str:
    """Which model a score would use with the command's model options ('' for none)."""
    cls = scores.get(name)
    summary = getattr(cls, "model_summary", None)
    return (summary(**options) or "") if callable(summary) else ""


def _cmd_list(args: argparse.Namespace) -> int:
    opts = score_options(args) if hasattr(args, "use_encoder") else {}
    names = list_scores()
    width = max(len(n) for n in names)
    for name in names:
        info = score_info(name)
        where = scores.source(name)
        mark = "default" if name in DEFAULT_SCORES else "asked"
        bounds = f"[{info.lower:g}, {info.upper:g}]"
        line = f"{name:<{width}}  {info.level:<8}  {bounds:<8}  {mark:<7}  {info.description}"
        if where:
            line += f"  [from {where}]"
        print(line)
        model = _model_of(name, opts.get(name, {}))
        if model:
            print(f"{'':<{width}}  model: {model}")
    print(
        "\ndefault: computed when --scores is not given (the paper's eight); asked: computed when named "
        "(--scores NAME, a study config's scores)"
    )
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from ._sts_train import STSTrainConfig, train_sts

    config = STSTrainConfig(
        seed=args.seed,
        threads=args.threads,
        architecture=args.architecture,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        loss=args.loss,
        orders=args.orders,
        limit=args.limit,
        checkpoint_every=args.checkpoint_every,
    )
    out = train_sts(
        args.output,
        config,
        force=args.force,
        progress=args.progress,
        say=lambda m: print(m, file=sys.stderr),
    )
    print(out)
    return 0


def _fmt(v: float) -> str:
    return "nan" if math.isnan(v) else f"{v:.4f}"


def _cmd_validate(args: argparse.Namespace) -> int:
    from ._sts_validate import plot_validation, text_score_variants, validate_text_scores

    variants = text_score_variants(score_options(args))
    if args.scores:
        wanted = set(score_names(args.scores))
        variants = [v for v in variants if v[1] in wanted]
    result = validate_text_scores(variants, progress=args.progress, say=None)
    for label, why in result.skipped.items():
        print(f"note: {label} skipped: {why}", file=sys.stderr)
    if args.format == "csv":
        print("score,pearson,spearman,n")
        for row in result.rows:
            print(f"{row.score},{_fmt(row.pearson)},{_fmt(row.spearman)},{row.n}")
    else:
        width = max([len(r.score) for r in result.rows] + [5])
        print(
            f"STS-B {result.split.name} ({len(result.split)} pairs, {result.split.digest[:19]}…): agreement with the human labels"
        )
        print(f"{'score':<{width}}  {'pearson':>8}  {'spearman':>8}  {'n':>5}")
        for row in result.rows:
            print(f"{row.score:<{width}}  {_fmt(row.pearson):>8}  {_fmt(row.spearman):>8}  {row.n:>5}")
        print("signatures:")
        for row in result.rows:
            print(f"  {row.signature}")
    if args.plots:
        png, _ = plot_validation(result, Path(args.plots) / "sts_validation")
        print(f"plots: {png}", file=sys.stderr)
    return 0


def register_scores(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``scores`` command group to ``subparsers``."""
    p = subparsers.add_parser(
        "scores",
        help="the scores: list them (also with no sub-command), train STSScore's model, validate the text scores",
        description="Without a sub-command: the registered scores (as 'list').",
    )
    sub = p.add_subparsers(dest="scores_command", metavar="SUBCOMMAND", parser_class=CommandParser)
    p.set_defaults(func=_cmd_list)

    lst = sub.add_parser("list", help="every registered score: level, bounds, default or asked, and its model")
    add_model_options(lst)
    lst.set_defaults(func=_cmd_list)

    t = sub.add_parser(
        "train-sts",
        help="fine-tune STSScore's model on STS-B's training split (offline, CPU; resumable)",
        description="Fine-tune a bi-encoder (default) or a cross-encoder from the offline all-MiniLM-L6-v2 weights on "
        "STS-B's training split (5,749 human-rated pairs) and save it in Hugging Face's format. Deterministic (same seed and threads: "
        "the same weights), resumable (run it again after an interrupt), on CPU.",
    )
    t.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="where the model goes (default: the cache, where --scores STSScore finds it)",
    )
    t.add_argument(
        "--seed", type=int, default=0, help="seed of the order, dropout and a cross-encoder's head (default 0)"
    )
    t.add_argument("--threads", type=int, default=2, help="PyTorch threads, fixed and recorded (default 2)")
    t.add_argument(
        "--architecture",
        choices=("bi", "cross"),
        default="bi",
        help="bi (default): the cosine of two mean-pooled embeddings, symmetric by construction, one pass per "
        "prompt; cross: one output per pair read in both orders",
    )
    t.add_argument("--epochs", type=int, help="passes over the training pairs (default: bi 1, cross 5)")
    t.add_argument("--batch-size", type=int, default=16, help="pairs per step (default 16)")
    t.add_argument("--lr", type=float, help="peak learning rate (default: bi 5e-5, cross 8e-5)")
    t.add_argument(
        "--orders",
        choices=["both", "one"],
        default="one",
        help="each epoch shows every pair in both orders (a, b and b, a) or in one drawn at random (default one)",
    )
    t.add_argument(
        "--loss",
        choices=("cosine", "bce", "mse"),
        help="bi: cosine (the only one: the cosine against the label / 5); cross: bce (its default: the label / 5 "
        "as a probability, the model read through the sigmoid) or mse (the 0-5 label)",
    )
    t.add_argument("--limit", type=int, metavar="N", help="train on the first N pairs only (a quick trial)")
    t.add_argument("--checkpoint-every", type=int, default=100, metavar="STEPS", help="steps between checkpoints")
    t.add_argument(
        "--force", action="store_true", help="train again even if a model is there (it is replaced at the end)"
    )
    t.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=True, help="a progress bar (default on)"
    )
    t.set_defaults(func=_cmd_train)

    v = sub.add_parser(
        "validate",
        help="every text score against the human labels of STS-B's test split (Pearson, Spearman)",
        description="Pearson's r and Spearman's rho between each text score and the human similarity labels of "
        "STS-B's test split (1,379 pairs): USE cosine and angular, BLEU-4, BERTScore (its default model and the "
        "paper's roberta-large when it is on the machine), STSScore and every text score another package "
        "registers. A score whose model is not here is skipped with a note.",
    )
    v.add_argument(
        "--format",
        choices=("table", "csv"),
        default="table",
        help="table (default) or csv rows score,pearson,spearman,n",
    )
    v.add_argument("--scores", nargs="+", metavar="NAME", help="only these text scores")
    v.add_argument("--plots", metavar="DIR", help="also draw label-vs-score plots into DIR/sts_validation.png/.svg")
    v.add_argument("--progress", action=argparse.BooleanOptionalAction, default=False, help="progress bars")
    add_model_options(v)
    v.set_defaults(func=_cmd_validate)
    return p
