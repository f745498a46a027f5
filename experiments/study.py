"""The paper's study as a pipeline of named stages: train, build contexts, respond, compare,
analyse, draw, report.

* :class:`StudyConfig` — everything that defines a study (``config.json``, the manifest): its
  fields, and the settings the registered stages add (``Stage.settings``, e.g. the end-to-end
  trials' ``e2e_teachers``).
* :class:`Stage` — one step: a name, the run-folder files it reads and writes, when it is up to
  date. Stages are registered in the entry-point group ``behavsim.study_stages`` (the built-in
  ones in ``setup.cfg``, as a third-party package would) or with :func:`register_stage`, and run
  in the order of their ``order``.
* :func:`run_study` — the plan: every stage that applies, in order, on one
  :class:`~experiments.runfolder.RunFolder`, each resumable (finished work is never recomputed).

The built-in stages (``behavsim reproduce`` logs them as ``[k/N] ...``)::

       0  legacy       a run folder written by an earlier version, brought to today's form
     100  train        GP-SARSA trials, a checkpoint every K dialogues (Table 1)   stages/train.py
     150  e2e-train    end-to-end models imitating their teachers (e2e_teachers)    e2e.py
     200  contexts     C_gen (the grid), C_col per reward and their union           stages/contexts.py
     250  corpus-contexts  a corpus split as a context set; the human wizard's table  corpus.py
     260  corpus-e2e   end-to-end models trained for the study against people  corpus.py
     300  respond      every checkpoint and the handcrafted policy on every set     stages/respond.py
     350  e2e-respond  the end-to-end checkpoints on C_col^all                      e2e.py
     360  corpus-respond  the corpus_policies on the corpus's contexts              corpus.py
     400  compare      convergence, seeds, rewards, other policies; bootstrap CIs   stages/compare.py
     450  e2e          the end-to-end comparisons and the CER-USE agreement         e2e.py
     455  corpus       every policy against the human wizard (with a corpus)        corpus.py
     500  analyse      score agreement, the reward-vs-seed tests                    stages/analyse.py
     600  figures      the figures of results/                                      stages/figures.py
     700  map          the behaviour map of every policy on C_gen                   behaviour_map.py
     800  robustness   each policy against itself on noisier beliefs (robustness)   robustness.py
     900  manifest     config, code version, signatures, sets, figures, wall time   stages/manifest.py
    1000  report       the self-contained HTML report                               report.py

The run folder's layout is documented in ``docs/report.md``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from types import MappingProxyType
from typing import Any

from behavsim import (
    DEFAULT_SCORES,
    ConfigError,
    UnknownScore,
    closest_name,
    get_executor,
    parse_spec,
    raise_if_interrupted,
)
from behavsim.scores import scores as score_registry
from experiments.registry import OrderedPlugins
from experiments.runfolder import RunFolder
from policies.training.train import TrainConfig

__all__ = [
    "StudyConfig",
    "load_config",
    "list_configs",
    "CONFIG_DIR",
    "Stage",
    "Study",
    "study_stages",
    "register_stage",
    "list_study_stages",
    "stage_key",
    "run_study",
]

CONFIG_DIR = Path(__file__).parent / "configs"

#: Config keys added after the first runs: left out of the stored config when at their default.
_OPTIONAL_KEYS = ("robustness", "policies")


@dataclass(frozen=True)
class StudyConfig:
    """Everything that defines a study (stored in ``RUN_DIR/manifest.json``)."""

    name: str = "custom"
    rewards: tuple[str, ...] = ("ts", "iq")
    seeds: tuple[int, ...] = (0, 1, 2)
    dialogues: int = 10_000
    checkpoint_every: int = 1_000
    eval_dialogues: int = 100
    grid_step: float = 0.2
    collect_dialogues: int = 10
    collect_seed: int = 0
    scores: tuple[str, ...] = DEFAULT_SCORES
    bootstrap: int = 1000
    permutations: int = 10_000
    analysis_seed: int = 0
    disagreements: int = 15
    nlg: str = "per-trial"
    report: bool = True
    domain: str | None = None  # a shipped domain's name or a rules file; None: camrestaurants, the default
    user: str | None = None  # simulated-user configuration; None: env1 (Environment 1), the default
    eval_scale: float = 0.0  # Table 1's evaluation: 0 greedy, 1 sampling as PyDial's tests do
    # optional robustness probe (issue: how stable is behaviour under noisier beliefs?): noise levels
    # at which the last checkpoint of each trial and the handcrafted policy are compared with
    # themselves on perturbed C_gen (``contexts.perturb``); empty: no probe
    robustness: tuple[float, ...] = ()
    # other policies compared with the trained ones (issue: LLM and end-to-end policies beside the
    # RL ones): policy specs of any kind ("openai:MODEL@URL", "hf:DIR", "e2e:DIR", "recorded:FILE",
    # a module:function); they answer the collected contexts C_col^all (which carry histories) and
    # are compared with the last checkpoint of every trial, the handcrafted policy and each other
    policies: tuple[str, ...] = ()
    # how often each of those policies is asked every context (>= 2: their self-agreement is
    # measured and shown beside the scores; the trained policies are deterministic)
    repeat: int = 1
    # where training and responses run (local, local:N, ray, ray:ADDRESS); not part of the study's
    # identity: a run folder resumes under any executor and the results are the same
    executor: str = "local"
    # the settings the registered stages add (``Stage.settings``), each at its default unless
    # given: in a config file they are keys like the fields above (``e2e_teachers = [...]``)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in ("dialogues", "checkpoint_every", "eval_dialogues", "collect_dialogues"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"study config {key!r}: expected a positive integer, got {v!r}")
        if self.dialogues % self.checkpoint_every:
            raise ConfigError(
                f"study config: dialogues ({self.dialogues}) must be a multiple of checkpoint_every "
                f"({self.checkpoint_every})"
            )
        if not self.seeds or not self.rewards:
            raise ConfigError("study config: needs at least one seed and one reward")
        self._check_policies()
        if self.nlg not in ("per-trial", "shared"):
            raise ConfigError(f"study config 'nlg': expected 'per-trial' or 'shared', got {self.nlg!r}")
        object.__setattr__(self, "scores", tuple(self._score_name(s) for s in self.scores))
        for x in self.robustness:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0.0 <= x <= 1.0:
                raise ConfigError(f"study config 'robustness': noise levels are numbers in [0, 1], got {x!r}")
        try:
            get_executor(self.executor)
        except ConfigError as exc:
            raise ConfigError(f"study config 'executor': {exc}") from None
        try:  # the training runner checks them, and fills in the defaults, as at the training stage
            tc = TrainConfig(
                rewards=self.rewards, seeds=self.seeds, domain=self.domain, user=self.user, eval_scale=self.eval_scale
            )
        except ConfigError as exc:
            raise ConfigError(f"study config: {exc}") from None
        object.__setattr__(self, "domain", tc.domain)
        object.__setattr__(self, "user", tc.user)
        self._fill_settings()

    def _check_policies(self) -> None:
        for spec in self.policies:
            if not isinstance(spec, str):
                raise ConfigError(f"study config 'policies': expected policy spec strings, got {spec!r}")
            try:
                parse_spec(spec)
            except ConfigError as exc:
                raise ConfigError(f"study config 'policies': {spec!r}: {exc}") from None
        if len(set(self.policies)) != len(self.policies):
            raise ConfigError(f"study config 'policies': a policy is listed twice: {list(self.policies)}")
        if isinstance(self.repeat, bool) or not isinstance(self.repeat, int) or self.repeat < 1:
            raise ConfigError(f"study config 'repeat': expected a positive integer, got {self.repeat!r}")

    def _fill_settings(self) -> None:
        """Every registered stage's settings at their given value or default (lists as tuples);
        then each stage checks its own."""
        declared = stage_settings()
        unknown = sorted(set(self.settings) - set(declared))
        if unknown:
            raise ConfigError(f"study config: unknown settings {unknown}; the stages' settings: {sorted(declared)}")
        values = {k: _frozen(self.settings.get(k, default)) for k, default in declared.items()}
        object.__setattr__(self, "settings", MappingProxyType(values))
        for stage in study_stages.ordered():
            if stage.check is not None:
                stage.check(self)

    @staticmethod
    def _score_name(name: Any) -> str:
        """The registered spelling of a score name (case-insensitive); unknown names are refused
        with the closest registered one."""
        if not isinstance(name, str):
            raise ConfigError(f"study config 'scores': expected score names, got {name!r}")
        try:
            return score_registry.canonical(name)
        except UnknownScore as exc:
            raise ConfigError(f"study config 'scores': {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """The study's identity (stored in ``config.json`` and the manifest): every setting but
        ``executor``, which changes where the work runs, not what it gives; optional keys added
        after the first runs (and the stages' settings) are left out at their default, so that
        those runs resume."""
        names = [f.name for f in dataclasses.fields(self) if f.name not in ("executor", "settings")]
        d = {k: getattr(self, k) for k in names}
        for key in _OPTIONAL_KEYS:
            if not d.get(key):
                d.pop(key)
        if d.get("repeat") == 1:
            d.pop("repeat")
        defaults = stage_settings()
        d.update({k: v for k, v in self.settings.items() if v != defaults.get(k)})
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, source: str = "config") -> "StudyConfig":
        fields = {f.name for f in dataclasses.fields(cls)} - {"settings"}
        names = fields | set(stage_settings())
        unknown = sorted(set(d) - names)
        if unknown:
            close = {u: closest_name(u, names, cutoff=0.6) for u in unknown}
            hints = [f"{u!r} (did you mean {close[u]!r}?)" if close[u] else repr(u) for u in unknown]
            raise ConfigError(f"{source}: unknown keys {', '.join(hints)}; valid keys: {sorted(names)}")
        kw: dict[str, Any] = {k: _frozen(v) for k, v in d.items() if k in fields}
        kw["settings"] = {k: v for k, v in d.items() if k not in fields}
        try:
            return cls(**kw)
        except TypeError as exc:
            raise ConfigError(f"{source}: {exc}") from None


def _frozen(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def list_configs() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))


def load_config(name_or_path: str, **overrides: Any) -> StudyConfig:
    """A config by name (``quick``, ``paper``, ``tiny``; files in ``experiments/configs``) or path (.toml/.json)."""
    path = Path(name_or_path)
    if not path.suffix:
        path = CONFIG_DIR / f"{name_or_path}.toml"
        if not path.is_file():
            raise ConfigError(
                f"unknown study config {name_or_path!r}; built-in configs: {list_configs()} "
                "(or pass a .toml/.json file)"
            )
    if not path.is_file():
        raise ConfigError(f"study config file {str(path)!r} not found")
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read study config: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: cannot read study config: nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a study config is a table of settings, found a {type(data).__name__}")
    data.setdefault("name", path.stem)
    data.update({k: v for k, v in overrides.items() if v is not None})
    return StudyConfig.from_dict(data, source=str(path))


# ------------------------------------------------------------------------------------ stages
class Clock:
    """Seconds spent in each stage (``lap`` closes the stage that just ended)."""

    def __init__(self) -> None:
        self.t0 = self.mark = time.perf_counter()
        self.stages: dict[str, float] = {}

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.stages[stage] = round(now - self.mark, 2)
        self.mark = now

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


@dataclass
class Study:
    """What a stage works with: the config, the run folder (every file it reads or writes, and
    what the stages before it built in this run), where to log, where the heavy work runs
    (:func:`behavsim.get_executor`; this process writes every file) and the time spent."""

    cfg: StudyConfig
    run: RunFolder
    log: Callable[[str], None]
    executor: Any
    clock: Clock = field(default_factory=Clock)


@dataclass(frozen=True)
class Stage:
    """One step of the study, registered under its ``name`` (see the module doc).

    ``run(study)`` does the work, resuming inside where it can (a trial from its checkpoints, a
    response table that is there). With a ``key`` (a function of the study giving the hash of its
    inputs, :func:`stage_key`) the whole stage is skipped when ``state.json`` records it done with
    that key and every file of its ``outputs`` unchanged; ``record``: outputs of a stage that runs
    every time, recorded so that ``behavsim report`` can check them.

    ``inputs`` and ``outputs``: run-folder paths (globs; ``dir/``: a folder) and what they are —
    every input must be an output of a stage before it (checked when the plan is made).
    ``applies(study)``: whether it runs in this study (default: always). ``settings``: config keys
    it adds, with their defaults (read as ``study.cfg.settings[key]``); ``check(cfg)`` refuses bad
    values as the config is made; ``preflight(cfg)`` checks what needs the machine (a model
    folder, a server) before any stage runs.
    """

    name: str
    order: int
    title: str | Callable[[StudyConfig], str]
    run: Callable[[Study], None]
    inputs: Mapping[str, str] = field(default_factory=dict)
    outputs: Mapping[str, str] = field(default_factory=dict)
    key: Callable[[Study], str] | None = None
    record: tuple[str, ...] = ()
    applies: Callable[[Study], bool] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    check: Callable[[StudyConfig], None] | None = None
    preflight: Callable[[StudyConfig], None] | None = None

    def heading(self, cfg: StudyConfig) -> str:
        return self.title(cfg) if callable(self.title) else self.title


#: The registered stages (entry-point group ``behavsim.study_stages``).
study_stages: OrderedPlugins[Stage] = OrderedPlugins(
    "study stage", "behavsim.study_stages", Stage, lambda stage: stage.name
)


def register_stage(stage: Stage) -> Stage:
    """Add a stage from code (a package adds one through the entry-point group
    ``behavsim.study_stages`` instead)."""
    return study_stages.add(stage)


def list_study_stages() -> list[str]:
    """The registered stages' names, in the order they run."""
    return [s.name for s in study_stages.ordered()]


def stage_settings() -> dict[str, Any]:
    """Every registered stage's settings with their defaults, in stage order."""
    out: dict[str, Any] = {}
    for stage in study_stages.ordered():
        out.update(stage.settings)
    return out


def stage_key(*parts: Any) -> str:
    """A stage's key: a short hash of what its results are computed from."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _overlaps(a: str, b: str) -> bool:
    a, b = a.rstrip("/"), b.rstrip("/")
    return a == b or a.startswith(b + "/") or b.startswith(a + "/") or fnmatch(a, b) or fnmatch(b, a)


def plan(study: Study) -> list[Stage]:
    """The stages that apply to this study, in order; each one's inputs written by one before it."""
    stages = [s for s in study_stages.ordered() if s.applies is None or s.applies(study)]
    for k, stage in enumerate(stages):
        for path in stage.inputs:
            if not any(_overlaps(path, out) for before in stages[:k] for out in before.outputs):
                raise ConfigError(
                    f"study stage {stage.name!r} reads {path}, which no stage before it writes "
                    f"(the stages in order: {', '.join(s.name for s in stages)})"
                )
    return stages


def _run_stage(study: Study, stage: Stage, tag: str) -> None:
    """One stage: skipped when done with its key, else run (and marked done)."""
    title = stage.heading(study.cfg)
    key = stage.key(study) if stage.key is not None else None
    if key is not None and study.run.done(stage.name, key):
        study.log(f"{tag} {title.split(':')[0].split(' (')[0]}: up to date")
    else:
        study.log(f"{tag} {title}")
        stage.run(study)
        if key is not None:
            study.run.mark(stage.name, key, study.run.files(stage.outputs))
    if stage.record:
        study.run.record(stage.name, study.run.files(stage.record))
    study.clock.lap(stage.name)


def run_study(
    cfg: StudyConfig,
    run_dir: str | os.PathLike,
    *,
    log: Callable[[str], None] | None = None,
    executor: Any = None,
) -> Path:
    """Run (or resume) the study ``cfg`` in ``run_dir``: every stage that applies, in order (see
    the module doc); returns the run folder.

    ``executor`` (default: the config's ``executor``, ``"local"``): where the training trials and
    the responses run (:func:`behavsim.get_executor`); this process writes every file, so the run
    folder lives on this machine, and the results are the same under any executor.
    """
    log = log or (lambda m: print(m, flush=True))
    ex = get_executor(cfg.executor if executor is None else executor)
    ex.connect()  # an unreachable cluster is refused before the run folder is made
    for stage in study_stages.ordered():  # ... and a policy that cannot be loaded, before any training
        if stage.preflight is not None:
            stage.preflight(cfg)
    run = RunFolder(run_dir)
    run.create(json.dumps(cfg.to_dict(), indent=2, sort_keys=True) + "\n")
    study = Study(cfg, run, log, ex)
    if not ex.is_local:
        log(f"executor: {ex.spec} (training trials and responses run as its tasks)")
    stages = plan(study)
    for k, stage in enumerate(stages, 1):
        _run_stage(study, stage, f"[{k}/{len(stages)}]")
        raise_if_interrupted()  # a command's interrupt that a library swallowed stops the run here
    run.write_text("timings.json", json.dumps({"stage_seconds": study.clock.stages}, indent=2) + "\n")
    log(f"done in {study.clock.elapsed():.0f} s; run folder {run.root}")
    return run.root
