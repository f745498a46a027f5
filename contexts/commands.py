"""What a context builder's sub-command needs (``behavsim contexts ACTION``).

A builder — behavsim's own or a third party's — adds its sub-command through the entry-point
group ``behavsim.context_builders`` (``setup.cfg``): each entry is a function
``register(subparsers)`` that adds one sub-command to ``behavsim contexts``, beside the builder's
code (:mod:`contexts.cli` loads them). The helpers here give every builder the same options and
messages: the output file (:func:`add_output_option`, :func:`output_path`, :func:`save_set`), the
domain (:func:`option_domain`), ``KEY=VALUE`` lists (:func:`key_values`), ranges
(:func:`parse_range`) and up-front checks of numbers (:func:`check_options`).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from behavsim import ConfigError, ContextSet
from policies.simulation.domain import Domain, domain_spec, resolve_domain

__all__ = [
    "BUILDERS_GROUP",
    "SUFFIXES",
    "add_output_option",
    "output_path",
    "save_set",
    "option_domain",
    "key_values",
    "parse_range",
    "check_options",
]

#: The entry-point group of the context builders' sub-commands.
BUILDERS_GROUP = "behavsim.context_builders"

#: The file formats a context set is written in, by suffix.
SUFFIXES = (".jsonl", ".parquet")


def add_output_option(parser: argparse.ArgumentParser, what: str = "output file") -> None:
    """``-o/--output FILE`` (required), a context set's file."""
    parser.add_argument("-o", "--output", required=True, help=f"{what} (.jsonl or .parquet)")


def output_path(path: str) -> Path:
    """The output file ``-o`` names, refused up front unless it ends in a known suffix."""
    p = Path(path)
    if p.suffix not in SUFFIXES:
        raise ConfigError(f"--output: {path!r} must end in .jsonl or .parquet (the format is chosen by suffix)")
    return p


def save_set(cs: ContextSet, out: Path) -> int:
    """Save ``cs`` to ``out`` and say so (the command's exit status: 0)."""
    cs.save(out)
    print(f"wrote {len(cs)} contexts to {out} (fingerprint {cs.fingerprint})")
    return 0


def option_domain(args: argparse.Namespace) -> Domain | None:
    """The domain ``--domain`` names (checked), or ``None`` without the option."""
    spec = domain_spec(getattr(args, "domain", None))
    return None if spec is None else resolve_domain(spec)


def key_values(items: Iterable[str] | None, what: str, example: str) -> dict[str, str]:
    """``["area=centre", ...]`` → ``{"area": "centre"}``; a malformed or repeated key is refused,
    naming the option ``what``."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"{what}: expected KEY=VALUE such as {example}, got {item!r}")
        if key.strip() in out:
            raise ConfigError(f"{what}: {key.strip()!r} given twice")
        out[key.strip()] = value.strip()
    return out


def parse_range(text: str, what: str) -> tuple[float | None, float | None] | float:
    """``"0.5:1.0"`` → (0.5, 1.0); ``"0.5:"`` / ``":1"`` open ends; ``"1"`` → 1.0."""
    try:
        if ":" not in text:
            return float(text)
        lo, hi = text.split(":", 1)
        return (float(lo) if lo.strip() else None, float(hi) if hi.strip() else None)
    except ValueError:
        raise ConfigError(f"{what}: expected a number or a range LOW:HIGH such as 0.5:1.0, got {text!r}") from None


def check_options(
    args: argparse.Namespace,
    *,
    positive: Iterable[str] = (),
    non_negative: Iterable[str] = (),
    probability: Iterable[str] = (),
) -> None:
    """Refuse out-of-range option values up front, naming the option (``--nbest -3``)."""
    checks: list[tuple[Iterable[str], Any, str]] = [
        (positive, lambda v: v >= 1, "a positive integer"),
        (non_negative, lambda v: v >= 0, "a non-negative integer"),
        (probability, lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]"),
    ]
    for dests, ok, expected in checks:
        for dest in dests:
            v = getattr(args, dest)
            if v is not None and not ok(v):
                raise ConfigError(f"--{dest.replace('_', '-')}: expected {expected}, got {v}")
