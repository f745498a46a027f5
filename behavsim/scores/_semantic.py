"""The four semantic scores, on dialogue acts: TMR, DMR, CER, CMR.

Functional forms (``total_match``, ``act_match``, ``concept_error``, ``symmetric_concept_error``,
``concept_match``) and score classes share the same core. The classes compute each distinct
(act, act') pair once.

**Act sets** (``inform(area=south)|request(food)``, :func:`behavsim.parse_acts`) are scored as
wholes, by the same formulas over the set's parts; a set of one act is that act, so every single
act scores exactly as before:

* TMR: 1 if the two sets hold the same canonical acts;
* DMR: 1 if the two sets hold the same act *types* (as sets: ``inform(a=1)|inform(name=none)``
  and ``inform(b=2)`` both inform);
* CER: δ over the type sets, and CE on the *item sequences* of the sets — each act's
  ``[s1, v1, ...]`` concatenated in the set's canonical order (acts sorted by type, then items);
* CMR: δ over the type sets, concepts of a set = the union of its acts' concepts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._acts import ActsLike, DialogueAct, parse_acts
from ._base import ScoreInfo, SemanticScore, intern, unique_pairs

__all__ = [
    "total_match",
    "act_match",
    "concept_error",
    "symmetric_concept_error",
    "concept_match",
    "TMR",
    "DMR",
    "CER",
    "CMR",
]


def _levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Unit-cost edit distance between two item sequences, bit-parallel (Hyyrö 2003, after Myers
    1999): one column of the DP matrix is two bit vectors (Python integers) of len(shorter) bits,
    so the time is O(len(longer) × len(shorter) / word size) — linear-ish for long acts."""
    if len(a) < len(b):
        a, b = b, a
    m = len(b)
    if m == 0:
        return len(a)
    full = (1 << m) - 1
    peq: dict[str, int] = {}
    for i, x in enumerate(b):
        peq[x] = peq.get(x, 0) | (1 << i)
    pv, mv, score, high = full, 0, m, 1 << (m - 1)
    for y in a:
        eq = peq.get(y, 0)
        xv = eq | mv
        xh = ((((eq & pv) + pv) & full) ^ pv) | eq
        ph = mv | (~(xh | pv) & full)
        mh = pv & xh
        if ph & high:
            score += 1
        elif mh & high:
            score -= 1
        ph = ((ph << 1) | 1) & full
        mh = (mh << 1) & full
        pv = mh | (~(xv | ph) & full)
        mv = ph & xv
    return score


def _types(acts: tuple[DialogueAct, ...]) -> frozenset[str]:
    return frozenset(a.act_type for a in acts)


def _item_sequence(acts: tuple[DialogueAct, ...]) -> list[str]:
    if len(acts) == 1:
        return acts[0].item_sequence()
    return [x for a in acts for x in a.item_sequence()]


def _concepts(acts: tuple[DialogueAct, ...]) -> frozenset:
    if len(acts) == 1:
        return acts[0].concepts()
    return frozenset().union(*(a.concepts() for a in acts))


def total_match(a: ActsLike, b: ActsLike) -> float:
    """1.0 if the canonical acts (act sets) are equal, else 0.0."""
    return float(parse_acts(a) == parse_acts(b))


def act_match(a: ActsLike, b: ActsLike) -> float:
    """1.0 if the dialogue-act types (of an act set: the set of its types) are equal, else 0.0."""
    return float(_types(parse_acts(a)) == _types(parse_acts(b)))


def concept_error(h: ActsLike, r: ActsLike) -> float:
    """CE(h, r) = max(0, (|r| - dist(h, r)) / |r|) on the item sequences ``[s1, v1, ...]`` (of an
    act set: its acts' sequences concatenated in canonical order).

    When ``r`` has no items: 1.0 if ``h`` has none, else 0.0. The clip at 0 (not in the paper's
    formula, which goes negative when ``h`` is much longer than ``r``) keeps it a similarity.
    """
    hs = _item_sequence(parse_acts(h))
    rs = _item_sequence(parse_acts(r))
    if not rs:
        return 1.0 if not hs else 0.0
    return max(0.0, (len(rs) - _levenshtein(hs, rs)) / len(rs))


def symmetric_concept_error(a: ActsLike, b: ActsLike) -> float:
    """The per-context CER value: δ(t, t') · (CE(a, a') + CE(a', a)) / 2 (t: the set of act types)."""
    pa, pb = parse_acts(a), parse_acts(b)
    if _types(pa) != _types(pb):
        return 0.0
    return (concept_error(pa, pb) + concept_error(pb, pa)) / 2.0


def concept_match(a: ActsLike, b: ActsLike) -> float:
    """CM = (δ(t, t') + |M|) / (1 + |U|) over slots and (slot, value) pairs as concepts (of an act
    set: the union of its acts' concepts; t: the set of act types)."""
    pa, pb = parse_acts(a), parse_acts(b)
    ca, cb = _concepts(pa), _concepts(pb)
    return (float(_types(pa) == _types(pb)) + len(ca & cb)) / (1 + len(ca | cb))


class _ActPairScore(SemanticScore):
    _fn = staticmethod(total_match)

    def _pairwise(self, a: list, b: list) -> np.ndarray:
        out = np.full(len(a), np.nan)
        valid = [i for i, (x, y) in enumerate(zip(a, b)) if x is not None and y is not None]
        if not valid:
            return out
        index: dict[tuple[DialogueAct, ...], int] = {}
        codes_a = intern((parse_acts(a[i]) for i in valid), index)
        codes_b = intern((parse_acts(b[i]) for i in valid), index)
        acts = list(index)
        first, second, where = unique_pairs(codes_a, codes_b, symmetric=self.info.symmetric)
        fn = type(self)._fn
        values = np.array([fn(acts[i], acts[j]) for i, j in zip(first.tolist(), second.tolist())])
        out[valid] = values[where]
        return out


class TMR(_ActPairScore):
    info = ScoreInfo(
        "TMR", "total match rate: 1 if the canonical acts are equal", "semantic", title="total match rate (TMR)"
    )
    _fn = staticmethod(total_match)

    def _signature_parts(self) -> list[str]:
        return ["canon:sorted-items"]


class DMR(_ActPairScore):
    info = ScoreInfo(
        "DMR",
        "dialogue-act match rate: 1 if the act types are equal",
        "semantic",
        title="dialogue act match rate (DMR)",
    )
    _fn = staticmethod(act_match)


class CER(_ActPairScore):
    info = ScoreInfo(
        "CER",
        "symmetric concept error: δ(t,t')·(CE(a,a')+CE(a',a))/2, CE clipped at 0",
        "semantic",
        title="concept error rate similarity (CER)",
    )
    _fn = staticmethod(symmetric_concept_error)

    def _signature_parts(self) -> list[str]:
        return ["dist:levenshtein-items", "clip:0"]


class CMR(_ActPairScore):
    info = ScoreInfo(
        "CMR",
        "concept match: (δ(t,t')+|shared concepts|)/(1+|all concepts|)",
        "semantic",
        title="concept match rate (CMR)",
    )
    _fn = staticmethod(concept_match)

    def _signature_parts(self) -> list[str]:
        return ["concepts:slots+pairs"]
