"""Perturbed context sets: the same contexts seen through a noisy recogniser (robustness probes).

:func:`perturb` returns a copy of a context set in which every belief state is disturbed at a
noise level ε ∈ [0, 1] by three mechanisms (each can be switched off with ``kinds``):

* ``swap`` — a misrecognised value (PyDial's error model at N-best 1): in each informable slot
  whose top value other than ``**NONE**`` has some belief, with probability ε that value's
  probability is exchanged with the probability of another value of the slot (``dontcare``
  included), drawn uniformly;
* ``nbest`` — an N-best confusion (PyDial's error model at N-best ``nbest``): in each such slot,
  with probability ε the mass p of the (possibly swapped) top value is shared over an N-best
  list of the top value and ``nbest − 1`` distinct other values of the slot with confidences
  drawn as PyDial draws them (a Dirichlet(1, …, 1) sample sorted in descending order; the top
  value keeps the largest share);
* ``jitter`` — every non-zero probability of every informable slot, of ``method`` and of
  ``discourseAct`` is multiplied by ``exp(ε·z)``, z ~ N(0, 1), and the distribution is
  renormalised to its original total; each non-zero ``requested`` probability likewise, clipped
  at 1.

Every distribution keeps its total (≤ 1), its keys and its key order, so the result is a valid
belief state in PyDial's layout. ``inform_info`` and ``dbMatches`` in ``features`` are
recomputed from the perturbed beliefs (they are functions of them) when the domain is known —
given, or recorded in the set's metadata as a shipped domain — and kept otherwise
(``meta["features"]`` says which). Other features (the dialogue history) are kept.

**Seeded and coupled across levels.** Context i draws its random numbers from
``numpy.random.default_rng([seed, i, k])`` with one stream k per mechanism, in a fixed pattern
that does not depend on ε; a slot is swapped when its uniform draw is below ε, and so on. So the
same seed perturbs the same slots at a higher level plus some more (the curves of a robustness
probe are not re-randomised from level to level), and a rerun gives a byte-identical file.

**Noise 0 is the identity**: no mechanism touches a belief (no arithmetic is done on it), so
the perturbed set has the same beliefs, ids, order and hence the same fingerprint as the input —
every policy answers it exactly as it answers the original. The set's ``meta`` records the
perturbation (``builder: "perturbed"``, noise, seed, kinds, nbest, the parent's fingerprint and
meta, counts); each changed context's ``meta["perturbation"]`` names its swapped and confused slots.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np

from behavsim import ConfigError, ContextSet, canonical_copy, did_you_mean
from contexts._common import resolve_domain
from contexts.commands import add_output_option, check_options, option_domain, output_path, save_set
from policies.simulation.domain import add_domain_option, shipped_domain
from policies.simulation.tracker import inform_info

__all__ = ["perturb", "PERTURBATION_KINDS", "check_noise", "register_perturb"]

#: The perturbation mechanisms, in the order they are applied.
PERTURBATION_KINDS = ("swap", "nbest", "jitter")
_NONE = "**NONE**"
_NOT_SLOTS = ("method", "discourseAct", "requested")


def check_noise(noise: Any, what: str = "noise") -> float:
    """``noise`` as a float in [0, 1]; anything else is a :class:`~behavsim.ConfigError`."""
    if isinstance(noise, bool) or not isinstance(noise, Real) or not math.isfinite(float(noise)):
        raise ConfigError(f"{what}: expected a noise level in [0, 1] (e.g. 0.15), got {noise!r}")
    if not 0.0 <= float(noise) <= 1.0:
        raise ConfigError(f"{what}: expected a noise level in [0, 1] (e.g. 0.15), got {noise!r}")
    return float(noise)


def _check_kinds(kinds: Any) -> tuple[str, ...]:
    if isinstance(kinds, str) or not isinstance(kinds, (list, tuple)) or not kinds:
        raise ConfigError(f"kinds: expected a non-empty list of {', '.join(PERTURBATION_KINDS)}, got {kinds!r}")
    for k in kinds:
        if k not in PERTURBATION_KINDS:
            raise ConfigError(
                f"kinds: unknown perturbation {k!r}.{did_you_mean(str(k), PERTURBATION_KINDS)} "
                f"Valid: {', '.join(PERTURBATION_KINDS)}"
            )
    return tuple(k for k in PERTURBATION_KINDS if k in kinds)


def _int(value: Any, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ConfigError(f"{what}: expected an integer >= {low}, got {value!r}")
    return int(value)


def _recorded_rules(meta: Any) -> set[str]:
    """The domain rules files a set's metadata names (subsets, unions, perturbations included)."""
    if not isinstance(meta, dict):
        return set()
    found = {meta["domain_rules"]} if isinstance(meta.get("domain_rules"), str) else set()
    found |= _recorded_rules(meta.get("parent_meta"))
    for part in meta.get("parts") or []:
        found |= _recorded_rules(part)
    return found


def _feature_domain(cs: ContextSet, domain: Any) -> tuple[Any, str]:
    """The domain whose database recomputes ``inform_info``/``dbMatches``, and how it was chosen."""
    if domain is not None:
        d = resolve_domain(domain)
        return d, f"inform_info and dbMatches recomputed on domain {d.name!r} (given)"
    rules = _recorded_rules(cs.meta)
    if len(rules) == 1:
        shipped = shipped_domain(next(iter(rules)))
        if shipped is not None:
            return shipped, f"inform_info and dbMatches recomputed on domain {shipped.name!r} (recorded in the set)"
    return None, "kept (the set records no shipped domain; give domain= to recompute inform_info and dbMatches)"


def _numeric(dist: Any) -> bool:
    """A distribution this module can perturb: a mapping of names to finite numbers in [0, 1]
    (anything else in a leniently imported belief is left as it is)."""
    return isinstance(dist, dict) and all(
        isinstance(p, Real) and not isinstance(p, bool) and 0.0 <= float(p) <= 1.0 for p in dist.values()
    )


def _top(dist: dict[str, Any]) -> str | None:
    """The most probable value other than ``**NONE**`` with a positive belief (ties: first key)."""
    best, best_p = None, 0.0
    for v, p in dist.items():
        if v != _NONE and isinstance(p, Real) and float(p) > best_p:
            best, best_p = v, float(p)
    return best


def _swap(dist: dict[str, Any], rng: np.random.Generator, noise: float) -> str | None:
    """Exchange the top value's probability with another value's (with probability ``noise``)."""
    u, k = rng.random(2)  # always two draws: the pattern must not depend on the outcome
    top = _top(dist)
    if top is None or u >= noise:
        return None
    others = [v for v in dist if v not in (_NONE, top)]
    if not others:
        return None
    w = others[int(k * len(others))]
    dist[top], dist[w] = dist[w], dist[top]
    return w


def _confuse(dist: dict[str, Any], rng: np.random.Generator, noise: float, nbest: int) -> list[str]:
    """Share the top value's mass over an N-best list of it and nbest − 1 confusions."""
    u = rng.random()
    conf = np.sort(rng.dirichlet(np.ones(nbest)))[::-1]
    top = _top(dist)
    keys = [v for v in dist if v != _NONE]
    order = rng.random(max(len(keys) - 1, 0)).argsort(kind="stable")
    if top is None or u >= noise or len(keys) < 2:
        return []
    others = [v for v in keys if v != top]
    chosen = [others[int(j)] for j in order[: nbest - 1]]
    shares = conf[: len(chosen) + 1] / conf[: len(chosen) + 1].sum()
    p = float(dist[top])
    moved = [p * float(s) for s in shares[1:]]
    for v, m in zip(chosen, moved):
        dist[v] = float(dist[v]) + m
    dist[top] = p - math.fsum(moved)
    return chosen


def _renormalise(dist: dict[str, Any], new: dict[str, float], total: float) -> None:
    """Write ``new`` (positive values) into ``dist`` scaled to ``total``; never above it."""
    s = math.fsum(new.values())
    if s <= 0:
        return
    for v, x in new.items():
        dist[v] = x / s * total
    excess = math.fsum(float(p) for p in dist.values()) - total
    if excess > 0:  # rounding: take it from the largest entry
        big = max(new, key=lambda v: dist[v])
        dist[big] = max(0.0, dist[big] - excess)


def _jitter(dist: dict[str, Any], rng: np.random.Generator, noise: float) -> None:
    z = rng.standard_normal(len(dist))
    if noise <= 0:
        return
    new = {v: float(p) * math.exp(noise * float(zi)) for (v, p), zi in zip(dist.items(), z) if float(p) > 0}
    if len(new) > 1:
        _renormalise(dist, new, min(math.fsum(float(p) for p in dist.values()), 1.0))


def _jitter_requested(req: dict[str, Any], rng: np.random.Generator, noise: float) -> None:
    z = rng.standard_normal(len(req))
    if noise <= 0:
        return
    for (v, p), zi in zip(list(req.items()), z):
        if float(p) > 0:
            req[v] = min(1.0, float(p) * math.exp(noise * float(zi)))


def _perturb_one(
    belief: dict[str, Any], i: int, noise: float, seed: int, kinds: tuple[str, ...], nbest: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The perturbed copy of one belief and a record of what was done to it."""
    out = canonical_copy(belief)
    inner = out.get("beliefs")
    if not isinstance(inner, dict):
        return out, {}
    slots = [s for s, d in inner.items() if s not in _NOT_SLOTS and _numeric(d)]
    swapped: dict[str, str] = {}
    confused: dict[str, list[str]] = {}
    if "swap" in kinds:
        rng = np.random.default_rng([seed, i, 0])
        for s in slots:
            w = _swap(inner[s], rng, noise)
            if w is not None:
                swapped[s] = w
    if "nbest" in kinds:
        rng = np.random.default_rng([seed, i, 1])
        for s in slots:
            chosen = _confuse(inner[s], rng, noise, nbest)
            if chosen:
                confused[s] = chosen
    if "jitter" in kinds:
        rng = np.random.default_rng([seed, i, 2])
        for s in [*slots, "method", "discourseAct"]:
            if _numeric(inner.get(s)):
                _jitter(inner[s], rng, noise)
        if _numeric(inner.get("requested")):
            _jitter_requested(inner["requested"], rng, noise)
    record: dict[str, Any] = {}
    if swapped:
        record["swapped"] = swapped
    if confused:
        record["confused"] = confused
    return out, record


def perturb(
    cs: ContextSet,
    noise: float,
    *,
    seed: int = 0,
    kinds: Sequence[str] = PERTURBATION_KINDS,
    nbest: int = 3,
    domain: Any = None,
    description: str | None = None,
) -> ContextSet:
    """The contexts of ``cs`` disturbed at ``noise`` ∈ [0, 1] (see the module doc).

    ``kinds``: the mechanisms (``swap``, ``nbest``, ``jitter``; default all); ``nbest``: the
    N-best list size of the confusions (≥ 2); ``seed``: the random seed (same seed, same set);
    ``domain``: recompute ``inform_info``/``dbMatches`` on it (default: the shipped domain the set
    records, else keep them). Ids, order and per-context metadata are kept; at ``noise=0`` the
    beliefs too. Bad arguments raise :class:`~behavsim.ConfigError` naming the parameter.
    """
    if not isinstance(cs, ContextSet):
        raise ConfigError(f"cs: expected a behavsim.ContextSet, got {type(cs).__name__}")
    noise = check_noise(noise)
    seed = _int(seed, "seed", 0)
    nbest = _int(nbest, "nbest", 2)
    kinds = _check_kinds(list(kinds) if isinstance(kinds, tuple) else kinds)
    fdomain, features = _feature_domain(cs, domain) if noise > 0 else (None, "unchanged (noise 0)")
    beliefs: list[dict[str, Any]] = []
    metas: list[dict[str, Any]] = []
    changed = n_swaps = n_confusions = 0
    cache: dict = {}
    for i, (b, m) in enumerate(zip(cs.beliefs, cs.metas)):
        meta = dict(m)
        if noise == 0:
            beliefs.append(canonical_copy(b))
            metas.append(meta)
            continue
        nb, record = _perturb_one(b, i, noise, seed, kinds, nbest)
        if fdomain is not None and isinstance(nb.get("features"), dict):
            flags, n_match = inform_info(nb, fdomain, cache)
            nb["features"]["inform_info"] = flags
            nb["features"]["dbMatches"] = n_match
        if nb != b:
            changed += 1
        n_swaps += len(record.get("swapped", {}))
        n_confusions += len(record.get("confused", {}))
        if record:
            meta["perturbation"] = record
        beliefs.append(nb)
        metas.append(meta)
    set_meta = {
        "builder": "perturbed",
        "noise": noise,
        "seed": seed,
        "kinds": list(kinds),
        "nbest": nbest,
        "features": features,
        "parent": cs.fingerprint,
        "parent_meta": cs.meta,
        "changed": changed,
        "swaps": n_swaps,
        "confusions": n_confusions,
        "description": description or f"perturbed at noise {noise:g} (seed {seed}; {', '.join(kinds)})",
    }
    return ContextSet(beliefs, metas, list(cs.ids), set_meta)


# ------------------------------------------------------------------------------ command
def register_perturb(subparsers: Any) -> argparse.ArgumentParser:
    """``behavsim contexts perturb`` (entry point ``perturb``)."""
    pt = subparsers.add_parser(
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
    add_domain_option(pt)
    add_output_option(pt)
    pt.set_defaults(func=_cmd_perturb)
    return pt


def _cmd_perturb(args: argparse.Namespace) -> int:
    if (args.input is None) == (args.contexts is None):
        raise ConfigError("perturb: give the context set once, as FILE or as --contexts FILE")
    try:
        level = float(args.noise)
    except ValueError:
        raise ConfigError(f"--noise: expected a noise level in [0, 1] (e.g. 0.15), got {args.noise!r}") from None
    noise = check_noise(level, "--noise")
    check_options(args, non_negative=("seed",))
    out = output_path(args.output)
    cs = ContextSet.load(args.input or args.contexts)
    p = perturb(cs, noise, seed=args.seed, kinds=args.kinds, nbest=args.nbest, domain=option_domain(args))
    print(
        f"noise {noise:g} (seed {args.seed}): {p.meta['changed']} of {len(p)} contexts changed, "
        f"{p.meta['swaps']} swaps, {p.meta['confusions']} N-best confusions; features {p.meta['features']}"
    )
    return save_set(p, out)
