"""Exchange-level interaction parameters (LEGO style) shared by every IQ estimator.

An *exchange* is one system turn plus the user's answer to it, given as a plain dict with the
keys of :data:`EXCHANGE_KEYS` (produced by the dialogue environment).  Following the LEGO
corpus (Schmitt, Ultes and Minker 2012; Schmitt and Ultes 2015, Speech Communication 74), the
parameters of exchange *t* are computed on three levels:

* **exchange** level: what happened in exchange *t* alone;
* **window** level: the last :data:`WINDOW` exchanges up to *t* (LEGO's ``{#}`` / ``{Mean}``);
* **dialogue** level: everything from exchange 1 to *t* (LEGO's ``#`` / ``%`` / ``Mean``).

The ASR-specific LEGO parameters that a simulated semantic channel cannot produce (recognition
status, barge-in, speech duration, ...) are left out; the task-progress parameters
(``constraint_progress``, ``informed_venue``, ``venue_offered``, ``success_so_far``,
``closed``) are additions for the restaurant-search domain, documented in
``docs/interaction_quality.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from policies.simulation.env import EXCHANGE_KEYS
from policies.simulation.iq._errors import IQInputError

__all__ = ["FEATURE_NAMES", "WINDOW", "exchange_features", "validate_exchanges"]

# EXCHANGE_KEYS: the keys every exchange dict carries (the environment's contract, policies.simulation.env).

#: Window length of the window-level parameters (LEGO uses the last 3 exchanges).
WINDOW = 3

#: System act types counted as a system question (LEGO's ``ActivityType`` = question).
_QUESTION_ACTS = frozenset({"request", "confreq", "select", "reqmore"})
#: User act types counted as a rejection of what the system said.
_NEGATION_ACTS = frozenset({"negate", "deny"})
_CLOSING_ACTS = frozenset({"bye"})

#: Column names of :func:`exchange_features`, in order.
FEATURE_NAMES: tuple[str, ...] = (
    # exchange level
    "turn",  # LEGO #Exchanges: number of exchanges so far, t
    "reprompt",  # LEGO RePrompt?: system act identical to the previous one
    "confirmation",  # LEGO Confirmation?: system act type is confirm
    "asr_confidence",  # LEGO ASRConfidence
    "system_question",  # LEGO ActivityType == question (request/confreq/select/reqmore)
    "user_negation",  # user act type negate/deny
    # dialogue level (exchanges 1..t)
    "n_reprompts",  # LEGO #RePrompts
    "pct_reprompts",  # LEGO %RePrompts
    "n_confirmations",  # LEGO #SystemConfirmations (our name)
    "pct_confirmations",
    "mean_asr_confidence",  # LEGO MeanASRConfidence
    "n_user_negations",
    # window level (last WINDOW exchanges)
    "win_reprompts",  # LEGO {#}RePrompts
    "win_mean_asr_confidence",  # LEGO {Mean}ASRConfidence
    # task progress (restaurant search)
    "constraint_progress",  # constraints_filled / user_goal_constraints (1 if the goal has none)
    "informed_venue",  # exchange level: this exchange's system act offers a venue
    "venue_offered",  # dialogue level: some exchange 1..t had informed_venue
    "success_so_far",
    "closed",  # system or user act type is bye
)


def validate_exchanges(exchanges: Any) -> None:
    """Check the contract of an exchange list once, at the public boundary.

    Raises :class:`IQInputError` naming the exchange and key that is wrong.  The check is
    complete (every key, every type, turns numbered 1..T) and so costs about as much as the
    estimate itself; :meth:`ParameterIQEstimator.estimate` only does the cheap part of it.
    """
    if not isinstance(exchanges, Sequence) or isinstance(exchanges, (str, bytes)):
        raise IQInputError(f"exchanges: expected a list of exchange dicts, got {type(exchanges).__name__}")
    if len(exchanges) == 0:
        raise IQInputError("exchanges: expected at least one exchange, got an empty list")
    for i, ex in enumerate(exchanges):
        if not isinstance(ex, dict):
            raise IQInputError(f"exchanges[{i}]: expected a dict, got {type(ex).__name__}")
        missing = [k for k in EXCHANGE_KEYS if k not in ex]
        if missing:
            raise IQInputError(f"exchanges[{i}]: missing key(s) {', '.join(map(repr, missing))}")
        if ex["turn"] != i + 1:
            raise IQInputError(
                f"exchanges[{i}]['turn']: expected {i + 1} (the full history, turns 1..T), got {ex['turn']!r}"
            )
        conf = ex["asr_confidence"]
        if not isinstance(conf, (int, float, np.floating)) or not 0.0 <= conf <= 1.0:
            raise IQInputError(f"exchanges[{i}]['asr_confidence']: expected a number in [0, 1], got {conf!r}")
        for key in ("constraints_filled", "user_goal_constraints"):
            v = ex[key]
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise IQInputError(f"exchanges[{i}][{key!r}]: expected an integer >= 0, got {v!r}")
        for key in ("system_act_type", "user_act_type"):
            if not isinstance(ex[key], str):
                raise IQInputError(f"exchanges[{i}][{key!r}]: expected a str, got {ex[key]!r}")


def _progress(filled: int, goal: int) -> float:
    if goal <= 0:
        return 1.0
    return min(1.0, filled / goal)


def exchange_features(exchanges: list[dict]) -> np.ndarray:
    """Parameters of every exchange of a dialogue: a ``(T, len(FEATURE_NAMES))`` float64 array.

    Row ``t - 1`` describes the dialogue after exchange *t* using exchanges ``1..t`` only, so the
    rows of a prefix are the first rows of the whole dialogue (no look-ahead).  Columns are
    named by :data:`FEATURE_NAMES`.  The input is validated with :func:`validate_exchanges`.
    """
    validate_exchanges(exchanges)
    rows = np.empty((len(exchanges), len(FEATURE_NAMES)), dtype=np.float64)
    n_rep = n_conf = n_neg = 0
    offered = False
    asr_sum = 0.0
    reps: list[int] = []
    asrs: list[float] = []
    for i, ex in enumerate(exchanges):
        t = i + 1
        rep = 1 if ex["reprompt"] else 0
        conf = 1 if ex["confirmation"] else 0
        asr = float(ex["asr_confidence"])
        question = 1 if ex["system_act_type"] in _QUESTION_ACTS else 0
        neg = 1 if ex["user_act_type"] in _NEGATION_ACTS else 0
        n_rep += rep
        n_conf += conf
        n_neg += neg
        asr_sum += asr
        reps.append(rep)
        asrs.append(asr)
        win_r = reps[-WINDOW:]
        win_a = asrs[-WINDOW:]
        offered = offered or bool(ex["informed_venue"])
        closed = ex["system_act_type"] in _CLOSING_ACTS or ex["user_act_type"] in _CLOSING_ACTS
        rows[i] = (
            t,
            rep,
            conf,
            asr,
            question,
            neg,
            n_rep,
            n_rep / t,
            n_conf,
            n_conf / t,
            asr_sum / t,
            n_neg,
            sum(win_r),
            sum(win_a) / len(win_a),
            _progress(ex["constraints_filled"], ex["user_goal_constraints"]),
            1 if ex["informed_venue"] else 0,
            1 if offered else 0,
            1 if ex["success_so_far"] else 0,
            1 if closed else 0,
        )
    return rows
