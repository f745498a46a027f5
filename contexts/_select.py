"""Subsets of a context set — which sub-sets of contexts drive the differences (paper §1, §5).

Criteria combine with AND; ranges are inclusive with a tolerance of 1e-9 (so the grid level
0.6 lies in ``(0.6, 1.0)`` even when stored as 0.6000000000000001):

* ``turn``: ``1`` (equal), ``(2, 4)`` (range; ``None`` for an open end); contexts without a
  ``turn`` in their metadata (generated ones) never match;
* ``origin``: ``"collected"`` / ``"generated"`` / ``"logged"`` or a list of them;
* ``source_policy``: a label or a list of labels (collected contexts);
* ``slot_belief``: ``{"food": (0.5, 1.0)}`` — the belief of the slot's top value other than
  ``**NONE**`` (``dontcare`` counts as a value) lies in the range; a slot missing from a
  belief has top belief 0;
* ``method_belief``: ``{"byconstraints": (0.5, 1.0)}`` — that method's probability lies in the
  range;
* ``where``: any ``keep(belief, meta) -> bool``.

The commands ``behavsim contexts select`` (a subset) and ``behavsim contexts union`` (several sets
in order, :meth:`behavsim.ContextSet.concat`) are declared here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from numbers import Real
from typing import Any

from behavsim import ConfigError, ContextSet, did_you_mean
from contexts._common import ORIGINS
from contexts.commands import add_output_option, key_values, output_path, parse_range, save_set

__all__ = ["select", "top_belief", "register_select", "register_union"]

_TOL = 1e-9


def top_belief(dist: Mapping[str, float] | None) -> float:
    """The largest probability of a value other than ``**NONE**`` (0 for a missing slot)."""
    if not dist:
        return 0.0
    return max((float(p) for v, p in dist.items() if v != "**NONE**"), default=0.0)


def _range(
    value: Any, what: str, lo_default: float | None = None, hi_default: float | None = None, integer: bool = False
) -> tuple[float | None, float | None]:
    def num(x: Any) -> bool:
        return not isinstance(x, bool) and isinstance(x, Real) and (not integer or float(x).is_integer())

    if num(value):
        return float(value), float(value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(v is None or num(v) for v in value):
        lo, hi = value
        lo = lo_default if lo is None else float(lo)
        hi = hi_default if hi is None else float(hi)
        if lo is not None and hi is not None and lo > hi:
            raise ConfigError(f"{what}: empty range {value!r} (low end above high end)")
        return lo, hi
    kind = "an integer" if integer else "a number"
    raise ConfigError(f"{what}: expected {kind} or a (low, high) pair, got {value!r}")


def _inside(x: float, rng: tuple[float | None, float | None]) -> bool:
    lo, hi = rng
    return (lo is None or x >= lo - _TOL) and (hi is None or x <= hi + _TOL)


def _names(value: Any, what: str) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset([value])
    if isinstance(value, (list, tuple, set, frozenset)) and value and all(isinstance(v, str) for v in value):
        return frozenset(value)
    raise ConfigError(f"{what}: expected a name or a list of names, got {value!r}")


#: A test of one context: ``keep(belief, meta) -> bool``.
_Test = Callable[[dict, dict], bool]


def _turn_test(turn: Any) -> tuple[Any, _Test]:
    t_rng = _range(turn, "turn", integer=True)

    def t_ok(b: dict, m: dict) -> bool:
        t = m.get("turn")
        return isinstance(t, (int, float)) and not isinstance(t, bool) and _inside(float(t), t_rng)

    return [None if x is None else int(x) for x in t_rng], t_ok


def _origin_test(origin: Any) -> tuple[Any, _Test]:
    wanted = _names(origin, "origin")
    for o in wanted:
        if o not in ORIGINS:
            raise ConfigError(f"origin: unknown origin {o!r}.{did_you_mean(o, ORIGINS)} Valid: {', '.join(ORIGINS)}")
    return sorted(wanted), lambda b, m: m.get("origin") in wanted


def _source_test(cs: ContextSet, source_policy: Any) -> tuple[Any, _Test]:
    pols = _names(source_policy, "source_policy")
    known: set[str] = {str(m["source_policy"]) for m in cs.metas if m.get("source_policy") is not None}
    for p in pols:
        if p not in known:
            raise ConfigError(
                f"source_policy: no context comes from {p!r}.{did_you_mean(p, known)} "
                f"Sources in this set: {', '.join(sorted(known)) or 'none'}"
            )
    return sorted(pols), lambda b, m: m.get("source_policy") in pols


def _slot_test(cs: ContextSet, slot_belief: Any) -> tuple[Any, _Test]:
    if not isinstance(slot_belief, Mapping) or not slot_belief:
        raise ConfigError(f"slot_belief: expected a mapping slot -> (low, high), got {slot_belief!r}")
    present: set[str] = set()
    for b in cs.beliefs:
        present.update(k for k in (b.get("beliefs") or {}) if k not in ("method", "discourseAct", "requested"))
    ranges = {}
    for slot, r in slot_belief.items():
        if slot not in present:
            raise ConfigError(
                f"slot_belief: slot {slot!r} appears in no context.{did_you_mean(slot, present)} "
                f"Slots: {', '.join(sorted(present)) or 'none'}"
            )
        ranges[slot] = _range(r, f"slot_belief[{slot!r}]")
    return (
        {s: list(r) for s, r in ranges.items()},
        lambda b, m: all(_inside(top_belief((b.get("beliefs") or {}).get(s)), r) for s, r in ranges.items()),
    )


def _method_test(cs: ContextSet, method_belief: Any) -> tuple[Any, _Test]:
    if not isinstance(method_belief, Mapping) or not method_belief:
        raise ConfigError(f"method_belief: expected a mapping method -> (low, high), got {method_belief!r}")
    methods: set[str] = set()
    for b in cs.beliefs:
        methods.update((b.get("beliefs") or {}).get("method") or {})
    m_ranges = {}
    for name, r in method_belief.items():
        if name not in methods:
            raise ConfigError(
                f"method_belief: method {name!r} appears in no context."
                f"{did_you_mean(name, methods)} Methods: {', '.join(sorted(methods)) or 'none'}"
            )
        m_ranges[name] = _range(r, f"method_belief[{name!r}]")
    return (
        {k: list(r) for k, r in m_ranges.items()},
        lambda b, m: all(
            _inside(float(((b.get("beliefs") or {}).get("method") or {}).get(k, 0.0)), r) for k, r in m_ranges.items()
        ),
    )


def _where_test(where: Any) -> tuple[Any, _Test]:
    if not callable(where):
        raise ConfigError(f"where: expected a function keep(belief, meta) -> bool, got {where!r}")
    return getattr(where, "__name__", repr(where)), where


def select(
    cs: ContextSet,
    *,
    turn: Any = None,
    origin: Any = None,
    source_policy: Any = None,
    slot_belief: Mapping[str, Any] | None = None,
    method_belief: Mapping[str, Any] | None = None,
    where: Callable[[dict, dict], bool] | None = None,
    description: str | None = None,
) -> ContextSet:
    """The contexts of ``cs`` meeting every given criterion (see the module doc), in order.

    Built on :meth:`behavsim.ContextSet.select`: the subset's ``meta`` records the parent's
    fingerprint and meta, the kept indices, and the criteria (``meta["criteria"]``).
    """
    if not isinstance(cs, ContextSet):
        raise ConfigError(f"cs: expected a behavsim.ContextSet, got {type(cs).__name__}")
    given: list[tuple[str, Any, Callable[[], tuple[Any, _Test]]]] = [
        ("turn", turn, lambda: _turn_test(turn)),
        ("origin", origin, lambda: _origin_test(origin)),
        ("source_policy", source_policy, lambda: _source_test(cs, source_policy)),
        ("slot_belief", slot_belief, lambda: _slot_test(cs, slot_belief)),
        ("method_belief", method_belief, lambda: _method_test(cs, method_belief)),
        ("where", where, lambda: _where_test(where)),
    ]
    tests: list[_Test] = []
    criteria: dict[str, Any] = {}
    for name, value, make in given:
        if value is not None:
            criteria[name], test = make()
            tests.append(test)
    if description is None:
        description = "; ".join(f"{k}={v}" for k, v in criteria.items()) or "all contexts"
    sub = cs.select(lambda b, m: all(t(b, m) for t in tests), description=description)
    sub.meta["criteria"] = criteria
    return sub


# ------------------------------------------------------------------------------ commands
def register_select(subparsers: Any) -> argparse.ArgumentParser:
    """``behavsim contexts select`` (entry point ``select``)."""
    s = subparsers.add_parser(
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
    add_output_option(s)
    s.set_defaults(func=_cmd_select)
    return s


def _ranges(items: list[str] | None, what: str, example: str) -> dict[str, Any] | None:
    return {k: parse_range(v, f"{what} {k}") for k, v in key_values(items, what, example).items()} or None


def _cmd_select(args: argparse.Namespace) -> int:
    out = output_path(args.output)
    cs = ContextSet.load(args.input)
    turn = None
    if args.turn is not None:
        turn = parse_range(args.turn, "--turn")
        vals = [turn] if isinstance(turn, float) else [v for v in turn if v is not None]
        if any(not float(v).is_integer() for v in vals):
            raise ConfigError(f"--turn: expected a turn number or a range such as 2:4, got {args.turn!r}")
    sub = select(
        cs,
        turn=turn,
        origin=args.origin,
        source_policy=args.source_policy,
        slot_belief=_ranges(args.slot_belief, "--slot-belief", "food=0.5:1.0"),
        method_belief=_ranges(args.method_belief, "--method-belief", "byconstraints=0.5:1.0"),
    )
    if not len(sub) and not args.allow_empty:
        raise ConfigError(
            f"no context of {args.input} matches ({sub.meta['description']}); "
            "nothing written (--allow-empty writes an empty set)"
        )
    return save_set(sub, out)


def register_union(subparsers: Any) -> argparse.ArgumentParser:
    """``behavsim contexts union`` (entry point ``union``)."""
    u = subparsers.add_parser(
        "union",
        help="several context sets as one, in order (duplicates kept)",
        description="The contexts of every FILE in the order given (ContextSet.concat): duplicates are kept, "
        "ids made unique by the file's index when two files share one; the set's meta records each part.",
    )
    u.add_argument("inputs", nargs="+", metavar="FILE")
    u.add_argument("--description", help="a description recorded in the set's meta")
    add_output_option(u)
    u.set_defaults(func=_cmd_union)
    return u


def _cmd_union(args: argparse.Namespace) -> int:
    out = output_path(args.output)
    return save_set(ContextSet.concat([ContextSet.load(f) for f in args.inputs], args.description), out)
