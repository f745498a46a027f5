"""Training runner: GP-SARSA trials with periodic checkpoints and evaluations (paper, Table 1).

A *run* is a folder ``DIR`` with

* ``DIR/config.json`` — the :class:`TrainConfig` (data, stored with every result);
* ``DIR/<reward>-seed<seed>/`` — one folder per *trial* (reward × seed) with
  ``ckpt-001000.npz``, ``ckpt-002000.npz``, … (GP only; see :mod:`policies.gp.checkpoint`) and
  ``metrics.csv`` (one row per checkpoint);
* ``DIR/metrics.csv`` — the rows of every trial, sorted by reward, seed and dialogues.

Every ``checkpoint_every`` training dialogues the policy is saved and evaluated on
``eval_dialogues`` dialogues: greedy, no learning, the same user goals for every checkpoint and
every trial (evaluation dialogue ``j`` is seeded from ``(eval_seed, j)``). Columns of the
metrics: ``policy, reward, seed, dialogues, tsr, aiq, adl, mean_reward, train_tsr,
train_mean_reward, dictionary_size, train_seconds, wall_seconds`` — TSR the task success rate,
AIQ the average final interaction quality (always the ``iq_estimator``, default
``"parameters"``, whatever the reward), ADL the average number of turns, ``mean_reward`` the
mean return of the evaluation dialogues under the trial's reward; ``train_tsr`` and
``train_mean_reward`` describe the (exploring) training dialogues of the block of
``checkpoint_every`` dialogues that ends at the checkpoint; ``train_seconds``/``wall_seconds``
time the training and the whole block (with evaluation and saving) — the only columns that
differ between two runs of the same configuration.

Determinism: training dialogue ``i`` of a trial is seeded from ``(seed, i)``, the exploration
noise comes from the learner's own generator (seeded from ``seed``, its state saved in every
checkpoint), BLAS runs single-threaded. The same configuration therefore gives byte-identical
checkpoint files, and a run that is stopped (or killed) and started again on the same ``DIR``
resumes from the last checkpoint of each trial and ends with the same files as an
uninterrupted run. Starting again with more ``dialogues`` (or more seeds/rewards) extends the
run; any other change of configuration is refused (:class:`ConfigMismatch`).

Trials run in parallel processes (``workers = min(trials, cores)``).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from behavsim import ConfigError, Registry, did_you_mean, get_executor, raise_if_interrupted
from behavsim.tensorboard import check_tensorboard_dir
from policies.gp.checkpoint import CheckpointError, read_checkpoint, read_meta, save_checkpoint
from policies.gp.policy import GPSarsaPolicy
from policies.handcrafted.policy import HandcraftedPolicy
from policies.simulation.domain import DEFAULT_DOMAIN, load_domain
from policies.simulation.env import DialogueEnv
from policies.simulation.iq import get_iq_estimator
from policies.simulation.rewards import get_reward, list_rewards
from policies.simulation.user import DEFAULT_USER, USER_CONFIGS
from policies.training.evaluation import EVAL_SEED, evaluate_policy, run_dialogue, train_dialogue_seed
from policies.training.files import (
    RunLock,
    checkpoint_dialogues,
    checkpoint_path,
    list_checkpoints,
    read_metrics,
    remove_partial_files,
    row_from_meta,
    trial_files,
    trial_name,
    write_if_changed,
    write_metrics,
)
from policies.training.progress import TensorBoardReport, TrainingProgress

__all__ = [
    "TrainConfig",
    "ConfigMismatch",
    "LEARNERS",
    "LearnerKind",
    "learner_kind",
    "list_learners",
    "run_training",
    "run_trial",
]

# configuration keys that change the numbers of a trial (others may change between invocations)
_FIXED_KEYS = (
    "policy",
    "checkpoint_every",
    "eval_dialogues",
    "eval_seed",
    "gamma",
    "sigma",
    "nu",
    "scale",
    "flush_every",
    "max_turns",
    "iq_estimator",
    "domain",
    "user",
    "eval_scale",
)
#: The environment of training configurations written before ``version`` 2, which did not name
#: it: behavsim 0.1's example domain and user.
_V1_ENVIRONMENT = {"domain": "example-restaurants", "user": "legacy"}


class ConfigMismatch(ConfigError):
    """The output folder holds a run with another configuration."""


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run (stored as ``DIR/config.json``)."""

    policy: str = "gp"
    rewards: tuple[str, ...] = ("ts",)
    seeds: tuple[int, ...] = (0,)
    dialogues: int = 40_000
    checkpoint_every: int = 1_000
    eval_dialogues: int = 100
    eval_seed: int = EVAL_SEED
    gamma: float = 1.0
    sigma: float = 5.0
    nu: float = 0.001
    scale: float = 3.0
    flush_every: int = 48
    max_turns: int = 25
    iq_estimator: str = "parameters"
    domain: str | None = None  # a shipped domain's name or a rules file (None: camrestaurants, the default)
    user: str | None = None  # a named simulated-user configuration (None: env1, Environment 1, the default)
    eval_scale: float = 0.0  # evaluation: 0 greedy on the posterior mean; 1 samples as PyDial's tests do
    version: int = field(default=2)

    def __post_init__(self) -> None:
        if self.domain is None:
            object.__setattr__(self, "domain", DEFAULT_DOMAIN)
        if self.user is None:
            object.__setattr__(self, "user", DEFAULT_USER)
        object.__setattr__(self, "rewards", tuple(self.rewards))
        object.__setattr__(self, "seeds", tuple(self.seeds))
        self.validate()

    def validate(self) -> None:
        learner_kind(self.policy)
        if not self.rewards:
            raise ConfigError("rewards: expected at least one reward name, got none")
        for r in self.rewards:
            if r not in list_rewards():
                raise ConfigError(
                    f"rewards: unknown reward {r!r}; valid: {list_rewards()}.{did_you_mean(r, list_rewards(), cutoff=0.0)}"
                )
        if len(set(self.rewards)) != len(self.rewards):
            raise ConfigError(f"rewards: duplicate names in {list(self.rewards)}")
        if not self.seeds:
            raise ConfigError("seeds: expected at least one seed, got none")
        for s in self.seeds:
            if not _is_int(s) or s < 0:
                raise ConfigError(f"seeds: expected non-negative integers, got {s!r}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"seeds: duplicate seeds in {list(self.seeds)}")
        for key in ("dialogues", "checkpoint_every", "eval_dialogues", "flush_every", "max_turns"):
            v = getattr(self, key)
            if not _is_int(v) or v < 1:
                raise ConfigError(f"{key}: expected a positive integer, got {v!r}")
        if self.checkpoint_every < self.dialogues and self.dialogues % self.checkpoint_every:
            raise ConfigError(
                f"dialogues ({self.dialogues}) is not a multiple of checkpoint_every ({self.checkpoint_every}): "
                "checkpoints must be evenly spaced for consecutive comparisons; e.g. dialogues "
                f"{self.dialogues - self.dialogues % self.checkpoint_every} or "
                f"{self.dialogues - self.dialogues % self.checkpoint_every + self.checkpoint_every}"
            )
        if not _is_int(self.eval_seed) or self.eval_seed < 0:
            raise ConfigError(f"eval_seed: expected a non-negative integer, got {self.eval_seed!r}")
        for key, ok, what in (
            ("gamma", lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]"),
            ("sigma", lambda v: v > 0.0, "a positive number"),
            ("nu", lambda v: v >= 0.0, "a non-negative number"),
            ("scale", lambda v: True, "a number"),
        ):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not ok(v):
                raise ConfigError(f"{key}: expected {what}, got {v!r}")
        if self.domain is not None:
            if not isinstance(self.domain, str) or not self.domain:
                raise ConfigError(f"domain: expected a domain name or a rules file, got {self.domain!r}")
            _domain_of(self)  # it must load
        if self.user is not None:
            if not isinstance(self.user, str) or self.user not in USER_CONFIGS:
                raise ConfigError(
                    f"user: unknown user configuration {self.user!r}.{did_you_mean(self.user, USER_CONFIGS.names())} "
                    f"Valid: {', '.join(USER_CONFIGS.names())}"
                )
        v = self.eval_scale
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ConfigError(f"eval_scale: expected a non-negative number (0: greedy), got {v!r}")
        if not isinstance(self.iq_estimator, str) or not self.iq_estimator:
            raise ConfigError(f"iq_estimator: expected an estimator name, got {self.iq_estimator!r}")

    # -------------------------------------------------------------- (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["rewards"] = list(self.rewards)
        d["seeds"] = [int(s) for s in self.seeds]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        if not isinstance(d, dict):
            raise ConfigError(f"config: expected a JSON object, got {type(d).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(
                f"config: unknown key {unknown[0]!r}; valid: {sorted(names)}.{did_you_mean(unknown[0], sorted(names), cutoff=0.0)}"
            )
        if not _is_int(d.get("version", 1)) or d.get("version", 1) < 2:  # before the CamRestaurants default
            d = {**_V1_ENVIRONMENT, **d}
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str) -> "TrainConfig":
        return cls.from_dict(json.loads(text))

    def fixed(self) -> dict[str, Any]:
        """The part of the configuration that must not change when a run is resumed."""
        d = self.to_dict()
        return {k: d[k] for k in _FIXED_KEYS}

    def trials(self) -> list[tuple[str, int]]:
        return [(r, int(s)) for r in self.rewards for s in self.seeds]

    def schedule(self) -> list[int]:
        """Dialogue counts at which checkpoints are written and evaluated."""
        pts = list(range(self.checkpoint_every, self.dialogues + 1, self.checkpoint_every))
        if not pts or pts[-1] != self.dialogues:
            pts.append(self.dialogues)
        return pts


# ---------------------------------------------------------------------- one trial
def _domain_of(config: TrainConfig) -> Any:
    """The run's domain (one that does not load is a :class:`behavsim.ConfigError` naming ``domain``)."""
    return load_domain(config.domain)


def _new_policy(config: TrainConfig, seed: int):
    return GPSarsaPolicy(
        _domain_of(config),
        seed=np.random.default_rng(np.random.SeedSequence([int(seed), 1])),
        gamma=config.gamma,
        sigma=config.sigma,
        nu=config.nu,
        scale=config.scale,
        flush_every=config.flush_every,
        nlg_seed=0,
    )


def _restore_gp(path: Path):
    """The GP-SARSA policy of a checkpoint file and the file's metadata."""
    learner, meta = read_checkpoint(path)
    try:
        return GPSarsaPolicy.from_checkpoint_meta(learner, meta), meta
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{path}: {err}") from None


def _new_handcrafted(config: TrainConfig, seed: int):
    return HandcraftedPolicy(_domain_of(config), nlg_seed=None)


@dataclass(frozen=True)
class LearnerKind:
    """How the runner handles one kind of policy (``TrainConfig.policy``).

    ``build(config, seed)`` makes the trial's fresh policy. A kind that ``learns`` is trained
    between checkpoints and saved at each (``ckpt-*.npz``; ``restore(path) -> (policy, meta)``
    reads one back to resume); one that does not is only evaluated at the checkpoints, and a
    resumed trial keeps the rows of its ``metrics.csv``. ``schedule(config)`` lists the
    dialogue counts at which it is evaluated.
    """

    name: str
    build: Callable[[TrainConfig, int], Any]
    learns: bool
    restore: Callable[[Path], tuple[Any, dict[str, Any]]] | None = None
    schedule: Callable[[TrainConfig], list[int]] = TrainConfig.schedule
    description: str = ""


#: The kinds of policy the runner can train or evaluate, by name.
LEARNERS: Registry[LearnerKind] = Registry("policy")
LEARNERS.register(
    "gp",
    LearnerKind("gp", _new_policy, learns=True, restore=_restore_gp, description="GP-SARSA, trained with exploration"),
)
LEARNERS.register(
    "handcrafted",
    LearnerKind("handcrafted", _new_handcrafted, learns=False, description="the handcrafted policy, evaluated only"),
)


def list_learners() -> list[str]:
    """The names ``TrainConfig.policy`` accepts."""
    return LEARNERS.names()


def learner_kind(name: str) -> LearnerKind:
    """The registered :class:`LearnerKind` called ``name`` (exact spelling)."""
    if name not in LEARNERS.names():
        raise ConfigError(
            f"policy: unknown policy {name!r}; valid: {list_learners()}."
            f"{did_you_mean(name, list_learners(), cutoff=0.0)}"
        )
    return LEARNERS.get(name)


def _resume(config: TrainConfig, reward: str, seed: int, tdir: Path, target: int):
    """Latest usable checkpoint ``(dialogues, policy, meta)`` of a trial, or ``(0, None, None)``."""
    ckpts = [(n, p) for n, p in list_checkpoints(tdir) if n <= target]
    if not ckpts:
        return 0, None, None
    n, path = ckpts[-1]
    restore = learner_kind(config.policy).restore
    if restore is None:  # a kind that writes no checkpoints has none to resume from
        return 0, None, None
    pol, meta = restore(path)
    _check_training(path, meta, config, reward, seed, n)
    return n, pol, meta


def _check_training(path: Path, meta: dict[str, Any], config: TrainConfig, reward: str, seed: int, n: int) -> None:
    """Refuse a checkpoint written by another trial or configuration."""
    t = meta.get("training") or {}
    want = {"policy": config.policy, "reward": reward, "seed": seed, "dialogues": n, "run": config.fixed()}
    got = {k: t.get(k) for k in want}
    if got != want:
        diff = [k for k in want if got[k] != want[k]]
        raise CheckpointError(
            f"{path}: foreign checkpoint: it records {', '.join(f'{k}={got[k]!r}' for k in diff)}, "
            f"this run expects {', '.join(f'{k}={want[k]!r}' for k in diff)}"
        )


def run_trial(
    config: TrainConfig,
    reward_name: str,
    seed: int,
    out_dir: str | os.PathLike,
    report: Callable[[tuple], None] | None = None,
) -> list[dict[str, Any]]:
    """Train (or only evaluate, for ``policy="handcrafted"``) one trial; returns its metric rows.

    Resumes from the trial folder's last checkpoint; writes ``ckpt-*.npz`` and ``metrics.csv``.
    ``report`` receives ``("progress", trial, dialogues)`` and ``("checkpoint", trial, row)``.
    """
    with threadpool_limits(limits=1):
        return _run_trial(config, reward_name, int(seed), Path(out_dir), report)


@dataclass
class _Trial:
    """One trial being run: its folder, reward, IQ estimator, environments and schedule."""

    config: TrainConfig
    kind: LearnerKind
    reward_name: str
    seed: int
    name: str
    dir: Path
    reward: Any
    estimator: Any
    schedule: list[int]
    train_env: Any
    eval_env: Any

    @property
    def target(self) -> int:
        return self.schedule[-1]

    @property
    def metrics_path(self) -> Path:
        return self.dir / "metrics.csv"


def _run_trial(config: TrainConfig, reward_name: str, seed: int, out_dir: Path, report) -> list[dict[str, Any]]:
    trial = _open_trial(config, reward_name, seed, out_dir)
    start, policy, acc, rows = _resume_trial(trial)
    write_metrics(trial.metrics_path, rows)
    done = start
    for point in trial.schedule:
        if point <= start:
            continue
        raise_if_interrupted()  # a command's interrupt that a library swallowed: stop here
        t0 = time.perf_counter()
        if trial.kind.learns:
            acc = _train_block(trial, policy, done, point, acc, report)
        t_train = time.perf_counter() - t0
        row = _checkpoint(trial, policy, point, acc)
        row.update(train_seconds=t_train, wall_seconds=time.perf_counter() - t0)
        rows.append(row)
        rows.sort(key=lambda x: x["dialogues"])
        write_metrics(trial.metrics_path, rows)
        done = point
        if report is not None:
            report(("progress", trial.name, point))
            report(("checkpoint", trial.name, row))
    return [r for r in rows if r["dialogues"] <= trial.target]


def _open_trial(config: TrainConfig, reward_name: str, seed: int, out_dir: Path) -> _Trial:
    """The trial's folder (created; temporary files of a run killed while writing removed) and
    everything its dialogues need."""
    name = trial_name(reward_name, seed)
    tdir = out_dir / name
    tdir.mkdir(parents=True, exist_ok=True)
    remove_partial_files(out_dir, [name])
    kind = learner_kind(config.policy)
    return _Trial(
        config=config,
        kind=kind,
        reward_name=reward_name,
        seed=seed,
        name=name,
        dir=tdir,
        reward=get_reward(reward_name),
        estimator=get_iq_estimator(config.iq_estimator),
        schedule=kind.schedule(config),
        train_env=DialogueEnv(_domain_of(config), max_turns=config.max_turns, user_config=config.user),
        eval_env=DialogueEnv(_domain_of(config), max_turns=config.max_turns, user_config=config.user),
    )


def _new_acc() -> dict[str, Any]:
    """Training statistics of one block of ``checkpoint_every`` dialogues."""
    return {"n": 0, "success": 0, "reward": 0.0}


def _resume_trial(trial: _Trial) -> tuple[int, Any, dict[str, Any], list[dict[str, Any]]]:
    """Where the trial stands: ``(dialogues done, policy, current block's statistics, metric rows)``."""
    config = trial.config
    old_rows: dict[int, dict[str, Any]] = {}
    if trial.metrics_path.is_file():
        try:
            for r in read_metrics(trial.metrics_path):
                old_rows[int(r["dialogues"])] = r
        except (ValueError, KeyError, csv.Error) as err:
            raise CheckpointError(f"{trial.metrics_path}: unreadable metrics file ({err})") from None
    if not trial.kind.learns:
        # nothing to restore: the rows of the metrics file say which checkpoints were evaluated
        rows = [old_rows[n] for n in trial.schedule if n in old_rows and old_rows[n].get("policy") == config.policy]
        start = rows[-1]["dialogues"] if rows else 0
        rows = [r for r in rows if r["dialogues"] <= start]
        return start, trial.kind.build(config, trial.seed), _new_acc(), rows
    start, policy, meta = _resume(config, trial.reward_name, trial.seed, trial.dir, trial.target)
    if policy is None:
        policy = trial.kind.build(config, trial.seed)
    acc = dict(meta["training"]["train_acc"]) if meta is not None else _new_acc()
    # rows come from the checkpoints (authoritative); only the timings from the old CSV,
    # which lacks the last row when a run was killed between checkpoint and CSV
    rows = []
    for n, path in list_checkpoints(trial.dir):
        m = meta if n == start else read_meta(path)
        _check_training(path, m, config, trial.reward_name, trial.seed, n)
        old = old_rows.get(n) or {}
        rows.append(row_from_meta(m, old.get("wall_seconds"), old.get("train_seconds")))
    return start, policy, acc, rows


def _train_block(trial: _Trial, policy: Any, done: int, point: int, acc: dict[str, Any], report) -> dict[str, Any]:
    """Training dialogues ``done .. point-1`` with exploration and learning; returns the
    statistics of the block of ``checkpoint_every`` dialogues that ends at ``point``."""
    learner = policy.learner
    for i in range(done, point):
        if i % trial.config.checkpoint_every == 0:
            acc = _new_acc()
        vecs, acts, total, info = run_dialogue(
            trial.train_env, policy, train_dialogue_seed(trial.seed, i), explore=True
        )
        ret = total + trial.reward.final_reward(info)
        learner.learn_episode(np.asarray(vecs), acts, ret)
        acc["n"] += 1
        acc["success"] += int(bool(info["success"]))
        acc["reward"] += ret  # sequential sum: identical after a resume
        if report is not None and (i + 1) % 100 == 0:
            report(("progress", trial.name, i + 1))
    return acc


def _checkpoint(trial: _Trial, policy: Any, point: int, acc: dict[str, Any]) -> dict[str, Any]:
    """Evaluate the policy after ``point`` dialogues, save it if it learns; returns the metric
    row (without the timings)."""
    config = trial.config
    ev = evaluate_policy(
        policy,
        config.eval_dialogues,
        reward=trial.reward,
        eval_seed=config.eval_seed,
        iq_estimator=trial.estimator,
        env=trial.eval_env,
        scale=config.eval_scale,
    )
    trained = trial.kind.learns and acc["n"] > 0
    train_stats = {
        "tsr": acc["success"] / acc["n"] if trained else None,
        "mean_reward": acc["reward"] / acc["n"] if trained else None,
    }
    dict_size = None
    if trial.kind.learns:
        meta_training = {
            "policy": config.policy,
            "reward": trial.reward_name,
            "reward_signature": trial.reward.signature,
            "seed": trial.seed,
            "dialogues": point,
            "run": config.fixed(),
            "eval": ev.summary(),
            "train": train_stats,
            "train_acc": dict(acc),
            "dictionary_size": policy.learner.dictionary_size,
        }
        save_checkpoint(checkpoint_path(trial.dir, point), policy, meta_training)
        dict_size = policy.learner.dictionary_size
    return {
        "policy": config.policy,
        "reward": trial.reward_name,
        "seed": trial.seed,
        "dialogues": point,
        **ev.summary(),
        "train_tsr": train_stats["tsr"],
        "train_mean_reward": train_stats["mean_reward"],
        "dictionary_size": dict_size,
        "train_seconds": None,
        "wall_seconds": None,
    }


# ---------------------------------------------------------------------- whole runs
def _prepare_dir(config: TrainConfig, out_dir: Path) -> TrainConfig:
    """Create ``out_dir`` or check it against ``config``; returns the config to store."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cpath = out_dir / "config.json"
    stored = config
    if cpath.is_file():
        try:
            old = TrainConfig.from_json(cpath.read_text(encoding="utf-8"))
        except (ValueError, TypeError) as err:
            raise ConfigMismatch(f"{cpath}: unreadable run configuration ({err})") from None
        a, b = old.fixed(), config.fixed()
        diff = [k for k in a if a[k] != b[k]]
        if diff:
            raise ConfigMismatch(
                f"{out_dir} holds a run with another configuration ("
                + ", ".join(f"{k}: {a[k]!r} there, {b[k]!r} now" for k in diff)
                + "); choose another output folder or the same settings"
            )
        stored = dataclasses.replace(
            config,
            rewards=tuple(dict.fromkeys(old.rewards + config.rewards)),
            seeds=tuple(dict.fromkeys(old.seeds + config.seeds)),
            dialogues=max(old.dialogues, config.dialogues),
        )
    elif any(p.name != ".lock" for p in out_dir.iterdir()):
        raise ConfigMismatch(f"{out_dir} is not empty and holds no config.json; refusing to write a run there")
    write_if_changed(cpath, stored.to_json() + "\n")
    return stored


def _local_trial_task(job: tuple[dict, str, int, str], report: Callable[[tuple], None]) -> list[dict[str, Any]]:
    """One trial in a local worker (or in this process), written straight into the run folder;
    its progress goes to the driver through ``report``."""
    config_dict, reward, seed, out_dir = job
    return run_trial(TrainConfig.from_dict(config_dict), reward, seed, out_dir, report)


def run_training(
    config: TrainConfig,
    out_dir: str | os.PathLike,
    *,
    workers: int | None = None,
    progress: bool = True,
    tensorboard: str | os.PathLike | None = None,
    executor: Any = None,
) -> list[dict[str, Any]]:
    """Run (or resume) every trial of ``config`` in ``out_dir``; returns all metric rows.

    ``workers`` defaults to ``min(trials, cores)``; with one worker the trials run in this
    process, one after the other. Writes ``out_dir/metrics.csv`` at the end. ``tensorboard``:
    a folder that receives each checkpoint's TSR, AIQ and ADL as TensorBoard scalars, one run
    folder per trial (``pip install 'behavsim[tensorboard]'``). ``executor``: where the trials
    run (:func:`behavsim.get_executor`; ``"local"``, the default, ``"local:N"``, or
    ``"ray[:ADDRESS]"``: one task per trial on a Ray cluster, which gets the trial's files and
    returns the new ones; this process writes every file, and a trial finished on any node is
    kept when the run is interrupted). The files are the same whatever the executor.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config: expected a TrainConfig, got {type(config).__name__}")
    ex = get_executor(executor)
    if workers is not None and (not _is_int(workers) or workers < 1):
        raise ConfigError(f"workers: expected a positive integer, got {workers!r}")
    if workers is not None and not ex.is_local:
        raise ConfigError(f"workers: applies to the local executor only, not to {ex.spec!r}")
    if workers is None and ex.is_local:
        workers = getattr(ex, "workers", None)
    ex.connect()  # an unreachable cluster is refused before the run folder is made
    out = Path(out_dir)
    if out.is_dir() and not (out / "config.json").is_file() and any(p.name != ".lock" for p in out.iterdir()):
        raise ConfigMismatch(f"{out} is not empty and holds no config.json; refusing to write a run there")
    tb = None
    if tensorboard is not None:
        tb = check_tensorboard_dir(tensorboard, "tensorboard")
    out.mkdir(parents=True, exist_ok=True)
    with RunLock(out):
        return _run_training(config, out, workers, progress, tb, None if ex.is_local else ex)


def _run_training(
    config: TrainConfig,
    out: Path,
    workers: int | None,
    progress: bool,
    tensorboard: Path | None = None,
    executor: Any = None,
) -> list[dict[str, Any]]:
    _prepare_dir(config, out)
    trials = config.trials()
    names = [trial_name(r, s) for r, s in trials]
    n_workers = min(len(trials), os.cpu_count() or 1) if workers is None else int(workers)
    bar = TrainingProgress(learner_kind(config.policy).schedule(config)[-1], names, progress)
    report: Any = bar if tensorboard is None else TensorBoardReport(bar, tensorboard)
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        if executor is not None:
            results = _run_on_executor(config, out, trials, names, executor, report)
        else:
            results = _run_local(config, out, trials, names, n_workers, report)
    finally:
        bar.close()
        if report is not bar:
            report.close()
    rows = [row for name in names for row in results[name]]
    _write_all_metrics(out)
    return rows


def _run_local(config, out, trials, names, n_workers, report) -> dict[str, list[dict[str, Any]]]:
    """The trials on ``n_workers`` local processes (one: in this process), each writing its own
    trial folder; progress reported as it happens. On an error or an interrupt the executor stops
    the other trials at once: safe, every file is written atomically and a new start resumes
    from the checkpoints (the temporary files of the killed workers are removed)."""
    jobs = [(config.to_dict(), r, s, str(out)) for r, s in trials]
    try:
        rows = get_executor(f"local:{n_workers}").map(_local_trial_task, jobs, on_progress=lambda i, msg: report(msg))
    except BaseException:
        remove_partial_files(out, names)
        raise
    return dict(zip(names, rows))


def _trial_task(job: tuple[dict, str, int, dict[str, bytes]]) -> tuple[list[dict[str, Any]], dict[str, bytes]]:
    """One trial as a task on any node: resumed from the files it is given, run in a private
    temporary folder; returns its metric rows and its files."""
    config_dict, reward, seed, files = job
    with tempfile.TemporaryDirectory(prefix="behavsim-trial-") as tmp:
        tdir = Path(tmp) / trial_name(reward, seed)
        tdir.mkdir()
        for name, data in files.items():
            (tdir / name).write_bytes(data)
        rows = run_trial(TrainConfig.from_dict(config_dict), reward, seed, tmp)
        return rows, trial_files(tdir)


def _run_on_executor(config, out, trials, names, executor, report) -> dict[str, list[dict[str, Any]]]:
    """Every trial as one task of ``executor``; this process writes what each returns (checkpoints
    first, ``metrics.csv`` last, each atomically) as soon as it finishes."""
    before = {name: trial_files(out / name) for name in names}
    done_before = {
        name: max([n for f in files if (n := checkpoint_dialogues(f)) is not None] or [0])
        for name, files in before.items()
    }
    results: dict[str, list[dict[str, Any]]] = {}

    def finished(i: int, result: tuple[list[dict[str, Any]], dict[str, bytes]]) -> None:
        rows, files = result
        name = names[i]
        tdir = out / name
        tdir.mkdir(parents=True, exist_ok=True)
        for fname in sorted(files, key=lambda n: n == "metrics.csv"):
            if before[name].get(fname) != files[fname]:
                tmp = tdir / f".{fname}.tmp{os.getpid()}"
                tmp.write_bytes(files[fname])
                os.replace(tmp, tdir / fname)
        results[name] = rows
        for row in rows:
            if row["dialogues"] > done_before[name]:
                report(("progress", name, row["dialogues"]))
                report(("checkpoint", name, row))

    jobs = [(config.to_dict(), r, s, before[name]) for (r, s), name in zip(trials, names)]
    executor.map(_trial_task, jobs, on_result=finished)
    return results


def _write_all_metrics(out: Path) -> Path:
    """``out/metrics.csv``: the rows of every trial folder listed in ``config.json``."""
    config = TrainConfig.from_json((out / "config.json").read_text(encoding="utf-8"))
    rows = []
    for r, s in config.trials():
        p = out / trial_name(r, s) / "metrics.csv"
        if p.is_file():
            rows += [row for row in read_metrics(p) if row["dialogues"] <= config.dialogues]
    rows.sort(key=lambda x: (x["reward"], x["seed"], x["dialogues"]))
    write_metrics(out / "metrics.csv", rows)
    return out / "metrics.csv"
