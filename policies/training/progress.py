"""What a training run shows while it runs: progress bars or lines (:class:`TrainingProgress`) and,
optionally, each checkpoint's evaluation as TensorBoard scalars (:class:`TensorBoardReport`).

Both are *reports*: callables that receive the trainer's messages (see
:func:`policies.training.train.run_trial`) — ``("progress", trial, dialogues)`` and
``("checkpoint", trial, row)`` with ``row`` a ``metrics.csv`` row — and a ``close()``.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from behavsim.tensorboard import TensorBoardWriter

__all__ = ["TrainingProgress", "TensorBoardReport"]


class TrainingProgress:
    """tqdm bars on a terminal; one line per checkpoint otherwise; nothing when quiet.

    ``total``: the dialogues each trial runs to; ``trials``: their names, one bar each."""

    def __init__(self, total: int, trials: list[str], enabled: bool) -> None:
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()
        self.total = total
        self.bars: dict[str, Any] = {}
        self.t0 = time.perf_counter()
        if self.tty:
            from tqdm import tqdm  # start-up cost: ~90 ms to import (measured under load); only a terminal draws bars

            size = shutil.get_terminal_size((100, 24))  # falls back when a pty reports 0 x 0
            rows = max(size.lines, len(trials) + 1)
            for i, t in enumerate(trials):
                self.bars[t] = tqdm(
                    total=self.total,
                    desc=t,
                    position=i,
                    unit="dlg",
                    leave=True,
                    ncols=size.columns,
                    nrows=rows,
                    mininterval=0.5,
                )

    def __call__(self, msg: tuple) -> None:
        if not self.enabled:
            return
        kind, trial, payload = msg
        if kind == "progress" and self.tty:
            bar = self.bars[trial]
            bar.update(max(0, payload - bar.n))
        elif kind == "checkpoint":
            r = payload
            if self.tty:
                self.bars[trial].set_postfix(
                    tsr=f"{r['tsr']:.2f}", aiq=f"{r['aiq']:.2f}", adl=f"{r['adl']:.2f}", refresh=False
                )
            else:
                size = "" if r["dictionary_size"] is None else f" dict {r['dictionary_size']}"
                print(
                    f"{trial}: {r['dialogues']}/{self.total} dialogues  TSR {r['tsr']:.2f}  AIQ {r['aiq']:.2f}  "
                    f"ADL {r['adl']:.2f}{size}  ({time.perf_counter() - self.t0:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


class TensorBoardReport:
    """Passes every report on and logs each checkpoint's TSR, AIQ and ADL as TensorBoard scalars
    ``behavsim/eval/TSR|AIQ|ADL`` (step = training dialogues) into ``DIR/<trial>/``, in an event
    file of its own (suffix ``.behavsim-train``) beside the monitor's and any other writer's."""

    TAGS = {"TSR": "tsr", "AIQ": "aiq", "ADL": "adl"}

    def __init__(self, inner: Callable[[tuple], None], logdir: Path) -> None:
        self.inner = inner
        self.logdir = logdir
        self.writers: dict[str, Any] = {}

    def __call__(self, msg: tuple) -> None:
        self.inner(msg)
        kind, trial, row = msg
        if kind != "checkpoint":
            return
        if trial not in self.writers:
            self.writers[trial] = TensorBoardWriter(
                self.logdir / trial, suffix=".behavsim-train", option="--tensorboard"
            )
        w = self.writers[trial]
        vals = {f"behavsim/eval/{tag}": float(row[key]) for tag, key in self.TAGS.items() if row.get(key) is not None}
        w.scalars(vals, int(row["dialogues"]))
        w.flush()

    def close(self) -> None:
        for w in self.writers.values():
            w.close()
