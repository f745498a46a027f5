"""The ``behavsim`` command line: a thin layer over the library.

Core sub-commands: ``pair`` (all scores of one act/prompt pair), ``compare`` (the engine on saved
response tables), ``scores`` (list the registered scores). Packages building on behavsim add
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
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

from ._errors import BehavsimError, ConfigError
from ._executor import add_executor_option, get_executor
from ._interrupt import InterruptRequest, command_signals, raise_if_interrupted
from ._io import atomic_path
from ._util import package_version
from .commands import CommandParser, add_model_options, missing_command, score_names, score_options
from .scores import get_score, list_scores, score_info

__all__ = ["main", "console_main", "build_parser"]


def _fmt(v: float) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


# ------------------------------------------------------------------------------- pair
def _cmd_pair(args: argparse.Namespace) -> int:
    from ._acts import canonical_act

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


def _cmd_compare(args: argparse.Namespace) -> int:
    from ._engine import _plan, compare
    from ._sinks import PerContextWriter
    from ._tables import ResponseTable

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
    executor = get_executor(args.executor)
    fmt = args.per_context
    if fmt is None:  # the per-context CSV (Parquet by suffix); a bare --matrix, whose folder -o names: the means
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
    tables = [ResponseTable.load(p) for p in args.tables]
    for t in tables:
        if t.n_errors:
            print(
                f"note: {t.id!r} failed on {t.n_errors} of {len(t)} contexts; their semantic scores are n/a",
                file=sys.stderr,
            )
    pairs: Any = None
    if out is not None:
        pairs = args.pairs
        if args.pair:
            pairs = [tuple(p.split(",", 1)) if "," in p else (p,) for p in args.pair]
        n_rows = len(_plan(tables, pairs, args.by)) * len(tables[0])
        if args.per_context is None and fmt != "none" and n_rows > MANY_ROWS:
            print(
                f"note: this job writes {n_rows:,} per-context rows to {out}; --per-context none writes only the "
                "pair means, --per-context parquet a compact file, --matrix DIR the all-pairs matrices",
                file=sys.stderr,
            )
    if matrix_dir is not None and (args.pair or args.pairs != "all"):
        print("note: --matrix covers all pairs (and self-pairs); --pairs/--pair apply to -o only", file=sys.stderr)
    run = {
        "scores": score_names(args.scores),
        "score_options": score_options(args),
        "by": args.by,
        "progress": args.progress,
        "executor": executor,
        "matrix": matrix_dir is not None,
        "chunk_contexts": args.chunk_contexts,
    }
    if out is None or fmt == "none":
        comp = compare(tables, pairs, per_context=False, **run)
    else:
        with PerContextWriter(out, fmt) as writer:
            comp = compare(tables, pairs, per_context=writer, **run)
    if matrix_dir is not None:
        _write_matrices(comp, args, matrix_dir)
    if out is None:
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    means_path = out.with_name(out.stem + ".means.csv")
    with atomic_path(means_path) as tmp:
        comp.means.to_csv(tmp, index=False, float_format="%.10g")
    meta_path = out.with_name(out.stem + ".meta.json")
    with atomic_path(meta_path) as tmp:
        tmp.write_text(
            json.dumps(
                {
                    "context_fingerprint": comp.context_fingerprint,
                    "signatures": comp.signatures,
                    "policies": comp.policies,
                    "pairs": args.pairs if not args.pair else args.pair,
                    "tables": [str(p) for p in args.tables],
                },
                indent=2,
                sort_keys=True,
            )
            + "\n"
        )
    if args.slice:
        from ._slices import write_slices

        rows = out if fmt != "none" else None
        for path in write_slices(comp, args.slice, out, tables=tables, contexts=args.contexts, rows=rows):
            print(f"slices: {path}", file=sys.stderr)
    if args.json:
        print(comp.means.to_json(orient="records", indent=2))
    else:
        names = comp.score_names
        show = comp.means[["a", "b", *names]].copy()
        with __import__("pandas").option_context("display.width", 200, "display.max_columns", 20):
            print(show.to_string(index=False, float_format=lambda v: _fmt(v)))
        if fmt != "none":
            where = f"{out}"
        elif args.per_context is None:
            where = "not written (with a bare --matrix: --per-context csv|parquet writes them)"
        else:
            where = "not written (--per-context none)"
        print(
            f"\n{len(comp.means)} pairs x {len(tables[0])} contexts; per-context values: {where}; "
            f"means: {means_path}; signatures: {meta_path}"
        )
    return 0


def _write_counts(counts: dict[str, Any], stem: Path, fmt: str) -> Path:
    """Count matrices (``{score: P×P frame}``) as one long table ``a, b, <score>...`` at ``stem``.csv/.parquet."""
    table = __import__("pandas").DataFrame({name: df.stack() for name, df in counts.items()}).reset_index()
    path = stem.with_suffix(".parquet" if fmt == "parquet" else ".csv")
    with atomic_path(path) as tmp:
        if fmt == "parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False)
    return path


def _write_matrices(comp: Any, args: argparse.Namespace, out: Path) -> None:
    """``compare --matrix [DIR]``: every ordered pair and self-pair, whatever ``--pairs`` says."""
    from .plots import heatmap

    assert comp.matrices is not None and comp.n_missing is not None
    out.mkdir(parents=True, exist_ok=True)
    written = []
    n_pol = len(comp.policies)
    for name in comp.score_names:
        if args.matrix_format == "parquet":
            path = out / f"{name}.parquet"
            with atomic_path(path) as tmp:
                comp.matrices[name].to_parquet(tmp)
        else:
            path = out / f"{name}.csv"
            with atomic_path(path) as tmp:
                comp.matrices[name].to_csv(tmp)  # shortest round-trip repr: the exact double
        info = score_info(name)
        lo = info.lower if math.isfinite(info.lower) else None
        hi = info.upper if math.isfinite(info.upper) else None
        title = f"{name}, mean over {comp.n_contexts} contexts"
        png, _ = heatmap(comp.matrices[name], out / name, title, vmin=lo, vmax=hi, annotate=n_pol <= 12)
        written.append((name, path, png))
    # the contexts left out of each mean, every score in one long table (a, b, <score>...)
    missing_path = _write_counts(comp.n_missing, out / "n_missing", args.matrix_format)
    # beside text-only answers: the contexts where each semantic score does not apply (a, b, <score>...)
    na_path = None if comp.n_na is None else _write_counts(comp.n_na, out / "n_na", args.matrix_format)
    meta = out / "matrix.meta.json"
    with atomic_path(meta) as tmp:
        tmp.write_text(
            json.dumps(
                {
                    "context_fingerprint": comp.context_fingerprint,
                    "n_contexts": comp.n_contexts,
                    "signatures": comp.signatures,
                    "policies": comp.policies,
                    "pairs": "all ordered pairs and self-pairs; entry [a, b] = score(a's answer, b's answer)",
                    "tables": [str(p) for p in args.tables],
                },
                indent=2,
                sort_keys=True,
            )
            + "\n"
        )
    print(f"{n_pol} x {n_pol} matrices over {comp.n_contexts} contexts written to {out}/:")
    for name, path, png in written:
        print(f"  {name:<10} {path.name}, {png.name}")
    print(f"  contexts left out of each mean: {missing_path.name}")
    if na_path is not None:
        print(f"  contexts where the semantic scores do not apply (text-only answers): {na_path.name}")
    print(f"  signatures: {meta.name}")


def _cmd_scores(args: argparse.Namespace) -> int:
    for name in list_scores():
        info = score_info(name)
        print(f"{name:<10} {info.level:<8} [{info.lower:g}, {info.upper:g}]  {info.description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from ._engine import PAIR_MODES
    from ._map import register_map
    from ._sinks import PER_CONTEXT_FORMATS

    _scores_help = (
        f"scores to compute, case-insensitive, comma or space separated (default: all): {', '.join(list_scores())}"
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
    c.add_argument("--scores", nargs="+", metavar="NAME", help=_scores_help)
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
        "--matrix-format", choices=("csv", "parquet"), default="csv", help="file format of the matrices (default csv)"
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
    c.add_argument("--json", action="store_true", help="print the means as JSON")
    c.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None, help="progress bars (default: for big jobs)"
    )
    add_executor_option(c)
    add_model_options(c)
    c.set_defaults(func=_cmd_compare)

    s = sub.add_parser("scores", help="list the registered scores")
    s.set_defaults(func=_cmd_scores)
    register_map(sub)  # the core's 'map' command (behavsim/_map.py)

    for ep in sorted(metadata.entry_points(group="behavsim.commands"), key=lambda e: e.name):
        try:
            register = ep.load()
        except ImportError as exc:
            sub.add_parser(ep.name, help=f"(unavailable: {exc})").set_defaults(
                func=lambda a, _e=exc, _n=ep.name: _unavailable(_n, _e)
            )
            continue
        register(sub)
    return parser


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
    sys.exit(_command(argv, restore=False))


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
