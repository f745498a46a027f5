"""GP-SARSA bound to a domain: :class:`GPSarsaPolicy` turns a belief state into the summary belief
vector (``policies.simulation.features.belief_vector``), masks the summary actions
(``policies.simulation.actions.action_mask``), asks the learner (:class:`policies.gp.sarsa.GPSarsa`)
and maps the chosen summary action to a master act. It obeys the project's policy protocol
(``name``, ``act(belief) -> Response``, and ``respond_batch`` for the batched path)."""

from __future__ import annotations

import os.path
from collections.abc import Sequence
from typing import Any

import numpy as np

from behavsim.policy import Response
from policies.gp.sarsa import DEFAULT_HYPERPARAMETERS, GPSarsa
from policies.simulation.actions import action_mask, summary_actions, to_master_act
from policies.simulation.batch import context_batch, index_array, one_blas_thread
from policies.simulation.domain import Domain, resolve_domain, shipped_domain
from policies.simulation.features import belief_vector, vector_length
from policies.simulation.nlg import TemplateNLG

__all__ = ["GPSarsaPolicy"]


class GPSarsaPolicy:
    """GP-SARSA dialogue policy over PyDial's summary actions (policy protocol of ``behavsim.policy``).

    ``act(belief)`` builds the summary belief vector, masks the summary actions and returns a
    :class:`~behavsim.policy.Response` with the master act, a template prompt (``nlg_seed=None``:
    no prompt) and the summary action. With ``learning=False`` (the default) the choice is the
    largest posterior mean among the allowed actions — deterministic, ties to the lowest action
    index; with ``learning=True`` it samples Q values (exploration, uses the learner's generator).
    ``eval_scale > 0`` (with ``learning=False``) evaluates as PyDial's ``pydial.py test`` and its
    between-batch tests do (``[gpsarsa] scale = 1``): ``Q ~ N(mean, (eval_scale·std)²)`` sampled
    from a generator of its own seeded by ``eval_seed`` (the learner's is not touched); the
    default 0 is greedy, which responses for comparisons need.
    Any belief state is accepted; missing entries count as 0 (see ``policies.simulation.features``).
    """

    def __init__(
        self,
        domain: Any = None,
        *,
        learner: GPSarsa | None = None,
        seed: int | np.random.Generator | None = 0,
        learning: bool = False,
        name: str = "gp-sarsa",
        nlg_seed: int | None = 0,
        eval_scale: float = 0.0,
        eval_seed: int | np.random.Generator | None = 0,
        **hyperparameters: float,
    ) -> None:
        self.domain = resolve_domain(domain)
        self.actions: tuple[str, ...] = tuple(summary_actions(self.domain))
        self.dim = vector_length(self.domain)
        if learner is None:
            params: dict[str, Any] = {**DEFAULT_HYPERPARAMETERS, **hyperparameters}
            learner = GPSarsa(len(self.actions), self.dim, seed=seed, **params)
        elif hyperparameters:
            raise TypeError("GPSarsaPolicy: give hyper-parameters or a learner, not both")
        if (learner.n_actions, learner.dim) != (len(self.actions), self.dim):
            raise ValueError(
                f"learner: expected {len(self.actions)} actions and belief vectors of length "
                f"{self.dim} for domain {self.domain.name!r}, got {learner.n_actions} and {learner.dim}"
            )
        self.learner = learner
        self.learning = bool(learning)
        self.name = name
        self.nlg_seed = nlg_seed
        self._nlg: Any = None
        eval_scale = float(eval_scale)
        if not np.isfinite(eval_scale):
            raise ValueError(f"eval_scale: expected a finite number (<= 0: greedy), got {eval_scale!r}")
        self.eval_scale = eval_scale
        self._eval_rng = np.random.default_rng(eval_seed)

    # -------------------------------------------------------------- protocol
    def decide(self, belief: dict, mask: Any = None) -> tuple[int, np.ndarray]:
        """``(summary action index, belief vector)``; ``mask`` defaults to ``action_mask``."""
        vec = belief_vector(belief, self.domain)
        if mask is None:
            mask = action_mask(belief, self.domain)
        if not self.learning and self.eval_scale > 0.0:
            return self.learner.select(vec, mask, explore=True, scale=self.eval_scale, rng=self._eval_rng), vec
        return self.learner.select(vec, mask, explore=self.learning), vec

    def summary_action(self, belief: dict) -> str:
        return self.actions[self.decide(belief)[0]]

    def act(self, belief: dict):
        summary = self.summary_action(belief)
        act = to_master_act(summary, belief, self.domain)
        prompt = None
        if self.nlg_seed is not None:
            if self._nlg is None:
                self._nlg = TemplateNLG(self.nlg_seed)
            prompt = self._nlg.generate(act)
        return Response(act=act, prompt=prompt, summary_action=summary)

    def respond_batch(self, contexts: Any, indices: Sequence[int]) -> list[Response | Exception] | None:
        """:meth:`act` on contexts ``indices`` of a :class:`behavsim.ContextSet` at once (the
        batched path of :meth:`behavsim.Adapter.respond_batch`): the vectors, masks, master acts
        and prompts come from the set's shared :func:`~policies.simulation.batch.context_batch`,
        the choices from :meth:`GPSarsa.greedy_many`; a choice it is not certain of, and a context
        whose belief the shared work could not read, are answered by the per-context path. The
        same answers as :meth:`act`, an exception in the place of a context it raises on;
        ``None`` (answer one at a time) while learning or sampling (``eval_scale > 0``), whose
        random draws follow the contexts one by one."""
        if self.learning or self.eval_scale > 0.0:
            return None
        batch = context_batch(contexts, self.domain)
        rows = index_array(indices)
        vec, mask, ok = batch.vectors(rows)
        with one_blas_thread():
            if ok.all():
                choice, certain = self.learner.greedy_many(vec, mask)
            else:
                choice, certain = np.zeros(len(rows), dtype=np.intp), ok.copy()
                if ok.any():
                    choice[ok], certain[ok] = self.learner.greedy_many(vec[ok], mask[ok])
        answered: dict[int, Response | Exception] = {}  # by the per-context path
        for j in np.flatnonzero(~certain).tolist():
            try:
                if ok[j]:  # the vector and mask are the per-context path's: decide as it does
                    choice[j] = self.learner.select(vec[j], mask[j], explore=False)
                else:
                    answered[j] = self.act(batch.belief(int(rows[j])))
            except Exception as exc:
                answered[j] = exc
        if not answered:
            return batch.responses(rows, choice, self.nlg_seed, parsed=True)
        chosen = [j for j in range(len(rows)) if j not in answered]
        out: list[Response | Exception] = [answered.get(j) for j in range(len(rows))]  # type: ignore[misc]
        for j, r in zip(chosen, batch.responses(rows[chosen], choice[chosen], self.nlg_seed, parsed=True)):
            out[j] = r
        return out

    # -------------------------------------------------------------- metadata
    def _domain_rules(self) -> dict[str, str]:
        """``{"domain_rules": FILE}``: what :meth:`from_checkpoint_meta` finds a shipped domain by."""
        return {"domain_rules": os.path.basename(str(self.domain.source))}

    def describe(self) -> dict[str, Any]:
        """JSON-able description stored in checkpoints."""
        return {
            "name": self.name,
            "domain": self.domain.name,
            **self._domain_rules(),
            "summary_actions": list(self.actions),
            "dim": self.dim,
            "kernel": "polysort-dot*delta",
            "nlg_seed": self.nlg_seed,
        }

    @classmethod
    def from_checkpoint_meta(
        cls, learner: GPSarsa, meta: dict[str, Any], *, domain: Any = None, learning: bool = False
    ) -> "GPSarsaPolicy":
        pol = meta["policy"]
        if domain is None and pol.get("domain_rules"):  # the shipped domain it names
            domain = shipped_domain(str(pol["domain_rules"]))
            if domain is None:
                raise ValueError(f"the checkpoint is for the domain of {pol['domain_rules']!r}; give that domain")
        elif domain is None:  # checkpoints that name no rules file predate the CamRestaurants default
            domain = Domain.builtin()
        obj = cls(domain, learner=learner, learning=learning, name=str(pol["name"]), nlg_seed=pol.get("nlg_seed", 0))
        if list(pol["summary_actions"]) != list(obj.actions):
            raise ValueError(
                f"the checkpoint's summary actions {pol['summary_actions']} differ from the "
                f"domain's {list(obj.actions)}"
            )
        if pol.get("domain") != obj.domain.name:
            raise ValueError(f"the checkpoint is for domain {pol.get('domain')!r}, not {obj.domain.name!r}")
        return obj

    def __repr__(self) -> str:
        return (
            f"GPSarsaPolicy(name={self.name!r}, dictionary={self.learner.dictionary_size}, "
            f"learning={self.learning}" + (f", eval_scale={self.eval_scale:g})" if self.eval_scale > 0 else ")")
        )
