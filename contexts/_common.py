"""Helpers shared by the context-set builders (private)."""

from __future__ import annotations

import difflib
import json
import math
from typing import Any, Iterable

from behavsim import ConfigError
from behavsim import canonical_copy as copy_belief  # the form a saved context set holds a belief in

__all__ = ["closest_hint", "resolve_domain", "domain_meta", "copy_belief", "jsonable", "ORIGINS"]

#: The origins a context can have (SPEC §4 plus contexts logged from other systems).
ORIGINS = ("collected", "generated", "logged")


def closest_hint(name: Any, valid: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the closest valid name, or an empty string."""
    close = difflib.get_close_matches(str(name), [str(v) for v in valid], n=1, cutoff=0.5)
    return f" Did you mean {close[0]!r}?" if close else ""


def resolve_domain(domain: Any):
    """``None`` → the built-in domain; a :class:`policies.domain.Domain` is returned as is."""
    from policies.domain import Domain

    if domain is None:
        return Domain.builtin()
    if isinstance(domain, Domain):
        return domain
    raise ConfigError(f"domain: expected a policies.domain.Domain or None, got {type(domain).__name__}")


def domain_meta(domain: Any) -> dict[str, Any]:
    """What identifies a domain in set metadata: name, rules file name, number of venues
    (two domains may share a name: behavsim's built-in one and PyDial's are both 'restaurant')."""
    import os.path

    return {"domain": domain.name, "domain_rules": os.path.basename(str(domain.source)),
            "domain_venues": len(domain.venues)}


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
