"""Robustness probes: how stable is a policy's behaviour under slightly different beliefs?

Each policy is compared with itself: its answers on a context set against its answers on the
same contexts perturbed at a noise level (:func:`contexts.perturb`: value swaps and N-best
confusions as PyDial's error model makes them at that error rate, and belief jitter), context i
against perturbed context i, with every score. At noise 0 the perturbed set is the set itself,
so a deterministic policy scores TMR = 1 there; the curve over the levels shows how fast its
behaviour drifts as recognition gets worse (PyDial's environments use 0, 15% and 30%)::

    behavsim robustness handcrafted runs/ts-seed0/ckpt-040000.npz --contexts cgen.jsonl \\
        --levels 0 0.05 0.15 0.3 -o robustness/

writes ``robustness.csv`` (one row per policy and level: ``policy, noise, n, changed`` — the
contexts the perturbation changed — and the scores), ``robustness.meta.json`` (seed,
perturbation, the perturbed sets' fingerprints, score signatures, policies), one figure per
policy (``<id>.png/.svg``: every score over the noise level) and ``robustness.png/.svg`` (TMR of
all policies). :func:`robustness` is the same in Python.
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from behavsim import DEFAULT_SCORES, ConfigError, ContextSet, ResponseTable, compare, list_scores
from behavsim.commands import add_model_options, score_names, score_options
from behavsim.policy import PolicyErrorsWarning, parse_spec, respond_many
from contexts._perturb import PERTURBATION_KINDS, check_noise, perturb
from policies.simulation.domain import add_domain_option, domain_spec

__all__ = ["robustness", "write_robustness", "register_robustness", "DEFAULT_LEVELS"]

#: The default noise levels: none, a little, and PyDial's 15% and 30% error environments.
DEFAULT_LEVELS = (0.0, 0.05, 0.15, 0.3)


def _levels(levels: Any) -> list[float]:

    if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence) or not levels:
        raise ConfigError(f"levels: expected a non-empty list of noise levels in [0, 1], got {levels!r}")
    out = [check_noise(v, "levels") for v in levels]
    if len(set(out)) != len(out):
        raise ConfigError(f"levels: a level is given twice: {list(levels)}")
    return sorted(out)


def _as_self(table: ResponseTable, fingerprint: str, pid: str) -> ResponseTable:
    """``table`` (answers on the perturbed set) under another id, standing for the original set:
    its context i is the original's context i seen through noise."""
    return ResponseTable(
        dict(table.policy, id=pid),
        fingerprint,
        list(table.acts),
        list(table.prompts),
        list(table.errors),
        list(table.context_ids),
    )


def robustness(
    policies: Sequence[Any],
    contexts: ContextSet,
    levels: Sequence[float] = DEFAULT_LEVELS,
    *,
    seed: int = 0,
    kinds: Sequence[str] | None = None,
    nbest: int = 3,
    scores: Sequence[str] = DEFAULT_SCORES,
    score_options: Mapping[str, Mapping[str, Any]] | None = None,
    policy_ids: Sequence[str | None] | None = None,
    workers: int | None = None,
    **options: Any,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Each policy against itself on ``contexts`` perturbed at each level (see the module doc).

    ``policies``: as :func:`behavsim.respond_many` takes them (spec strings, adapters, ...);
    ``seed``, ``kinds``, ``nbest``: the perturbation's (:func:`contexts.perturb`); ``scores``:
    default all eight; ``options`` go to the policy kinds (``domain``, ``pydial_root``; the
    domain also recomputes the perturbed features). Returns the table (one row per policy and
    level, levels ascending) and a metadata dict.
    """

    if not isinstance(contexts, ContextSet):
        raise ConfigError(f"contexts: expected a behavsim.ContextSet, got {type(contexts).__name__}")
    if not len(contexts):
        raise ConfigError("contexts: the context set is empty")
    lv = _levels(levels)
    kinds = tuple(kinds) if kinds is not None else PERTURBATION_KINDS
    sets = [perturb(contexts, x, seed=seed, kinds=kinds, nbest=nbest, domain=options.get("domain")) for x in lv]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolicyErrorsWarning)  # errors are counted in the result
        base = respond_many(policies, contexts, workers=workers, policy_ids=policy_ids, **options)
        ids = [t.id for t in base]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ConfigError(f"policy ids must be unique; repeated: {dupes} (give policy_ids / --id)")
        noisy = [respond_many(policies, s, workers=workers, policy_ids=ids, **options) for s in sets]
    rows: list[dict[str, Any]] = []
    signatures: dict[str, str] = {}
    for k, table in enumerate(base):
        tabs = [table] + [_as_self(noisy[j][k], contexts.fingerprint, f"{table.id}@{x:g}") for j, x in enumerate(lv)]
        comp = compare(
            tabs, [(0, j + 1) for j in range(len(lv))], scores=scores, score_options=score_options, progress=False
        )
        signatures = comp.signatures
        for j, x in enumerate(lv):
            m = comp.means.iloc[j]
            row: dict[str, Any] = {"policy": table.id, "noise": x, "n": int(m["n"]), "changed": sets[j].meta["changed"]}
            row["errors"] = noisy[j][k].n_errors
            row.update({s: float(m[s]) for s in comp.score_names})
            rows.append(row)
    meta = {
        "contexts": {"fingerprint": contexts.fingerprint, "size": len(contexts), "source": contexts.source},
        "levels": lv,
        "seed": seed,
        "kinds": list(kinds),
        "nbest": nbest,
        "perturbed": [
            {"noise": x, "fingerprint": s.fingerprint, "changed": s.meta["changed"], "features": s.meta["features"]}
            for x, s in zip(lv, sets)
        ],
        "signatures": signatures,
        "policies": {t.id: t.policy for t in base},
        "comparison": "each policy's answer on context i against its answer on perturbed context i",
    }
    return pd.DataFrame(rows), meta


def write_robustness(table: pd.DataFrame, meta: Mapping[str, Any], out: str | Path) -> list[Path]:
    """Write the CSV, the metadata and the figures into the directory ``out``; returns the paths."""
    from behavsim.plots import convergence_curves, pair_curves  # start-up cost: ~120 ms (measured under load)

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    csv = out / "robustness.csv"
    table.to_csv(csv, index=False, float_format="%.10g")
    (out / "robustness.meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    written = [csv, out / "robustness.meta.json"]
    names = [s for s in list_scores() if s in table.columns and table[s].notna().any()]
    for pid, g in table.groupby("policy", sort=False):
        written += pair_curves(
            g, out / str(pid), names, x="noise", hue=None, title=f"{pid} against itself on perturbed contexts"
        )
    if "TMR" in table.columns:
        written += convergence_curves(
            table, out / "robustness", score="TMR", x="noise", hue="policy", title="TMR against itself over noise"
        )
    return written


# ------------------------------------------------------------------------------ command line
def register_robustness(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``robustness`` sub-command (entry point ``behavsim.commands``)."""

    p = subparsers.add_parser(
        "robustness",
        help="each policy against itself on perturbed contexts, per noise level",
        description="Robustness probes: each policy's answers on a context set against its answers on the same "
        "contexts perturbed at each noise level (value swaps and N-best confusions at that error rate, belief "
        "jitter; see 'behavsim contexts perturb'), with every score. At noise 0 a deterministic policy scores "
        "TMR = 1. Policy specs as for 'behavsim respond'.",
    )
    p.add_argument("policies", nargs="+", metavar="POLICY", help="policy specs (handcrafted, PATH.npz, ...)")
    p.add_argument("--contexts", required=True, metavar="FILE", help="context set (.jsonl or .parquet)")
    p.add_argument(
        "--levels",
        nargs="+",
        default=[f"{x:g}" for x in DEFAULT_LEVELS],
        metavar="LEVEL",
        help="noise levels in [0, 1] (default: 0 0.05 0.15 0.3)",
    )
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory")
    p.add_argument("--seed", type=int, default=0, help="seed of the perturbation (default 0)")
    p.add_argument(
        "--kinds", nargs="+", default=list(PERTURBATION_KINDS), metavar="KIND", help="perturbations (default all)"
    )
    p.add_argument("--nbest", type=int, default=3, help="N-best list size of the confusions (default 3)")
    p.add_argument("--scores", nargs="+", metavar="NAME", help="scores (default: all eight)")
    p.add_argument("--id", action="append", dest="ids", metavar="ID", help="policy id (once per policy, in order)")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="parallel processes (default: automatic)")
    p.add_argument("--pydial-root", metavar="DIR", help="PyDial3's root folder (for pydial:CFG specs)")
    add_domain_option(p)
    add_model_options(p)
    p.set_defaults(func=cmd_robustness)
    return p


def cmd_robustness(args: argparse.Namespace) -> int:

    levels = []
    for text in args.levels:
        try:
            levels.append(float(text))
        except ValueError:
            raise ConfigError(f"--levels: expected noise levels in [0, 1] such as 0.15, got {text!r}") from None
    levels = _levels(levels)
    if args.ids is not None and len(args.ids) != len(args.policies):
        raise ConfigError(f"--id: give it once per policy ({len(args.policies)} policies, {len(args.ids)} ids)")
    for s in args.policies:
        parse_spec(s)
    options: dict[str, Any] = {"pydial_root": args.pydial_root}
    domain = domain_spec(args.domain)
    if domain is not None:
        options["domain"] = domain
    contexts = ContextSet.load(args.contexts)
    table, meta = robustness(
        args.policies,
        contexts,
        levels,
        seed=args.seed,
        kinds=args.kinds,
        nbest=args.nbest,
        scores=score_names(args.scores),
        score_options=score_options(args),
        policy_ids=args.ids,
        workers=args.workers,
        **options,
    )
    write_robustness(table, meta, args.output)
    names = [s for s in list_scores() if s in table.columns]
    show = table[["policy", "noise", "changed", *names]]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(show.to_string(index=False, float_format=lambda v: "n/a" if math.isnan(v) else f"{v:.3f}"))
    for pid, g in table[table["noise"] == 0].groupby("policy", sort=False):
        if "TMR" in g and float(g["TMR"].iloc[0]) != 1.0:
            print(f"note: {pid!r} answers the unperturbed contexts differently on a second run (TMR < 1 at noise 0)")
    print(
        f"{len(meta['policies'])} policies x {len(levels)} levels on {len(contexts)} contexts -> {Path(args.output)}/"
    )
    return 0
