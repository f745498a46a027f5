"""Synthetic restaurant-search dialogues and the sample IQ corpus built from them.

This is **not** real data.  It exists so that the BiLSTM estimator's training, persistence and
CSV code can be tested without the LEGO corpus (which the project does not ship).  The
procedure, in full:

1. A toy simulated user and system play a restaurant search (3 informable slots area, food,
   pricerange; the goal has 1-3 constraints and 0-2 requests among phone, address, postcode).
   Each dialogue draws a *system style* (probabilities of needless confirmations, of repeating
   the previous act, of offering a wrong venue, of closing early) and a semantic error rate in
   {0, 0.15, 0.3}; an understood user act has ASR confidence ``1 - error``-ish, a misunderstood
   one a low confidence, and the system then asks again (a re-prompt).
2. Every exchange is labelled with the rule-based :class:`ParameterIQEstimator` on the prefix
   up to it, then, with probability ``noise`` (default 0.1), moved one point up or down
   (clipped to 1..5) to imitate disagreement between raters.

Regenerate the committed corpus with::

    python -m policies.simulation.iq._synth --out policies/simulation/data/iq/sample_exchanges.csv --dialogues 80 --seed 0

The output is byte-for-byte determined by the arguments (a test checks this).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from behavsim.commands import CommandParser
from policies.simulation.iq._corpus import write_exchange_csv
from policies.simulation.iq._parameters import ParameterIQEstimator

__all__ = ["simulate_dialogue", "make_sample_corpus"]

_SLOTS = ("area", "food", "pricerange")
_VALUES = {
    "area": ("centre", "north", "south", "east", "west"),
    "food": ("italian", "indian", "chinese", "british", "french", "thai"),
    "pricerange": ("cheap", "moderate", "expensive"),
}
_REQUESTABLE = ("phone", "addr", "postcode")
_VENUES = ("the golden fork", "la tasca", "curry garden", "pizza place", "the mill", "bangkok house")
MAX_TURNS = 25


def _act(act_type: str, items: list[tuple[str, str]] = ()) -> str:  # type: ignore[assignment]
    inner = ",".join(f'{s}="{v}"' if v and " " in v else (f"{s}={v}" if v else s) for s, v in items)
    return f"{act_type}({inner})"


@dataclass
class _Dialogue:
    """What one synthetic dialogue knows: the user's goal and requests, the system's style and
    error rate, and how far the search got."""

    slots: list[str]
    goal: dict[str, str]
    error: float
    style: dict[str, float]
    pending_requests: list[str]
    accepted: dict[str, str] = field(default_factory=dict)
    venue_ok: bool = False
    user_bye: bool = False


def _new_dialogue(rng: np.random.Generator) -> _Dialogue:
    """The goal (1-3 constraints, 0-2 requests), the semantic error rate and the system's style."""
    n_constraints = int(rng.choice([1, 2, 3], p=[0.1, 0.2, 0.7]))
    slots = list(rng.permutation(_SLOTS)[:n_constraints])
    goal = {s: str(rng.choice(_VALUES[s])) for s in slots}
    requests = list(rng.permutation(_REQUESTABLE)[: int(rng.choice([0, 1, 2], p=[0.3, 0.4, 0.3]))])
    error = float(rng.choice([0.0, 0.15, 0.3], p=[0.6, 0.25, 0.15]))
    style = {
        "confirm": float(rng.choice([0.0, 0.2, 0.5], p=[0.5, 0.3, 0.2])),
        "repeat": float(rng.choice([0.0, 0.1, 0.3], p=[0.6, 0.25, 0.15])),
        "wrong_offer": float(rng.choice([0.0, 0.3, 0.7], p=[0.7, 0.2, 0.1])),
        "early_bye": float(rng.choice([0.0, 0.05, 0.2], p=[0.7, 0.2, 0.1])),
    }
    return _Dialogue(slots, goal, error, style, list(requests))


def _system_act(
    rng: np.random.Generator, d: _Dialogue, turn: int, prev_sys: str, prev_offer: dict[str, str] | None
) -> tuple[str, dict[str, str] | None]:
    """The system's act of ``turn`` and the constraints of the venue it offers (``None``: no offer)."""
    missing = [s for s in d.slots if s not in d.accepted]
    offer: dict[str, str] | None = None  # the constraints of an offered venue
    if prev_sys and rng.random() < d.style["repeat"]:
        sys_act = prev_sys  # a needless repetition of the previous act
        offer = prev_offer
    elif (turn > 1 and rng.random() < d.style["early_bye"]) or d.user_bye:
        sys_act = "bye()"
    elif missing:
        if d.accepted and rng.random() < d.style["confirm"]:
            s = sorted(d.accepted)[int(rng.integers(len(d.accepted)))]
            sys_act = _act("confirm", [(s, d.accepted[s])])
        else:
            sys_act = _act("request", [(missing[0], "")])
    elif not d.venue_ok:
        offer = dict(d.accepted)
        if rng.random() < d.style["wrong_offer"]:
            s = d.slots[int(rng.integers(len(d.slots)))]
            offer[s] = str(rng.choice([v for v in _VALUES[s] if v != d.goal[s]]))
        name = str(rng.choice(_VENUES))
        sys_act = _act("inform", [("name", name)] + [(s, offer[s]) for s in d.slots])
    elif d.pending_requests:
        sys_act = _act("inform", [("name", "the venue"), (d.pending_requests[0], "x")])
    else:
        sys_act = "reqmore()"
    return sys_act, offer


def _user_act(
    rng: np.random.Generator, d: _Dialogue, sys_act: str, sys_type: str, offer: dict[str, str] | None
) -> tuple[str, float]:
    """The user's answer to ``sys_act`` and its ASR confidence; updates what the search got."""
    understood = rng.random() >= d.error
    asr = 1.0 if d.error == 0.0 else float(np.clip(rng.normal(1.0 - d.error / 2, 0.05), 0.0, 1.0))
    if not understood:
        asr = float(np.clip(rng.normal(0.35, 0.1), 0.0, 1.0))
    pending = d.pending_requests
    if sys_type == "bye":
        user_act = "bye()"
    elif sys_type == "request":
        s = sys_act[len("request(") : -1]
        user_act = _act("inform", [(s, d.goal[s])])
        if understood:
            d.accepted[s] = d.goal[s]
    elif sys_type == "confirm":
        user_act = "affirm()"
    elif offer is not None:
        if offer == d.goal:
            d.venue_ok = True
            user_act = _act("request", [(pending[0], "")]) if pending else "thankyou()"
        else:
            user_act = "negate()" if rng.random() < 0.5 else "reqalts()"
    elif sys_type == "inform":
        if understood and pending:
            pending.pop(0)
        user_act = _act("request", [(pending[0], "")]) if pending else "thankyou()"
    else:  # reqmore
        user_act = "bye()"
        d.user_bye = True
    return user_act, asr


def simulate_dialogue(rng: np.random.Generator) -> list[dict]:
    """One synthetic dialogue as a list of exchange dicts (the environment's format)."""
    d = _new_dialogue(rng)
    prev_sys = ""
    prev_offer: dict[str, str] | None = None
    exchanges: list[dict] = []
    for turn in range(1, MAX_TURNS + 1):
        sys_act, offer = _system_act(rng, d, turn, prev_sys, prev_offer)
        sys_type = sys_act.split("(", 1)[0]
        reprompt = sys_act == prev_sys
        user_act, asr = _user_act(rng, d, sys_act, sys_type, offer)
        success = d.venue_ok and not d.pending_requests
        if user_act == "thankyou()" and success:
            d.user_bye = True
        exchanges.append(
            {
                "turn": turn,
                "system_act": sys_act,
                "system_act_type": sys_type,
                "user_act": user_act,
                "user_act_type": user_act.split("(", 1)[0],
                "reprompt": reprompt,
                "confirmation": sys_type == "confirm",
                "asr_confidence": round(asr, 4),
                "constraints_filled": len(d.accepted),
                "user_goal_constraints": len(d.slots),
                "informed_venue": sys_type == "inform",  # every inform here names a venue
                "success_so_far": success,
            }
        )
        prev_sys, prev_offer = sys_act, offer
        if sys_type == "bye":
            break
    return exchanges


def make_sample_corpus(path: str | Path, *, dialogues: int = 80, seed: int = 0, noise: float = 0.1) -> Path:
    """Write the synthetic exchange-level corpus (see the module docstring) to ``path``."""
    rng = np.random.default_rng(seed)
    rater = ParameterIQEstimator()
    rows: list[tuple[str, dict, int]] = []
    for d in range(dialogues):
        exchanges = simulate_dialogue(rng)
        for t in range(1, len(exchanges) + 1):
            iq = rater.estimate(exchanges[:t])
            if rng.random() < noise:
                iq = min(5, max(1, iq + (1 if rng.random() < 0.5 else -1)))
            rows.append((f"d{d:03d}", exchanges[t - 1], iq))
    return write_exchange_csv(path, rows)


def main(argv: list[str] | None = None) -> None:
    parser = CommandParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--dialogues", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.1)
    args = parser.parse_args(argv)
    out = make_sample_corpus(args.out, dialogues=args.dialogues, seed=args.seed, noise=args.noise)
    print(out)


if __name__ == "__main__":
    main()
