"""``behavsim reproduce --config tiny`` interrupted at a stage, with SIGINT or SIGTERM sent to the
command's own process id (the command started in a session of its own, with SIGINT's default
disposition): exit status 130 and "interrupted" on stderr (nothing else: no traceback), no process
of its session left, no partial file, every finished file equal to an uninterrupted run's, and
the rerun ends with results equal to the uninterrupted run's (timing columns aside).

In the normal suite: one interrupt per signal at a random stage (seeded: the stage and the seed
are in the test id; ``BEHAVSIM_INTERRUPT_SEED=N`` repeats a run's choice). With
``BEHAVSIM_STRESS=N`` (``bash run.sh test-stress``): every stage with each signal, one after the
other in one run folder (each interrupt at a stage the previous runs did not reach), and N
interrupts per signal at random stages and moments, each followed by a resume, and the last
resume compared with the uninterrupted run.
"""

import os
import queue
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _tiny import REPRODUCE, STRESS, default_sigint, partial_files, reproduce_ok, results, wait_group_gone

#: Stages, as the stage lines of ``reproduce`` name them (``[k/N] <name> ...``).
STAGES = ("training", "context", "responses", "comparisons", "analysis", "figures", "report")
#: Longest wait after a stage's line before the signal, in seconds (short stages: none).
MAX_DELAY = {
    "training": 3.0,
    "context": 0.0,
    "responses": 0.3,
    "comparisons": 2.0,
    "analysis": 0.0,
    "figures": 4.0,
    "report": 0.0,
}
STAGE_LINE = re.compile(r"^\[(\d+)/(\d+)\] ([a-z]+)")
SEED = int(os.environ.get("BEHAVSIM_INTERRUPT_SEED") or random.SystemRandom().randrange(10_000))
SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _reader(stream, out: "queue.Queue[str | None]") -> None:
    for line in stream:
        out.put(line)
    out.put(None)


def interrupt(spawn, run: Path, sig: signal.Signals, stage: str, delay: float, ref: Path) -> str:
    """Start the study in ``run``, send ``sig`` to its pid ``delay`` s after the ``stage`` line,
    check everything an interrupt must leave; returns the stage the command was in at the end."""
    proc = spawn(
        [*REPRODUCE, "-o", str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    errs: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    threading.Thread(target=_reader, args=(proc.stderr, errs), daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + 900
    while True:
        line = lines.get(timeout=max(1.0, deadline - time.monotonic()))
        assert line is not None, f"the run ended before its {stage!r} stage: {seen}"
        m = STAGE_LINE.match(line)
        if m:
            seen.append(m.group(3))
            if m.group(3) == stage:
                break
    time.sleep(delay)
    assert proc.poll() is None, f"the run finished before the signal ({stage}, {delay:.2f} s)"
    os.kill(proc.pid, sig)
    rc = proc.wait(timeout=300)
    while (line := lines.get(timeout=30)) is not None:
        if m := STAGE_LINE.match(line):
            seen.append(m.group(3))
    err = "".join(iter(lambda: errs.get(timeout=30), None))
    where = f"{sig.name} {delay:.2f} s after the {stage!r} line (stages seen: {seen})"
    assert rc == 130, f"{where}: exit {rc}\n{err[-3000:]}"
    assert err.splitlines()[-1:] == ["interrupted"], f"{where}\n{err[-3000:]}"
    for bad in ("Traceback", "KeyboardInterrupt", "Exception ignored", "internal error"):
        assert bad not in err, f"{where}\n{err[-3000:]}"
    assert wait_group_gone(proc.pid), f"{where}: processes of the command's session outlived it"
    assert partial_files(run) == [], where
    want = results(ref)
    got = results(run)
    assert [k for k in got if k not in want or got[k] != want[k]] == [], f"{where}: finished files differ"
    return seen[-1]


def _random_case(rng: random.Random) -> tuple[str, float]:
    stage = rng.choice(STAGES)
    return stage, rng.uniform(0.0, MAX_DELAY[stage])


def _ci_cases():
    rng = random.Random(SEED)
    for sig in SIGNALS:
        stage, delay = _random_case(rng)
        yield pytest.param(sig, stage, delay, id=f"{sig.name}-{stage}-seed{SEED}")


@pytest.mark.timeout(2400)
@pytest.mark.parametrize("sig, stage, delay", list(_ci_cases()))
def test_interrupted_at_a_random_stage_resumes_to_equal_results(tiny_reference, tmp_path, spawn, sig, stage, delay):
    ref, _ = tiny_reference
    run = tmp_path / "run"
    interrupt(spawn, run, sig, stage, delay, ref)
    reproduce_ok(spawn, run)
    assert results(run) == results(ref)


@pytest.mark.skipif(not STRESS, reason="the stress run only (bash run.sh test-stress)")
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_interrupted_at_every_stage_resumes_to_equal_results(tiny_reference, tmp_path, spawn, sig):
    """Every stage in turn, each interrupt in a stage the runs before did not reach (so there is
    work in it to interrupt); the last run completes the study."""
    ref, _ = tiny_reference
    run = tmp_path / "run"
    landed = [interrupt(spawn, run, sig, stage, 0.0, ref) for stage in STAGES]
    reproduce_ok(spawn, run)
    assert results(run) == results(ref)
    assert landed == list(STAGES), f"interrupts landed in {landed}"


@pytest.mark.skipif(not STRESS, reason="the stress run only (bash run.sh test-stress)")
@pytest.mark.timeout(7200)
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_interrupted_again_and_again_resumes_to_equal_results(tiny_reference, tmp_path, spawn, sig):
    """BEHAVSIM_STRESS interrupts at random stages and moments of one run folder, each run resuming
    what the previous one left."""
    ref, _ = tiny_reference
    run = tmp_path / "run"
    rng = random.Random(f"{SEED}-{sig.name}")
    cases = [_random_case(rng) for _ in range(STRESS)]
    for k, (stage, delay) in enumerate(cases):
        try:
            interrupt(spawn, run, sig, stage, delay, ref)
        except AssertionError as exc:
            raise AssertionError(f"repeat {k + 1} of {STRESS} (seed {SEED}): {exc}") from None
    reproduce_ok(spawn, run)
    assert results(run) == results(ref)


# ----------------------------------------------------------------------------- train, quickly
def _train(out: Path, dialogues: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "behavsim.cli",
        "train",
        "--seed",
        "0",
        "1",
        "--dialogues",
        str(dialogues),
        "--checkpoint-every",
        "20",
        "--eval-dialogues",
        "2",
        "--workers",
        "2",
        "-o",
        str(out),
    ]


@pytest.mark.timeout(300 + 60 * max(1, STRESS))
@pytest.mark.parametrize(
    "signals",
    [
        (signal.SIGINT,),
        (signal.SIGTERM,),
        (signal.SIGINT, signal.SIGTERM),
        (signal.SIGTERM, signal.SIGTERM, signal.SIGINT),
    ],
    ids=lambda s: "+".join(x.name for x in s),
)
def test_train_with_workers_interrupted_once_or_more(tmp_path, spawn, signals):
    """Two trials on two worker processes; the signals in quick succession (the later ones while
    the command cleans up): exit 130, "interrupted", no worker left, no partial file; the rerun
    resumes. Under BEHAVSIM_STRESS, that many interrupted runs of one folder before the rerun."""
    out = tmp_path / "run"
    for k in range(max(1, STRESS)):
        proc = spawn(
            _train(out, 2000), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint
        )
        start = {p.name for p in out.glob("*/ckpt-*.npz")}
        deadline = time.monotonic() + 300
        while (
            {p.name for p in out.glob("*/ckpt-*.npz")} <= start and time.monotonic() < deadline and proc.poll() is None
        ):
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read()
        for sig in signals:
            os.kill(proc.pid, sig)
            time.sleep(0.05)
        _, err = proc.communicate(timeout=120)
        where = f"run {k + 1} of {max(1, STRESS)}"
        assert proc.returncode == 130, (where, proc.returncode, err[-2000:])
        assert err.splitlines()[-1:] == ["interrupted"] and "Traceback" not in err, (where, err[-2000:])
        assert wait_group_gone(proc.pid), f"{where}: the workers outlived the command"
        assert partial_files(out) == [], where
    again = spawn(
        _train(out, 40), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint
    )
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err[-2000:]


# ----------------------------------------------------------------------------- monitor --follow
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_monitor_follow_stops_at_an_interrupt_with_exit_0(tmp_path, spawn, sig):
    """``monitor --follow`` runs until Ctrl-C by design (docs/monitor.md): the command handles the
    interrupt itself and ends with 0, saying how to continue."""
    from contexts import generate_grid

    generate_grid(step=0.5).save(tmp_path / "grid.jsonl")
    (tmp_path / "run").mkdir()
    proc = spawn(
        [
            sys.executable,
            "-m",
            "behavsim.cli",
            "monitor",
            str(tmp_path / "run"),
            "--contexts",
            str(tmp_path / "grid.jsonl"),
            "--follow",
            "--interval",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    time.sleep(5)
    assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert "interrupted; run the same command again to continue" in out
    assert "Traceback" not in err and "interrupted" not in err.splitlines()
