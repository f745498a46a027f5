"""A context set as the built-in policies read it, computed once for every policy that answers it.

Answering a context set policy by policy repeats work that depends only on the contexts: a
belief's summary vector and action mask are the same for every GP-SARSA checkpoint (and the mask
for the handcrafted policy), the master act of a summary action in a context is the same for every
policy that chooses it, and one generator seed says one act the same way wherever it appears.
:func:`context_batch` keeps that work for a context set (by fingerprint) on a domain, in this
process, so that every checkpoint of a run answering the set shares it:

* :meth:`ContextBatch.vectors`, :meth:`ContextBatch.masks` — the belief vectors
  (:func:`~policies.simulation.features.belief_vector`) and action masks
  (:func:`~policies.simulation.actions.action_mask`) of a block of contexts, each context's
  computed once;
* :meth:`ContextBatch.master_acts` — a summary action made into its master act once per
  (context, action), each distinct act kept once (an id);
* :meth:`ContextBatch.prompts` — the template generator's prompt of an act once per (seed, act).

Everything is computed by the very functions the per-context path calls, on the same canonical
copy of the belief, so the values are the same to the bit. A context whose vector or mask cannot be
made (a malformed belief) is marked (``ok`` false): a policy answers it by its per-context path,
which raises the same error there.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from behavsim import ContextSet, Response
from behavsim.io import canonical_copy
from policies.simulation.actions import DiaAct, action_mask, master_act, summary_actions
from policies.simulation.domain import Domain
from policies.simulation.features import belief_vector, vector_length
from policies.simulation.nlg import TemplateNLG

__all__ = ["ContextBatch", "context_batch", "index_array", "one_blas_thread"]

#: How many (context set, domain) batches a process keeps (the most recently used).
KEEP = 4

_TODO, _OK, _FAILED = 0, 1, 2


class ContextBatch:
    """The per-context work of the built-in policies on one context set and domain (see the
    module doc); made by :func:`context_batch`, filled block by block as policies ask."""

    def __init__(self, contexts: ContextSet, domain: Domain) -> None:
        self.contexts = contexts
        self.domain = domain
        self.actions: tuple[str, ...] = tuple(summary_actions(domain))
        n = len(contexts)
        self._vstate = np.zeros(n, dtype=np.int8)  # per context: _TODO, _OK or _FAILED
        self._canonical = np.zeros(n, dtype=np.int8)  # per context: _TODO, _OK (it is) or _FAILED
        self._mstate = np.zeros(n, dtype=np.int8)
        self._vec: np.ndarray | None = None  # made when a policy asks for vectors
        self._mask = np.zeros((n, len(self.actions)), dtype=bool)
        self._act_id = np.full((n, len(self.actions)), -1, dtype=np.int64)
        self._acts: list[DiaAct] = []
        self._texts: list[str] = []
        self._act_index: dict[str, int] = {}
        self._prompts: dict[tuple[int, bool], tuple[TemplateNLG, list[str | None]]] = {}

    def __len__(self) -> int:
        return len(self._vstate)

    def belief(self, i: int) -> Any:
        """Context ``i``'s belief as the per-context path is given it: a canonical copy (keys
        sorted), or the belief itself when it is in canonical form already (as a set read from a
        file is): the functions of the built-in policies only read it, so the answers are the
        same. Whether it is is found once per context; a copy is made each time (a set's beliefs
        may fill much of the memory)."""
        belief = self.contexts.beliefs[i]
        known = self._canonical[i]
        if known == _TODO:
            try:
                known = _OK if is_canonical(belief) else _FAILED
            except TypeError:  # keys that cannot be sorted: canonical_copy raises it, as the per-context path does
                known = _FAILED
            self._canonical[i] = known
        return belief if known == _OK else canonical_copy(belief)

    def vectors(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(vectors, masks, ok)`` of the contexts ``rows`` (an index array): the belief vectors
        (``len(rows) × dim``), the action masks (``len(rows) × actions``) and whether both could be
        made (a context that is not ok is answered by the per-context path)."""
        if self._vec is None:
            self._vec = np.zeros((len(self), vector_length(self.domain)))
        vstate, mstate = self._vstate, self._mstate
        for i in rows[vstate[rows] == _TODO].tolist():
            try:
                b = self.belief(i)
            except Exception:
                vstate[i] = mstate[i] = _FAILED
                continue
            vstate[i] = self._fill(self._vec, i, belief_vector, b)
            if mstate[i] == _TODO:
                mstate[i] = self._fill(self._mask, i, action_mask, b)
        ok = (vstate[rows] == _OK) & (mstate[rows] == _OK)
        at = _as_slice(rows)
        return self._vec[at], self._mask[at], ok

    def masks(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(masks, ok)`` of the contexts ``rows``: the action masks and whether they could be made."""
        mstate = self._mstate
        for i in rows[mstate[rows] == _TODO].tolist():
            try:
                b = self.belief(i)
            except Exception:
                mstate[i] = _FAILED
                continue
            mstate[i] = self._fill(self._mask, i, action_mask, b)
        return self._mask[_as_slice(rows)], mstate[rows] == _OK

    def _fill(self, out: np.ndarray, i: int, fn: Any, belief: Any) -> int:
        """``out[i] = fn(belief, domain)``: _OK, or _FAILED when it raises (the per-context path
        raises it again, in its place)."""
        try:
            out[i] = fn(belief, self.domain)
        except Exception:
            return _FAILED
        return _OK

    def master_acts(self, rows: Any, actions: Any) -> tuple[np.ndarray, dict[int, Exception]]:
        """The master act of summary action ``actions[j]`` (an index into :attr:`actions`) in
        context ``rows[j]``, for every ``j``, as an id (:meth:`act_text`, :meth:`act`): each
        (context, action) made once with :func:`~policies.simulation.actions.master_act`. Also
        ``{j: exception}`` for the acts that cannot be made (id -1; raised again each time)."""
        rows = np.asarray(rows, dtype=np.intp)
        actions = np.asarray(actions, dtype=np.intp)
        ids = self._act_id[rows, actions]
        failed: dict[int, Exception] = {}
        for j in np.flatnonzero(ids < 0).tolist():
            i, a = int(rows[j]), int(actions[j])
            k = int(self._act_id[i, a])
            if k < 0:
                try:
                    dia = master_act(self.actions[a], self.belief(i), self.domain)
                except Exception as exc:  # the per-context path raises it too
                    failed[j] = exc
                    continue
                text = str(dia)
                k = self._act_index.setdefault(text, len(self._acts))
                if k == len(self._acts):
                    self._acts.append(dia)
                    self._texts.append(text)
                self._act_id[i, a] = k
            ids[j] = k
        return ids, failed

    def act_text(self, k: int) -> str:
        """Master act ``k``'s string (:func:`~policies.simulation.actions.to_master_act`'s)."""
        return self._texts[k]

    def act(self, k: int) -> DiaAct:
        """Master act ``k`` as :func:`~policies.simulation.actions.master_act` made it."""
        return self._acts[k]

    def prompts(self, nlg_seed: int, ids: Sequence[int], *, parsed: bool) -> list[str | Exception]:
        """The template generator's prompts (seed ``nlg_seed``) of master acts ``ids``, each made
        once per seed: ``parsed`` — from the act's string, as a policy that hands the generator
        its act string does (GP-SARSA); otherwise from the act as made (the handcrafted policy).
        The two may word an act differently (the item order of a ``select``). A prompt that cannot
        be made gives its exception in its place."""
        key = (int(nlg_seed), parsed)
        entry = self._prompts.get(key)
        if entry is None:
            entry = self._prompts[key] = (TemplateNLG(nlg_seed), [])
        nlg, said = entry
        if len(said) < len(self._acts):
            said.extend([None] * (len(self._acts) - len(said)))
        out: list[str | Exception] = []
        for k in ids:
            text = said[k]
            if text is None:
                try:
                    text = said[k] = nlg.generate(self._texts[k] if parsed else self._acts[k])
                except Exception as exc:  # the per-context path raises it too
                    out.append(exc)
                    continue
            out.append(text)
        return out

    def responses(self, rows: Any, actions: Any, nlg_seed: int | None, *, parsed: bool) -> list[Response | Exception]:
        """The answers of a policy that chose summary action ``actions[j]`` in context ``rows[j]``:
        the master act (:meth:`master_acts`), its prompt with seed ``nlg_seed`` (``None``: no
        prompt; ``parsed`` as in :meth:`prompts`) and the summary action, as the policy's ``act``
        makes them; an exception in the place of an answer that cannot be made. Equal answers are
        one object."""
        actions = np.asarray(actions, dtype=np.intp)
        ids, failed = self.master_acts(rows, actions)
        A = len(self.actions)
        distinct, where = np.unique(ids * A + actions, return_inverse=True)
        made: list[Response | Exception | None] = []
        for code in distinct.tolist():
            k, a = divmod(code, A)
            if k < 0:  # an act that could not be made (its exception: below)
                made.append(None)
                continue
            prompt = None if nlg_seed is None else self.prompts(nlg_seed, [k], parsed=parsed)[0]
            if isinstance(prompt, Exception):
                made.append(prompt)
            else:
                made.append(Response(act=self._texts[k], prompt=prompt, summary_action=self.actions[a]))
        out = [made[w] for w in where.tolist()]
        for j, exc in failed.items():
            out[j] = exc
        return out


def index_array(indices: Any) -> np.ndarray:
    """Context indices (a sequence, a ``range`` or an array) as an index array."""
    if isinstance(indices, range):
        return np.arange(indices.start, indices.stop, indices.step, dtype=np.intp)
    return np.asarray(indices, dtype=np.intp)


def _as_slice(rows: np.ndarray) -> Any:
    """``rows`` as a slice when they are consecutive (a view instead of a copy)."""
    if len(rows) and np.array_equal(rows, np.arange(rows[0], rows[0] + len(rows))):
        return slice(int(rows[0]), int(rows[0]) + len(rows))
    return rows


_LEAVES = (str, float, int, bool, type(None))


def is_canonical(obj: Any) -> bool:
    """Whether ``obj`` (a JSON-like object) is already in the form :func:`behavsim.io.canonical_copy`
    gives: every mapping's keys in sorted order, lists (no tuples) — its copy would then equal it
    key for key, in the same order."""
    if isinstance(obj, dict):
        keys = list(obj)
        if keys != sorted(keys):
            return False
        return all(type(v) in _LEAVES or is_canonical(v) for v in obj.values())
    if isinstance(obj, list):
        return all(type(v) in _LEAVES or is_canonical(v) for v in obj)
    return not isinstance(obj, tuple)


_BATCHES: OrderedDict[tuple[str, int], ContextBatch] = OrderedDict()


def context_batch(contexts: ContextSet, domain: Domain) -> ContextBatch:
    """The :class:`ContextBatch` of ``contexts`` on ``domain`` in this process: the same object for
    every policy answering a set of the same content (its fingerprint) on the same domain; the
    last :data:`KEEP` are kept."""
    key = (contexts.fingerprint, id(domain))
    batch = _BATCHES.get(key)
    if batch is None or batch.domain is not domain or len(batch) != len(contexts):
        batch = _BATCHES[key] = ContextBatch(contexts, domain)
        while len(_BATCHES) > KEEP:
            _BATCHES.popitem(last=False)
    else:
        _BATCHES.move_to_end(key)
    return batch


_BLAS: Any = None


def one_blas_thread() -> Any:
    """A context in which numpy's BLAS runs on one thread: the products of a batch are small, and
    several threads per process (each of several worker processes) mostly wait for each other."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController  # as the trainer does: a dependency's dependency

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")
