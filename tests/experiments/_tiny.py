"""Helpers of the kill and interrupt tests of ``behavsim reproduce --config tiny`` share: one
uninterrupted reference run (the session fixture ``tiny_reference``, in conftest.py), the command started in a session of its own
with SIGINT's default disposition, and the comparison of a run's results with the reference's."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

REPRODUCE = [sys.executable, "-m", "behavsim.cli", "reproduce", "--config", "tiny"]
#: metrics.csv columns that hold wall-clock times (documented in policies/train.py)
TIMING_COLUMNS = ("train_seconds", "wall_seconds")
#: A file being written (behavsim._io.atomic_path, policies/train.py): ".<name>.tmp<pid>".
PARTIAL = re.compile(r"^\..+\.tmp\d+$")
#: How many times the stress run (bash run.sh test-stress) repeats each interrupt, kill and Ray test;
#: 0 in the normal suite.
STRESS = int(os.environ.get("BEHAVSIM_STRESS", "0") or 0)


def default_sigint() -> None:
    """preexec_fn: SIGINT back to its default disposition. A background job of a non-interactive
    shell (and so a test runner started as one) has SIGINT ignored, which the command keeps."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def results(run: Path) -> dict[str, object]:
    """Every file of results/ (metrics.csv without its timing columns) and every checkpoint."""
    out: dict[str, object] = {}
    for p in sorted((run / "results").rglob("*")) if (run / "results").is_dir() else []:
        if not p.is_file() or PARTIAL.match(p.name):
            continue
        key = str(p.relative_to(run))
        if p.name == "metrics.csv":
            df = pd.read_csv(p)
            out[key] = df.drop(columns=[c for c in TIMING_COLUMNS if c in df]).to_csv(index=False)
        else:
            out[key] = p.read_bytes()
    for p in sorted((run / "train").rglob("*.npz")) if (run / "train").is_dir() else []:
        if not PARTIAL.match(p.name):
            out[str(p.relative_to(run))] = p.read_bytes()
    return out


def partial_files(run: Path) -> list[str]:
    return sorted(str(p.relative_to(run)) for p in run.rglob("*") if PARTIAL.match(p.name))


def wait_group_gone(pgid: int, seconds: float = 5.0) -> bool:
    """Whether every process of the group ``pgid`` is gone within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def reproduce_ok(spawn, run: Path, timeout: float = 1200) -> str:
    """Run the study to the end in ``run``; its stderr."""
    proc = spawn(
        [*REPRODUCE, "-o", str(run)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return err
