"""Stage ``legacy``: a run folder written by an earlier version, brought to today's form before any
other stage runs — the one place that knows the earlier forms (the other stages read today's only):

* ``contexts/NAME.key`` (a set's key beside it, where it looked like another form of the set)
  moves to ``contexts/keys/NAME.key``; the key of a collected set computed over its checkpoints'
  paths as given and their sizes becomes today's (over their run-relative paths and digests, so
  that a moved folder keeps it);
* a response index without ``"__paths__"`` (keys naming checkpoints by an absolute path, or one
  relative to the directory the study ran in) has its keys mapped to run-relative ones: a path
  that lies in this folder directly, one that ends in ``train/<trial>/<file>`` by that tail (the
  folder was moved); the tables' recorded checkpoint digests still decide whether a table is that
  checkpoint's (:class:`~experiments.runfolder.ResponseStore`);
* a ``state.json`` entry that is a bare key (written before the outputs were recorded) becomes
  ``{"key": ..., "outputs": {}}``;
* a table of an end-to-end model trained on people, answered with greedy words before such a model
  searched them with 4 beams by default, leaves its index (the respond stage answers it again);
* an end-to-end model the study trained on people before such a model learned the empty act of
  a turn without one (its ``e2e-run.json`` names a corpus and no ``no_act_turns``): its folder
  ``train/corpus-e2e-<name>/`` is removed, with a line in the log, and the ``corpus-e2e`` stage
  trains it again (its tables are then another checkpoint's: answered again).

Nothing else is computed again: the folder resumes as it is.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from behavsim import ResponseTable, TableFormatError
from behavsim.io import read_json_checked, write_json_checked
from experiments.runfolder import PATHS_KEY, PATHS_RUN, RunFolder, split_checkpoint_spec
from experiments.stages.contexts import collected_key
from experiments.study import Stage, Study, stage_key
from policies.e2e import greedy_by_an_earlier_default

__all__ = ["LEGACY"]


def _old_keyfiles(run: RunFolder) -> list[Path]:
    return run.files(["contexts/*.key"])


def _old_indexes(run: RunFolder) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for path in run.files(["responses/*/index.json"]):
        try:
            index = read_json_checked(path)
        except TableFormatError:
            continue  # damaged: the respond stage makes its tables again
        if index.get(PATHS_KEY) != PATHS_RUN:
            out.append((path, index))
    return out


def _old_state_entries(run: RunFolder) -> list[str]:
    return [stage for stage, entry in run.state.items() if isinstance(entry, str)]


def _old_greedy_tables(run: RunFolder) -> list[tuple[Path, str]]:
    """(index, key) of each table a model trained on people answered greedily by an earlier default
    (only tables named ``e2e-wizard-…`` without a width are read)."""
    out = []
    for path in run.files(["responses/*/index.json"]):
        try:
            index = read_json_checked(path)
        except TableFormatError:
            continue
        for key, name in index.items():
            if not (isinstance(name, str) and name.startswith("e2e-wizard-") and "-beam" not in name):
                continue
            try:
                policy = ResponseTable.load(path.parent / name).policy
            except (OSError, TableFormatError):
                continue  # missing or damaged: the respond stage makes it again anyway
            if greedy_by_an_earlier_default(key, policy):
                out.append((path, key))
    return out


def _old_words_only_models(run: RunFolder) -> list[Path]:
    """The study's models trained on people by the earlier rule for a turn without an act (words only)."""
    out = []
    for path in run.files(["train/corpus-e2e-*/e2e-run.json"]):
        try:
            config = read_json_checked(path).get("config")
        except TableFormatError:
            continue  # damaged: the corpus-e2e stage refuses it with its own message
        if isinstance(config, dict) and config.get("corpus") is not None and "no_act_turns" not in config:
            out.append(path.parent)
    return out


def _applies(study: Study) -> bool:
    run = study.run
    return bool(
        _old_keyfiles(run)
        or _old_indexes(run)
        or _old_state_entries(run)
        or _old_greedy_tables(run)
        or _old_words_only_models(run)
    )


def _earlier_collected_key(study: Study, reward: str) -> str | None:
    """The key of C_col of ``reward`` as it was computed before: checkpoint paths as given, sizes."""
    cfg, run = study.cfg, study.run
    try:
        last = [run.checkpoints(reward, s)[-1] for s in cfg.seeds]
    except IndexError:
        return None
    sizes = [p.stat().st_size for p in last]
    return stage_key("collect", [str(p) for p in last], sizes, cfg.collect_dialogues, cfg.collect_seed, cfg.user)


def _move_keys(study: Study) -> None:
    run = study.run
    earlier = {f"ccol-{r}": r for r in study.cfg.rewards}
    for old in _old_keyfiles(run):
        name = old.stem
        new = run.path(f"contexts/keys/{name}.key")
        key = (new if new.exists() else old).read_text()
        if name in earlier and key == _earlier_collected_key(study, earlier[name]):
            key = collected_key(study, earlier[name])
        run.write_text(f"contexts/keys/{name}.key", key)
        old.unlink()


def _index_key(key: str, run: RunFolder) -> str:
    """A key of an index written before ``__paths__``, in today's form."""
    parts = split_checkpoint_spec(key)
    if parts is None:
        return key
    prefix, path, options = parts
    rel = run.relative(path)
    if rel is None:  # the folder moved: its checkpoints are train/<trial>/<file>
        tail = PurePosixPath(*Path(path).parts).parts[-3:]
        if len(tail) == 3 and tail[0] == "train":
            rel = PurePosixPath(*tail).as_posix()
    return key if rel is None else f"{prefix}{rel}{options}"


def _map_indexes(run: RunFolder) -> None:
    for path, index in _old_indexes(run):
        out: dict[str, Any] = {PATHS_KEY: PATHS_RUN}
        for k, v in index.items():
            if k != PATHS_KEY:
                out.setdefault(k if k.startswith("__") else _index_key(k, run), v)
        write_json_checked(path, out)


def _drop_old_greedy_tables(study: Study) -> None:
    run = study.run
    for path, key in _old_greedy_tables(run):
        index = read_json_checked(path)
        name = index.pop(key)
        write_json_checked(path, index)
        study.log(f"{path.parent / name}: greedy words of a model trained on people (now 4 beams); answering again")


def _drop_words_only_models(study: Study) -> None:
    for folder in _old_words_only_models(study.run):
        shutil.rmtree(folder)
        study.log(f"{folder}: a model trained on people whose turns without an act trained words only; training again")


def _migrate(study: Study) -> None:
    _move_keys(study)
    _map_indexes(study.run)
    _drop_old_greedy_tables(study)
    _drop_words_only_models(study)
    stages = _old_state_entries(study.run)
    if stages:
        for stage in stages:
            study.run.state[stage] = {"key": study.run.state[stage], "outputs": {}}
        study.run.save_state()


LEGACY = Stage(
    name="legacy",
    order=0,
    title="run folder of an earlier version: its keys and indexes in today's form",
    run=_migrate,
    outputs={
        "contexts/keys/": "each context set's key, moved from beside the set",
        "responses/*/index.json": "the response indexes, their checkpoint paths relative to the run folder "
        "(without the greedy tables of an earlier default)",
        "state.json": "every stage's key with its recorded outputs",
        "train/corpus-e2e-*/": "removed where an earlier rule trained the model on people (trained again)",
    },
    applies=_applies,
)
