"""``behavsim monitor POLICYDIR --pydial-config CFG``: follow the policies PyDial3 writes while it trains.

``pydial.py train CFG --seed=S`` writes one GP policy per training batch into its policy folder
(``[policy] policydir``, e.g. ``_bspolicies/``): ``<name>-seed<S>-<err>.<batch>.dct`` and
``.prm`` (``<name>-<err>.<batch>`` without a seed), ``<name>`` being the config's file name
without ``.cfg``, ``<err>`` the training error rate (``00``) and ``<batch>`` 1, 2, ... Every
``<prefix>.<batch>`` group is a *trial* here (several seeds in one folder give several); only
the policies named after ``CFG``, ``<CFG's name>-...``, are followed, as PyDial names them.
``CFG`` is the training config itself (``pydial.py train CFG``): an adapter config (no
``[exec_config]``, learning off) is refused, as it says neither how many dialogues a batch
holds nor which policies are the training's. Each new batch is answered on the context set
through the ``pydial:`` adapter — ``CFG`` with ``inpolicyfile`` replaced by that batch
(:class:`policies.adapters.PyDialAdapter` ``policy_file``; learning off, GP greedy) — and
scored against the previous batch with :class:`behavsim.monitor.ConvergenceMonitor`:
``OUT/<trial>/convergence.csv``, the snapshots' responses and ``convergence.png``, redrawn as
batches appear; ``OUT/convergence.png`` for several trials.

The x axis counts training dialogues: batch × ``[exec_config] traindialogsperbatch`` of ``CFG``
(PyDial's default, 100, when ``CFG`` does not set it). With ``--follow`` a batch is taken once
both files exist and have not changed for ``SETTLE`` seconds (PyDial writes them in place), a
batch that cannot be loaded yet is retried at the next poll, and the command stops once every
trial reached batch ``trainsourceiteration + numtrainbatches`` (PyDial's defaults 0 and 1 where
``CFG`` does not set them), or after ``--stop-after``.
"""

from __future__ import annotations

import argparse
import re
import time
import warnings
from pathlib import Path
from typing import Any

from behavsim import ConfigError, ContextSet
from behavsim.policy import PolicyErrorsWarning, respond
from behavsim.scores import score_info
from policies.pydial._adapter import PyDialAdapter, find_pydial_root, read_config, resolve_config
from policies.training.follow import SETTLE, Watch, find_trials, has_checkpoints

__all__ = ["PyDialWatch", "pydial_trials", "refuse_pydial_folder", "PYDIAL_DEFAULTS"]

_POLICY_RE = re.compile(r"^(?P<trial>.+)\.(?P<batch>\d+)\.dct$")


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


def refuse_pydial_folder(root: Path) -> None:
    """Raise :class:`ConfigError` when ``root`` (followed as ``behavsim train``'s run or trial
    folder) holds PyDial's policies and no checkpoint: a PyDial policy folder, or PyDial's root
    with one in ``_bspolicies/``, is followed with ``--pydial-config``."""
    if not root.is_dir() or has_checkpoints(root) or find_trials(root, single=False):
        return
    for folder in (root, root / "_bspolicies"):
        trials = pydial_trials(folder)
        if trials:
            n = sum(len(b) for b in trials.values())
            first = next(iter(trials.values()))[0][1].name
            where = (
                f"{root}: a PyDial policy folder"
                if folder == root
                else f"{root}: PyDial's root, its policies in {folder}"
            )
            raise ConfigError(
                f"{where} ({n} policies <name>.<batch>.dct/.prm, e.g. {first}), no ckpt-NNNNNN.npz: follow it with "
                f"--pydial-config CFG (the config pydial.py train was run with)"
                + ("" if folder == root else f" and DIR {folder}")
            )


def _settled(prefix: Path, settle: float) -> bool:
    now = time.time()
    try:
        return all(now - Path(f"{prefix}{ext}").stat().st_mtime >= settle for ext in (".dct", ".prm"))
    except OSError:
        return False


#: PyDial's own defaults for the ``[exec_config]`` keys a training config leaves out (``pydial.py``).
PYDIAL_DEFAULTS = {"traindialogsperbatch": 100, "numtrainbatches": 1, "trainsourceiteration": 0}


def _config_numbers(cfg: Path) -> tuple[int, int]:
    """(dialogues per batch, last batch) of the training config ``cfg``: its ``[exec_config]``,
    PyDial's defaults where it says nothing. A config that trains nothing — no ``[exec_config]``
    section and ``[policy] learning`` not on, as the ``pydial:`` adapter's configs are — is
    refused: its batches would be counted as single dialogues and its name matches no policy."""
    p = read_config(cfg, "--pydial-config")
    try:
        learning = p.getboolean("policy", "learning", fallback=False)
    except ValueError:
        learning = False
    if not p.has_section("exec_config") and not learning:
        raise ConfigError(
            f"--pydial-config {cfg}: not a training config (no [exec_config] section, learning off: an adapter "
            "config?); expected the config pydial.py train was run with (its [exec_config] traindialogsperbatch "
            "gives the dialogues per batch, its name the policies' names)"
        )

    def num(key: str) -> int:
        try:
            value = p.getint("exec_config", key) if p.has_option("exec_config", key) else None
        except ValueError:
            value = None
        return PYDIAL_DEFAULTS[key] if value is None else value

    per = num("traindialogsperbatch")
    if per < 1:
        raise ConfigError(f"--pydial-config {cfg}: [exec_config] traindialogsperbatch = {per}, expected at least 1")
    return per, num("trainsourceiteration") + num("numtrainbatches")


class PyDialWatch(Watch):
    """The trials in a PyDial policy folder: PyDial's file layout and the ``pydial:`` adapter in
    place of checkpoints (see the section above)."""

    def __init__(
        self, args: argparse.Namespace, policy_dir: Path, contexts: ContextSet, score_names: list[str], stop_rule: Any
    ) -> None:
        out = Path(args.output) if args.output else policy_dir.resolve().parent / "behavsim-monitor"
        super().__init__(args, contexts, score_names, stop_rule, out)  # self.handled: the highest batch dealt with
        self.policy_dir = policy_dir
        self.pydial_root = find_pydial_root(args.pydial_root)
        self.config = resolve_config(args.pydial_config, self.pydial_root)
        self.per_batch, self.last_batch = _config_numbers(self.config)
        self.prefix = f"{self.config.stem}-"
        self.nlg = any(score_info(s).level == "text" for s in score_names)
        self.single = False

    def dialogues(self, batch: int) -> int:
        return batch * self.per_batch

    def handled_after(self, dialogues: int) -> int:
        return dialogues // self.per_batch

    def trials(self) -> dict[str, list[tuple[int, Path]]]:
        """The trials followed: those named after the training config, as PyDial names them."""
        trials = pydial_trials(self.policy_dir)
        return {t: b for t, b in trials.items() if t.startswith(self.prefix)}

    def poll(self) -> int:
        trials = self.trials()
        self.width = max([self.width, *map(len, trials)])
        news = sum(self._poll_trial(t, batches) for t, batches in trials.items())
        if news and len(self.monitors) > 1 and self.args.plot:
            self._plot_all()  # the first score of every trial in OUT/convergence.png
        return news

    def _poll_trial(self, trial: str, batches: list[tuple[int, Path]]) -> int:
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
        if not self.handled:
            return False
        return all(self.handled.get(t, -1) >= self.last_batch for t in self.trials())
