"""The ``behavsim`` command line: a thin layer over the library.

Core sub-commands: ``pair`` (all scores of one act/prompt pair), ``compare`` (the engine on saved
response tables), ``scores`` (list the registered scores, train STSScore's model, validate the text
scores against human judgements), ``map``. Packages building on behavsim add
sub-commands through the entry-point group ``behavsim.commands`` (e.g. ``train`` from
``policies``); behavsim itself imports none of them until the command line is built.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd

from ._acts import canonical_act
from ._comparison import MATRIX_FORMATS, Comparison, ComparisonFiles
from ._engine import PAIR_MODES, compare, resolve_pairs
from ._errors import BehavsimError, ConfigError
from ._executor import add_executor_option, get_executor
from ._interrupt import InterruptRequest, command_signals, raise_if_interrupted
from ._map import register_map
from ._scores_cli import register_scores
from ._sinks import PER_CONTEXT_FORMATS, PerContextWriter
from ._slices import write_slices
from ._tables import ResponseTable
from ._util import package_version
from .commands import CommandParser, add_model_options, missing_command, score_names, score_options
from .scores import get_score, list_scores

__all__ = ["main", "console_main", "build_parser"]


def _fmt(v: float) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


# ------------------------------------------------------------------------------- pair
def _cmd_pair(args: argparse.Namespace) -> int:
    names = score_names(args.scores)
    opts = score_options(args)
    a, b = canonical_act(args.act_a), canonical_act(args.act_b)
    pa, pb = args.prompts or [None, None]
    result: dict = {"act_a": a, "act_b": b, "prompt_a": pa, "prompt_b": pb, "scores": {}, "signatures": {}}
    for name in names:
        s = get_score(name, **opts.get(name, {}))
        v = s.score(a, b) if s.info.level == "semantic" else s.score(pa, pb)
        result["scores"][name] = None if math.isnan(v) else v
        result["signatures"][name] = s.signature
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    print(f"a : {a}" + (f"  | {pa}" if pa is not None else ""))
    print(f"a': {b}" + (f"  | {pb}" if pb is not None else ""))
    width = max(len(n) for n in names)
    for name in names:
        v = result["scores"][name]
        print(f"  {name:<{width}}  {_fmt(float('nan') if v is None else v)}")
    print("signatures:")
    for name in names:
        print(f"  {result['signatures'][name]}")
    return 0


# ------------------------------------------------------------------------------- compare
#: A job writing more per-context rows than this says how to write fewer (``--per-context``).
MANY_ROWS = 5_000_000


@dataclass(frozen=True)
class _Outputs:
    """Where ``compare`` writes: the per-context file ``out`` (the means and signatures beside
    it; None: none), the matrices' folder (None: no matrices) and the rows' format (``none``,
    ``csv``, ``parquet``)."""

    out: Path | None
    matrix_dir: Path | None
    rows: str = "none"


def _output_paths(args: argparse.Namespace) -> _Outputs:
    """``-o`` and ``--matrix [DIR]``, checked against each other and ``--per-context``."""
    out = Path(args.output) if args.output is not None else None
    matrix_dir: Path | None = None
    if args.matrix == "":
        if out is None:
            raise ConfigError("--matrix needs a folder (--matrix DIR) or -o/--output (the matrices then go beside it)")
        matrix_dir = out.with_name(out.stem + ".matrix")
    elif args.matrix is not None:
        matrix_dir = Path(args.matrix)
    if out is None and args.per_context not in (None, "none"):
        raise ConfigError(f"--per-context {args.per_context} needs -o/--output: the file to write the rows to")
    if out is None and matrix_dir is None:
        raise ConfigError("compare needs -o/--output (per-context values) or --matrix DIR (all-pairs matrices)")
    if args.chunk_contexts is not None and matrix_dir is None:
        raise ConfigError("--chunk-contexts applies to --matrix only")
    return _Outputs(out, matrix_dir)


def _rows_format(args: argparse.Namespace, where: _Outputs) -> _Outputs:
    """``where`` with the per-context rows' format: ``--per-context``, else by ``-o``'s suffix (a
    bare ``--matrix``, whose folder ``-o`` names: none, only the means)."""
    out, fmt = where.out, args.per_context
    if fmt is None:
        fmt = "none" if args.matrix == "" else ("parquet" if out and out.suffix.lower() == ".parquet" else "csv")
    if getattr(args, "slice", None) and fmt == "none":
        raise ConfigError(
            "--slice needs the per-context rows written: -o FILE, and with a bare --matrix or --per-context none "
            "also --per-context csv|parquet"
        )
    if out is not None and fmt != "none":
        kind = "parquet" if out.suffix.lower() == ".parquet" else "csv" if out.suffix.lower() == ".csv" else None
        if kind is not None and kind != fmt:
            raise ConfigError(f"-o {out} names a .{kind} file but --per-context says {fmt}; make them agree")
    return _Outputs(out, where.matrix_dir, "none" if out is None else fmt)


def _load_tables(paths: Sequence[str]) -> list[ResponseTable]:
    """The response tables, with a note for each that failed on some contexts."""
    tables = [ResponseTable.load(p) for p in paths]
    for t in tables:
        if t.n_errors:
            print(
                f"note: {t.id!r} failed on {t.n_errors} of {len(t)} contexts; their semantic scores are n/a",
                file=sys.stderr,
            )
    return tables


def _pairs_option(args: argparse.Namespace, where: _Outputs, tables: list[ResponseTable]) -> Any:
    """The pairs to compare (None with no ``-o``: the matrices alone), with a note when the rows
    written would be very many."""
    if where.out is None:
        return None
    pairs: Any = args.pairs
    if args.pair:
        pairs = [tuple(p.split(",", 1)) if "," in p else (p,) for p in args.pair]
    n_rows = len(resolve_pairs(tables, pairs, args.by)) * len(tables[0])
    if args.per_context is None and where.rows != "none" and n_rows > MANY_ROWS:
        print(
            f"note: this job writes {n_rows:,} per-context rows to {where.out}; --per-context none writes only the "
            "pair means, --per-context parquet a compact file, --matrix DIR the all-pairs matrices",
            file=sys.stderr,
        )
    return pairs


def _cmd_compare(args: argparse.Namespace) -> int:
    where = _output_paths(args)
    executor = get_executor(args.executor)
    where = _rows_format(args, where)
    tables = _load_tables(args.tables)
    pairs = _pairs_option(args, where, tables)
    if where.matrix_dir is not None and (args.pair or args.pairs != "all"):
        print("note: --matrix covers all pairs (and self-pairs); --pairs/--pair apply to -o only", file=sys.stderr)
    run = {
        "scores": score_names(args.scores),
        "score_options": score_options(args),
        "by": args.by,
        "progress": args.progress,
        "executor": executor,
        "matrix": where.matrix_dir is not None,
        "chunk_contexts": args.chunk_contexts,
    }
    if where.rows == "none":
        comp = compare(tables, pairs, per_context=False, **run)
    else:
        assert where.out is not None
        with PerContextWriter(where.out, where.rows) as writer:  # streamed: the rows are never all in memory
            comp = compare(tables, pairs, per_context=writer, **run)
    files = comp.save(where.out, matrix_dir=where.matrix_dir, matrix_format=args.matrix_format)
    if files.matrix_dir is not None:
        _print_matrices(comp, files)
    if where.out is None:
        return 0
    if args.slice:
        rows = where.out if where.rows != "none" else None
        for path in write_slices(comp, args.slice, where.out, tables=tables, contexts=args.contexts, rows=rows):
            print(f"slices: {path}", file=sys.stderr)
    _print_means(args, comp, where, files)
    return 0


def _print_matrices(comp: Comparison, files: ComparisonFiles) -> None:
    n_pol = len(comp.policies)
    print(f"{n_pol} x {n_pol} matrices over {comp.n_contexts} contexts written to {files.matrix_dir}/:")
    for name, path in files.matrices.items():
        print(f"  {name:<10} {path.name}, {files.figures[name].name}")
    assert files.n_missing is not None and files.matrix_meta is not None
    print(f"  contexts left out of each mean: {files.n_missing.name}")
    if files.n_na is not None:
        print(f"  contexts where the semantic scores do not apply (text-only answers): {files.n_na.name}")
    print(f"  signatures: {files.matrix_meta.name}")


def _print_means(args: argparse.Namespace, comp: Comparison, where: _Outputs, files: ComparisonFiles) -> None:
    if args.json:
        print(comp.means.to_json(orient="records", indent=2))
        return
    show = comp.means[["a", "b", *comp.score_names]].copy()
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(show.to_string(index=False, float_format=lambda v: _fmt(v)))
    if where.rows != "none":
        rows = f"{where.out}"
    elif args.per_context is None:
        rows = "not written (with a bare --matrix: --per-context csv|parquet writes them)"
    else:
        rows = "not written (--per-context none)"
    print(
        f"\n{len(comp.means)} pairs x {comp.n_contexts} contexts; per-context values: {rows}; "
        f"means: {files.means}; signatures: {files.meta}"
    )


def build_parser() -> argparse.ArgumentParser:
    _scores_help = (
        "scores to compute, case-insensitive, comma or space separated (default: the paper's eight); registered: "
        f"{', '.join(list_scores())}"
    )
    version = package_version("behavsim")
    parser = CommandParser(prog="behavsim", description="How differently do two dialogue policies behave?")
    parser.add_argument("--version", action="version", version=f"behavsim {version}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("pair", help="all scores of one pair of acts (and prompts)")
    p.add_argument("act_a", metavar="ACT_A", help="e.g. 'request(food)' or 'inform(name=\"la mimosa\",area=centre)'")
    p.add_argument("act_b", metavar="ACT_B")
    p.add_argument("--prompts", nargs=2, metavar=("P_A", "P_B"), help="the two prompts (text scores are n/a without)")
    p.add_argument("--scores", nargs="+", metavar="NAME", help=_scores_help)
    p.add_argument("--json", action="store_true", help="print JSON")
    add_model_options(p)
    p.set_defaults(func=_cmd_pair)

    _add_compare_parser(sub, _scores_help)

    register_scores(sub)  # the core's 'scores' group: list, train-sts, validate (behavsim/_scores_cli.py)
    register_map(sub)  # the core's 'map' command (behavsim/_map.py)
    _add_plugin_commands(sub)
    return parser


def _add_compare_parser(sub: Any, scores_help: str) -> None:
    """The ``compare`` command's parser: inputs and pairs, then outputs."""
    c = sub.add_parser("compare", help="compare saved response tables (JSONL/Parquet) context by context")
    c.add_argument("tables", nargs="+", metavar="TABLE", help="response tables of one context set")
    c.add_argument(
        "--pairs",
        default="all",
        choices=PAIR_MODES,
        help="all pairs; consecutive checkpoints of each trial; or cross (group A x group B, see --by)",
    )
    c.add_argument("--pair", action="append", metavar="ID_A,ID_B", help="an explicit pair of policy ids (repeatable)")
    c.add_argument(
        "--by",
        metavar="KEY",
        help="for --pairs cross (required there): the policy metadata key that splits "
        "the tables into two groups, e.g. reward or seed",
    )
    c.add_argument("--scores", nargs="+", metavar="NAME", help=scores_help)
    _add_compare_outputs(c)
    c.add_argument("--json", action="store_true", help="print the means as JSON")
    c.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None, help="progress bars (default: for big jobs)"
    )
    add_executor_option(c)
    add_model_options(c)
    c.set_defaults(func=_cmd_compare)


def _add_compare_outputs(c: argparse.ArgumentParser) -> None:
    """``compare``'s outputs: -o, --per-context, --matrix (and its format and chunks), --slice."""
    c.add_argument(
        "-o",
        "--output",
        help="file of per-context values, CSV or .parquet (means and signatures beside it); needed unless --matrix "
        "DIR; with --matrix DIR both are written",
    )
    c.add_argument(
        "--per-context",
        choices=PER_CONTEXT_FORMATS,
        help="the per-context rows: csv, parquet (streamed to -o in chunks, bounded memory) or none (only the "
        "pair means); default: by -o's suffix, or none with a bare --matrix (the means are written beside -o either way)",
    )
    c.add_argument(
        "--matrix",
        nargs="?",
        const="",
        metavar="DIR",
        help="write per score the P x P matrix of means over every ordered pair and self-pair "
        "(DIR/<score>.csv, a <score>.png heatmap, .svg too up to 12 policies; n_missing.csv: the contexts left out; "
        "n_na.csv: where the semantic scores do not apply, beside text-only answers), in bounded memory, "
        "whatever --pairs says; without DIR: <output stem>.matrix/ beside -o",
    )
    c.add_argument(
        "--matrix-format", choices=MATRIX_FORMATS, default="csv", help="file format of the matrices (default csv)"
    )
    c.add_argument(
        "--chunk-contexts", type=int, metavar="N", help="for --matrix: contexts per chunk (default: automatic)"
    )
    c.add_argument(
        "--slice",
        action="extend",
        nargs="+",
        metavar="KIND",
        help="also write every score per slice beside -o (out.csv -> out.slice-KIND.csv): acttype (the first "
        "policy's act type), slot (each slot the belief mentions), uncertainty (bins of belief certainty), turn",
    )
    c.add_argument("--contexts", metavar="FILE", help="for --slice slot/uncertainty/turn: the context set compared")


def _add_plugin_commands(sub: Any) -> None:
    """The sub-commands of the packages building on behavsim (entry points ``behavsim.commands``);
    one that cannot be loaded is listed, and says why when run."""
    for ep in sorted(metadata.entry_points(group="behavsim.commands"), key=lambda e: e.name):
        try:
            register = ep.load()
        except ImportError as exc:
            sub.add_parser(ep.name, help=f"(unavailable: {exc})").set_defaults(
                func=lambda a, _e=exc, _n=ep.name: _unavailable(_n, _e)
            )
            continue
        register(sub)


def _unavailable(name: str, exc: Exception) -> int:
    print(f"behavsim {name}: this command could not be loaded: {exc}", file=sys.stderr)
    return 2


def _cut(text: str, limit: int = 300) -> str:
    """One line of at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _os_error(exc: OSError) -> str:
    """An operating-system error as one line naming the file."""
    what = exc.strerror or type(exc).__name__
    names = [f for f in (exc.filename, exc.filename2) if f is not None]
    if names:
        return f"{' -> '.join(str(n) for n in names)}: {what}"
    return _cut(str(exc) or what)


#: The exit status of an interrupted command (128 + SIGINT, as shells report Ctrl-C).
INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """The ``behavsim`` command. Every failure a user can cause (input, output, a damaged file,
    the environment) ends in one line naming the file or option and exit status 2; anything else
    is a bug of behavsim: one line, a hint to report it, exit status 1 (``BEHAVSIM_DEBUG=1``
    shows the traceback).

    SIGINT and SIGTERM are the command's: handled from the start (exit status 130 and the line
    ``interrupted``, after the clean-up: workers stopped, partial files removed) and the
    previous handlers put back when ``main`` returns, however it returns
    (:mod:`behavsim._interrupt`)."""
    return _command(argv, restore=True)


#: The environment of the ``behavsim`` program's own process: the Hugging Face hub off (its
#: libraries read these once, when first imported) and no telemetry. The library sets none of them
#: in its host's process; its model loads ask for local files only.
OFFLINE_ENVIRONMENT = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def console_main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``behavsim`` program (its console script, ``python -m behavsim.cli``): :func:`main`,
    then the process exits with its status. A signal that arrives once the command has returned,
    while Python finalises, ends the process at once with that status: a second Ctrl-C turns
    neither 130 nor any other status into a death by signal.

    The process is the program's, so it switches the model hubs off for itself
    (:data:`OFFLINE_ENVIRONMENT`) before any command can import a model library, and with it the
    worker processes it starts; :func:`main`, called by a host program, leaves the environment
    alone."""
    os.environ.update(OFFLINE_ENVIRONMENT)
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    status = _command(argv, restore=False)
    _forget_stray_keyboard_interrupt()
    sys.exit(status)


def _forget_stray_keyboard_interrupt() -> None:
    """CPython marks the process as ended by an unhandled KeyboardInterrupt whenever one leaves
    code that ``exec``/``eval`` runs from a string (a namedtuple or a dataclass being made while a
    module is imported, when the signal lands there), even if the command then catches it; after
    finalising, ``python -m behavsim.cli`` kills itself with SIGINT (exit -2) whatever the
    command's status (a console script's exit takes another path in CPython and is spared).
    The next string run through ``exec`` clears that mark, and nothing can set it again: the
    command's signals now end the process at once with its status or are ignored."""
    exec("None")  # noqa: S102 -- a constant string: the call clears the interpreter's mark


def _command(argv: Sequence[str] | None, restore: bool) -> int:
    with command_signals(restore=restore) as req:
        try:
            status = _main(argv, req)
        except KeyboardInterrupt:  # the interrupt landed while the result was being reported
            status = INTERRUPTED
        except SystemExit as exc:  # argparse (--help, --version, a usage error)
            if not req.requested:
                req.exit_status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
                raise
            status = INTERRUPTED
        finally:  # from here on a signal is recorded and raises nothing
            req.closing = True
        if req.requested:
            status = INTERRUPTED
        if status == INTERRUPTED:
            print("interrupted", file=sys.stderr)
        req.exit_status = status
    return status


def _main(argv: Sequence[str] | None, req: InterruptRequest) -> int:
    cmd = "behavsim"
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            missing_command(parser)
        cmd = f"behavsim {args.command}"
        raise_if_interrupted()
        return int(args.func(args) or 0)
    except SystemExit:
        raise
    except BaseException as exc:
        req.closing = True
        return _failure(cmd, exc, req)


def _failure(cmd: str, exc: BaseException, req: InterruptRequest) -> int:
    """The exit status of a command that raised ``exc``, its one line printed. After an
    interrupt every exception counts as the interrupt (a library may have turned the
    KeyboardInterrupt into an error of its own, e.g. matplotlib's "Invalid bounding box")."""
    if req.requested or isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(exc, BehavsimError):
        print(f"{cmd}: error: {exc}", file=sys.stderr)
        return 2
    if isinstance(exc, OSError):  # a folder that cannot be written, a full disk, a file that vanished
        print(f"{cmd}: error: {_os_error(exc)}", file=sys.stderr)
        return 2
    if isinstance(exc, RecursionError):
        print(f"{cmd}: error: an input file is nested too deeply to read (damaged or not behavsim's?)", file=sys.stderr)
        return 2
    if isinstance(exc, MemoryError):
        print(f"{cmd}: error: out of memory (a smaller job, or --chunk-contexts / --per-context none)", file=sys.stderr)
        return 2
    if not isinstance(exc, Exception):  # GeneratorExit and the like: not ours to report
        raise exc
    if os.environ.get("BEHAVSIM_DEBUG"):
        raise exc
    print(
        f"{cmd}: internal error: {type(exc).__name__}: {_cut(str(exc))}\n"
        "  This is a bug in behavsim: please report it with the command line "
        "(BEHAVSIM_DEBUG=1 shows the traceback).",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":  # pragma: no cover
    console_main()
