"""The score protocol: a small class with frozen metadata, a signature and a pairwise core."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util import package_version

__all__ = ["LEVELS", "ScoreInfo", "Score", "SemanticScore", "TextScore", "behavsim_version", "intern", "unique_pairs"]


#: What a score compares: dialogue acts ("semantic") or prompts ("text").
LEVELS = ("semantic", "text")


def behavsim_version() -> str:
    """The installed behavsim version, ``"0+unknown"`` when running from a source tree."""
    return package_version("behavsim", "0+unknown")


def intern(values: Iterable[Hashable | None], index: dict[Any, int]) -> np.ndarray:
    """Integer codes of ``values``: the position of each value in ``index`` (new values are
    appended to it in order of first appearance); ``None`` gets -1."""
    out = []
    for v in values:
        if v is None:
            out.append(-1)
        else:
            out.append(index.setdefault(v, len(index)))
    return np.asarray(out, dtype=np.int64)


def unique_pairs(
    codes_a: np.ndarray, codes_b: np.ndarray, *, symmetric: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct pairs among aligned non-negative integer codes ``(codes_a[i], codes_b[i])``.

    Returns ``(first, second, inverse)``: the codes of each distinct pair, sorted by
    ``(first, second)``, and for each position the index of its pair, so that per-pair values
    ``v`` spread back to the positions as ``v[inverse]``. With ``symmetric`` the pairs (x, y) and
    (y, x) are one pair, stored as ``(min, max)``; otherwise each ordered pair is its own.
    """
    a = np.asarray(codes_a, dtype=np.int64).ravel()
    b = np.asarray(codes_b, dtype=np.int64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"unique_pairs: the two code arrays differ in length ({a.size} != {b.size})")
    if symmetric:
        a, b = np.minimum(a, b), np.maximum(a, b)
    base = int(max(a.max(), b.max())) + 1 if a.size else 1
    uniq, inverse = np.unique(a * base + b, return_inverse=True)
    return uniq // base, uniq % base, inverse.reshape(-1)


@dataclass(frozen=True)
class ScoreInfo:
    """Facts about a score that never change with its options."""

    name: str
    description: str
    level: str  # "semantic" (compares acts) or "text" (compares prompts)
    lower: float = 0.0
    upper: float = 1.0
    symmetric: bool = True
    higher_is_better: bool = True
    needs_model: bool = False
    title: str = ""  # the human label of plots and table headers (the name when empty)


class Score:
    """Base class. Subclasses set ``info`` and implement ``_pairwise``.

    ``pairwise(a, b)`` gives one value per aligned element: ``a[i]`` against ``b[i]``. Missing
    elements (``None``) give NaN. ``score(a, b)`` gives the value of a single pair.
    """

    #: Set on each class; an instance may refine it for its options (a rescaled BERTScore has
    #: no lower bound).
    info: ScoreInfo

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def signature(self) -> str:
        return "|".join([self.name, *self._signature_parts(), f"behavsim:{behavsim_version()}"])

    def _signature_parts(self) -> list[str]:
        return []

    def options(self) -> dict[str, Any]:
        """The options this score was created with (JSON-serialisable)."""
        return {}

    @classmethod
    def model_summary(cls, **options: Any) -> str | None:
        """Which model the score would use when created with ``options``, in a few words and
        without loading it (``behavsim scores list``); None for a score without a model."""
        return "a model (the score does not say which)" if cls.info.needs_model else None

    def pairwise(self, a: Sequence, b: Sequence) -> np.ndarray:
        if len(a) != len(b):
            raise ValueError(f"{self.name}: the two sequences differ in length ({len(a)} != {len(b)})")
        return self._pairwise(list(a), list(b))

    def _pairwise(self, a: list, b: list) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def score(self, x, y) -> float:
        return float(self.pairwise([x], [y])[0])

    __call__ = score

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.signature}>"


class SemanticScore(Score):
    """A score of two dialogue acts or act sets (strings, :class:`~behavsim.DialogueAct` or tuples of them)."""


class TextScore(Score):
    """A score of two prompts. Missing prompt -> NaN; identical -> 1.0; empty vs non-empty -> 0.0."""

    def _distinct_pairs(self, a: list[str], b: list[str]) -> tuple[list[tuple[str, str]], np.ndarray]:
        """The distinct prompt pairs among ``zip(a, b)`` and, per position, the index of its pair.

        Symmetric scores see each unordered pair once, its two prompts in string order.
        """
        texts = sorted(set(a) | set(b))
        index = {t: i for i, t in enumerate(texts)}
        first, second, where = unique_pairs(intern(a, index), intern(b, index), symmetric=self.info.symmetric)
        return [(texts[i], texts[j]) for i, j in zip(first.tolist(), second.tolist())], where

    def _pairwise(self, a: list, b: list) -> np.ndarray:
        for seq in (a, b):
            for x in seq:
                if x is not None and not isinstance(x, str):
                    raise TypeError(f"{self.name}: prompts must be strings or None, got {type(x).__name__}")
        out = np.full(len(a), np.nan)
        todo = []
        for i, (x, y) in enumerate(zip(a, b)):
            if x is None or y is None or (isinstance(x, float) and math.isnan(x)):
                continue
            if x == y:
                out[i] = 1.0
            elif not x.strip() or not y.strip():
                out[i] = 1.0 if not x.strip() and not y.strip() else 0.0
            else:
                todo.append(i)
        if todo:
            out[todo] = self._text_pairs([a[i] for i in todo], [b[i] for i in todo])
        return out

    def _text_pairs(self, a: list[str], b: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError
