"""The paper's study, end to end: train, build contexts, respond, compare, analyse, plot, report.

Stages (each resumable; finished work is never recomputed):

1. **train** GP-SARSA trials for every reward and seed, a checkpoint every K dialogues, each
   evaluated on M dialogues (Table 1) — :mod:`policies.training.train`, which resumes from checkpoints;
2. **contexts**: C_gen (the grid) and C_col per reward (belief states of seeded evaluation
   dialogues of the last checkpoint of every trial of that reward), and their union;
3. **respond**: every checkpoint and the handcrafted policy on every context set;
4. **compare**: convergence (checkpoint k−1 vs k of each trial, on C_col of its reward
   and on C_gen), seeds (every pair of trials of one reward at equal checkpoints, on C_col^all and
   C_gen), rewards (every TS trial vs every IQ trial at the last checkpoint, on C_col^all);
5. **analyse**: bootstrap CIs, per-turn TMR/DMR, score correlation and MSE (all and non-matching
   contexts), the reward-vs-seed permutation test, the most-disagreeing contexts;
6. **figures** (PNG + SVG) and 7. the self-contained **HTML report**.

The run folder layout is documented in ``docs/report.md``. Every output records the config, the
code version and the score signatures (``manifest.json``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from behavsim import (
    DEFAULT_SCORES,
    BehavsimError,
    ConfigError,
    ContextSet,
    ResponseTable,
    TableFormatError,
    UnknownScore,
    analysis,
    behaviour_map,
    closest_name,
    compare,
    get_executor,
    load_policy,
    package_version,
    parse_spec,
    raise_if_interrupted,
    slice_scores,
    write_map,
)
from behavsim.io import atomic_path, file_digest, read_json_checked, write_json_checked
from behavsim.policy import respond_many
from behavsim.scores import scores as score_registry
from contexts import collect, generate_grid
from contexts.robustness import robustness, write_robustness
from experiments.runfolder import (
    PATHS_KEY,
    PATHS_RUN,
    TRAIN_RESULTS,
    index_key,
    read_index_keys,
    relative_meta,
    relative_path,
    spec_checkpoint,
    table_matches_checkpoint,
    write_csv,
)
from experiments.study_e2e import E2E_TRAIN_RESULTS, E2ETrials, e2e_config, train_e2e_trials, write_e2e_results
from policies.simulation.domain import resolve_domain
from policies.training.evaluation import table1
from policies.training.files import METRIC_COLUMNS, list_checkpoints, trial_name
from policies.training.train import TrainConfig, run_training

__all__ = ["StudyConfig", "load_config", "run_study", "CONFIG_DIR", "list_configs"]

CONFIG_DIR = Path(__file__).parent / "configs"


#: Config keys added after the first runs: left out of the stored config when at their default.
_OPTIONAL_KEYS = ("robustness", "policies", "e2e_teachers", "e2e_dialogues", "e2e_epochs")

#: The teachers an end-to-end trial may imitate: the handcrafted policy, or the last checkpoint of
#: the GP-SARSA trial with the same seed (the config's first reward).
E2E_TEACHERS = ("handcrafted", "gp")


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
    # the end-to-end trials (issue 25): behavsim's end-to-end model (``train --policy e2e``) trained
    # by imitation of each teacher with each seed, on its teacher's ``e2e_dialogues`` dialogues for
    # ``e2e_epochs`` passes (0: the trainer's defaults); empty: no end-to-end trials
    e2e_teachers: tuple[str, ...] = ()
    e2e_dialogues: int = 0
    e2e_epochs: int = 0
    # where training and responses run (local, local:N, ray, ray:ADDRESS); not part of the study's
    # identity: a run folder resumes under any executor and the results are the same
    executor: str = "local"

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
        if self.nlg not in ("per-trial", "shared"):
            raise ConfigError(f"study config 'nlg': expected 'per-trial' or 'shared', got {self.nlg!r}")
        object.__setattr__(self, "scores", tuple(self._score_name(s) for s in self.scores))
        for t in self.e2e_teachers:
            if t not in E2E_TEACHERS:
                raise ConfigError(f"study config 'e2e_teachers': expected some of {list(E2E_TEACHERS)}, got {t!r}")
        for key in ("e2e_dialogues", "e2e_epochs"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ConfigError(f"study config {key!r}: expected a non-negative integer (0: the default), got {v!r}")
        if len(set(self.e2e_teachers)) != len(self.e2e_teachers):
            raise ConfigError(f"study config 'e2e_teachers': a teacher is listed twice: {list(self.e2e_teachers)}")
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
        if self.e2e_teachers:  # the trainer's own checks, before anything is trained
            e2e_config(self, "handcrafted", self.seeds[0])

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
        after the first runs are left out at their default, so that those runs resume."""
        d = dataclasses.asdict(self)
        d.pop("executor")
        d = {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}
        for key in _OPTIONAL_KEYS:
            if not d.get(key):
                d.pop(key, None)
        if d.get("repeat") == 1:
            d.pop("repeat")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, source: str = "config") -> "StudyConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            close = {u: closest_name(u, names, cutoff=0.6) for u in unknown}
            hints = [f"{u!r} (did you mean {close[u]!r}?)" if close[u] else repr(u) for u in unknown]
            raise ConfigError(f"{source}: unknown keys {', '.join(hints)}; valid keys: {sorted(names)}")
        kw: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
        try:
            return cls(**kw)
        except TypeError as exc:
            raise ConfigError(f"{source}: {exc}") from None


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


def code_version() -> str:
    """``behavsim <version> (git <sha>)``: the installed version and, in a git checkout, the commit."""
    v = package_version("behavsim")
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"behavsim {v}" + (f" (git {sha})" if sha else "")


# ----------------------------------------------------------------------------------- helpers
class _State:
    """Which stages are finished (RUN_DIR/state.json, with its checksum): per stage the hash of its
    inputs and the digest of every file it wrote. A stage counts as done only when its inputs are
    the same and every output is there, unchanged; a damaged state file counts as no stage done.
    The stages redone on every run (``train``'s results, ``figures``) are recorded with the key
    ``"recorded"``: only for ``behavsim report``, which checks every recorded digest."""

    def __init__(self, path: Path):
        self.path = path
        self.data: dict[str, Any] = {}
        if path.exists():
            try:
                self.data = read_json_checked(path)
            except TableFormatError as exc:
                print(f"note: {exc}; the stages it recorded are done again", file=sys.stderr)

    def done(self, stage: str, key: str) -> bool:
        entry = self.data.get(stage)
        if isinstance(entry, str):  # written before outputs were recorded
            return entry == key
        if not isinstance(entry, dict) or entry.get("key") != key:
            return False
        outputs = entry.get("outputs")
        if not isinstance(outputs, dict):
            return False
        root = self.path.parent
        for rel, digest in sorted(outputs.items()):
            if file_digest(root / rel) != digest:
                what = "missing" if not (root / rel).exists() else "damaged (it changed since it was written)"
                print(f"note: {root / rel} is {what}; stage {stage!r} is done again", file=sys.stderr)
                return False
        return True

    def mark(self, stage: str, key: str, outputs: Sequence[Path] = ()) -> None:
        root = self.path.parent
        digests = {str(p.relative_to(root)): file_digest(p) for p in outputs}
        self.data[stage] = {"key": key, "outputs": dict(sorted(digests.items()))}
        write_json_checked(self.path, self.data)


def _record_outputs(run: Path, stage: str, outputs: Sequence[Path]) -> None:
    """The digests of the files a stage that runs every time wrote (training results, figures), in
    ``state.json`` beside the resumable stages' own: ``behavsim report`` checks every recorded file."""
    _State(run / "state.json").mark(stage, "recorded", [p for p in outputs if p.is_file()])


#: The folders of the figures stage (figures, the behaviour map, the robustness probe).
_FIGURE_DIRS = ("figures", "map", "robustness")


def _figure_files(run: Path) -> list[Path]:
    dirs = [run / d for d in _FIGURE_DIRS if (run / d).is_dir()]
    return sorted(p for d in dirs for p in d.iterdir() if p.is_file() and not p.name.startswith("."))


def _hash(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _write_text(path: Path, text: str) -> None:
    """Write atomically: a temporary file renamed into place."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _trial_dir(run: Path, reward: str, seed: int) -> Path:
    return run / "train" / trial_name(reward, seed)


def _checkpoints(run: Path, reward: str, seed: int) -> list[Path]:
    return [p for _, p in list_checkpoints(_trial_dir(run, reward, seed))]


# ----------------------------------------------------------------------------------- stages
def _stage_train(cfg: StudyConfig, run: Path, log: Callable[[str], None], executor: Any = None) -> pd.DataFrame:
    log(
        f"[1/7] training: rewards {list(cfg.rewards)} x seeds {list(cfg.seeds)}, {cfg.dialogues:,} dialogues each, "
        f"checkpoint every {cfg.checkpoint_every:,}, {cfg.eval_dialogues} evaluation dialogues"
    )

    tc = TrainConfig(
        policy="gp",
        rewards=cfg.rewards,
        seeds=cfg.seeds,
        dialogues=cfg.dialogues,
        checkpoint_every=cfg.checkpoint_every,
        eval_dialogues=cfg.eval_dialogues,
        domain=cfg.domain,
        user=cfg.user,
        eval_scale=cfg.eval_scale,
    )
    rows = run_training(tc, run / "train", progress=sys.stderr.isatty(), executor=executor)
    metrics = pd.DataFrame(rows)
    metrics = metrics[[c for c in METRIC_COLUMNS if c in metrics] + [c for c in metrics if c not in METRIC_COLUMNS]]
    write_csv(metrics, run / "results" / "metrics.csv")
    t1 = pd.DataFrame(table1(rows))
    write_csv(t1, run / "results" / "table1.csv")
    return metrics


def _write_key(keyfile: Path, key: str, old_keyfile: Path) -> None:
    keyfile.parent.mkdir(exist_ok=True)
    _write_text(keyfile, key)
    old_keyfile.unlink(missing_ok=True)


def _stage_contexts(cfg: StudyConfig, run: Path, log: Callable[[str], None]) -> dict[str, ContextSet]:
    log("[2/7] context sets")

    cdir = run / "contexts"
    cdir.mkdir(parents=True, exist_ok=True)

    def cached(name: str, build: Callable[[], ContextSet], key: str, legacy_key: str | None = None) -> ContextSet:
        path = cdir / f"{name}.jsonl"
        # the key of the set's inputs, in contexts/keys/ (beside the set, contexts/NAME.* would be
        # taken for another form of it); run folders written before keep it as contexts/NAME.key
        keyfile = cdir / "keys" / f"{name}.key"
        old_keyfile = cdir / f"{name}.key"
        found = keyfile if keyfile.exists() else old_keyfile
        stored = found.read_text() if path.exists() and found.exists() else None
        if stored is not None and stored in (key, legacy_key):
            try:
                cs = ContextSet.load(path)
            except TableFormatError as exc:
                log(f"      note: {exc}; building it again")
            else:
                if stored != key or found == old_keyfile:  # today's key in today's place, once
                    _write_key(keyfile, key, old_keyfile)
                return cs
        cs = build()
        cs.meta = relative_meta(cs.meta, run)  # checkpoint paths relative to the run folder
        cs.save(path)
        _write_key(keyfile, key, old_keyfile)
        return ContextSet.load(path)

    domain = _domain(cfg)
    grid_key = _hash("grid", cfg.grid_step, cfg.domain)
    sets = {"cgen": cached("cgen", lambda: generate_grid(domain, step=cfg.grid_step), grid_key)}
    parts = []
    for reward in cfg.rewards:
        last = [_checkpoints(run, reward, s)[-1] for s in cfg.seeds]
        # the key names the checkpoints relative to the run folder, by content: a moved folder keeps it
        key = _hash(
            "collect",
            [relative_path(p, run) for p in last],
            [_checkpoint_digest(p) for p in last],
            cfg.collect_dialogues,
            cfg.collect_seed,
            cfg.user,
        )
        # the key of run folders written before (paths as given, file sizes): read, in place
        legacy_key = _hash(
            "collect",
            [str(p) for p in last],
            [p.stat().st_size for p in last],
            cfg.collect_dialogues,
            cfg.collect_seed,
            cfg.user,
        )
        cs = cached(
            f"ccol-{reward}",
            lambda last=last: collect(  # type: ignore[misc]  # (mypy cannot type a lambda's default)
                [str(p) for p in last],
                dialogues=cfg.collect_dialogues,
                seed=cfg.collect_seed,
                domain=domain,
                env_options={"user_config": cfg.user},
            ),
            key,
            legacy_key,
        )
        sets[f"ccol-{reward}"] = cs
        parts.append(cs)
    if len(parts) > 1:
        sets["ccol-all"] = cached(
            "ccol-all",
            lambda: ContextSet.concat(parts, description="union of C_col of every reward"),
            _hash("union", [p.fingerprint for p in parts]),
        )
    else:
        sets["ccol-all"] = parts[0]
    for name, cs in sets.items():
        log(f"      {name}: {len(cs):,} contexts")
    return sets


def _domain(cfg: StudyConfig) -> Any:
    """The study's domain."""
    return resolve_domain(cfg.domain)


def _respond_set(
    specs: Sequence[str],
    cs: ContextSet,
    rdir: Path,
    domain: str | None = None,
    executor: Any = None,
    run: Path | None = None,
    repeat: int = 1,
) -> dict[str, ResponseTable]:
    """Every policy of ``specs`` on one context set (each context asked ``repeat`` times); tables
    already in ``rdir`` are reused.

    The index (``rdir/index.json``) names each policy by :func:`runfolder.index_key` (checkpoint
    paths relative to the run folder ``run``, by default ``rdir``'s grandparent), so a copied or
    moved run folder finds its tables; a table is reused only when it loads (its checksum holds)
    and, for a checkpoint, was made from a file with the checkpoint's digest."""
    run = rdir.parent.parent if run is None else run
    rdir.mkdir(parents=True, exist_ok=True)
    index_path = rdir / "index.json"
    index: dict[str, Any] = {}
    if index_path.exists():
        try:
            index = read_json_checked(index_path)
        except TableFormatError as exc:
            print(f"note: {exc}; its tables are made again", file=sys.stderr)
    index, legacy = read_index_keys(index, run)
    if index.get("__fingerprint__") != cs.fingerprint:
        index, legacy = {"__fingerprint__": cs.fingerprint, PATHS_KEY: PATHS_RUN}, False
    keys = {spec: index_key(spec, run) + (f"#repeat={repeat}" if repeat > 1 else "") for spec in specs}
    loaded: dict[str, ResponseTable] = {}
    todo = []
    for spec in specs:
        name = index.get(keys[spec])
        if isinstance(name, str) and (rdir / name).exists():
            try:
                table = ResponseTable.load(rdir / name)
            except TableFormatError as exc:  # damaged: made again, exactly this one
                print(f"note: {exc}; responding again", file=sys.stderr)
            else:
                ckpt = _spec_checkpoint(spec)
                if ckpt is None or table_matches_checkpoint(table.policy, ckpt, _checkpoint_digest(ckpt)):
                    loaded[spec] = table
                    continue
                print(f"note: {rdir / name} was made from another {ckpt}; responding again", file=sys.stderr)
        todo.append(spec)
    if legacy and not todo:  # an index of an older run folder: its keys in today's form, once
        write_json_checked(index_path, index)
    if todo:
        options: dict[str, Any] = {} if domain is None else {"domain": domain}

        def save(i: int, table: ResponseTable) -> None:  # each table as soon as it is ready: kept if interrupted
            name = f"{table.id}.jsonl"
            table.policy = relative_meta(table.policy, run)
            table.save(rdir / name)
            index[keys[todo[i]]] = name
            write_json_checked(index_path, index)

        respond_many(todo, cs, executor=executor, on_result=save, repeat=repeat, **options)
        for spec in todo:
            loaded[spec] = ResponseTable.load(rdir / index[keys[spec]])
    return {s: loaded[s] for s in specs}


def _spec_checkpoint(spec: str) -> Path | None:
    """The checkpoint file of a policy spec the study writes (``checkpoint:PATH[:nlg_seed=N]`` or a
    bare ``PATH.npz``); None for another policy."""
    path = spec_checkpoint(spec)
    return None if path is None else Path(path)


_DIGESTS: dict[tuple[str, int, int], str | None] = {}


def _checkpoint_digest(path: Path) -> str | None:
    """``sha256:<hex>`` of a checkpoint file (cached by path, size and modification time)."""
    try:
        st = path.stat()
    except OSError:
        return None
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = file_digest(path)
    return _DIGESTS[key]


def _pair_label(a: dict, b: dict) -> str:
    return f"{a.get('seed')} vs {b.get('seed')}"


def _comparisons(
    cfg: StudyConfig,
    sets: dict[str, ContextSet],
    tables: dict[str, dict[str, ResponseTable]],
    trials: dict[tuple[str, int], list[str]],
    executor: Any = None,
    others: Sequence[str] = (),
):
    """Yield (kind, context_set, extra-columns, Comparison) for every comparison of the study:
    convergence (consecutive checkpoints of each trial, on C_col of its reward and on C_gen), seeds
    (the trials of one reward at each checkpoint, on C_col^all and C_gen) and, with two rewards,
    rewards (every trial of one reward vs every trial of the other at the last checkpoint, on
    C_col^all), and with other policies (``others``), each of them vs the last checkpoint of every
    trial, the handcrafted policy and the other policies after it, on C_col^all ("policies"; the
    columns ``self_agreement_a``/``_b``: each side's self-agreement TMR where it was measured).
    ``executor``: where the distinct answer combinations are scored (the values are the same under
    any executor)."""
    scores = list(cfg.scores)
    for name in [f"ccol-{r}" for r in cfg.rewards] + ["cgen"]:
        for (reward, seed), specs in trials.items():
            if name != "cgen" and name != f"ccol-{reward}":
                continue
            if len(specs) < 2:
                continue
            group = [tables[name][s] for s in specs]
            comp = compare(group, "consecutive", scores=scores, executor=executor)
            checkpoints = [comp.policies[b]["checkpoint"] for b in comp.means["b"]]
            yield "convergence", name, {"reward": reward, "seed": seed, "checkpoint": checkpoints}, comp
    for name in ("ccol-all", "cgen"):
        for reward in cfg.rewards:
            n_ck = min(len(v) for (r, _), v in trials.items() if r == reward)
            for k in range(n_ck):
                group = [tables[name][trials[(reward, s)][k]] for s in cfg.seeds]
                if len(group) < 2:
                    continue
                comp = compare(group, "all", scores=scores, executor=executor)
                ck = group[0].policy["checkpoint"]
                labels = [
                    _pair_label(comp.policies[a], comp.policies[b]) for a, b in zip(comp.means["a"], comp.means["b"])
                ]
                yield "seeds", name, {"reward": reward, "checkpoint": ck, "pair": labels}, comp
    if len(cfg.rewards) == 2:
        ra, rb = cfg.rewards
        group = [tables["ccol-all"][trials[(r, s)][-1]] for r in (ra, rb) for s in cfg.seeds]
        comp = compare(group, "cross", by="reward", scores=scores, executor=executor)
        labels = [_pair_label(comp.policies[a], comp.policies[b]) for a, b in zip(comp.means["a"], comp.means["b"])]
        yield "rewards", "ccol-all", {"pair": labels}, comp
    if others:
        base = [trials[(r, s)][-1] for r in cfg.rewards for s in cfg.seeds] + ["handcrafted"]
        group = [tables["ccol-all"][sp] for sp in base + list(others)]
        ids = [t.id for t in group]
        nb, n = len(base), len(group)
        pairs = [(ids[i], ids[j]) for i in range(nb, n) for j in [*range(nb), *range(i + 1, n)]]
        comp = compare(group, pairs, scores=scores, executor=executor)
        self_tmr = {t.id: t.self_agreement_tmr for t in group}
        yield (
            "policies",
            "ccol-all",
            {
                "self_agreement_a": [_nan_if_none(self_tmr[a]) for a in comp.means["a"]],
                "self_agreement_b": [_nan_if_none(self_tmr[b]) for b in comp.means["b"]],
            },
            comp,
        )


def _check_other_policies(cfg: StudyConfig) -> None:
    """Each of the config's other policies loads (a model folder, a server's address, a module),
    named in one line if not."""
    options = {} if cfg.domain is None else {"domain": cfg.domain}
    for spec in cfg.policies:
        try:
            load_policy(spec, **options)
        except BehavsimError as exc:
            raise ConfigError(f"study config 'policies': {spec!r}: {exc}") from None
        except (ImportError, OSError, ValueError) as exc:
            raise ConfigError(f"study config 'policies': {spec!r} cannot be loaded: {exc}") from None


def _nan_if_none(x: float | None) -> float:
    return math.nan if x is None else float(x)


def run_study(
    cfg: StudyConfig,
    run_dir: str | os.PathLike,
    *,
    log: Callable[[str], None] | None = None,
    executor: Any = None,
) -> Path:
    """Run (or resume) the study ``cfg`` in ``run_dir``; returns the run folder.

    ``executor`` (default: the config's ``executor``, ``"local"``): where the training trials and
    the responses run (:func:`behavsim.get_executor`); this process writes every file, so the run
    folder lives on this machine, and the results are the same under any executor.
    """
    log = log or (lambda m: print(m, flush=True))
    ex = get_executor(cfg.executor if executor is None else executor)
    ex.connect()  # an unreachable cluster is refused before the run folder is made
    _check_other_policies(cfg)  # ... and a policy that cannot be loaded, before any training
    run = _open_run_dir(cfg, Path(run_dir))
    clock = _Clock()
    if not ex.is_local:
        log(f"executor: {ex.spec} (training trials and responses run as its tasks)")
    # between stages: a command's interrupt that a library swallowed stops the run here
    metrics = _stage_train(cfg, run, log, ex)
    e2e = None
    if cfg.e2e_teachers:  # after the GP-SARSA trials: a "gp" teacher is the last checkpoint of one
        e2e = train_e2e_trials(
            cfg, run, lambda seed: _gp_spec(cfg, _checkpoints(run, cfg.rewards[0], seed)[-1], seed), log, ex
        )
    _record_outputs(run, "train", [run / "results" / name for name in (*TRAIN_RESULTS, *E2E_TRAIN_RESULTS)])
    clock.lap("train")
    raise_if_interrupted()
    sets = _stage_contexts(cfg, run, log)
    clock.lap("contexts")
    raise_if_interrupted()
    responses = _stage_respond(cfg, run, sets, log, ex, e2e)
    clock.lap("respond")
    raise_if_interrupted()
    _stage_compare_and_analyse(cfg, run, sets, responses, log, ex)
    clock.lap("compare+analyse")
    raise_if_interrupted()
    figures = _stage_figures(cfg, run, metrics, log)
    raise_if_interrupted()
    figures += _stage_map(run, responses, log, ex)
    raise_if_interrupted()
    figures += _stage_robustness(cfg, run, sets, responses, log)
    _record_outputs(run, "figures", _figure_files(run))
    clock.lap("figures")
    raise_if_interrupted()
    wall = _write_manifest(cfg, run, sets, figures, clock.elapsed())
    if cfg.report:
        _stage_report(run, log)
        clock.lap("report")
    raise_if_interrupted()
    (run / "timings.json").write_text(json.dumps({"stage_seconds": clock.stages}, indent=2) + "\n")
    log(f"done in {wall:.0f} s; run folder {run}")
    return run


class _Clock:
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


def _open_run_dir(cfg: StudyConfig, run: Path) -> Path:
    """Create the run folder (or check that it holds this very study) and store the config."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "results").mkdir(exist_ok=True)
    (run / "figures").mkdir(exist_ok=True)
    cfg_path = run / "config.json"
    cfg_json = json.dumps(cfg.to_dict(), indent=2, sort_keys=True) + "\n"
    if cfg_path.exists() and cfg_path.read_text() != cfg_json:
        raise ConfigError(f"{run} holds a study with another configuration (see {cfg_path}); use another folder")
    cfg_path.write_text(cfg_json)
    return run


@dataclass
class _Responses:
    """The policies' answers: ``trials[(reward, seed)]`` lists the policy specs of that trial's
    checkpoints in order; ``specs`` every spec (and ``handcrafted``); ``tables[set][spec]``;
    ``others`` the config's other policies, whose tables are under ``tables["ccol-all"]`` only."""

    trials: dict[tuple[str, int], list[str]]
    specs: list[str]
    tables: dict[str, dict[str, ResponseTable]]
    others: list[str] = field(default_factory=list)
    e2e: E2ETrials | None = None


def _gp_spec(cfg: StudyConfig, path: Path, seed: int) -> str:
    """The policy spec of a GP-SARSA checkpoint of the trial with ``seed``.

    nlg "per-trial": each trial realises its acts with its own paraphrase choice (template
    generator seeded with the trial's seed), so two trials may say one act differently, as the
    paper's generator did (Appendix A row 3); "shared": one generator seed for every policy."""
    return f"checkpoint:{path}:nlg_seed={seed}" if cfg.nlg == "per-trial" else str(path)


def _stage_respond(
    cfg: StudyConfig,
    run: Path,
    sets: dict[str, ContextSet],
    log: Callable[[str], None],
    executor: Any = None,
    e2e: E2ETrials | None = None,
) -> _Responses:
    log("[3/7] responses of every checkpoint on every context set")
    trials = {(r, s): [_gp_spec(cfg, p, s) for p in _checkpoints(run, r, s)] for r in cfg.rewards for s in cfg.seeds}
    specs = [p for v in trials.values() for p in v] + ["handcrafted"]
    tables = {
        name: _respond_set(specs, cs, run / "responses" / name, cfg.domain, executor, run) for name, cs in sets.items()
    }
    others = list(cfg.policies)
    if others:  # on the collected contexts, which carry the dialogue histories
        log(
            f"      other policies on ccol-all: {', '.join(others)}"
            + (f" (each asked {cfg.repeat}x)" if cfg.repeat > 1 else "")
        )
        tables["ccol-all"].update(
            _respond_set(
                others, sets["ccol-all"], run / "responses" / "ccol-all", cfg.domain, executor, run, repeat=cfg.repeat
            )
        )
    if e2e is not None:  # on the collected contexts only: the grid has no histories to read
        log(f"      end-to-end checkpoints on ccol-all: {len(e2e.all_specs)}")
        tables["ccol-all"].update(
            _respond_set(e2e.all_specs, sets["ccol-all"], run / "responses" / "ccol-all", cfg.domain, executor, run)
        )
    return _Responses(trials, specs, tables, others, e2e)


#: Version of what the compare-and-analyse stage writes: 2 added the test over trials and slices.csv.
_ANALYSIS_VERSION = 2


def _stage_compare_and_analyse(
    cfg: StudyConfig,
    run: Path,
    sets: dict[str, ContextSet],
    responses: _Responses,
    log: Callable[[str], None],
    executor: Any = None,
) -> None:
    """Comparisons, their analysis and the permutation tests, unless done for these very inputs."""
    state = _State(run / "state.json")
    parts: tuple[Any, ...] = (
        cfg.to_dict(),
        {n: cs.fingerprint for n, cs in sets.items()},
        {n: sorted(t.id for t in tb.values()) for n, tb in responses.tables.items()},
    )
    # a run analysed before the test over trials and the slices existed is analysed again once
    key = _hash(*parts, {"analysis": _ANALYSIS_VERSION})
    if state.done("compare", key):
        log("[4/7] comparisons: up to date")
        log("[5/7] analysis: up to date")
        return
    results = run / "results"
    log("[4/7] comparisons (convergence, seeds, rewards) with bootstrap CIs")
    allper, signatures = _compare_all(cfg, sets, responses, results, executor)
    if responses.e2e is not None:
        log("      end-to-end trials: against their teachers, over training, across seeds; CER-USE agreement")
        gp_last = {s: responses.trials[(cfg.rewards[0], s)][-1] for s in cfg.seeds}
        write_e2e_results(
            cfg, sets["ccol-all"], responses.tables["ccol-all"], responses.e2e, gp_last, allper, results, executor
        )
    log("[5/7] analysis: score agreement, slices, reward-vs-seed tests (over trials and over contexts)")
    _write_score_agreement(cfg, allper, results)
    tests = _reward_vs_seed_tests(cfg, allper, responses)
    _write_text(results / "tests.json", json.dumps(tests, indent=2, sort_keys=True) + "\n")
    _write_text(results / "signatures.json", json.dumps(signatures, indent=2, sort_keys=True) + "\n")
    trained = (*TRAIN_RESULTS, *E2E_TRAIN_RESULTS)
    written = sorted(p for p in results.iterdir() if p.is_file() and p.name not in trained)
    state.mark("compare", key, written)


def _compare_all(
    cfg: StudyConfig, sets: dict[str, ContextSet], responses: _Responses, results: Path, executor: Any = None
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Every comparison: means with bootstrap CIs (``<kind>.csv``), per-turn TMR/DMR, the most
    disagreeing contexts and every per-context value (``per_context/all.csv``, returned)."""
    scores = list(cfg.scores)
    per_dir = results / "per_context"
    per_dir.mkdir(exist_ok=True)
    frames: dict[str, list[pd.DataFrame]] = {"convergence": [], "seeds": [], "rewards": [], "policies": []}
    signatures: dict[str, str] = {}
    per_turn_frames, agreement_frames, disagreement_frames, slice_frames = [], [], [], []
    for kind, name, extra, comp in _comparisons(
        cfg, sets, responses.tables, responses.trials, executor, responses.others
    ):
        raise_if_interrupted()
        signatures = comp.signatures
        m = analysis.means_with_ci(comp, scores, n_resamples=cfg.bootstrap, seed=cfg.analysis_seed)
        m = m.drop(columns=["pair"], errors="ignore")
        beside = {k: extra[k] for k in extra if k.startswith("self_agreement")}  # after the scores
        for col, val in reversed([("context_set", name), *((k, v) for k, v in extra.items() if k not in beside)]):
            m.insert(0, col, val)
        for col, val in beside.items():
            m[col] = val
        frames[kind].append(m)
        per = comp.per_context.copy()
        per.insert(0, "kind", kind)
        per.insert(1, "context_set", name)
        agreement_frames.append(per)
        last = kind == "seeds" and extra["checkpoint"] == cfg.dialogues
        if last and name.startswith("ccol"):
            per_turn_frames.append(_per_turn(comp, sets[name], name, extra, scores))
        if kind == "rewards" or last:
            disagreement_frames += _disagreements(cfg, comp, sets[name], responses, name, kind, scores)
            slice_frames.append(_slices(comp, sets[name], responses, name, kind, extra))
    for kind, fr in frames.items():
        if fr:
            write_csv(pd.concat(fr, ignore_index=True), results / f"{kind}.csv")
    if per_turn_frames:
        write_csv(pd.concat(per_turn_frames, ignore_index=True), results / "per_turn.csv")
    if disagreement_frames:
        write_csv(pd.concat(disagreement_frames, ignore_index=True), results / "disagreements.csv")
    if slice_frames:
        write_csv(pd.concat(slice_frames, ignore_index=True), results / "slices.csv")
    allper = pd.concat(agreement_frames, ignore_index=True)
    if "semantic_na" in allper.columns:  # rows of comparisons without text-only answers: applicable, not blank
        allper["semantic_na"] = allper["semantic_na"].eq(True)
    write_csv(allper, per_dir / "all.csv")
    return allper, signatures


def _per_turn(comp, cs: ContextSet, name: str, extra: dict[str, Any], scores: list[str]) -> pd.DataFrame:
    """Figure 4: TMR/DMR per system turn of the trial pairs at the last checkpoint."""
    turns = [meta.get("turn") for meta in cs.metas]
    pt = analysis.per_turn(comp.per_context, turns, scores=[s for s in ("TMR", "DMR") if s in scores])
    pt["pair"] = pt["pair"].map(dict(enumerate(extra["pair"])))
    pt.insert(0, "context_set", name)
    pt.insert(1, "reward", extra["reward"])
    pt.insert(2, "checkpoint", extra["checkpoint"])
    return pt


def _disagreements(
    cfg: StudyConfig, comp, cs: ContextSet, responses: _Responses, name: str, kind: str, scores: list[str]
) -> list[pd.DataFrame]:
    """The contexts where each compared pair disagrees most (by CMR when computed)."""
    ids = set(comp.means["a"]) | set(comp.means["b"])
    table_list = [t for t in responses.tables[name].values() if t.id in ids]
    out = []
    for p in range(len(comp.means)):
        d = analysis.disagreements(
            comp, cs, table_list, pair=p, top=cfg.disagreements, by="CMR" if "CMR" in scores else scores[0]
        )
        d.insert(0, "comparison", f"{kind}/{name}/{comp.means['a'].iloc[p]} vs {comp.means['b'].iloc[p]}")
        out.append(d)
    return out


def _slices(comp, cs: ContextSet, responses: _Responses, name: str, kind: str, extra: dict[str, Any]) -> pd.DataFrame:
    """Every score of each pair per act type (of the first trial), slot, belief certainty and, on
    collected contexts, turn."""
    ids = set(comp.means["a"]) | set(comp.means["b"])
    table_list = [t for t in responses.tables[name].values() if t.id in ids]
    kinds = ["acttype", "slot", "uncertainty"] + (["turn"] if any("turn" in m for m in cs.metas) else [])
    sl = slice_scores(comp, kinds, contexts=cs, tables=table_list)
    sl["pair"] = sl["pair"].map(dict(enumerate(extra["pair"])))
    sl.insert(0, "kind", kind)
    sl.insert(1, "context_set", name)
    sl.insert(2, "reward", extra.get("reward"))
    return sl


def _write_score_agreement(cfg: StudyConfig, allper: pd.DataFrame, results: Path) -> None:
    """Figure 6: correlation and MSE between the scores, over all contexts and the non-matching ones."""
    for suffix, only in (("", False), ("_mismatch", True)):
        corr, mse = analysis.score_agreement(allper, list(cfg.scores), only_mismatch=only)
        write_csv(corr.rename_axis("score").reset_index(), results / f"score_corr{suffix}.csv")
        write_csv(mse.rename_axis("score").reset_index(), results / f"score_mse{suffix}.csv")


def _reward_vs_seed_tests(cfg: StudyConfig, allper: pd.DataFrame, responses: _Responses) -> list[dict[str, Any]]:
    """Does switching the reward change the behaviour more than switching the seed? Per score, first
    the test over trials (the training runs are the units: group labels permuted over the trials
    of the last checkpoint, every pair averaged over C_col^all), then the paired test over contexts
    of the per-context means of the TS-vs-IQ pairs against the seed pairs (conditional on these
    trials); none without two rewards and two seeds."""
    if not (len(cfg.rewards) == 2 and len(cfg.seeds) >= 2):
        return []
    scores = [s for s in ("TMR", "DMR", "CMR") if s in cfg.scores]
    trials, tables = responses.trials, responses.tables
    rew = allper[(allper["kind"] == "rewards") & (allper["context_set"] == "ccol-all")]
    groups = {r: [tables["ccol-all"][trials[(r, s)][-1]].id for s in cfg.seeds] for r in cfg.rewards}
    last_ids = {i for ids in groups.values() for i in ids}
    seeds_df = allper[
        (allper["kind"] == "seeds")
        & (allper["context_set"] == "ccol-all")
        & allper["a"].isin(last_ids)
        & allper["b"].isin(last_ids)
    ]
    trial_level = [_trial_level_entry(cfg, pd.concat([seeds_df, rew]), groups, score) for score in scores]
    return trial_level + [_context_level_entry(cfg, rew, seeds_df, score) for score in scores]


_ALPHA = 0.05


def _trial_level_entry(cfg: StudyConfig, per: pd.DataFrame, groups: dict[str, list[str]], score: str) -> dict:
    """The test over trials of one score (``"unit": "trials"``), with the two-level intervals."""
    ra, rb = cfg.rewards
    r = analysis.trial_level_test(
        per,
        groups[ra],
        groups[rb],
        score,
        n_permutations=cfg.permutations,
        n_resamples=cfg.bootstrap,
        seed=cfg.analysis_seed,
    )
    assert r.between is not None and r.within is not None
    method = (
        f"exact, all {r.n_relabelings} distinct splits"
        if r.exact
        else f"{r.n_permutations} random splits of the {r.n_relabelings} distinct ones"
    )
    return {
        "name": "reward vs seed",
        "unit": "trials",
        "score": score,
        "context_set": "ccol-all",
        "mean_x": r.mean_between,
        "mean_y": r.mean_within,
        "mean_x_ci": [r.between.lo, r.between.hi],
        "mean_y_ci": [r.within.lo, r.within.hi],
        "diff": r.statistic,
        "p_value": r.p_value,
        "min_p": r.min_p,
        "exact": r.exact,
        "n": r.n_trials,
        "n_pairs_x": r.n_between,
        "n_pairs_y": r.n_within,
        "n_relabelings": r.n_relabelings,
        "n_contexts": r.between.n_contexts,
        "groups": {ra: list(r.group_a), rb: list(r.group_b)},
        "alpha": _ALPHA,
        "trials_per_group_needed": r.trials_per_group_needed(_ALPHA),
        "description": f"mean {score} of the TS-vs-IQ pairs of trials (x) against the seed-vs-seed pairs of "
        f"one reward (y), each pair averaged over the contexts, last checkpoint; permutation test of the "
        f"reward labels over the {r.n_trials} trials ({method}); intervals: two-level bootstrap "
        f"(trials within their reward, then contexts), {cfg.bootstrap} resamples",
    }


def _context_level_entry(cfg: StudyConfig, rew: pd.DataFrame, seeds_df: pd.DataFrame, score: str) -> dict:
    """The paired test over contexts of one score (``"unit": "contexts"``): how surely these very
    trials differ, not whether the rewards do."""
    x = rew.groupby("context")[score].mean()
    y = seeds_df.groupby("context")[score].mean()
    common = x.index.intersection(y.index)
    r = analysis.paired_permutation_test(
        x.loc[common].to_numpy(), y.loc[common].to_numpy(), n_permutations=cfg.permutations, seed=cfg.analysis_seed
    )
    return {
        "name": "reward vs seed",
        "unit": "contexts",
        "score": score,
        "context_set": "ccol-all",
        "mean_x": r.mean_x,
        "mean_y": r.mean_y,
        "diff": r.diff,
        "p_value": r.p_value,
        "min_p": analysis.sign_flip_min_p(r.n, cfg.permutations, r.alternative),
        "n": r.n,
        "description": f"mean {score} per context of the TS-vs-IQ pairs (x) against the "
        f"seed-vs-seed pairs of the same reward (y), last checkpoint; paired "
        f"sign-flip permutation test over contexts, {cfg.permutations} permutations; the contexts are "
        f"the units, so it is conditional on these trials and says nothing about other seeds",
    }


def _write_manifest(
    cfg: StudyConfig, run: Path, sets: dict[str, ContextSet], figures: list[dict[str, str]], elapsed: float
) -> float:
    """``manifest.json``: config, code version, signatures, context sets, figures and the wall time
    summed over every invocation on this folder; returns ``elapsed``."""
    manifest = {
        "config_name": cfg.name,
        "config": cfg.to_dict(),
        "code_version": code_version(),
        "created": _created(run),
        "signatures": json.loads((run / "results" / "signatures.json").read_text()),
        "context_sets": {
            n: {"fingerprint": cs.fingerprint, "size": len(cs), "meta": _short_meta(cs.meta)} for n, cs in sets.items()
        },
        "figures": figures,
    }
    prev: dict[str, Any] = {}
    if (run / "manifest.json").exists():
        try:
            prev = read_json_checked(run / "manifest.json")
        except TableFormatError as exc:
            print(f"note: {exc}; it is written again", file=sys.stderr)
    manifest["wall_seconds"] = round(prev.get("wall_seconds", 0.0) + elapsed, 1)
    write_json_checked(run / "manifest.json", manifest)
    return elapsed


def _stage_map(
    run: Path, responses: _Responses, log: Callable[[str], None], executor: Any = None
) -> list[dict[str, str]]:
    """The behaviour map of every policy on C_gen (TMR): classical MDS with each trial's checkpoints
    joined in training order, and the dendrogram of the final policies (``map/``)."""
    tables = list(responses.tables["cgen"].values())
    if len(tables) < 3:
        return []
    log("      behaviour map (TMR on cgen)")
    bm = behaviour_map(tables, "TMR", executor=executor)
    bm.policies = relative_meta(bm.policies, run)  # tables of older run folders name checkpoints by absolute path
    paths = write_map(bm, run / "map")
    out = [
        {
            "file": str(paths["map.svg"].relative_to(run)),
            "title": "Behaviour map: MDS of 1 − TMR on cgen, each trial's checkpoints joined in training order",
            "section": "map",
        }
    ]
    if "dendrogram.svg" in paths:
        out.append(
            {
                "file": str(paths["dendrogram.svg"].relative_to(run)),
                "title": "Dendrogram of the final policies (average linkage of 1 − TMR on cgen)",
                "section": "map",
            }
        )
    return out


def _stage_robustness(
    cfg: StudyConfig, run: Path, sets: dict[str, ContextSet], responses: _Responses, log: Callable[[str], None]
) -> list[dict[str, str]]:
    """With ``robustness`` levels: the last checkpoint of each trial and the handcrafted policy, each
    against itself on C_gen perturbed at each level (``robustness/``)."""
    if not cfg.robustness:
        return []

    log(f"      robustness: noise levels {list(cfg.robustness)} on cgen")
    specs = [v[-1] for v in responses.trials.values()] + ["handcrafted"]
    ids = [responses.tables["cgen"][s].id for s in specs]
    table, meta = robustness(specs, sets["cgen"], cfg.robustness, scores=cfg.scores, policy_ids=ids, domain=cfg.domain)
    written = write_robustness(table, relative_meta(meta, run), run / "robustness")
    return [
        {"file": str(p.relative_to(run)), "title": f"Robustness: {p.stem.replace('_', ' ')}", "section": "robustness"}
        for p in written
        if p.suffix == ".svg"
    ]


def _stage_report(run: Path, log: Callable[[str], None]) -> None:
    log("[7/7] report")
    from experiments.report import build_report

    build_report(run, run / "report.html")  # its path: `behavsim reproduce`'s last line


def _created(run: Path) -> str:
    p = run / "manifest.json"
    if p.exists():
        try:
            created = json.loads(p.read_text())["created"]
            if isinstance(created, str):
                return created
        except (KeyError, TypeError, ValueError, RecursionError):  # damaged: a new date
            pass
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _short_meta(meta: dict) -> dict:
    """The builder parameters of a context set, without the bulky provenance (kept in its file)."""
    return {k: v for k, v in meta.items() if len(json.dumps(v, default=str)) <= 120}


def _stage_figures(
    cfg: StudyConfig, run: Path, metrics: pd.DataFrame, log: Callable[[str], None]
) -> list[dict[str, str]]:
    from experiments.plots import study_figures

    log("[6/7] figures")
    return study_figures(run, metrics, rewards=cfg.rewards, seeds=cfg.seeds, scores=cfg.scores)
