"""The built-in policy kinds of ``policies``: ``handcrafted``, ``checkpoint`` and ``callable``.

The protocol (:class:`behavsim.Adapter`, spec strings, the registry of kinds) lives in the core,
:mod:`behavsim.policy`; this module only provides factories, registered through the entry-point
group ``behavsim.policy_kinds`` (see ``setup.cfg``), and re-exports the core's protocol names
(``Adapter``, ``as_adapter``, ``parse_spec``, ...) for the adapters built here.
A factory takes the parsed :class:`~behavsim.PolicySpec` and keyword options (``domain``: the
domain a built-in policy runs on, default the one its file names or the built-in one) and ignores
options it does not know.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from behavsim import ConfigError, closest_name
from behavsim.policy import (
    CALLABLE_RE,
    Adapter,
    CallableAdapter,
    PolicyAdapter,
    PolicySpec,
    as_adapter,
    file_sha256,
    parse_spec,
    policy_kinds,
    source_info,
)

__all__ = [
    "Adapter",
    "PolicyAdapter",
    "CallableAdapter",
    "DomainPolicyAdapter",
    "PolicySpec",
    "parse_spec",
    "as_adapter",
    "file_sha256",
    "source_info",
    "handcrafted_kind",
    "checkpoint_kind",
    "callable_kind",
]


def _context_domains(meta: Any) -> set[str]:
    """The domain rules files a context set's metadata names (subsets and unions included)."""
    if not isinstance(meta, dict):
        return set()
    found = {meta["domain_rules"]} if isinstance(meta.get("domain_rules"), str) else set()
    found |= _context_domains(meta.get("parent_meta"))
    for part in meta.get("parts") or []:
        found |= _context_domains(part)
    return found


class DomainPolicyAdapter(PolicyAdapter):
    """A built-in policy (handcrafted, GP-SARSA) on one :class:`policies.simulation.domain.Domain`: refuses a
    context set built on another domain before the first context (both may be called
    'restaurant': behavsim's domain and PyDial's CamRestaurants)."""

    def check_contexts(self, contexts: Any) -> None:
        source = getattr(getattr(self.policy, "domain", None), "source", None)
        wanted = _context_domains(getattr(contexts, "meta", None))
        if source is None or not wanted:
            return
        mine = os.path.basename(str(source))
        if any(w != mine for w in wanted):
            raise ConfigError(
                f"policy {self.id!r} works on the domain of {mine!r}, but the contexts were built on "
                f"{', '.join(sorted(wanted))}; their belief states do not fit it (give the policy their domain: --domain NAME, or domain=...)"
            )


def _domain(domain: Any) -> Any:
    """``None`` (the policy's default domain) or the :class:`policies.simulation.domain.Domain` that a domain,
    a shipped domain's name or a rules file names (picklable specs cross worker processes)."""
    if domain is None:
        return None
    from ..simulation.domain import DomainError, resolve_domain

    try:
        return resolve_domain(domain)
    except (DomainError, KeyError) as exc:
        raise ConfigError(f"domain: {exc}") from None


def handcrafted_kind(spec: PolicySpec, *, domain: Any = None, **_: Any) -> Adapter:
    """``handcrafted[:nlg_seed=N]``: the built-in rule-based policy (``nlg_seed=none``: no prompts)."""
    from ..learners.handcrafted import HandcraftedPolicy

    spec.check_options(("nlg_seed",))
    if spec.target:
        raise ConfigError(
            f"policy spec {spec.text!r}: handcrafted takes no argument, only options (handcrafted:nlg_seed=N)"
        )
    nlg_seed = spec.int_option("nlg_seed", 0)
    pol = HandcraftedPolicy(_domain(domain), nlg_seed=nlg_seed)
    pid = "handcrafted" if nlg_seed == 0 else f"handcrafted-nlg{nlg_seed if nlg_seed is not None else 'none'}"
    meta = {
        "id": pid,
        "name": pol.name,
        "kind": "handcrafted",
        "policy": "handcrafted",
        "domain": pol.domain.name,
        "nlg_seed": nlg_seed,
        "confirm_threshold": pol.confirm_threshold,
    }
    return DomainPolicyAdapter(pol, meta, label=pol.name)


def checkpoint_kind(spec: PolicySpec, *, domain: Any = None, **_: Any) -> Adapter:
    """``PATH.npz[:nlg_seed=N]`` or ``checkpoint:PATH``: a GP-SARSA checkpoint, greedy."""
    from ..learners.checkpoint import CheckpointError, policy_name, read_checkpoint
    from ..learners.gp import GPSarsaPolicy

    spec.check_options(("nlg_seed",))
    if not spec.target:
        raise ConfigError(f"policy spec {spec.text!r}: expected checkpoint:PATH.npz")
    path = Path(spec.target)
    if not path.is_file():
        raise ConfigError(f"policy spec {spec.text!r}: checkpoint file {str(path)!r} not found")
    try:
        learner, meta_file = read_checkpoint(path)
        pol = GPSarsaPolicy.from_checkpoint_meta(learner, meta_file, domain=_domain(domain), learning=False)
    except CheckpointError as exc:
        raise ConfigError(f"policy spec {spec.text!r}: {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"policy spec {spec.text!r}: {path}: {exc}") from None
    training = meta_file.get("training") or {}
    if "nlg_seed" in spec.options:  # same learner, another generator seed
        pol = GPSarsaPolicy(
            pol.domain, learner=learner, learning=False, name=pol.name, nlg_seed=spec.int_option("nlg_seed", 0)
        )
    reward, seed, dialogues = training.get("reward"), training.get("seed"), training.get("dialogues")
    if reward is not None and seed is not None and dialogues is not None:
        pid = f"{reward}-seed{seed}-{int(dialogues):06d}"
    else:
        pid = path.stem
    meta: dict[str, Any] = {
        "id": pid,
        "name": pol.name,
        "kind": "checkpoint",
        "policy": training.get("policy", "gp"),
        "domain": pol.domain.name,
    }
    for key in ("reward", "seed"):
        if training.get(key) is not None:
            meta[key] = training[key]
    if dialogues is not None:
        meta["checkpoint"] = int(dialogues)
    if training.get("reward_signature"):
        meta["reward_signature"] = training["reward_signature"]
    meta.update(nlg_seed=pol.nlg_seed, path=source_info(path))
    return DomainPolicyAdapter(pol, meta, label=policy_name(meta_file))


checkpoint_kind.path_suffixes = (".npz",)  # type: ignore[attr-defined]
checkpoint_kind.path_description = "GP-SARSA checkpoint"  # type: ignore[attr-defined]


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
