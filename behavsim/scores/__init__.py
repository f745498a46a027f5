"""The eight similarity scores (four on dialogue acts, four on prompts) and their registry.

>>> from behavsim.scores import get_score, list_scores
>>> list_scores()
['TMR', 'DMR', 'CER', 'CMR', 'USE_cos', 'USE_ang', 'BLEU4', 'BERTScore']
>>> get_score("CMR").score("request(food)", "request(pricerange)")
0.2
"""

from __future__ import annotations

from collections.abc import Callable

from .._errors import UnknownScore
from .._registry import Registry
from ._base import Score, ScoreInfo, SemanticScore, TextScore
from ._semantic import CER, CMR, DMR, TMR, act_match, concept_error, concept_match, symmetric_concept_error, total_match
from ._text import BLEU4, BERTScore, USEAng, USECos, sentence_bleu, symmetric_bleu

__all__ = [
    "Score",
    "ScoreInfo",
    "SemanticScore",
    "TextScore",
    "TMR",
    "DMR",
    "CER",
    "CMR",
    "USECos",
    "USEAng",
    "BLEU4",
    "BERTScore",
    "total_match",
    "act_match",
    "concept_error",
    "symmetric_concept_error",
    "concept_match",
    "sentence_bleu",
    "symmetric_bleu",
    "scores",
    "get_score",
    "score_info",
    "list_scores",
    "SEMANTIC_SCORES",
    "TEXT_SCORES",
    "ALL_SCORES",
]

scores: Registry[Callable[..., Score]] = Registry("score", UnknownScore)
for _cls in (TMR, DMR, CER, CMR, USECos, USEAng, BLEU4, BERTScore):
    scores.register(_cls.info.name, _cls)


def _score_class(name: str) -> type[Score]:
    factory = scores.get(name)
    if not (isinstance(factory, type) and issubclass(factory, Score)):
        raise TypeError(f"score {name!r} is registered with {factory!r}, not a Score class")
    return factory


def get_score(name: str | Score, **options) -> Score:
    """A score object by registered name (case-insensitive), or the object passed in."""
    if isinstance(name, Score):
        return name
    return scores.create(name, **options)


def score_info(name: str | Score) -> ScoreInfo:
    """The frozen metadata of a score (name, title, level, bounds, symmetry, model needs) by name
    (case-insensitive) or object; unknown names raise :class:`~behavsim.UnknownScore`."""
    if isinstance(name, Score):
        return name.info
    return _score_class(name).info


def list_scores() -> list[str]:
    """The registered score names, in registration order (the paper's order)."""
    return scores.names()


#: The registered names by level, in registration order (read from each score's ``info``).
SEMANTIC_SCORES = tuple(n for n in list_scores() if score_info(n).level == "semantic")
TEXT_SCORES = tuple(n for n in list_scores() if score_info(n).level == "text")
ALL_SCORES = SEMANTIC_SCORES + TEXT_SCORES
