"""The uninterrupted reference run of ``behavsim reproduce --config tiny`` that the kill and
interrupt tests compare with (made once per session); helpers in _tiny.py."""

import os
import signal
import subprocess
import time

import pytest
from _tiny import REPRODUCE, default_sigint


@pytest.fixture(scope="session")
def tiny_reference(tmp_path_factory):
    """An uninterrupted ``reproduce --config tiny``: its folder and wall seconds."""
    run = tmp_path_factory.mktemp("tiny-reference") / "ref"
    t0 = time.perf_counter()
    proc = subprocess.Popen([*REPRODUCE, "-o", str(run)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=default_sigint)
    try:
        _, err = proc.communicate(timeout=1200)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    return run, time.perf_counter() - t0
