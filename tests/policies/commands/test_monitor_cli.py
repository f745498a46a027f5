"""``behavsim monitor`` on checkpoints of a tiny training run: rows, plots, --follow, resume, errors;
and the runnable examples of docs/monitor.md."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
import warnings
from importlib import metadata
from pathlib import Path

import pytest

from behavsim import compare
from behavsim.monitor import read_convergence
from behavsim.policy import PolicyErrorsWarning, respond
from contexts import generate_grid
from policies.commands.monitor import main
from policies.gp.checkpoint import CheckpointError
from policies.training import follow
from policies.training.files import list_checkpoints
from policies.training.follow import OutputLock
from policies.training.train import TrainConfig, run_training

SCORES = ["TMR", "DMR", "CER", "CMR"]
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    cfg = TrainConfig(rewards=("ts", "iq"), seeds=(0,), dialogues=300, checkpoint_every=100, eval_dialogues=5)
    run_training(cfg, d / "run", workers=2, progress=False)
    grid = generate_grid(step=0.5)
    grid.save(d / "grid.jsonl")
    return d / "run", d / "grid.jsonl"


def _line_re(trial: str, d: int, prev: int) -> re.Pattern:
    return re.compile(
        rf"^{trial}\s+{d} vs {prev}: TMR \d\.\d{{3}} DMR \d\.\d{{3}} CER \d\.\d{{3}} CMR \d\.\d{{3}}", re.M
    )


def test_run_folder_one_row_per_consecutive_pair(run, tmp_path, capsys):
    run_dir, grid = run
    out = tmp_path / "out"
    assert main([str(run_dir), "--contexts", str(grid), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    for trial in ("iq-seed0", "ts-seed0"):
        assert re.search(rf"^{trial}\s+100: first snapshot \(81 contexts\)", text, re.M)
        assert _line_re(trial, 200, 100).search(text) and _line_re(trial, 300, 200).search(text)
        rows = read_convergence(out / trial / "convergence.csv")
        assert [(r["dialogues"], r["prev_dialogues"], r["n"]) for r in rows] == [(200, 100, 81), (300, 200, 81)]
        assert (out / trial / "convergence.png").read_bytes()[:4] == b"\x89PNG"
        assert len(list((out / trial / "snapshots").glob("responses-*.jsonl"))) == 3
        # the monitor's numbers are those of a direct compare of the checkpoints' tables
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolicyErrorsWarning)
            tables = [respond(str(p), generate_grid(step=0.5)) for _, p in list_checkpoints(run_dir / trial)]
        means = compare(tables, "consecutive", scores=SCORES).means
        assert [[r[s] for s in SCORES] for r in rows] == means[SCORES].values.tolist()
    assert (out / "convergence.png").read_bytes()[:4] == b"\x89PNG"  # every trial's TMR (Figure 2)
    # again: resumes, nothing new, no duplicate rows
    before = (out / "ts-seed0" / "convergence.csv").read_bytes()
    assert main([str(run_dir), "--contexts", str(grid), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ts-seed0  resuming after 300 (2 comparisons" in text and " vs " not in text
    assert (out / "ts-seed0" / "convergence.csv").read_bytes() == before


def test_trial_folder_default_output_and_follow_stops_when_run_is_complete(run, tmp_path, capsys):
    run_dir, grid = run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    t0 = time.monotonic()
    assert (
        main(
            [
                str(copy / "ts-seed0"),
                "--contexts",
                str(grid),
                "--follow",
                "--interval",
                "0.1",
                "--stop-rule",
                "DMR:0.5:1",
            ]
        )
        == 0
    )
    assert time.monotonic() - t0 < 20
    text = capsys.readouterr().out
    assert "every trial reached the run's last checkpoint; stopping" in text
    assert "DMR >= 0.5 in 1 consecutive comparisons" in text
    assert len(read_convergence(copy / "monitor" / "ts-seed0" / "convergence.csv")) == 2  # <run>/monitor/<trial>
    assert not (copy / "monitor" / "iq-seed0").exists()


def test_follow_picks_up_a_later_checkpoint(run, tmp_path, capsys, monkeypatch):
    run_dir, grid = run
    trial = tmp_path / "watch" / "ts-seed0"  # no config.json above: only --stop-after ends it
    trial.mkdir(parents=True)
    ckpts = dict(list_checkpoints(run_dir / "ts-seed0"))
    for d in (100, 200):
        shutil.copy(ckpts[d], trial / ckpts[d].name)
    data = ckpts[300].read_bytes()
    refused = threading.Event()  # the monitor tried the half-copied file
    read_meta = follow.read_meta

    def watched_read_meta(path, *a, **kw):
        try:
            return read_meta(path, *a, **kw)
        except CheckpointError:
            refused.set()
            raise

    monkeypatch.setattr(follow, "read_meta", watched_read_meta)  # the name the follower reads a file's meta by

    def writer():
        # once the monitor has scored 200 vs 100 (however long that takes on a loaded machine)
        csv = tmp_path / "out" / "ts-seed0" / "convergence.csv"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if read_convergence(csv):
                    break
            except Exception:  # not written yet
                pass
            time.sleep(0.05)
        (trial / ckpts[300].name).write_bytes(data[: len(data) // 2])  # a half-copied file first
        refused.wait(timeout=120)
        tmp = trial / f".{ckpts[300].name}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, trial / ckpts[300].name)  # then complete, atomically

    th = threading.Thread(target=writer)
    th.start()
    try:
        rc = main(
            [
                str(trial),
                "--contexts",
                str(grid),
                "--follow",
                "--interval",
                "0.1",
                "--stop-after",
                "1.5",
                "-o",
                str(tmp_path / "out"),
            ]
        )
    finally:
        th.join()
    assert rc == 0
    text = capsys.readouterr().out
    assert _line_re("ts-seed0", 300, 200).search(text)
    assert "cannot read ckpt-000300.npz yet" in text
    assert "no new checkpoint for 1.5 s; stopping" in text
    rows = read_convergence(tmp_path / "out" / "ts-seed0" / "convergence.csv")
    assert [r["dialogues"] for r in rows] == [200, 300]


def test_every_skips_checkpoints(run, tmp_path, capsys):
    run_dir, grid = run
    assert main([str(run_dir / "iq-seed0"), "--contexts", str(grid), "--every", "150", "-o", str(tmp_path / "o")]) == 0
    rows = read_convergence(tmp_path / "o" / "iq-seed0" / "convergence.csv")
    assert [(r["dialogues"], r["prev_dialogues"]) for r in rows] == [(300, 200)]  # 100 < 150: not taken


def test_summary_of_a_trial_without_comparison_names_no_csv(run, tmp_path, capsys):
    """One checkpoint, so one snapshot and no comparison: the summary says so and names the
    snapshot, not a convergence.csv that was never written."""
    run_dir, grid = run
    trial = tmp_path / "ts-seed0"
    trial.mkdir()
    first = list_checkpoints(run_dir / "ts-seed0")[0][1]
    shutil.copy(first, trial / first.name)
    out = tmp_path / "out"
    assert main([str(trial), "--contexts", str(grid), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    snapshot = out / "ts-seed0" / "snapshots" / "responses-000100.jsonl"
    assert text.splitlines()[-1] == (
        f"ts-seed0: no comparison yet: one snapshot, at 100 dialogues ({snapshot}); the next checkpoint is compared "
        "with it"
    ), text
    assert snapshot.is_file() and not (out / "ts-seed0" / "convergence.csv").exists()
    assert "convergence.csv" not in text


def test_follow_while_training_in_another_process(run, tmp_path, capsys):
    _, grid = run
    run_dir = tmp_path / "live"
    run_dir.mkdir()  # the monitor may start before the trainer
    code = (
        "from policies.training.train import TrainConfig, run_training; "
        "run_training(TrainConfig(dialogues=300, checkpoint_every=100, eval_dialogues=5), "
        f"{str(run_dir)!r}, workers=1, progress=False)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        rc = main([str(run_dir), "--contexts", str(grid), "--follow", "--interval", "0.1", "--stop-after", "30"])
    finally:
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert rc == 0
    text = capsys.readouterr().out
    assert "every trial reached the run's last checkpoint; stopping" in text
    rows = read_convergence(run_dir / "monitor" / "ts-seed0" / "convergence.csv")
    assert [(r["dialogues"], r["prev_dialogues"]) for r in rows] == [(200, 100), (300, 200)]


def _err(capsys) -> str:
    return capsys.readouterr().err


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--scores", "TMX"], "Did you mean 'TMR'"),
        (["--stop-rule", "TMR:high"], "threshold must be a number"),
        (["--stop-rule", "BLEU4:0.9:2"], "not among --scores"),
        (["--stop-after", "5"], "only make sense with --follow"),
        (["--follow", "--interval", "0"], "--interval: expected a positive number"),
        (["--every", "0"], "--every: expected a positive integer"),
    ],
)
def test_bad_arguments_exit_2(run, tmp_path, capsys, extra, match):
    run_dir, grid = run
    assert main([str(run_dir), "--contexts", str(grid), "-o", str(tmp_path / "o"), *extra]) == 2
    err = _err(capsys)
    assert err.startswith("behavsim monitor: error: ") and match in err and len(err.strip().splitlines()) == 1


def test_bad_inputs_exit_2(run, tmp_path, capsys):
    run_dir, grid = run
    assert main([str(tmp_path / "nope"), "--contexts", str(grid)]) == 2
    assert "no such folder" in _err(capsys)
    assert main([str(run_dir), "--contexts", str(tmp_path / "none.jsonl")]) == 2
    assert "no such context-set file" in _err(capsys)
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty"), "--contexts", str(grid)]) == 2
    assert "no checkpoints" in _err(capsys) and not (tmp_path / "empty" / "monitor").exists()
    out = tmp_path / "o"
    assert main([str(run_dir / "ts-seed0"), "--contexts", str(grid), "-o", str(out)]) == 0
    generate_grid(step=1.0).save(tmp_path / "other.jsonl")
    capsys.readouterr()
    assert main([str(run_dir / "ts-seed0"), "--contexts", str(tmp_path / "other.jsonl"), "-o", str(out)]) == 2
    assert "another context set" in _err(capsys)
    lock = OutputLock(out / "ts-seed0" / ".lock")
    try:
        assert main([str(run_dir / "ts-seed0"), "--contexts", str(grid), "-o", str(out)]) == 2
        assert "in use by another behavsim monitor" in _err(capsys)
    finally:
        lock.close()
    with pytest.raises(SystemExit) as exc:
        main([str(run_dir)])  # --contexts is required (argparse)
    assert exc.value.code == 2


def test_through_behavsim_cli(run, tmp_path, monkeypatch, capsys):
    """`behavsim monitor` as the core CLI loads it (entry point group behavsim.commands)."""
    import behavsim.cli as core_cli

    eps = {e.name for e in metadata.entry_points(group="behavsim.commands")}
    if "monitor" not in eps:  # until setup.cfg names it and the package is reinstalled
        orig = metadata.entry_points

        def with_monitor(group=None, **kw):
            found = list(orig(group=group, **kw))
            if group == "behavsim.commands":
                found.append(metadata.EntryPoint("monitor", "policies.commands.monitor:register_monitor", group))
            return found

        monkeypatch.setattr(core_cli.metadata, "entry_points", with_monitor)
    run_dir, grid = run
    assert core_cli.main(["monitor", str(run_dir / "ts-seed0"), "--contexts", str(grid), "-o", str(tmp_path)]) == 0
    assert _line_re("ts-seed0", 300, 200).search(capsys.readouterr().out)
    assert core_cli.main(["monitor", str(tmp_path / "nope"), "--contexts", str(grid)]) == 2
    assert capsys.readouterr().err.startswith("behavsim monitor: error: DIR")


def _python_blocks(md: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", md.read_text(encoding="utf-8"), re.S)


def test_docs_examples_run(tmp_path, monkeypatch, capsys):
    blocks = [b for b in _python_blocks(ROOT / "docs" / "monitor.md") if "# not run in tests" not in b]
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}  # one session, as a reader types them (and tests/docs runs them)
    for b in blocks:
        exec(compile(b, "docs/monitor.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "toy 200 vs 100: TMR 0.920 DMR 0.920" in out and "1300 True 1.0" in out  # as the comments say
    assert re.search(r"^ts-seed0 300 vs 200: TMR \d\.\d{3} DMR", out, re.M)  # GP numbers move with the policies
