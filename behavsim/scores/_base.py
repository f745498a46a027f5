"""The score protocol: a small class with frozen metadata, a signature and a pairwise core."""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import metadata
from typing import Any, ClassVar, Sequence

import numpy as np

__all__ = ["ScoreInfo", "Score", "SemanticScore", "TextScore", "behavsim_version"]


def behavsim_version() -> str:
    try:
        return metadata.version("behavsim")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


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
    """Base class. Subclasses set ``info`` and implement ``_unique_pairs``.

    ``pairwise(a, b)`` gives one value per aligned element: ``a[i]`` against ``b[i]``. Missing
    elements (``None``) give NaN. ``score(a, b)`` gives the value of a single pair.
    """

    info: ClassVar[ScoreInfo]

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
    """A score of two dialogue acts (strings or :class:`~behavsim.DialogueAct`)."""


class TextScore(Score):
    """A score of two prompts. Missing prompt -> NaN; identical -> 1.0; empty vs non-empty -> 0.0."""

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
