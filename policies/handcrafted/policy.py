"""Rule-based policy in the manner of PyDial's ``HDCPolicy``, over summary actions.

Rules, first that applies (only executable actions under :func:`policies.simulation.actions.action_mask`):

1. the user is finished (top method ``finished``) → ``bye``;
2. the user asks for alternatives → ``inform_alternatives``;
3. a venue was offered and the user requests slots (p > 0.5) → ``inform_byname``;
4. an accepted constraint has belief below ``confirm_threshold`` (noisy input) →
   ``confirm_<slot>`` (first such slot, alphabetical);
5. ``inform`` is executable (method by constraints and the matches cannot be told apart) and
   no venue has been offered yet, or the last offered venue no longer satisfies the accepted
   constraints → ``inform``;
6. a constraint is not accepted yet → ``request_<slot>`` (first, alphabetical);
7. a venue was offered and the user asks nothing → if the user thanked or acknowledged,
   ``reqmore`` (it then asks for what it still needs, or ends); otherwise offer the venue
   again (``inform``, else ``inform_byname``, else ``reqmore``); with no venue offered,
   ``inform`` if executable, else request the first slot.

The policy is a pure function of the belief's content (deterministic on any belief state, and
independent of the order of the keys in its dicts: ties follow the rules of
:mod:`policies.simulation.actions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from behavsim import ConfigError
from behavsim.policy import Adapter, PolicySpec, Response
from policies.adapters import DomainPolicyAdapter, option_domain
from policies.simulation.actions import (
    accepted_constraints,
    action_mask,
    master_act,
    method_summary,
    summary_actions,
    thanks_or_ack,
)
from policies.simulation.batch import context_batch, index_array
from policies.simulation.domain import Domain, resolve_domain
from policies.simulation.nlg import TemplateNLG

__all__ = ["HandcraftedPolicy", "handcrafted_kind"]


class HandcraftedPolicy:
    """Rule-based policy; ``act(belief) -> Response``."""

    def __init__(
        self,
        domain: Domain | None = None,
        *,
        name: str = "handcrafted",
        nlg_seed: int | None = 0,
        confirm_threshold: float = 0.8,
    ) -> None:
        self.domain = resolve_domain(domain)
        self.name = name
        self.nlg = TemplateNLG(nlg_seed) if nlg_seed is not None else None
        self.confirm_threshold = confirm_threshold
        self.actions = summary_actions(self.domain)
        self._slots = sorted(self.domain.system_requestable)

    def summary_action(self, belief: dict, mask: Any = None) -> str:
        """The summary action the rules choose; ``mask``: the belief's action mask when it is
        already known (default: :func:`~policies.simulation.actions.action_mask`)."""
        if mask is None:
            mask = action_mask(belief, self.domain)
        ok = {a for a, m in zip(self.actions, mask) if m}
        method = method_summary(belief, self.domain)
        feats = belief.get("features") or {}
        offered = bool(feats.get("lastInformedVenue"))
        requested = [s for s, p in belief["beliefs"].get("requested", {}).items() if p > 0.5]
        if method == "finished" and "bye" in ok:
            return "bye"
        if method == "byalternatives" and "inform_alternatives" in ok:
            return "inform_alternatives"
        if offered and requested and "inform_byname" in ok:
            return "inform_byname"
        accepted = {s: (v, p) for s, v, p in accepted_constraints(belief, self.domain)}
        for s in self._slots:
            if s in accepted and accepted[s][1] < self.confirm_threshold and f"confirm_{s}" in ok:
                return f"confirm_{s}"
        if "inform" in ok and not self._offer_still_valid(feats, accepted):
            return "inform"
        for s in self._slots:
            if s not in accepted:
                return f"request_{s}"
        if offered:  # nothing asked: after thanks ask for more, else offer again
            order = (
                ("reqmore", "inform", "inform_byname")
                if thanks_or_ack(belief, self.domain)
                else ("inform", "inform_byname", "reqmore")
            )
            for a in order:
                if a in ok:
                    return a
        if "inform" in ok:
            return "inform"
        return f"request_{self._slots[0]}"

    def _offer_still_valid(self, feats: dict, accepted: dict) -> bool:
        """Was a venue offered that still satisfies the accepted constraints?"""
        name = feats.get("lastInformedVenue") or ""
        i = self.domain.venue_index(name)
        if i is None:
            return False
        v = self.domain.venues[i]
        return all(val == "dontcare" or v.get(s) == val for s, (val, _) in accepted.items())

    def act(self, belief: dict) -> Response:
        summary = self.summary_action(belief)
        act = master_act(summary, belief, self.domain)
        prompt = self.nlg.generate(act) if self.nlg is not None else None
        return Response(act=str(act), prompt=prompt, summary_action=summary)

    def respond_batch(self, contexts: Any, indices: Sequence[int]) -> list[Response | Exception]:
        """:meth:`act` on contexts ``indices`` of a :class:`behavsim.ContextSet` at once (the
        batched path of :meth:`behavsim.Adapter.respond_batch`): the masks, master acts and prompts
        come from the set's shared :func:`~policies.simulation.batch.context_batch` (a context
        whose mask it could not make is answered by :meth:`act`); the same answers as
        :meth:`act`, an exception in the place of a context it raises on."""
        batch = context_batch(contexts, self.domain)
        rows = index_array(indices)
        masks, ok = batch.masks(rows)
        index = {a: k for k, a in enumerate(self.actions)}
        answered: dict[int, Response | Exception] = {}  # by the per-context path
        choice = np.zeros(len(rows), dtype=np.intp)
        for j, i in enumerate(rows.tolist()):
            try:
                if ok[j]:
                    choice[j] = index[self.summary_action(batch.belief(i), masks[j])]
                else:
                    answered[j] = self.act(batch.belief(i))
            except Exception as exc:
                answered[j] = exc
        seed = None if self.nlg is None else self.nlg.nlg_seed
        if not answered:
            return batch.responses(rows, choice, seed, parsed=False)
        chosen = [j for j in range(len(rows)) if j not in answered]
        out: list[Response | Exception] = [answered.get(j) for j in range(len(rows))]  # type: ignore[misc]
        for j, r in zip(chosen, batch.responses(rows[chosen], choice[chosen], seed, parsed=False)):
            out[j] = r
        return out


def handcrafted_kind(spec: PolicySpec, *, domain: Any = None, **_: Any) -> Adapter:
    """``handcrafted[:nlg_seed=N]``: the built-in rule-based policy (``nlg_seed=none``: no prompts)."""
    spec.check_options(("nlg_seed",))
    if spec.target:
        raise ConfigError(
            f"policy spec {spec.text!r}: handcrafted takes no argument, only options (handcrafted:nlg_seed=N)"
        )
    nlg_seed = spec.int_option("nlg_seed", 0)
    pol = HandcraftedPolicy(option_domain(domain), nlg_seed=nlg_seed)
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
