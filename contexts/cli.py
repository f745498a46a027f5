"""``behavsim contexts``: build, import, subset and inspect context sets from the command line.

Registered through the entry-point group ``behavsim.commands`` (``contexts =
contexts.cli:register_contexts``). Its sub-commands are the context builders': each declares its
own beside its code and registers it through the entry-point group ``behavsim.context_builders``
(:data:`contexts.commands.BUILDERS_GROUP`; ``setup.cfg`` lists behavsim's own: ``generate`` in
``contexts/_grid.py``, ``collect``, ``collect-pydial`` in ``contexts/pydial.py``, ``import`` in
``contexts/corpus.py``, ``wizard`` beside ``logged_responses``, ``select``, ``union``,
``perturb``), so a package of yours adds a builder without touching behavsim: one entry ``NAME =
yourpackage.module:register`` whose function ``register(subparsers)`` adds a sub-command (the
helpers of :mod:`contexts.commands` give it the same options). ``info`` is this module's own. Every sub-command is one library call::

    behavsim contexts generate --step 0.2 --value area=centre -o cgen.jsonl
    behavsim contexts collect --policy handcrafted --policy runs/ts-seed0/ckpt-040000.npz \\
        --dialogues 10 --seed 0 -o ccol.jsonl
    behavsim contexts collect-pydial --config env1-configs/adapter-gp.cfg --root ../pydial3 \\
        --dialogues 10 --seed 0 -o ccol-pydial.jsonl
    behavsim contexts import my-log.jsonl -o logged.parquet
    behavsim contexts import ../shared/corpora/camrest676/data.zip --split test -o camrest-test.jsonl
    behavsim contexts wizard camrest-test.jsonl -o wizard.jsonl
    behavsim contexts select ccol.jsonl --turn 1 --slot-belief food=0.5:1.0 -o first-turns.jsonl
    behavsim contexts union ccol.jsonl cgen.jsonl -o both.jsonl
    behavsim contexts perturb ccol.jsonl --noise 0.15 --seed 0 -o ccol-noise15.jsonl
    behavsim contexts info ccol.jsonl

Outputs are JSONL or Parquet by suffix (``.jsonl``, ``.parquet``). Bad input raises a
:class:`behavsim.BehavsimError`, which ``behavsim`` prints as a one-line error (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from importlib import metadata
from typing import Any

from behavsim import ContextSet
from behavsim.cli import main as behavsim_main
from behavsim.commands import missing_command
from contexts.commands import BUILDERS_GROUP, check_options

__all__ = ["register_contexts", "describe", "main"]


# ------------------------------------------------------------------------------ info
def _abbrev(obj: Any, limit: int = 8) -> Any:
    """Metadata for display: long lists shortened."""
    if isinstance(obj, dict):
        return {k: _abbrev(v, limit) for k, v in obj.items()}
    if isinstance(obj, list):
        if len(obj) > limit:
            return [_abbrev(v, limit) for v in obj[:limit]] + [f"... ({len(obj)} items)"]
        return [_abbrev(v, limit) for v in obj]
    return obj


def describe(cs: ContextSet) -> dict[str, Any]:
    """Size, fingerprint, meta and histograms of origins, turns and source policies."""
    origins = Counter(str(m.get("origin", "unknown")) for m in cs.metas)
    turns = Counter(m["turn"] for m in cs.metas if isinstance(m.get("turn"), int))
    sources = Counter(m["source_policy"] for m in cs.metas if "source_policy" in m)
    return {
        "source": cs.source,
        "size": len(cs),
        "fingerprint": cs.fingerprint,
        "meta": cs.meta,
        "origins": dict(sorted(origins.items())),
        "turns": {str(k): v for k, v in sorted(turns.items())},
        "source_policies": dict(sorted(sources.items())),
        "with_history": cs.n_histories,
        "with_belief": cs.n_beliefs,
    }


def cmd_info(args: argparse.Namespace) -> int:
    check_options(args, non_negative=("show",))
    cs = ContextSet.load(args.input)
    d = describe(cs)
    if args.json:
        print(json.dumps(d, indent=2, ensure_ascii=False))
        return 0
    print(f"file:        {args.input}")
    print(f"size:        {d['size']} contexts")
    print(f"fingerprint: {d['fingerprint']}")
    print(f"builder:     {cs.meta.get('builder', 'unknown')}")
    print("origins:     " + (", ".join(f"{k} {v}" for k, v in d["origins"].items()) or "-"))
    print(f"contexts:    {d['with_belief']} with a belief state, {d['with_history']} with a dialogue history")
    if d["turns"]:
        print("turns:       " + ", ".join(f"{k}: {v}" for k, v in d["turns"].items()))
    if d["source_policies"]:
        print("sources:     " + ", ".join(f"{k} {v}" for k, v in d["source_policies"].items()))
    print("meta:")
    for line in json.dumps(_abbrev(cs.meta), indent=2, ensure_ascii=False).splitlines():
        print("  " + line)
    for i in range(min(args.show, len(cs))):
        print(f"[{i}] {cs.ids[i]}: {cs.summary(i)}")
    return 0


# ------------------------------------------------------------------------------ parser
def register_contexts(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``contexts`` sub-command to ``subparsers``, with one sub-command per context builder
    (entry points ``behavsim.context_builders``, by name) and ``info``."""
    p = subparsers.add_parser(
        "contexts",
        help="build, import, subset and inspect context sets",
        description="Context sets: the belief states every policy answers.",
    )
    sub = p.add_subparsers(dest="contexts_command", metavar="ACTION")
    p.set_defaults(func=lambda a: missing_command(p, "ACTION"))
    for ep in sorted(metadata.entry_points(group=BUILDERS_GROUP), key=lambda e: e.name):
        try:
            register = ep.load()
        except ImportError as exc:  # a builder whose package cannot load: listed, and says why when run
            sub.add_parser(ep.name, help=f"(unavailable: {exc})").set_defaults(
                func=lambda a, _e=exc, _n=ep.name: _unavailable(_n, _e)
            )
            continue
        register(sub)
    register_info(sub)
    return p


def _unavailable(name: str, exc: Exception) -> int:
    print(f"behavsim contexts {name}: this builder could not be loaded: {exc}", file=sys.stderr)
    return 2


def register_info(subparsers: Any) -> argparse.ArgumentParser:
    """``behavsim contexts info``."""
    f = subparsers.add_parser("info", help="size, fingerprint, metadata and histograms of a context set")
    f.add_argument("input", metavar="FILE")
    f.add_argument("--json", action="store_true", help="print JSON")
    f.add_argument("--show", type=int, default=0, metavar="N", help="also print the first N contexts in one line each")
    f.set_defaults(func=cmd_info)
    return f


def main(argv: list[str] | None = None) -> int:
    """``python -m contexts.cli ...`` — the same as ``behavsim contexts ...``."""
    return behavsim_main(["contexts", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
