"""PyDial's GP-SARSA summary-state vector of a belief state.

``belief_vector(belief, domain)`` returns a float64 vector with, in this order:

1. per informable slot (rules order, ``name`` included): ``[P(**NONE**)]`` followed by the
   probabilities of its values plus ``dontcare`` (0 when absent) **sorted in descending
   order** — ``len(values) + 2`` numbers;
2. ``discourseAct`` (``domain.discourse_act`` order: 7 numbers), ``method`` (6), unsorted;
3. per requestable slot ``[p, 1 − p]``;
4. ``offerHappened``, ``lastActionInformNone`` and the 25 ``inform_info`` flags, each as
   ``[x, 1 − x]``.

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

from .domain import NONE_VALUE, Domain

__all__ = ["belief_vector", "vector_length", "vector_layout"]


@lru_cache(maxsize=16)
def vector_layout(domain: Domain) -> tuple[tuple[str, int, int], ...]:
    """``(block name, start, length)`` for every block of the vector."""
    out = []
    pos = 0
    for slot, values in domain.informable.items():
        n = len(values) + 2
        out.append((f"slot:{slot}", pos, n))
        pos += n
    for name, n in (("discourseAct", len(domain.discourse_act)), ("method", len(domain.method)),
                    ("requested", 2 * len(domain.requestable)), ("offerHappened", 2),
                    ("lastActionInformNone", 2), ("inform_info", 50)):
        out.append((name, pos, n))
        pos += n
    return tuple(out)


def vector_length(domain: Domain) -> int:
    name, start, n = vector_layout(domain)[-1]
    return start + n


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
    flags = [bool(feats.get("offerHappened", False)), bool(feats.get("lastActionInformNone", False))]
    info = feats.get("inform_info") or ()
    flags += [bool(x) for x in info][:25]
    flags += [False] * (27 - len(flags))
    for f in flags:
        out.append(1.0 if f else 0.0)
        out.append(0.0 if f else 1.0)
    return np.asarray(out, dtype=np.float64)
