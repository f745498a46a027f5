"""``behavsim contexts``: build, import, subset and inspect context sets from the command line.

Registered through the entry-point group ``behavsim.commands`` (``contexts =
contexts.cli:register_contexts``); every sub-command is one library call::

    behavsim contexts generate --step 0.2 --value area=centre -o cgen.jsonl
    behavsim contexts collect --policy handcrafted --policy runs/ts-seed0/ckpt-040000.npz \\
        --dialogues 10 --seed 0 -o ccol.jsonl
    behavsim contexts collect-pydial --config env1-configs/adapter-gp.cfg --root ../pydial3 \\
        --dialogues 10 --seed 0 -o ccol-pydial.jsonl
    behavsim contexts import my-log.jsonl -o logged.parquet
    behavsim contexts select ccol.jsonl --turn 1 --slot-belief food=0.5:1.0 -o first-turns.jsonl
    behavsim contexts perturb ccol.jsonl --noise 0.15 --seed 0 -o ccol-noise15.jsonl
    behavsim contexts info ccol.jsonl

Outputs are JSONL or Parquet by suffix (``.jsonl``, ``.parquet``). Bad input raises a
:class:`behavsim.BehavsimError`, which ``behavsim`` prints as a one-line error (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from behavsim import ConfigError, ContextSet
from behavsim.cli import main as behavsim_main
from behavsim.commands import missing_command
from policies.simulation.domain import add_domain_option, domain_spec, resolve_domain

__all__ = ["register_contexts", "parse_range", "main"]

_SUFFIXES = (".jsonl", ".parquet")


# ------------------------------------------------------------------------------ helpers
def parse_range(text: str, what: str) -> tuple[float | None, float | None] | float:
    """``"0.5:1.0"`` → (0.5, 1.0); ``"0.5:"`` / ``":1"`` open ends; ``"1"`` → 1.0."""
    try:
        if ":" not in text:
            return float(text)
        lo, hi = text.split(":", 1)
        return (float(lo) if lo.strip() else None, float(hi) if hi.strip() else None)
    except ValueError:
        raise ConfigError(f"{what}: expected a number or a range LOW:HIGH such as 0.5:1.0, got {text!r}") from None


def _pairs(items: list[str] | None, what: str, example: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"{what}: expected KEY=VALUE such as {example}, got {item!r}")
        if key.strip() in out:
            raise ConfigError(f"{what}: {key.strip()!r} given twice")
        out[key.strip()] = value.strip()
    return out


def _output(path: str) -> Path:
    p = Path(path)
    if p.suffix not in _SUFFIXES:
        raise ConfigError(f"--output: {path!r} must end in .jsonl or .parquet (the format is chosen by suffix)")
    return p


def _check_options(args: argparse.Namespace, *, positive=(), non_negative=(), probability=()) -> None:
    """Refuse out-of-range option values up front, naming the option (``--nbest -3``)."""
    for dest in positive:
        v = getattr(args, dest)
        if v is not None and v < 1:
            raise ConfigError(f"--{dest.replace('_', '-')}: expected a positive integer, got {v}")
    for dest in non_negative:
        v = getattr(args, dest)
        if v is not None and v < 0:
            raise ConfigError(f"--{dest.replace('_', '-')}: expected a non-negative integer, got {v}")
    for dest in probability:
        v = getattr(args, dest)
        if v is not None and not 0.0 <= v <= 1.0:
            raise ConfigError(f"--{dest.replace('_', '-')}: expected a number in [0, 1], got {v}")


def _domain(args: argparse.Namespace):
    spec = domain_spec(getattr(args, "domain", None))
    return None if spec is None else resolve_domain(spec)


def _save(cs: ContextSet, out: Path) -> int:
    cs.save(out)
    print(f"wrote {len(cs)} contexts to {out} (fingerprint {cs.fingerprint})")
    return 0


# ------------------------------------------------------------------------------ commands
def cmd_generate(args: argparse.Namespace) -> int:
    from contexts._grid import generate_grid

    out = _output(args.output)
    values = _pairs(args.value, "--value", "area=centre") or None
    cs = generate_grid(_domain(args), step=args.step, slots=tuple(args.slots), method=args.method, values=values)
    return _save(cs, out)


_LABEL_RE = re.compile(r"^[A-Za-z0-9_.#-]+$")  # LABEL=SPEC; a spec option (kind:key=value) has a colon


def cmd_collect(args: argparse.Namespace) -> int:
    from contexts._collect import collect

    out = _output(args.output)
    _check_options(
        args, positive=("dialogues", "max_turns", "nbest"), non_negative=("seed",), probability=("error_rate",)
    )
    specs: dict[str, str] = {}
    plain: list[str] = []
    for item in args.policy:
        label, sep, spec = item.partition("=")
        if sep and not Path(item).exists() and _LABEL_RE.match(label) and spec.strip():
            if label in specs:
                raise ConfigError(f"--policy: label {label!r} given twice")
            specs[label.strip()] = spec.strip()
        else:
            plain.append(item)
    if specs and plain:
        raise ConfigError("--policy: give every policy a LABEL=... or none of them")
    env_options: dict[str, Any] = {"max_turns": args.max_turns}
    if args.user is not None:
        env_options["user_config"] = args.user
    if args.error_rate:
        env_options["error_model"] = {"error_rate": args.error_rate, "nbest": args.nbest}
    cs = collect(
        specs or plain,
        dialogues=args.dialogues,
        seed=args.seed,
        domain=_domain(args),
        env_options=env_options,
        dedupe=args.dedupe,
        progress=args.progress,
    )
    return _save(cs, out)


def cmd_collect_pydial(args: argparse.Namespace) -> int:
    from contexts.pydial import collect_pydial

    out = _output(args.output)
    _check_options(args, positive=("dialogues",), non_negative=("seed",), probability=("error_rate",))
    cs = collect_pydial(
        args.config,
        root=args.root,
        dialogues=args.dialogues,
        seed=args.seed,
        domain=args.pydial_domain,
        error_rate=args.error_rate,
        explore=args.explore,
        policy_file=args.policy_file,
    )
    return _save(cs, out)


def cmd_import(args: argparse.Namespace) -> int:
    from contexts._dialogues import from_dialogues_jsonl, is_dialogue_log
    from contexts._logged import from_jsonl

    out = _output(args.output)
    if is_dialogue_log(args.log):
        cs = from_dialogues_jsonl(args.log, strict=not args.lenient)
        what = "bad dialogue lines"
    else:
        cs = from_jsonl(args.log, strict=not args.lenient)
        what = "bad lines"
    skipped = cs.meta.get("skipped") or []
    for item in skipped[:_SHOW_SKIPPED]:
        print(f"skipped {item['problem']}", file=sys.stderr)
    if len(skipped) > _SHOW_SKIPPED:
        print(
            f"skipped {len(skipped) - _SHOW_SKIPPED} more {what} (all listed in the set's meta 'skipped')",
            file=sys.stderr,
        )
    if skipped:
        print(f"skipped {len(skipped)} {what} of {args.log}; kept {len(cs)} contexts", file=sys.stderr)
    return _save(cs, out)


#: Skipped lines ``contexts import --lenient`` prints one by one (the rest are counted).
_SHOW_SKIPPED = 20


def cmd_select(args: argparse.Namespace) -> int:
    from contexts._select import select

    out = _output(args.output)
    cs = ContextSet.load(args.input)
    turn = None
    if args.turn is not None:
        turn = parse_range(args.turn, "--turn")
        vals = [turn] if isinstance(turn, float) else [v for v in turn if v is not None]
        if any(not float(v).is_integer() for v in vals):
            raise ConfigError(f"--turn: expected a turn number or a range such as 2:4, got {args.turn!r}")
    slot_belief = {
        k: parse_range(v, f"--slot-belief {k}")
        for k, v in _pairs(args.slot_belief, "--slot-belief", "food=0.5:1.0").items()
    } or None
    method_belief = {
        k: parse_range(v, f"--method-belief {k}")
        for k, v in _pairs(args.method_belief, "--method-belief", "byconstraints=0.5:1.0").items()
    } or None
    sub = select(
        cs,
        turn=turn,
        origin=args.origin,
        source_policy=args.source_policy,
        slot_belief=slot_belief,
        method_belief=method_belief,
    )
    if not len(sub) and not args.allow_empty:
        raise ConfigError(
            f"no context of {args.input} matches ({sub.meta['description']}); "
            "nothing written (--allow-empty writes an empty set)"
        )
    return _save(sub, out)


def cmd_perturb(args: argparse.Namespace) -> int:
    from contexts._perturb import check_noise, perturb

    if (args.input is None) == (args.contexts is None):
        raise ConfigError("perturb: give the context set once, as FILE or as --contexts FILE")
    try:
        level = float(args.noise)
    except ValueError:
        raise ConfigError(f"--noise: expected a noise level in [0, 1] (e.g. 0.15), got {args.noise!r}") from None
    noise = check_noise(level, "--noise")
    _check_options(args, non_negative=("seed",))
    out = _output(args.output)
    cs = ContextSet.load(args.input or args.contexts)
    p = perturb(cs, noise, seed=args.seed, kinds=args.kinds, nbest=args.nbest, domain=_domain(args))
    print(
        f"noise {noise:g} (seed {args.seed}): {p.meta['changed']} of {len(p)} contexts changed, "
        f"{p.meta['swaps']} swaps, {p.meta['confusions']} N-best confusions; features {p.meta['features']}"
    )
    return _save(p, out)


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
    _check_options(args, non_negative=("show",))
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
    """Add the ``contexts`` sub-command (with its own sub-commands) to ``subparsers``."""
    p = subparsers.add_parser(
        "contexts",
        help="build, import, subset and inspect context sets",
        description="Context sets: the belief states every policy answers.",
    )
    sub = p.add_subparsers(dest="contexts_command", metavar="ACTION")
    p.set_defaults(func=lambda a: missing_command(p, "ACTION"))

    def domain_opt(q: argparse.ArgumentParser) -> None:
        add_domain_option(q)

    g = sub.add_parser(
        "generate",
        help="C_gen: a grid over slot and method beliefs",
        description="Generated contexts: one value per slot and the method get probability "
        "0, step, ..., 1 each, the rest goes to **NONE** / none (6^4 = 1,296 at step 0.2).",
    )
    g.add_argument("--step", type=float, default=0.2, help="grid step, must divide 1 (default 0.2)")
    g.add_argument(
        "--slots",
        nargs="+",
        default=["area", "pricerange", "food"],
        metavar="SLOT",
        help="grid slots (default: area pricerange food)",
    )
    g.add_argument(
        "--value",
        action="append",
        metavar="SLOT=VALUE",
        help="the value of SLOT that gets the mass (repeatable; default: the most frequent in the database)",
    )
    g.add_argument("--method", default="byconstraints", help="the method that gets the mass (default byconstraints)")
    domain_opt(g)
    g.add_argument("-o", "--output", required=True, help="output file (.jsonl or .parquet)")
    g.set_defaults(func=cmd_generate)

    c = sub.add_parser(
        "collect",
        help="C_col: belief states met by policies in seeded dialogues",
        description="Collected contexts: each policy plays N seeded dialogues greedily with the "
        "simulated user; the belief at every system turn is recorded.",
    )
    c.add_argument(
        "--policy",
        action="extend",
        nargs="+",
        required=True,
        metavar="[LABEL=]SPEC",
        help="policy spec(s) as for 'behavsim respond' (handcrafted, a checkpoint .npz, module:function, "
        "pydial:CFG, ...); repeatable, and several may follow one --policy; LABEL= names the source",
    )
    c.add_argument("--dialogues", type=int, default=10, help="dialogues per policy (default 10)")
    c.add_argument("--seed", type=int, default=0, help="seed of the dialogues (default 0)")
    c.add_argument("--dedupe", action="store_true", help="drop exact duplicate beliefs (kept by default)")
    c.add_argument("--max-turns", type=int, default=25, help="dialogue length limit (default 25)")
    c.add_argument("--error-rate", type=float, default=0.0, help="semantic error rate (default 0, Environment 1)")
    c.add_argument("--nbest", type=int, default=1, help="N-best list size with --error-rate (default 1)")
    c.add_argument(
        "--user",
        metavar="NAME",
        help="simulated-user configuration: env1 (the default, Environment 1) or legacy (behavsim 0.1's user)",
    )
    c.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar (default: for 100 dialogues or more on a terminal)",
    )
    domain_opt(c)
    c.add_argument("-o", "--output", required=True, help="output file (.jsonl or .parquet)")
    c.set_defaults(func=cmd_collect)

    cp = sub.add_parser(
        "collect-pydial",
        help="C_col from PyDial's own dialogues (its simulated user, tracker and a policy config)",
        description="Runs N dialogues of PyDial3's simulation (its simulated user and focus tracker) with the "
        "policy of a PyDial config, in a subprocess inside the PyDial root, and records the belief state the "
        "policy saw at every system turn, in behavsim's layout, with the act it took (meta 'act'). The policy "
        "runs as the pydial: adapter runs it (no learning, GP greedy) unless --explore. Same seed, same set.",
    )
    cp.add_argument("--config", required=True, metavar="CFG", help="PyDial config (as for pydial:CFG)")
    cp.add_argument(
        "--root",
        "--pydial-root",
        dest="root",
        metavar="DIR",
        default=None,
        help="PyDial3's root folder (default: $PYDIAL_ROOT or found on PYTHONPATH); PyDial runs there",
    )
    cp.add_argument("--dialogues", type=int, default=10, help="number of dialogues (default 10)")
    cp.add_argument("--seed", type=int, default=0, help="PyDial's seed (Settings.init(config, seed); default 0)")
    cp.add_argument(
        "--pydial-domain", metavar="DOMAIN", default=None, help="PyDial domain (default: the config's first)"
    )
    cp.add_argument("--error-rate", type=float, default=0.0, help="PyDial's semantic error rate, 0..1 (default 0)")
    cp.add_argument(
        "--explore",
        action="store_true",
        help="keep the config's exploration (GP scale, random) instead of greedy; learning stays off",
    )
    cp.add_argument(
        "--policy-file",
        metavar="PREFIX",
        default=None,
        help="GP policy .dct/.prm prefix replacing the config's inpolicyfile, relative to the root "
        "(e.g. _bspolicies/env1-gp-CR-seed1-00.4 with the training config env1-configs/env1-gp-CR.cfg)",
    )
    cp.add_argument("-o", "--output", required=True, help="output file (.jsonl or .parquet)")
    cp.set_defaults(func=cmd_collect_pydial)

    i = sub.add_parser(
        "import",
        help="logged contexts from a JSONL file of belief states or of dialogues with utterances",
        description='Each line: a belief state, or {"belief": ..., "meta": ..., "id": ...}; or, in a log of '
        'dialogues, one dialogue {"id": ..., "turns": [{"speaker": "user"|"system", "text": ..., "act": ..., '
        '"belief": ...}, ...]} — every system turn becomes a context whose history is the turns before it '
        "(docs/contexts.md).",
    )
    i.add_argument("log", metavar="LOG.jsonl")
    i.add_argument(
        "--lenient",
        action="store_true",
        help="skip and report bad lines (invalid JSON, a belief not in the layout; in a log of dialogues: the "
        "whole dialogue) instead of refusing the file",
    )
    i.add_argument("-o", "--output", required=True, help="output file (.jsonl or .parquet)")
    i.set_defaults(func=cmd_import)

    s = sub.add_parser(
        "select",
        help="a subset by turn, origin, source or belief ranges",
        description="All criteria must hold; ranges LOW:HIGH are inclusive, either end may be empty.",
    )
    s.add_argument("input", metavar="FILE")
    s.add_argument("--turn", metavar="T|LOW:HIGH", help="system turn (collected/logged contexts), e.g. 1 or 2:4")
    s.add_argument("--origin", nargs="+", metavar="ORIGIN", help="collected, generated and/or logged")
    s.add_argument("--source-policy", nargs="+", metavar="LABEL", help="source policies of collected contexts")
    s.add_argument(
        "--slot-belief",
        action="append",
        metavar="SLOT=LOW:HIGH",
        help="top non-NONE value's belief of SLOT in range, e.g. food=0.5:1.0 (repeatable)",
    )
    s.add_argument(
        "--method-belief",
        action="append",
        metavar="METHOD=LOW:HIGH",
        help="the method's probability in range, e.g. byconstraints=0.5:1 (repeatable)",
    )
    s.add_argument("--allow-empty", action="store_true", help="write the set even if no context matches")
    s.add_argument("-o", "--output", required=True, help="output file (.jsonl or .parquet)")
    s.set_defaults(func=cmd_select)

    from contexts._perturb import PERTURBATION_KINDS

    pt = sub.add_parser(
        "perturb",
        help="the same contexts through a noisy recogniser (value swaps, N-best confusions, belief jitter)",
        description="Robustness probes: each informable slot's top value is swapped with another value and its "
        "mass shared over an N-best list, each with probability NOISE (PyDial's error model), and every "
        "probability jittered by exp(NOISE*z), renormalised. Seeded and deterministic; noise 0 leaves every "
        "belief (and the fingerprint) unchanged. Ids and order are kept.",
    )
    pt.add_argument("input", nargs="?", metavar="FILE", help="context set (.jsonl or .parquet)")
    pt.add_argument("--contexts", metavar="FILE", help="the context set, instead of FILE")
    pt.add_argument("--noise", required=True, metavar="LEVEL", help="noise level in [0, 1], e.g. 0.15")
    pt.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    pt.add_argument(
        "--kinds",
        nargs="+",
        default=list(PERTURBATION_KINDS),
        metavar="KIND",
        help=f"mechanisms to apply (default all): {', '.join(PERTURBATION_KINDS)}",
    )
    pt.add_argument("--nbest", type=int, default=3, help="N-best list size of the confusions (default 3)")
    domain_opt(pt)
    pt.add_argument("-o", "--output", required=True, help="output file (.jsonl or .parquet)")
    pt.set_defaults(func=cmd_perturb)

    f = sub.add_parser("info", help="size, fingerprint, metadata and histograms of a context set")
    f.add_argument("input", metavar="FILE")
    f.add_argument("--json", action="store_true", help="print JSON")
    f.add_argument("--show", type=int, default=0, metavar="N", help="also print the first N contexts in one line each")
    f.set_defaults(func=cmd_info)
    return p


def main(argv: list[str] | None = None) -> int:
    """``python -m contexts.cli ...`` — the same as ``behavsim contexts ...``."""
    return behavsim_main(["contexts", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
