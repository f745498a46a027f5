"""Step 2 of the framework: run policies deterministically on every context of a context set.

``respond(policy, contexts)`` → :class:`behavsim.ResponseTable` (acts in canonical form, prompts,
per-context errors); ``respond_many(specs, contexts)`` runs many policies in parallel processes
and returns the same tables as a serial run, in input order. ``behavsim respond`` is the command
line over both::

    behavsim respond --policy handcrafted --contexts grid.jsonl -o handcrafted.jsonl
    behavsim respond --policy runs/ts-seed0/ckpt-*.npz ... --contexts grid.jsonl -o tables/

Each adapter is given a copy of each belief with its keys in sorted order, as context-set files
store them: a table depends only on what the context-set fingerprint covers (a policy that
breaks ties by dict order answers the same on a set built in memory and on the same set loaded
from disk), and no policy can modify the caller's beliefs.

A policy that raises on a context does not stop the run: ``errors[i]`` records the exception
type and message, ``acts[i]`` is ``None``, and the count is reported (``strict=True`` /
``--strict`` turns the first failure into an error). An act string that does not parse is an
error for that context too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from behavsim import BehavsimError, ConfigError, ContextSet, ResponseTable, canonical_act, canonical_copy

from .adapters import RecordedFailure, as_adapter, parse_spec

__all__ = ["respond", "respond_many", "check_adapter", "PolicyFailed", "PolicyErrorsWarning", "register_respond",
           "cmd_respond"]

_PROGRESS_MIN = 2000  # contexts (summed over policies) from which a progress bar is shown by default


class PolicyFailed(BehavsimError, RuntimeError):
    """A policy raised on a context while ``strict=True``."""


class PolicyErrorsWarning(UserWarning):
    """A policy failed on some contexts (recorded in the table's ``errors``)."""


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, RecordedFailure):
        return str(exc)
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg and msg[0] else type(exc).__name__


def _context_domains(meta: Any) -> set[str]:
    """The domain rules files a context set's metadata names (subsets and unions included)."""
    if not isinstance(meta, dict):
        return set()
    found = {meta["domain_rules"]} if isinstance(meta.get("domain_rules"), str) else set()
    found |= _context_domains(meta.get("parent_meta"))
    for part in meta.get("parts") or []:
        found |= _context_domains(part)
    return found


def _check_domain(adapter: Any, contexts: ContextSet) -> None:
    """Refuse a built-in policy of one domain on contexts built on another (both may be called
    'restaurant': behavsim's domain and PyDial's CamRestaurants)."""
    domain = getattr(getattr(adapter, "policy", None), "domain", None)
    source = getattr(domain, "source", None)
    wanted = _context_domains(contexts.meta)
    if source is None or not wanted:
        return
    mine = os.path.basename(str(source))
    if any(w != mine for w in wanted):
        raise ConfigError(f"policy {adapter.id!r} works on the domain of {mine!r}, but the contexts were built on "
                          f"{', '.join(sorted(wanted))}; their belief states do not fit it")


def _check_contexts(contexts: Any) -> ContextSet:
    if not isinstance(contexts, ContextSet):
        raise ConfigError(f"contexts: expected a behavsim.ContextSet, got {type(contexts).__name__}")
    return contexts


def _progress_bar(total: int, desc: str, progress: bool | None):
    show = progress if progress is not None else (total >= _PROGRESS_MIN and sys.stderr.isatty())
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="ctx", leave=False, file=sys.stderr)


def respond(policy_or_spec: Any, contexts: ContextSet, *, strict: bool = False, policy_id: str | None = None,
            pydial_root: str | os.PathLike | None = None, progress: bool | None = None) -> ResponseTable:
    """Run one policy on every context of ``contexts``; returns its :class:`~behavsim.ResponseTable`.

    ``policy_or_spec``: a policy spec string (see :mod:`policies.adapters`), an
    :class:`~policies.adapters.Adapter`, a policy object (``act(belief) -> Response``) or a callable
    ``belief -> act | (act, prompt) | Response``. ``policy_id`` overrides the table's policy id.
    A context on which the policy raises (or returns an unparseable act) is recorded as an error
    for that context — ``errors[i]`` = exception type and message, act ``None`` — unless
    ``strict``, which raises :class:`PolicyFailed`; the count is reported with a
    :class:`PolicyErrorsWarning` (and is ``table.n_errors``). ``progress``: a progress bar
    (default: for long runs on a terminal).
    """
    table = _respond(policy_or_spec, contexts, strict=strict, policy_id=policy_id, pydial_root=pydial_root,
                     progress=progress)
    _warn_errors(table)
    return table


def _warn_errors(table: ResponseTable) -> None:
    failed = [e for e in table.errors if e is not None]
    if failed:
        import warnings

        warnings.warn(f"policy {table.id!r} failed on {len(failed)} of {len(table)} contexts (recorded in the "
                      f"table's errors; first: {failed[0]})", PolicyErrorsWarning, stacklevel=3)


def _respond(policy_or_spec: Any, contexts: ContextSet, *, strict: bool, policy_id: str | None,
             pydial_root: str | os.PathLike | None, progress: bool | None) -> ResponseTable:
    contexts = _check_contexts(contexts)
    if policy_id is not None and (not isinstance(policy_id, str) or not policy_id):
        raise ConfigError(f"policy_id: expected a non-empty string, got {policy_id!r}")
    adapter = as_adapter(policy_or_spec, pydial_root=pydial_root)
    meta = dict(adapter.meta)
    if policy_id is not None:
        meta["id"] = policy_id
    _check_domain(adapter, contexts)
    adapter.prepare(contexts)
    n = len(contexts)
    acts: list[str | None] = [None] * n
    prompts: list[str | None] = [None] * n
    errors: list[str | None] = [None] * n
    bar = _progress_bar(n, meta["id"], progress)
    try:
        with adapter.session():
            for i, (belief, cid, cmeta) in enumerate(zip(contexts.beliefs, contexts.ids, contexts.metas)):
                try:
                    r = adapter.respond_one(canonical_copy(belief), context_id=cid, context_meta=dict(cmeta))
                    act = canonical_act(r.act)
                    prompt = r.prompt
                    if prompt is not None and not isinstance(prompt, str):
                        raise TypeError(f"the prompt must be a string or None, got {type(prompt).__name__}")
                except Exception as exc:  # a failing policy is recorded per context
                    if strict:
                        raise PolicyFailed(f"policy {meta['id']!r} failed on context {i} (id {cid!r}): "
                                           f"{_error_text(exc)}") from exc
                    errors[i] = _error_text(exc)
                else:
                    acts[i], prompts[i] = act, prompt
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return ResponseTable(policy=meta, context_fingerprint=contexts.fingerprint, acts=acts, prompts=prompts,
                         errors=errors, context_ids=list(contexts.ids))


def check_adapter(policy_or_spec: Any, contexts: ContextSet, *, pydial_root: str | os.PathLike | None = None) -> int:
    """Check an adapter on ``contexts`` as :func:`policies.base.check_policy` checks a policy: it
    answers every context with a parseable act (else :class:`PolicyFailed`), two runs give
    identical tables, the contexts are left unchanged, and its metadata has string ``id``,
    ``name`` and ``kind`` (else :class:`policies.base.PolicyCheckError`). Returns the number of
    contexts."""
    import json

    from .base import PolicyCheckError

    contexts = _check_contexts(contexts)
    adapter = as_adapter(policy_or_spec, pydial_root=pydial_root)
    for key in ("id", "name", "kind"):
        if not isinstance(adapter.meta.get(key), str) or not adapter.meta[key]:
            raise PolicyCheckError(f"{adapter!r}: metadata {key!r} must be a non-empty string")
    before = json.dumps(contexts.beliefs, sort_keys=True)
    runs = []
    for _ in range(2):
        t = _respond(adapter, contexts, strict=True, policy_id=None, pydial_root=pydial_root, progress=False)
        runs.append(json.dumps([t.header(), t.rows()], sort_keys=True))
    if runs[0] != runs[1]:
        raise PolicyCheckError(f"{adapter.id}: two runs on the same contexts gave different tables")
    if json.dumps(contexts.beliefs, sort_keys=True) != before:
        raise PolicyCheckError(f"{adapter.id}: the contexts were modified")
    return len(contexts)


# ----------------------------------------------------------------------------- many policies
_WORKER_CONTEXTS: ContextSet | None = None


def _worker_init(contexts: ContextSet) -> None:
    global _WORKER_CONTEXTS
    _WORKER_CONTEXTS = contexts


def _picklable(obj: Any) -> bool:
    if isinstance(obj, (str, os.PathLike)):
        return True
    import pickle

    try:
        pickle.dumps(obj)
        return True
    except Exception:
        return False


def _worker_run(spec: Any, strict: bool, policy_id: str | None, pydial_root: Any) -> tuple[str, Any]:
    import pickle

    try:
        return "ok", _respond(spec, _WORKER_CONTEXTS, strict=strict, policy_id=policy_id, pydial_root=pydial_root,
                             progress=False)
    except BehavsimError as exc:
        try:  # exceptions with custom constructors do not always survive pickling
            pickle.loads(pickle.dumps(exc))
            return "error", exc
        except Exception:
            return "error", ConfigError(str(exc))


def respond_many(specs: Sequence[Any], contexts: ContextSet, *, workers: int | None = None, strict: bool = False,
                 policy_ids: Sequence[str | None] | None = None, pydial_root: str | os.PathLike | None = None,
                 progress: bool | None = None) -> list[ResponseTable]:
    """:func:`respond` for many policies on one context set, in parallel processes.

    ``workers`` defaults to ``min(len(specs), os.cpu_count())``; with one worker everything runs
    in this process. Results come in input order and equal a serial run's. Spec strings are
    checked (kind, options) before any process starts. ``policy_ids``: one id (or ``None``) per
    spec. Items that are not spec strings (adapters, policy objects, callables) run in other
    processes when they can be pickled, else in this one.
    """
    contexts = _check_contexts(contexts)
    specs = list(specs)
    if not specs:
        raise ConfigError("specs: expected at least one policy")
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
    try:
        if n_workers == 1 or len(specs) == 1:
            out = []
            for s, pid in zip(specs, ids):
                out.append(_respond(s, contexts, strict=strict, policy_id=pid, pydial_root=pydial_root, progress=False))
                if bar is not None:
                    bar.update(len(contexts))
            for t in out:
                _warn_errors(t)
            return out
        local = [i for i, s in enumerate(specs) if not _picklable(s)]  # e.g. lambdas: run here
        results: list[ResponseTable | None] = [None] * len(specs)
        with ProcessPoolExecutor(max_workers=n_workers, initializer=_worker_init, initargs=(contexts,)) as ex:
            futures = {i: ex.submit(_worker_run, s, strict, pid, pydial_root)
                       for i, (s, pid) in enumerate(zip(specs, ids)) if i not in local}
            try:
                for i in local:
                    results[i] = _respond(specs[i], contexts, strict=strict, policy_id=ids[i],
                                          pydial_root=pydial_root, progress=False)
                    if bar is not None:
                        bar.update(len(contexts))
                for i, f in futures.items():
                    status, value = f.result()
                    if status == "error":
                        raise value
                    results[i] = value
                    if bar is not None:
                        bar.update(len(contexts))
            except BaseException:
                for f in futures.values():
                    f.cancel()
                raise
        for t in results:
            _warn_errors(t)  # type: ignore[arg-type]
        return results  # type: ignore[return-value]
    finally:
        if bar is not None:
            bar.close()


# ----------------------------------------------------------------------------- command line
def register_respond(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``respond`` sub-command (entry point ``behavsim.commands``)."""
    from .adapters import list_adapter_kinds

    p = subparsers.add_parser(
        "respond", help="run policies on a context set: one response table per policy",
        description="Run each policy deterministically on every context of a context set and write its response "
        "table. Policy specs: handcrafted[:nlg_seed=N] | PATH.npz (GP-SARSA checkpoint) | module:function | "
        "recorded:FILE | pydial:CFG[:domain=D][:nlg=off]. A context on which a policy fails is recorded as an error "
        f"(see --strict). Adapter kinds: {', '.join(list_adapter_kinds())}.")
    p.add_argument("--policy", action="extend", nargs="+", required=True, metavar="SPEC", dest="policies",
                   help="policy spec(s); repeatable, and several may follow one --policy (e.g. a shell glob)")
    p.add_argument("--contexts", required=True, metavar="FILE", help="context set (.jsonl or .parquet)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="one policy: the table file (.jsonl/.parquet); several: a directory receiving <id>.jsonl")
    p.add_argument("--format", choices=["jsonl", "parquet"], default=None,
                   help="table format in a directory output (default jsonl; one file: taken from its suffix)")
    p.add_argument("--id", action="append", metavar="ID", dest="ids",
                   help="policy id in the table (once per --policy, in the same order)")
    p.add_argument("--strict", action="store_true", help="stop at the first context a policy fails on")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="parallel processes (default: min(policies, cores))")
    p.add_argument("--pydial-root", metavar="DIR", help="PyDial3's root folder (for pydial:CFG specs)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: for long runs on a terminal)")
    p.set_defaults(func=cmd_respond)
    return p


def _output_paths(args: argparse.Namespace, ids: list[str]) -> list[Path]:
    out = Path(args.output)
    single = len(ids) == 1 and not out.is_dir() and not args.output.endswith(os.sep)
    if single:
        if out.suffix not in (".jsonl", ".parquet"):
            raise ConfigError(f"-o {args.output}: a table file must end in .jsonl or .parquet "
                              "(or give an existing directory)")
        if args.format and out.suffix != "." + args.format:
            raise ConfigError(f"-o {args.output}: the suffix contradicts --format {args.format}")
        return [out]
    if (out.exists() and not out.is_dir()) or (not out.exists() and out.suffix in (".jsonl", ".parquet")):
        raise ConfigError(f"-o {args.output}: with several policies -o must be a directory (each table is written "
                          "there as <id>.jsonl)")
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ConfigError(f"policy ids must be unique (they name the output files); repeated: {dupes}; "
                          "give --id once per --policy")
    for i in ids:
        if not i or "/" in i or os.sep in i or i in (".", ".."):
            raise ConfigError(f"policy id {i!r} cannot name a file; give --id")
    return [out / f"{i}.{args.format or 'jsonl'}" for i in ids]


def cmd_respond(args: argparse.Namespace) -> int:
    """Run the ``respond`` command; returns the exit code."""
    specs = list(args.policies)
    if args.ids is not None and len(args.ids) != len(specs):
        raise ConfigError(f"--id: give it once per --policy ({len(specs)} policies, {len(args.ids)} ids)")
    for s in specs:
        parse_spec(s)
    if len(specs) == 1:
        _output_paths(args, ["policy"])  # check -o before the work
    contexts = ContextSet.load(args.contexts)
    t0 = time.perf_counter()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolicyErrorsWarning)  # the summary below reports them
        tables = respond_many(specs, contexts, workers=args.workers, strict=args.strict, policy_ids=args.ids,
                              pydial_root=args.pydial_root, progress=args.progress)
    seconds = time.perf_counter() - t0
    paths = _output_paths(args, [t.id for t in tables])
    for t, path in zip(tables, paths):
        path.parent.mkdir(parents=True, exist_ok=True)
        t.save(path)
    width = max(len(t.id) for t in tables)
    for t, path in zip(tables, paths):
        line = f"{t.id:<{width}}  errors {t.n_errors}/{len(t)}  -> {path}"
        if t.n_errors:
            first = next(e for e in t.errors if e is not None)
            line += f"  (first: {first})"
        print(line)
    total = len(tables) * len(contexts)
    print(f"{len(tables)} policies x {len(contexts)} contexts in {seconds:.2f} s "
          f"({total / max(seconds, 1e-9):,.0f} contexts/s)")
    return 0
