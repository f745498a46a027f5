"""The follower behind ``behavsim monitor``: watch a folder for new checkpoints of a training run
and score each against the one before (:class:`behavsim.monitor.ConvergenceMonitor`).

One :class:`Watch` (polling, following, per-trial monitors and their locks, the summary) with
one subclass per kind of checkpoint file:

* :class:`CheckpointWatch` — ``behavsim train``'s ``<reward>-seed<S>/ckpt-NNNNNN.npz``,
* :class:`PatternWatch` — any trainer's files (``--pattern GLOB --loader MODULE:FUNCTION``),
* :class:`policies.pydial.PyDialWatch` — the ``<name>.<batch>.dct/.prm`` policies PyDial3 writes
  while it trains (in the PyDial family).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from behavsim import BehavsimError, ConfigError, ContextSet, interrupt_handled, parse_spec
from behavsim.monitor import ConvergenceMonitor, StopRule, plot_convergence
from behavsim.policy import PolicyErrorsWarning, respond
from behavsim.scores import SEMANTIC_SCORES
from behavsim.scores import scores as registry
from behavsim.tensorboard import check_tensorboard_dir
from policies.gp.checkpoint import CheckpointError, read_meta
from policies.simulation.domain import domain_spec
from policies.training.files import checkpoint_dialogues, trial_name

__all__ = [
    "Watch",
    "CheckpointWatch",
    "PatternWatch",
    "OutputLock",
    "find_trials",
    "has_checkpoints",
    "load_loader",
    "check_args",
    "run_watch",
    "SETTLE",
]

_TRIAL_RE = re.compile(r"^[A-Za-z0-9_]+-seed\d+$")
#: Seconds a file must stay unchanged before it is read while following (a trainer may still write it).
SETTLE = 1.0


# ----------------------------------------------------------------------------- layout
def has_checkpoints(d: Path) -> bool:
    try:
        return any(checkpoint_dialogues(p.name) is not None for p in d.iterdir())
    except OSError:
        return False


def _is_trial_dir(d: Path) -> bool:
    return bool(_TRIAL_RE.match(d.resolve().name)) or has_checkpoints(d)


def find_trials(root: Path, single: bool) -> dict[str, Path]:
    """Trial name → folder: ``root`` itself when ``single``, else its trial sub-folders."""
    if single:
        return {root.resolve().name: root}
    out = {}
    for d in sorted(root.iterdir()):
        if d.is_dir() and (_TRIAL_RE.match(d.name) or has_checkpoints(d)):
            out[d.name] = d
    return out


def _checkpoints(trial_dir: Path) -> list[tuple[int, Path]]:
    try:
        entries = list(trial_dir.iterdir())
    except OSError:
        return []
    return sorted((n, p) for p in entries if (n := checkpoint_dialogues(p.name)) is not None)


def _run_target(run_dir: Path) -> tuple[int, list[str]] | None:
    """(last checkpoint, trial names) from a run's ``config.json``; ``None`` without one."""
    try:
        cfg = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        if cfg.get("policy", "gp") != "gp":
            return None
        trials = [trial_name(r, s) for r in cfg["rewards"] for s in cfg["seeds"]]
        return int(cfg["dialogues"]), trials
    except (OSError, ValueError, KeyError, TypeError):
        return None


class OutputLock:
    """Advisory lock on ``OUT/<trial>/.lock``: two monitors never write one folder."""

    def __init__(self, path: Path) -> None:
        self.fh = None
        try:
            import fcntl  # POSIX only
        except ImportError:  # pragma: no cover
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(path, "a+")
        try:
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.fh.close()
            self.fh = None
            raise ConfigError(f"{path.parent} is in use by another behavsim monitor (lock {path})") from None

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None


def run_watch(watch: Any, args: argparse.Namespace, interval: float, nothing: str) -> int:
    """Poll once, then follow if asked, then fill every trial's ``vs_final``; ``nothing`` says what
    was not found when there is nothing to watch and no ``--follow``. Ctrl-C stops cleanly (the
    same command continues)."""
    try:
        watch.poll()
        if not watch.monitors and not args.follow:
            raise ConfigError(nothing + "; use --follow to wait for them")
        if args.follow:
            watch.follow(interval, args.stop_after)
        watch.finish()  # the last checkpoint seen is the final one (not after Ctrl-C: the run may go on)
    except KeyboardInterrupt:  # --follow's way to stop: not a failure of the command
        interrupt_handled()
        _say("interrupted; run the same command again to continue")
    finally:
        watch.close()
    watch.summarise()
    return 0


def _say(text: str) -> None:
    print(text, flush=True)


def check_args(args: argparse.Namespace, root: Path) -> tuple[float, Any, list[str]]:
    """Validate the options; returns the poll interval, the stop rule (or None) and the score names."""
    waits = bool(getattr(args, "pattern", None)) and args.follow  # a trainer of one's own may not have made it yet
    if not root.is_dir() and not waits:
        raise ConfigError(f"DIR {args.dir!r}: no such folder (a trial folder <reward>-seed<S>/ or a run folder)")
    if args.interval is not None and not (args.interval > 0):
        raise ConfigError(f"--interval: expected a positive number of seconds, got {args.interval}")
    if args.stop_after is not None and not (args.stop_after >= 0):
        raise ConfigError(f"--stop-after: expected a non-negative number of seconds, got {args.stop_after}")
    if not args.follow and (args.interval is not None or args.stop_after is not None):
        raise ConfigError("--interval and --stop-after only make sense with --follow")
    if args.every < 1:
        raise ConfigError(f"--every: expected a positive integer, got {args.every}")
    interval = args.interval if args.interval is not None else 10.0
    stop_rule = StopRule.parse(args.stop_rule) if args.stop_rule else None
    score_names = [registry.canonical(s) for v in (args.scores or SEMANTIC_SCORES) for s in v.split(",") if s.strip()]
    if stop_rule is not None and stop_rule.score not in score_names:
        raise ConfigError(f"--stop-rule: score {stop_rule.score!r} is not among --scores {score_names}")
    lag = getattr(args, "lag", 5)
    if lag < 1:
        raise ConfigError(f"--lag: expected a positive number of checkpoints, got {lag}")
    if getattr(args, "tensorboard", None):
        check_tensorboard_dir(args.tensorboard, "--tensorboard")
    pattern_opts = [o for o in ("loader", "step_regex") if getattr(args, o, None)]
    if getattr(args, "pattern", None):
        if not getattr(args, "loader", None):
            raise ConfigError("--pattern needs --loader MODULE:FUNCTION (the function that loads one checkpoint file)")
    elif pattern_opts:
        raise ConfigError(f"--{pattern_opts[0].replace('_', '-')} only makes sense with --pattern GLOB")
    return interval, stop_rule, score_names


class Watch:
    """Follows the checkpoints of one training run: one :class:`ConvergenceMonitor` per trial, created
    at the trial's first checkpoint; subclasses say where the checkpoints are (:meth:`poll`) and when
    the run is over (:meth:`finished`)."""

    single = False

    def __init__(
        self, args: argparse.Namespace, contexts: ContextSet, score_names: list[str], stop_rule: Any, out: Path
    ) -> None:
        """The state every watcher keeps; ``out``: the output folder (one sub-folder per trial)."""
        self.args = args
        self.contexts = contexts
        self.score_names = score_names
        self.stop_rule = stop_rule
        self.out = out
        self.monitors: dict[str, Any] = {}
        self.locks: list[OutputLock] = []
        self.handled: dict[str, int] = {}  # highest checkpoint (or batch) dealt with
        self.noted: set[str] = set()
        self.width = 8
        self._reference: Any = None

    def reference_table(self) -> Any:
        """``--reference``'s responses on the contexts, made once for every trial (``None`` without it)."""
        spec = getattr(self.args, "reference", None)
        if spec is None or self._reference is not None:
            return self._reference

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolicyErrorsWarning)
            self._reference = respond(spec, self.contexts, **getattr(self, "options", {}))
        return self._reference

    def handled_after(self, dialogues: int) -> int:
        """What :attr:`handled` records for a trial resumed after ``dialogues``."""
        return dialogues

    def monitor_for(self, trial: str, respond: Any = None):
        if trial not in self.monitors:
            # created only when the trial has a checkpoint: by then the trainer has written its
            # config.json, so OUT inside the run folder never makes `behavsim train` refuse it
            self.locks.append(OutputLock(self.out / trial / ".lock"))
            m = ConvergenceMonitor(
                self.contexts,
                every=self.args.every,
                scores=self.score_names,
                out_dir=self.out / trial,
                respond=respond,
                stop_rule=self.stop_rule,
                plot=self.args.plot,
                name=trial,
                lag=getattr(self.args, "lag", 5),
                reference=self.reference_table(),
                tensorboard=Path(self.args.tensorboard) / trial if getattr(self.args, "tensorboard", None) else None,
            )
            self.monitors[trial] = m
            if m.last_dialogues is not None:
                self.handled[trial] = self.handled_after(m.last_dialogues)
                _say(
                    f"{trial:<{self.width}}  resuming after {m.last_dialogues} ({len(m.rows)} comparisons in "
                    f"{m.csv_path})"
                )
        return self.monitors[trial]

    def _not_yet(self, trial: str, key: str, why: str) -> None:
        """Say once per file that it cannot be used yet (it is retried at the next poll)."""
        if key not in self.noted:
            self.noted.add(key)
            _say(f"{trial:<{self.width}}  {why}; retrying")

    def _record(self, trial: str, m: Any, table: Any, dialogues: int, handled: int, label: str = "") -> int:
        """Snapshot ``table`` at ``dialogues``, mark ``handled``; 1 if a comparison was added."""
        res = m.snapshot(table, dialogues)
        self.handled[trial] = handled
        if res is None:
            return 0
        _say(f"{trial:<{self.width}}  {label}{res.line()}")
        return 1

    def _plot_all(self) -> None:
        """``OUT/convergence.png``: the first score of every trial (the paper's Figure 2)."""
        series = {t: m.rows for t, m in sorted(self.monitors.items()) if m.rows}
        if series:
            first = self.score_names[0]
            rule = self.stop_rule
            plot_convergence(
                series,
                self.out / "convergence.png",
                score=first,
                title=f"Convergence of every trial ({first}, checkpoint k vs k-1)",
                threshold=rule.threshold if rule and rule.score == first else None,
            )

    def follow(self, interval: float, stop_after: float | None) -> None:
        """Poll every ``interval`` seconds until finished, or ``stop_after`` seconds without news."""
        quiet_since = time.monotonic()
        while not self.finished():
            if stop_after is not None and time.monotonic() - quiet_since >= stop_after:
                _say(f"no new checkpoint for {stop_after:g} s; stopping")
                break
            time.sleep(interval)
            if self.poll():
                quiet_since = time.monotonic()
        else:
            _say("every trial reached the run's last checkpoint; stopping")

    def finish(self) -> None:
        """The command ends: every checkpoint against the last one seen (vs_final), then the files closed."""
        for m in self.monitors.values():
            m.finish()

    def close(self) -> None:
        for m in self.monitors.values():
            m.close()
        for lock in self.locks:
            lock.close()

    def summarise(self) -> None:
        """One line per trial: comparisons so far, output file, state of the stop rule; a trial
        without a comparison names what it has (a first snapshot, failures), not the CSV it lacks."""
        rule = self.stop_rule
        for trial, m in sorted(self.monitors.items()):
            rows = m.rows
            if not rows:
                _say(f"{trial}: {self._no_comparison(m)}")
                continue
            status = ""
            if rule is not None:
                at = rule.first_met(rows)
                status = f"; {rule.describe()}: " + (
                    "met now" if m.should_stop else f"first met at {at}, not now" if at else "not met"
                )
            _say(f"{trial}: {len(rows)} comparisons up to {m.last_dialogues} dialogues -> {m.csv_path}{status}")

    @staticmethod
    def _no_comparison(m: Any) -> str:
        """What a trial without a comparison has: a first snapshot (the next checkpoint makes the
        first comparison), checkpoints that failed, or nothing."""
        failed = f"; failures in {m.failed_path}" if m.failed_path.is_file() else ""
        if m.last_dialogues is None:
            return f"no comparison, no snapshot{failed}"
        return (
            f"no comparison yet: one snapshot, at {m.last_dialogues} dialogues ({m.snapshot_path(m.last_dialogues)}); "
            f"the next checkpoint is compared with it{failed}"
        )

    def poll(self) -> int:
        """Score every new checkpoint; returns how many comparisons were added."""
        raise NotImplementedError

    def finished(self) -> bool:
        """Whether the run has reached its last checkpoint (the follower then stops)."""
        return False


class CheckpointWatch(Watch):
    """The trials of a ``behavsim train`` run: ``root`` is a trial folder (``<reward>-seed<S>/`` with
    ``ckpt-NNNNNN.npz``) or a run folder holding trial folders."""

    def __init__(
        self, args: argparse.Namespace, root: Path, contexts: ContextSet, score_names: list[str], stop_rule: Any
    ) -> None:
        self.root = root
        self.single = _is_trial_dir(root)
        self.run_dir = root.parent if self.single else root
        super().__init__(
            args, contexts, score_names, stop_rule, Path(args.output) if args.output else self.run_dir / "monitor"
        )
        domain = domain_spec(getattr(args, "domain", None))
        self.options: dict[str, Any] = {} if domain is None else {"domain": domain}

    def poll(self) -> int:
        """Score every new checkpoint of every trial; returns how many comparisons were added."""
        news = 0
        trials = find_trials(self.root, self.single)
        self.width = max([self.width, *map(len, trials)])
        for trial, tdir in trials.items():
            ckpts = _checkpoints(tdir)
            if ckpts:
                news += self._poll_trial(trial, ckpts)
        if news and len(self.monitors) > 1 and self.args.plot:
            self._plot_all()
        return news

    def _poll_trial(self, trial: str, ckpts: list[tuple[int, Path]]) -> int:

        news = 0
        m = self.monitor_for(trial, respond)
        for d, path in ckpts:
            last = self.handled.get(trial)
            if last is not None and d <= last:
                continue  # processed (or older than what was): nothing to do
            if not m.due(d):
                self.handled[trial] = d
                continue
            try:
                read_meta(path)  # an unreadable file (e.g. still being copied) is retried when following
            except CheckpointError as exc:
                if not self.args.follow:
                    raise
                self._not_yet(trial, str(path), f"cannot read {path.name} yet ({exc})")
                break
            with warnings.catch_warnings():  # any other problem (foreign domain, ...) is an error
                warnings.simplefilter("ignore", PolicyErrorsWarning)
                table = respond(str(path), self.contexts, **self.options)
            news += self._record(trial, m, table, d, d)
        return news

    def finished(self) -> bool:
        """Every trial of the run (or the one trial) reached the run's last checkpoint."""
        target = _run_target(self.run_dir)
        if target is None:
            return False
        last, trials = target
        if self.single:
            trials = [t for t in trials if t == self.root.resolve().name]
        return bool(trials) and all(self.handled.get(t, -1) >= last for t in trials)


# ----------------------------------------------------------------------------- any trainer
_LAST_NUMBER = re.compile(r"(\d+)(?!.*\d)")


def load_loader(text: str) -> Any:
    """``module:function`` → the function (the module imported from the working folder or the path);
    a policy spec holding ``{}`` → the function path -> that spec with the path in place of ``{}``."""
    if "{}" in text:
        parse_spec(text.replace("{}", "checkpoint"))  # the kind and options are checked before any work

        def spec_for(path: str) -> str:
            return text.replace("{}", path)

        return spec_for

    module_name, sep, attr = text.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--loader {text!r}: expected MODULE:FUNCTION, e.g. mytrainer.checkpoints:load_policy")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(
            f"--loader {text!r}: cannot import module {module_name!r} ({type(exc).__name__}: {exc})"
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"--loader {text!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"--loader {text!r}: {attr} is a {type(obj).__name__}, not a function path -> policy")
    return obj


def step_pattern(text: str | None) -> re.Pattern:
    """``--step-regex`` compiled (default: the last number of the name)."""
    if text is None:
        return _LAST_NUMBER
    try:
        rx = re.compile(text)
    except re.error as exc:
        raise ConfigError(f"--step-regex {text!r}: not a regular expression ({exc})") from None
    if rx.groups > 1:
        raise ConfigError(f"--step-regex {text!r}: expected at most one group (the training dialogues)")
    return rx


def step_of(rel: str, rx: re.Pattern) -> int | None:
    """The training dialogues in a file's path below DIR (``None``: no step in it)."""
    m = rx.search(rel)
    if m is None:
        return None
    text = m.group(1) if rx.groups else m.group(0)
    return int(text) if text is not None and text.isdigit() else None


class PatternWatch(Watch):
    """One trial: the files of DIR matching ``--pattern``, ordered by the step in their names,
    each loaded with ``--loader`` and snapshotted through :func:`behavsim.respond`."""

    def __init__(
        self, args: argparse.Namespace, root: Path, contexts: ContextSet, score_names: list[str], stop_rule: Any
    ) -> None:
        self.root = root
        self.single = True
        self.run_dir = root
        self.trial = root.resolve().name
        super().__init__(args, contexts, score_names, stop_rule, Path(args.output) if args.output else root / "monitor")
        domain = domain_spec(getattr(args, "domain", None))
        self.options: dict[str, Any] = {} if domain is None else {"domain": domain}
        self.loader = load_loader(args.loader)
        self.rx = step_pattern(args.step_regex)
        self.said_nothing = False

    def files(self) -> list[tuple[int, Path]]:
        """(step, path) of every matching file with a step, in step order (each problem said once)."""
        out: dict[int, Path] = {}
        out_dir = self.out.resolve()
        for path in sorted(self.root.glob(self.args.pattern)):
            if not (path.is_file() or path.is_dir()) or path.resolve() == out_dir or out_dir in path.resolve().parents:
                continue
            rel = path.relative_to(self.root).as_posix()
            step = step_of(rel, self.rx)
            if step is None:
                self._once(
                    rel, f"{rel}: no training-dialogue count in the name (--step-regex {self.rx.pattern!r}); skipped"
                )
            elif step in out:
                self._once(rel, f"{rel}: step {step} again (also {out[step].relative_to(self.root)}); skipped")
            else:
                out[step] = path
        return sorted(out.items())

    def _once(self, key: str, text: str) -> None:
        if key not in self.noted:
            self.noted.add(key)
            _say(text)

    def poll(self) -> int:
        files = self.files()
        if not files:
            if self.args.follow and not self.said_nothing:
                self.said_nothing = True
                _say(f"{self.root}: no file matches --pattern {self.args.pattern!r} yet; following")
            return 0
        self.width = max(self.width, len(self.trial))
        return self._poll_files(files)

    def _poll_files(self, files: list[tuple[int, Path]]) -> int:
        news = 0
        m = self.monitor_for(self.trial)
        for d, path in files:
            last = self.handled.get(self.trial)
            if last is not None and d <= last:
                continue
            if self.args.follow:
                try:
                    if time.time() - path.stat().st_mtime < SETTLE:
                        break  # the trainer may still be writing it: next poll
                except OSError:
                    break
            if not m.due(d):
                self.handled[self.trial] = d
                continue
            rel = path.relative_to(self.root).as_posix()
            try:
                policy = self.loader(str(path))
            except Exception as exc:
                self._failed(m, d, rel, f"the loader failed: {type(exc).__name__}: {exc}")
                continue
            try:
                table = self._respond(policy)
            except BehavsimError:
                raise
            except Exception as exc:
                self._failed(m, d, rel, f"its policy failed: {type(exc).__name__}: {exc}")
                continue
            if table.n_errors == len(table):
                first = next((e for e in table.errors if e), "")
                self._failed(m, d, rel, f"its policy answered none of the {len(table)} contexts ({first})")
                continue
            news += self._record(self.trial, m, table, d, d)
        return news

    def _respond(self, policy: Any) -> Any:

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolicyErrorsWarning)
            return respond(policy, self.contexts, progress=False, **self.options)

    def _failed(self, m: Any, dialogues: int, rel: str, why: str) -> None:
        why = " ".join(why.split())
        if len(why) > 200:  # some loaders explain at length: the line keeps its start
            why = why[:199] + "…"
        m.record_failed(dialogues, rel, why)
        self.handled[self.trial] = dialogues
        _say(f"{self.trial:<{self.width}}  {dialogues}: {rel}: {why}; recorded as failed in {m.failed_path}")

    def finished(self) -> bool:
        return False  # a trainer of one's own says nothing about its end: --stop-after or Ctrl-C
