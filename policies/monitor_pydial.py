"""``behavsim monitor POLICYDIR --pydial-config CFG``: follow the policies PyDial3 writes while it trains.

``pydial.py train CFG --seed=S`` writes one GP policy per training batch into its policy folder
(``[policy] policydir``, e.g. ``_bspolicies/``): ``<name>-seed<S>-<err>.<batch>.dct`` and
``.prm`` (``<name>-<err>.<batch>`` without a seed), ``<name>`` being the config's file name
without ``.cfg``, ``<err>`` the training error rate (``00``) and ``<batch>`` 1, 2, ... Every
``<prefix>.<batch>`` group is a *trial* here (several seeds or configs in one folder give
several; when ``CFG`` is a training config — it has an ``[exec_config]`` section — only the
policies named after it, ``<CFG's name>-...``, are followed, as PyDial names them). Each new batch is answered on the context set through the ``pydial:`` adapter —
``CFG`` with ``inpolicyfile`` replaced by that batch (:class:`policies.adapters.PyDialAdapter`
``policy_file``; learning off, GP greedy) — and scored against the previous batch with
:class:`behavsim.monitor.ConvergenceMonitor`: ``OUT/<trial>/convergence.csv``, the snapshots'
responses and ``convergence.png``, redrawn as batches appear; ``OUT/convergence.png`` for
several trials. ``CFG`` may be the training config itself.

The x axis counts training dialogues: batch × ``[exec_config] traindialogsperbatch`` of ``CFG``
(the batch number when ``CFG`` does not set it). With ``--follow`` a batch is taken once both
files exist and have not changed for ``SETTLE`` seconds (PyDial writes them in place), a batch
that cannot be loaded yet is retried at the next poll, and the command stops once every trial
reached ``[exec_config] trainsourceiteration + numtrainbatches`` when ``CFG`` sets them (else
after ``--stop-after``).
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import Any

from behavsim import ConfigError, ContextSet

from .monitor_cli import _check_args, _Watch, run_watch

__all__ = ["cmd_monitor_pydial", "pydial_trials", "SETTLE"]

_POLICY_RE = re.compile(r"^(?P<trial>.+)\.(?P<batch>\d+)\.dct$")
#: Seconds a batch's files must stay unchanged before they are read when following.
SETTLE = 1.0


def pydial_trials(policy_dir: Path) -> dict[str, list[tuple[int, Path]]]:
    """Trial (file prefix) → [(batch, policy prefix path), ...] in batch order, for every
    ``<trial>.<batch>.dct`` with its ``.prm`` in ``policy_dir``."""
    out: dict[str, list[tuple[int, Path]]] = {}
    try:
        names = sorted(p.name for p in policy_dir.iterdir())
    except OSError:
        return out
    present = set(names)
    for name in names:
        m = _POLICY_RE.match(name)
        if m and f"{name[:-4]}.prm" in present:
            out.setdefault(m["trial"], []).append((int(m["batch"]), policy_dir / name[:-4]))
    return {t: sorted(b) for t, b in sorted(out.items())}


def _settled(prefix: Path, settle: float) -> bool:
    now = time.time()
    try:
        return all(now - Path(f"{prefix}{ext}").stat().st_mtime >= settle for ext in (".dct", ".prm"))
    except OSError:
        return False


def _config_numbers(cfg: Path) -> tuple[int | None, int | None, bool]:
    """(dialogues per batch, last batch) from ``[exec_config]``, ``None`` where not set, and
    whether the config has that section (a training config)."""
    from .adapters._pydial import read_config

    p = read_config(cfg, "--pydial-config")

    def num(key: str) -> int | None:
        try:
            return p.getint("exec_config", key) if p.has_option("exec_config", key) else None
        except ValueError:
            return None

    per, n, start = num("traindialogsperbatch"), num("numtrainbatches"), num("trainsourceiteration")
    last = None if n is None else (start or 0) + n
    return (per if per and per > 0 else None), last, p.has_section("exec_config")


class PyDialWatch(_Watch):
    """The monitors of the trials in a PyDial policy folder: ``behavsim monitor``'s watcher with
    PyDial's file layout and the ``pydial:`` adapter in place of checkpoints."""

    def __init__(
        self, args: argparse.Namespace, policy_dir: Path, contexts: ContextSet, score_names: list[str], stop_rule: Any
    ) -> None:
        from behavsim.scores import TEXT_SCORES

        from .adapters._pydial import find_pydial_root, resolve_config

        out = Path(args.output) if args.output else policy_dir.resolve().parent / "behavsim-monitor"
        self._setup(args, contexts, score_names, stop_rule, out)  # self.handled: the highest batch dealt with
        self.policy_dir = policy_dir
        self.pydial_root = find_pydial_root(args.pydial_root)
        self.config = resolve_config(args.pydial_config, self.pydial_root)
        self.per_batch, self.last_batch, training = _config_numbers(self.config)
        self.prefix = f"{self.config.stem}-" if training else None
        self.nlg = any(s in TEXT_SCORES for s in score_names)
        self.single = False

    def dialogues(self, batch: int) -> int:
        return batch * (self.per_batch or 1)

    def handled_after(self, dialogues: int) -> int:
        return dialogues // (self.per_batch or 1)

    def trials(self) -> dict[str, list[tuple[int, Path]]]:
        """The trials followed: for a training config those named after it, else all."""
        trials = pydial_trials(self.policy_dir)
        if self.prefix is None:
            return trials
        return {t: b for t, b in trials.items() if t.startswith(self.prefix)}

    def poll(self) -> int:
        trials = self.trials()
        self.width = max([self.width, *map(len, trials)])
        news = sum(self._poll_trial(t, batches) for t, batches in trials.items())
        if news and len(self.monitors) > 1 and self.args.plot:
            self._plot_all()  # the first score of every trial in OUT/convergence.png
        return news

    def _poll_trial(self, trial: str, batches: list[tuple[int, Path]]) -> int:
        import warnings

        from .adapters import PyDialAdapter
        from .respond import PolicyErrorsWarning, respond

        news = 0
        m = self.monitor_for(trial)
        for b, prefix in batches:
            last = self.handled.get(trial)
            if last is not None and b <= last:
                continue
            d = self.dialogues(b)
            if self.args.follow and not _settled(prefix, SETTLE):
                break  # PyDial may still be writing it
            if not m.due(d):
                self.handled[trial] = b
                continue
            try:
                adapter = PyDialAdapter(
                    self.config,
                    root=self.pydial_root,
                    nlg=self.nlg,
                    policy_file=str(prefix.resolve()),
                    policy_id=f"{trial}.{b}",
                )
            except ConfigError as exc:
                if not self.args.follow:
                    raise
                self._not_yet(trial, str(prefix), f"cannot load batch {b} yet ({exc})")
                break
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PolicyErrorsWarning)
                table = respond(adapter, self.contexts)
            del adapter
            news += self._record(trial, m, table, d, b, f"batch {b}: ")
        return news

    def finished(self) -> bool:
        if self.last_batch is None or not self.handled:
            return False
        return all(self.handled.get(t, -1) >= self.last_batch for t in self.trials())


def cmd_monitor_pydial(args: argparse.Namespace) -> int:
    """``behavsim monitor POLICYDIR --pydial-config CFG ...`` (see the module doc)."""
    policy_dir = Path(args.dir)
    if not policy_dir.is_dir():
        raise ConfigError(f"DIR {args.dir!r}: no such folder (PyDial's policy folder, e.g. _bspolicies/)")
    interval, stop_rule, score_names = _check_args(args, policy_dir)
    contexts = ContextSet.load(args.contexts)
    watch = PyDialWatch(args, policy_dir, contexts, score_names, stop_rule)
    return run_watch(watch, args, interval, f"{policy_dir}: no PyDial policies (<name>.<batch>.dct with .prm) found")
