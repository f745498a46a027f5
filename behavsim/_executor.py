"""Where the heavy stages run: local process pools (the default) or a Ray cluster.

An executor spec is a string:

* ``local`` — this machine's process pools, as behavsim always ran (workers: the stage's default);
* ``local:N`` — the same with ``N`` worker processes;
* ``ray`` — a Ray cluster: the one ``RAY_ADDRESS`` names, else a Ray started on this machine;
* ``ray:ADDRESS`` — the running Ray cluster at ``ADDRESS`` (``HOST:PORT`` of its head, or ``auto``).

:meth:`Executor.map` runs a picklable function on every item and returns the results **in input
order**, whatever order the tasks finish in; ``on_result(i, result)`` is called as each task
finishes. A task that reports its own progress is given ``report=`` when ``on_progress`` is set:
``report(msg)`` calls ``on_progress(i, msg)`` in this process (at once from a local pool, with
the task's result from Ray). One large input shared by every task (a context set, interned answers) is
given once as ``shared``: a local pool hands it to each worker process once, Ray puts it into the
object store once and passes a reference (each node fetches it once). Tasks are deterministic
functions of their inputs, so results do not depend on the executor, the node or the number of
workers. On Ray a task whose worker or node dies is retried (``max_retries``); a cluster that
cannot be reached, or Ray not installed, is a :class:`ExecutorError` of one line.

Interrupts and errors stop the work: local workers ignore SIGINT and SIGTERM and die with this
process; when a task fails or this process is interrupted, the pending tasks are cancelled and
the workers killed and joined before the exception goes on (no process is left behind); on Ray
the pending tasks are cancelled (asked for by a helper task, which Ray's core worker takes safely
while tasks finish; the cancellations awaited), and a Ray this process started for an
interrupted command is shut down.

Ray is imported only when a ``ray`` executor is used (``pip install 'behavsim[ray]'``).
"""

from __future__ import annotations

import argparse
import functools
import logging
import multiprocessing as mp
import os
import socket
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from ._errors import BehavsimError, ConfigError
from ._interrupt import (
    interrupt_requested,
    interrupts_deferred,
    on_command_exit,
    raise_if_interrupted,
    reclaim_signals,
)
from ._util import did_you_mean, die_with_parent

__all__ = [
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "ExecutorError",
    "EXECUTOR_KINDS",
    "get_executor",
    "add_executor_option",
]

#: The executor kinds a spec may name.
EXECUTOR_KINDS = ("local", "ray")

#: How often Ray retries a task whose worker or node died, by default.
DEFAULT_MAX_RETRIES = 3
#: Seconds an interrupted or failed map waits for Ray to take the cancellations of its pending tasks.
CANCEL_WAIT = 30.0

_RAY_HINT = "pip install 'behavsim[ray]'"


class ExecutorError(BehavsimError, RuntimeError):
    """The executor could not run the tasks: Ray missing, a cluster out of reach, a node lost for good."""


class Executor:
    """Runs independent tasks; see :func:`get_executor` for the specs."""

    kind: str = ""
    spec: str = ""

    def map(
        self,
        fn: Callable[..., Any],
        items: Sequence[Any],
        *,
        shared: Any = None,
        on_result: Callable[[int, Any], None] | None = None,
        on_progress: Callable[[int, Any], None] | None = None,
        keep: bool = True,
    ) -> list[Any]:
        """``[fn(shared, item) for item in items]`` (``fn(item)`` without ``shared``), run as
        tasks; results in input order; ``on_result(i, result)`` as each task finishes. With
        ``on_progress`` each task is called with ``report=``, a function of one picklable
        message: ``report(msg)`` in task ``i`` calls ``on_progress(i, msg)`` here, before
        ``on_result(i, ...)``. ``keep=False``: each result is only handed to ``on_result`` (then
        dropped: the list returned holds ``None``), for results too many to hold at once."""
        raise NotImplementedError

    @property
    def is_local(self) -> bool:
        return self.kind == "local"

    def connect(self) -> Any:
        """Make sure the tasks can run (a cluster is reached) before any work; nothing for a pool."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


def _call(fn: Callable[..., Any], shared: Any, has_shared: bool, item: Any, report: Any = None) -> Any:
    args = (shared, item) if has_shared else (item,)
    return fn(*args) if report is None else fn(*args, report=report)


def _call_collecting(fn: Callable[..., Any], shared: Any, has_shared: bool, item: Any) -> tuple[Any, list[Any]]:
    """A task whose progress messages travel back with its result (Ray)."""
    messages: list[Any] = []
    return _call(fn, shared, has_shared, item, messages.append), messages


# ----------------------------------------------------------------------------- local
_POOL_SHARED: Any = None
_POOL_PROGRESS: Any = None


def _pool_init(shared: Any, progress: Any = None) -> None:
    global _POOL_SHARED, _POOL_PROGRESS
    die_with_parent()  # SIGINT and SIGTERM ignored: this process is stopped by its parent
    _POOL_SHARED = shared
    _POOL_PROGRESS = progress


def _pool_run(fn: Callable[..., Any], has_shared: bool, item: Any, index: int = -1, with_report: bool = False) -> Any:
    report = None
    if with_report:
        queue = _POOL_PROGRESS

        def report(msg: Any) -> None:
            queue.put((index, msg))

    return _call(fn, _POOL_SHARED, has_shared, item, report)


def _mp_context() -> Any:
    """fork where there is one (POSIX): no re-import of the caller's main module."""
    return mp.get_context("fork" if "fork" in mp.get_all_start_methods() else None)


def stop_pool(pool: ProcessPoolExecutor, timeout: float = 10.0) -> None:
    """Stop a process pool now: pending tasks cancelled, the workers killed (they ignore SIGINT
    and SIGTERM) and joined, its management thread joined; an interrupt during this is recorded
    and does not cut it short."""
    with interrupts_deferred():
        procs = list((getattr(pool, "_processes", None) or {}).values())
        # taken before the shutdown, which forgets it: a management thread still running when
        # Python exits races its exit hook for the pool's wake-up pipe ("Bad file descriptor")
        thread = getattr(pool, "_executor_manager_thread", None)
        for proc in procs:
            try:
                proc.kill()
            except (OSError, ValueError, AttributeError):  # already gone
                pass
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            try:
                proc.join(timeout)
            except (OSError, ValueError, AssertionError):
                pass
        if thread is not None:
            thread.join(timeout)


class LocalExecutor(Executor):
    """Process pools on this machine; ``workers=None``: each stage's own default (about the cores)."""

    kind = "local"

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
            raise ConfigError(f"executor 'local:N': N must be a positive integer, got {workers!r}")
        self.workers = workers
        self.spec = "local" if workers is None else f"local:{workers}"

    def map(
        self,
        fn: Callable[..., Any],
        items: Sequence[Any],
        *,
        shared: Any = None,
        on_result: Callable[[int, Any], None] | None = None,
        on_progress: Callable[[int, Any], None] | None = None,
        keep: bool = True,
    ) -> list[Any]:
        items = list(items)
        has_shared = shared is not None
        n = min(len(items), self.workers or os.cpu_count() or 1)
        results: list[Any] = [None] * len(items)
        if n <= 1:
            for i, item in enumerate(items):
                raise_if_interrupted()
                report = None if on_progress is None else functools.partial(on_progress, i)
                out = _call(fn, shared, has_shared, item, report)
                if on_result is not None:
                    on_result(i, out)
                if keep:
                    results[i] = out
            return results
        ctx = _mp_context()
        queue = ctx.SimpleQueue() if on_progress is not None else None

        def drain() -> None:
            # a task's messages are written before its result: all of them are here when it is
            while queue is not None and not queue.empty():
                i, msg = queue.get()
                on_progress(i, msg)  # type: ignore[misc]

        pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_pool_init, initargs=(shared, queue))
        try:
            futures = {
                pool.submit(_pool_run, fn, has_shared, item, i, queue is not None): i for i, item in enumerate(items)
            }
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.2 if queue is not None else 1.0, return_when=FIRST_COMPLETED)
                drain()
                for f in sorted(done, key=futures.__getitem__):
                    i = futures[f]
                    out = f.result()  # a task's error, raised here
                    if on_result is not None:
                        on_result(i, out)
                    if keep:
                        results[i] = out
                raise_if_interrupted()
            pool.shutdown(wait=True)  # (an interrupt here too stops the pool)
        except BaseException:
            stop_pool(pool)
            raise
        drain()
        if queue is not None:
            queue.close()
        return results


# ----------------------------------------------------------------------------- ray
def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ExecutorError(f"executor 'ray': Ray is not installed; {_RAY_HINT}") from None
    return ray


def _runtime_env() -> dict[str, Any]:
    """What the driver passes on to the workers: its ``PYTHONPATH`` (a checkout run from source
    finds its packages on nodes that share the path) and its ``BEHAVSIM_*`` settings (e.g. the
    embedding cache folder)."""
    env = {k: v for k, v in os.environ.items() if k.startswith("BEHAVSIM_") or k == "PYTHONPATH"}
    return {"env_vars": env} if env else {}


def _unreachable(address: str | None, timeout: float = 5.0) -> str | None:
    """Why the head at ``HOST:PORT`` cannot be reached (a TCP connection to its port), or None;
    other addresses (``auto``, ``ray://``, none) are left to Ray. Ray itself would retry for
    minutes before giving up."""
    if not address or "://" in address or address == "auto":
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        return f"expected HOST:PORT, got {address!r}"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def _started_here(ray: Any) -> bool:
    """Whether ``ray.init`` started the Ray it connected to (a head node of this process) rather
    than joining a running cluster (Ray keeps no public record of it; False if unknown)."""
    try:
        node = ray._private.worker._global_node
        return bool(node is not None and node.is_head())
    except Exception:  # pragma: no cover (another Ray version)
        return False


def _cancel_refs(refs: list[Any]) -> int:
    """Cancel the tasks of ``refs`` (force): in a helper task, which borrows them (see :func:`_cancel`)."""
    import ray

    for ref in refs:
        try:
            ray.cancel(ref, force=True)
        except Exception:  # already finished or gone
            pass
    return len(refs)


def _cancel(ray: Any, refs: list[Any]) -> None:
    """Cancel the tasks of ``refs`` (force), this process being their owner.

    The cancellations are asked for by a helper task (no CPU) that borrows the references: Ray
    then takes each one on the owner's event loop, in turn with the replies of finishing tasks.
    Called from this thread, a cancellation can fall between a task's reply and its completion,
    and Ray 2.60's core worker then aborts the whole process ("Tried to complete task that was not
    pending"; about once in 50 cancellations of 300 short tasks here, never in 300 by a helper).
    If the helper cannot run (a cluster losing nodes), the cancellations are made here."""
    if not refs:
        return
    try:
        helper = ray.remote(num_cpus=0, max_retries=0)(_cancel_refs)
        ray.get(helper.remote(list(refs)), timeout=CANCEL_WAIT)
        return
    except Exception:  # the helper could not run: cancel from here
        _cancel_refs(refs)


class RayExecutor(Executor):
    """Tasks on a Ray cluster (one CPU each), retried ``max_retries`` times when a worker or node dies.

    The connection is made once per process; one already open (``ray.init`` called by the
    caller, e.g. inside a Tune or RLlib script) is used as it is."""

    kind = "ray"

    def __init__(self, address: str | None = None, *, max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise ConfigError(f"executor 'ray:ADDRESS': ADDRESS must be a host:port or 'auto', got {address!r}")
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ConfigError(f"max_retries: expected a non-negative integer, got {max_retries!r}")
        self.address = address.strip() if address is not None else None
        self.max_retries = max_retries
        self.spec = "ray" if address is None else f"ray:{self.address}"
        self.started = False  # whether this executor started a local Ray (it then shuts it down)

    def connect(self) -> Any:
        """The ``ray`` module, connected to the cluster (once per process)."""
        ray = _import_ray()
        if ray.is_initialized():
            return ray
        where = self.address or os.environ.get("RAY_ADDRESS") or "a new local Ray"
        problem = _unreachable(self.address or os.environ.get("RAY_ADDRESS"))
        if problem:
            raise ExecutorError(
                f"executor {self.spec!r}: cannot connect to the Ray cluster at {where}: {problem} "
                "(is it running? 'ray status --address ADDRESS' checks it)"
            )
        try:
            ray.init(
                address=self.address,
                runtime_env=_runtime_env() or None,
                log_to_driver=False,
                logging_level=logging.ERROR,
                include_dashboard=False if self.address is None else None,
            )
        except Exception as exc:  # Ray raises ConnectionError, TimeoutError, RuntimeError, ValueError ...
            reclaim_signals()
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ExecutorError(
                f"executor {self.spec!r}: cannot connect to the Ray cluster at {where}: {first[:200]} "
                "(is it running? 'ray status --address ADDRESS' checks it)"
            ) from None
        reclaim_signals()  # ray.init replaced a command's SIGTERM handler (and Ray's core worker, at C level)
        if _started_here(ray):
            # the Ray started here belongs to the command that started it: shut down when it ends
            self.started = True
            on_command_exit(self.shutdown)
        return ray

    def shutdown(self) -> None:
        """Shut down the local Ray this executor started (nothing for a cluster it joined)."""
        if not self.started:
            return
        self.started = False
        import ray

        with interrupts_deferred():
            if ray.is_initialized():
                ray.shutdown()

    def nodes(self) -> int:
        """The number of live nodes of the cluster."""
        ray = self.connect()
        return sum(1 for n in ray.nodes() if n.get("Alive"))

    def map(
        self,
        fn: Callable[..., Any],
        items: Sequence[Any],
        *,
        shared: Any = None,
        on_result: Callable[[int, Any], None] | None = None,
        on_progress: Callable[[int, Any], None] | None = None,
        keep: bool = True,
    ) -> list[Any]:
        items = list(items)
        if not items:
            return []
        try:
            return self._tasks(fn, items, shared, on_result, on_progress, keep)
        except BaseException as exc:
            if self.started and (interrupt_requested() or isinstance(exc, KeyboardInterrupt)):
                # a Ray started here stops when the work is interrupted (its tasks cancelled by
                # now), the task loop's references to them released first (its frames cleared)
                with interrupts_deferred():
                    traceback.clear_frames(exc.__traceback__)
                    self.shutdown()
            raise

    def _tasks(
        self,
        fn: Callable[..., Any],
        items: list[Any],
        shared: Any,
        on_result: Callable[[int, Any], None] | None,
        on_progress: Callable[[int, Any], None] | None,
        keep: bool = True,
    ) -> list[Any]:
        ray = self.connect()
        from ray import exceptions as rex

        has_shared = shared is not None
        shared_ref = ray.put(shared) if has_shared else None  # once into the object store
        options = {"num_cpus": 1, "max_retries": self.max_retries, "retry_exceptions": False}
        task = ray.remote(**options)(_call if on_progress is None else _call_collecting)
        refs = [task.remote(fn, shared_ref, has_shared, item) for item in items]
        where = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(items)
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1, timeout=1.0)
                for ref in ready:
                    i = where[ref]
                    try:
                        out = ray.get(ref)
                    except rex.RayTaskError as exc:  # the task itself raised: the original error
                        cause = getattr(exc, "cause", None)
                        if isinstance(cause, BaseException):
                            raise cause from None
                        raise
                    except (rex.RayError, OSError) as exc:
                        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                        raise ExecutorError(
                            f"executor {self.spec!r}: task {i + 1} of {len(items)} was lost after "
                            f"{self.max_retries} retries ({type(exc).__name__}: {first[:160]}); finished work is "
                            "kept: run the same command again to resume"
                        ) from None
                    if on_progress is not None:
                        out, messages = out
                        for msg in messages:
                            on_progress(i, msg)
                    if on_result is not None:
                        on_result(i, out)
                    if keep:
                        results[i] = out
                raise_if_interrupted()
        except BaseException:
            with interrupts_deferred():
                _cancel(ray, pending)
                # until Ray has taken the cancellations: a task still running when a Ray started
                # here shuts down dies with its worker and is retried, and the retry, asking the
                # raylet the driver has left for a worker, ends the whole process with status 1
                try:
                    ray.wait(pending, num_returns=len(pending), timeout=CANCEL_WAIT)
                except Exception:  # Ray already gone
                    pass
            raise
        return results


# ----------------------------------------------------------------------------- specs
def get_executor(spec: str | Executor | None = None) -> Executor:
    """The executor a spec names (see the module): ``None`` and ``"local"`` are today's process
    pools; an :class:`Executor` is returned as it is. Bad specs are a :class:`ConfigError`."""
    if spec is None:
        return LocalExecutor()
    if isinstance(spec, Executor):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"executor: expected 'local', 'local:N', 'ray' or 'ray:ADDRESS', got {spec!r}")
    kind, sep, arg = spec.strip().partition(":")
    if kind not in EXECUTOR_KINDS:
        raise ConfigError(
            f"executor: unknown kind {kind!r} in {spec!r}.{did_you_mean(kind, EXECUTOR_KINDS)} "
            "Valid: local, local:N, ray, ray:ADDRESS"
        )
    if kind == "local":
        if not sep:
            return LocalExecutor()
        if not arg.isdigit() or int(arg) < 1:
            raise ConfigError(f"executor {spec!r}: 'local:N' needs a positive number of workers N, got {arg!r}")
        return LocalExecutor(int(arg))
    if sep and not arg.strip():
        raise ConfigError(f"executor {spec!r}: 'ray:ADDRESS' needs the head's address, e.g. ray:10.0.0.5:6379")
    return RayExecutor(arg if sep else None)


def add_executor_option(parser: argparse.ArgumentParser, default: str | None = "local") -> None:
    """The ``--executor`` option of the commands whose heavy work can leave this machine."""
    parser.add_argument(
        "--executor",
        default=default,
        metavar="SPEC",
        help="where the heavy work runs: local (process pools, the default), local:N (N workers), ray (a local "
        "Ray or RAY_ADDRESS), ray:ADDRESS (a running Ray cluster; pip install 'behavsim[ray]'); "
        "results are identical",
    )
