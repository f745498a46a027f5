"""GP-SARSA, PyDial's algorithm written anew: the learner and its policy on a domain
(:mod:`.sarsa`), checkpoint files (``.npz`` + JSON, no pickle) and the ``PATH.npz`` /
``checkpoint:PATH`` policy kind (:mod:`.checkpoint`)."""

from policies.gp.checkpoint import (
    CheckpointError,
    checkpoint_kind,
    load_checkpoint,
    read_checkpoint,
    read_meta,
    save_checkpoint,
)
from policies.gp.policy import GPSarsaPolicy
from policies.gp.sarsa import GPSarsa

__all__ = [
    "GPSarsa",
    "GPSarsaPolicy",
    "CheckpointError",
    "save_checkpoint",
    "load_checkpoint",
    "read_checkpoint",
    "read_meta",
    "checkpoint_kind",
]
