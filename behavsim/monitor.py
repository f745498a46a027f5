"""Watching training: the convergence scenario (paper §4.2.1, Figure 2) while a policy learns.

A :class:`ConvergenceMonitor` plugs into any training loop through one small callback API::

    monitor = ConvergenceMonitor(contexts, every=1000, out_dir="runs/mine/monitor")
    for n in range(1, 40_001):
        train_one_dialogue(policy)
        monitor.maybe_snapshot(policy, n)      # acts only every `every` dialogues
        if monitor.should_stop:                # only with a stop_rule; the trainer decides
            break

Each snapshot takes the policy's responses on the fixed context set, scores them against the
previous snapshot with :func:`behavsim.compare` (snapshot k against k−1, the convergence scenario) and writes

* ``out_dir/convergence.csv`` — one row per compared pair: ``dialogues, prev_dialogues``, one
  column per score (the mean over the contexts, full precision; empty where undefined), ``n``
  (contexts); then the other lags: ``lag_dialogues`` and ``<score>_vs_lag`` (the snapshot
  ``lag`` back), ``first_dialogues`` and ``<score>_vs_first``, ``<score>_vs_ref`` (a fixed
  reference policy), ``final_dialogues`` and ``<score>_vs_final`` (filled by :meth:`finish`);
* ``out_dir/snapshots/responses-<dialogues:06d>.jsonl`` — the snapshot's response table;
* ``out_dir/convergence.png`` — the scores against training dialogues (matplotlib, Agg);
* ``out_dir/monitor.json`` — the settings (context-set fingerprint, scores and their
  signatures, ``every``, stop rule, lag, reference), checked when a monitor is opened again;
* with ``tensorboard=DIR``: TensorBoard scalars ``behavsim/<score>/<lag>`` at step = training
  dialogues and the figure, in an event file of its own in ``DIR`` (``behavsim.tensorboard``).

Resumable: a new monitor on the same ``out_dir`` continues from the CSV and the last saved
snapshot; a snapshot at or before the last recorded one is skipped (returns ``None``), so a
restarted training loop can replay its counts without duplicate rows. Outputs are
deterministic (same responses → byte-identical files). This module is toolkit-independent:
a snapshot's policy is anything :func:`behavsim.respond` accepts (a policy object, a callable, an
adapter or a policy spec string of any registered kind), or a ready response table, or whatever
a ``respond`` hook of your own accepts.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import numbers
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._contexts import ContextSet
from ._engine import compare
from ._errors import ConfigError, ContextSetMismatch, TableFormatError
from ._monitor_plots import plot_convergence, plot_lags
from ._monitor_rows import (
    LAG_DIALOGUES,
    LAGS,
    SnapshotResult,
    StopRule,
    atomic_write,
    csv_columns,
    csv_text,
    is_int,
    lag_column,
    read_convergence,
)
from ._tables import ResponseTable
from .policy import PolicyErrorsWarning
from .policy import respond as respond_table
from .scores import SEMANTIC_SCORES, get_score
from .scores import scores as score_registry
from .tensorboard import SUFFIX, TensorBoardWriter, check_tensorboard_dir

__all__ = [
    "ConvergenceMonitor",
    "SnapshotResult",
    "StopRule",
    "plot_convergence",
    "plot_lags",
    "read_convergence",
    "MONITOR_FORMAT",
    "MONITOR_VERSION",
    "LAGS",
    "lag_column",
]

MONITOR_FORMAT = "behavsim-monitor"
MONITOR_VERSION = 1
_CSV = "convergence.csv"
_PNG = "convergence.png"
_META = "monitor.json"
_SNAPDIR = "snapshots"
_FAILED = "failed.csv"


# ----------------------------------------------------------------------------- the monitor
@dataclass
class _State:
    rows: list[dict[str, Any]] = field(default_factory=list)
    prev: ResponseTable | None = None
    prev_dialogues: int | None = None
    snaps: list[int] = field(default_factory=list)  # dialogues of every saved snapshot, in order
    tables: dict[int, ResponseTable] = field(default_factory=dict)  # the ones kept in memory


def _empty_lags(scores: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for lag in LAGS[1:]:
        if lag in LAG_DIALOGUES:
            out[LAG_DIALOGUES[lag]] = None
        out.update({lag_column(s, lag): math.nan for s in scores})
    return out


def _table_digest(table: ResponseTable) -> str:
    """What identifies a reference: its answers (acts and prompts), not its file."""
    text = json.dumps([list(table.acts), list(table.prompts)], sort_keys=True, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class ConvergenceMonitor:
    """Follows one policy while it trains: each snapshot against the previous one, the one
    ``lag`` snapshots back, the first, a reference policy, and (after :meth:`finish`) the last.

    ``contexts``: the :class:`~behavsim.ContextSet` every snapshot answers. ``every``: training
    dialogues between snapshots for :meth:`maybe_snapshot`. ``scores``: score names (default the
    four semantic ones; text scores need their models). ``out_dir``: where the CSV, snapshots,
    PNG and settings go (created at the first snapshot; resumed if it holds a monitor).
    ``respond(policy, contexts) -> ResponseTable``: how a policy is asked (default:
    :func:`behavsim.respond`, which takes policy objects, callables, adapters and spec strings of
    every registered kind; a policy with a boolean ``learning`` answers greedily).
    ``stop_rule``: a :class:`StopRule` (or ``"TMR:0.99:3"``) behind :attr:`should_stop`.
    ``plot``: redraw ``convergence.png`` after each comparison. ``progress``: ``True`` prints a
    line per snapshot to stderr, a callable receives each :class:`SnapshotResult`.
    ``name``: label in lines and plot titles (default: the folder name). ``lag``: how many
    snapshots back ``vs_lag`` looks (default 5). ``reference``: a fixed policy (anything a
    snapshot may be, e.g. ``"handcrafted"`` with ``respond=behavsim.policy.respond``), answered
    once, behind ``vs_ref``. ``tensorboard``: a TensorBoard run folder (it may be a trainer's own)
    that receives ``behavsim/<score>/<lag>`` scalars at step = training dialogues and the figure
    (needs ``pip install 'behavsim[tensorboard]'``).
    """

    def __init__(
        self,
        contexts: ContextSet,
        *,
        every: int = 1000,
        scores: Sequence[str] = SEMANTIC_SCORES,
        out_dir: str | os.PathLike,
        respond: Callable[[Any, ContextSet], ResponseTable] | None = None,
        stop_rule: StopRule | str | None = None,
        plot: bool = True,
        progress: bool | Callable[[SnapshotResult], Any] = False,
        score_options: Mapping[str, Mapping[str, Any]] | None = None,
        name: str | None = None,
        lag: int = 5,
        reference: Any = None,
        tensorboard: str | os.PathLike | None = None,
    ) -> None:
        if not isinstance(contexts, ContextSet):
            raise ConfigError(f"contexts: expected a behavsim.ContextSet, got {type(contexts).__name__}")
        if len(contexts) == 0:
            raise ConfigError("contexts: the context set is empty")
        if not is_int(every) or every < 1:
            raise ConfigError(f"every: expected a positive integer (training dialogues), got {every!r}")
        if not is_int(lag) or lag < 1:
            raise ConfigError(f"lag: expected a positive integer (snapshots back), got {lag!r}")
        if isinstance(scores, str):
            scores = [scores]
        names = [score_registry.canonical(s) for s in scores]
        if not names:
            raise ConfigError("scores: expected at least one score name")
        if len(set(names)) != len(names):
            raise ConfigError(f"scores: a score is listed twice: {names}")
        if respond is not None and not callable(respond):
            raise ConfigError(
                f"respond: expected a function (policy, contexts) -> ResponseTable, got {type(respond).__name__}"
            )
        if isinstance(stop_rule, str):
            stop_rule = StopRule.parse(stop_rule)
        if stop_rule is not None and not isinstance(stop_rule, StopRule):
            raise ConfigError(f"stop_rule: expected a StopRule or 'SCORE:THRESHOLD:PATIENCE', got {stop_rule!r}")
        if stop_rule is not None and stop_rule.score not in names:
            raise ConfigError(f"stop_rule: score {stop_rule.score!r} is not among the monitored scores {names}")
        if not (isinstance(progress, bool) or callable(progress)):
            raise ConfigError(f"progress: expected a bool or a callable, got {type(progress).__name__}")
        self.contexts = contexts
        self.every = every
        self.lag = lag
        self.scores = names
        self.score_options = {k: dict(v) for k, v in (score_options or {}).items()}
        self.out_dir = Path(out_dir)
        self.name = name or self.out_dir.resolve().name
        self.respond = respond
        self.stop_rule = stop_rule
        self.plot = bool(plot)
        self.progress = progress
        self._signatures = {n: get_score(n, **self.score_options.get(n, {})).signature for n in names}
        self.tensorboard = None
        self._tb: Any = None
        if tensorboard is not None:
            self.tensorboard = check_tensorboard_dir(tensorboard, "tensorboard")
        self.reference = self._reference_table(reference)
        self._state = _State()
        relog = self._load()
        if self.tensorboard is not None and self._state.rows and (relog or not self._tb_files()):
            self._log(self._state.rows, LAGS, image=True)

    # -------------------------------------------------------------- files
    @property
    def csv_path(self) -> Path:
        return self.out_dir / _CSV

    @property
    def png_path(self) -> Path:
        return self.out_dir / _PNG

    def snapshot_path(self, dialogues: int) -> Path:
        return self.out_dir / _SNAPDIR / f"responses-{int(dialogues):06d}.jsonl"

    @property
    def failed_path(self) -> Path:
        return self.out_dir / _FAILED

    def record_failed(self, dialogues: int, source: str, error: str) -> None:
        """Note a snapshot that could not be taken (its checkpoint would not load, ...) in
        ``failed.csv`` (``dialogues,source,error``; once per pair); the run goes on and the next
        snapshot is compared with the last one taken."""
        self._check_dialogues(dialogues)
        rows = []
        if self.failed_path.is_file():
            with open(self.failed_path, newline="", encoding="utf-8") as fh:
                rows = list(csv.reader(fh))[1:]
        if any(r[:2] == [str(int(dialogues)), source] for r in rows):
            return
        rows.append([str(int(dialogues)), source, error])
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["dialogues", "source", "error"])
        w.writerows(rows)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(self.failed_path, buf.getvalue())

    def _reference_table(self, reference: Any) -> ResponseTable | None:
        if reference is None:
            return None
        table = reference if isinstance(reference, ResponseTable) else self._respond(reference)
        if table.context_fingerprint != self.contexts.fingerprint or len(table) != len(self.contexts):
            raise ContextSetMismatch(
                f"reference: its response table ({table.context_fingerprint}) was not made on the monitor's "
                f"contexts ({self.contexts.fingerprint})"
            )
        return table

    def _reference_settings(self) -> dict[str, Any] | None:
        if self.reference is None:
            return None
        return {"policy": self.reference.policy.get("id"), "answers": _table_digest(self.reference)}

    def _settings(self) -> dict[str, Any]:
        return {
            "format": MONITOR_FORMAT,
            "version": MONITOR_VERSION,
            "name": self.name,
            "context_set": {"fingerprint": self.contexts.fingerprint, "size": len(self.contexts)},
            "scores": self.scores,
            "signatures": self._signatures,
            "every": self.every,
            "stop_rule": self.stop_rule.to_dict() if self.stop_rule else None,
            "lag": self.lag,
            "reference": self._reference_settings(),
        }

    def _snapshots_on_disk(self) -> list[tuple[int, Path]]:
        d = self.out_dir / _SNAPDIR
        if not d.is_dir():
            return []
        out = []
        for p in d.iterdir():
            stem = p.name
            if stem.startswith("responses-") and stem.endswith(".jsonl") and stem[10:-6].isdigit():
                out.append((int(stem[10:-6]), p))
        return sorted(out)

    def _load(self) -> bool:
        """Continue from the files in ``out_dir``; ``True`` when the lag columns were recomputed
        (another ``lag`` or reference than the folder's, or a folder from before the lags)."""
        meta_path = self.out_dir / _META
        if not meta_path.is_file():
            if self.csv_path.exists() or self._snapshots_on_disk():
                raise ConfigError(f"{self.out_dir}: holds convergence files but no {_META}; refusing to mix runs")
            return False
        try:
            old = json.loads(meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise TableFormatError(f"{meta_path}: damaged monitor settings ({exc})") from None
        if not isinstance(old, dict) or old.get("format") != MONITOR_FORMAT:
            raise TableFormatError(f"{meta_path}: not a behavsim monitor settings file")
        fp = (old.get("context_set") or {}).get("fingerprint")
        if fp != self.contexts.fingerprint:
            raise ContextSetMismatch(
                f"{self.out_dir} was written with another context set ({fp}, now "
                f"{self.contexts.fingerprint}); use the same contexts or another out_dir"
            )
        if old.get("scores") != self.scores or old.get("signatures") != self._signatures:
            raise ConfigError(
                f"{self.out_dir} was written with scores {old.get('scores')} "
                f"({old.get('signatures')}), now {self.scores} ({self._signatures}); "
                "use the same scores or another out_dir"
            )
        rows = read_convergence(self.csv_path) if self.csv_path.is_file() else []
        cols = csv_columns(self.scores)
        before_lags = ["dialogues", "prev_dialogues", *self.scores, "n"]
        if rows and list(rows[0]) not in (cols, before_lags):
            raise TableFormatError(f"{self.csv_path}: columns {list(rows[0])}, expected {cols}")
        snaps = self._snapshots_on_disk()
        last_row = rows[-1]["dialogues"] if rows else None
        if last_row is not None and last_row not in {d for d, _ in snaps}:
            raise TableFormatError(
                f"{self.out_dir}: the last row of {_CSV} ({last_row} dialogues) has no saved "
                f"snapshot in {_SNAPDIR}/; cannot continue from it"
            )
        st = self._state
        st.rows = rows
        relog = bool(rows) and (
            list(rows[0]) == before_lags
            or old.get("lag") != self.lag
            or old.get("reference") != self._reference_settings()
        )
        if relog:  # the lag columns follow from the saved snapshots: computed again for these settings
            for r in rows:
                r.update(_empty_lags(self.scores))
                st.snaps = [d for d, _ in snaps if d < r["dialogues"]]
                r.update(self._row(self._table(r["dialogues"]), r["dialogues"]))
        # a snapshot saved just before a stop, whose row was not yet written: score it now
        # (snapshots are written before the CSV row, so the tables are authoritative)
        added = False
        for d, _ in snaps:
            st.snaps = [x for x, _ in snaps if x < d]
            if (last_row is None or d > last_row) and st.snaps:
                rows.append(self._row(self._table(d), d))
                added = True
        st.snaps = [d for d, _ in snaps]
        if st.snaps:
            st.prev_dialogues = st.snaps[-1]
            st.prev = self._table(st.snaps[-1])
        self._prune()
        if relog or added:
            atomic_write(self.csv_path, csv_text(rows, self.scores))
        if relog or old.get("lag") != self.lag or old.get("reference") != self._reference_settings():
            atomic_write(meta_path, json.dumps(self._settings(), indent=1, sort_keys=True) + "\n")
        return relog or added

    def _table(self, dialogues: int) -> ResponseTable:
        t = self._state.tables.get(dialogues)
        if t is None:
            t = self._load_table(self.snapshot_path(dialogues))
            self._state.tables[dialogues] = t
        return t

    def _prune(self) -> None:
        """Keep in memory only the tables the next rows need: the first and the last ``lag``."""
        snaps = self._state.snaps
        keep = set(snaps[:1]) | set(snaps[-self.lag :])
        for d in list(self._state.tables):
            if d not in keep:
                del self._state.tables[d]

    def _load_table(self, path: Path) -> ResponseTable:
        t = ResponseTable.load(path)
        if t.context_fingerprint != self.contexts.fingerprint:
            raise ContextSetMismatch(f"{path}: snapshot of another context set")
        return t

    # -------------------------------------------------------------- state
    @property
    def rows(self) -> list[dict[str, Any]]:
        """The comparisons so far (as in ``convergence.csv``), oldest first."""
        return [dict(r) for r in self._state.rows]

    @property
    def last_dialogues(self) -> int | None:
        """Training dialogues of the last snapshot (``None`` before the first)."""
        return self._state.prev_dialogues

    @property
    def converged(self) -> bool:
        """The stop rule (or, without one, the default ``StopRule()``: TMR ≥ 0.99 in 3
        consecutive comparisons) is met at the latest comparison."""
        return (self.stop_rule or StopRule()).met(self._state.rows)

    @property
    def should_stop(self) -> bool:
        """``True`` when a ``stop_rule`` was given and is met. Advice only."""
        return self.stop_rule is not None and self.stop_rule.met(self._state.rows)

    def due(self, dialogues: int) -> bool:
        """Whether :meth:`maybe_snapshot` would act at ``dialogues``: a multiple of ``every`` was
        reached or passed since the last snapshot (the first at ``every``)."""
        self._check_dialogues(dialogues)
        last = self._state.prev_dialogues
        return int(dialogues) // self.every > (last if last is not None else 0) // self.every

    @staticmethod
    def _check_dialogues(dialogues: Any) -> None:
        if not isinstance(dialogues, numbers.Integral) or isinstance(dialogues, bool) or dialogues < 0:
            raise ConfigError(
                f"dialogues: expected a non-negative integer (training dialogues so far), got {dialogues!r}"
            )

    # -------------------------------------------------------------- snapshots
    def maybe_snapshot(self, policy: Any, dialogues: int) -> SnapshotResult | None:
        """:meth:`snapshot` when :meth:`due`, else nothing (``None``) — call it after every
        training dialogue (or batch)."""
        if not self.due(dialogues):
            return None
        return self.snapshot(policy, dialogues)

    def snapshot(self, policy: Any, dialogues: int) -> SnapshotResult | None:
        """Take the policy's responses now and compare them with the previous snapshot, the one
        ``lag`` back, the first and the reference.

        ``policy``: a :class:`~behavsim.ResponseTable` on the monitor's contexts (e.g. from
        your own batched ``contexts -> table`` function), a policy object with
        ``act(belief)``, a callable ``belief -> act | (act, prompt)``, or whatever the
        ``respond`` hook accepts. ``dialogues``: training dialogues so far. Returns ``None``
        (and writes nothing) when a snapshot at ``dialogues`` or later is already recorded.
        """
        self._check_dialogues(dialogues)
        dialogues = int(dialogues)
        st = self._state
        if st.prev_dialogues is not None and dialogues <= st.prev_dialogues:
            return None
        if isinstance(policy, ResponseTable):
            table = policy
        else:
            table = self._respond(policy)
        if table.context_fingerprint != self.contexts.fingerprint or len(table) != len(self.contexts):
            raise ContextSetMismatch(
                f"snapshot at {dialogues}: the response table ({table.context_fingerprint}) was "
                f"not made on the monitor's contexts ({self.contexts.fingerprint})"
            )
        table = self._as_snapshot(table, dialogues)
        # files: settings, then the snapshot table, then the CSV row (a stop in between is
        # repaired on resume from the saved tables), then the plot
        (self.out_dir / _SNAPDIR).mkdir(parents=True, exist_ok=True)
        meta_path = self.out_dir / _META
        if not meta_path.is_file():
            atomic_write(meta_path, json.dumps(self._settings(), indent=1, sort_keys=True) + "\n")
        path = self.snapshot_path(dialogues)
        table.save(path)
        prev, prev_d = st.prev, st.prev_dialogues
        scores: dict[str, float] = {}
        lags: dict[str, dict[str, float]] = {}
        row: dict[str, Any] | None = None
        if prev is not None:
            row = self._row(table, dialogues)
            for r in st.rows:  # a new snapshot: the last one is no longer final
                r.update({k: v for k, v in _empty_lags(self.scores).items() if "final" in k})
            st.rows.append(row)
            atomic_write(self.csv_path, csv_text(st.rows, self.scores))
            scores = {s: row[s] for s in self.scores}
            for lag in LAGS[1:4]:
                vals = {s: row[lag_column(s, lag)] for s in self.scores}
                if not all(math.isnan(v) for v in vals.values()):
                    lags[lag] = vals
        st.prev, st.prev_dialogues = table, dialogues
        st.snaps.append(dialogues)
        st.tables[dialogues] = table
        self._prune()
        if self.plot and st.rows:
            self.redraw()
        if row is not None and self.tensorboard is not None:
            self._log([row], LAGS[:4], image=self.plot)
        result = SnapshotResult(
            dialogues=dialogues,
            prev_dialogues=prev_d,
            scores=scores,
            n=len(table),
            table_path=path,
            n_errors=table.n_errors,
            converged=prev is not None and self.converged,
            lags=lags,
        )
        if self.progress is True:
            print(f"{self.name}  {result.line()}", file=sys.stderr, flush=True)
        elif callable(self.progress):
            self.progress(result)
        return result

    def _as_snapshot(self, table: ResponseTable, dialogues: int) -> ResponseTable:
        meta = dict(table.policy)
        # what differs from snapshot to snapshot (the policy's own id, its file) goes under "path",
        # which behavsim.compare ignores with "id" and "checkpoint" when it groups one run's
        # snapshots: `behavsim compare snapshots/*.jsonl --pairs consecutive` pairs them in order
        path = meta.get("path")
        meta["path"] = {
            **(path if isinstance(path, dict) else {"file": path} if path else {}),
            "policy_id": meta.get("id"),
        }
        meta["id"] = f"snapshot-{dialogues:06d}"
        meta["checkpoint"] = dialogues
        return ResponseTable(
            policy=meta,
            context_fingerprint=table.context_fingerprint,
            acts=list(table.acts),
            prompts=list(table.prompts),
            errors=list(table.errors),
            context_ids=list(table.context_ids),
        )

    def finish(self) -> list[dict[str, Any]]:
        """The run is over: fill ``vs_final`` (every snapshot against the last; the last against
        itself is 1) in the CSV, the figure and TensorBoard. Returns the rows. A later snapshot
        empties the column again (the last is then no longer final)."""
        st = self._state
        if not st.rows:
            return self.rows
        final = st.snaps[-1]
        if all(r.get("final_dialogues") == final for r in st.rows):
            return self.rows
        others = [(f"s{r['dialogues']}", self._table(r["dialogues"])) for r in st.rows]
        means = self._compare_with(self._table(final), others)
        for r, (key, _) in zip(st.rows, others):
            r["final_dialogues"] = final
            r.update({lag_column(s, "vs_final"): means[key][s] for s in self.scores})
        self._prune()
        atomic_write(self.csv_path, csv_text(st.rows, self.scores))
        if self.plot:
            self.redraw()
        if self.tensorboard is not None:
            self._log(st.rows, ("vs_final",), image=False)
            if self.plot:
                self._log_image(st.rows[-1]["dialogues"])
        return self.rows

    def _respond(self, policy: Any) -> ResponseTable:
        """The policy's table on the monitor's contexts, through the ``respond`` hook or
        :func:`behavsim.respond` (errors are recorded per context; the snapshot line counts them)."""
        if self.respond is not None:
            table = self.respond(policy, self.contexts)
            if not isinstance(table, ResponseTable):
                raise ConfigError(f"respond: expected a ResponseTable, got {type(table).__name__}")
            return table
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolicyErrorsWarning)
            return respond_table(policy, self.contexts, progress=False)

    def _compare_with(self, table: ResponseTable, others: Sequence[tuple[str, ResponseTable]]) -> dict[str, Any]:
        """Means of every score, ``(other, table)`` for each named other table, in one comparison."""
        tables = [_with_id(table, "this")] + [_with_id(t, key) for key, t in others]
        pairs = [(i + 1, 0) for i in range(len(others))]
        comp = compare(
            tables, pairs, scores=self.scores, score_options=self.score_options, per_context=False, progress=False
        )
        out = {}
        for (key, _), (_, m) in zip(others, comp.means.iterrows()):
            out[key] = {**{s: float(m[s]) for s in self.scores}, "n": int(m["n"])}
        return out

    def _row(self, table: ResponseTable, dialogues: int) -> dict[str, Any]:
        """The CSV row of the snapshot at ``dialogues`` (the snapshots before it: ``_state.snaps``)."""
        history = [d for d in self._state.snaps if d < dialogues]
        prev_d, first_d = history[-1], history[0]
        lag_d = history[-self.lag] if len(history) >= self.lag else None
        others = [("prev", self._table(prev_d)), ("first", self._table(first_d))]
        if lag_d is not None:
            others.append(("lag", self._table(lag_d)))
        if self.reference is not None:
            others.append(("ref", self.reference))
        means = self._compare_with(table, others)
        row: dict[str, Any] = {
            "dialogues": int(dialogues),
            "prev_dialogues": prev_d,
            **{s: means["prev"][s] for s in self.scores},
            "n": means["prev"]["n"],
            **_empty_lags(self.scores),
        }
        row["first_dialogues"] = first_d
        row.update({lag_column(s, "vs_first"): means["first"][s] for s in self.scores})
        if lag_d is not None:
            row["lag_dialogues"] = lag_d
            row.update({lag_column(s, "vs_lag"): means["lag"][s] for s in self.scores})
        if self.reference is not None:
            row.update({lag_column(s, "vs_ref"): means["ref"][s] for s in self.scores})
        return row

    # -------------------------------------------------------------- figure and TensorBoard
    def redraw(self) -> Path | None:
        """Redraw ``convergence.png`` from the rows (``None`` while there are none)."""
        if not self._state.rows:
            return None
        thr = self.stop_rule.threshold if self.stop_rule else None
        return plot_lags(
            self._state.rows,
            self.scores,
            self.png_path,
            lag=self.lag,
            title=f"Convergence of {self.name}",
            threshold=thr,
        )

    def _tb_files(self) -> list[Path]:
        assert self.tensorboard is not None
        return sorted(self.tensorboard.glob(f"events.out.tfevents.*{SUFFIX}"))

    def _writer(self) -> Any:
        if self._tb is None:
            self._tb = TensorBoardWriter(self.tensorboard, option="tensorboard")  # type: ignore[arg-type]
        return self._tb

    def _log(self, rows: Sequence[Mapping[str, Any]], lags: Sequence[str], image: bool) -> None:
        """Scalars ``behavsim/<score>/<lag>`` of ``rows`` at step = training dialogues (undefined
        values are left out), then the figure at the last row's step."""
        w = self._writer()
        for r in rows:
            vals = {}
            for lag in lags:
                for s in self.scores:
                    v = r.get(lag_column(s, lag), math.nan)
                    if v is not None and not math.isnan(v):
                        vals[f"behavsim/{s}/{lag}"] = v
            w.scalars(vals, int(r["dialogues"]))
        if image and rows and self.plot:
            self._log_image(int(rows[-1]["dialogues"]))
        w.flush()

    def _log_image(self, step: int) -> None:
        if self.png_path.is_file():
            w = self._writer()
            w.image("behavsim/convergence", self.png_path.read_bytes(), step)
            w.flush()

    def close(self) -> None:
        """Close the TensorBoard event file (nothing else stays open)."""
        if self._tb is not None:
            self._tb.close()
            self._tb = None

    def __repr__(self) -> str:
        return (
            f"ConvergenceMonitor(name={self.name!r}, out_dir={str(self.out_dir)!r}, every={self.every}, "
            f"scores={self.scores}, snapshots_to={self.last_dialogues}, comparisons={len(self._state.rows)})"
        )


def _with_id(table: ResponseTable, pid: str) -> ResponseTable:
    meta = dict(table.policy)
    meta["id"] = pid
    return ResponseTable(
        policy=meta,
        context_fingerprint=table.context_fingerprint,
        acts=table.acts,
        prompts=table.prompts,
        errors=table.errors,
        context_ids=table.context_ids,
    )
