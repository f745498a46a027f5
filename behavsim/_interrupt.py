"""Interrupts (SIGINT, SIGTERM) are the business of the command that runs, not of the process.

* :func:`command_signals` — used by :func:`behavsim.cli.main` around one command: it installs
  handlers for SIGINT and SIGTERM on entry and puts the previous ones back on exit, however the
  command ends (a result, an error, an interrupt, ``SystemExit`` from argparse). The library API
  installs none.
* The **first** signal records the request and raises :class:`KeyboardInterrupt` where the
  command is; the command's clean-up (workers stopped, partial files removed) runs as the
  exception unwinds, and the command ends with exit status 130 and the line ``interrupted``.
* The request cannot be lost: when the :class:`KeyboardInterrupt` is swallowed (it landed in a
  ``__del__`` or a callback, where Python would print "Exception ignored in ...", silenced
  here) or turned into another exception by a library, the command still ends with 130 and
  ``interrupted``; and :func:`raise_if_interrupted`, called at stage boundaries and as tasks
  finish, raises it again there, so that the work stops promptly.
* Clean-ups that must run to the end (stopping workers) run in :func:`interrupts_deferred`: a
  first signal there is recorded and raises nothing.
* Later signals are recorded and raise nothing: a second Ctrl-C cannot cut the clean-up short,
  nor can a :class:`KeyboardInterrupt` escape the command (CPython then ends the whole process
  by SIGINT, return code -2, with workers and temporary files left behind).
* Worker processes ignore both signals (:func:`ignore_interrupts`, in their initializer): their
  parent stops them, and they die with it (:func:`behavsim._util.die_with_parent`).

Outside a command nothing is recorded, and :func:`raise_if_interrupted` costs one attribute read.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "INTERRUPT_SIGNALS",
    "InterruptRequest",
    "command_signals",
    "interrupt_requested",
    "raise_if_interrupted",
    "interrupts_deferred",
    "interrupt_handled",
    "reclaim_signals",
    "on_command_exit",
    "ignore_interrupts",
]

#: The signals a command handles as an interrupt.
INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class InterruptRequest:
    """What the handlers of one command have seen: the first signal (``signum``), how many
    signals arrived, and whether the command is closing (its result being reported)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.count = 0
        self.closing = False
        self.deferred = 0
        self.signals: list[signal.Signals] = []  # the signals this command handles
        self.exit_status = 130  # for command_signals(restore=False): the status the process exits with
        self.exits: list[Callable[[], None]] = []

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def handler(self, signum: int, frame: Any) -> None:  # noqa: ARG002
        self.count += 1
        if self.signum is None:
            self.signum = signum
            if not self.closing and not self.deferred:
                raise KeyboardInterrupt
        # later signals: recorded only (the clean-up of the first one is running)


#: The request of the command running in this process (innermost), or None.
_ACTIVE: InterruptRequest | None = None


@contextlib.contextmanager
def command_signals(restore: bool = True) -> Iterator[InterruptRequest]:
    """Handle SIGINT and SIGTERM as interrupts of the command run inside; the previous handlers
    are back when the block is left. A signal ignored on entry stays ignored (a background job
    of a non-interactive shell starts with SIGINT ignored, as POSIX asks; ``nohup`` and the like
    decide for the command). Outside the main thread (where Python allows no handler) nothing
    is installed and the request stays empty.

    ``restore=False`` is for a process that ends with the command (the ``behavsim`` program):
    instead of the previous handlers, a signal after the block ends the process at once with
    ``req.exit_status`` — a second Ctrl-C while Python finalises (joins threads, runs atexit
    handlers) neither turns the command's status into a death by signal nor waits for it; from
    the atexit calls on (the last moments of the process) the signals are ignored."""
    global _ACTIVE
    req = InterruptRequest()
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in INTERRUPT_SIGNALS:
            try:
                old = signal.getsignal(sig)
                if old == signal.SIG_IGN:  # e.g. SIGINT of a background job (POSIX): stays ignored
                    continue
                previous[sig] = old
                signal.signal(sig, req.handler)
                req.signals.append(sig)
            except (ValueError, OSError):  # pragma: no cover (an embedded interpreter)
                previous.pop(sig, None)
    outer, _ACTIVE = _ACTIVE, req
    hook = sys.unraisablehook

    def quiet_hook(unraisable: Any) -> None:
        # the interrupt landed in a __del__ or a callback, which cannot pass it on: it is
        # recorded, and the command ends as interrupted; no "Exception ignored in" traceback
        if req.requested and isinstance(unraisable.exc_value, KeyboardInterrupt):
            return
        hook(unraisable)

    sys.unraisablehook = quiet_hook
    try:
        yield req
    finally:
        req.closing = True
        try:
            for fn in reversed(req.exits):
                try:
                    fn()
                except Exception:  # a clean-up that fails must not hide the command's result
                    pass
        finally:
            _ACTIVE = outer
            if sys.unraisablehook is quiet_hook:
                sys.unraisablehook = hook
            for signum, old in previous.items():
                if restore:
                    signal.signal(signum, old if old is not None else signal.SIG_DFL)
                else:
                    signal.signal(signum, functools.partial(_exit_now, req))
            if not restore and previous:
                # Python puts SIG_DFL back for its handlers late in finalisation, where a signal
                # would then kill the process: from the last atexit call on, they are ignored
                atexit.register(ignore_interrupts)


def _exit_now(req: InterruptRequest, signum: int, frame: Any) -> None:  # noqa: ARG001
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream
            pass
    os._exit(req.exit_status)


def interrupt_requested() -> bool:
    """Whether the command running in this process received SIGINT or SIGTERM."""
    req = _ACTIVE
    return req is not None and req.signum is not None


def raise_if_interrupted() -> None:
    """Raise :class:`KeyboardInterrupt` if the running command was interrupted (again, if the
    first one was swallowed); called at stage boundaries and as tasks finish. Nothing outside a
    command, nor while the command reports its result."""
    req = _ACTIVE
    if req is not None and req.signum is not None and not req.closing:
        raise KeyboardInterrupt


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """A clean-up that an interrupt must not cut short (workers being stopped, a local Ray shut
    down): a first signal inside is recorded and raises nothing (the command still ends as
    interrupted)."""
    req = _ACTIVE
    if req is None:
        yield
        return
    req.deferred += 1
    try:
        yield
    finally:
        req.deferred -= 1


def interrupt_handled() -> None:
    """A command that stops at an interrupt by design (``monitor --follow`` runs until Ctrl-C)
    says it has handled it: the command then ends with its own status. A later signal is a new
    interrupt."""
    req = _ACTIVE
    if req is not None:
        req.signum = None


def reclaim_signals() -> None:
    """Install the running command's handlers again, after a library replaced them: ``ray.init``
    sets a SIGTERM handler of its own (``sys.exit``), and Ray's core worker a C-level one that
    aborts the process."""
    req = _ACTIVE
    if req is None or threading.current_thread() is not threading.main_thread():
        return
    for sig in req.signals:
        signal.signal(sig, req.handler)


def on_command_exit(fn: Callable[[], None]) -> bool:
    """Call ``fn()`` when the running command ends (however it ends), before its signal handlers
    are put back: e.g. a local Ray the command started is shut down. Returns False (and keeps
    nothing) outside a command."""
    req = _ACTIVE
    if req is None:
        return False
    req.exits.append(fn)
    return True


def ignore_interrupts() -> None:
    """In a worker process: SIGINT and SIGTERM are ignored (a Ctrl-C reaches the whole process
    group; the parent decides, and stops its workers itself)."""
    for sig in INTERRUPT_SIGNALS:
        try:
            signal.signal(sig, signal.SIG_IGN)
        except ValueError:  # pragma: no cover (not the main thread)
            pass
