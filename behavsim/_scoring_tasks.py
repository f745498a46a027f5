"""Scoring distinct combinations as tasks of an executor (``compare --executor``).

Each score is scored on its distinct (answer, answer') combinations in chunks of
:data:`COMBINATIONS_PER_TASK`, in order; a worker builds the score from its name and the options
the caller gave (score objects hold models and cache connections, which do not travel), once
per worker process, and checks that its signature is the driver's. Scores' values do not depend
on how their batch is split (the encoders embed each text alone), except BERTScore with idf
computed from the batch itself, which is scored as one task.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._errors import ConfigError
from .scores import Score, get_score

__all__ = ["COMBINATIONS_PER_TASK", "score_recipes", "splittable", "score_pairwise"]

#: Distinct combinations per task when an executor other than plain ``local`` scores them.
COMBINATIONS_PER_TASK = 20_000

#: In a worker process: the scores already built there, by recipe (a model loads once per worker).
_WORKER_SCORES: dict[str, Score] = {}


def splittable(score: Score) -> bool:
    """Whether a score's values are the same when its batch is split (BERTScore's idf computed
    from the batch itself is not)."""
    return not (getattr(score, "idf", False) and getattr(score, "idf_corpus", None) is None)


def _score_task(job: tuple[str, dict[str, Any], str, list[str], list[str]]) -> np.ndarray:
    """One chunk of distinct combinations scored on a worker, by a score built there from its
    name and options, once per worker process."""
    name, options, signature, first, second = job
    key = json.dumps([name, options], sort_keys=True, default=str)
    if key not in _WORKER_SCORES:
        _WORKER_SCORES[key] = get_score(name, **options)
    score = _WORKER_SCORES[key]
    if score.signature != signature:
        raise ConfigError(
            f"{name}: a worker has {score.signature!r}, the driver {signature!r}: install the same versions of "
            "behavsim and its models on every node"
        )
    return np.asarray(score.pairwise(first, second), dtype=np.float64)


def score_pairwise(
    score: Score, recipe: tuple[str, dict[str, Any]] | None, first: list[str], second: list[str], executor: Any
) -> np.ndarray:
    """``score.pairwise(first, second)`` here (plain ``local``, or a score given as an object,
    which a worker could not rebuild) or as tasks of ``executor``, in order."""
    if recipe is None or (executor.is_local and getattr(executor, "workers", None) is None):
        return np.asarray(score.pairwise(first, second), dtype=np.float64)
    step = COMBINATIONS_PER_TASK if splittable(score) else max(len(first), 1)
    jobs = [(*recipe, score.signature, first[k : k + step], second[k : k + step]) for k in range(0, len(first), step)]
    return np.concatenate(executor.map(_score_task, jobs))


def score_recipes(
    objs: Sequence[Score], given: Sequence[str | Score], score_options: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, tuple[str, dict[str, Any]]]:
    """How a worker builds each score named by a string: its name and the very options given."""
    return {
        o.name: (o.name, dict((score_options or {}).get(o.name, {}))) for o, g in zip(objs, given) if isinstance(g, str)
    }
