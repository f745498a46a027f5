"""A study killed at random points (SIGKILL, SIGTERM) leaves no process behind, and the immediate
rerun succeeds — never refused as "in use" — with results equal to an uninterrupted run's."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXE = [sys.executable, "-m", "behavsim.cli"]


def _results(run: Path) -> dict[str, bytes]:
    """The study's results and tables (metrics.csv and timings hold wall times: left out)."""
    out = {}
    for p in sorted((run / "results").rglob("*")):
        if p.is_file() and p.name != "metrics.csv":
            out[str(p.relative_to(run))] = p.read_bytes()
    for p in sorted((run / "train").rglob("*.npz")):
        out[str(p.relative_to(run))] = p.read_bytes()
    return out


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def _reproduce(run: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen([*EXE, "reproduce", "--config", "tiny", "-o", str(run)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    run = tmp_path_factory.mktemp("kill") / "ref"
    t0 = time.perf_counter()
    proc = _reproduce(run)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    return run, time.perf_counter() - t0


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGKILL, signal.SIGTERM])
def test_killed_study_reruns_at_once_with_equal_results(reference, tmp_path, sig):
    ref, seconds = reference
    run = tmp_path / "run"
    rng = random.Random(f"{sig}{tmp_path.name}")
    delay = rng.uniform(0.1, 0.6) * seconds  # a random point of the run: training, responses or analysis
    proc = _reproduce(run)
    time.sleep(delay)
    if proc.poll() is not None:
        assert proc.returncode == 0, proc.stderr.read()
        pytest.skip(f"the run finished before the kill at {delay:.1f} s")
    proc.send_signal(sig)  # the main process only, as a kill of its pid does
    proc.wait(timeout=60)
    deadline = time.monotonic() + 5
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(proc.pid), "worker processes outlived their killed parent"
    if sig == signal.SIGTERM:
        assert proc.returncode == 130 and "interrupted" in proc.stderr.read()  # handled like Ctrl-C
    again = _reproduce(run)
    _, err = again.communicate(timeout=900)
    assert again.returncode == 0, err
    assert "in use" not in err
    assert _results(run) == _results(ref)
