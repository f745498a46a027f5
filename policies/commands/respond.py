"""``behavsim respond``: the command line over :func:`behavsim.respond_many`.

Step 2 of the method — run policies deterministically on every context of a context set — lives
in the core (:mod:`behavsim.policy`: ``respond``, ``respond_many``, ``check_policy``); this module
is only its command line::

    behavsim respond --policy handcrafted --contexts grid.jsonl -o handcrafted.jsonl
    behavsim respond --policy runs/ts-seed0/ckpt-*.npz ... --contexts grid.jsonl -o tables/

A context on which a policy fails is recorded as an error of that context (``--strict`` stops at
the first); the summary line of each table reports the count. ``--repeat K`` asks every context
``K`` times and prints each policy's ``self-agreement TMR`` (the per-context figures are the
table's ``agreement`` column, every answer is in its ``repeats`` column: :class:`behavsim.ResponseTable`).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from behavsim import ConfigError, ContextSet, get_executor
from behavsim.commands import add_executor_option
from behavsim.policy import PolicyErrorsWarning, list_policy_kinds, parse_spec, respond_many
from policies.simulation.domain import add_domain_option, domain_spec

__all__ = ["register_respond", "cmd_respond"]


# ----------------------------------------------------------------------------- command line
def register_respond(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``respond`` sub-command (entry point ``behavsim.commands``)."""
    p = subparsers.add_parser(
        "respond",
        help="run policies on a context set: one response table per policy",
        description="Run each policy deterministically on every context of a context set and write its response "
        "table. Policy specs: handcrafted[:nlg_seed=N] | PATH.npz (GP-SARSA checkpoint) | module:function | "
        "recorded:FILE | pydial:CFG[:domain=D][:nlg=off] | openai:MODEL@BASE_URL[:key=value] | hf:DIR[:key=value] "
        "(language models: docs/llm-policies.md). A context on which a policy fails is recorded as an error "
        f"(see --strict). Policy kinds: {', '.join(list_policy_kinds())}.",
    )
    p.add_argument(
        "--policy",
        action="extend",
        nargs="+",
        required=True,
        metavar="SPEC",
        dest="policies",
        help="policy spec(s); repeatable, and several may follow one --policy (e.g. a shell glob)",
    )
    p.add_argument("--contexts", required=True, metavar="FILE", help="context set (.jsonl or .parquet)")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="one policy: the table file (.jsonl/.parquet); several: a directory receiving <id>.jsonl",
    )
    p.add_argument(
        "--format",
        choices=["jsonl", "parquet"],
        default=None,
        help="table format in a directory output (default jsonl; one file: taken from its suffix)",
    )
    p.add_argument(
        "--id",
        action="append",
        metavar="ID",
        dest="ids",
        help="policy id in the table (once per --policy, in the same order)",
    )
    p.add_argument("--strict", action="store_true", help="stop at the first context a policy fails on")
    p.add_argument(
        "--per-context",
        action="store_true",
        help="ask every policy one context at a time (the reference path; the same tables, slower): by default a "
        "policy that can answers many at once (GP-SARSA checkpoints, handcrafted, end-to-end models)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="ask every context K times (a policy that samples draws again each time) and report how often the "
        "answers agree: 'self-agreement TMR' per policy; per context in the table's 'agreement' column (default 1)",
    )
    p.add_argument(
        "--workers", type=int, default=None, metavar="N", help="parallel processes (default: min(policies, cores))"
    )
    add_executor_option(p, default=None)
    p.add_argument("--pydial-root", metavar="DIR", help="PyDial3's root folder (for pydial:CFG specs)")
    add_domain_option(p)  # the built-in policies' domain (handcrafted, checkpoints)
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar (default: for long runs on a terminal)",
    )
    p.set_defaults(func=cmd_respond)
    return p


def _output_paths(args: argparse.Namespace, ids: list[str]) -> list[Path]:
    out = Path(args.output)
    single = len(ids) == 1 and not out.is_dir() and not args.output.endswith(os.sep)
    if single:
        if out.suffix not in (".jsonl", ".parquet"):
            raise ConfigError(
                f"-o {args.output}: a table file must end in .jsonl or .parquet (or give an existing directory)"
            )
        if args.format and out.suffix != "." + args.format:
            raise ConfigError(f"-o {args.output}: the suffix contradicts --format {args.format}")
        return [out]
    _check_directory(args)
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ConfigError(
            f"policy ids must be unique (they name the output files); repeated: {dupes}; give --id once per --policy"
        )
    return [_table_path(args, i) for i in ids]


def _check_directory(args: argparse.Namespace) -> None:
    out = Path(args.output)
    if (out.exists() and not out.is_dir()) or (not out.exists() and out.suffix in (".jsonl", ".parquet")):
        raise ConfigError(
            f"-o {args.output}: with several policies -o must be a directory (each table is written "
            "there as <id>.jsonl)"
        )


def _table_path(args: argparse.Namespace, pid: str) -> Path:
    """``-o DIR``'s file of the table of policy ``pid``."""
    if not pid or "/" in pid or os.sep in pid or pid in (".", ".."):
        raise ConfigError(f"policy id {pid!r} cannot name a file; give --id")
    return Path(args.output) / f"{pid}.{args.format or 'jsonl'}"


@dataclass(frozen=True)
class _Summary:
    """What the command reports of a table it wrote."""

    id: str
    size: int
    n_errors: int
    first_error: str | None
    self_agreement_tmr: float | None
    n_repeats: int
    path: Path


class _Written:
    """The tables of a run, each written as it comes (none is held: a run may make more tables than
    fit in memory at once) under a temporary name beside its file — ``-o FILE`` for one policy,
    ``-o DIR/<id>.<format>`` for several — and moved into place when every table is there and
    the ids were unique (else, or when the run fails, removed: nothing is written, as before)."""

    def __init__(self, args: argparse.Namespace, n: int) -> None:
        self.args = args
        self.n = n
        self.summaries: dict[int, _Summary] = {}
        self.staged: dict[Path, Path] = {}  # final path -> temporary file
        self.repeated: list[str] = []

    def save(self, i: int, table: Any) -> None:
        path = _output_paths(self.args, [table.id])[0] if self.n == 1 else _table_path(self.args, table.id)
        if path in self.staged:
            self.repeated.append(table.id)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.partial{path.suffix}")
        self.staged[path] = tmp
        table.save(tmp)
        first = next((e for e in table.errors if e is not None), None)
        self.summaries[i] = _Summary(
            table.id, len(table), table.n_errors, first, table.self_agreement_tmr, table.n_repeats, path
        )

    def undo(self) -> None:
        for tmp in self.staged.values():
            tmp.unlink(missing_ok=True)
        self.staged.clear()

    def finish(self) -> None:
        if self.repeated:
            self.undo()
            raise ConfigError(
                f"policy ids must be unique (they name the output files); repeated: {sorted(set(self.repeated))}; "
                "give --id once per --policy"
            )
        for path, tmp in self.staged.items():
            os.replace(tmp, path)
        self.staged.clear()


def cmd_respond(args: argparse.Namespace) -> int:
    """Run the ``respond`` command; returns the exit code."""
    get_executor(args.executor)  # a bad spec is refused before any work
    specs = list(args.policies)
    if args.ids is not None and len(args.ids) != len(specs):
        raise ConfigError(f"--id: give it once per --policy ({len(specs)} policies, {len(args.ids)} ids)")
    for s in specs:
        parse_spec(s)
    if args.repeat < 1:
        raise ConfigError(f"--repeat: expected a positive number of times to ask each context, got {args.repeat}")
    options: dict[str, Any] = {"pydial_root": args.pydial_root}
    domain = domain_spec(args.domain)
    if domain is not None:
        options["domain"] = domain
    if len(specs) == 1:
        _output_paths(args, ["policy"])  # check -o before the work
    else:
        _check_directory(args)
    contexts = ContextSet.load(args.contexts)
    t0 = time.perf_counter()
    written = _Written(args, len(specs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolicyErrorsWarning)  # the summary below reports them
        try:
            respond_many(
                specs,
                contexts,
                workers=args.workers,
                strict=args.strict,
                policy_ids=args.ids,
                progress=args.progress,
                executor=args.executor,
                repeat=args.repeat,
                per_context=args.per_context,
                on_result=written.save,
                keep=False,
                **options,
            )
        except BaseException:
            written.undo()
            raise
    written.finish()
    seconds = time.perf_counter() - t0
    tables = [written.summaries[i] for i in range(len(specs))]
    width = max(len(t.id) for t in tables)
    for t in tables:
        line = f"{t.id:<{width}}  errors {t.n_errors}/{t.size}  -> {t.path}"
        if t.first_error is not None:
            line += f"  (first: {t.first_error})"
        print(line)
    for t in tables:
        if t.self_agreement_tmr is not None:
            print(
                f"{t.id:<{width}}  self-agreement TMR {t.self_agreement_tmr:.3f}  (every context asked {t.n_repeats} "
                f"times; per context: the table's 'agreement' column)"
            )
    total = len(tables) * len(contexts) * args.repeat
    print(
        f"{len(tables)} policies x {len(contexts)} contexts in {seconds:.2f} s "
        f"({total / max(seconds, 1e-9):,.0f} contexts/s)"
    )
    return 0
