"""Shared runs of the tiny study: one in this process (``tiny_run``) and the uninterrupted reference run of ``behavsim reproduce --config tiny`` that the kill and
interrupt tests compare with (made once per session); helpers in _tiny.py."""

import os
import signal
import subprocess
import time

import pytest
from _tiny import REPRODUCE, default_sigint

from experiments.study import load_config, run_study


@pytest.fixture(scope="session")
def tiny_reference(tmp_path_factory):
    """An uninterrupted ``reproduce --config tiny``: its folder and wall seconds."""
    run = tmp_path_factory.mktemp("tiny-reference") / "ref"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*REPRODUCE, "-o", str(run)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_sigint,
    )
    try:
        _, err = proc.communicate(timeout=1200)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    return run, time.perf_counter() - t0


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """One run of the tiny study, shared by the test modules that read it (copy it to change it;
    resuming it in place must leave it as it is)."""
    out = tmp_path_factory.mktemp("study") / "run"
    run_study(load_config("tiny"), out, log=lambda m: None)
    return out
