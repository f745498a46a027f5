"""Helpers shared by the context-set builders (private)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

from behavsim import ConfigError
from policies.simulation.domain import Domain, load_domain

__all__ = ["resolve_domain", "domain_meta", "jsonable", "ORIGINS"]

#: The origins a context can have: collected in dialogues, generated on a grid, or logged by another system.
ORIGINS = ("collected", "generated", "logged")


def resolve_domain(domain: Any) -> Domain:
    """The domain ``domain`` names (:func:`policies.simulation.domain.load_domain`: ``None`` for the
    default, a :class:`policies.simulation.domain.Domain`, a shipped domain's name, a rules file, or a
    ``(rules, db)`` pair); anything else, or a domain that does not load, is a :class:`behavsim.ConfigError`."""
    if not (domain is None or isinstance(domain, (Domain, str, os.PathLike, tuple))):
        raise ConfigError(
            f"domain: expected a policies.simulation.domain.Domain, a domain name or a rules file, got {type(domain).__name__}"
        )
    return load_domain(domain if not isinstance(domain, os.PathLike) else Path(domain))


def domain_meta(domain: Any) -> dict[str, Any]:
    """What identifies a domain in set metadata: name, rules file name, number of venues
    (two domains may share a name: behavsim's built-in one and PyDial's are both 'restaurant')."""
    return {
        "domain": domain.name,
        "domain_rules": os.path.basename(str(domain.source)),
        "domain_venues": len(domain.venues),
    }


def jsonable(obj: Any) -> Any:
    """``obj`` made JSON-serialisable for set metadata (dataclasses → dicts, others → repr)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"type": type(obj).__name__, **jsonable(dataclasses.asdict(obj))}
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    try:
        json.dumps(obj)
        return obj
    except (TypeError, ValueError):
        return repr(obj)
