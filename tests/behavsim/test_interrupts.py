"""Interrupts are the command's business (behavsim/_interrupt.py): ``behavsim.cli.main`` installs
SIGINT and SIGTERM handlers for the time of one command and puts the previous ones back however
it returns; an interrupt ends the command with 130 and "interrupted" even when a library
swallowed the KeyboardInterrupt or turned it into another error; a second signal does not cut
the clean-up short; the library installs nothing; worker processes ignore both signals and are
stopped by their parent."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import behavsim
import behavsim.cli as cli
from behavsim import ContextSet, get_executor, respond_many

SIGNALS = [signal.SIGINT, signal.SIGTERM]


def _handlers():
    return [signal.getsignal(s) for s in SIGNALS]


@pytest.fixture(autouse=True)
def interruptible():
    """SIGINT as in an interactive Python, whatever this test run started with (a background job
    of a non-interactive shell starts with SIGINT ignored, which main() keeps)."""
    saved = _handlers()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for s, h in zip(SIGNALS, saved):
        signal.signal(s, h)


@pytest.fixture
def own_handlers():
    """Handlers of this test's own before main() runs (so that 'the same as before' is specific)."""
    saved = _handlers()

    def a(signum, frame):  # pragma: no cover (never called)
        raise AssertionError("a")

    def b(signum, frame):  # pragma: no cover
        raise AssertionError("b")

    signal.signal(signal.SIGINT, a)
    signal.signal(signal.SIGTERM, b)
    yield [a, b]
    for s, h in zip(SIGNALS, saved):
        signal.signal(s, h)


def _as_scores(monkeypatch, fn):
    """Make ``behavsim scores`` run ``fn(args)`` (a command of the test's own)."""
    # the 'scores' group's listing is the command's body (by its dotted name: the test patches a
    # function of the CLI's, it imports nothing private)
    monkeypatch.setattr("behavsim._scores_cli._cmd_list", fn)


def _self_signal(sig):
    os.kill(os.getpid(), sig)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the handler runs at the next bytecode boundary
        time.sleep(0.01)
    raise AssertionError("the signal did not interrupt")


# ------------------------------------------------------------------ handlers before == after
@pytest.mark.repeat_in_stress
def test_handlers_after_a_normal_return_are_the_ones_before(own_handlers, capsys):
    assert cli.main(["scores"]) == 0
    assert _handlers() == own_handlers


@pytest.mark.repeat_in_stress
def test_handlers_after_an_error_are_the_ones_before(own_handlers, tmp_path, capsys):
    assert cli.main(["compare", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "o.csv")]) == 2
    assert "behavsim compare: error:" in capsys.readouterr().err
    assert _handlers() == own_handlers


@pytest.mark.repeat_in_stress
def test_handlers_after_a_bug_are_the_ones_before(own_handlers, monkeypatch, capsys):
    _as_scores(monkeypatch, lambda args: 1 / 0)
    assert cli.main(["scores"]) == 1
    assert "internal error: ZeroDivisionError" in capsys.readouterr().err
    assert _handlers() == own_handlers


@pytest.mark.repeat_in_stress
@pytest.mark.parametrize("argv, code", [(["--version"], 0), (["--no-such-option"], 2), (["pair"], 2)])
def test_handlers_after_argparse_exits_are_the_ones_before(own_handlers, capsys, argv, code):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == code
    assert _handlers() == own_handlers


@pytest.mark.repeat_in_stress
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_handlers_after_an_interrupt_are_the_ones_before(own_handlers, monkeypatch, capsys, sig):
    _as_scores(monkeypatch, lambda args: _self_signal(sig))
    assert cli.main(["scores"]) == 130
    assert capsys.readouterr().err.splitlines() == ["interrupted"]
    assert _handlers() == own_handlers


@pytest.mark.repeat_in_stress
def test_the_command_handles_both_signals_while_it_runs(own_handlers, monkeypatch, capsys):
    seen = []
    _as_scores(monkeypatch, lambda args: seen.append(_handlers()))
    assert cli.main(["scores"]) == 0
    assert len(seen) == 1 and seen[0][0] == seen[0][1] and seen[0][0] not in own_handlers


@pytest.mark.repeat_in_stress
def test_an_ignored_signal_stays_ignored(monkeypatch, capsys):
    """A background job of a non-interactive shell starts with SIGINT ignored (POSIX): the
    command leaves it so and handles SIGTERM."""
    saved = _handlers()
    seen = []
    _as_scores(monkeypatch, lambda args: seen.append(_handlers()))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert cli.main(["scores"]) == 0
        assert _handlers()[0] == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, saved[0])
    assert seen[0][0] == signal.SIG_IGN and seen[0][1] not in (signal.SIG_IGN, signal.SIG_DFL, saved[1])


@pytest.mark.repeat_in_stress
def test_the_library_installs_no_handler(own_handlers):
    cs = ContextSet([{"beliefs": {"area": {"centre": 0.5}}, "turn": 0}])
    respond_many(["handcrafted", "handcrafted"], cs, workers=2)
    assert get_executor("local:2").map(abs, [-1, -2]) == [1, 2]
    assert _handlers() == own_handlers
    behavsim.raise_if_interrupted()  # outside a command: nothing to raise


# ------------------------------------------------------------------ the interrupt is never lost
@pytest.mark.repeat_in_stress
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_swallowed_interrupt_still_ends_the_command_as_interrupted(monkeypatch, capsys, sig):
    calls = []

    def command(args):
        try:
            _self_signal(sig)
        except KeyboardInterrupt:  # a library that swallows it
            pass
        calls.append("went on")
        try:  # the next stage boundary raises it again
            behavsim.raise_if_interrupted()
        except KeyboardInterrupt:
            calls.append("raised again")
        return 0

    _as_scores(monkeypatch, command)
    assert cli.main(["scores"]) == 130
    assert calls == ["went on", "raised again"]
    assert capsys.readouterr().err.splitlines() == ["interrupted"]


@pytest.mark.repeat_in_stress
def test_an_interrupt_landing_in_a_destructor_is_not_lost_nor_printed(monkeypatch, capsys):
    class Finalised:
        def __del__(self):
            _self_signal(signal.SIGINT)  # the KeyboardInterrupt cannot leave a __del__

    def command(args):
        obj = Finalised()
        del obj  # Python would print "Exception ignored in: ... KeyboardInterrupt"
        return 0

    _as_scores(monkeypatch, command)
    assert cli.main(["scores"]) == 130
    assert capsys.readouterr().err.splitlines() == ["interrupted"]


@pytest.mark.repeat_in_stress
def test_an_interrupt_turned_into_another_error_is_an_interrupt(monkeypatch, capsys):
    def command(args):  # as matplotlib did with SIGTERM while drawing a figure
        try:
            _self_signal(signal.SIGTERM)
        except KeyboardInterrupt:
            raise ValueError("Invalid bounding box") from None

    _as_scores(monkeypatch, command)
    assert cli.main(["scores"]) == 130
    assert capsys.readouterr().err.splitlines() == ["interrupted"]


@pytest.mark.repeat_in_stress
def test_a_second_signal_does_not_cut_the_clean_up_short(monkeypatch, capsys):
    cleaned = []

    def command(args):
        try:
            _self_signal(signal.SIGINT)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # a second signal while cleaning up
            time.sleep(0.2)
            os.kill(os.getpid(), signal.SIGINT)  # and a third
            time.sleep(0.2)
            cleaned.append(True)

    _as_scores(monkeypatch, command)
    assert cli.main(["scores"]) == 130
    assert cleaned == [True]
    assert capsys.readouterr().err.splitlines() == ["interrupted"]


@pytest.mark.repeat_in_stress
def test_a_signal_after_the_work_still_says_interrupted(monkeypatch, capsys):
    def command(args):
        from behavsim._interrupt import _ACTIVE  # private: the handler state the test inspects

        _ACTIVE.closing = True  # the result is being reported: the signal is recorded only
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
        return 0

    _as_scores(monkeypatch, command)
    assert cli.main(["scores"]) == 130
    assert capsys.readouterr().err.splitlines() == ["interrupted"]


# ------------------------------------------------------------------ workers
def _handlers_here(_):
    return [signal.getsignal(s) for s in SIGNALS], os.getpid()


@pytest.mark.repeat_in_stress
def test_workers_ignore_both_signals():
    out = get_executor("local:2").map(_handlers_here, range(4))
    assert all(h == [signal.SIG_IGN, signal.SIG_IGN] for h, _ in out)
    assert {pid for _, pid in out} - {os.getpid()}  # really other processes


def _reporting(item, report):
    for k in range(3):
        report((item, k))
    return item * 10


@pytest.mark.repeat_in_stress
@pytest.mark.parametrize("spec", ["local:1", "local:2"])
def test_progress_arrives_before_each_result_in_order(spec):
    events = []
    got = get_executor(spec).map(
        _reporting,
        [1, 2, 3],
        on_progress=lambda i, m: events.append(("p", i, m)),
        on_result=lambda i, r: events.append(("r", i, r)),
    )
    assert got == [10, 20, 30]
    for i, item in enumerate([1, 2, 3]):
        mine = [e for e in events if e[1] == i]
        assert mine == [("p", i, (item, 0)), ("p", i, (item, 1)), ("p", i, (item, 2)), ("r", i, item * 10)]


def _sleep_or_fail(item, report):
    report(os.getpid())
    if item == 0:
        time.sleep(0.5)
        raise RuntimeError("task 0 failed")
    time.sleep(60)
    return item


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"


@pytest.mark.repeat_in_stress
def test_a_failed_task_stops_the_others_at_once_and_leaves_no_worker():
    pids = []
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="task 0 failed"):
        get_executor("local:2").map(_sleep_or_fail, [0, 1, 2], on_progress=lambda i, pid: pids.append(pid))
    assert time.monotonic() - t0 < 30  # not waiting for the 60-second tasks
    assert pids and not [p for p in pids if _alive(p)]


@pytest.mark.repeat_in_stress
def test_an_interrupted_command_stops_its_workers_at_once(monkeypatch, capsys):
    pids = []

    def command(args):
        def progress(i, pid):
            pids.append(pid)
            if len(pids) == 2:
                os.kill(os.getpid(), signal.SIGINT)

        get_executor("local:2").map(_sleep_or_fail, [1, 2, 3], on_progress=progress)
        return 0

    _as_scores(monkeypatch, command)
    t0 = time.monotonic()
    assert cli.main(["scores"]) == 130
    assert time.monotonic() - t0 < 30
    assert len(pids) == 2 and not [p for p in pids if _alive(p)]
    assert capsys.readouterr().err.splitlines() == ["interrupted"]


# ------------------------------------------------------------------ the pool reproduction
POOL_SCRIPT = textwrap.dedent("""
    import multiprocessing, sys
    from behavsim.cli import main

    def f(x):
        return x * x

    if __name__ == "__main__":
        assert main(["scores"]) == 0
        for k in range(200):
            with multiprocessing.Pool(2) as p:
                assert p.map(f, range(50)) == [x * x for x in range(50)]
        print("pools:", k + 1)
""")


def test_pools_after_main_finish(tmp_path, spawn):
    """issue 22: after main(["scores"]) a multiprocessing.Pool map, 200 times, hung when the CLI's
    SIGTERM handler leaked into the pool's workers (one stuck in it, terminate() waiting)."""
    script = tmp_path / "pools.py"
    script.write_text(POOL_SCRIPT)
    proc = spawn([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("the pools hung after main() returned")
    assert proc.returncode == 0, err[-2000:]
    assert out.splitlines()[-1] == "pools: 200"


# ------------------------------------------------------------------ the program's exit status
EXEC_SCRIPT = textwrap.dedent("""
    import pkgutil, sys
    import behavsim.cli as cli

    def command(args):
        # the signal lands in code that exec runs from a string, as when a namedtuple or a
        # dataclass is made while a module is imported
        exec("import os, signal, time\\nos.kill(os.getpid(), signal.SIGINT)\\nfor _ in range(1000): time.sleep(0.01)")
        return 0

    pkgutil.resolve_name("behavsim._scores_cli")._cmd_list = command  # the 'scores' group's listing
    cli.console_main(["scores"])
""")


def _default_signals() -> None:
    """preexec_fn: SIGINT at its default disposition (a test runner started as a background job
    of a non-interactive shell has it ignored, which the command would keep)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupt_inside_exec_ends_the_program_with_130(tmp_path, spawn):
    """CI run of stop 39: ``reproduce`` interrupted ~1 s into its comparisons ended by SIGINT
    (-2) after printing "interrupted": CPython marks a KeyboardInterrupt that leaves code run by
    exec from a string as unhandled, and ``python -m`` kills itself at exit, even though the
    command caught it."""
    (tmp_path / "exec_interrupt.py").write_text(EXEC_SCRIPT)
    proc = spawn(  # run as a module, as ``python -m behavsim.cli`` is (a script's exit takes another path)
        [sys.executable, "-m", "exec_interrupt"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,
    )
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err.splitlines()) == (130, ["interrupted"])
