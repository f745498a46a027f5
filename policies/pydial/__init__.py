"""PyDial3 (``helloric/pydial3``, never imported by default): the ``pydial:CFG`` policy kind
(:class:`PyDialAdapter`: a policy trained by PyDial answers behavsim's contexts), PyDial's config
files, its log, the follower of the policies PyDial writes while it trains (``behavsim monitor
--pydial-config``), and the script that runs dialogues in PyDial's own simulation
(:data:`RUN_DIALOGUES`, used by ``behavsim contexts collect-pydial``)."""

from pathlib import Path

from policies.pydial._adapter import (
    PYDIAL_HINT,
    PyDialAdapter,
    StateVectorMismatch,
    find_pydial_root,
    git_commit,
    pydial_kind,
    read_config,
    resolve_config,
)
from policies.pydial._watch import PyDialWatch, pydial_trials, refuse_pydial_folder

#: The script run in a subprocess, with PyDial's root as its working directory, that plays dialogues
#: in PyDial's simulation and records what its policy saw (never imported).
RUN_DIALOGUES = Path(__file__).resolve().with_name("_run_dialogues.py")

__all__ = [
    "PyDialAdapter",
    "StateVectorMismatch",
    "pydial_kind",
    "find_pydial_root",
    "git_commit",
    "read_config",
    "resolve_config",
    "PYDIAL_HINT",
    "PyDialWatch",
    "pydial_trials",
    "refuse_pydial_folder",
    "RUN_DIALOGUES",
]
