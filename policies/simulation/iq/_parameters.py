"""Rule-based interaction-quality estimate from LEGO-style interaction parameters."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from policies.simulation.iq._errors import IQInputError
from policies.simulation.iq._features import FEATURE_NAMES, exchange_features

__all__ = ["ParameterIQEstimator", "iq_from_parameters"]

# Coefficients of the formula (see ParameterIQEstimator).  Changing one changes every value:
# bump _FORMULA_VERSION so the signature tells old numbers from new ones.
_FORMULA_VERSION = "1"
_START = 5.0  # LEGO rating guideline: every dialogue starts at IQ 5
_PER_EXCHANGE = 0.20  # per exchange after the first (#Exchanges)
_PER_REPROMPT = 0.50  # per re-prompt (#RePrompts)
_PER_CONFIRMATION = 0.25  # per explicit confirmation
_ASR = 2.0  # times (1 - mean ASR confidence)
_MISSING_CONSTRAINTS = 1.0  # times the share of goal constraints not accepted, once offered/closed
_FAILED_CLOSE = 1.5  # dialogue closed (bye) without success
_EPS = 1e-9  # halves round up despite binary floating point (e.g. 3.4999999999999996)

_IDX = {name: i for i, name in enumerate(FEATURE_NAMES)}


def _score(
    turns: float,
    n_reprompts: float,
    n_confirmations: float,
    mean_asr: float,
    progress: float,
    venue_offered: bool,
    success: bool,
    closed: bool,
) -> float:
    s = (
        _START
        - _PER_EXCHANGE * (turns - 1)
        - _PER_REPROMPT * n_reprompts
        - _PER_CONFIRMATION * n_confirmations
        - _ASR * (1.0 - mean_asr)
    )
    if venue_offered or closed:
        s -= _MISSING_CONSTRAINTS * (1.0 - progress)
    if closed and not success:
        s -= _FAILED_CLOSE
    return s


def _to_iq(score: float) -> int:
    iq = math.floor(score + 0.5 + _EPS)
    return 1 if iq < 1 else 5 if iq > 5 else iq


def iq_from_parameters(row: Mapping[str, float] | object) -> int:
    """The rule-based IQ of one row of :func:`exchange_features` (by position or by name).

    ``row`` is either a sequence indexed like :data:`FEATURE_NAMES` (e.g. ``features[-1]``) or
    a mapping from feature name to value.  Same formula as :class:`ParameterIQEstimator`.
    """
    get = (lambda k: row[k]) if isinstance(row, Mapping) else (lambda k: row[_IDX[k]])  # type: ignore[index]
    score = _score(
        float(get("turn")),
        float(get("n_reprompts")),
        float(get("n_confirmations")),
        float(get("mean_asr_confidence")),
        float(get("constraint_progress")),
        bool(get("venue_offered")),
        bool(get("success_so_far")),
        bool(get("closed")),
    )
    return _to_iq(score)


@dataclass(frozen=True)
class ParameterIQEstimator:
    """Transparent, deterministic interaction-quality (IQ) estimate in 1..5 from interaction parameters.

    After exchange ``T`` of a dialogue::

        s  = 5
             - 0.20 * (T - 1)                 # number of exchanges (LEGO #Exchanges)
             - 0.50 * R                       # number of re-prompts (LEGO #RePrompts)
             - 0.25 * C                       # number of explicit confirmations
             - 2.00 * (1 - a)                 # a = mean ASR confidence (LEGO MeanASRConfidence)
             - 1.00 * (1 - F/G) * [V or B]    # goal constraints not accepted once a venue has
                                              # been offered (V: informed_venue in any exchange
                                              # 1..T) or the dialogue is closed (B: the system or
                                              # the user act of exchange T is bye)
             - 1.50 * [B and not S]           # closed without success so far (S)
        iq = clip(floor(s + 0.5), 1, 5)       # halves round up

    with ``F/G`` = ``constraints_filled / user_goal_constraints`` of exchange ``T`` (1 when the
    goal has no constraints).

    **Sources.**  The structure follows the Interaction Quality paradigm (Schmitt and Ultes
    2015, Speech Communication 74:12-36; LEGO corpus, Schmitt, Ultes and Minker 2012, LREC):
    IQ is rated per exchange on 1 (extremely unsatisfied) .. 5 (satisfied), every dialogue
    starts at 5, and the parameters used are those the IQ literature reports as most related
    to IQ: the number of exchanges, re-prompts (absolute and relative), confirmations and ASR
    confidence, plus task progress/success.  The *signs* come from that literature; the
    *weights* are not fitted to LEGO (which this project does not ship) but set by hand so that
    error-free successful restaurant-search dialogues of 4-8 exchanges score 4 (2-3 exchanges:
    5), matching the average IQ of about 3.8 at 4.4 turns in Table 1 of Ultes and Maier's
    similarity-scoring paper, and so that every exchange, re-prompt, confirmation or failure
    lowers the score.  Read it as a documented stand-in for the BiLSTM estimator (Ultes 2019),
    not as a reproduction of its numbers.

    ``estimate`` is one pass over the exchanges in pure Python (a few microseconds for a
    typical dialogue); it checks only what it reads, cheaply.  Use
    :func:`~policies.simulation.iq.validate_exchanges` for a full check of the exchange contract.
    """

    name: ClassVar[str] = "parameters"
    bounds: ClassVar[tuple[int, int]] = (1, 5)
    higher_is_better: ClassVar[bool] = True
    needs_model: ClassVar[bool] = False

    @property
    def signature(self) -> str:
        """Everything that changes the value: formula version and coefficients."""
        return (
            f"iq:parameters|v:{_FORMULA_VERSION}|start:{_START:g}|exch:{_PER_EXCHANGE:g}"
            f"|rep:{_PER_REPROMPT:g}|conf:{_PER_CONFIRMATION:g}|asr:{_ASR:g}"
            f"|constr:{_MISSING_CONSTRAINTS:g}|fail:{_FAILED_CLOSE:g}|round:half-up"
        )

    def score(self, exchanges: list[dict]) -> float:
        """The unrounded score ``s`` of the formula (for analysis; may leave [1, 5])."""
        try:
            n = len(exchanges)
            if n == 0:
                raise IQInputError("exchanges: expected at least one exchange, got an empty list")
            n_rep = n_conf = 0
            offered = False
            asr_sum = 0.0
            for ex in exchanges:
                if ex["informed_venue"]:
                    offered = True
                if ex["reprompt"]:
                    n_rep += 1
                if ex["confirmation"]:
                    n_conf += 1
                asr_sum += ex["asr_confidence"]
            last = exchanges[-1]
            if last["turn"] != n:
                raise IQInputError(
                    f"exchanges[{n - 1}]['turn']: expected {n} (the full history, turns 1..T), got {last['turn']!r}"
                )
            goal = last["user_goal_constraints"]
            progress = 1.0 if goal <= 0 else min(1.0, last["constraints_filled"] / goal)
            closed = last["system_act_type"] == "bye" or last["user_act_type"] == "bye"
            return _score(
                n,
                n_rep,
                n_conf,
                asr_sum / n,
                progress,
                offered,
                bool(last["success_so_far"]),
                closed,
            )
        except KeyError as err:
            raise IQInputError(f"exchanges: an exchange lacks the key {err.args[0]!r}") from None
        except TypeError as err:
            if isinstance(exchanges, (list, tuple)):
                raise IQInputError(f"exchanges: an exchange has a value of the wrong type ({err})") from None
            raise IQInputError(
                f"exchanges: expected a list of exchange dicts, got {type(exchanges).__name__}"
            ) from None

    def estimate(self, exchanges: list[dict]) -> int:
        """IQ in 1..5 after the last of ``exchanges`` (the full history, turns 1..T)."""
        return _to_iq(self.score(exchanges))

    def explain(self, exchanges: list[dict]) -> dict[str, float]:
        """The terms of the formula for ``exchanges``: each penalty, the score and the IQ."""
        row = exchange_features(exchanges)[-1]
        f = {name: float(row[i]) for i, name in enumerate(FEATURE_NAMES)}
        offered_or_closed = bool(f["venue_offered"]) or bool(f["closed"])
        terms = {
            "start": _START,
            "exchanges": -_PER_EXCHANGE * (f["turn"] - 1),
            "reprompts": -_PER_REPROMPT * f["n_reprompts"],
            "confirmations": -_PER_CONFIRMATION * f["n_confirmations"],
            "asr": -_ASR * (1.0 - f["mean_asr_confidence"]),
            "missing_constraints": (
                -_MISSING_CONSTRAINTS * (1.0 - f["constraint_progress"]) if offered_or_closed else 0.0
            ),
            "failed_close": -_FAILED_CLOSE if f["closed"] and not f["success_so_far"] else 0.0,
        }
        terms["score"] = self.score(exchanges)
        terms["iq"] = float(self.estimate(exchanges))
        return terms
