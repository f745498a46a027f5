"""Builders of context sets — the dialogue contexts (belief states) every policy answers.

* :func:`generate_grid` — C_gen, a grid over the belief in one value per search slot and the
  method;
* :func:`collect` — C_col, the belief states met by given policies in seeded dialogues with
  the simulated user;
* :class:`ContextRecorder` and :func:`from_jsonl` — contexts logged from any system;
  :func:`from_dialogues_jsonl` — logged dialogues with utterances (every system turn a context
  with its history), :func:`from_unified` — a corpus in ConvLab-3's unified data format (the same,
  with beliefs from the corpus), :func:`logged_responses` — the logged system's own answers (a
  corpus's human wizard);
* :func:`select` — subsets by turn, origin, slot or method belief;
* :func:`perturb` — the same contexts through a noisy recogniser (robustness probes).

All return a :class:`behavsim.ContextSet` (file formats: see ``behavsim/_contexts.py``).
"""

from __future__ import annotations

from contexts._collect import ENV_OPTIONS, collect, dialogue_seed
from contexts._dialogues import from_dialogues_jsonl, is_dialogue_log, logged_responses
from contexts._grid import default_values, generate_grid, grid_levels
from contexts._logged import ContextRecorder, check_belief, from_jsonl
from contexts._perturb import PERTURBATION_KINDS, check_noise, perturb
from contexts._select import select, top_belief
from contexts.corpus import from_unified

__all__ = [
    "generate_grid",
    "grid_levels",
    "default_values",
    "collect",
    "dialogue_seed",
    "ENV_OPTIONS",
    "ContextRecorder",
    "from_jsonl",
    "from_dialogues_jsonl",
    "is_dialogue_log",
    "logged_responses",
    "from_unified",
    "check_belief",
    "select",
    "top_belief",
    "perturb",
    "PERTURBATION_KINDS",
    "check_noise",
]
