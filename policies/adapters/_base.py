"""What the policy families of ``policies`` share: the adapter of a policy on one domain
(:class:`DomainPolicyAdapter`), the domain a factory's ``domain=`` option names
(:func:`option_domain`), and the ``callable`` kind.

The protocol (:class:`behavsim.Adapter`, spec strings, the registry of kinds) lives in the core,
:mod:`behavsim.policy`; the kinds are contributed through the entry-point group
``behavsim.policy_kinds`` (see ``setup.cfg``). A factory takes the parsed
:class:`~behavsim.PolicySpec` and keyword options (``domain``: the domain a built-in policy runs
on, default the one its file names or the built-in one) and ignores options it does not know.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from behavsim import ConfigError, closest_name
from behavsim.policy import CALLABLE_RE, Adapter, CallableAdapter, PolicyAdapter, PolicySpec, policy_kinds, source_info
from policies.simulation.domain import Domain, load_domain

__all__ = ["DomainPolicyAdapter", "context_domains", "option_domain", "callable_kind"]


def context_domains(meta: Any) -> set[str]:
    """The domain rules files a context set's metadata names (subsets and unions included)."""
    if not isinstance(meta, dict):
        return set()
    found = {meta["domain_rules"]} if isinstance(meta.get("domain_rules"), str) else set()
    found |= context_domains(meta.get("parent_meta"))
    for part in meta.get("parts") or []:
        found |= context_domains(part)
    return found


class DomainPolicyAdapter(PolicyAdapter):
    """A built-in policy (handcrafted, GP-SARSA) on one :class:`policies.simulation.domain.Domain`: refuses a
    context set built on another domain before the first context (both may be called
    'restaurant': behavsim's domain and PyDial's CamRestaurants)."""

    def check_contexts(self, contexts: Any) -> None:
        source = getattr(getattr(self.policy, "domain", None), "source", None)
        wanted = context_domains(getattr(contexts, "meta", None))
        if source is None or not wanted:
            return
        mine = os.path.basename(str(source))
        if any(w != mine for w in wanted):
            raise ConfigError(
                f"policy {self.id!r} works on the domain of {mine!r}, but the contexts were built on "
                f"{', '.join(sorted(wanted))}; their belief states do not fit it (give the policy their domain: --domain NAME, or domain=...)"
            )


def option_domain(domain: Any) -> Domain | None:
    """``None`` (the policy's default domain) or the :class:`policies.simulation.domain.Domain` that a
    factory's ``domain=`` option names: a domain, a shipped domain's name or a rules file (picklable
    specs cross worker processes); a bad one is a :class:`behavsim.ConfigError`."""
    return None if domain is None else load_domain(domain)


def callable_kind(spec: PolicySpec, **_: Any) -> Adapter:
    """``module:function`` or ``callable:module:function``: an importable callable
    ``belief -> act | (act, prompt) | Response``."""
    spec.check_options(())
    if not CALLABLE_RE.match(spec.target or ""):
        raise ConfigError(
            f"policy spec {spec.text!r}: expected module:function (an importable module and a "
            "callable in it, e.g. mypackage.policies:answer)"
        )
    module_name, _sep, attr = spec.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        close = closest_name(module_name.lower(), policy_kinds.names(), cutoff=0.6)
        hint = f" (did you mean the policy kind {close + ':'!r}?)" if close else ""
        raise ConfigError(f"policy spec {spec.text!r}: cannot import module {module_name!r}{hint}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"policy spec {spec.text!r}: module {module_name!r} has no attribute {attr!r}") from None
    is_policy = callable(getattr(obj, "act", None)) and not isinstance(obj, type)  # a policy object
    if not (is_policy or callable(obj)):
        raise ConfigError(f"policy spec {spec.text!r}: {spec.target} is a {type(obj).__name__}, not a callable")
    name = f"{module_name}.{attr}"
    meta: dict[str, Any] = {"id": name, "name": name, "kind": "callable", "target": spec.target}
    src = getattr(module, "__file__", None)
    if src and os.path.isfile(src):
        meta["path"] = source_info(src)
    if is_policy:
        return PolicyAdapter(obj, meta)
    return CallableAdapter(obj, meta)
