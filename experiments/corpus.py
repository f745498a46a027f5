"""The study against people, in one module: its settings (``corpus``, ``corpus_split``,
``corpus_dialogues``, ``corpus_policies``, ``corpus_e2e`` and the training keys of its end-to-end
models), its study stages and its report section.

A corpus of real dialogues in ConvLab-3's unified format (CamRest676: ``--corpus
data.zip``) gives one context per system turn of a split, each with its history, a belief from
the corpus and what the person in the system's seat did there (:func:`contexts.from_unified`);
that person's answers are a response table like any policy's, the *human wizard*
(:func:`contexts.logged_responses`). The study asks its own policies the same moments and
compares each with the human wizard.

The stages:

* ``corpus-contexts`` (after ``contexts``) — the split imported as the run's context set
  ``corpus-<split>`` (the first ``corpus_dialogues`` dialogues, 0: all), kept with the key of
  the corpus file's digest and the settings; the human wizard's table beside the policies' in
  ``responses/corpus-<split>/`` (index key ``wizard``). Being one of the run's context sets,
  every checkpoint and the handcrafted policy answer it in the ``respond`` stage, as they answer
  C_gen and C_col;
* ``corpus-e2e`` (with ``corpus_e2e``; every run, finished models are not opened again) —
  behavsim's end-to-end model (:mod:`policies.e2e`) trained by the study itself, once per name
  of ``corpus_e2e``, seed the config's first, into ``train/corpus-e2e-<name>/``:

  * ``simulation`` — imitating the handcrafted policy in simulation, as an end-to-end trial of
    the e2e study is trained (``e2e_dialogues``, ``e2e_epochs``; ``experiments.e2e.e2e_config``):
    the model a researcher trains without people; its last checkpoint answers;
  * ``people`` — imitating the human wizards of the corpus's ``corpus_train_split`` (default
    ``train``), as ``behavsim train --policy e2e --corpus`` trains it (its defaults; epochs
    ``corpus_e2e_epochs`` when set, model selection on ``corpus_validation_split``, default
    ``validation``, ``none``: none): the checkpoint best on validation answers (the last without
    a validation split). Its contexts are the test split's only if ``corpus_train_split`` says so;

* ``corpus-respond`` (after ``respond``; with ``corpus_e2e`` or ``corpus_policies``) — those
  end-to-end models and the config's extra policies on it (``e2e:DIR``, ``recorded:FILE``,
  ``hf:DIR``, ...);
* ``corpus`` (up to date unless its inputs change), into ``results/``:

  * ``corpus.csv`` — each policy (the handcrafted one, the last checkpoint of every GP-SARSA
    trial, the end-to-end models, the extra policies) against the human wizard: the mean of every score with its
    bootstrap interval. The act scores count the contexts where the wizard's turn has acts (the
    others are n/a, ``n_missing_<score>``); the text scores those where both said something;
  * ``corpus_slices.csv`` — the same by the wizard's act type and by system turn;
  * ``corpus_disagreements.csv`` — per policy, the contexts of lowest CMR: the user's last words,
    the wizard's act and words, the policy's act and words;
  * ``corpus_seeds.csv`` — per reward and score: do the GP-SARSA seeds differ from each other
    more than from the person? The mean over the seed pairs and the mean over the (seed, wizard)
    pairs, each with its two-level bootstrap interval (trials, then contexts), on the same
    contexts (those where the wizard's score is defined); and the test over seeds (the units are
    the trials): per seed, its mean similarity to the other seeds minus its similarity to the
    wizard, an exact sign-flip test of their mean (with 3 seeds the smallest two-sided p is 0.25:
    the difference is described, it cannot be significant);
  * ``corpus_agreement.csv`` — the paper's Sec. 5 claim on human text: CER (from the acts)
    against USE cosine (from the text) over the contexts, per policy and over all, where both
    are defined (and over the contexts whose acts differ);
  * ``per_context/corpus.csv`` — every per-context value of those comparisons.

The report's section (``corpus``, "The study against people").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from behavsim import (
    BehavsimError,
    ConfigError,
    ContextSet,
    ResponseTable,
    analysis,
    compare,
    get_executor,
    load_policy,
    slice_scores,
)
from behavsim.io import atomic_path, file_digest
from behavsim.report import escape, fmt_int, fmt_num, note, plain_table
from contexts import from_unified, logged_responses
from experiments.e2e import e2e_config
from experiments.report import Report, Section, fold
from experiments.stages.analyse import CLAIM, claim_agreement
from experiments.stages.respond import respond_set
from experiments.stages.train import trial_specs
from experiments.study import Stage, Study, StudyConfig, stage_key
from policies.e2e import BEST_FILE, E2EConfig, corpus_e2e_config, list_e2e_checkpoints, train_e2e

__all__ = [
    "SETTINGS",
    "WIZARD",
    "corpus_set_name",
    "import_corpus",
    "compared_policies",
    "CORPUS_E2E",
    "corpus_e2e_configs",
    "corpus_e2e_specs",
    "CONTEXTS_STAGE",
    "E2E_STAGE",
    "RESPOND_STAGE",
    "COMPARE_STAGE",
    "SECTION",
]

#: The study config's keys of the study against people, with their defaults (none).
SETTINGS: dict[str, Any] = {
    "corpus": "",
    "corpus_split": "",
    "corpus_dialogues": 0,
    "corpus_policies": (),
    "corpus_e2e": (),
    "corpus_train_split": "train",
    "corpus_validation_split": "validation",
    "corpus_e2e_epochs": 0,
}
#: The end-to-end models the study can train itself (``corpus_e2e``), and how its results name them.
CORPUS_E2E = {"simulation": "e2e (simulation)", "people": "e2e (people)"}
#: A trained model's record in its folder: its settings and the checkpoint that answers.
_E2E_DONE = "corpus-e2e.json"
#: The human wizard's key in the response index, and how the results name it.
WIZARD = "wizard"
WIZARD_NAME = "human wizard"
#: Version of the imported set's form (2: with its description): a set kept by another is imported again.
_IMPORT_VERSION = 2
#: Disagreements shown per policy in the report (the file holds the config's ``disagreements``).
_SHOWN = 3
_ACT_SCORES = ("TMR", "DMR", "CER", "CMR")
_SUMMARY = ("TMR", "DMR", "CER", "CMR", "USE_cos", "BLEU4", "BERTScore")


# ------------------------------------------------------------------------------- settings
def corpus_set_name(cfg: StudyConfig) -> str:
    """The run's name of the imported context set: ``corpus-<split>``."""
    return f"corpus-{cfg.settings['corpus_split']}"


def _applies(study: Study) -> bool:
    return bool(study.cfg.settings["corpus_split"])


def _check(cfg: StudyConfig) -> None:
    s = cfg.settings
    corpus, split = s["corpus"], s["corpus_split"]
    for key in ("corpus", "corpus_split"):
        if not isinstance(s[key], str):
            raise ConfigError(f"study config {key!r}: expected a string, got {s[key]!r}")
    if split and not corpus:
        raise ConfigError(
            f"study config {cfg.name!r} compares its policies with the people of a corpus (corpus_split = "
            f"{split!r}) but names no corpus: pass --corpus PATH (a data.zip of ConvLab-3's unified format, "
            "e.g. CamRest676's) or set corpus = PATH in the config"
        )
    if corpus and not split:
        raise ConfigError(
            "study config 'corpus' is set but 'corpus_split' is not: name the split to import (e.g. corpus_split = \"test\")"
        )
    n = s["corpus_dialogues"]
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ConfigError(f"study config 'corpus_dialogues': expected a non-negative integer (0: all), got {n!r}")
    specs = s["corpus_policies"]
    if not isinstance(specs, tuple) or not all(isinstance(p, str) and p for p in specs):
        raise ConfigError(f"study config 'corpus_policies': expected a list of policy specs, got {specs!r}")
    if len(set(specs)) != len(specs):
        raise ConfigError(f"study config 'corpus_policies': a policy is listed twice: {list(specs)}")
    models = s["corpus_e2e"]
    if not isinstance(models, tuple) or any(m not in CORPUS_E2E for m in models):
        raise ConfigError(f"study config 'corpus_e2e': expected some of {list(CORPUS_E2E)}, got {models!r}")
    if len(set(models)) != len(models):
        raise ConfigError(f"study config 'corpus_e2e': a model is listed twice: {list(models)}")
    for key in ("corpus_train_split", "corpus_validation_split"):
        if not isinstance(s[key], str) or not s[key]:
            raise ConfigError(f"study config {key!r}: expected a split name ('none': no validation), got {s[key]!r}")
    n = s["corpus_e2e_epochs"]
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ConfigError(
            f"study config 'corpus_e2e_epochs': expected a non-negative integer (0: the default), got {n!r}"
        )


def _preflight(cfg: StudyConfig) -> None:
    """Before any training: the corpus is there and its split imports; every extra policy loads."""
    if not cfg.settings["corpus_split"]:
        return
    path = Path(cfg.settings["corpus"])
    if not path.exists():
        raise ConfigError(f"study config 'corpus' (--corpus): {str(path)!r} not found")
    import_corpus(cfg)
    corpus_e2e_configs(cfg)
    options = {} if cfg.domain is None else {"domain": cfg.domain}
    for spec in cfg.settings["corpus_policies"]:
        try:
            load_policy(spec, **options)
        except BehavsimError as exc:
            raise ConfigError(f"study config 'corpus_policies': {spec!r}: {exc}") from None
        except (ImportError, OSError, ValueError) as exc:
            raise ConfigError(f"study config 'corpus_policies': {spec!r} cannot be loaded: {exc}") from None


def import_corpus(cfg: StudyConfig) -> ContextSet:
    """The config's corpus split as a context set: every system turn of its dialogues (the first
    ``corpus_dialogues`` of them, in the corpus's order; 0: all)."""
    s = cfg.settings
    what = (
        f"the {s['corpus_split']} split of a corpus: one context per system turn, with its history, a belief "
        "from the corpus and what the human wizard did there"
    )
    try:
        cs = from_unified(s["corpus"], split=s["corpus_split"], domain=cfg.domain, description=what)
    except BehavsimError as exc:
        raise ConfigError(f"study config 'corpus' (--corpus): {exc}") from None
    limit = s["corpus_dialogues"]
    if limit:
        keep = list(dict.fromkeys(m["dialogue"] for m in cs.metas))[:limit]
        wanted = set(keep)
        cs = cs.select(lambda _b, m: m["dialogue"] in wanted, description=f"{what} (its first {len(keep)} dialogues)")
    return cs


def _corpus_digest(path: Path) -> list[str]:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return [f"{p.relative_to(path).as_posix() if p != path else p.name}:{file_digest(p)}" for p in files]


def corpus_e2e_configs(cfg: StudyConfig) -> dict[str, E2EConfig]:
    """The training configuration of each end-to-end model of ``corpus_e2e``, by name (a missing
    split, a damaged corpus: one error naming it)."""
    s, seed = cfg.settings, cfg.seeds[0]
    out: dict[str, E2EConfig] = {}
    for name in s["corpus_e2e"]:
        if name == "simulation":
            out[name] = e2e_config(cfg, "handcrafted", seed)
            continue
        try:
            out[name] = corpus_e2e_config(
                s["corpus"],
                s["corpus_train_split"],
                validation=s["corpus_validation_split"],
                seed=seed,
                epochs=s["corpus_e2e_epochs"] or None,
                domain=cfg.domain,
            )
        except BehavsimError as exc:
            raise ConfigError(f"study config 'corpus_e2e' ({name}): {exc}") from None
    return out


def _e2e_key(config: E2EConfig, corpus: Path | None) -> dict[str, Any]:
    """What a trained model's record must match: its settings (the corpus by its digest, not its path)."""
    d = config.to_dict()
    if corpus is not None:
        d["corpus"] = _corpus_digest(corpus)
    return d


def _e2e_dir(study: Study, name: str) -> Path:
    return study.run.path(f"train/corpus-e2e-{name}")


def _e2e_record(study: Study, name: str, key: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The record of model ``name`` (its folder's ``corpus-e2e.json``); with ``key``, only when it
    was trained with those settings."""
    try:
        rec = json.loads((_e2e_dir(study, name) / _E2E_DONE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("checkpoint"), str):
        return None
    return rec if key is None or rec.get("key") == key else None


def corpus_e2e_specs(study: Study) -> dict[str, str]:
    """``{spec: label}`` of the trained end-to-end models (``e2e:DIR`` of the checkpoint that
    answers). The stage ``corpus-e2e``, which runs before every stage that asks, has checked each
    record against its settings: the later stages read it without reading the corpus again."""
    out = {}
    for name in study.cfg.settings["corpus_e2e"]:
        rec = _e2e_record(study, name)
        if rec is not None:
            out[f"e2e:{_e2e_dir(study, name) / rec['checkpoint']}"] = CORPUS_E2E[name]
    return out


def _train_e2e_task(job: tuple[dict[str, Any], str]) -> None:
    """One model (in a worker process): train it, or resume it from its last checkpoint."""
    import torch  # an optional dependency: only the end-to-end models need it

    torch.set_num_threads(1)  # as the e2e study's trials (the trainer then sets its own)
    config_dict, out = job
    train_e2e(E2EConfig.from_dict(config_dict), out)


def _train_e2e_models(study: Study) -> None:
    """Train (or resume) each model of ``corpus_e2e``, one after the other in a worker process, and
    record the checkpoint that answers; a model already recorded with its settings is not opened."""
    for name, config in corpus_e2e_configs(study.cfg).items():
        out = _e2e_dir(study, name)
        key = _e2e_key(config, Path(config.corpus) if config.corpus is not None else None)
        rec = _e2e_record(study, name, key)
        if rec is None:
            get_executor("local:1").map(_train_e2e_task, [(config.to_dict(), str(out))])
            ckpts = list_e2e_checkpoints(out)
            best = out / BEST_FILE
            chosen = json.loads(best.read_text(encoding="utf-8"))["checkpoint"] if best.is_file() else ckpts[-1][1].name
            rec = {"key": key, "checkpoint": chosen, "checkpoints": len(ckpts)}
            with atomic_path(out / _E2E_DONE) as tmp:
                tmp.write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        study.log(f"      {CORPUS_E2E[name]}: {rec['checkpoints']} checkpoints, {rec['checkpoint']} answers")


def _e2e_title(cfg: StudyConfig) -> str:
    names = ", ".join(CORPUS_E2E[n] for n in cfg.settings["corpus_e2e"])
    return f"the end-to-end models of the study against people: {names}"


# --------------------------------------------------------------------------------- stages
def _contexts(study: Study) -> None:
    """The corpus split as one of the run's context sets, and the human wizard's answers."""
    cfg, run = study.cfg, study.run
    name = corpus_set_name(cfg)
    s = cfg.settings
    key = stage_key(
        "corpus",
        _IMPORT_VERSION,
        _corpus_digest(Path(s["corpus"])),
        s["corpus_split"],
        s["corpus_dialogues"],
        cfg.domain,
    )
    cs = run.cached_context_set(name, key, lambda: import_corpus(cfg))
    store = run.responses(name)
    if store.find(WIZARD) is None:
        store.add(WIZARD, logged_responses(cs, policy_id="wizard", name=WIZARD_NAME))
        store.load(WIZARD)
    n_acts = sum(a is not None for a in store.tables[WIZARD].acts)
    dialogues = len({m.get("dialogue") for m in cs.metas})
    study.log(f"      {name}: {len(cs):,} contexts of {dialogues:,} dialogues; the human wizard's acts on {n_acts:,}")


def _respond(study: Study) -> None:
    models = corpus_e2e_specs(study)
    specs = list(study.cfg.settings["corpus_policies"])
    name = corpus_set_name(study.cfg)
    if models:
        study.log(f"      end-to-end models on {name}: {', '.join(models.values())}")
    if specs:
        study.log(f"      extra policies on {name}: {', '.join(specs)}")
    respond_set(study, name, [*models, *specs])


def compared_policies(study: Study) -> dict[str, str]:
    """``{spec: label}`` of the policies compared with the human wizard, in order: the handcrafted
    policy, the last checkpoint of every GP-SARSA trial (rewards x seeds), the end-to-end models
    of ``corpus_e2e``, the extra policies."""
    out = {"handcrafted": "handcrafted"}
    for (reward, seed), specs in trial_specs(study).items():
        out[specs[-1]] = f"GP {reward} seed {seed}"
    out.update(corpus_e2e_specs(study))
    out.update({spec: spec for spec in study.cfg.settings["corpus_policies"]})
    return out


def _tables(study: Study) -> tuple[ContextSet, ResponseTable, dict[str, ResponseTable]]:
    name = corpus_set_name(study.cfg)
    store = study.run.responses(name)
    wizard = store.tables[WIZARD] if WIZARD in store.tables else store.find(WIZARD)
    assert wizard is not None
    tables = {s: store.tables[s] if s in store.tables else store.load(s) for s in compared_policies(study)}
    return study.run.context_sets[name], wizard, tables


def _key(study: Study) -> str:
    """The config, the contexts, and every compared table's id and file digest: a table answered
    again with other answers under the same id (another decoding) makes the stage run again."""
    cs, wizard, tables = _tables(study)
    store = study.run.responses(corpus_set_name(study.cfg))
    digests = [file_digest(store.dir / store.index[store.key(spec)]) for spec in tables]
    return stage_key(study.cfg.to_dict(), cs.fingerprint, wizard.id, [t.id for t in tables.values()], digests)


def _last_user_words(cs: ContextSet, i: int) -> str:
    for turn in reversed(cs.history(i) or []):
        if turn.get("speaker") == "user":
            return str(turn.get("text") or "")
    return ""


def _means(cfg: StudyConfig, comp: Any, labels: list[str], name: str) -> pd.DataFrame:
    m = analysis.means_with_ci(comp, list(cfg.scores), n_resamples=cfg.bootstrap, seed=cfg.analysis_seed)
    m = m.drop(columns=["pair"], errors="ignore")
    m.insert(0, "policy", labels)
    m.insert(0, "context_set", name)
    return m


def _disagreements(
    cfg: StudyConfig, comp: Any, cs: ContextSet, tl: list[ResponseTable], labels: list[str]
) -> pd.DataFrame:
    by = "CMR" if "CMR" in cfg.scores else cfg.scores[0]
    frames = []
    for p, label in enumerate(labels):
        d = analysis.disagreements(comp, cs, tl, pair=p, top=cfg.disagreements, by=by)
        d.insert(0, "policy", label)
        d.insert(list(d.columns).index("act_a"), "user_said", [_last_user_words(cs, int(i)) for i in d["context"]])
        d = d.rename(
            columns={"act_a": "wizard_act", "prompt_a": "wizard_said", "act_b": "policy_act", "prompt_b": "policy_said"}
        )
        frames.append(d)
    return pd.concat(frames, ignore_index=True)


def _slices(comp: Any, cs: ContextSet, tl: list[ResponseTable], labels: list[str]) -> pd.DataFrame:
    """Every score per pair by the wizard's act type (the first table of each pair) and by turn."""
    sl = slice_scores(comp, ["acttype", "turn"], contexts=cs, tables=tl)
    sl["pair"] = sl["pair"].map(dict(enumerate(labels)))
    return sl.rename(columns={"pair": "policy"})


def _seed_rows(
    cfg: StudyConfig, per: pd.DataFrame, wizard_id: str, seed_ids: dict[int, str], reward: str
) -> list[dict]:
    """Per score: the seed pairs' mean against the (seed, wizard) pairs' mean, on the contexts
    where the wizard's score is defined, and the test over seeds of their difference."""
    rows = []
    seeds = list(seed_ids)
    seed_pairs = [(seed_ids[a], seed_ids[b]) for k, a in enumerate(seeds) for b in seeds[k + 1 :]]
    wizard_pairs = [(wizard_id, seed_ids[s]) for s in seeds]
    groups = {wizard_id: "human", **{i: "gp" for i in seed_ids.values()}}
    is_wizard = (per["a"] == wizard_id) | (per["b"] == wizard_id)
    for score in cfg.scores:
        defined = per[is_wizard].groupby("context")[score].apply(lambda v: v.notna().all())
        keep = set(defined.index[defined.to_numpy()])
        sub = per.copy()
        sub.loc[~sub["context"].isin(keep), score] = np.nan
        if not keep:
            continue
        ss = analysis.pairs_mean_ci(sub, seed_pairs, score=score, n_resamples=cfg.bootstrap, seed=cfg.analysis_seed)
        sw = analysis.pairs_mean_ci(
            sub, wizard_pairs, groups, score=score, n_resamples=cfg.bootstrap, seed=cfg.analysis_seed
        )
        pair_mean = sub[sub["context"].isin(keep)].groupby(["a", "b"])[score].mean()

        def sim(x: str, y: str, pm: pd.Series = pair_mean) -> float:
            return float(pm[(x, y)] if (x, y) in pm.index else pm[(y, x)])

        to_seeds = [float(np.mean([sim(seed_ids[s], seed_ids[t]) for t in seeds if t != s])) for s in seeds]
        to_wizard = [sim(wizard_id, seed_ids[s]) for s in seeds]
        test = analysis.paired_permutation_test(
            to_seeds, to_wizard, n_permutations=cfg.permutations, seed=cfg.analysis_seed
        )
        rows.append(
            {
                "reward": reward,
                "score": score,
                "n_seeds": len(seeds),
                "n_contexts": len(keep),
                "seed_vs_seed": ss.mean,
                "seed_vs_seed_lo": ss.lo,
                "seed_vs_seed_hi": ss.hi,
                "seed_vs_wizard": sw.mean,
                "seed_vs_wizard_lo": sw.lo,
                "seed_vs_wizard_hi": sw.hi,
                "difference": test.diff,
                "seeds_closer_to_each_other": int(sum(a > b for a, b in zip(to_seeds, to_wizard))),
                "p_value": test.p_value,
                "min_p": analysis.sign_flip_min_p(len(seeds), cfg.permutations),
                "exact": test.exact,
            }
        )
    return rows


def _compare(study: Study) -> None:
    cfg, run = study.cfg, study.run
    cs, wizard, tables = _tables(study)
    name = corpus_set_name(cfg)
    policies = compared_policies(study)
    group = [wizard, *tables.values()]
    pairs = [(wizard.id, t.id) for t in tables.values()]
    scores = list(cfg.scores)
    comp = compare(group, pairs, scores=scores, executor=study.executor, allow_unanswered=True)
    labels = list(policies.values())
    run.write_csv("results/corpus.csv", _means(cfg, comp, labels, name))
    run.write_csv("results/corpus_slices.csv", _slices(comp, cs, group, labels))
    run.write_csv("results/corpus_disagreements.csv", _disagreements(cfg, comp, cs, group, labels))
    assert comp.per_context is not None  # kept in memory: compare's default
    per = comp.per_context.copy()
    per_frames = [per.assign(kind="wizard")]
    seed_rows: list[dict] = []
    if len(cfg.seeds) >= 2:
        trials = trial_specs(study)
        for reward in cfg.rewards:
            seed_ids = {s: tables[trials[(reward, s)][-1]].id for s in cfg.seeds}
            gp = [tables[trials[(reward, s)][-1]] for s in cfg.seeds]
            rc = compare([wizard, *gp], "all", scores=scores, executor=study.executor, allow_unanswered=True)
            assert rc.per_context is not None
            seed_rows += _seed_rows(cfg, rc.per_context, wizard.id, seed_ids, reward)
            per_frames.append(rc.per_context.assign(kind=f"seeds-{reward}"))
    if seed_rows:
        run.write_csv("results/corpus_seeds.csv", pd.DataFrame(seed_rows))
    if all(s in scores for s in CLAIM):
        subsets = {name: per[per["pair"] == p] for p, name in enumerate(labels)} | {"all policies": per}
        run.write_csv("results/corpus_agreement.csv", claim_agreement(subsets, cfg.scores, "policy"))
    allper = pd.concat(per_frames, ignore_index=True)
    allper.insert(0, "kind", allper.pop("kind"))
    allper.insert(1, "context_set", name)
    run.write_csv("results/per_context/corpus.csv", allper)


# --------------------------------------------------------------------------------- section
def _ci(v: Any, lo: Any, hi: Any) -> str:
    return f"{fmt_num(v)} [{fmt_num(lo)}, {fmt_num(hi)}]"


def _main_table(df: pd.DataFrame) -> str:
    d = df.copy()
    scores = [s for s in _SUMMARY if s in d.columns]
    for s in scores:
        d[s] = [_ci(v, lo, hi) for v, lo, hi in zip(d[s], d[f"{s}_lo"], d[f"{s}_hi"])]
    act = next((s for s in _ACT_SCORES if s in scores), None)
    cols = ["policy"]
    if act is not None:
        na = d[f"n_na_{act}"] if f"n_na_{act}" in d.columns else ["0"] * len(d)
        d["contexts scored on acts"] = [
            fmt_int(int(float(n)) - int(float(m)) - int(float(a))) for n, m, a in zip(d["n"], d[f"n_missing_{act}"], na)
        ]
        cols.append("contexts scored on acts")
        failed = [int(float(m)) for m in d[f"n_missing_{act}"]]
        if any(failed):  # a policy that failed to answer (an end-to-end model's words without an act)
            d["failed"] = [f"{fmt_int(f)} of {fmt_int(int(float(n)))}" for f, n in zip(failed, d["n"])]
            cols.append("failed")
    cols += scores
    return plain_table(
        d,
        cols,
        "corpus-means",
        "Each policy against the human wizard (what the person in the system's seat did) on the corpus's "
        "contexts: the mean with its 95% bootstrap interval over the contexts. The act scores count the "
        "contexts where the corpus gives the wizard's turn acts (the others are n/a) and the policy answered "
        "(contexts scored on acts); the text scores the contexts where both said something. Failed: the "
        "contexts a policy did not answer (left out of its means).",
        text_cols=cols,
    )


def _seeds_table(df: pd.DataFrame) -> str:
    d = df[df["score"].isin(_SUMMARY)].copy()
    d["seed vs seed"] = [_ci(*r) for r in d[["seed_vs_seed", "seed_vs_seed_lo", "seed_vs_seed_hi"]].to_numpy()]
    d["seed vs human wizard"] = [
        _ci(*r) for r in d[["seed_vs_wizard", "seed_vs_wizard_lo", "seed_vs_wizard_hi"]].to_numpy()
    ]
    d["difference"] = [fmt_num(v) for v in d["difference"]]
    d["seeds closer to each other"] = [
        f"{int(k)} of {int(n)}" for k, n in zip(d["seeds_closer_to_each_other"], d["n_seeds"])
    ]
    d["p (min p)"] = [f"{fmt_num(p)} ({fmt_num(m)})" for p, m in zip(d["p_value"], d["min_p"])]
    cols = [
        "reward",
        "score",
        "seed vs seed",
        "seed vs human wizard",
        "difference",
        "seeds closer to each other",
        "p (min p)",
    ]
    return plain_table(
        d,
        cols,
        "corpus-seeds",
        "Do the GP-SARSA seeds differ from each other more than from the person? The last checkpoints' seed "
        "pairs against the (seed, human wizard) pairs on the same contexts, each with its two-level bootstrap "
        "interval (trials, then contexts); difference: per seed, its mean similarity to the other seeds minus "
        "its similarity to the wizard, averaged; p: the exact sign-flip test over the seeds (the trials are "
        "the units), whose smallest value with this many seeds is in brackets.",
        text_cols=cols,
    )


def _agreement_table(df: pd.DataFrame) -> str:
    d = df.copy()
    d["rows used"] = ["contexts whose acts differ" if m == "True" or m is True else "all" for m in d["only_mismatch"]]
    d["n"] = [fmt_int(int(v), grouped=True) for v in d["n"]]
    return plain_table(
        d,
        ["policy", "rows used", "pearson", "mse", "n"],
        "corpus-agreement",
        "CER (from the acts) against USE cosine (from the text alone) over the contexts, the human wizard's "
        "words on one side: the paper's Sec. 5 finds them \u201cquite highly\u201d correlated on simulated text; "
        "here one side is a person's text.",
        text_cols=("policy", "rows used", "n"),
    )


def _disagreements_table(df: pd.DataFrame) -> str:
    d = df[df["rank"].astype(int) <= _SHOWN]
    rows = "".join(
        f"<tr><td>{escape(r['policy'])}</td><td>{escape(r['user_said'])}</td><td>{escape(r['wizard_said'])}<br>"
        f"<code>{escape(r['wizard_act'])}</code></td><td>{escape(r['policy_said'])}<br>"
        f"<code>{escape(r['policy_act'])}</code></td></tr>\n"
        for _, r in d.iterrows()
    )
    body = (
        '<div class="wrap"><table class="data" id="corpus-disagreements"><thead><tr><th>policy</th>'
        "<th>the user said</th><th>the human wizard said (act)</th><th>the policy said (act)</th></tr></thead><tbody>\n"
        + rows
        + "</tbody></table></div>\n"
    )
    return fold(
        f"Where they part: the {_SHOWN} contexts of lowest CMR per policy, the person's words beside "
        "(all in <code>results/corpus_disagreements.csv</code>, by the wizard's act type and turn in "
        "<code>results/corpus_slices.csv</code>)",
        body,
    )


def _acttype_table(df: pd.DataFrame) -> str:
    d = df[df["slice"] == "acttype"]
    score = next((s for s in ("TMR", "CMR") if s in d.columns), None)
    if score is None or d.empty:
        return ""
    wide = d.pivot_table(index="value", columns="policy", values=score, sort=False)
    n = d.groupby("value", sort=False)["n"].max()
    wide.insert(0, "contexts", [fmt_int(int(n[v])) for v in wide.index])
    wide = wide.reset_index().rename(columns={"value": "the wizard's act type"})
    cols = list(wide.columns)
    return fold(
        f"{score} against the human wizard by the wizard's act type",
        plain_table(
            wide,
            cols,
            "corpus-acttype",
            f"{score} of each policy against the human wizard, by the act type of the wizard's turn.",
            text_cols=("the wizard's act type", "contexts"),
        ),
    )


def corpus_section(report: Report) -> str | None:
    """The report's section: each policy against the human wizard, seeds against the person, the
    CER–USE agreement on human text and, folded, where they part."""
    results = report.dir / "results"
    main = report.csv("corpus.csv", required=("policy", "n"), scores=True)
    if main is None:
        return None
    out = [_main_table(main)]
    seeds = report.csv(
        "corpus_seeds.csv",
        required=("reward", "score"),
        numeric=(
            "seed_vs_seed",
            "seed_vs_seed_lo",
            "seed_vs_seed_hi",
            "seed_vs_wizard",
            "seed_vs_wizard_lo",
            "seed_vs_wizard_hi",
            "difference",
            "p_value",
            "min_p",
        ),
    )
    if seeds is not None and not seeds.empty:
        out.append(_seeds_table(seeds))
    agreement = report.csv("corpus_agreement.csv", required=("policy", "pearson"), numeric=("pearson", "mse"))
    if agreement is not None:
        out.append(_agreement_table(agreement))
    slices = report.csv("corpus_slices.csv", required=("slice", "policy", "value", "n"), scores=True)
    if slices is not None:
        out.append(_acttype_table(slices))
    if (results / "corpus_disagreements.csv").is_file():
        d = pd.read_csv(results / "corpus_disagreements.csv", dtype=str, keep_default_na=False)
        if not d.empty:
            out.append(_disagreements_table(d))
    return "".join(out) or note("<code>results/corpus.csv</code> has no rows.")


# ------------------------------------------------------------------------ stages, section
CONTEXTS_STAGE = Stage(
    name="corpus-contexts",
    order=250,
    title=lambda cfg: f"the corpus's {cfg.settings['corpus_split']} split as contexts, and the human wizard's answers",
    run=_contexts,
    outputs={
        "contexts/corpus-*.jsonl": "the corpus split's contexts (one per system turn)",
        "responses/corpus-*/": "the human wizard's table (and, at respond, every policy's)",
    },
    applies=_applies,
    settings=SETTINGS,
    check=_check,
    preflight=_preflight,
)
E2E_STAGE = Stage(
    name="corpus-e2e",
    order=260,
    title=_e2e_title,
    run=_train_e2e_models,
    outputs={"train/corpus-e2e-*/": "each end-to-end model's checkpoints and the record of the one that answers"},
    applies=lambda study: _applies(study) and bool(study.cfg.settings["corpus_e2e"]),
)
RESPOND_STAGE = Stage(
    name="corpus-respond",
    order=360,
    title="the end-to-end models and the extra policies on the corpus's contexts",
    run=_respond,
    inputs={"contexts/corpus-*.jsonl": "the corpus split's contexts", "train/corpus-e2e-*/": "the end-to-end models"},
    outputs={"responses/corpus-*/": "one response table per end-to-end model and extra policy"},
    applies=lambda study: (
        _applies(study) and bool(study.cfg.settings["corpus_policies"] or study.cfg.settings["corpus_e2e"])
    ),
)
COMPARE_STAGE = Stage(
    name="corpus",
    order=455,
    title="the study against people: every policy against the human wizard",
    run=_compare,
    inputs={"responses/corpus-*/": "the human wizard's and the policies' answers"},
    outputs={
        "results/corpus.csv": "each policy against the human wizard, means with bootstrap intervals",
        "results/corpus_slices.csv": "the same by the wizard's act type and by turn",
        "results/corpus_disagreements.csv": "where each policy parts from the wizard, the person's words beside",
        "results/corpus_seeds.csv": "seed vs seed against seed vs wizard, per reward and score",
        "results/corpus_agreement.csv": "CER against USE cosine on human text (paper Sec. 5)",
        "results/per_context/corpus.csv": "every per-context value of those comparisons",
    },
    key=_key,
    applies=_applies,
)
SECTION = Section(
    key="corpus",
    title="The study against people: each policy against the human wizard",
    order=920,
    render=corpus_section,
    inputs={"results/corpus.csv": "each policy against the human wizard (and the files beside it)"},
    absent="pass <code>--corpus PATH</code> with <code>--config camrest676</code>",
)
