"""Run folders that move: every path stored inside a study's run folder is relative to it, so a
copied or moved folder resumes with nothing recomputed; folders written before (absolute paths)
still resume in place; digests still guard every file."""

import hashlib
import json
import shutil

from behavsim import ResponseTable
from behavsim.io import read_json_checked, write_json_checked
from experiments.study import load_config, run_study

#: The folders whose files a resume must leave alone (mtimes checked).
KEPT = ("responses", "train", "contexts")


def _stamps(run):
    """Modification times of every file under KEPT but the run lock (``train/.lock`` names the
    process that holds it: each run writes it)."""
    return {
        p.relative_to(run).as_posix(): p.stat().st_mtime_ns
        for p in run.rglob("*")
        if p.is_file() and p.relative_to(run).parts[0] in KEPT and p.name != ".lock"
    }


def _changed(run, before):
    now = _stamps(run)
    return sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))


def _results(run):
    """results/*.csv and tests.json, byte for byte (metrics.csv without its timing columns)."""
    out = {}
    for p in sorted((run / "results").glob("*.csv")) + [run / "results" / "tests.json"]:
        text = p.read_text()
        if p.name == "metrics.csv":
            rows = [line.split(",") for line in text.splitlines()]
            keep = [i for i, c in enumerate(rows[0]) if "seconds" not in c]
            text = "\n".join(",".join(r[i] for i in keep) for r in rows)
        out[p.name] = text
    return out


def test_a_copied_then_moved_run_folder_resumes_with_nothing_recomputed(tiny_run, tmp_path):
    copy = shutil.copytree(tiny_run, tmp_path / "a" / "run")  # copy2: modification times kept
    for p in copy.rglob("*"):  # nothing inside names a file by where the folder was
        if p.is_file() and p.suffix in (".json", ".jsonl", ".key", ".csv", ".html"):
            assert str(tiny_run) not in p.read_text(encoding="utf-8"), p
    index = read_json_checked(copy / "responses" / "cgen" / "index.json")
    assert index["__paths__"] == "run"
    assert "checkpoint:train/ts-seed0/ckpt-000100.npz:nlg_seed=0" in index
    table = ResponseTable.load(copy / "responses" / "cgen" / "ts-seed0-000100.jsonl")
    assert table.policy["path"]["file"] == "train/ts-seed0/ckpt-000100.npz"
    ccol = json.loads((copy / "contexts" / "ccol-ts.jsonl").read_text().splitlines()[0])
    assert [s["path"]["file"] for s in ccol["meta"]["sources"]] == [
        "train/ts-seed0/ckpt-000300.npz",
        "train/ts-seed1/ckpt-000300.npz",
    ]

    before = _stamps(copy)
    assert sum(k.endswith(".npz") for k in before) == 12 and sum(k.startswith("responses/") for k in before) == 56
    logs = []
    run_study(load_config("tiny"), copy, log=logs.append)
    assert _changed(copy, before) == []
    assert [m for m in logs if m.endswith("] comparisons: up to date")]
    assert _results(copy) == _results(tiny_run)

    moved = tmp_path / "b"
    (tmp_path / "a").rename(moved)  # the parent renamed: every absolute path changes
    run_study(load_config("tiny"), moved / "run", log=lambda m: None)
    assert _changed(moved / "run", before) == []
    assert _results(moved / "run") == _results(tiny_run)


def _as_written_before(run, elsewhere):
    """The run folder as the study wrote it before its paths were relative: index keys with the
    checkpoints' absolute paths (``cgen``: this folder's; the other sets: ``elsewhere``'s, as if the
    folder had been moved), no ``__paths__``; the collected sets' keys over paths and sizes, every
    set's key beside it (``contexts/NAME.key``); in ``state.json`` the comparisons' entry a bare key
    (written before the outputs were recorded)."""
    for p in sorted((run / "contexts" / "keys").iterdir()):
        p.rename(run / "contexts" / p.name)
    (run / "contexts" / "keys").rmdir()
    for index_path in sorted(run.glob("responses/*/index.json")):
        index = read_json_checked(index_path)
        del index["__paths__"]
        prefix = run if index_path.parent.name == "cgen" else elsewhere
        write_json_checked(index_path, {k.replace("checkpoint:", f"checkpoint:{prefix}/"): v for k, v in index.items()})
    cfg = load_config("tiny")
    for reward in cfg.rewards:
        last = [sorted((run / "train" / f"{reward}-seed{s}").glob("ckpt-*.npz"))[-1] for s in cfg.seeds]
        parts = [
            "collect",
            [str(p) for p in last],
            [p.stat().st_size for p in last],
            cfg.collect_dialogues,
            cfg.collect_seed,
            cfg.user,
        ]
        key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
        (run / "contexts" / f"ccol-{reward}.key").write_text(key)
    state = read_json_checked(run / "state.json")
    state["compare"] = state["compare"]["key"]
    write_json_checked(run / "state.json", state)


def test_a_run_folder_with_absolute_paths_still_resumes_in_place(tiny_run, tmp_path):
    run = shutil.copytree(tiny_run, tmp_path / "old")
    _as_written_before(run, tmp_path / "gone" / "old")
    before = _stamps(run)
    logs = []
    run_study(load_config("tiny"), run, log=logs.append)
    assert logs[0] == "[1/11] run folder of an earlier version: its keys and indexes in today's form"
    assert "[5/11] comparisons: up to date" in logs and "[6/11] analysis: up to date" in logs
    assert read_json_checked(run / "state.json")["compare"]["outputs"] == {}
    # the indexes and keys are rewritten in today's form, once; no table, set or checkpoint is
    migrated = [f"responses/{n}/index.json" for n in ("ccol-all", "ccol-iq", "ccol-ts", "cgen")]
    keys = [f"contexts/{k}{n}.key" for n in ("ccol-all", "ccol-iq", "ccol-ts", "cgen") for k in ("", "keys/")]
    assert _changed(run, before) == sorted(migrated + keys)
    assert not list((run / "contexts").glob("*.key"))
    assert "checkpoint:train/iq-seed1/ckpt-000200.npz:nlg_seed=1" in read_json_checked(run / migrated[0])
    assert _results(run) == _results(tiny_run)
    before = _stamps(run)
    logs.clear()
    run_study(load_config("tiny"), run, log=logs.append)
    assert _changed(run, before) == [] and logs[0].startswith("[1/10] training")


def test_a_table_of_another_checkpoint_file_is_made_again(tiny_run, tmp_path, capsys):
    """The index finds a table by the checkpoint's path; the table's recorded checkpoint digest
    must still be the file's, else that table (and only it) is made again."""
    run = shutil.copytree(tiny_run, tmp_path / "run")
    path = run / "responses" / "ccol-ts" / "iq-seed0-000200.jsonl"
    table = ResponseTable.load(path)
    table.policy["path"]["sha256"] = "sha256:" + "0" * 64  # a valid file, made from another checkpoint
    table.save(path)
    before = _stamps(run)
    capsys.readouterr()
    run_study(load_config("tiny"), run, log=lambda m: None)
    assert f"{path} was made from another" in capsys.readouterr().err
    assert _changed(run, before) == ["responses/ccol-ts/index.json", "responses/ccol-ts/iq-seed0-000200.jsonl"]
    assert ResponseTable.load(path).policy["path"]["sha256"] != table.policy["path"]["sha256"]
    assert _results(run) == _results(tiny_run)
