"""The similarity scores and their registry.

The paper's eight (four on dialogue acts, four on prompts) are the default of every comparison;
STSScore (a model trained on STS-B's human judgements, ``behavsim scores train-sts``) and
any score a package registers through the entry-point group ``behavsim.scores`` are computed when
named. A score is a :class:`Score` subclass (the protocol: docs/scores.md).

>>> from behavsim.scores import DEFAULT_SCORES, get_score
>>> DEFAULT_SCORES
('TMR', 'DMR', 'CER', 'CMR', 'USE_cos', 'USE_ang', 'BLEU4', 'BERTScore')
>>> get_score("CMR").score("request(food)", "request(pricerange)")
0.2
"""

from __future__ import annotations

from collections.abc import Callable

from .._errors import ConfigError, UnknownScore
from .._registry import Registry
from ._base import LEVELS, Score, ScoreInfo, SemanticScore, TextScore
from ._semantic import CER, CMR, DMR, TMR, act_match, concept_error, concept_match, symmetric_concept_error, total_match
from ._sts import STSScore, sts_model_dir
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
    "STSScore",
    "sts_model_dir",
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
    "ENTRY_POINT_GROUP",
    "SEMANTIC_SCORES",
    "TEXT_SCORES",
    "DEFAULT_SCORES",
]

#: The entry-point group through which other packages register scores (``NAME = module:ScoreClass``).
ENTRY_POINT_GROUP = "behavsim.scores"

#: Every score by name: the built-in ones, then those of the entry points (read at the first look-up).
scores: Registry[Callable[..., Score]] = Registry("score", UnknownScore, entry_points=ENTRY_POINT_GROUP)
for _cls in (TMR, DMR, CER, CMR, USECos, USEAng, BLEU4, BERTScore, STSScore):
    scores.register(_cls.info.name, _cls)


def _score_class(name: str) -> type[Score]:
    factory = scores.get(name)
    if not (isinstance(factory, type) and issubclass(factory, Score)):
        where = scores.source(name)
        raise ConfigError(
            f"score {name!r} is registered{f' by the entry point {where}' if where else ''} with {factory!r}, "
            "not a Score class (see docs/scores.md)"
        )
    info = getattr(factory, "info", None)
    if not isinstance(info, ScoreInfo) or info.level not in LEVELS or info.name.lower() != name.lower():
        raise ConfigError(
            f"score {name!r} ({factory.__module__}.{factory.__qualname__}) needs a class attribute info = "
            f"ScoreInfo(name={name!r}, ..., level='semantic' or 'text'), got {info!r} (see docs/scores.md)"
        )
    return factory


def get_score(name: str | Score, **options) -> Score:
    """A score object by registered name (case-insensitive), or the object passed in."""
    if isinstance(name, Score):
        return name
    return _score_class(name)(**options)


def score_info(name: str | Score) -> ScoreInfo:
    """The frozen metadata of a score (name, title, level, bounds, symmetry, model needs) by name
    (case-insensitive) or object; unknown names raise :class:`~behavsim.UnknownScore`."""
    if isinstance(name, Score):
        return name.info
    return _score_class(name).info


def list_scores() -> list[str]:
    """Every registered score name: the built-in ones in the paper's order, STSScore, then those
    registered through entry points (by name)."""
    return scores.names()


#: The built-in scores by level, in the paper's order (read from each score's ``info``).
SEMANTIC_SCORES = tuple(c.info.name for c in (TMR, DMR, CER, CMR))
TEXT_SCORES = tuple(c.info.name for c in (USECos, USEAng, BLEU4, BERTScore, STSScore))
#: The scores computed when none are named: the paper's eight. STSScore (it needs a model trained
#: with ``behavsim scores train-sts``) and the scores of other packages are computed when named, so
#: installing a package never changes the results of a comparison or a study.
DEFAULT_SCORES = tuple(c.info.name for c in (TMR, DMR, CER, CMR, USECos, USEAng, BLEU4, BERTScore))
