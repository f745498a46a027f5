"""Helpers shared by the context-set builders (private)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from behavsim import ConfigError
from behavsim import canonical_copy as copy_belief  # the form a saved context set holds a belief in

__all__ = ["resolve_domain", "domain_meta", "copy_belief", "jsonable", "ORIGINS"]

#: The origins a context can have: collected in dialogues, generated on a grid, or logged by another system.
ORIGINS = ("collected", "generated", "logged")


def resolve_domain(domain: Any):
    """The domain ``domain`` names (:func:`policies.simulation.domain.resolve_domain`: ``None`` for the
    default, a :class:`policies.simulation.domain.Domain`, a shipped domain's name, a rules file, or a
    ``(rules, db)`` pair); anything else is a :class:`behavsim.ConfigError`."""
    from policies.simulation.domain import Domain, DomainError
    from policies.simulation.domain import resolve_domain as resolve

    if not (domain is None or isinstance(domain, (Domain, str, os.PathLike, tuple))):
        raise ConfigError(
            f"domain: expected a policies.simulation.domain.Domain, a domain name or a rules file, got {type(domain).__name__}"
        )
    try:
        return resolve(domain if not isinstance(domain, os.PathLike) else Path(domain))
    except (DomainError, KeyError) as exc:
        raise ConfigError(f"domain: {exc}") from None


def domain_meta(domain: Any) -> dict[str, Any]:
    """What identifies a domain in set metadata: name, rules file name, number of venues
    (two domains may share a name: behavsim's built-in one and PyDial's are both 'restaurant')."""
    import os.path

    return {
        "domain": domain.name,
        "domain_rules": os.path.basename(str(domain.source)),
        "domain_venues": len(domain.venues),
    }


def jsonable(obj: Any) -> Any:
    """``obj`` made JSON-serialisable for set metadata (dataclasses → dicts, others → repr)."""
    import dataclasses

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
