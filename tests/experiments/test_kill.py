"""A study killed at random points (SIGKILL, SIGTERM) leaves no process behind, and the immediate
rerun succeeds — never refused as "in use" — with results equal to an uninterrupted run's.

The command is started in a session of its own with SIGINT's and SIGTERM's default dispositions;
the signal goes to its pid only, as ``kill PID`` does. With ``BEHAVSIM_STRESS=N`` (``bash run.sh
test-stress``) each case is killed N times in one run folder, at random points of the runs that
resume it, before the rerun that is compared."""

import random
import shutil
import signal
import subprocess
import time

import pytest
from _tiny import REPRODUCE, STRESS, default_sigint, partial_files, reproduce_ok, results, wait_group_gone

REPEATS = max(1, STRESS)


def _kill_once(spawn, run, sig, delay):
    proc = spawn(
        [*REPRODUCE, "-o", str(run)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    time.sleep(delay)
    if proc.poll() is not None:
        err = proc.stderr.read()
        assert proc.returncode == 0, err[-3000:]
        return "finished first"
    proc.send_signal(sig)  # the main process only, as a kill of its pid does
    err = proc.communicate(timeout=300)[1]
    assert wait_group_gone(proc.pid), "worker processes outlived their killed parent"
    if sig == signal.SIGTERM:  # handled like Ctrl-C
        assert proc.returncode == 130 and err.splitlines()[-1:] == ["interrupted"], (proc.returncode, err[-3000:])
        assert "Traceback" not in err, err[-3000:]
        assert partial_files(run) == []
    else:
        assert proc.returncode == -signal.SIGKILL
    return "killed"


@pytest.mark.timeout(1800 + 600 * REPEATS)
@pytest.mark.parametrize(
    "sig", [signal.SIGKILL, signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL-a", "SIGKILL-b", "SIGTERM"]
)
def test_killed_study_reruns_at_once_with_equal_results(tiny_reference, tmp_path, spawn, sig):
    ref, seconds = tiny_reference
    run = tmp_path / "run"
    rng = random.Random(f"{sig}{tmp_path.name}")
    k = 0
    while k < REPEATS:
        # a random point of the run: training, responses or analysis; the later runs of a stress
        # run resume what is done within seconds, so an earlier point of theirs falls further on
        delay = rng.uniform(0.1, 0.6) * seconds if k == 0 else rng.uniform(0.02, 0.3) * seconds
        try:
            outcome = _kill_once(spawn, run, sig, delay)
        except AssertionError as exc:
            raise AssertionError(f"kill {k + 1} of {REPEATS} at {delay:.1f} s: {exc}") from None
        if outcome == "finished first":  # a new run folder: the next kill falls inside a run
            shutil.rmtree(run)
            if k == 0:  # the machine is faster now than when the reference ran: kill sooner
                seconds /= 2
                assert seconds > 1, "the run finishes before any kill"
            continue
        k += 1
    err = reproduce_ok(spawn, run)
    assert "in use" not in err
    assert results(run) == results(ref)
    assert results(ref)  # sanity: the comparison above compared something
