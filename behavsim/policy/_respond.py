"""Step 2 of the method: run a policy deterministically on every context of a context set.

``respond(policy, contexts)`` → :class:`behavsim.ResponseTable` (acts in canonical form, prompts,
per-context errors); ``respond_many(policies, contexts)`` runs many policies as tasks of an
executor (:mod:`behavsim._executor`: local worker processes by default) and returns the same
tables as a serial run, in input order; ``check_policy`` is the protocol
checker every policy kind passes.

Each adapter is given a copy of each belief with its keys in sorted order, as context-set files
store them: a table depends only on what the context-set fingerprint covers (a policy that
breaks ties by dict order answers the same on a set built in memory and on the same set loaded
from disk), and no policy can modify the caller's beliefs.

A policy that raises on a context does not stop the run: ``errors[i]`` records the exception
type and message, ``acts[i]`` is ``None``, and the count is reported (``strict=True`` turns the
first failure into an error). An act string that does not parse is an error for that context too.
A text-only answer (an end-to-end model's prompt without an act) is not: ``acts[i]`` is ``None``
with ``errors[i]`` ``None`` and the prompt kept.

What a model reads (:attr:`Adapter.reads`) is checked first: a set that has none of it — no
histories for a model that reads histories, no belief states for one that reads beliefs — is
refused before the first context with :class:`UnanswerableContexts`, naming the set and how to
make one; a context of a mixed set without it is an error of that context.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from .._acts import canonical_act
from .._contexts import ContextSet
from .._errors import BehavsimError, ConfigError
from .._executor import LocalExecutor, get_executor
from .._inputs import as_contexts
from .._interrupt import raise_if_interrupted
from .._io import canonical_copy
from .._tables import ResponseTable
from ._protocol import Response, reads_of
from ._specs import as_adapter, parse_spec

__all__ = [
    "respond",
    "respond_many",
    "check_policy",
    "PolicyFailed",
    "PolicyErrorsWarning",
    "PolicyCheckError",
    "error_text",
    "UnanswerableContexts",
    "MissingInput",
    "answer_context",
    "check_inputs",
]

_PROGRESS_MIN = 2000  # contexts (summed over policies) from which a progress bar is shown by default


class PolicyFailed(BehavsimError, RuntimeError):
    """A policy raised on a context while ``strict=True``."""


class PolicyCheckError(BehavsimError, AssertionError):
    """A policy broke the protocol in :func:`check_policy`."""


class PolicyErrorsWarning(UserWarning):
    """A policy failed on some contexts (recorded in the table's ``errors``)."""


def error_text(exc: BaseException) -> str:
    """How a policy's exception is recorded in a table: ``Type: first line of the message``.
    An exception with ``recorded = True`` (a failure recorded elsewhere) keeps its message alone."""
    if getattr(exc, "recorded", False):
        return str(exc)
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg and msg[0] else type(exc).__name__


class UnanswerableContexts(ConfigError):
    """A context set has nothing a policy reads (no histories for an end-to-end model, no belief
    states for a modular policy); raised before the first context."""


class MissingInput(BehavsimError, ValueError):
    """One context lacks what the policy reads (recorded as that context's error)."""


#: How to make contexts with histories, for the messages that refuse a set without them.
HISTORY_HINT = (
    "collect contexts with dialogue histories (`behavsim contexts collect --policy handcrafted -o ccol.jsonl`) "
    "or import logged dialogues (`behavsim contexts import DIALOGUES.jsonl -o logged.jsonl`)"
)


def _set_name(contexts: ContextSet) -> str:
    """A context set as a message names it: its file, else its builder and fingerprint."""
    if contexts.source:
        return repr(contexts.source)
    builder = contexts.meta.get("builder") if isinstance(contexts.meta, dict) else None
    return f"({builder or 'built in memory'}, {contexts.fingerprint})"


def check_inputs(adapter: Any, contexts: ContextSet) -> None:
    """Refuse a context set that has nothing ``adapter`` reads (:class:`UnanswerableContexts`)."""
    reads = reads_of(adapter)
    if "history" in reads and "belief" not in reads and not contexts.has_histories:
        raise UnanswerableContexts(
            f"policy {adapter.id!r} reads dialogue histories, but context set {_set_name(contexts)} has none "
            f"(belief states only, as the generated grid); {HISTORY_HINT}"
        )
    if "belief" in reads and "history" not in reads and len(contexts) and contexts.beliefs.count(None) == len(contexts):
        raise UnanswerableContexts(
            f"policy {adapter.id!r} reads belief states, but context set {_set_name(contexts)} is text only "
            "(dialogue histories without beliefs); give it a set with belief states (e.g. the same contexts "
            "before their beliefs were removed)"
        )


def answer_context(
    adapter: Any,
    belief: Any,
    history: Any = None,
    *,
    context_id: str | None = None,
    context_meta: Any = None,
) -> Response:
    """One context answered by ``adapter`` with what it reads: the belief state, the history
    (``history=``) or both. A context without what the adapter needs raises :class:`MissingInput`."""
    reads = reads_of(adapter)
    missing = _missing_input(reads, belief, history)
    if missing is not None:
        raise missing
    if "history" in reads:
        return adapter.respond_one(belief, context_id=context_id, context_meta=context_meta, history=history)
    return adapter.respond_one(belief, context_id=context_id, context_meta=context_meta)


def _missing_input(reads: tuple[str, ...], belief: Any, history: Any) -> MissingInput | None:
    """The :class:`MissingInput` of a context that lacks what a model reading ``reads`` needs, or None."""
    if "history" in reads:
        if history is None and (belief is None or "belief" not in reads):
            return MissingInput("the context has no dialogue history (this policy reads histories)")
        return None
    if belief is None:
        return MissingInput("the context has no belief state (this policy reads belief states)")
    return None


def _progress_bar(total: int, desc: str, progress: bool | None):
    show = progress if progress is not None else (total >= _PROGRESS_MIN and sys.stderr.isatty())
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="ctx", leave=False, file=sys.stderr)


def _warn_errors(table: ResponseTable) -> None:
    failed = [e for e in table.errors if e is not None]
    if failed:
        warnings.warn(
            f"policy {table.id!r} failed on {len(failed)} of {len(table)} contexts (recorded in the "
            f"table's errors; first: {failed[0]})",
            PolicyErrorsWarning,
            stacklevel=3,
        )


def respond(
    policy: Any,
    contexts: ContextSet | str | os.PathLike,
    *,
    strict: bool = False,
    policy_id: str | None = None,
    progress: bool | None = None,
    repeat: int = 1,
    per_context: bool = False,
    **options: Any,
) -> ResponseTable:
    """Run one policy on every context of ``contexts`` (a :class:`~behavsim.ContextSet` or the path
    of a saved one); returns its :class:`~behavsim.ResponseTable`.

    ``policy``: a policy spec string (``behavsim.list_policy_kinds()``), an
    :class:`~behavsim.Adapter`, a policy object (``act(belief) -> Response``) or a callable
    ``belief -> act | (act, prompt) | Response``. ``policy_id`` overrides the table's policy id.
    A context on which the policy raises (or returns an unparseable act) is recorded as an error
    for that context — ``errors[i]`` = exception type and message, act ``None`` — unless
    ``strict``, which raises :class:`PolicyFailed`; the count is reported with a
    :class:`PolicyErrorsWarning` (and is ``table.n_errors``). ``progress``: a progress bar
    (default: for long runs on a terminal). ``repeat``: ask every context ``K`` times
    (:meth:`~behavsim.Adapter.for_repeat`); the table keeps every answer and each context's
    self-agreement (``table.agreement``, ``table.self_agreement_tmr``; :mod:`behavsim._repeats`).
    A policy that answers many contexts at once (:meth:`~behavsim.Adapter.respond_batch`: the
    built-in GP-SARSA and handcrafted policies, end-to-end models) is asked block by block;
    ``per_context``: one context at a time instead, the reference path (the same table).
    ``options`` go to the policy kind's factory (e.g. ``pydial_root``, ``domain``).
    """
    table = _respond(
        policy,
        contexts,
        strict=strict,
        policy_id=policy_id,
        progress=progress,
        options=options,
        repeat=repeat,
        per_context=per_context,
    )
    _warn_errors(table)
    return table


def _check_repeat(repeat: Any) -> int:
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ConfigError(f"repeat: expected a positive integer (how often each context is asked), got {repeat!r}")
    return repeat


def _respond(
    policy: Any,
    contexts: Any,
    *,
    strict: bool,
    policy_id: str | None,
    progress: bool | None,
    options: dict[str, Any],
    repeat: int = 1,
    per_context: bool = False,
) -> ResponseTable:
    contexts = as_contexts(contexts)
    repeat = _check_repeat(repeat)
    if policy_id is not None and (not isinstance(policy_id, str) or not policy_id):
        raise ConfigError(f"policy_id: expected a non-empty string, got {policy_id!r}")
    adapter = as_adapter(policy, **options)
    meta = dict(adapter.meta)
    if policy_id is not None:
        meta["id"] = policy_id
    check_inputs(adapter, contexts)
    adapter.check_contexts(contexts)
    bar = _progress_bar(len(contexts) * repeat, meta["id"], progress)
    try:
        runs = [
            _answer_all(adapter.for_repeat(r), contexts, meta["id"], strict, bar, per_context) for r in range(repeat)
        ]
    finally:
        if bar is not None:
            bar.close()
    acts, prompts, errors, raws = runs[0]
    repeats = None
    if repeat > 1:
        repeats = [
            [{"act": run[0][i], "prompt": run[1][i], "error": run[2][i], "raw": run[3][i]} for run in runs[1:]]
            for i in range(len(contexts))
        ]
    return ResponseTable(
        policy=meta,
        context_fingerprint=contexts.fingerprint,
        acts=acts,
        prompts=prompts,
        errors=errors,
        context_ids=list(contexts.ids),
        raws=raws,
        repeats=repeats,
    )


#: Contexts per call of :meth:`Adapter.respond_batch` (between two, an interrupt is taken and
#: the progress bar moves).
BLOCK = 4096


def _answer_all(
    adapter: Any, contexts: ContextSet, pid: str, strict: bool, bar: Any, per_context: bool = False
) -> tuple[list, ...]:
    """One pass of ``adapter`` over every context: the acts, prompts, errors and raw texts —
    block by block through :meth:`Adapter.respond_batch` when the adapter answers many at once
    (unless ``per_context``), else one context at a time (the reference)."""
    if not per_context:
        out = _answer_batched(adapter, contexts, pid, strict, bar)
        if out is not None:
            return out
    n = len(contexts)
    acts: list[str | None] = [None] * n
    prompts: list[str | None] = [None] * n
    errors: list[str | None] = [None] * n
    raws: list[str | None] = [None] * n
    adapter.prepare(contexts)
    with adapter.session():
        for i, (belief, cid, cmeta) in enumerate(zip(contexts.beliefs, contexts.ids, contexts.metas)):
            raise_if_interrupted()
            try:
                history = contexts.history(i)
                r: Any = answer_context(
                    adapter,
                    canonical_copy(belief),
                    None if history is None else canonical_copy(history),
                    context_id=cid,
                    context_meta=dict(cmeta),
                )
            except Exception as exc:  # a failing policy is recorded per context
                r = exc
            acts[i], prompts[i], errors[i], raws[i], failure = _read_answer(r)
            if strict and failure is not None:
                _fail(pid, contexts, i, failure)
            if bar is not None:
                bar.update(1)
    return acts, prompts, errors, raws


def _answer_batched(adapter: Any, contexts: ContextSet, pid: str, strict: bool, bar: Any) -> tuple[list, ...] | None:
    """The acts, prompts, errors and raw texts of every context, answered block by block with
    :meth:`Adapter.respond_batch`; None (nothing done) when the adapter answers one context at a
    time. An answer object given for many contexts is read once."""
    n = len(contexts)
    answers: list[Any] = [None] * n
    missing = _missing_inputs(reads_of(adapter), contexts)
    for i, exc in missing.items():
        answers[i] = exc
    todo = [i for i in range(n) if i not in missing] if missing else range(n)
    with adapter.session():
        for start in range(0, len(todo), BLOCK):
            raise_if_interrupted()
            block = todo[start : start + BLOCK]
            got = adapter.respond_batch(contexts, block)
            if got is None:
                if start:
                    raise PolicyCheckError(f"{adapter!r}: respond_batch answered some blocks and declined another")
                return None
            got = list(got)
            if len(got) != len(block):
                raise PolicyCheckError(f"{adapter!r}: respond_batch gave {len(got)} answers for {len(block)} contexts")
            if isinstance(block, range):
                answers[block.start : block.stop] = got
            else:
                for i, r in zip(block, got):
                    answers[i] = r
            if bar is not None:
                bar.update(len(block))
    if bar is not None:
        bar.update(n - len(todo))
    keys = list(map(id, answers))
    read = {k: _read_answer(r) for k, r in dict(zip(keys, answers)).items()}
    if strict:
        for i, k in enumerate(keys):
            failure = read[k][4]
            if failure is not None:
                _fail(pid, contexts, i, failure)
    rows = list(map(read.__getitem__, keys))
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]


def _missing_inputs(reads: tuple[str, ...], contexts: ContextSet) -> dict[int, MissingInput]:
    """The contexts that lack what a model reading ``reads`` needs, with their :class:`MissingInput`."""
    beliefs = contexts.beliefs
    histories = contexts.histories if contexts.histories is not None else [None] * len(beliefs)
    if "history" in reads:
        if "belief" in reads:
            lack = [i for i, (b, h) in enumerate(zip(beliefs, histories)) if h is None and b is None]
        else:
            lack = [i for i, h in enumerate(histories) if h is None]
    else:
        lack = [i for i, b in enumerate(beliefs) if b is None]
    out = {}
    for i in lack:
        exc = _missing_input(reads, beliefs[i], histories[i])
        assert exc is not None
        out[i] = exc
    return out


def _read_answer(r: Any) -> tuple[str | None, str | None, str | None, str | None, Exception | None]:
    """``(act, prompt, error, raw, failure)`` of an answer ``r`` (a :class:`Response`, or the exception
    raised in its place): the act in canonical form, or the error text and the exception."""
    raw = None
    try:
        if isinstance(r, Exception):
            raise r
        raw = r.raw if isinstance(getattr(r, "raw", None), str) else None
        act = None if r.act is None else canonical_act(r.act)
        prompt = r.prompt
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(f"the prompt must be a string or None, got {type(prompt).__name__}")
        if act is None and prompt is None:
            raise TypeError("the answer has neither an act nor a prompt")
    except Exception as exc:  # a failing policy is recorded per context
        kept = getattr(exc, "raw", raw)  # an answer that could not be used keeps its text
        return None, None, error_text(exc), kept if isinstance(kept, str) else None, exc
    return act, prompt, None, raw, None


def _fail(pid: str, contexts: ContextSet, i: int, exc: Exception) -> None:
    """``strict``: the first context a policy failed on ends the run."""
    raise PolicyFailed(f"policy {pid!r} failed on context {i} (id {contexts.ids[i]!r}): {error_text(exc)}") from exc


def check_policy(policy: Any, contexts: ContextSet | Iterable[dict] | str | os.PathLike, **options: Any) -> int:
    """The protocol checker, run by the tests over every policy kind: on ``contexts`` (a
    :class:`~behavsim.ContextSet`, its path, or belief states) the policy answers every context with a
    parseable act or a prompt (else :class:`PolicyFailed`; a set without what it reads:
    :class:`UnanswerableContexts`), two runs give identical tables — the second one context at a
    time, so a policy that answers many at once gives the answers of its per-context path — the contexts (beliefs and
    histories) are left unchanged, and its metadata has string ``id``, ``name`` and ``kind`` (else
    :class:`PolicyCheckError`). Returns the number of contexts checked."""
    if isinstance(contexts, (str, os.PathLike)):
        contexts = as_contexts(contexts)
    elif not isinstance(contexts, ContextSet):
        contexts = ContextSet(list(contexts))
    adapter = as_adapter(policy, **options)
    for key in ("id", "name", "kind"):
        if not isinstance(adapter.meta.get(key), str) or not adapter.meta[key]:
            raise PolicyCheckError(f"{adapter!r}: metadata {key!r} must be a non-empty string")
    before = json.dumps([contexts.beliefs, contexts.histories], sort_keys=True)
    runs = []
    for per_context in (False, True):
        t = _respond(
            adapter, contexts, strict=True, policy_id=None, progress=False, options={}, per_context=per_context
        )
        runs.append(json.dumps([t.header(), t.rows()], sort_keys=True))
    if runs[0] != runs[1]:
        raise PolicyCheckError(
            f"{adapter.id}: two runs on the same contexts gave different tables (the first as the policy answers "
            "many contexts at once, the second one at a time)"
        )
    if json.dumps([contexts.beliefs, contexts.histories], sort_keys=True) != before:
        raise PolicyCheckError(f"{adapter.id}: the contexts were modified")
    return len(contexts)


# ----------------------------------------------------------------------------- many policies
def _picklable(obj: Any) -> bool:
    if isinstance(obj, (str, os.PathLike)):
        return True
    try:
        pickle.dumps(obj)
        return True
    except Exception:
        return False


#: The key under which respond_many hands ``repeat`` to its tasks (inside the factory options, so
#: that the task tuples of every executor keep their shape); taken out before the factory sees them.
_REPEAT_OPTION = "__behavsim_repeat__"
#: The same for ``per_context``.
_PER_CONTEXT_OPTION = "__behavsim_per_context__"


def _run_job(contexts: ContextSet, job: tuple[Any, bool, str | None, dict[str, Any]]) -> ResponseTable:
    """One policy's table on the context set (``job``: policy, strict, policy id, options)."""
    policy, strict, policy_id, options = job
    options = dict(options)
    repeat = options.pop(_REPEAT_OPTION, 1)
    per_context = options.pop(_PER_CONTEXT_OPTION, False)
    return _respond(
        policy,
        contexts,
        strict=strict,
        policy_id=policy_id,
        progress=False,
        options=options,
        repeat=repeat,
        per_context=per_context,
    )


def _respond_task(contexts: ContextSet, job: tuple[Any, bool, str | None, dict[str, Any]]) -> tuple[str, Any]:
    """One policy on the shared context set, as a task: ``("ok", table)`` or ``("error", exc)``."""
    try:
        return "ok", _run_job(contexts, job)
    except BehavsimError as exc:
        try:  # exceptions with custom constructors do not always survive pickling
            pickle.loads(pickle.dumps(exc))
            return "error", exc
        except Exception:
            return "error", ConfigError(str(exc))


def respond_many(
    policies: Sequence[Any],
    contexts: ContextSet | str | os.PathLike,
    *,
    workers: int | None = None,
    strict: bool = False,
    policy_ids: Sequence[str | None] | None = None,
    progress: bool | None = None,
    executor: Any = None,
    on_result: Any = None,
    repeat: int = 1,
    per_context: bool = False,
    keep: bool = True,
    **options: Any,
) -> list[ResponseTable]:
    """:func:`respond` for many policies on one context set (or its path), in parallel processes.

    ``workers`` defaults to ``min(len(policies), os.cpu_count())``; with one worker everything runs
    in this process. Results come in input order and equal a serial run's. Spec strings are
    checked (kind, options) before any process starts. ``policy_ids``: one id (or ``None``) per
    policy. Items that are not spec strings (adapters, policy objects, callables) run in other
    processes when they can be pickled, else in this one. ``options`` go to every kind's factory.
    ``executor``: where the policies run (:func:`behavsim.get_executor`: ``"local"``, the default,
    ``"local:N"`` for ``N`` workers, ``"ray[:ADDRESS]"``: tasks of consecutive policies (at most
    :data:`MAX_TASKS`) on a Ray cluster, the context set put once into its object store; files
    named by specs must be readable at the same path on every node); the tables are the same. ``on_result(i, table)`` is called in this
    process as each policy's table is ready (e.g. to save it at once); ``keep=False``: the tables
    are only handed to ``on_result``, none is kept (an empty list is returned), so that many large
    tables need not fit in memory at once. ``repeat``, ``per_context``: as in :func:`respond`, for
    every policy.
    """
    where = get_executor(executor)
    if not where.is_local and workers is not None:
        raise ConfigError(f"workers: applies to the local executor only, not to {where.spec!r}")
    if where.is_local and workers is None:
        workers = getattr(where, "workers", None)
    contexts = as_contexts(contexts)
    repeat = _check_repeat(repeat)
    if repeat > 1:
        options = {**options, _REPEAT_OPTION: repeat}
    if per_context:
        options = {**options, _PER_CONTEXT_OPTION: True}
    specs = list(policies)
    if not specs:
        raise ConfigError("policies: expected at least one policy")
    ids = list(policy_ids) if policy_ids is not None else [None] * len(specs)
    if len(ids) != len(specs):
        raise ConfigError(f"policy_ids: expected {len(specs)} entries (one per policy), got {len(ids)}")
    for s in specs:
        if isinstance(s, str):
            parse_spec(s)  # fail fast on bad specs
    n_workers = min(len(specs), os.cpu_count() or 1) if workers is None else workers
    if not isinstance(n_workers, int) or isinstance(n_workers, bool) or n_workers < 1:
        raise ConfigError(f"workers: expected a positive integer, got {workers!r}")
    bar = _progress_bar(len(specs) * len(contexts), "respond", progress)

    def one(i: int) -> ResponseTable:
        return _run_job(contexts, (specs[i], strict, ids[i], options))

    results: list[ResponseTable | None] = [None] * len(specs)

    def done(i: int, table: ResponseTable) -> None:
        if bar is not None:
            bar.update(len(contexts))
        if keep:
            results[i] = table
        else:
            _warn_errors(table)
        if on_result is not None:
            on_result(i, table)

    try:
        if where.is_local and (n_workers == 1 or len(specs) == 1):
            for i in range(len(specs)):
                raise_if_interrupted()
                done(i, one(i))
        else:
            if where.is_local:
                where = LocalExecutor(n_workers)
            _respond_on(where, specs, ids, contexts, strict, options, one, done)
        tables = [t for t in results if t is not None]
        for t in tables:
            _warn_errors(t)
        return tables
    finally:
        if bar is not None:
            bar.close()


#: A non-local executor's tasks answer this many policies' tables at most in all (consecutive
#: policies share a task: a node reads the context set once per task, not once per policy).
MAX_TASKS = 64


def _respond_on(executor, specs, ids, contexts, strict, options, one, done) -> None:
    """The policies as tasks of an executor, the context set shared; policies that cannot be
    pickled run here. ``done(i, table)`` receives each table. A local pool's task answers one
    policy (its workers read the shared set once); another executor's answers a group of
    consecutive policies."""
    remote = [i for i, s in enumerate(specs) if _picklable(s)]
    for i in sorted(set(range(len(specs))) - set(remote)):
        done(i, one(i))
    size = 1 if executor.is_local else -(-len(remote) // MAX_TASKS)
    groups = [remote[k : k + size] for k in range(0, len(remote), size)]

    def finished(k: int, outs: list[tuple[str, Any]]) -> None:
        for i, (status, value) in zip(groups[k], outs):
            if status == "error":
                raise value
            done(i, value)

    cwd = os.getcwd()  # relative paths in specs are the driver's
    executor.map(
        _remote_respond_task,
        [(cwd, [(specs[i], strict, ids[i], options) for i in group]) for group in groups],
        shared=contexts,
        on_result=finished,
        keep=False,
    )


def _remote_respond_task(contexts: ContextSet, job: tuple[str, list[tuple]]) -> list[tuple[str, Any]]:
    """:func:`_respond_task` of a group of policies, possibly on another machine: paths in specs
    resolve against the driver's working directory when this node has it (a shared file system).
    The policies of a group share the context set's per-context work (a process's cache)."""
    cwd, jobs = job
    if os.path.isdir(cwd) and os.getcwd() != cwd:
        os.chdir(cwd)
    out = []
    for inner in jobs:
        out.append(_respond_task(contexts, inner))
        if out[-1][0] == "error":
            break
    return out
