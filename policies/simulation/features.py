"""PyDial's GP-SARSA summary-state vector of a belief state.

``belief_vector(belief, domain)`` returns a float64 vector with, in this order:

1. per informable slot (rules order, ``name`` included): ``[P(**NONE**)]`` followed by the
   probabilities of its values plus ``dontcare`` (0 when absent) **sorted in descending
   order** — ``len(values) + 2`` numbers;
2. ``discourseAct`` (``domain.discourse_act`` order: 7 numbers), ``method`` (6), unsorted;
3. per requestable slot ``[p, 1 − p]``;
4. ``offerHappened``, ``lastActionInformNone`` and the 25 ``inform_info`` flags, each as
   ``[x, 1 − x]``.

``lastActionInformNone`` is the flag PyDial's ``GPState.extractSimpleBelief`` computes under
that name: ``len(informedVenueSinceNone) > 0`` — a venue has been offered since the last
``inform(name=none)`` — *not* the tracker feature of the same name (was the last system act an
``inform(name=none)``?). The invented example domain (``Domain.legacy_state``) keeps behavsim
0.1's flag, the tracker feature, so its results stay as they were until the defaults switch.
The ``inform_info`` flags walk the accepted constraints by belief, ties in the (sorted)
system-requestable order, as PyDial does.

PyDial concatenates the same blocks in another order (``slowToFastBelief`` sorts its keys:
``goal_<slot>`` for the informable slots other than ``name``, ``goal_discourseAct``,
``goal_method``, ``hist_<requestable>``, ``hist_info_<i>`` in string order, then
``hist_lastActionInformNone``, ``hist_offerHappened`` and ``name``). The polysort kernel is a
dot product, so the order changes nothing but the rounding of the sum; :func:`pydial_order`
gives the permutation, ``belief_vector(b, d)[pydial_order(d)]`` is PyDial's ``beliefStateVec``.

Length: ``sum(len(values) + 2) + |discourseAct| + |method| + 2·|requestable| + 54``:
**220** for the built-in domain (area 7 + food 19 + name 104 + pricerange 5, 7, 6, 18, 54) and
305 for PyDial's CamRestaurants, the figure PyDial's GP policy uses. Missing entries (sparse
distributions, absent ``features``) count as 0; a distribution without ``**NONE**`` gets
1 − Σ. The vector depends only on the belief's content, not on the order of the keys in its
dicts. The kernel PyDial uses on it is the dot product (``polysort``).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from policies.simulation.domain import NONE_VALUE, Domain

__all__ = ["belief_vector", "vector_length", "vector_layout", "pydial_order", "informed_since_none_flag"]


@lru_cache(maxsize=16)
def vector_layout(domain: Domain) -> tuple[tuple[str, int, int], ...]:
    """``(block name, start, length)`` for every block of the vector."""
    out = []
    pos = 0
    for slot, values in domain.informable.items():
        n = len(values) + 2
        out.append((f"slot:{slot}", pos, n))
        pos += n
    for name, n in (
        ("discourseAct", len(domain.discourse_act)),
        ("method", len(domain.method)),
        ("requested", 2 * len(domain.requestable)),
        ("offerHappened", 2),
        ("lastActionInformNone", 2),
        ("inform_info", 50),
    ):
        out.append((name, pos, n))
        pos += n
    return tuple(out)


def vector_length(domain: Domain) -> int:
    name, start, n = vector_layout(domain)[-1]
    return start + n


@lru_cache(maxsize=16)
def _pydial_order(domain: Domain) -> tuple[int, ...]:
    blocks: dict[str, list[int]] = {}
    for name, start, n in vector_layout(domain):
        if name.startswith("slot:"):
            slot = name[5:]
            blocks["name" if slot == "name" else f"goal_{slot}"] = list(range(start, start + n))
        elif name in ("discourseAct", "method"):
            blocks[f"goal_{name}"] = list(range(start, start + n))
        elif name == "requested":
            for i, r in enumerate(domain.requestable):
                blocks[f"hist_{r}"] = [start + 2 * i, start + 2 * i + 1]
        elif name == "inform_info":
            for i in range(25):
                blocks[f"hist_info_{i}"] = [start + 2 * i, start + 2 * i + 1]
        else:
            blocks[f"hist_{name}"] = [start, start + 1]
    return tuple(i for key in sorted(blocks) for i in blocks[key])


def pydial_order(domain: Domain) -> np.ndarray:
    """Indices that put :func:`belief_vector`'s entries in PyDial's order (see module doc)."""
    return np.asarray(_pydial_order(domain), dtype=np.intp)


def informed_since_none_flag(features: dict, domain: Domain) -> bool:
    """The GP state's ``lastActionInformNone`` (see module doc)."""
    if domain.legacy_state:
        return bool(features.get("lastActionInformNone", False))
    return len(features.get("informedVenueSinceNone") or ()) > 0


def belief_vector(belief: dict, domain: Domain) -> np.ndarray:
    """The summary-state vector (see module doc)."""
    beliefs = belief["beliefs"]
    feats = belief.get("features") or {}
    out: list[float] = []
    ext = out.extend
    for slot, values in domain.informable.items():
        d = beliefs.get(slot) or {}
        n = len(values) + 1
        if d and next(reversed(d)) == NONE_VALUE:  # the tracker's layout: **NONE** last
            rest = list(d.values())
            none = rest.pop()
        elif NONE_VALUE in d:
            none = d[NONE_VALUE]
            rest = [p for k, p in d.items() if k != NONE_VALUE]
        else:
            rest = list(d.values())
            none = 1.0 - math.fsum(rest)  # exact: the same whatever the key order
        rest.sort(reverse=True)
        out.append(none)
        if len(rest) >= n:
            ext(rest[:n])
        else:
            ext(rest)
            ext([0.0] * (n - len(rest)))
    da = beliefs.get("discourseAct") or {}
    ext([da.get(k, 0.0) for k in domain.discourse_act])
    me = beliefs.get("method") or {}
    ext([me.get(k, 0.0) for k in domain.method])
    req = beliefs.get("requested") or {}
    for r in domain.requestable:
        p = req.get(r, 0.0)
        out.append(p)
        out.append(1.0 - p)
    flags = [bool(feats.get("offerHappened", False)), informed_since_none_flag(feats, domain)]
    info = feats.get("inform_info") or ()
    flags += [bool(x) for x in info][:25]
    flags += [False] * (27 - len(flags))
    for f in flags:
        out.append(1.0 if f else 0.0)
        out.append(0.0 if f else 1.0)
    return np.asarray(out, dtype=np.float64)
