"""Generated context sets (C_gen): a grid over the belief in one value per slot.

For each chosen slot (default ``area``, ``pricerange``, ``food``) one value gets probability
p ∈ {0, step, 2·step, …, 1} and ``**NONE**`` the rest; the method ``byconstraints`` gets
p ∈ the same levels and ``none`` the rest. Every other part of the belief is a dialogue start
as :func:`policies.simulation.tracker.make_belief` builds it (``discourseAct`` ``none`` = 1, nothing
requested, no venue offered, ``name`` all ``**NONE**``), with ``inform_info`` and ``dbMatches``
computed from the grid beliefs — so each context is ``make_belief(domain,
{slot: {value: p_slot}, …}, method={"byconstraints": p_method})``, built without its per-call
overhead (14,641 contexts in well under a second of belief construction).

Every mapping is stored with its keys in sorted order, as a saved set holds them and as
``behavsim.policy.respond`` hands beliefs to policies. Key order does not change what the built-in
policies do or the features (ties between equal probabilities follow the domain's order, see
:mod:`policies.simulation.actions`): at an exact tie between the chosen value and ``**NONE**`` (p = 0.5,
e.g. at step 0.1) the value wins and is an accepted constraint, as in ``make_belief``.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

from behavsim import ConfigError, ContextSet, canonical_copy, did_you_mean
from contexts._common import domain_meta, resolve_domain
from contexts.commands import add_output_option, key_values, option_domain, output_path, save_set
from policies.simulation.domain import add_domain_option
from policies.simulation.tracker import inform_info, make_belief

__all__ = ["generate_grid", "grid_levels", "default_values", "BYTES_PER_CONTEXT", "register_generate"]

#: Measured size in memory of one generated context of the built-in domain (belief dicts,
#: features, metadata, id), rounded up; used to refuse grids that would not fit in memory.
BYTES_PER_CONTEXT = 12_000
_MEMORY_FRACTION = 0.5  # refuse a grid whose estimated size exceeds this share of free memory


def _n_steps(step: Any) -> int:
    """``1/step`` for a valid step; :class:`~behavsim.ConfigError` otherwise."""
    if isinstance(step, bool) or not isinstance(step, Real) or not math.isfinite(float(step)):
        raise ConfigError(f"step: expected a number in (0, 1] that divides 1 (e.g. 0.2 or 0.1), got {step!r}")
    step = float(step)
    if not 0.0 < step <= 1.0:
        raise ConfigError(f"step: expected a number in (0, 1] that divides 1 (e.g. 0.2 or 0.1), got {step!r}")
    n = round(1.0 / step)
    if n < 1 or abs(n * step - 1.0) > 1e-9:
        raise ConfigError(
            f"step: {step!r} does not divide 1 (1/{step!r} = {1.0 / step:.4g} is not a whole number); "
            "use e.g. 0.5, 0.25, 0.2, 0.1 or 0.05"
        )
    return n


def grid_levels(step: Any) -> list[float]:
    """The probability levels ``0, step, …, 1`` as exact decimals (``round(k*step, 10)``).

    Raises :class:`~behavsim.ConfigError` when ``step`` is not a number in (0, 1] that divides 1.
    """
    n = _n_steps(step)
    return [round(k * float(step), 10) for k in range(n)] + [1.0]


def default_values(domain: Any, slots: Sequence[str]) -> dict[str, str]:
    """The documented default value per slot: the value most frequent in the domain's database
    (ties: ontology order) — for the built-in domain ``centre``, ``expensive``, ``indian``,
    a combination with 2 matching venues, the kind of goal the simulated user draws."""
    out = {}
    for s in slots:
        counts = Counter(v.get(s) for v in domain.venues)
        values = domain.informable[s]
        out[s] = max(values, key=lambda v: (counts.get(v, 0), -values.index(v)))
    return out


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _big(x: int) -> str:
    return f"{x:,}" if x < 10**15 else f"~1e{len(str(x)) - 1}"


def _check_size(n_levels: int, n_dims: int, step: float) -> int:
    count = n_levels**n_dims
    need = count * BYTES_PER_CONTEXT
    avail = _available_memory()
    if avail is not None and need > _MEMORY_FRACTION * avail:
        raise ConfigError(
            f"step: {step!r} gives {_big(n_levels)}^{n_dims} = {_big(count)} contexts, about "
            f"{_big(need // 10**9)} GB in memory, more than half of the {avail / 1e9:.1f} GB "
            "available; use a coarser step or fewer slots"
        )
    return count


def _check_slots(domain: Any, slots: Any) -> tuple[str, ...]:
    if isinstance(slots, str) or not isinstance(slots, (list, tuple)):
        raise ConfigError(f"slots: expected a list of slot names such as ['area', 'pricerange', 'food'], got {slots!r}")
    if not slots:
        raise ConfigError("slots: expected at least one slot name, got none")
    valid = list(domain.informable)
    for s in slots:
        if s not in domain.informable:
            raise ConfigError(
                f"slots: unknown slot {s!r} of domain {domain.name!r}.{did_you_mean(s, valid)} "
                f"Valid slots: {', '.join(valid)}"
            )
    if len(set(slots)) != len(slots):
        raise ConfigError(f"slots: duplicate slot names in {list(slots)}")
    return tuple(slots)


def _check_values(domain: Any, slots: tuple[str, ...], values: Any) -> tuple[dict[str, str], str]:
    chosen = default_values(domain, slots)
    if values is None:
        return chosen, "most frequent value in the database (ties: ontology order)"
    if not isinstance(values, Mapping):
        raise ConfigError(f"values: expected a mapping slot -> value such as {{'area': 'centre'}}, got {values!r}")
    for s, v in values.items():
        if s not in slots:
            raise ConfigError(f"values: slot {s!r} is not one of the grid slots {list(slots)}.{did_you_mean(s, slots)}")
        if v not in domain.informable[s]:
            raise ConfigError(
                f"values: {v!r} is not a value of slot {s!r}.{did_you_mean(v, domain.informable[s])} "
                f"Valid values: {', '.join(domain.informable[s])}"
            )
        chosen[s] = v
    how = "given" if set(values) == set(slots) else "given; others: most frequent value in the database"
    return chosen, how


def generate_grid(
    domain: Any = None,
    *,
    step: float = 0.2,
    slots: Sequence[str] = ("area", "pricerange", "food"),
    method: str = "byconstraints",
    values: Mapping[str, str] | None = None,
) -> ContextSet:
    """The generated context set C_gen: a grid of beliefs from a dialogue start.

    ``len(slots) + 1`` grid dimensions (the slots, then the method), each with the levels
    ``0, step, …, 1`` (:func:`grid_levels`): 6^4 = 1,296 contexts at ``step=0.2`` (the paper's
    count), 11^4 = 14,641 at ``step=0.1``. Order: row-major over ``(*slots, method)``, the method
    level varying fastest. In each slot the value ``values[slot]`` gets the mass (default:
    :func:`default_values`), ``**NONE**`` the rest; ``method`` gets the method mass, ``none`` the
    rest. Each per-context ``meta`` is ``{"origin": "generated", "grid": {slot: p, …,
    "method": p}}``; the set ``meta`` records domain, step, levels, slots, values, method and
    order. Bad parameters raise :class:`~behavsim.ConfigError` naming the parameter.
    """
    domain = resolve_domain(domain)
    n_steps = _n_steps(step)
    slots = _check_slots(domain, slots)
    if not isinstance(method, str) or method not in domain.method or method == "none":
        valid = [m for m in domain.method if m != "none"]
        raise ConfigError(f"method: expected one of {', '.join(valid)}, got {method!r}.{did_you_mean(method, valid)}")
    chosen, how = _check_values(domain, slots, values)
    _check_size(n_steps + 1, len(slots) + 1, float(step))
    levels = grid_levels(step)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # many small dicts, no cycles: the collector would only rescan them (2x slower)
    try:
        return _build(domain, levels, slots, method, chosen, how, float(step))
    finally:
        if gc_was_enabled:
            gc.enable()


def _build(
    domain: Any, levels: list[float], slots: tuple[str, ...], method: str, chosen: dict[str, str], how: str, step: float
) -> ContextSet:
    # one template (a dialogue start) and, per slot and level, the slot's distribution; every
    # mapping with its keys in sorted order, as a saved set holds them (see behavsim.canonical_copy)
    base = canonical_copy(make_belief(domain, {s: {chosen[s]: 0.0} for s in slots}, method={method: 0.0}))
    b0 = base["beliefs"]
    slot_dists: list[list[dict[str, float]]] = []
    for s in slots:
        per_level = []
        for p in levels:
            d = dict(b0[s])
            d[chosen[s]] = p
            d["**NONE**"] = 1.0 - p
            per_level.append(d)
        slot_dists.append(per_level)
    method_dists = []
    for p in levels:
        d = dict(b0["method"])
        d[method] = p
        d["none"] = 1.0 - p
        method_dists.append(d)
    other = {k: v for k, v in b0.items() if k not in slots and k != "method"}
    feats0 = base["features"]

    beliefs: list[dict[str, Any]] = []
    metas: list[dict[str, Any]] = []
    ids: list[str] = []
    n_levels = len(levels)
    info_cache: dict = {}
    slot_order = list(b0)  # sorted
    for combo in itertools.product(range(n_levels), repeat=len(slots)):
        sd = {s: slot_dists[j][k] for j, (s, k) in enumerate(zip(slots, combo))}
        flags, n_match = inform_info({"beliefs": sd}, domain, info_cache)
        for km in range(n_levels):
            bel = {}
            for key in slot_order:
                if key == "method":
                    bel[key] = dict(method_dists[km])
                elif key in sd:
                    bel[key] = dict(sd[key])
                else:
                    bel[key] = dict(other[key])
            feats = dict(feats0)
            feats["informedVenueSinceNone"] = []
            feats["inform_info"] = list(flags)
            feats["dbMatches"] = n_match
            beliefs.append({"beliefs": bel, "features": feats})
            grid = {s: levels[k] for s, k in zip(slots, combo)}
            grid["method"] = levels[km]
            metas.append({"origin": "generated", "grid": grid})
            ids.append("gen:" + ",".join(f"{levels[k]:g}" for k in (*combo, km)))
    meta = {
        "builder": "generated",
        "origin": "generated",
        **domain_meta(domain),
        "step": step,
        "levels": levels,
        "slots": list(slots),
        "values": {s: chosen[s] for s in slots},
        "value_choice": how,
        "method": method,
        "order": f"row-major over ({', '.join(slots)}, method); the method level varies fastest",
        "size": len(beliefs),
    }
    return ContextSet(beliefs, metas, ids, meta)


# ------------------------------------------------------------------------------ command
def register_generate(subparsers: Any) -> argparse.ArgumentParser:
    """``behavsim contexts generate``: C_gen on the command line (entry point ``generate``)."""
    g = subparsers.add_parser(
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
    add_domain_option(g)
    add_output_option(g)
    g.set_defaults(func=_cmd_generate)
    return g


def _cmd_generate(args: argparse.Namespace) -> int:
    out = output_path(args.output)
    values = key_values(args.value, "--value", "area=centre") or None
    cs = generate_grid(option_domain(args), step=args.step, slots=tuple(args.slots), method=args.method, values=values)
    return save_set(cs, out)
